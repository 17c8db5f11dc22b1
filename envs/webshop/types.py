"""Plain records shared by the catalog, goals, search, reward and the state machine."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Review:
    title: str
    body: str
    score: int  # 1..5 stars


@dataclass(frozen=True, slots=True)
class Product:
    """One product, with WebShop's field meanings (name = Title, small_description = bullets)."""

    asin: str
    name: str
    category: str  # top level, e.g. "beauty"
    query: str  # the search query the product was found with
    product_category: str  # breadcrumb joined with " › "
    description: str
    bullets: tuple[str, ...]
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]]  # option name -> values, in display order
    pricing: tuple[float, ...]  # one price, or (low, high)
    price: float  # the price this product sells at (inside `pricing`)
    rating: float | None = None
    reviews: tuple[Review, ...] = field(default=())

    @property
    def price_tag(self) -> str:
        if len(self.pricing) >= 2:
            return f"${self.pricing[0]:.2f} to ${self.pricing[1]:.2f}"
        return f"${self.pricing[0]:.2f}"


@dataclass(frozen=True, slots=True)
class Goal:
    """What the shopper wants: a target product's type, attributes, options and a price bound."""

    asin: str
    instruction: str
    name: str  # the target product's title (used by the type reward)
    query: str
    product_category: str
    category: str
    attributes: tuple[str, ...]
    goal_options: dict[str, str]  # option name -> wanted value
    price_upper: float
    keywords: str = ""  # what a shopper would type into the search bar (used by the expert)
