"""The catalog interface the env, search index and reward use, whatever built it.

Two implementations: `synth.SyntheticCatalog` (products rendered on demand from integer codes,
so 1M products cost tens of MB) and `loader.RecordCatalog` (the original WebShop JSON files).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Literal

from .types import Goal, Product

Split = Literal["train", "eval", "test"]
SPLITS: tuple[Split, ...] = ("train", "eval", "test")

# WebShop's price bounds: a goal's bound is drawn from the first few of these above the price.
PRICE_RANGE: tuple[float, ...] = tuple(10.0 * i for i in range(1, 100))

_STOP = frozenset(
    "a an the i im i'm am is are be to for of and or with that this it me my need want looking find".split()
)


def price_upper_choices(price: float) -> list[float]:
    return [p for p in PRICE_RANGE if p > price][:4]


def keywords_from_instruction(instruction: str) -> str:
    """Search words from an instruction: drop the price clause and filler words."""
    text = re.split(r",?\s*and price lower than", instruction.lower())[0]
    words = re.findall(r"[a-z0-9][a-z0-9\-']*", text)
    return " ".join(w for w in words if w not in _STOP)


class Catalog(ABC):
    """Read-only products plus their goals, identified by a content hash."""

    hash: str

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def product(self, index: int) -> Product: ...

    @abstractmethod
    def asin(self, index: int) -> str: ...

    @abstractmethod
    def index_of(self, asin: str) -> int | None: ...

    @abstractmethod
    def goals(self, split: Split) -> Sequence[Goal]: ...

    def search_text(self, index: int) -> str:
        """What the search index sees: title, description, first bullet and option values."""
        p = self.product(index)
        opts = " ".join(v for vals in p.options.values() for v in vals)
        first = p.bullets[0] if p.bullets else ""
        return f"{p.name} {p.description} {first} {opts}"

    def iter_search_texts(self, batch: int = 50_000) -> Iterator[list[str]]:
        for start in range(0, len(self), batch):
            yield [self.search_text(i) for i in range(start, min(len(self), start + batch))]
