"""The feed's data structures: sets of pairs (follows, likes, shared stories), the post table, CSR walks.

All numpy, so a round's checks and additions over 100k agents cost a few array operations.
"""

from __future__ import annotations

import numpy as np

SHIFT = 32  # PairSet keys: a << 32 | b
MASK = (1 << SHIFT) - 1


class PairSet:
    """A growing set of (a, b) pairs of non-negative ints, as sorted int64 keys `a << 32 | b`.

    Membership is one vectorised binary search, so a round's checks (has agent i liked post x?
    does i follow j?) cost a few array operations, and adding a round's pairs costs one merge."""

    def __init__(self, keys: np.ndarray | None = None) -> None:
        k = np.empty(0, np.int64) if keys is None else np.asarray(keys, dtype=np.int64).ravel()
        self.keys = k if k.size < 2 or bool(np.all(k[1:] > k[:-1])) else np.unique(k)  # CSR keys come sorted

    @staticmethod
    def key(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """The keys of pairs (a, b), broadcast; a pair with a negative id gets a negative key, never in a set."""
        return (np.asarray(a, dtype=np.int64) << SHIFT) | np.asarray(b, dtype=np.int64)

    def _has(self, k: np.ndarray) -> np.ndarray:
        if self.keys.size == 0:
            return np.zeros(k.shape, dtype=bool)
        pos = np.minimum(np.searchsorted(self.keys, k), self.keys.size - 1)
        return self.keys[pos] == k

    def contains(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Elementwise (a, b) in the set, broadcast; negative ids (padding) are never in it."""
        return self._has(self.key(a, b))

    def add(self, a: np.ndarray, b: np.ndarray) -> int:
        """Add the pairs; returns how many were new."""
        k = np.unique(self.key(a, b).ravel())
        k = k[~self._has(k)]
        if k.size:
            self.keys = np.insert(self.keys, np.searchsorted(self.keys, k), k)
        return int(k.size)

    def firsts(self) -> np.ndarray:
        return self.keys >> SHIFT

    def seconds(self) -> np.ndarray:
        return self.keys & MASK

    def __len__(self) -> int:
        return int(self.keys.size)


class PostTable:
    """Posts as columns (row = post id), grown by doubling: a round's new posts cost O(new), not O(all)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.size = 0
        self.author = np.zeros(capacity, np.int64)
        self.created = np.zeros(capacity, np.int32)  # the round the post first appears in feeds
        self.topic = np.zeros(capacity, np.int32)
        self.root = np.zeros(capacity, np.int64)  # the original post of its cascade (itself for an original)
        self.parent = np.zeros(capacity, np.int64)  # the post reposted; -1 for an original
        self.generation = np.zeros(capacity, np.int32)  # 0 for an original, parent's + 1 for a repost
        self.likes = np.zeros(capacity, np.int32)
        self.reposts = np.zeros(capacity, np.int32)  # direct reposts of this post
        self.text = np.zeros(capacity, np.int64)  # index into the scenario's texts; -1 = a rule post on its topic

    COLUMNS = ("author", "created", "topic", "root", "parent", "generation", "likes", "reposts", "text")

    def add(
        self,
        author: np.ndarray,
        created: int,
        topic: np.ndarray,
        parent: np.ndarray,
        text: np.ndarray,
    ) -> np.ndarray:
        """Append posts (parent -1 = an original); returns their ids."""
        k = int(author.size)
        need = self.size + k
        cap = self.author.size
        if need > cap:
            new_cap = max(need, 2 * cap)
            for name in self.COLUMNS:
                old = getattr(self, name)
                grown = np.zeros(new_cap, old.dtype)
                grown[: self.size] = old[: self.size]
                setattr(self, name, grown)
        ids = np.arange(self.size, need, dtype=np.int64)
        orig = parent < 0
        par = np.maximum(parent, 0)
        self.author[ids] = author
        self.created[ids] = created
        self.topic[ids] = topic
        self.parent[ids] = parent
        self.root[ids] = np.where(orig, ids, self.root[par])
        self.generation[ids] = np.where(orig, 0, self.generation[par] + 1)
        self.likes[ids] = 0
        self.reposts[ids] = 0
        self.text[ids] = text
        self.size = need
        return ids


def csr_gather(indptr: np.ndarray, indices: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (position in sel, neighbour) pairs of CSR rows `sel`, vectorised."""
    starts = indptr[sel]
    lens = indptr[sel + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pos = np.repeat(np.arange(sel.size, dtype=np.int64), lens)
    offsets = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    return pos, np.asarray(indices[starts[pos] + offsets], dtype=np.int64)


def pairs_csr(pairs: PairSet, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, second ids) of a pair set over first ids 0..n-1 (its keys are sorted, so rows come in order)."""
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(pairs.firsts(), minlength=n), out=indptr[1:])
    return indptr, pairs.seconds()
