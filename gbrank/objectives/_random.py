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


@njit(cache=True)
def query_keys(seed, labels, offsets):
    """Per query, the start of its random stream: the seed and the query's labels, hashed
    (int64 words, so that they travel to an engine's threads as any array does)."""
    out = np.empty(offsets.shape[0] - 1, dtype=np.int64)
    base = splitmix64(np.uint64(seed))
    for q in range(out.shape[0]):
        h = splitmix64(base ^ np.uint64(offsets[q + 1] - offsets[q]))
        for i in range(offsets[q], offsets[q + 1]):
            h = splitmix64(h ^ np.float64(labels[i]).view(np.uint64))
        out[q] = np.int64(h)
    return out


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
