r"""Calibrated ranking: Regression Compatible Ranking (Bai et al. 2023) and its baseline.

Both losses read the score :math:`s_i` as the logit of a relevance probability,
:math:`\sigma(s_i) = 1 / (1 + e^{-s_i})`, and add a pointwise and a listwise term per query,
weighted by ``alpha``:

.. math::

    L(s) = \alpha \, L_{\mathrm{point}}(s) + (1 - \alpha) \, L_{\mathrm{list}}(s).

The targets
-----------
The pointwise term is the sigmoid cross-entropy against a target :math:`y_i \in [0, 1]`:

.. math::

    L_{\mathrm{point}}(s) = \sum_i -y_i \log \sigma(s_i) - (1 - y_i) \log (1 - \sigma(s_i)).

Binary labels (clicks) are their own targets. Graded labels :math:`l_i` enter as
:math:`y_i = l_i / l_{\max}`, the grade read as a probability of relevance (the paper treats
binary relevance and names graded labels in :math:`[0, 1]` as the extension): ``max_label``
sets :math:`l_{\max}`; by default it is the largest label of the whole training data (the
same in every ``lgb.cv`` fold and on every Dask worker), or 1 where no label exceeds 1, so
0/1 labels and click rates in :math:`[0, 1]` are used as they are. An ``xgb.cv`` fold is a
training set of its own: with graded labels there, pass ``max_label``.

The listwise term
-----------------
Both listwise terms are a softmax cross-entropy :math:`-\sum_i y_i \log p_i` over logits
:math:`t_i`, :math:`p = \mathrm{softmax}(t)`, with :math:`Y = \sum_i y_i`:

.. math::

    L_{\mathrm{list}}(s) = -\sum_i y_i t_i + Y \log \sum_j e^{t_j}.

* The baseline (:func:`weighted_logistic_softmax`, the multi-objective sum the paper compares
  against) takes :math:`t_i = s_i`, the raw scores: its listwise term cannot see a shift of
  the query's scores, so the two terms pull the scores' level apart.
* RCR (:func:`rcr`) takes :math:`t_i = \log \sigma(s_i)`, so that
  :math:`p_i = \sigma(s_i) / \sum_j \sigma(s_j)`: the softmax of the very probabilities the
  pointwise term fits. Both terms are minimised by :math:`\sigma(s_i) = E[y_i]`
  (the listwise one by any :math:`\sigma(s) \propto E[y]`), which is the paper's sense of
  "regression compatible".

The derivatives
---------------
With :math:`t'_i = dt_i / ds_i` and :math:`t''_i = d^2 t_i / ds_i^2`,

.. math::

    \frac{\partial L_{\mathrm{list}}}{\partial s_i} = t'_i \,(Y p_i - y_i), \qquad
    \frac{\partial^2 L_{\mathrm{list}}}{\partial s_i^2}
      = t''_i \,(Y p_i - y_i) + t_i'^2 \, Y p_i (1 - p_i),

and the pointwise term gives :math:`\sigma(s_i) - y_i` and :math:`\sigma(s_i)(1 - \sigma(s_i))`.

* Baseline: :math:`t' = 1`, :math:`t'' = 0`; the loss is convex and the hessian returned is
  the exact diagonal, :math:`\alpha \sigma_i (1 - \sigma_i) + (1 - \alpha) Y p_i (1 - p_i)`.
* RCR: :math:`t' = 1 - \sigma`, :math:`t'' = -\sigma (1 - \sigma)`. The term
  :math:`Y \log \sum_j \sigma(s_j)` is not convex (for one document it is
  :math:`\log \sigma(s)`, concave), so the exact diagonal can be negative. The hessian
  returned replaces the signed term :math:`t''_i (Y p_i - y_i)` by its bound
  :math:`|t''_i| (Y p_i + y_i)`:

  .. math::

      h_i = \alpha \sigma_i (1 - \sigma_i) + (1 - \alpha) \big( \sigma_i (1 - \sigma_i)(Y p_i + y_i)
            + (1 - \sigma_i)^2 \, Y p_i (1 - p_i) \big) \ \ge 0,

  which bounds the exact diagonal's magnitude, :math:`|\partial^2 L / \partial s_i^2| \le h_i`.

Every quantity is computed from :math:`\log \sigma(s) = -\mathrm{softplus}(-s)` and
:math:`1 - \sigma(s) = \sigma(-s)`, so nothing overflows for scores of any finite size. A
query without a positive target (:math:`Y = 0`) has no listwise term; the pointwise term
still pulls its scores down, so these losses give gradients on queries whose labels are
all equal, and they are not invariant to a shift of a query's scores: training starts from
a score of 0 (:func:`gbrank.engines.start_score`), a probability of one half.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .._docstrings import fill_doc, objective_example
from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from .._validation import check_float, check_labels
from ..engines.statistics import label_max
from ._base import RankingObjective

__all__ = [
    "RCR", "CalibratedObjective", "CalibratedState", "WeightedLogisticSoftmax", "rcr", "weighted_logistic_softmax",
]


@njit(cache=True)
def _softplus(x):
    """log(1 + e**x) without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True)
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True)
def _query(s, y, start, end, alpha, compatible, grad, hess, want_loss):
    """One query: fill grad and hess, return the loss (with ``want_loss``)."""
    loss = 0.0
    total = 0.0
    for i in range(start, end):
        sig = _sigmoid(s[i])
        grad[i] = alpha * (sig - y[i])
        hess[i] = alpha * sig * (1.0 - sig)
        total += y[i]
        if want_loss:
            loss += alpha * (y[i] * _softplus(-s[i]) + (1.0 - y[i]) * _softplus(s[i]))
    if total == 0.0 or alpha == 1.0:
        return loss
    beta = 1.0 - alpha
    # the logits t and their log-sum-exp
    top = -np.inf
    for i in range(start, end):
        t = -_softplus(-s[i]) if compatible else s[i]
        top = max(top, t)
    z = 0.0
    for i in range(start, end):
        t = -_softplus(-s[i]) if compatible else s[i]
        z += math.exp(t - top)
    lse = top + math.log(z)
    for i in range(start, end):
        t = -_softplus(-s[i]) if compatible else s[i]
        p = math.exp(t - top) / z
        if compatible:
            sig = _sigmoid(s[i])
            dt = _sigmoid(-s[i])
            grad[i] += beta * dt * (total * p - y[i])
            hess[i] += beta * (sig * dt * (total * p + y[i]) + dt * dt * total * p * (1.0 - p))
        else:
            grad[i] += beta * (total * p - y[i])
            hess[i] += beta * total * p * (1.0 - p)
        if want_loss and y[i] > 0.0:
            loss += beta * y[i] * (lse - t)
    return loss


@njit(cache=True, nogil=True)
def calibrated_kernel(q0, q1, scores, targets, offsets, alpha, compatible, grad, hess, want_loss, loss):
    """Fill grad and hess (raw) and the per-query ``loss`` of queries ``q0 <= q < q1``."""
    for q in range(q0, q1):
        loss[q] = _query(scores, targets, offsets[q], offsets[q + 1], alpha, compatible, grad, hess, want_loss)


class CalibratedState(NamedTuple):
    """Per-dataset arrays: the targets :math:`y \\in [0, 1]` and the group offsets."""

    targets: np.ndarray
    offsets: np.ndarray


class CalibratedObjective(RankingObjective):
    """A pointwise sigmoid cross-entropy plus a listwise softmax cross-entropy."""

    shift_invariant = False
    ignores_orderless_queries = False
    _setting_names = ("alpha", "max_label")
    #: Whether the listwise logits are log sigmoid(s) (RCR) rather than s.
    _compatible = False

    def __init__(self, *, alpha, max_label, hess_floor, hess_scale) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        alpha = check_float("alpha", alpha, min=0.0)
        if alpha > 1.0:
            raise ValueError(f"alpha must lie in [0, 1] (the weight of the pointwise term), got {alpha!r}")
        self.alpha = alpha
        self.max_label = check_float("max_label", max_label, min=0.0, strict=True, optional=True)

    def _label_check(self, y_true, offsets):
        return check_labels(
            y_true, offsets=offsets, max_label=self.max_label,
            why=" (targets are label / max_label, probabilities); raise max_label, or leave it None for "
                "the largest training label",
        )

    def _prepare(self, labels, offsets, statistics):
        # labels within [0, 1] are already probabilities (click rates): scaling them up to the
        # largest one would inflate every prediction, and the calibration metrics read them as is
        top = max(label_max(labels, statistics), 1.0) if self.max_label is None else self.max_label
        targets = labels / top
        return CalibratedState(np.ascontiguousarray(targets), offsets)

    def _run(self, state: CalibratedState, scores, grad, hess, want_loss):
        loss = np.empty(state.offsets.size - 1)
        over_queries(calibrated_kernel, state.offsets, scores, state.targets, state.offsets, self.alpha,
                     self._compatible, grad, hess, want_loss, loss, min_rows=MIN_ROWS_PER_THREAD_LIGHT)
        return loss


class RCR(CalibratedObjective):
    """Regression Compatible Ranking; build it with :func:`rcr`."""

    factory = "rcr"
    _compatible = True


class WeightedLogisticSoftmax(CalibratedObjective):
    """Pointwise logistic plus softmax on raw scores; build it with :func:`weighted_logistic_softmax`."""

    factory = "weighted_logistic_softmax"


_PARAMETERS = """
    alpha : float, default=0.5
        Weight of the pointwise term, in [0, 1]; the listwise term gets ``1 - alpha``.
        ``alpha=1`` is a pointwise logistic regression, ``alpha=0`` the listwise term alone.
        Lower values rank better and calibrate worse: on the LETOR folds, 0.05 against 0.5
        closed RCR's NDCG@10 gap to LambdaRank on OHSUMED, and its log loss went from
        within 0.6% of a logistic model's to 1.5-3.0% above it.
    max_label : float or None, default=None
        The label read as probability 1: targets are ``label / max_label``. None takes the
        largest label of the whole training data, or 1 where every label is at most 1 (0/1
        labels and click rates in [0, 1] stay as they are). A label above ``max_label`` is an
        error. With graded labels under ``xgb.cv``, pass it: each fold is a training set of
        its own, and a fold without the top grade would scale its targets by a smaller one.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian."""


@fill_doc(parameters=_PARAMETERS,
          example=objective_example("gbrank.rcr()", loss=2.7538, gradient=[-0.3003, 0.4302, -0.1396, 0.3563]))
def rcr(*, alpha: float = 0.5, max_label: float | None = None, hess_floor: float = 1e-6,
        hess_scale: float = 1.0) -> RCR:
    r"""Regression Compatible Ranking (Bai et al. 2023): calibrated scores that also rank.

    .. math::

        L(s) = \alpha \sum_i \mathrm{CE}\big(y_i, \sigma(s_i)\big)
               - (1 - \alpha) \sum_i y_i \log \frac{\sigma(s_i)}{\sum_j \sigma(s_j)}

    per query, with :math:`\sigma` the logistic sigmoid, :math:`\mathrm{CE}` the binary
    cross-entropy and :math:`y` the targets (binary labels, or graded ones divided by
    ``max_label``). The listwise softmax is taken over :math:`\log \sigma(s)`, the logits of
    the same probabilities the pointwise term fits, so both terms agree at their minimum:
    :math:`\sigma(s)` estimates the probability of relevance and can be compared across
    queries. See :mod:`gbrank.objectives.calibrated` for the derivations.

    Parameters
    ----------
    %(parameters)s

    Returns
    -------
    RCR

    Notes
    -----
    The gradient is exact; the hessian is a positive surrogate that bounds the magnitude of
    the exact diagonal (which can be negative: the listwise term is not convex). The loss is
    not invariant to a shift of a query's scores, and queries without positive labels still
    get the pointwise gradient. Read predictions as probabilities with
    ``scipy.special.expit`` of the raw score. Sample weights multiply each row's gradient and
    hessian.

    %(example)s
    """
    return RCR(alpha=alpha, max_label=max_label, hess_floor=hess_floor, hess_scale=hess_scale)


@fill_doc(parameters=_PARAMETERS,
          example=objective_example("gbrank.weighted_logistic_softmax()", loss=2.8976,
                                    gradient=[-0.4892, 0.6946, -0.2378, 0.4228]))
def weighted_logistic_softmax(*, alpha: float = 0.5, max_label: float | None = None, hess_floor: float = 1e-6,
                              hess_scale: float = 1.0) -> WeightedLogisticSoftmax:
    r"""Weighted sum of a pointwise logistic loss and a listwise softmax on the raw scores.

    .. math::

        L(s) = \alpha \sum_i \mathrm{CE}\big(y_i, \sigma(s_i)\big)
               - (1 - \alpha) \sum_i y_i \log \frac{e^{s_i}}{\sum_j e^{s_j}}

    per query: the multi-objective baseline that Bai et al. (2023) compare RCR against
    (:func:`rcr`). Its listwise term ignores the level of a query's scores, which the
    pointwise term sets, so the two terms can disagree; ``alpha`` trades them off.

    Parameters
    ----------
    %(parameters)s

    Returns
    -------
    WeightedLogisticSoftmax

    Notes
    -----
    Gradient and hessian are exact (the loss is convex). The loss is not invariant to a
    shift of a query's scores, and queries without positive labels still get the pointwise
    gradient. Sample weights multiply each row's gradient and hessian.

    %(example)s
    """
    return WeightedLogisticSoftmax(alpha=alpha, max_label=max_label, hess_floor=hess_floor, hess_scale=hess_scale)
