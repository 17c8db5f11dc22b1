"""Loader for the original WebShop files, for users who have them.

Files and fields (as WebShop ships them):
- `items_shuffle*.json`: a list of products with asin, name, full_description,
  small_description (list or str), pricing ("$12.99" or "$10.00 - $20.00" or empty),
  product_category ("A › B › C"), category, query, customization_options
  ({name: [{"value": ..., "image": ...}]}), images, ...
- `items_ins_v2*.json`: {asin: {attributes, instruction, instruction_attributes, instruction_options}}
- `items_human_ins.json` (optional): {asin: [{instruction, instruction_attributes, instruction_options}]}

Goals are built the WebShop way: from human instructions when that file is given, else
synthetic goals (one per combination of option values). The goal list is shuffled with
WebShop's seed (233) and split by position as WebShop does: test = first 500, eval = next 1000,
train = the rest. Option values are lower-cased and "/" becomes " | ", as in WebShop.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .catalog import SPLITS, Catalog, Split, keywords_from_instruction, price_upper_choices
from .synth import mix
from .types import Goal, Product, Review

log = logging.getLogger(__name__)

LOADER_VERSION = 1
GOAL_SHUFFLE_SEED = 233
SPLIT_BOUNDS = {"test": (0, 500), "eval": (500, 1500), "train": (1500, None)}


def _file_hash(paths: list[Path | None]) -> str:
    h = hashlib.sha1(f"webshop-original-v{LOADER_VERSION}".encode())
    for p in paths:
        h.update(b"|")
        if p is None:
            continue
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def parse_pricing(pricing: Any) -> tuple[float, ...]:
    """WebShop's rule: every "$x" in the string is a price; none means $100."""
    if not pricing:
        return (100.0,)
    if isinstance(pricing, (list, tuple)):
        values = [float(x) for x in pricing]
    else:
        values = [float(re.sub(r"[^\d.]", "", part) or 0) for part in str(pricing).split("$")[1:]]
    values = [v for v in values if v > 0] or [100.0]
    return tuple(values[:2])


def parse_options(raw: dict | None) -> dict[str, tuple[str, ...]]:
    options: dict[str, tuple[str, ...]] = {}
    for name, contents in (raw or {}).items():
        if not contents:
            continue
        values = [str(c["value"] if isinstance(c, dict) else c).strip().replace("/", " | ").lower() for c in contents]
        options[name.lower()] = tuple(dict.fromkeys(v for v in values if v))
    return options


def _price(asin: str, pricing: tuple[float, ...]) -> float:
    if len(pricing) == 1:
        return pricing[0]
    frac = (mix(int(hashlib.md5(asin.encode()).hexdigest()[:12], 16)) % 10_000) / 10_000
    return round(pricing[0] + (pricing[1] - pricing[0]) * frac, 2)


def _product(raw: dict, attributes: dict[str, dict]) -> Product:
    asin = raw["asin"]
    bullets = raw.get("small_description") or []
    bullets = [bullets] if isinstance(bullets, str) else list(bullets)
    pricing = parse_pricing(raw.get("pricing"))
    reviews = tuple(
        Review(
            str(r.get("title", "")),
            str(r.get("body", r.get("review", ""))),
            int(r.get("score", r.get("stars", 0)) or 0),
        )
        for r in raw.get("Reviews", []) or []
    )
    attrs = attributes.get(asin, {}).get("attributes") or ["DUMMY_ATTR"]
    return Product(
        asin=asin,
        name=raw.get("name", ""),
        category=raw.get("category", ""),
        query=str(raw.get("query", "")).lower().strip(),
        product_category=raw.get("product_category", ""),
        description=raw.get("full_description", "") or "",
        bullets=tuple(str(b) for b in bullets),
        attributes=tuple(attrs),
        options=parse_options(raw.get("customization_options")),
        pricing=pricing,
        price=_price(asin, pricing),
        rating=None,
        reviews=reviews,
    )


class RecordCatalog(Catalog):
    """Products held as records, plus WebShop-style goals."""

    def __init__(self, products: list[Product], goals: list[Goal], catalog_hash: str) -> None:
        self._products = products
        self._by_asin = {p.asin.upper(): i for i, p in enumerate(products)}
        self._goals = goals
        self.hash = catalog_hash

    def __len__(self) -> int:
        return len(self._products)

    def product(self, index: int) -> Product:
        return self._products[index]

    def asin(self, index: int) -> str:
        return self._products[index].asin

    def index_of(self, asin: str) -> int | None:
        return self._by_asin.get(asin.strip().upper())

    def goals(self, split: Split) -> Sequence[Goal]:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        lo, hi = SPLIT_BOUNDS[split]
        return self._goals[lo:hi]


def _price_bound(rng: random.Random, price: float) -> tuple[float, str]:
    choices = price_upper_choices(price)
    if len(choices) >= 2:
        upper = sorted(rng.sample(choices, 2))[1]
        return upper, f", and price lower than {upper:.2f} dollars"
    return 1_000_000.0, ""


def _goal(p: Product, instruction: str, attrs: list[str], options: dict[str, str], upper: float, base: str) -> Goal:
    return Goal(
        asin=p.asin,
        instruction=instruction,
        name=p.name,
        query=p.query,
        product_category=p.product_category,
        category=p.category,
        attributes=tuple(attrs),
        goal_options=options,
        price_upper=upper,
        keywords=keywords_from_instruction(base),
    )


def human_goals(products: list[Product], human: dict[str, list[dict]], rng: random.Random) -> list[Goal]:
    goals = []
    for p in products:
        for ins in human.get(p.asin, []):
            attrs = ins.get("instruction_attributes") or []
            if not attrs:
                continue
            upper, price_text = _price_bound(rng, p.price)
            raw_opts = ins.get("instruction_options") or []
            options = (
                dict(raw_opts)
                if isinstance(raw_opts, dict)
                else {f"option {k + 1}": str(v) for k, v in enumerate(raw_opts)}
            )
            text = ins["instruction"].strip(".")
            goals.append(_goal(p, text + price_text, attrs, options, upper, text))
    return goals


def synthetic_goals(products: list[Product], attributes: dict[str, dict], rng: random.Random) -> list[Goal]:
    goals = []
    for p in products:
        meta = attributes.get(p.asin, {})
        text, attrs = meta.get("instruction"), meta.get("instruction_attributes")
        if not text or not attrs:
            continue
        upper, price_text = _price_bound(rng, p.price)
        names = sorted(p.options)
        for combo in itertools.product(*(p.options[n] for n in names)):
            options = dict(zip(names, combo))
            opt_text = ", and ".join(f"{k}: {v}" for k, v in options.items())
            opt_text = f" with {opt_text}" if opt_text else ""
            goals.append(_goal(p, f"{text}{opt_text}{price_text}", attrs, options, upper, text))
    return goals


def load_original(
    items_path: str | Path, attributes_path: str | Path | None = None, human_goals_path: str | Path | None = None
) -> RecordCatalog:
    items_path = Path(items_path)
    attributes_path = Path(attributes_path) if attributes_path else None
    human_goals_path = Path(human_goals_path) if human_goals_path else None
    with open(items_path) as f:
        raw_items = json.load(f)
    attributes: dict[str, dict] = {}
    if attributes_path is not None:
        with open(attributes_path) as f:
            attributes = json.load(f)
    products, seen = [], set()
    for raw in raw_items:
        asin = str(raw.get("asin", ""))
        if asin == "nan" or not asin or len(asin) > 10 or asin in seen:
            continue  # WebShop skips malformed and repeated ASINs too
        seen.add(asin)
        products.append(_product(raw, attributes))
    rng = random.Random(GOAL_SHUFFLE_SEED)
    if human_goals_path is not None:
        with open(human_goals_path) as f:
            goals = human_goals(products, json.load(f), rng)
    else:
        goals = synthetic_goals(products, attributes, rng)
    random.Random(GOAL_SHUFFLE_SEED).shuffle(goals)
    log.info("loaded %d products and %d goals from %s", len(products), len(goals), items_path)
    return RecordCatalog(products, goals, _file_hash([items_path, attributes_path, human_goals_path]))
