"""WebShop's reward, reimplemented from its published formula (princeton-nlp/WebShop, goal.py).

reward = (attribute matches + option matches + [price <= bound]) / (n_attr + n_opt + 1) * r_type

- attribute match: fuzzy (token_set_ratio > 85) against the product's attribute list, else the
  attribute phrase appears in the title, bullets or description;
- option match: a goal option fuzzily equals one of the options the agent *chose* (after the
  same colour normalisation WebShop applies to every option value);
- r_type: 1, 0.5 when neither query, category (>= 2 shared breadcrumb parts) nor title nouns
  (> 0.2) agree, 0.1 when title noun overlap < 0.1, 0 when it is 0. Title nouns come from
  `nouns.py`, a model-free tagger that reproduces spaCy's NOUN/PROPN tagging of titles (WebShop's
  own reward tests are in tests/webshop/test_reward.py, matched within 0.02).

Fuzzy matching uses rapidfuzz with `default_process` (lower-case, punctuation to spaces), which
is what `thefuzz`/`fuzzywuzzy` (used by WebShop) do by default; so "large" matches "x-large"
there and here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rapidfuzz import fuzz, utils

from .nouns import nouns
from .types import Goal, Product

FUZZ_THRESHOLD = 85

# Colour words; an option value containing one is reduced to the first (alphabetically) it
# contains, as WebShop's normalize_color does with its colour list ("navy blue" -> "blue").
COLOR_SET: tuple[str, ...] = tuple(
    sorted(
        """
alabaster apricot aqua beige black blue blush bronze brown burgundy camel caramel champagne charcoal chocolate
copper coral cream denim espresso fuchsia gold gray green grey ivory khaki lavender lilac lime magenta maroon
mauve mint mocha multicolor mustard natural navy nude olive orange peach pink plum purple red rose ruby rust
sage sand silver taupe teal turquoise violet white yellow
""".split()
    )
)


def normalize_color(value: str) -> str:
    for c in COLOR_SET:
        if c in value:
            return c
    return value


def fuzzy(a: str, b: str) -> float:
    return fuzz.token_set_ratio(a, b, processor=utils.default_process)


@dataclass(frozen=True)
class TypeReward:
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


@dataclass(frozen=True)
class RewardBreakdown:
    """Everything the reward was computed from, for `info` and for people reading the web page."""

    reward: float
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float
    r_att: float
    num_attr_matches: int
    n_attr: int
    r_option: float | None
    num_option_matches: int
    n_opt: int
    r_price: bool
    price: float
    price_upper: float
    attribute_hits: dict[str, bool]
    option_hits: dict[str, bool]

    def as_dict(self) -> dict:
        return asdict(self)


def title_noun_score(product_title: str, goal_title: str) -> float:
    """Share of the goal title's nouns that the product title has (0.2 when the goal has none).

    As in WebShop, the denominator counts the goal's noun tokens with repeats ("Bar 3.1 Bar 2.1"
    counts "bar" twice) while the numerator counts distinct shared nouns, so two equal titles with
    a repeated noun score below 1 (r_type is still 1 for them: the score is above 0.2).
    """
    g_nouns = nouns(goal_title)
    if not g_nouns:
        return 0.2
    return len(set(nouns(product_title)) & set(g_nouns)) / len(g_nouns)


def type_reward(product: Product, goal: Goal) -> TypeReward:
    query_match = product.query.lower().strip() == goal.query.lower().strip()
    p_cat = {x.strip() for x in product.product_category.split("›")}
    g_cat = {x.strip() for x in goal.product_category.split("›")}
    category_match = len(p_cat & g_cat) >= 2
    title_score = title_noun_score(product.name, goal.name)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeReward(r_type, query_match, category_match, title_score)


def attribute_hits(product: Product, goal: Goal) -> dict[str, bool]:
    title, bullets, desc = product.name.lower(), " ".join(product.bullets).lower(), product.description.lower()
    hits = {}
    for g in goal.attributes:
        hit = any(fuzzy(p, g) > FUZZ_THRESHOLD for p in product.attributes)
        hits[g] = hit or g in title or g in bullets or g in desc
    return hits


def option_hits(chosen: dict[str, str], goal: Goal) -> dict[str, bool]:
    picked = [normalize_color(v) for v in chosen.values()]
    return {
        name: any(fuzzy(p, normalize_color(g)) > FUZZ_THRESHOLD for p in picked)
        for name, g in goal.goal_options.items()
    }


def compute_reward(product: Product, goal: Goal, chosen: dict[str, str], price: float | None = None) -> RewardBreakdown:
    """Score buying `product` with options `chosen` (option name -> value) against `goal`."""
    price = product.price if price is None else price
    t = type_reward(product, goal)
    a_hits = attribute_hits(product, goal)
    o_hits = option_hits(chosen, goal)
    n_attr, n_opt = len(goal.attributes), len(goal.goal_options)
    na, no = sum(a_hits.values()), sum(o_hits.values())
    r_price = price <= goal.price_upper
    total = (na + no + int(r_price)) / (n_attr + n_opt + 1) * t.r_type
    return RewardBreakdown(
        reward=total,
        r_type=t.r_type,
        query_match=t.query_match,
        category_match=t.category_match,
        title_score=t.title_score,
        r_att=na / n_attr if n_attr else 0.0,
        num_attr_matches=na,
        n_attr=n_attr,
        r_option=no / n_opt if n_opt else None,
        num_option_matches=no,
        n_opt=n_opt,
        r_price=r_price,
        price=price,
        price_upper=goal.price_upper,
        attribute_hits=a_hits,
        option_hits=o_hits,
    )
