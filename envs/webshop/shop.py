"""The shop's pages and transitions: one state machine behind the gym env and the web page.

States are immutable values, so a snapshot is just a reference and `restore` cannot be corrupted
by later steps. Pages follow WebShop: search -> results (prev/next) -> item (options,
description/features/reviews, buy now) -> done.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum

from envs.contract import excerpt

from .actions import Parsed
from .catalog import Catalog
from .search import SearchIndex

PAGE_SIZE = 10
BACK_TO_SEARCH, NEXT, PREV = "back to search", "next >", "< prev"
DESCRIPTION, FEATURES, REVIEWS, BUY_NOW = "description", "features", "reviews", "buy now"
DETAILS = (DESCRIPTION, FEATURES, REVIEWS)


class Page(str, Enum):
    SEARCH = "search"
    RESULTS = "results"
    ITEM = "item"
    DETAIL = "detail"
    DONE = "done"


@dataclass(frozen=True)
class ShopState:
    page: Page = Page.SEARCH
    query: str = ""
    results: tuple[int, ...] = ()  # product indices, best first (at most 50)
    page_num: int = 1
    item: int | None = None  # product index on item/detail/done pages
    detail: str | None = None  # which detail page (description/features/reviews)
    chosen: tuple[tuple[str, str], ...] = ()  # (option name, value) chosen on the item page

    @property
    def n_pages(self) -> int:
        return max(1, math.ceil(len(self.results) / PAGE_SIZE))

    @property
    def open_item(self) -> int:
        """`item`, where one is always set: on the item, detail and done pages."""
        assert self.item is not None, f"no product is open on the {self.page.value} page"
        return self.item

    def page_results(self) -> tuple[int, ...]:
        start = (self.page_num - 1) * PAGE_SIZE
        return self.results[start : start + PAGE_SIZE]

    def chosen_dict(self) -> dict[str, str]:
        return dict(self.chosen)


def has_search_bar(state: ShopState) -> bool:
    return state.page is Page.SEARCH


def action_templates(state: ShopState) -> list[str]:
    return ["search[...]"] if has_search_bar(state) else []


def clickables(state: ShopState, catalog: Catalog) -> dict[str, tuple[str, str | None]]:
    """Lower-case click target -> (kind, payload) for everything clickable on this page."""
    out: dict[str, tuple[str, str | None]] = {}
    if state.page is Page.RESULTS:
        out[BACK_TO_SEARCH] = ("back", None)
        if state.page_num > 1:
            out[PREV] = ("prev", None)
        if state.page_num < state.n_pages:
            out[NEXT] = ("next", None)
        for i in state.page_results():
            out[catalog.asin(i).lower()] = ("item", str(i))
    elif state.page is Page.ITEM:
        out[BACK_TO_SEARCH] = ("back", None)
        out[PREV] = ("prev", None)
        product = catalog.product(state.open_item)
        for name, values in product.options.items():
            for v in values:
                out.setdefault(v.lower(), ("option", name))
        for d in DETAILS:
            out[d] = ("detail", d)
        out[BUY_NOW] = ("buy", None)
    elif state.page is Page.DETAIL:
        out[BACK_TO_SEARCH] = ("back", None)
        out[PREV] = ("prev", None)
    return out


def available_actions(state: ShopState, catalog: Catalog) -> list[str]:
    return [f"click[{t}]" for t in clickables(state, catalog)]


@dataclass(frozen=True)
class Transition:
    state: ShopState
    error: str | None = None
    bought: bool = False


def transition(state: ShopState, action: Parsed, catalog: Catalog, index: SearchIndex) -> Transition:
    """Apply a parsed action; on a bad one return the same state and the problem in words."""
    if state.page is Page.DONE:
        return Transition(state, "the episode is over (the item was bought); call reset() to shop again")
    if action.kind == "search":
        if not has_search_bar(state):
            return Transition(
                state, f"there is no search bar on the {state.page.value} page; click[{BACK_TO_SEARCH}] first"
            )
        results = tuple(index.search(action.arg))
        return Transition(ShopState(page=Page.RESULTS, query=action.arg, results=results))
    targets = clickables(state, catalog)
    hit = targets.get(action.arg)
    if hit is None:
        where = f"the {state.page.value} page"
        return Transition(state, f"{excerpt(action.arg)} is not clickable on {where}")
    kind, payload = hit
    if kind == "back":
        return Transition(ShopState())
    if kind == "next":
        return Transition(replace(state, page_num=state.page_num + 1))
    if kind == "prev":
        if state.page is Page.RESULTS:
            return Transition(replace(state, page_num=state.page_num - 1))
        if state.page is Page.ITEM:
            return Transition(replace(state, page=Page.RESULTS, item=None, chosen=()))
        return Transition(replace(state, page=Page.ITEM, detail=None))
    if kind == "item":
        assert payload is not None  # an item click carries the product index
        return Transition(replace(state, page=Page.ITEM, item=int(payload), chosen=()))
    if kind == "option":
        assert payload is not None  # an option click carries the option name
        value = action.arg
        kept = tuple((n, v) for n, v in state.chosen if n != payload)
        original = next(v for v in catalog.product(state.open_item).options[payload] if v.lower() == value)
        return Transition(replace(state, chosen=kept + ((payload, original),)))
    if kind == "detail":
        return Transition(replace(state, page=Page.DETAIL, detail=payload))
    if kind == "buy":
        return Transition(replace(state, page=Page.DONE), bought=True)
    raise AssertionError(f"unhandled click kind {kind}")  # unreachable: clickables() defines the kinds
