"""Numerically safe log-space arithmetic shared by the kernels."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def logaddexp(a, b):
    """``log(exp(a) + exp(b))`` without overflow; ``-inf`` is the empty sum."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))
