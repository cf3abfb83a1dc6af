"""Counter-based random numbers for kernels.

Objectives that need randomness (random tie-breaking, sampled estimates) draw it from a hash
of ``(seed, the query's labels, the query's current scores)`` instead of a stateful
generator. The draws are therefore fresh at every boosting iteration (the scores change),
identical when the same training is run twice, independent of thread scheduling, safe when
one objective serves two trainings at once, and the same wherever the query is: a query
hashes its own content, never its index among the rows an objective sees, so one machine
and any number of Dask workers (or a fold, or the rows in another query order) draw alike.
Two queries with the same labels and scores draw alike too.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always")
def splitmix64(x):
    """One step of SplitMix64: a bijective 64-bit mix with good avalanche."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _splitmix64_array(x: np.ndarray) -> np.ndarray:
    """:func:`splitmix64` over a uint64 array (numpy, wrapping as the compiled one does)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def query_keys(seed: int, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per query, the start of its random stream: the seed and the query's ``values`` (its
    labels, or their ranks), each mixed with its place in the query and summed, hashed; as
    int64 words, so that they travel to an engine's threads as any array does. Computed with
    numpy, once per training set: no kernel to compile."""
    sizes = np.diff(offsets)
    n_queries = sizes.size
    if not n_queries:
        return np.zeros(0, dtype=np.int64)
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    place = (np.arange(bits.size) - np.repeat(offsets[:-1], sizes)).astype(np.uint64)
    with np.errstate(over="ignore"):
        rows = _splitmix64_array(bits ^ _splitmix64_array(place))
        summed = np.zeros(n_queries, dtype=np.uint64)
        np.add.at(summed, np.repeat(np.arange(n_queries), sizes), rows)
        base = _splitmix64_array(np.array([seed], dtype=np.uint64))
        keys = _splitmix64_array(summed ^ base ^ _splitmix64_array(sizes.astype(np.uint64)))
    return keys.view(np.int64)


@njit(cache=True)
def query_stream(key, scores, start, end):
    """Initial state of a query's random stream: its key (:func:`query_keys`) and scores, hashed."""
    h = splitmix64(np.uint64(key))
    bits = scores[start:end].view(np.uint64)
    for i in range(bits.shape[0]):
        h = splitmix64(h ^ bits[i])
    return h


@njit(cache=True, inline="always")
def next_uniform(state):
    """Advance ``state`` and return ``(new_state, u)`` with ``u`` uniform on [0, 1)."""
    state = state + _GOLDEN
    z = splitmix64(state)
    return state, (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
