"""Counter-based randomness: a uniform in [0, 1) that is a pure function of a key and integer counters.

A society sharded over several processes (`societies.sharding`) must draw the same random
numbers wherever an agent or an edge happens to live, or "the same seeded run" would depend on
the number of shards. A shared sequential generator cannot give that: its k-th draw depends on
every draw before it. Here each draw is a hash of `(key, counters...)` instead, e.g.
`(seed, source, target)` for an independent-cascade trial on an edge, or `(seed, round, agent)`
for a partner pick, so any process computes the same number for the same edge or agent.

The hash is SplitMix64's finaliser (Steele, Lea and Flood, 2014), chained over the counters and
vectorised in numpy (uint64 arithmetic wraps, as the algorithm expects). It passes BigCrush as a
generator and is ample for simulation; it is not cryptographic.
"""

from __future__ import annotations

import numpy as np

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_GOLDEN_U, _M1_U, _M2_U = np.uint64(GOLDEN), np.uint64(_M1), np.uint64(_M2)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)

# streams, so two uses of one run seed never share draws
IC_STREAM = 0x1C  # independent-cascade edge trials
PAIRING_STREAM = 0xDE  # opinion partners


def mix(x: int) -> int:
    """SplitMix64 of one Python int (for keys; exact 64-bit arithmetic, no numpy overflow warnings)."""
    z = (x + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * _M1) & MASK
    z = ((z ^ (z >> 27)) * _M2) & MASK
    return z ^ (z >> 31)


def mix_array(x: np.ndarray) -> np.ndarray:
    """SplitMix64 of every element of a uint64 array (wrapping arithmetic, vectorised)."""
    z = x + _GOLDEN_U
    z = (z ^ (z >> _S30)) * _M1_U
    z = (z ^ (z >> _S27)) * _M2_U
    return z ^ (z >> _S31)


def stream_key(seed: int, stream: int) -> int:
    """The key of one stream of a run: distinct (seed, stream) pairs give unrelated draws."""
    return mix(mix(seed & MASK) ^ stream)


def keyed_uniform(key: int, *counters: np.ndarray | int) -> np.ndarray:
    """One float64 in [0, 1) per element of the broadcast counters, a pure function of (key, counters).

    Counters must be non-negative integers (agent ids, rounds); the result has their broadcast shape."""
    arrays = [np.asarray(c) for c in counters]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    h = np.full(shape if shape else (1,), mix(key), dtype=np.uint64)
    for a in arrays:
        h = mix_array(h ^ a.astype(np.uint64))
    u = (h >> _S11).astype(np.float64) * (1.0 / (1 << 53))
    return u if shape else u.reshape(())


def edge_trials(key: int, src: np.ndarray, dst: np.ndarray, p: float) -> np.ndarray:
    """Whether each directed edge src -> dst transmits (independent cascade): its keyed uniform is below p.

    One fixed draw per edge, whichever process evaluates it (the unsharded rule or a shard)."""
    return keyed_uniform(key, src, dst) < p
