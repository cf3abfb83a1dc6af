"""The NDCG_Boost relaxation of Valizadegan, Jin, Zhang and Mao (NIPS 2009) as an objective.

The relaxation
--------------
For one query with labels ``r_i``, gains ``g_i = 2**r_i - 1`` and scores ``s_i``, the paper
writes ``F_i = 2 s_i`` (section 3.3, after eq. 8) and minimises (eq. 11, per query)::

    M_q(F) = 1/Z_q * sum_i g_i * A_i,      A_i = sum_{j != i} 1 / (1 + exp(F_i - F_j))

where ``A_i + 1`` approximates the expected rank of document ``i`` (eq. 5 and Lemma 2) and
``Z_q`` is the ideal DCG of the query, ``Z_q = sum_r g_(r) / log2(1 + r)`` over its gains
sorted in decreasing order (all positions, no cut-off). The paper's ``M`` is the mean of
``M_q`` over the ``n`` training queries; the objective's loss is their sum.

Pair weights and document weights
---------------------------------
With ``d_ij = F_i - F_j`` and ``sigma(x) = 1 / (1 + exp(-x))``, eq. (14) defines::

    gamma_ij = exp(d_ij) / (1 + exp(d_ij))**2 = sigma(d_ij) * sigma(-d_ij),
    theta_ij = gamma_ij * I(j != i)

(symmetric, at most 1/4), and eq. (16) the document weight::

    w_i = sum_j (2**r_i - 2**r_j) / Z_q * theta_ij = sum_j (g_i - g_j) / Z_q * theta_ij.

Since ``d/dx sigma(x) = sigma(x) sigma(-x)``, differentiating eq. (11) gives exactly::

    dM_q/dF_i = -w_i,        dM_q/ds_i = -2 w_i          (F = 2 s),

so the weights that drive the paper's boosting (Algorithm 1) are minus the gradient of ``M``
in ``F``, and the objective's gradient is ``-2 w_i``. The weights of a query sum to zero
(``w`` is antisymmetric in the pair), as a shift-invariant loss requires.

Hessian (a positive surrogate)
------------------------------
The exact diagonal second derivative,
``d2M_q/dF_i^2 = 1/Z_q * sum_j (g_j - g_i) gamma_ij (1 - 2 sigma(d_ij))``, has both signs, and
it vanishes where all scores are equal (where every booster starts). gbrank returns its
absolute-value bound (``|1 - 2 sigma| <= 1``), in ``s`` units::

    h_i = 4/Z_q * sum_j |g_i - g_j| * gamma_ij,

which satisfies ``|d2M_q/ds_i^2| <= h_i``, ``2 |grad_i| <= h_i`` and
``h_i <= 1/Z_q * sum_j |g_i - g_j|`` (as ``gamma <= 1/4``); it is the same weighting of
pair curvatures that LambdaRank uses.

Conventions
-----------
* Pairs with equal labels add the constant ``g_i`` to ``M_q`` whatever the scores (their two
  terms are ``g sigma(x) + g sigma(-x)``): they carry no gradient and are not visited.
* A query with no relevant document has ``Z_q = 0`` and all gains zero: ``M_q = 0`` and
  its gradient is zero (``1/Z_q`` is taken as 0). A query of one document has no pair and
  also contributes nothing.
* ``sigma`` and ``gamma`` are evaluated from ``exp(-|d|)`` only, so that scores of any
  magnitude (e.g. +-1e4) neither overflow nor produce NaN; ``gamma`` underflows to 0 for
  ``|d| > ~745``, where the pair is settled.
* The work per query is one visit of each pair with different labels (at most
  ``n (n - 1) / 2``), without any n x n matrix: a query of 10,000 documents needs O(n)
  memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from .._docstrings import fill_doc, objective_example
from .._parallel import over_queries
from .._validation import InvalidParameterError, check_labels, check_scores
from ..gains import Gain, discount_values, gain_values
from ..groups import check_group
from ._base import RankingObjective
from ._label_order import ideal_dcg, label_order

__all__ = ["NDCGBoostObjective", "NDCGBoostState", "document_weights", "ndcg_boost", "prepare_queries"]


@dataclass(frozen=True)
class NDCGBoostState:
    """Per-dataset arrays the NDCG_Boost kernels read; computed once by :func:`prepare_queries`.

    Attributes
    ----------
    offsets : int64 (n_queries + 1,)
        Query boundaries.
    order : int64 (n_rows,)
        Within each query, its rows sorted by gain, highest first (stable).
    sorted_gain : float64 (n_rows,)
        ``gain[order]``.
    block_end : int64 (n_rows,)
        For position ``p`` of ``order``, the first position of the query holding a strictly
        smaller gain (the query's end if none): the pairs with different labels are
        ``(p, r)`` for ``block_end[p] <= r < end``.
    inv_z : float64 (n_queries,)
        ``1 / Z_q`` (0 for a query without relevant document).
    tie_mass : float64 (n_queries,)
        ``sum over equal-gain blocks of g * c (c - 1) / 2``: the score-independent part of
        ``Z_q M_q`` contributed by pairs with equal labels.
    """

    offsets: np.ndarray
    order: np.ndarray
    sorted_gain: np.ndarray
    block_end: np.ndarray
    inv_z: np.ndarray
    tie_mass: np.ndarray


def prepare_queries(gains: np.ndarray, offsets: np.ndarray) -> NDCGBoostState:
    """Sort each query by gain and compute ``1/Z_q`` and the equal-label constant of ``M_q``."""
    gains = np.ascontiguousarray(gains, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n_queries = offsets.shape[0] - 1
    # the label order of the gains: sorted decreasingly (stable) with their tied blocks
    blocks = label_order(gains, offsets)
    sorted_gain = blocks.sorted_labels
    z = ideal_dcg(blocks, discount_values(int(blocks.position.max(initial=0)), "log2"), n_queries)
    with np.errstate(divide="ignore"):
        inv_z = np.where(z > 0.0, 1.0 / z, 0.0)
    first = np.flatnonzero(blocks.block_start == np.arange(gains.shape[0]))
    count = blocks.block_end[first] - first
    tie_mass = np.bincount(
        blocks.qid[first], weights=sorted_gain[first] * count * (count - 1) * 0.5, minlength=n_queries
    )
    return NDCGBoostState(offsets, blocks.order, sorted_gain, blocks.block_end, inv_z, tie_mass)


@njit(cache=True, nogil=True)
def _relaxation_block(q0, q1, F, scale, offsets, order, sorted_gain, block_end, inv_z, tie_mass, w, curv, m):
    for q in range(q0, q1):
        a, b = offsets[q], offsets[q + 1]
        n = b - a
        iz = inv_z[q]
        if iz == 0.0:
            for p in range(a, b):
                w[order[p]] = 0.0
                curv[order[p]] = 0.0
            m[q] = 0.0
            continue
        # the query's scores and sums in gain order, so that the pair loop reads contiguously
        fs = np.empty(n)
        ws = np.zeros(n)
        cs = np.zeros(n)
        for p in range(n):
            fs[p] = F[order[a + p]]
        acc = tie_mass[q]
        for p in range(n):
            gi = sorted_gain[a + p]
            fi = fs[p]
            wi = 0.0
            for r in range(block_end[a + p] - a, n):
                dg = gi - sorted_gain[a + r]
                # scale after the difference: 2 * s would overflow for |s| > 9e307
                d = scale * (fi - fs[r])
                e = np.exp(-abs(d))
                inv = 1.0 / (1.0 + e)
                # sigma(F_j - F_i) = 1 / (1 + exp(d)), from exp(-|d|) only
                lower = e * inv if d >= 0.0 else inv
                acc += sorted_gain[a + r] + dg * lower
                t = dg * e * inv * inv
                wi += t
                ws[r] -= t
                cs[r] += t
            ws[p] += wi
            cs[p] += wi
        for p in range(n):
            i = order[a + p]
            w[i] = ws[p] * iz
            curv[i] = cs[p] * iz
        m[q] = acc * iz


def relaxation_pass(F, scale, offsets, order, sorted_gain, block_end, inv_z, tie_mass, w, curv, m):
    """Per query: ``M_q`` (eq. 11), the weights ``w_i`` (eq. 16) and the curvature bound.

    Parameters
    ----------
    F : float64 (n_rows,)
        The paper's ``F_i`` (twice the objective's score).
    offsets, order, sorted_gain, block_end, inv_z, tie_mass
        From :func:`prepare_queries`.
    w, curv : float64 (n_rows,), written
        ``w_i = sum_j (g_i - g_j)/Z_q gamma_ij`` and ``c_i = sum_j |g_i - g_j|/Z_q gamma_ij``.
    m : float64 (n_queries,), written
        ``M_q(F)``.

    Notes
    -----
    Each pair with different labels is visited once, higher gain first (``g_i > g_j``), and
    adds ``g_j + (g_i - g_j) sigma(F_j - F_i)`` to ``Z_q M_q`` (its two terms of eq. 11, as
    ``sigma(x) + sigma(-x) = 1``).
    """
    over_queries(_relaxation_block, offsets, F, scale, offsets, order, sorted_gain, block_end, inv_z, tie_mass, w,
                 curv, m)


@njit(cache=True, nogil=True)
def _step_sums_block(q0, q1, F, f, offsets, order, sorted_gain, inv_z, out):
    for q in range(q0, q1):
        a, b = offsets[q], offsets[q + 1]
        n = b - a
        iz = inv_z[q]
        lower = 0.0
        upper = 0.0
        if iz != 0.0:
            fs = np.empty(n)
            hs = np.empty(n)
            for p in range(n):
                fs[p] = F[order[a + p]]
                hs[p] = f[order[a + p]]
            for p in range(n):
                gi = sorted_gain[a + p]
                if gi == 0.0:
                    break
                fi = fs[p]
                hi = hs[p]
                for r in range(p + 1, n):
                    if hs[r] == hi:
                        continue
                    e = np.exp(-abs(fi - fs[r]))
                    inv = 1.0 / (1.0 + e)
                    gamma = e * inv * inv
                    if hi > hs[r]:
                        lower += gi * gamma
                        upper += sorted_gain[a + r] * gamma
                    else:
                        upper += gi * gamma
                        lower += sorted_gain[a + r] * gamma
        out[q, 0] = lower * iz
        out[q, 1] = upper * iz


def step_sums(F, f, offsets, order, sorted_gain, inv_z, out):
    """The two sums of eq. (15) per query, for a binary weak ranker ``f``.

    With ``c_ij = g_i / Z_q * theta_ij``, writes ``out[q, 0] = sum_{i,j} c_ij I(f_j < f_i)``
    and ``out[q, 1] = sum_{i,j} c_ij I(f_j > f_i)``. Pairs with equal labels count here
    (both orders, equal amounts); pairs of two irrelevant documents have ``c = 0``.
    """
    over_queries(_step_sums_block, offsets, F, f, offsets, order, sorted_gain, inv_z, out)


def run_pass(state: NDCGBoostState, F: np.ndarray, scale: float = 1.0):
    """``(w, curv, M_q)`` at ``F`` (fresh arrays); see :func:`relaxation_pass`."""
    n = F.shape[0]
    w = np.empty(n)
    curv = np.empty(n)
    m = np.empty(state.offsets.shape[0] - 1)
    relaxation_pass(
        F, scale, state.offsets, state.order, state.sorted_gain, state.block_end, state.inv_z, state.tie_mass, w, curv, m
    )
    return w, curv, m


def document_weights(y_true, F, group, *, gain: Gain = "exp2") -> tuple[np.ndarray, np.ndarray]:
    """The paper's document weights ``w_i`` (eq. 16) and per-query relaxation ``M_q`` (eq. 11).

    Parameters
    ----------
    y_true : array-like of shape (n_rows,)
        Relevance labels (integers <= 31 with ``gain="exp2"``).
    F : array-like of shape (n_rows,)
        The paper's scores ``F_i`` (``F = 2 s`` for the objective's scores ``s``).
    group : array-like of shape (n_queries,)
        Group sizes.
    gain : {"exp2", "linear"} or array, default="exp2"
        The gain ``g_i``; the paper's is ``2**r_i - 1``.

    Returns
    -------
    w : ndarray of shape (n_rows,)
        ``w_i = sum_j (g_i - g_j) / Z_q * theta_ij = -dM_q/dF_i``.
    m : ndarray of shape (n_queries,)
        ``M_q(F)``.
    """
    labels = np.asarray(y_true)
    if labels.ndim != 1:
        raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
    offsets = check_group(group, labels.shape[0])
    gains = gain_values(labels, gain, offsets=offsets)
    scores = check_scores(F, labels.shape[0], offsets, name="F")
    w, _, m = run_pass(prepare_queries(gains, offsets), scores)
    return w, m


class NDCGBoostObjective(RankingObjective):
    """The NDCG_Boost relaxation ``M`` (Valizadegan et al. 2009, eq. 11) as an objective.

    Built by :func:`ndcg_boost`; see the module docstring for the formulas.
    """

    factory = "ndcg_boost"
    shift_invariant = True

    def __init__(self, *, gain: Gain = "exp2", hess_floor: float = 1e-6, hess_scale: float = 1.0) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        if isinstance(gain, str):
            if gain not in ("exp2", "linear"):
                raise InvalidParameterError(
                    f"gain must be 'exp2', 'linear' or an array indexed by label, got {gain!r}"
                )
            self.gain: Any = gain
        else:
            self.gain = np.asarray(gain, dtype=np.float64)
            gain_values(np.zeros(1), self.gain)

    def _label_check(self, y_true, offsets):
        labels = check_labels(y_true, offsets=offsets)
        gain_values(labels, self.gain, offsets=offsets)
        return labels

    def _prepare(self, labels, offsets, statistics):
        return prepare_queries(gain_values(labels, self.gain, offsets=offsets), offsets)

    def _grad_hess(self, state, scores, grad, hess):
        w, curv, _ = run_pass(state, scores, 2.0)
        np.multiply(w, -2.0, out=grad)
        np.multiply(curv, 4.0, out=hess)

    def _loss(self, state, scores):
        return run_pass(state, scores, 2.0)[2]

    def _params(self):
        gain = self.gain if isinstance(self.gain, str) else self.gain.tolist()
        return {"gain": gain, **super()._params()}


@fill_doc(example=objective_example("gbrank.ndcg_boost()", loss=1.7211, gradient=[-0.8186, 0.3498, 0.0034, 0.4655]))
def ndcg_boost(*, gain: Gain = "exp2", hess_floor: float = 1e-6, hess_scale: float = 1.0) -> NDCGBoostObjective:
    """NDCG_Boost's relaxation of NDCG (Valizadegan et al. 2009, eq. 11) as an objective.

    Minimises, summed over queries, with ``F = 2 s`` for the scores ``s``::

        M_q = 1/Z_q * sum_i (2**r_i - 1) * sum_{j != i} 1 / (1 + exp(F_i - F_j))

    where ``Z_q`` is the query's ideal DCG (``log2(1 + r)`` discount, all positions). The
    gradient is ``grad_i = -2 w_i`` with the paper's document weight (eq. 16)
    ``w_i = sum_{j != i} (2**r_i - 2**r_j) / Z_q * gamma_ij``,
    ``gamma_ij = exp(F_i - F_j) / (1 + exp(F_i - F_j))**2`` (eq. 14).

    The hessian is a positive surrogate, ``h_i = 4/Z_q * sum_j |g_i - g_j| gamma_ij``, which
    bounds the exact diagonal second derivative in absolute value (the exact one has both
    signs and is 0 at equal scores). Every hessian is then floored at ``hess_floor``.

    Parameters
    ----------
    gain : {"exp2", "linear"} or array, default="exp2"
        Gain ``g_i`` in place of ``2**r_i - 1`` (the paper's, which needs integer labels
        <= 31). The same gain enters ``Z_q``.
    hess_floor, hess_scale : float
        See :class:`gbrank.objectives.RankingObjective`. The hessians are small (at most
        ``1/Z_q * sum_j |g_i - g_j|`` and typically far less once pairs are ordered), so with
        XGBoost lower ``min_child_weight`` (e.g. to 0) or raise ``hess_scale``.

    Returns
    -------
    NDCGBoostObjective
        Usable as ``lgb.train(params={"objective": obj})``, ``LGBMRanker(objective=obj)`` and
        ``xgb.train(params, dtrain, obj=obj)``; ``obj.loss(y, s, group)`` is ``sum_q M_q``.

    Notes
    -----
    Queries without a relevant document (``Z_q = 0``) and single-document queries get zero
    gradient. Sample weights multiply each row's gradient and hessian.

    %(example)s
    >>> import lightgbm as lgb
    >>> booster = lgb.train({"objective": gbrank.ndcg_boost(), "metric": "None"}, dtrain)  # doctest: +SKIP
    """
    return NDCGBoostObjective(gain=gain, hess_floor=hess_floor, hess_scale=hess_scale)
