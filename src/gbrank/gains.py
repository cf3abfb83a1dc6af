r"""Gains and position discounts shared by the metrics and the weighted losses.

A gain maps a relevance label to a value; a discount maps a rank position ``r = 1, 2, ...``
to a weight. NDCG, W-ListMLE and W-RankNet take the same ``gain=`` and ``discount=`` settings,
so a loss can be weighted exactly like the metric it is judged with.

Gains:

* ``"exp2"``: :math:`2^l - 1` (default; LightGBM's ``label_gain`` and XGBoost's
  ``ndcg_exp_gain``). Labels must be integers no larger than 31, as in both engines.
* ``"linear"``: :math:`l` (trec_eval, ranx ``ndcg``, scikit-learn). Any finite label >= 0.
* an array: ``gain[l]`` for an integer label ``l``; labels must index the array.

Discounts (position :math:`r` starts at 1):

* ``"log2"``: :math:`1 / \log_2(1 + r)` (default, every engine).
* ``"zipf"``: :math:`1 / r` (Zipfian; Wang et al. 2013).
* a float :math:`\beta > 0`: :math:`r^{-\beta}`, the polynomial family of Wang et al. 2013.
* an array: ``discount[r - 1]``; positions past its end get 0.
* a callable: ``f(r)`` on the int64 array of positions, returning non-negative values.
"""

from __future__ import annotations

from typing import Callable, Union

import numpy as np

from ._validation import check_labels

__all__ = ["EXP2_MAX_LABEL", "Discount", "Gain", "discount_values", "gain_values", "resolve_gain"]

EXP2_MAX_LABEL = 31

Gain = Union[str, np.ndarray, list]
Discount = Union[str, float, np.ndarray, list, Callable[[np.ndarray], np.ndarray]]


def gain_values(y_true, gain: Gain = "exp2", *, offsets=None, name: str = "y_true") -> np.ndarray:
    """Gain of each row's label, as float64.

    Raises a ``ValueError`` naming the row for labels that the gain cannot take: negative,
    non-integer (``"exp2"`` and arrays), above 31 (``"exp2"``) or past the end of a gain array.
    """
    if isinstance(gain, str):
        if gain == "exp2":
            labels = check_labels(
                y_true,
                offsets=offsets,
                integer=True,
                max_label=EXP2_MAX_LABEL,
                why=" with gain='exp2' (use gain='linear' or a gain array for other labels)",
                name=name,
            )
            return np.exp2(labels) - 1.0
        if gain == "linear":
            return check_labels(y_true, offsets=offsets, name=name)
        raise ValueError(f"gain must be 'exp2', 'linear' or an array indexed by label, got {gain!r}")
    table = np.asarray(gain, dtype=np.float64)
    if table.ndim != 1 or table.size == 0:
        raise ValueError("a gain array must be one-dimensional and non-empty")
    if not np.isfinite(table).all() or table.min() < 0:
        raise ValueError("a gain array must hold finite, non-negative values")
    labels = check_labels(
        y_true,
        offsets=offsets,
        integer=True,
        max_label=table.size - 1,
        why=f" with a gain array of length {table.size}",
        name=name,
    )
    return table[labels.astype(np.int64)]


def resolve_gain(gain, y) -> Gain:
    """The label policy of ``gain="auto"``: ``"exp2"`` when every label of ``y`` is an
    integer no larger than 31 (LightGBM's and XGBoost's default gain), ``"linear"``
    otherwise. Any other ``gain`` is returned as given.

    ``y`` is the whole data's labels, as the user gave them: the choice must not depend on
    the slice a model or a fold sees.
    """
    if isinstance(gain, str) and gain == "auto":
        y = np.asarray(y, dtype=np.float64)
        integer = bool(np.all(y == np.floor(y)))
        return "exp2" if integer and (y.size == 0 or y.max() <= EXP2_MAX_LABEL) else "linear"
    return gain


def discount_values(n: int, discount: Discount = "log2") -> np.ndarray:
    """Discounts of positions ``1 .. n``, as a float64 array of length ``n``."""
    n = int(n)
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    r = np.arange(1, n + 1, dtype=np.float64)
    if isinstance(discount, str):
        if discount == "log2":
            return 1.0 / np.log2(1.0 + r)
        if discount == "zipf":
            return 1.0 / r
        raise ValueError(
            f"discount must be 'log2', 'zipf', a float beta (r**-beta), an array or a callable, got {discount!r}"
        )
    if callable(discount):
        out = np.asarray(discount(np.arange(1, n + 1, dtype=np.int64)), dtype=np.float64)
        if out.shape != (n,):
            raise ValueError(f"a discount callable must return {n} values for {n} positions, got shape {out.shape}")
    elif np.ndim(discount) == 0:
        beta = float(discount)
        if not beta > 0 or not np.isfinite(beta):
            raise ValueError(f"a polynomial discount needs beta > 0, got {discount!r}")
        return r**-beta
    else:
        table = np.asarray(discount, dtype=np.float64)
        if table.ndim != 1:
            raise ValueError("a discount array must be one-dimensional")
        out = np.zeros(n, dtype=np.float64)
        m = min(n, table.size)
        out[:m] = table[:m]
    if not np.isfinite(out).all() or (out.size and out.min() < 0):
        raise ValueError("discounts must be finite and non-negative")
    return out
