"""The scripted expert: a deterministic policy that knows the goal but shops through the pages.

It searches the goal's keywords, scores every result of that search with the real reward
(choosing, for each, the option values closest to the goal), walks the result pages to the
best one, chooses the goal's options and buys. Epsilon noise is the scripted brain's job.
"""

from __future__ import annotations

from collections.abc import Callable

from .catalog import Catalog
from .reward import compute_reward, fuzzy, normalize_color
from .shop import BACK_TO_SEARCH, BUY_NOW, NEXT, PAGE_SIZE, PREV, Page, ShopState
from .types import Goal, Product


def best_options(product: Product, goal: Goal) -> dict[str, str]:
    """For each goal option, the product's closest value (same option name first, then any)."""
    chosen: dict[str, str] = {}
    for name, want in goal.goal_options.items():
        pools = [(name, product.options[name])] if name in product.options else list(product.options.items())
        best: tuple[float, str, str] | None = None
        for opt_name, values in pools:
            if opt_name in chosen:
                continue
            for v in values:
                score = 101.0 if v == want else fuzzy(normalize_color(v), normalize_color(want))
                if best is None or score > best[0]:
                    best = (score, opt_name, v)
        if best is not None and (best[0] > 85 or name in product.options):
            chosen[best[1]] = best[2]
    return chosen


def pick_best(results: tuple[int, ...], goal: Goal, catalog: Catalog) -> int | None:
    """Rank of the result with the highest achievable reward (earliest on ties)."""
    best_rank, best_score = None, -1.0
    for rank, i in enumerate(results):
        p = catalog.product(i)
        score = compute_reward(p, goal, best_options(p, goal)).reward
        if score > best_score:
            best_rank, best_score = rank, score
            if score >= 1.0:
                break
    return best_rank


def expert_action(
    state: ShopState, goal: Goal, catalog: Catalog, memo: dict[tuple[int, ...], int | None] | None = None
) -> str:
    """The expert's next action; `memo` (results -> best rank) saves rescoring within an episode."""
    search = f"search[{' '.join([goal.keywords, *goal.goal_options.values()])}]"
    if state.page is Page.SEARCH:
        return search
    if state.page is Page.DONE:
        return search  # nothing left to do; the env answers with an error if stepped
    if state.page is Page.DETAIL:
        return f"click[{PREV}]"
    if memo is not None and state.results in memo:
        rank = memo[state.results]
    else:
        rank = pick_best(state.results, goal, catalog)
        if memo is not None:
            memo[state.results] = rank
    if rank is None:
        return f"click[{BACK_TO_SEARCH}]"  # no results: go back (the expert then searches again)
    target = state.results[rank]
    if state.page is Page.RESULTS:
        page = rank // PAGE_SIZE + 1
        if page > state.page_num:
            return f"click[{NEXT}]"
        if page < state.page_num:
            return f"click[{PREV}]"
        return f"click[{catalog.asin(target).lower()}]"
    if state.item != target:
        return f"click[{PREV}]"
    product = catalog.product(state.item)
    have = state.chosen_dict()
    for name, value in best_options(product, goal).items():
        if have.get(name) != value:
            return f"click[{value.lower()}]"
    return f"click[{BUY_NOW}]"


def best_query(queries: list[str], goal: Goal, catalog: Catalog, search: Callable[[str], list[int]]) -> int | None:
    """Index of the query whose first results page holds the best buy for the goal (earliest rank, then the
    earliest query, on ties); None if `queries` is empty. The expert's own query uses the goal's hidden keywords;
    this ranks the queries a ranked-choice agent can actually send (spans of the instruction)."""
    best: tuple[float, int] | None = None
    best_i: int | None = None
    for i, query in enumerate(queries):
        results = tuple(search(query)[:PAGE_SIZE])
        rank = pick_best(results, goal, catalog)
        if rank is None:
            continue
        p = catalog.product(results[rank])
        key = (compute_reward(p, goal, best_options(p, goal)).reward, -rank)
        if best is None or key > best:
            best, best_i = key, i
    return best_i if best_i is not None else (0 if queries else None)


def settle_for(state: ShopState, goal: Goal, catalog: Catalog, tolerance: float) -> str | None:
    """The action that keeps to what the agent already has in view when it is good enough (its best buy scores at
    least `tolerance`), where the expert would leave for the single best product: the open item's next option (or
    buy), or the best result on the current page. None where the expert's own action stands.

    The expert's best product is chosen by attributes an agent cannot see; as a DAgger teacher it then labels
    states with "go back" and "next page" that no student can learn from the page (a policy trained on them
    bounced between items). A teacher that settles labels what the page shows."""
    if state.page is Page.ITEM and state.item is not None:
        product = catalog.product(state.item)
        options = best_options(product, goal)
        if compute_reward(product, goal, options).reward < tolerance:
            return None
        have = state.chosen_dict()
        for name, value in options.items():
            if have.get(name) != value:
                return f"click[{value.lower()}]"
        return f"click[{BUY_NOW}]"
    if state.page is Page.RESULTS:
        first = (state.page_num - 1) * PAGE_SIZE
        shown = state.results[first : first + PAGE_SIZE]
        rank = pick_best(shown, goal, catalog)
        if rank is None:
            return None
        p = catalog.product(shown[rank])
        if compute_reward(p, goal, best_options(p, goal)).reward < tolerance:
            return None
        return f"click[{catalog.asin(shown[rank]).lower()}]"
    return None
