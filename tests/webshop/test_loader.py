"""The original-WebShop-file loader on small files written here in WebShop's format."""

from __future__ import annotations

import json

import pytest

from envs.webshop.env import WebShopEnv
from envs.webshop.loader import load_original, parse_pricing

from .conftest import run_expert

ITEMS = [
    {
        "asin": "B01AAAAAAA",
        "category": "beauty",
        "query": "Hair Extensions ",
        "name": "Lux Clip In Hair Extension Human Hair",
        "product_category": "Beauty & Personal Care › Hair Care › Hair Extensions",
        "full_description": "Soft natural looking hair.",
        "small_description": ["NATURAL LOOKING: blends in", "HEAT RESISTANT"],
        "pricing": "$19.99 - $29.99",
        "images": ["x.jpg"],
        "customization_options": {
            "Color": [{"value": "Black/Brown", "image": None}, {"value": "Blonde", "image": None}],
            "Length": [{"value": "18 Inch"}, {"value": "20 Inch"}],
        },
    },
    {
        "asin": "B01BBBBBBB",
        "category": "food",
        "query": "protein bars",
        "name": "Crunch Protein Bar Chocolate",
        "product_category": "Grocery › Snacks › Bars",
        "full_description": "High protein snack.",
        "small_description": "GLUTEN FREE and tasty",
        "pricing": "$12.50",
        "images": ["y.jpg"],
        "customization_options": None,
    },
    {
        "asin": "B01BBBBBBB",
        "category": "food",
        "query": "dup",
        "name": "Duplicate",
        "product_category": "",
        "full_description": "",
        "small_description": [],
        "pricing": "",
        "images": [],
        "customization_options": {},
    },
    {
        "asin": "nan",
        "category": "food",
        "query": "bad",
        "name": "Bad",
        "product_category": "",
        "full_description": "",
        "small_description": [],
        "pricing": "",
        "images": [],
        "customization_options": {},
    },
    {
        "asin": "B01CCCCCCC",
        "category": "electronics",
        "query": "usb c charger",
        "name": "Volt USB C Wall Charger",
        "product_category": "Electronics › Chargers",
        "full_description": "Fast charging for phones.",
        "small_description": ["FAST CHARGING"],
        "pricing": "",
        "images": ["z.jpg"],
        "customization_options": {},
    },
]
INS = {
    "B01AAAAAAA": {
        "attributes": ["natural looking", "heat resistant"],
        "instruction": "i need natural looking hair extensions",
        "instruction_attributes": ["natural looking"],
        "instruction_options": ["black | brown"],
    },
    "B01BBBBBBB": {
        "attributes": ["gluten free"],
        "instruction": "i want gluten free protein bars",
        "instruction_attributes": ["gluten free"],
    },
}
HUMAN = {
    "B01AAAAAAA": [
        {
            "asin": "B01AAAAAAA",
            "instruction": "i am looking for a natural looking clip in hair extension in blonde.",
            "instruction_attributes": ["natural looking"],
            "instruction_options": ["blonde"],
        }
    ],
    "B01CCCCCCC": [
        {
            "asin": "B01CCCCCCC",
            "instruction": "fast charging wall charger",
            "instruction_attributes": ["fast charging"],
            "instruction_options": [],
        },
        {
            "asin": "B01CCCCCCC",
            "instruction": "skipped: no attributes",
            "instruction_attributes": [],
            "instruction_options": [],
        },
    ],
}


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, data in (
        ("items_shuffle_1000.json", ITEMS),
        ("items_ins_v2_1000.json", INS),
        ("items_human_ins.json", HUMAN),
    ):
        paths[name] = tmp_path / name
        paths[name].write_text(json.dumps(data))
    return paths


def test_pricing_rules():
    assert parse_pricing("$19.99 - $29.99") == (19.99, 29.99)
    assert parse_pricing("$1,299.00") == (1299.0,)
    assert parse_pricing("") == (100.0,)
    assert parse_pricing(None) == (100.0,)


def test_products_parsed_like_webshop(files):
    cat = load_original(files["items_shuffle_1000.json"], files["items_ins_v2_1000.json"])
    assert len(cat) == 3  # duplicate and "nan" ASINs skipped
    p = cat.product(cat.index_of("B01AAAAAAA"))
    assert p.options == {"color": ("black | brown", "blonde"), "length": ("18 inch", "20 inch")}
    assert p.pricing == (19.99, 29.99) and 19.99 <= p.price <= 29.99 and p.price_tag == "$19.99 to $29.99"
    assert p.query == "hair extensions" and p.attributes == ("natural looking", "heat resistant")
    q = cat.product(cat.index_of("b01bbbbbbb"))
    assert q.bullets == ("GLUTEN FREE and tasty",) and q.options == {}
    c = cat.product(cat.index_of("B01CCCCCCC"))
    assert c.attributes == ("DUMMY_ATTR",) and c.pricing == (100.0,)


def test_synthetic_goals_one_per_option_combination(files):
    cat = load_original(files["items_shuffle_1000.json"], files["items_ins_v2_1000.json"])
    goals = cat.goals("test")  # fewer than 500 goals: all are in test, like WebShop's first 500
    assert len(goals) == 2 * 2 + 1 and len(cat.goals("train")) == 0
    hair = [g for g in goals if g.asin == "B01AAAAAAA"]
    assert {tuple(sorted(g.goal_options.items())) for g in hair} == {
        (("color", c), ("length", n)) for c in ("black | brown", "blonde") for n in ("18 inch", "20 inch")
    }
    g = hair[0]
    assert g.instruction.startswith("i need natural looking hair extensions with color: ")
    assert "price lower than" in g.instruction and g.price_upper > 29.99 - 10


def test_human_goals_and_env_episode(files):
    cat = load_original(
        files["items_shuffle_1000.json"], files["items_ins_v2_1000.json"], files["items_human_ins.json"]
    )
    goals = cat.goals("test")
    assert len(goals) == 2
    env = WebShopEnv(
        catalog_path=files["items_shuffle_1000.json"],
        attributes_path=files["items_ins_v2_1000.json"],
        human_goals_path=files["items_human_ins.json"],
        split="test",
    )
    for gi in range(len(env.goals)):
        r, actions, info = run_expert(env, gi)
        assert r == 1.0, (env.goals[gi], actions, info)
    blonde = next(i for i, g in enumerate(env.goals) if "blonde" in g.instruction)
    _, actions, _ = run_expert(env, blonde)
    assert "click[blonde]" in actions
