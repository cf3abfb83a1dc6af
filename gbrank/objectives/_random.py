"""Counter-based random numbers for kernels.

Objectives that need randomness (random tie-breaking, sampled estimates) draw it from a hash
of ``(seed, query index, the query's current scores)`` instead of a stateful generator. The
draws are therefore fresh at every boosting iteration (the scores change), identical when the
same training is run twice, independent of thread scheduling, and safe when one objective
object serves two trainings at once.
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
def query_stream(seed, query, scores, start, end):
    """Initial state of a query's random stream, hashed from the seed, query and scores."""
    h = splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(query)))
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
