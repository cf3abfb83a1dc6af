r"""Learning to rank from position-biased clicks: the inverse-propensity weighted softmax loss.

The loss
--------
A query's documents were shown in sessions; document :math:`i`, shown at position
:math:`p_i`, got :math:`c_i` clicks. Under the position-based click model a document is
clicked when it is examined (probability :math:`\theta_{p}`, the propensity of its position)
and found relevant (probability :math:`\gamma_i`), independently, so
:math:`E[c_i] = N \theta_{p_i} \gamma_i` over :math:`N` sessions. The inverse-propensity
weighted (IPS) softmax cross-entropy, with :math:`w_i = c_i / \theta_{p_i}`,

.. math::

    L(s) = -\sum_i w_i \log \mathrm{softmax}(s)_i
         = \sum_i w_i \Big(\log \sum_j e^{s_j} - s_i\Big),

is then, in expectation over the clicks, the full-information loss
:math:`-N \sum_i \gamma_i \log \mathrm{softmax}(s)_i` (Joachims et al. 2017; Ai et al. 2018),
whose minimiser has :math:`\mathrm{softmax}(s)_i = \gamma_i / \sum_j \gamma_j`: the bias of
position is removed without knowing which clicks it caused. With :math:`W = \sum_i w_i` and
:math:`\pi = \mathrm{softmax}(s)`,

.. math::

    g_i = W \pi_i - w_i, \qquad h_i = W \pi_i (1 - \pi_i),

the gradient and the exact diagonal of the (positive semi-definite) hessian; it is
ListNet's top-one loss with unnormalised targets (:func:`gbrank.listnet`'s kernel serves
both), so a query's gradients sum to zero and a query without clicks contributes nothing.

Unbiasedness needs :math:`\theta_{p_i} > 0` wherever :math:`\gamma_i > 0`. A document never
shown (position -1) has no propensity and no clicks; it takes no part in the loss (the
softmax runs over the shown documents of the query: zero gradient), so it is neither pushed
down as irrelevant nor learnt from. With a deterministic top-k cut-off the loss is then
unbiased for the full-information loss over the shown documents only, and what the model
learns about the others comes from the features alone. A stochastic logging policy that can
show every document, with the policy-aware propensity
:math:`\rho_i = E_\pi[\theta_{\mathrm{rank}(i)}]` (Oosterhuis and de Rijke, CIKM 2020),
restores unbiasedness: pass :math:`c_i / \rho_i` as labels with ``propensity=None``.

Estimated propensities
----------------------
With ``propensity="estimate"`` the propensities are estimated from the clicks alone, jointly
with the model, without interventions. The position-based model says
:math:`E[c_i] = N \theta_{p_i} \gamma_i`; the model's scores stand for the relevance,
:math:`\gamma_i = \kappa_q e^{a s_i}` within query :math:`q` (the IPS softmax loss is
minimised by :math:`\mathrm{softmax}(s) \propto \gamma`, so :math:`a = 1` at its optimum;
the fitted slope :math:`a` absorbs an under- or over-fitted scale of the scores). The
propensities, the per-query factors :math:`\kappa_q` and :math:`a` are fitted to the
clicks by Poisson quasi-likelihood (consistent for the mean whatever the variance), by
alternating the exact updates

.. math::

    \kappa_q = \frac{\sum_{i \in q} c_i}{\sum_{i \in q} \theta_{p_i} e^{a s_i}}, \qquad
    \theta_p = \frac{\sum_{i:\, p_i = p} c_i}{\sum_{i:\, p_i = p} \kappa_{q(i)} e^{a s_i}}

with a Newton step in :math:`a`, and reported relative to position 1. This is the
M-step of regression-EM (Wang et al., WSDM 2018) for a relevance model given by the
current ranker, in the spirit of the dual learning algorithm (Ai et al., SIGIR 2018).

The estimate starts from equal relevance within each query (:math:`s = 0`: each position's
click rate relative to its query's clicks), which overstates the decay, as the logging
ranker puts relevant documents on top; after ``warmup`` boosting iterations and then every
``update_every`` ones it is re-fitted from the current scores. It is identified through the
features only: the model cannot see the position, so the part of the position effect that
the features explain (a logging ranker built on the same features) cannot be told from
relevance, and the estimate leans towards the propensities it was trained with. This needs a
deterministic logging policy (one position per document).

Positions
---------
Positions are 1-based (1 = top); -1 marks a document never shown, which must have no
clicks. They come from ``grad_hess(..., position=...)``; from a LightGBM Dataset built with
``position=``; or, for XGBoost, from the row order within each query (XGBoost's own
convention for ``lambdarank_unbiased``: the rows of a query are in display order).
LightGBM replaces the positions by ids numbered in order of first appearance when it
constructs the Dataset; they are the positions minus one exactly when every query's rows
are in display order (positions 1, 2, 3, ...), which the objective checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from .._validation import check_scores, check_weights
from .. import engines as _engines
from ..groups import check_group, sizes_to_offsets
from ._base import RankingObjective
from .listnet import _top1

__all__ = ["IPSListNet", "ips_listnet"]

# Smallest propensity an estimate may take, so that 1 / theta stays bounded.
_MIN_PROPENSITY = 1e-3


@njit(parallel=True, cache=True)
def ips_softmax_kernel(scores, weight, offsets, grad, hess, want_loss):
    """Per-query IPS softmax: g = W pi - w, h = W pi (1 - pi); returns the per-query loss."""
    n_queries = offsets.shape[0] - 1
    loss = np.zeros(n_queries)
    target = np.empty(scores.shape[0])
    for q in prange(n_queries):
        loss[q] = _ips_query(scores, weight, target, offsets[q], offsets[q + 1], grad, hess, want_loss)
    return loss


@njit(cache=True)
def _ips_query(scores, weight, target, start, end, grad, hess, want_loss):
    total = 0.0
    for i in range(start, end):
        total += weight[i]
    if total == 0.0 or end - start < 2:
        return 0.0
    # ListNet's top-one loss with the normalised target w / W, scaled back by W
    for i in range(start, end):
        target[i] = weight[i] / total
    loss = _top1(scores, target, start, end, grad, hess, want_loss)
    for i in range(start, end):
        grad[i] *= total
        hess[i] *= total
    return loss * total


def _first_bad(mask, offsets):
    row = int(np.flatnonzero(mask)[0])
    return row, int(np.searchsorted(offsets, row, side="right") - 1)


def check_positions(position, clicks, offsets, n_known: int | None) -> np.ndarray:
    """Return positions as int64, refusing non-integers, 0, values below -1, values past the
    known propensities and clicks on rows never shown, naming the row and its query."""
    pos = np.asarray(position)
    n = clicks.shape[0]
    if pos.shape != (n,):
        raise ValueError(f"position has shape {pos.shape} but there are {n} rows")
    if pos.dtype.kind == "f":
        frac = ~np.isfinite(pos) | (pos != np.floor(pos))
        if frac.any():
            row, q = _first_bad(frac, offsets)
            raise ValueError(f"position[{row}] = {float(pos[row])!r} (query {q}) is not an integer")
    elif pos.dtype.kind not in "iu":
        raise TypeError(f"position must hold integers, got dtype {pos.dtype}")
    pos = pos.astype(np.int64)
    if n == 0:
        return pos
    bad = (pos == 0) | (pos < -1)
    if bad.any():
        row, q = _first_bad(bad, offsets)
        raise ValueError(
            f"position[{row}] = {pos[row]} at row {row} (query {q}): positions are 1-based "
            "(1 = top) and -1 marks a row never shown"
        )
    if n_known is not None and pos.max() > n_known:
        row, q = _first_bad(pos > n_known, offsets)
        raise ValueError(
            f"position[{row}] = {pos[row]} at row {row} (query {q}) is past the {n_known} "
            "known propensities; give one propensity per shown position"
        )
    clicked_unseen = (pos == -1) & (clicks > 0)
    if clicked_unseen.any():
        row, q = _first_bad(clicked_unseen, offsets)
        raise ValueError(
            f"row {row} (query {q}) has {clicks[row]:g} clicks but position -1 (never shown): "
            "a document that was not shown cannot be clicked"
        )
    return pos


def _lightgbm_positions(ids, offsets) -> np.ndarray | None:
    if ids is None:
        return None
    ids = np.asarray(ids, dtype=np.int64)
    # LightGBM numbers the distinct positions in order of first appearance; with each
    # query's rows in display order the ids are 0, 1, 2, ... within every query
    expected = np.arange(ids.shape[0]) - np.repeat(offsets[:-1], np.diff(offsets))
    if not np.array_equal(ids, expected):
        row, q = _first_bad(ids != expected, offsets)
        raise ValueError(
            f"the LightGBM Dataset's positions are not in display order at row {row} (query "
            f"{q}): LightGBM keeps only ids of the positions, numbered in order of first "
            "appearance, so put each query's rows in display order with positions 1, 2, 3, ... "
            "(drop rows never shown), or pass position= to gbrank.Ranker.fit or grad_hess"
        )
    return ids + 1


def _row_order_positions(offsets) -> np.ndarray:
    sizes = np.diff(offsets)
    return np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], sizes) + 1


def _scores_constant_per_query(scores, offsets) -> bool:
    starts = offsets[:-1][np.diff(offsets) > 0]
    if starts.size == 0:
        return True
    return bool(np.array_equal(np.maximum.reduceat(scores, starts), np.minimum.reduceat(scores, starts)))


def estimate_propensity(scores, clicks, position, offsets, n_positions: int, *, n_rounds: int = 30) -> np.ndarray:
    r"""Propensities :math:`\hat\theta_p`, p = 1..n_positions, relative to position 1, from
    clicks and the model's scores (see the module documentation; ``n_rounds`` alternations).

    Fits :math:`E[c_i] = \theta_{p_i} \kappa_q e^{a s_i}` by Poisson quasi-likelihood with
    alternating exact updates of :math:`\kappa` and :math:`\theta` and a Newton step in
    :math:`a`. Positions without clicks get NaN.
    """
    sizes = np.diff(offsets)
    n_queries = sizes.size
    query = np.repeat(np.arange(n_queries), sizes)
    shown = position >= 1
    c = clicks[shown]
    q = query[shown]
    p = position[shown] - 1
    s = scores[shown]
    s = s - np.bincount(q, weights=s, minlength=n_queries)[q] / np.maximum(np.bincount(q, minlength=n_queries), 1)[q]
    theta = np.ones(n_positions)
    slope = 1.0
    query_clicks = np.bincount(q, weights=c, minlength=n_queries)
    position_clicks = np.bincount(p, weights=c, minlength=n_positions)
    for _ in range(n_rounds):
        e = np.exp(np.clip(slope * s, -50.0, 50.0))
        kappa = query_clicks / np.maximum(np.bincount(q, weights=theta[p] * e, minlength=n_queries), 1e-300)
        mu_pos = np.bincount(p, weights=kappa[q] * e, minlength=n_positions)
        theta = np.where(mu_pos > 0, position_clicks / np.maximum(mu_pos, 1e-300), np.nan)
        theta = np.where(np.isnan(theta), 0.0, theta)
        mu = theta[p] * kappa[q] * e
        curvature = np.sum(s * s * mu)
        if curvature > 0:
            slope = max(slope + float(np.sum(s * (c - mu))) / curvature, 0.0)
    theta = theta / theta[0] if theta[0] > 0 else np.full(n_positions, np.nan)
    theta[position_clicks == 0] = np.nan
    return theta


class _Fit:
    """The estimate kept for one training set (mutable, guarded by the objective's lock)."""

    def __init__(self, initial: np.ndarray) -> None:
        self.calls = 0
        self.initial = initial
        self.theta = initial.copy()


class IPSListNet(RankingObjective):
    """Inverse-propensity weighted softmax loss on clicks; build it with :func:`ips_listnet`."""

    factory = "ips_listnet"
    #: The objective reads a position per row (``grad_hess(..., position=...)``).
    uses_position = True

    def __init__(
        self,
        propensity: Any = "estimate",
        *,
        warmup: int = 10,
        update_every: int = 5,
        hess_floor: float = 1e-6,
        hess_scale: float = 1.0,
    ) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        if propensity is None or (isinstance(propensity, str) and propensity == "estimate"):
            theta = None
        elif isinstance(propensity, str):
            raise ValueError(f"propensity must be 'estimate', None or an array of propensities, got {propensity!r}")
        else:
            theta = np.array(propensity, dtype=np.float64)
            if theta.ndim != 1 or theta.size == 0:
                raise ValueError("propensity must be a non-empty 1-d array, one value per position")
            if not (np.isfinite(theta).all() and (theta > 0).all()):
                p = int(np.flatnonzero(~(np.isfinite(theta) & (theta > 0)))[0]) + 1
                raise ValueError(f"the propensity of position {p} is {float(theta[p - 1])!r}; propensities must be > 0")
            theta.setflags(write=False)
        for name, value, low in (("warmup", warmup, 0), ("update_every", update_every, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        self.propensity = "estimate" if (theta is None and propensity is not None) else theta
        self.warmup = int(warmup)
        self.update_every = int(update_every)
        self._fitted: dict[str, np.ndarray] = {}

    @property
    def mode(self) -> str:
        """``"known"``, ``"estimate"`` or ``"weighted_labels"`` (``propensity=None``)."""
        if self.propensity is None:
            return "weighted_labels"
        if isinstance(self.propensity, str):
            return "estimate"
        return "known"

    @property
    def propensity_(self) -> np.ndarray:
        """Estimated propensities of positions 1..K (``propensity="estimate"``), relative to
        position 1, from the latest training's latest update."""
        if "propensity" not in self._fitted:
            raise AttributeError(
                "propensity_ is set by training with propensity='estimate'; this objective has not estimated any"
            )
        return self._fitted["propensity"].copy()

    def __deepcopy__(self, memo):
        # lgb.train deep-copies its params and gbrank.Ranker its objective: the copy that
        # trains shares the record of the estimate, so that propensity_ reads the same here
        clone = type(self).__new__(type(self))
        clone.__setstate__({**self.__getstate__(), "_fitted": self._fitted})
        return clone

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"propensity": self.propensity if self.mode != "known" else self.propensity.tolist()}
        if self.mode == "estimate":
            params.update(warmup=self.warmup, update_every=self.update_every)
        return {**params, **super()._params()}

    # ----------------------------------------------------------------- inputs
    def grad_hess(self, y_true, y_pred, group, weight=None, *, position=None):
        """Gradient and hessian of the IPS softmax loss.

        Parameters
        ----------
        y_true : array-like of shape (n_rows,)
            Clicks per row (non-negative: counts, or with ``propensity=None`` already
            inverse-propensity weighted).
        y_pred, group, weight
            As :meth:`gbrank.objectives._base.RankingObjective.grad_hess`.
        position : array-like of int, shape (n_rows,)
            Display position of each row, 1 at the top, -1 if never shown. Needed unless
            ``propensity=None``.
        """
        labels, offsets = self._rows(y_true, group)
        state = self._click_state(labels, offsets, position)
        scores = check_scores(y_pred, labels.shape[0], offsets)
        weights = check_weights(weight, labels.shape[0], offsets)
        self._update(state, scores)
        return self._finish(state, scores, weights)

    def loss(self, y_true, y_pred, group, *, position=None) -> float:
        """Sum over queries of the IPS softmax loss at the current propensities."""
        labels, offsets = self._rows(y_true, group)
        state = self._click_state(labels, offsets, position)
        scores = check_scores(y_pred, labels.shape[0], offsets)
        return float(np.sum(self._loss(state, scores)))

    def __call__(self, y_true, y_pred, weight=None, group=None):
        """Engine entry point, as :meth:`RankingObjective.__call__`, with the positions read
        from the engine data: a LightGBM ``Dataset(position=)`` (each query's rows in display
        order) or, for XGBoost, the row order within each query (XGBoost's own convention)."""
        engine = _engines.engine_of(y_pred)
        if engine is None:
            if group is not None:
                _engines.lightgbm.check_caller()
            return self.grad_hess(y_true, y_pred, group, weight)
        preds, fields = y_true, _engines.read(y_pred)
        offsets = sizes_to_offsets(fields.sizes)
        if engine == "xgboost":
            position = _row_order_positions(offsets)
        else:
            position = _lightgbm_positions(fields.position, offsets)
            if position is None and self.mode != "weighted_labels":
                raise ValueError(
                    "the LightGBM Dataset carries no positions: build it with lgb.Dataset(..., "
                    "position=...) (lgb.cv's fold Datasets do not keep them: cross-validate with "
                    "gbrank.Ranker or by hand)"
                )
        return self.grad_hess(fields.labels, preds, fields.sizes, fields.weights, position=position)

    def _rows(self, y_true, group):
        labels = np.asarray(y_true)
        if labels.ndim != 1:
            raise ValueError(f"y_true must be one-dimensional, got shape {labels.shape}")
        return labels, check_group(group, labels.shape[0])

    def _click_state(self, labels, offsets, position):
        if position is None and self.mode != "weighted_labels":
            raise ValueError(
                f"ips_listnet(propensity={'estimate' if self.mode == 'estimate' else '[...]'}) needs the "
                "display position of every row and got none: build the lgb.Dataset with position=, pass "
                "position= to gbrank.Ranker.fit or to grad_hess (LGBMRanker passes no positions to a "
                "custom objective; for XGBoost the row order within a query is the position)"
            )
        key_pos = None if self.mode == "weighted_labels" else np.asarray(position)
        with self._lock:
            for cached_labels, cached_offsets, cached_pos, state in self._cache:
                if (
                    np.array_equal(cached_offsets, offsets)
                    and np.array_equal(cached_labels, labels)
                    and (key_pos is None or np.array_equal(cached_pos, key_pos))
                ):
                    return state
        state = self._prepare_clicks(labels, offsets, key_pos)
        with self._lock:
            self._cache.insert(0, (labels.copy(), offsets, None if key_pos is None else key_pos.copy(), state))
            del self._cache[4:]
        return state

    def _prepare_clicks(self, labels, offsets, position):
        clicks = self._label_check(labels, offsets)
        if self.mode == "weighted_labels":
            return {"offsets": offsets, "weight": clicks}
        known = self.propensity.size if self.mode == "known" else None
        pos = check_positions(position, clicks, offsets, known)
        coverage = {"shown": None}
        if (pos == -1).any():
            shown = pos >= 1
            sizes = np.diff(offsets)
            per_query = np.bincount(np.repeat(np.arange(sizes.size), sizes)[shown], minlength=sizes.size)
            coverage = {"shown": np.flatnonzero(shown), "shown_offsets": np.concatenate(([0], np.cumsum(per_query)))}
        if self.mode == "known":
            return {"offsets": offsets, "weight": self._weights(clicks, pos, self.propensity), **coverage}
        n_positions = max(int(pos.max()), 1) if pos.size else 1
        # the start: equal relevance within each query, i.e. the click-through rate of each
        # position relative to its query's clicks
        initial = estimate_propensity(np.zeros(clicks.shape[0]), clicks, pos, offsets, n_positions)
        initial = np.maximum(np.where(np.isnan(initial), 1.0, initial), _MIN_PROPENSITY)
        return {
            "offsets": offsets,
            "clicks": clicks,
            "position": pos,
            "fit": _Fit(initial),
            "weight": self._weights(clicks, pos, initial),
            **coverage,
        }

    @staticmethod
    def _weights(clicks, pos, theta):
        weight = np.zeros(clicks.shape[0])
        hit = clicks > 0
        weight[hit] = clicks[hit] / theta[pos[hit] - 1]
        return weight

    # ----------------------------------------------------------------- joint estimation
    def _update(self, state, scores):
        """Advance the estimate of one training set by one boosting iteration."""
        if self.mode != "estimate":
            return
        with self._lock:
            fit = state["fit"]
            if _scores_constant_per_query(scores, state["offsets"]):
                # the engines start from a constant score: a new training starts afresh
                fit.calls = 0
                fit.theta = fit.initial.copy()
                state["weight"] = self._weights(state["clicks"], state["position"], fit.theta)
            t = fit.calls
            fit.calls += 1
            if t >= self.warmup and (t - self.warmup) % self.update_every == 0:
                theta = estimate_propensity(
                    scores, state["clicks"], state["position"], state["offsets"], fit.theta.size
                )
                keep = np.isnan(theta)
                theta[keep] = fit.theta[keep]
                fit.theta = np.maximum(theta, _MIN_PROPENSITY)
                state["weight"] = self._weights(state["clicks"], state["position"], fit.theta)
            self._fitted["propensity"] = fit.theta.copy()

    # ----------------------------------------------------------------- kernels
    def _run(self, state, scores, grad, hess, want_loss):
        rows = state.get("shown")
        if rows is None:
            return ips_softmax_kernel(scores, state["weight"], state["offsets"], grad, hess, want_loss)
        # rows never shown take no part: the softmax runs over each query's shown rows
        g = np.zeros(rows.size)
        h = np.zeros(rows.size)
        loss = ips_softmax_kernel(scores[rows], state["weight"][rows], state["shown_offsets"], g, h, want_loss)
        grad[rows] = g
        hess[rows] = h
        return loss

    def _grad_hess(self, state, scores, grad, hess):
        self._run(state, scores, grad, hess, False)

    def _loss(self, state, scores):
        n = scores.shape[0]
        return self._run(state, scores, np.zeros(n), np.zeros(n), True)


def ips_listnet(
    propensity: Any = "estimate",
    *,
    warmup: int = 10,
    update_every: int = 5,
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> IPSListNet:
    r"""Inverse-propensity weighted softmax (ListNet top-one) loss for learning from clicks.

    .. math::

        L(s) = -\sum_i \frac{c_i}{\theta_{p_i}} \log \frac{e^{s_i}}{\sum_j e^{s_j}}

    per query, with :math:`c_i` the clicks on row :math:`i` (the labels) and
    :math:`\theta_{p_i}` the propensity (examination probability) of its display position.
    In expectation over position-biased clicks it equals the loss on the true relevance.
    See :mod:`gbrank.objectives.clicks` for the derivation and the estimator.

    Parameters
    ----------
    propensity : "estimate", array-like or None, default="estimate"
        ``"estimate"``: estimated from the clicks jointly with the model (exposed as
        ``propensity_`` after training). An array: the known propensities
        :math:`\theta_1, \theta_2, \dots` of positions 1, 2, .... None: the labels are
        already inverse-propensity weighted clicks :math:`c_i / \rho_i` (for example the
        policy-aware weights of a stochastic logging policy,
        :meth:`gbrank.datasets.clicks.ClickLog.ips_weights`), or raw clicks for the naive loss;
        positions are not read.
    warmup : int, default=10
        Boosting iterations on the starting estimate (each position's click rate within
        its queries) before the first re-estimation from the scores (``"estimate"`` only).
    update_every : int, default=5
        Iterations between re-estimations (``"estimate"`` only).
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Returns
    -------
    IPSListNet

    Notes
    -----
    Positions are 1-based and -1 marks a row never shown (see the module documentation for
    where they are read from in each engine). The estimate belongs to the training set: a
    call whose scores are constant within every query (where the engines start) starts it
    afresh, so one objective trains twice alike; continued training carries on from the
    estimate kept for that data. ``propensity_`` is the estimate of the training set last
    updated.
    """
    return IPSListNet(
        propensity, warmup=warmup, update_every=update_every, hess_floor=hess_floor, hess_scale=hess_scale
    )
