"""The WebShop reward on hand-built products (expected values worked out by hand), and WebShop's own
reward-test title pairs (expected values from its test file)."""

from __future__ import annotations

import pytest

from envs.webshop.nouns import nouns, tokens
from envs.webshop.reward import (
    compute_reward,
    normalize_color,
    title_noun_score,
    type_reward,
)
from envs.webshop.types import Goal, Product

CAT = "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts"


def product(**kw) -> Product:
    base = dict(
        asin="B000000001",
        name="Velora Cotton T-Shirt",
        category="fashion",
        query="mens t shirts",
        product_category=CAT,
        description="A soft shirt for every day.",
        bullets=("MACHINE WASH: easy care",),
        attributes=("machine wash", "short sleeve"),
        options={"color": ("navy blue", "black"), "size": ("large", "x-large", "medium")},
        pricing=(19.99,),
        price=19.99,
    )
    base.update(kw)
    return Product(**base)


def goal(**kw) -> Goal:
    base = dict(
        asin="B000000001",
        instruction="i need a machine wash t-shirt",
        name="Velora Cotton T-Shirt",
        query="mens t shirts",
        product_category=CAT,
        category="fashion",
        attributes=("machine wash", "short sleeve"),
        goal_options={"color": "navy blue", "size": "large"},
        price_upper=30.0,
    )
    base.update(kw)
    return Goal(**base)


def test_perfect_purchase_scores_one():
    b = compute_reward(product(), goal(), {"color": "navy blue", "size": "large"})
    # (2 attrs + 2 options + price) / (2 + 2 + 1) * 1.0
    assert b.reward == 1.0
    assert (b.num_attr_matches, b.num_option_matches, b.r_price, b.r_type) == (2, 2, True, 1.0)


def test_only_chosen_options_count():
    b = compute_reward(product(), goal(), {})
    assert b.reward == pytest.approx(3 / 5)  # 2 attrs + price, no options chosen
    b = compute_reward(product(), goal(), {"size": "large"})
    assert b.reward == pytest.approx(4 / 5)


def test_wrong_option_and_price_over_bound():
    b = compute_reward(product(price=35.0, pricing=(35.0,)), goal(), {"color": "black", "size": "medium"})
    assert b.reward == pytest.approx(2 / 5)  # attrs only: options miss, 35 > 30
    assert not b.r_price and b.option_hits == {"color": False, "size": False}


def test_fuzzy_and_colour_quirks_are_webshop_faithful():
    # "sky blue" and "navy blue" both normalise to "blue"; "x-large" token-set matches "large" (score 100).
    assert normalize_color("sky blue") == normalize_color("navy blue") == "blue"
    b = compute_reward(product(), goal(), {"color": "sky blue", "size": "x-large"})
    assert b.num_option_matches == 2 and b.reward == 1.0


def test_attribute_found_in_text_when_not_in_list():
    p = product(attributes=("machine wash",), description="Short sleeve cut, cool in summer.")
    b = compute_reward(p, goal(), {"color": "navy blue", "size": "large"})
    assert b.attribute_hits == {"machine wash": True, "short sleeve": True}
    p = product(attributes=("machine wash",), description="Long cut.")
    b = compute_reward(p, goal(), {"color": "navy blue", "size": "large"})
    assert b.reward == pytest.approx(4 / 5)  # 1 attr + 2 options + price


def test_type_factor_zero_when_no_title_noun_overlaps():
    p = product(name="Acme Ceramic Coffee Mug", query="coffee mug", product_category="Home & Kitchen › Mugs")
    t = type_reward(p, goal())
    assert t.title_score == 0.0 and t.r_type == 0.0
    assert compute_reward(p, goal(), {"color": "navy blue", "size": "large"}).reward == 0.0


def test_type_factor_point_one_below_ten_percent():
    g = goal(name="Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Shirt")  # 11 nouns
    p = product(name="Plain Shirt", query="other", product_category="X › Y")
    t = type_reward(p, g)
    assert t.title_score == pytest.approx(1 / 11) and t.r_type == 0.1
    assert compute_reward(p, g, {"color": "navy blue", "size": "large"}).reward == pytest.approx(0.1)


def test_type_factor_half_without_query_category_or_title_match():
    g = goal(name="Alpha Beta Gamma Delta Shirt")  # 5 nouns, 1 shared -> 0.2, not > 0.2
    p = product(name="Plain Shirt", query="other", product_category="X › Y")
    t = type_reward(p, g)
    assert (t.title_score, t.query_match, t.category_match, t.r_type) == (0.2, False, False, 0.5)
    b = compute_reward(p, g, {"color": "navy blue"})
    assert b.reward == pytest.approx((2 + 1 + 1) / 5 * 0.5)


def test_category_overlap_of_two_parts_restores_full_type():
    g = goal(name="Alpha Beta Gamma Delta Shirt")
    p = product(name="Plain Shirt", query="other", product_category="Clothing, Shoes & Jewelry › Men › Other")
    t = type_reward(p, g)
    assert t.category_match and t.r_type == 1.0


# Noun lists checked against spaCy's en_core_web_sm 3.8 tagging (NOUN/PROPN, lower-cased, in order).
@pytest.mark.parametrize(
    "title, expected",
    [
        (
            "Velora Cotton Men's T-Shirt - Breathable, Machine Wash",
            ("velora", "cotton", "men", "t", "shirt", "breathable", "machine", "wash"),
        ),
        (
            "Upgraded Wireless Earbuds, Bluetooth 5.0 Headphones with Charging Case",
            ("wireless", "earbuds", "bluetooth", "headphones", "charging", "case"),
        ),
        (
            "Nightstand with Charging Station, Two Drawers Bed Side Table",
            ("nightstand", "charging", "station", "drawers", "bed", "side", "table"),
        ),
        (
            "Zinus 12 Inch Green Tea Memory Foam Mattress, Queen",
            ("zinus", "inch", "green", "tea", "memory", "foam", "mattress", "queen"),
        ),
        # Lower-case words take their dictionary class: adjectives, adverbs and participles drop out.
        ("organic green tea bags, 100 count, lightly sweetened", ("tea", "bags", "count")),
        # A capitalised participle is a noun inside the title, not as its first or last word.
        (
            "Upgraded Wireless Earbuds with Advanced Noise Cancelling",
            ("wireless", "earbuds", "advanced", "noise", "cancelling"),
        ),
        # "-ly" nouns stay nouns, adjective + "ly" is an adverb; an all-caps "US" is an acronym.
        ("Family Size Daily Vitamins, Individually Wrapped", ("family", "size", "daily", "vitamins")),
        ("Nike Air Max Shoes for Men, 8 US", ("nike", "air", "max", "shoes", "men", "us")),
        ("4k Ultra Hd Projector, 1080P Native", ("ultra", "hd", "projector", "1080p", "native")),
    ],
)
def test_rule_based_nouns(title, expected):
    assert nouns(title) == expected


@pytest.mark.parametrize(
    "title, expected",
    [
        (
            "adidas Unisex-Adult D.o.n. Issue 2 Basketball Shoe",
            ["adidas", "Unisex", "Adult", "D.o.n", "Issue", "2", "Basketball", "Shoe"],
        ),
        ("Panasonic SC-HT830V DVD/VCR Combo (Silver)", ["Panasonic", "SC", "HT830V", "DVD", "VCR", "Combo", "Silver"]),
        (
            "4K Ultra HD, 64GB, 12oz, 3x5ft, 10-Pack, WH-1000XM4",
            ["4", "K", "Ultra", "HD", "64", "GB", "12", "oz", "3x5", "ft", "10", "Pack", "WH-1000XM4"],
        ),
        ("Burt's Bees Kids' L'Oreal Oats 'N Honey", ["Burt", "Bees", "Kids", "L'Oreal", "Oats", "N", "Honey"]),
    ],
)
def test_title_tokens_follow_spacy_tokenizer(title, expected):
    assert tokens(title) == expected


# WebShop's own reward tests (princeton-nlp/WebShop, tests/web-agent-site/engine/test_goal.py,
# test_get_type_reward and test_get_reward): goal title, purchased title, WebShop's expected
# title_score. WebShop tags with spaCy en_core_web_lg; we match within 0.02.
WEBSHOP_TITLE_CASES = [
    ("Name 1", "Name 1", 1.0),
    (
        "adidas Unisex-Adult D.o.n. Issue 2 Basketball Shoe",
        "adidas Unisex-Adult D.o.n. Issue 2 Indoor Court Shoe",
        0.85,
    ),
    (
        (
            "Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar Home Theater "
            "System Subwoofer"
        ),
        "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo Home Theater System",
        0.31,
    ),
    (
        "Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar",
        "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo Home Theater System",
        0.17,
    ),
    (
        "Rusticware 921ORB Kitchen and Bath Cabinet Knob",
        "Minkissy 2pcs Stainless Steel Eyebrow Tweezers Blackhead Acne Remover Portable Makeup Tweezers (Silver)",
        0.0,
    ),
    (
        "Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
        "Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White",
        1.0,
    ),
]


@pytest.mark.parametrize("goal_title, product_title, expected", WEBSHOP_TITLE_CASES)
def test_webshop_title_scores_within_0_02(goal_title, product_title, expected):
    assert title_noun_score(product_title, goal_title) == pytest.approx(expected, abs=0.02)
    t = type_reward(
        product(name=product_title, query="Query 2", product_category="a › d › e"),
        goal(name=goal_title, query="Query 1", product_category="a › b › c"),
    )
    # Same r_type bucket as WebShop: > 0.2 -> 1.0; (0.1, 0.2] without query/category -> 0.5; 0 -> 0.
    assert t.r_type == {1.0: 1.0, 0.85: 1.0, 0.31: 1.0, 0.17: 0.5, 0.0: 0.0}[expected]


def test_webshop_get_reward_r_type_case():
    # WebShop's test_get_reward, last step: 1 of 3 attributes (WebShop passes its bullets as one string, which
    # its join spreads into single letters, so only the description's "natural ingredients" counts), 2 of 3
    # options, price under the bound, type factor 0.5 -> 0.2857.
    g = goal(
        name=WEBSHOP_TITLE_CASES[3][0],
        query="Query 1",
        product_category="a › b › c",
        attributes=("tea tree", "essential oils", "natural ingredients"),
        goal_options={"color": "grey", "size": "XL", "amount": "pack of 12"},
        price_upper=40.0,
    )
    p = product(
        name=WEBSHOP_TITLE_CASES[3][1],
        query="Query 2",
        product_category="a › d › e",
        attributes=(),
        bullets=(),
        description="Best shampoo on the market, made with natural ingredients",
    )
    b = compute_reward(p, g, {"color": "grey", "size": "XL"}, price=35)
    assert b.r_type == 0.5 and b.reward == pytest.approx(0.2857, abs=1e-2)


def test_goal_nouns_count_with_repeats_like_webshop():
    # "bar" twice in the goal: 2 of its 3 noun tokens are matched by a product that has "bar" (distinct count).
    assert title_noun_score("Bar Stool", "Bar Bar Stool") == pytest.approx(2 / 3)
    assert title_noun_score("Plain Shirt", "Velora Shirt Shirt Shirt") == pytest.approx(1 / 4)


@pytest.mark.parametrize(
    "goal_title, product_title, expected",
    [
        # Sanity on titles outside WebShop's tests (expected: the same score from spaCy en_core_web_sm's tags).
        ("Stainless Steel Water Bottle, 32 oz, Leak Proof Lid", "Insulated Stainless Steel Tumbler with Lid", 3 / 8),
        ("Hanes Men's EcoSmart Fleece Sweatshirt", "Champion Men's Powerblend Fleece Jogger Sweatpants", 2 / 5),
        ("Rustic Brown Nightstand with 2 Drawers", "VASAGLE Nightstand, Side Table with 2 Drawers", 2 / 4),
        (
            "KIND Bars, Dark Chocolate Nuts & Sea Salt, Gluten Free, 12 Count",
            "Nature Valley Crunchy Granola Bars, Oats and Honey, 12 Bars",
            1 / 10,
        ),
        (
            "Neutrogena Hydro Boost Water Gel Face Moisturizer for Dry Skin",
            "CeraVe Moisturizing Cream for Dry Skin, 19 Ounce",
            2 / 9,
        ),
    ],
)
def test_title_scores_on_other_titles_are_sane(goal_title, product_title, expected):
    assert title_noun_score(product_title, goal_title) == pytest.approx(expected, abs=0.02)
