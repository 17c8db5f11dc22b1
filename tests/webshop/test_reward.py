"""The WebShop reward on hand-built products, each expected value worked out by hand."""

from __future__ import annotations

import pytest

from envs.webshop.nouns import nouns
from envs.webshop.reward import compute_reward, normalize_color, type_reward
from envs.webshop.types import Goal, Product

CAT = "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts"


def product(**kw) -> Product:
    base = dict(asin="B000000001", name="Velora Cotton T-Shirt", category="fashion", query="mens t shirts",
                product_category=CAT, description="A soft shirt for every day.", bullets=("MACHINE WASH: easy care",),
                attributes=("machine wash", "short sleeve"), options={"color": ("navy blue", "black"),
                                                                        "size": ("large", "x-large", "medium")},
                pricing=(19.99,), price=19.99)
    base.update(kw)
    return Product(**base)


def goal(**kw) -> Goal:
    base = dict(asin="B000000001", instruction="i need a machine wash t-shirt", name="Velora Cotton T-Shirt",
                query="mens t shirts", product_category=CAT, category="fashion",
                attributes=("machine wash", "short sleeve"), goal_options={"color": "navy blue", "size": "large"},
                price_upper=30.0)
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


@pytest.mark.parametrize("title, expected", [
    ("Velora Cotton Men's T-Shirt - Breathable, Machine Wash", {"velora", "cotton", "shirt", "machine", "wash"}),
    ("Upgraded Wireless Earbuds, Bluetooth 5.0 Headphones with Charging Case",
     {"earbuds", "bluetooth", "headphones", "charging", "case"}),
    ("Nightstand with Charging Station, Two Drawers Bed Side Table",
     {"nightstand", "charging", "station", "drawers", "bed", "table"}),
])
def test_rule_based_nouns(title, expected):
    assert set(nouns(title)) == expected
