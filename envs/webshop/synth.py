"""Seeded synthetic catalog: products are rows of small integer codes, rendered to text on demand.

Why codes: 1M products as Python dicts would cost GBs; as ~20 numeric columns they cost ~40 MB
and load from disk in milliseconds. Codes are drawn vectorised in fixed-size chunks, each with
its own seed, so generation streams and memory stays flat; (num_products, seed) fixes every product.
Text (title, description, bullets, reviews) is a pure function of the codes and a cheap integer
hash, so rendering needs no random-generator state.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from envs.util import publish_file

from . import vocab
from .catalog import SPLITS, Catalog, Split, price_upper_choices
from .paths import cache_dir
from .types import Goal, Product, Review

log = logging.getLogger(__name__)

GENERATOR_VERSION = 3
CHUNK = 65_536
MAX_ATTRS = 4
OPT_SLOTS = 3
_MASK64 = (1 << 64) - 1
_ASIN_MOD = 36**8
_ASIN_MUL = 1_103_515_245 * 5 + 2  # odd and not divisible by 3, so a bijection mod 36**8
_ASIN_MUL_INV = pow(_ASIN_MUL, -1, _ASIN_MOD)
_B36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# --- code tables built once from the vocabulary -------------------------------------------
LEAVES = vocab.LEAVES
ATTRS: tuple[str, ...] = tuple(
    dict.fromkeys(a for leaf in LEAVES for a in (*leaf.attributes, *vocab.CATEGORY_ATTRIBUTES[leaf.category]))
)
_ATTR_ID = {a: i for i, a in enumerate(ATTRS)}
_POOLS = [
    [_ATTR_ID[a] for a in dict.fromkeys((*leaf.attributes, *vocab.CATEGORY_ATTRIBUTES[leaf.category]))]
    for leaf in LEAVES
]
_POOL_W = max(len(p) for p in _POOLS)
POOL = np.full((len(LEAVES), _POOL_W), -1, dtype=np.int16)
POOL_LEAF_N = np.array([len(leaf.attributes) for leaf in LEAVES])
for _li, _p in enumerate(_POOLS):
    POOL[_li, : len(_p)] = _p
BRANDS: tuple[str, ...] = tuple(h + t for h in vocab.BRAND_HEADS for t in vocab.BRAND_TAILS)
BREADCRUMBS: tuple[str, ...] = tuple(vocab.SEP.join(leaf.path) for leaf in LEAVES)


def mix(*xs: int) -> int:
    """splitmix64-style hash of integers: cheap, stateless randomness for rendering."""
    h = 0x9E3779B97F4A7C15
    for x in xs:
        h = ((h ^ (x & _MASK64)) * 0xBF58476D1CE4E5B9) & _MASK64
        h ^= h >> 31
        h = (h * 0x94D049BB133111EB) & _MASK64
        h ^= h >> 29
    return h


def mix_array(seed: int, salt: int, idx: np.ndarray) -> np.ndarray:
    """Vectorised `mix`-like hash (not bit-identical to `mix`; used only for split assignment)."""
    with np.errstate(over="ignore"):
        h = idx.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64((seed * 1_000_003 + salt) & _MASK64)
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return h


def _cap(s: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in s.split())


# --- generation ---------------------------------------------------------------------------
COLUMNS = (
    "leaf",
    "noun",
    "brand",
    "adj",
    "material",
    "variant",
    "attrs",
    "opt_mask",
    "price_lo",
    "price_hi",
    "rating",
    "n_reviews",
)


def _generate_chunk(seed: int, chunk: int, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([seed, chunk, GENERATOR_VERSION])
    leaf = rng.integers(0, len(LEAVES), n).astype(np.int16)
    n_nouns = np.array([len(x.nouns) for x in LEAVES])[leaf]
    n_mats = np.array([len(x.materials) for x in LEAVES])[leaf]
    noun = (rng.random(n) * n_nouns).astype(np.int8)
    material = np.where(n_mats > 0, (rng.random(n) * np.maximum(n_mats, 1)).astype(np.int8), -1).astype(np.int8)
    brand = rng.integers(0, len(BRANDS), n).astype(np.int16)
    adj = rng.integers(0, len(vocab.ADJECTIVES), n).astype(np.int8)
    variant = rng.integers(0, 4, n).astype(np.int8)

    # attributes: 2..4 distinct from the leaf's pool, leaf-specific ones favoured
    pools = POOL[leaf]
    keys = rng.random(pools.shape)
    leaf_specific = np.arange(_POOL_W)[None, :] < POOL_LEAF_N[leaf][:, None]
    keys = np.where(leaf_specific, keys * 0.5, keys)
    keys[pools < 0] = 2.0
    order = np.argsort(keys, axis=1)[:, :MAX_ATTRS]
    attrs = np.take_along_axis(pools, order, axis=1)
    k = rng.integers(2, MAX_ATTRS + 1, n)
    attrs[np.arange(MAX_ATTRS)[None, :] >= k[:, None]] = -1

    # options: per option slot a subset (as a bitmask) of that option's value vocabulary
    opt_mask = np.zeros((n, OPT_SLOTS), dtype=np.uint32)
    for li, lf in enumerate(LEAVES):
        rows = np.nonzero(leaf == li)[0]
        if rows.size == 0:
            continue
        for s, name in enumerate(lf.options[:OPT_SLOTS]):
            n_vals = len(vocab.OPTION_VALUES[name])
            m = rng.integers(2, min(n_vals, 8) + 1, rows.size)
            ranks = np.argsort(np.argsort(rng.random((rows.size, n_vals)), axis=1), axis=1)
            bits = (ranks < m[:, None]).astype(np.uint64) @ (np.uint64(1) << np.arange(n_vals, dtype=np.uint64))
            opt_mask[rows, s] = bits.astype(np.uint32)
    opt_mask[rng.random(n) < 0.15] = 0  # some products have no options, as in WebShop

    lo_hi = np.array([x.price for x in LEAVES])[leaf]
    base = np.exp(rng.uniform(np.log(lo_hi[:, 0]), np.log(lo_hi[:, 1])))
    endings = np.array([0.99, 0.49, 0.95, 0.0])[rng.integers(0, 4, n)]
    price_lo = (np.maximum(np.floor(base), 1.0) + endings).round(2)
    is_range = rng.random(n) < 0.2
    price_hi = np.where(is_range, (price_lo * rng.uniform(1.1, 1.8, n)).round(2), price_lo)
    rating = rng.integers(25, 51, n).astype(np.uint8)
    n_reviews = np.minimum(rng.geometric(0.02, n), 60000).astype(np.uint16)
    return dict(
        leaf=leaf,
        noun=noun,
        brand=brand,
        adj=adj,
        material=material,
        variant=variant,
        attrs=attrs,
        opt_mask=opt_mask,
        price_lo=price_lo.astype(np.float32),
        price_hi=price_hi.astype(np.float32),
        rating=rating,
        n_reviews=n_reviews,
    )


def generate_codes(num_products: int, seed: int) -> dict[str, np.ndarray]:
    parts = [
        _generate_chunk(seed, c, min(CHUNK, num_products - c * CHUNK)) for c in range(math.ceil(num_products / CHUNK))
    ]
    return {k: np.concatenate([p[k] for p in parts]) for k in COLUMNS}


def synthetic_hash(num_products: int, seed: int) -> str:
    return hashlib.sha1(f"synthetic-v{GENERATOR_VERSION}-{num_products}-{seed}".encode()).hexdigest()[:16]


# --- the catalog ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SplitShares:
    """Fraction of products whose goals go to eval and to test (the rest go to train)."""

    eval: float = 0.05
    test: float = 0.05


_INSTR_PREFIX = (
    "i need",
    "i'm looking for",
    "find me",
    "i want to buy",
    "can you help me find",
    "please get me",
    "i would like",
    "search for",
    "show me",
    "i am shopping for",
)
_PRICE_FORMS = (
    ", and price lower than {p:.2f} dollars",
    ", under {p:.0f} dollars",
    ", costing less than ${p:.2f}",
    " for under ${p:.0f}",
    ", and the price should be below {p:.2f} dollars",
)


class SyntheticCatalog(Catalog):
    def __init__(
        self,
        num_products: int = 10_000,
        seed: int = 0,
        shares: SplitShares = SplitShares(),
        codes: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.num_products = int(num_products)
        self.seed = int(seed)
        self.hash = synthetic_hash(self.num_products, self.seed)
        self.codes = codes if codes is not None else generate_codes(self.num_products, self.seed)
        self._leaf = self.codes["leaf"]
        split_key = mix_array(self.seed, 17, np.arange(self.num_products)) % np.uint64(10_000)
        t_cut, e_cut = int(shares.test * 10_000), int((shares.test + shares.eval) * 10_000)
        self._split_rows: dict[str, np.ndarray] = {
            "test": np.nonzero(split_key < t_cut)[0],
            "eval": np.nonzero((split_key >= t_cut) & (split_key < e_cut))[0],
            "train": np.nonzero(split_key >= e_cut)[0],
        }
        self._cached = lru_cache(maxsize=8192)(self._render)

    def product(self, index: int) -> Product:
        return self._cached(int(index))

    # persistence: codes are what is expensive to regenerate at 1M; save/load them as .npz
    @classmethod
    def load_or_build(cls, num_products: int = 10_000, seed: int = 0) -> SyntheticCatalog:
        path = cache_dir(synthetic_hash(num_products, seed)) / "codes.npz"
        if path.exists():
            with np.load(path) as z:
                codes = {k: z[k] for k in COLUMNS}
            return cls(num_products, seed, codes=codes)
        cat = cls(num_products, seed)
        cat.save(path)
        return cat

    def save(self, path: Path) -> None:
        # allow_pickle: numpy's default, named so mypy does not match **codes to it
        publish_file(path, lambda tmp: np.savez(tmp, allow_pickle=True, **self.codes))

    def __len__(self) -> int:
        return self.num_products

    def asin(self, index: int) -> str:
        v = (index * _ASIN_MUL + self.seed * 7919 + 12345) % _ASIN_MOD
        out = []
        for _ in range(8):
            v, r = divmod(v, 36)
            out.append(_B36[r])
        return "B0" + "".join(reversed(out))

    def index_of(self, asin: str) -> int | None:
        a = asin.strip().upper()
        if len(a) != 10 or not a.startswith("B0") or any(c not in _B36 for c in a[2:]):
            return None
        v = int(a[2:], 36)
        i = ((v - self.seed * 7919 - 12345) * _ASIN_MUL_INV) % _ASIN_MOD
        return i if i < self.num_products else None

    # rendering ---------------------------------------------------------------------------
    def _attrs(self, i: int) -> tuple[str, ...]:
        return tuple(ATTRS[a] for a in self.codes["attrs"][i] if a >= 0)

    def _options(self, i: int) -> dict[str, tuple[str, ...]]:
        lf = LEAVES[self._leaf[i]]
        out: dict[str, tuple[str, ...]] = {}
        for s, name in enumerate(lf.options[:OPT_SLOTS]):
            mask = int(self.codes["opt_mask"][i, s])
            if mask:
                vals = vocab.OPTION_VALUES[name]
                out[name] = tuple(v for b, v in enumerate(vals) if mask >> b & 1)
        return out

    def _render(self, i: int) -> Product:
        c = self.codes
        lf = LEAVES[c["leaf"][i]]
        noun = lf.nouns[c["noun"][i]]
        brand = BRANDS[c["brand"][i]]
        adj = vocab.ADJECTIVES[c["adj"][i]]
        mat = lf.materials[c["material"][i]] if c["material"][i] >= 0 else ""
        attrs = self._attrs(i)
        a1, a2 = attrs[0], attrs[1 % len(attrs)]
        h = mix(self.seed, i, 1)
        model = f"{_B36[10 + h % 26]}{_B36[10 + (h >> 5) % 26]}-{(h >> 10) % 900 + 100}"
        title = {
            0: f"{brand} {_cap(adj)} {_cap(mat)} {_cap(noun)} - {_cap(a1)}, {_cap(a2)}",
            1: f"{brand} {_cap(noun)}, {_cap(a1)}, {_cap(mat)}, {_cap(adj)} Design, {model}",
            2: f"{_cap(adj)} {_cap(noun)} by {brand} with {_cap(a1)} and {_cap(a2)}",
            3: f"{brand} {_cap(mat)} {_cap(noun)} ({model}) - {_cap(a1)}",
        }[int(c["variant"][i])]
        title = " ".join(title.replace(", ,", ",").split())
        fill = dict(
            noun=noun,
            brand=brand,
            attr=a1,
            attr2=a2,
            material=mat or "quality materials",
            adj=adj,
            leaf=lf.path[-1].lower(),
        )
        d = vocab.DESCRIPTION_TEMPLATES
        picks = [d[(h >> (20 + 3 * k)) % len(d)] for k in range(3)]
        description = " ".join(dict.fromkeys(t.format(**fill) for t in picks))
        bullets = [
            f"{a.upper()}: "
            + vocab.ATTR_SENTENCES[(h >> (30 + j)) % len(vocab.ATTR_SENTENCES)].format(noun=noun, attr=a)
            for j, a in enumerate(attrs)
        ]
        bullets += [t.format(**fill) for t in vocab.BULLET_TEMPLATES[1:]]
        lo, hi = float(c["price_lo"][i]), float(c["price_hi"][i])
        lo, hi = round(lo, 2), round(hi, 2)
        pricing = (lo,) if lo == hi else (lo, hi)
        price = lo if lo == hi else round(lo + (hi - lo) * ((mix(self.seed, i, 2) % 1000) / 1000), 2)
        options = self._options(i)
        reviews = []
        for r in range(min(int(c["n_reviews"][i]), (h >> 40) % 4)):
            t_title, t_body = vocab.REVIEW_TEMPLATES[(h >> (44 + 3 * r)) % len(vocab.REVIEW_TEMPLATES)]
            opt = next(iter(options), "quality")
            reviews.append(
                Review(
                    t_title,
                    t_body.format(noun=noun, brand=brand, attr_cap=a1.capitalize(), option=opt),
                    score=5 - (r + (h >> 50)) % 3 if not t_title.startswith("Disap") else 1,
                )
            )
        return Product(
            asin=self.asin(i),
            name=title,
            category=lf.category,
            query=lf.query,
            product_category=BREADCRUMBS[c["leaf"][i]],
            description=description,
            bullets=tuple(bullets),
            attributes=attrs,
            options=options,
            pricing=pricing,
            price=price,
            rating=int(c["rating"][i]) / 10,
            reviews=tuple(reviews),
        )

    # goals -------------------------------------------------------------------------------
    def goals(self, split: Split) -> Sequence[Goal]:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return SyntheticGoals(self, self._split_rows[split])

    def goal_for(self, i: int) -> Goal:
        """The WebShop-style goal for product `i`: some of its attributes, one value per option, a price bound."""
        p = self.product(i)
        lf = LEAVES[self._leaf[i]]
        noun = lf.nouns[self.codes["noun"][i]]
        rng = np.random.default_rng([self.seed, i, 11])
        n_attr = int(rng.integers(1, min(3, len(p.attributes)) + 1))
        attrs = tuple(p.attributes[j] for j in sorted(rng.choice(len(p.attributes), n_attr, replace=False)))
        goal_options = {name: vals[int(rng.integers(len(vals)))] for name, vals in p.options.items()}
        choices = price_upper_choices(p.price)
        if len(choices) >= 2:
            price_upper = float(sorted(rng.choice(choices, 2, replace=False))[1])
        else:
            price_upper = 1_000_000.0
        instruction = self._wording(rng, noun, attrs, goal_options, price_upper)
        return Goal(
            asin=p.asin,
            instruction=instruction,
            name=p.name,
            query=p.query,
            product_category=p.product_category,
            category=p.category,
            attributes=attrs,
            goal_options=goal_options,
            price_upper=price_upper,
            keywords=" ".join([noun, *attrs]),
        )

    @staticmethod
    def _wording(
        rng: np.random.Generator, noun: str, attrs: tuple[str, ...], opts: dict[str, str], price: float
    ) -> str:
        prefix = _INSTR_PREFIX[int(rng.integers(len(_INSTR_PREFIX)))]
        form = int(rng.integers(3))
        if form == 2 and " with " in noun:
            form = 1
        if form == 0:
            body = f"{' and '.join(attrs)} {noun}"
        elif form == 1:
            body = f"{noun} that is {', '.join(attrs)}"
        else:
            body = f"{noun} with {' and '.join(attrs)}"
        article = "" if prefix.startswith("search") or noun.endswith("s") else ("an " if body[0] in "aeiou" else "a ")
        text = f"{prefix} {article}{body}"
        if opts:
            if rng.random() < 0.5:
                text += (", and " if form == 2 else " with ") + ", and ".join(f"{k}: {v}" for k, v in opts.items())
            else:
                text += ", " + ", ".join(f"{v} {k}" if k != "color" else f"in {v}" for k, v in opts.items())
        if price < 1_000_000:
            text += _PRICE_FORMS[int(rng.integers(len(_PRICE_FORMS)))].format(p=price)
        return text


class SyntheticGoals(Sequence[Goal]):
    """Goals of one split, built on access (one per product in the split), cached."""

    def __init__(self, catalog: SyntheticCatalog, rows: np.ndarray) -> None:
        self._catalog = catalog
        self.rows = rows
        self._get = lru_cache(maxsize=4096)(catalog.goal_for)

    def __len__(self) -> int:
        return int(self.rows.size)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"goal index {i} out of range for {len(self)} goals")
        return self._get(int(self.rows[i]))
