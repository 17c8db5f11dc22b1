"""Text spaces that admit real sentences.

`gymnasium.spaces.Text` defaults to an alphanumeric charset, so "click[Buy Now]" would not
be `in` the action space. `FreeText` accepts any string up to `max_length` characters and
samples from printable ASCII (so `env_checker` and random agents still work).
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

PRINTABLE = frozenset(string.ascii_letters + string.digits + string.punctuation + " ")


class FreeText(Text):
    """A `Text` space whose `contains` accepts any unicode string within the length bounds."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=PRINTABLE, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText({self.min_length}, {self.max_length})"
