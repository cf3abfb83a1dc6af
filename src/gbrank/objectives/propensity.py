r"""Position handling and propensities shared by the click objectives.

:func:`gbrank.ips_listnet` and :func:`gbrank.ips_ranknet` differ only in their loss; the
positions, the propensities (given, or estimated jointly with the model), their clipping and
the estimate exposed after training are this module's :class:`ClickObjective`.

Positions
---------
Positions are 1-based (1 = top, any value: a second results page holds 11..20); -1 marks a
document never shown, which must have no clicks and takes no part in the loss. They come
from ``grad_hess(..., position=...)``, ``gbrank.Ranker.fit(position=)``,
:func:`gbrank.engines.with_position`, a LightGBM ``Dataset(position=)`` (as given, whatever
the row order) or a position column in :mod:`gbrank.dask`; the engine layer reads them
(:mod:`gbrank.engines.positions`, which also says what XGBoost without positions does).

Inverse-propensity weights and clipping
---------------------------------------
A click on document :math:`i`, shown at position :math:`p_i`, counts
:math:`1/\theta_{p_i}`, the inverse of the probability that the position is examined. With
``clip=m`` the weight is :math:`1/\max(\theta_{p_i}, m)`: no click counts more than
:math:`1/m`. Clipping trades bias for variance (Joachims, Swaminathan and Schnabel, WSDM
2017; Strehl et al., NIPS 2010): the variance of a weighted click is bounded by
:math:`1/m^2` instead of growing like :math:`1/\theta_p^2` down the list, while documents at
positions with :math:`\theta_p < m` are under-weighted by :math:`\theta_p / m`, so the loss
leans towards the logging ranker's order there. ``m`` is in the scale of the propensities:
relative to the first position shown (position 1 in a log that starts at the top) for
estimated ones.

Estimated propensities
----------------------
With ``propensity="estimate"`` the propensities are estimated from the clicks alone, jointly
with the model, without interventions. The position-based model says
:math:`E[c_i] = N \theta_{p_i} \gamma_i` over :math:`N` sessions; the model's scores stand
for the relevance, :math:`\gamma_i = \kappa_q e^{a s_i}` within query :math:`q` (the IPS
softmax loss is minimised by :math:`\mathrm{softmax}(s) \propto \gamma`, so :math:`a = 1` at
its optimum; for other losses, and for an under- or over-fitted model, the fitted slope
:math:`a` absorbs the scale of the scores). The propensities, the per-query factors
:math:`\kappa_q` and :math:`a` are fitted to the clicks by Poisson quasi-likelihood
(consistent for the mean whatever the variance), by alternating the exact updates

.. math::

    \kappa_q = \frac{\sum_{i \in q} c_i}{\sum_{i \in q} \theta_{p_i} e^{a s_i}}, \qquad
    \theta_p = \frac{\sum_{i:\, p_i = p} c_i}{\sum_{i:\, p_i = p} \kappa_{q(i)} e^{a s_i}}

with a Newton step in :math:`a`, and reported relative to the first position a row was
shown at (position 1, unless the log starts lower, as a second results page). This is the
M-step of regression-EM (Wang et al., WSDM 2018) for a relevance model given by the
current ranker, in the spirit of the dual learning algorithm (Ai et al., SIGIR 2018).

The estimate starts from equal relevance within each query (:math:`s = 0`: each position's
click rate relative to its query's clicks), which overstates the decay, as the logging
ranker puts relevant documents on top, or (``start="flat"``, :func:`gbrank.pbm_listnet`)
from flat propensities, which understate it; after ``warmup`` boosting iterations and then
every ``update_every`` ones it is re-fitted from the current scores. It is identified through the
features only: the model cannot see the position, so the part of the position effect that
the features explain (a logging ranker built on the same features) cannot be told from
relevance, and the estimate leans towards the propensities it was trained with. This needs a
deterministic logging policy (one position per document).

A position without a click in the whole log (with ``propensity_model="monotone"``, one the
curve pools to none; with ``"power"``, which gives every position a value, any clickless one)
is estimated unexamined when, examined as often per row as the deepest
clicked position above it, it would have had 3 clicks or more: its rows take no part in the
loss, as rows never shown (counted in, they would pass for examined and irrelevant, as rows
below a fold that nobody scrolls to), and its ``propensity_`` is 1, a value nothing reads.
A clickless position with fewer rows takes the estimate of the nearest clicked position
above it (with ``"power"``, the curve's value).

``propensity_model`` restricts the curve :math:`\theta` may take in the update above
(:mod:`gbrank.objectives.propensity_models`: one value per position, a non-increasing
curve, or a power law). :mod:`gbrank.objectives.propensity_trust` bounds the estimate by a
bootstrap over queries and checks whether the features predict the positions, in which case
the log cannot identify it.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import engines as _engines
from .._validation import check_float, check_int
from ..engines.statistics import Statistics, sum_over_workers
from ..groups import varies_per_query
from ._base import RankingObjective
from ._binding import same_array
from .propensity_models import check_propensity_model, fit_curve

__all__ = ["ClickObjective", "OffsetClickObjective", "check_positions", "estimate_propensity"]

# Smallest propensity an estimate may take, so that 1 / theta stays bounded.
_MIN_PROPENSITY = 1e-3
def _first_bad(mask, offsets):
    row = int(np.flatnonzero(mask)[0])
    return row, int(np.searchsorted(offsets, row, side="right") - 1)


def check_positions(position, clicks, offsets, n_known: int | None) -> np.ndarray:
    """Return positions as int64 (:func:`gbrank.engines.positions.check`), also refusing
    values past the known propensities and clicks on rows never shown, naming the row and
    its query."""
    pos = _engines.positions.check(position, clicks.shape[0], offsets)
    if pos.size == 0:
        return pos
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


def _scores_constant_per_query(scores, offsets) -> bool:
    return not varies_per_query(scores, offsets).any()


def estimate_propensity(scores, clicks, position, offsets, n_positions: int, *, n_rounds: int = 30,
                        reduce=None, fit_slope: bool = True, model: str = "free") -> np.ndarray:
    r"""Propensities :math:`\hat\theta_p`, p = 1..n_positions, relative to the top-most position
    with clicks (position 1 wherever it is shown), from clicks and the model's scores (see the
    module documentation; ``n_rounds`` alternations).

    Fits :math:`E[c_i] = \theta_{p_i} \kappa_q e^{a s_i}` by Poisson quasi-likelihood with
    alternating exact updates of :math:`\kappa` and :math:`\theta` and a Newton step in
    :math:`a` (``fit_slope=False`` holds :math:`a = 1`, for a loss whose scores are this
    model's log-relevance: :func:`gbrank.pbm_listnet`). ``model`` is the curve
    :math:`\theta` may take (:mod:`gbrank.objectives.propensity_models`): ``"free"``, one
    value per position, NaN at positions without clicks; ``"monotone"``, non-increasing,
    NaN at positions never shown (or pooled with clickless neighbours to zero);
    ``"power"``, :math:`p^{-\eta}`, a value at every position. The rows may be one worker's
    part of the training data (whole queries): ``reduce`` then sums the per-position and
    slope sums over the workers (:class:`gbrank.engines.Statistics`), which all call this
    together, so that every worker gets the estimate of the whole data.
    """
    fit = _alternate(scores, clicks, position, offsets, n_positions, n_rounds=n_rounds, reduce=reduce,
                     fit_slope=fit_slope, model=check_propensity_model(model))
    return fit.relative()


#: Clicks a clickless position would have had, examined like the deepest clicked one above it,
#: from which its zero is taken to mean "not examined" (a Poisson zero then has probability
#: under 5%).
_UNEXAMINED_CLICKS = 3.0


def _unexamined(clickless, clicks, position, reduce) -> np.ndarray:
    """Positions estimated unexamined: without a click in the whole log although, examined as
    often per row as the deepest clicked position above them, they would have had
    ``_UNEXAMINED_CLICKS`` or more (rows below a fold that nobody scrolls to). Their rows take
    no part in the loss, as rows never shown: counted in, they would pass for examined and
    irrelevant. A clickless position with too few rows for its zero to say this is left to
    :func:`_carry_down`."""
    if not clickless.any():
        return clickless
    n = clickless.size
    seen = position >= 1
    at = position[seen] - 1
    per_position = sum_over_workers(np.concatenate([np.bincount(at, minlength=n).astype(np.float64),
                                                    np.bincount(at, weights=clicks[seen], minlength=n)]), reduce)
    rows, clicked = per_position[:n], per_position[n:]
    above = np.maximum.accumulate(np.where(clicked > 0, np.arange(n), -1))
    nearest = np.maximum(above, 0)
    rate = np.where(above >= 0, clicked[nearest] / np.maximum(rows[nearest], 1.0), 0.0)
    return clickless & (rate * rows >= _UNEXAMINED_CLICKS)


def examined_rows(position, left_out) -> np.ndarray:
    """The rows shown at a position the estimate does not leave out (``left_out``, one flag
    per position): the rows a click objective and its criterion learn from."""
    return (position >= 1) & ~left_out[np.maximum(position, 1) - 1]


def _carry_down(theta, unexamined) -> np.ndarray:
    """``theta`` with each position the estimate says nothing of (NaN) given the value of the
    nearest position above it that it does (1 at the top and where nothing is above; a value
    nothing reads at positions estimated unexamined)."""
    theta = theta.copy()
    known = ~np.isnan(theta)
    above = np.maximum.accumulate(np.where(known, np.arange(theta.size), -1))
    theta[~known] = np.where(above[~known] >= 0, theta[np.maximum(above[~known], 0)], 1.0)
    theta[unexamined] = 1.0
    return theta


class _Estimate:
    """One fit of the position-based model: the propensities in their own scale, the slope,
    the power law's exponent and the clicks per position (what the bootstrap restarts from)."""

    def __init__(self, theta, slope, eta, position_clicks, model):
        self.theta, self.slope, self.eta = theta, slope, eta
        self.position_clicks, self.model = position_clicks, model

    def relative(self) -> np.ndarray:
        """The propensities relative to the top-most position with clicks; NaN where the
        curve says nothing (see :func:`estimate_propensity`)."""
        theta = self.theta
        clicked = np.flatnonzero(self.position_clicks > 0)
        if not clicked.size or theta[clicked[0]] <= 0:
            return np.full(theta.size, np.nan)
        theta = theta / theta[clicked[0]]
        if self.model == "free":
            theta[self.position_clicks == 0] = np.nan
        elif self.model == "monotone":
            theta[theta <= 0] = np.nan
        return theta


def _alternate(scores, clicks, position, offsets, n_positions, *, n_rounds, reduce, fit_slope, model,
               query_weight=None, start: _Estimate | None = None) -> _Estimate:
    """The alternation of :func:`estimate_propensity`, each query's rows counted
    ``query_weight`` times (a bootstrap resample), from ``start`` or from flat propensities."""
    sizes = np.diff(offsets)
    n_queries = sizes.size
    query = np.repeat(np.arange(n_queries), sizes)
    shown = position >= 1
    c = clicks[shown]
    q = query[shown]
    p = position[shown] - 1
    s = scores[shown]
    s = s - np.bincount(q, weights=s, minlength=n_queries)[q] / np.maximum(np.bincount(q, minlength=n_queries), 1)[q]
    # a query counted w times adds w times its sums over positions; its own factor kappa_q,
    # a ratio of its own sums, is the same however often it is counted
    w = np.ones(c.size) if query_weight is None else query_weight[q]
    if start is None:
        theta, slope, eta = np.ones(n_positions), 1.0, 1.0
    else:
        theta, slope, eta = np.maximum(start.theta, _MIN_PROPENSITY * start.theta.max(initial=1.0)), start.slope, start.eta
    query_clicks = np.bincount(q, weights=c, minlength=n_queries)
    position_clicks = sum_over_workers(np.bincount(p, weights=w * c, minlength=n_positions), reduce)
    for _ in range(n_rounds):
        e = np.exp(np.clip(slope * s, -50.0, 50.0))
        kappa = query_clicks / np.maximum(np.bincount(q, weights=theta[p] * e, minlength=n_queries), 1e-300)
        exposure = sum_over_workers(np.bincount(p, weights=w * kappa[q] * e, minlength=n_positions), reduce)
        theta, eta = fit_curve(model, position_clicks, exposure, eta)
        if not fit_slope:
            continue
        mu = theta[p] * kappa[q] * e
        step, curvature = sum_over_workers(np.array([np.sum(w * s * (c - mu)), np.sum(w * s * s * mu)]), reduce)
        if curvature > 0:
            slope = max(slope + float(step) / curvature, 0.0)
    return _Estimate(theta, slope, eta, position_clicks, model)


class _Fit:
    """The estimate of one training set: the one mutable part of a click objective's binding,
    guarded by its own lock."""

    def __init__(self, initial: np.ndarray) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.initial = initial
        self.theta = initial.copy()
        #: the training set's initial scores at the last start (None: zeros)
        self.start = None


def _check_propensity(propensity) -> np.ndarray | str | None:
    if propensity is None:
        return None
    if isinstance(propensity, str):
        if propensity == "estimate":
            return "estimate"
        raise ValueError(f"propensity must be 'estimate', None or an array of propensities, got {propensity!r}")
    theta = np.array(propensity, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError("propensity must be a non-empty 1-d array, one value per position")
    if not (np.isfinite(theta).all() and (theta > 0).all()):
        p = int(np.flatnonzero(~(np.isfinite(theta) & (theta > 0)))[0]) + 1
        raise ValueError(f"the propensity of position {p} is {float(theta[p - 1])!r}; propensities must be > 0")
    theta.setflags(write=False)
    return theta


class ClickObjective(RankingObjective):
    """A loss on position-biased clicks: positions, propensities and their estimate.

    Subclasses give ``_kernel(state, scores, at, weight, inverse, offsets, grad, hess,
    want_loss)`` over the shown rows (``weight`` the inverse-propensity weighted clicks,
    ``inverse`` the per-row :math:`1/\\theta_{p_i}`, ones for ``propensity=None``) and may
    bind per-dataset work to the state in ``_bind(state)``.
    """

    #: The objective reads a position per row (``grad_hess(..., position=...)``).
    uses_position = True
    #: A query whose shown documents were all clicked still gets a gradient wherever the
    #: weights of its clicks differ: dropping it would bias the inverse-propensity estimate,
    #: whose expectation is the loss on the relevance probabilities of every query.
    ignores_orderless_queries = False
    #: Whether the propensity estimate fits the slope a of the relevance link
    #: gamma = kappa_q exp(a s) (for losses whose scores are not on the log-relevance scale),
    #: or holds a = 1 (a loss that is the click model's own likelihood: its scores are the
    #: log-relevance, and estimating the propensities is the other half of maximising it).
    _fits_slope = True

    # no defaults: the factories state them, once each
    def __init__(self, propensity: Any, *, clip: float | None, warmup: int, update_every: int, hess_floor: float,
                 hess_scale: float, propensity_model: str = "free", start: str = "click_rate") -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        if start not in ("click_rate", "flat"):
            raise ValueError(f"start must be 'click_rate' or 'flat', got {start!r}")
        self.start = start
        self.propensity = _check_propensity(propensity)
        if clip is not None and propensity is None:
            raise ValueError(
                "clip bounds the propensities, and propensity=None uses none: clip the weights "
                "of the labels yourself, or give the propensities"
            )
        self.clip = check_float("clip", clip, min=0.0, strict=True, optional=True)
        self.warmup = check_int("warmup", warmup, min=0)
        self.update_every = check_int("update_every", update_every, min=1)
        self.propensity_model = check_propensity_model(propensity_model)

    @property
    def mode(self) -> str:
        """``"known"``, ``"estimate"`` or ``"weighted_labels"`` (``propensity=None``)."""
        if self.propensity is None:
            return "weighted_labels"
        if isinstance(self.propensity, str):
            return "estimate"
        return "known"

    @property
    def reduces_over_workers(self) -> bool:
        """Whether every worker of a distributed training calls the objective together, empty
        ones too: the propensity estimate sums its statistics over them."""
        return self.mode == "estimate"

    @property
    def reads_position(self) -> bool:
        """Whether the gradients need the displayed positions (all but ``propensity=None``)."""
        return self.mode != "weighted_labels"

    @property
    def propensity_(self):
        raise AttributeError(
            "the propensity estimate belongs to the training set, not to the objective (a value that copies "
            "share): read it from the binding, objective.binding(dtrain).propensity_ after lgb.train / "
            "xgb.train, or gbrank.Ranker's propensity_"
        )

    def _fit_of(self, state) -> _Fit:
        fit = state.get("fit")
        if fit is None:
            raise AttributeError(
                f"propensity_ is set by training with propensity='estimate'; {self!r} estimates none"
            )
        return fit

    def _estimate(self, state) -> np.ndarray:
        fit = self._fit_of(state)
        with fit.lock:
            return fit.theta.copy()

    def _unexamined_positions(self, state) -> np.ndarray:
        fit = self._fit_of(state)
        with fit.lock:
            return state["unexamined"].copy()

    def _left_out_positions(self, state) -> np.ndarray:
        """The positions whose rows the loss leaves out (unexamined or saturated)."""
        fit = self._fit_of(state)
        with fit.lock:
            return state["left_out"].copy()

    def _unread_positions(self, state) -> np.ndarray:
        """The positions whose estimate nothing read: those left out, and those no row of
        the whole training data was shown at (above a log's first position, or between)."""
        return self._left_out_positions(state) | state["rowless"]

    def _saturated_positions(self, clicks, position, offsets, n_positions: int, reduce) -> np.ndarray:
        """Positions whose rows the loss leaves out as saturated (none: a click-count loss
        learns from every click; :func:`gbrank.pbm_cloglog` overrides this)."""
        return np.zeros(n_positions, dtype=bool)

    def _interval(self, state, scores, *, n_boot: int, level: float, seed):
        """:func:`gbrank.objectives.propensity_trust.propensity_interval` of this training
        set's estimate, with the objective's curve and slope."""
        from .propensity_trust import propensity_interval

        fit = self._fit_of(state)
        if state["reduce"] is not None:
            raise ValueError(
                "this binding holds one worker's part of the training data: gather the rows, clicks, positions "
                "and scores of every worker and call gbrank.objectives.propensity_trust.propensity_interval"
            )
        sizes = np.diff(state["offsets"])
        return propensity_interval(scores, state["clicks"], state["fit_position"], sizes, n_positions=fit.theta.size,
                                   propensity_model=self.propensity_model, fit_slope=self._fits_slope,
                                   n_boot=n_boot, level=level, seed=seed)

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"propensity": self.propensity if self.mode != "known" else self.propensity.tolist()}
        if self.clip is not None:
            params["clip"] = self.clip
        if self.mode == "estimate":
            params.update(warmup=self.warmup, update_every=self.update_every)
            if self.propensity_model != "free":
                params["propensity_model"] = self.propensity_model
            if self.start != "click_rate":
                params["start"] = self.start
        return {**params, **super()._params()}

    # ----------------------------------------------------------------- inputs
    def grad_hess(self, y_true, y_pred, group, weight=None, *, position=None):
        """Gradient and hessian of the loss.

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
        return _engines.gradients(self, y_pred, labels=y_true, sizes=group, weights=weight, position=position)

    def loss(self, y_true, y_pred, group, *, position=None) -> float:
        """Sum over queries of the loss at the current propensities."""
        return self.bind(y_true, group, position=position).loss(y_pred)

    def _bound_state(self, labels, offsets, position, statistics):
        if position is None and self.mode != "weighted_labels":
            raise ValueError(
                f"{self.factory}(propensity={'estimate' if self.mode == 'estimate' else '[...]'}) needs the "
                "display position of every row and got none: bind them with "
                "gbrank.engines.with_position(objective, position) (lgb.train, lgb.cv, xgb.train; xgb.cv with "
                "'row_order' only), "
                "pass position= to gbrank.Ranker.fit or to grad_hess, or build the LightGBM Dataset with "
                "gbrank.engines.lightgbm.dataset(..., position=) (LGBMRanker passes no positions to a "
                "custom objective)"
            )
        state = self._prepare_clicks(labels, offsets, position, statistics)
        self._bind(state)
        return state

    def _bound_gradients(self, binding, scores, init_score=None):
        self._update(binding.state, scores, init_score)
        return self._finish(binding.state, scores, binding.weights)

    def _label_check(self, y_true, offsets):
        values = np.asarray(y_true)
        if values.ndim == 1 and values.dtype.kind in "fi" and np.any(values < 0):
            # a negative target makes the loss unbounded below (see gbrank.objectives.affine)
            row, q = _first_bad(values < 0, offsets)
            raise ValueError(
                f"y_true must be non-negative; y_true[{row}] = {values[row]:g} at row {row} (query {q}): a click loss "
                "with a negative target is unbounded below. Affine-corrected targets are non-negative with "
                "gbrank.affine_targets(..., shift=True), which adds a constant per query"
            )
        return super()._label_check(y_true, offsets)

    def _prepare_clicks(self, labels, offsets, position, statistics: Statistics):
        clicks = self._label_check(labels, offsets)
        if self.mode == "weighted_labels":
            return {"offsets": offsets, "clicks": clicks, "weight": clicks, "inverse": None, "shown": None}
        known = self.propensity.size if self.mode == "known" else None
        pos = check_positions(position, clicks, offsets, known)
        state = {"offsets": offsets, "clicks": clicks, "position": pos, "shown": None}
        shown = pos >= 1
        if self.mode == "known":
            theta = self.propensity
        else:
            # the whole data's positions, and the allreduce where the rows are a part of it
            reduce = statistics.reduce
            n_positions = max(int(pos.max()), 1) if pos.size else 1
            if statistics.n_positions is not None:
                n_positions = max(n_positions, statistics.n_positions)
            state["reduce"] = reduce
            # the start: equal relevance within each query, i.e. the click-through rate of each
            # position relative to its query's clicks
            # found from the clicks alone, once: every estimate leaves their rows out
            state["saturated"] = self._saturated_positions(clicks, pos, offsets, n_positions, reduce)
            state["fit_position"] = pos
            at = pos[shown] - 1
            state["rowless"] = sum_over_workers(np.bincount(at, minlength=n_positions).astype(np.float64), reduce) == 0
            if self.propensity_model == "power":
                # the power law gives every position a value: a clickless one is found from the
                # clicks, and its rows kept out of every fit, where the other curves' zero at it
                # keeps them out (counted in, they would steepen the curve everywhere)
                clickless = sum_over_workers(np.bincount(at, weights=clicks[shown], minlength=n_positions), reduce) == 0
                state["unexamined"] = _unexamined(clickless & ~state["saturated"], clicks, pos, reduce)
                state["fit_position"] = np.where(examined_rows(pos, state["unexamined"]), pos, -1)
            theta = self._fit_propensity(np.zeros(clicks.shape[0]), state, n_positions, None)
            if self.propensity_model != "power":
                state["unexamined"] = _unexamined(np.isnan(theta) & ~state["saturated"], clicks, pos, reduce)
            state["left_out"] = state["unexamined"] | state["saturated"]
            shown = examined_rows(pos, state["left_out"])
            theta = np.maximum(_carry_down(theta, state["left_out"]), _MIN_PROPENSITY)
            # from flat propensities the estimate leaves them only as the scores learn what the
            # positions explain: it errs flat where the click rates' start errs steep
            if self.start == "flat":
                theta = np.ones_like(theta)
            state["fit"] = _Fit(theta)
        if not shown.all():
            sizes = np.diff(offsets)
            per_query = np.bincount(np.repeat(np.arange(sizes.size), sizes)[shown], minlength=sizes.size)
            state.update(shown=np.flatnonzero(shown), shown_offsets=np.concatenate(([0], np.cumsum(per_query))))
        self._set_weights(state, theta)
        return state

    def _set_weights(self, state, theta):
        """Per-row 1/theta (clipped; 0 for rows never shown) and the weighted clicks."""
        pos = state["position"]
        floor = theta if self.clip is None else np.maximum(theta, self.clip)
        inverse = np.zeros(pos.shape[0])
        seen = pos >= 1
        inverse[seen] = 1.0 / floor[pos[seen] - 1]
        state["inverse"] = inverse
        state["weight"] = state["clicks"] * inverse

    def _bind(self, state) -> None:
        """Per-dataset work of the loss, kept in the state (default none)."""

    # ----------------------------------------------------------------- joint estimation
    def _fit_propensity(self, scores, state, n_positions: int, start):
        """The propensities the clicks of ``state`` give at ``scores``, relative (NaN where
        the estimate says nothing); ``start``: the current estimate (None for the first).
        The click-count model's fit restarts from flat propensities every time."""
        return estimate_propensity(scores, state["clicks"], state["fit_position"], state["offsets"], n_positions,
                                   reduce=state["reduce"], fit_slope=self._fits_slope, model=self.propensity_model)

    def _update(self, state, scores, init_score=None):
        """Advance the estimate of one training set by one boosting iteration.

        A training starts where the scores are the training set's initial scores plus a
        constant per query, those of the last start (a continued training's engine replaces
        them, or adds its model's scores to them). The allreduces of a training on several
        workers run outside the lock: workers in one process may share a binding.
        """
        if self.mode != "estimate":
            return
        fit = state["fit"]
        init = None if init_score is None else np.asarray(init_score, dtype=np.float64).reshape(-1)
        starting = _scores_constant_per_query(scores if init is None else scores - init, state["offsets"]) and (
            fit.calls == 0 or same_array(init, fit.start))
        if state["reduce"] is not None:
            # workers start afresh together, or not at all: their updates are allreduces
            starting = sum_over_workers(np.array([0.0 if starting else 1.0]), state["reduce"])[0] == 0
        with fit.lock:
            if starting:
                # the engines start from a constant score (or the initial scores): a new
                # training starts afresh
                fit.calls = 0
                fit.start = init
                fit.theta = fit.initial.copy()
                self._set_weights(state, fit.theta)
            t = fit.calls
            fit.calls += 1
        if t >= self.warmup and (t - self.warmup) % self.update_every == 0:
            theta = self._fit_propensity(scores, state, fit.theta.size, fit.theta)
            with fit.lock:
                fit.theta = np.maximum(_carry_down(theta, state["left_out"]), _MIN_PROPENSITY)
                self._set_weights(state, fit.theta)

    # ----------------------------------------------------------------- kernels
    def _kernel(self, state, scores, at, weight, inverse, offsets, grad, hess, want_loss):
        raise NotImplementedError

    def _run(self, state, scores, grad, hess, want_loss, at=None):
        rows = state["shown"]
        inverse = state["inverse"]
        if rows is None:
            return self._kernel(state, scores, at, state["weight"], inverse, state["offsets"], grad, hess, want_loss)
        # rows never shown take no part: the loss runs over each query's shown rows
        g = np.zeros(rows.size)
        h = np.zeros(rows.size)
        loss = self._kernel(state, scores[rows], None if at is None else at[rows], state["weight"][rows],
                            inverse[rows], state["shown_offsets"], g, h, want_loss)
        grad[rows] = g
        hess[rows] = h
        return loss


class OffsetClickObjective(ClickObjective):
    r"""A click objective in which the propensities are offsets :math:`\log \theta_p` of the
    scores and the raw clicks the targets (the position-based model's own likelihoods): no
    click is weighted, so there is nothing to clip. Subclasses' kernels read the offsets of
    the rows they see from ``state["offset"]``."""

    def __init__(self, propensity: Any, *, clip: float | None, **settings: Any) -> None:
        if clip is not None:
            raise ValueError(
                f"{self.factory} has no inverse-propensity weights to clip: the propensities enter as offsets "
                "log(theta) of the scores and every click counts once, so a deep position adds no variance; "
                "use clip with ips_listnet or ips_ranknet"
            )
        super().__init__(propensity, clip=None, **settings)

    def _set_weights(self, state, theta):
        # the clicks themselves are the targets, and the offsets log theta_p of the rows the
        # kernel sees (the shown ones) change only with the estimate: taken here, not per call
        super()._set_weights(state, theta)
        state["weight"] = state["clicks"]
        inverse = state["inverse"] if state["shown"] is None else state["inverse"][state["shown"]]
        state["offset"] = -np.log(inverse)


_CLICK_PARAMS = """propensity : "estimate", array-like or None, default="estimate"
        ``"estimate"``: estimated from the clicks jointly with the model (the binding's
        ``propensity_`` after training). An array: the known propensities
        :math:`\\theta_1, \\theta_2, \\dots` of positions 1, 2, .... None: the labels are
        already inverse-propensity weighted clicks :math:`c_i / \\rho_i` (for example the
        policy-aware weights of a stochastic logging policy,
        :meth:`gbrank.datasets.clicks.ClickLog.ips_weights`), or raw clicks for the naive loss;
        positions are not read.
    clip : float, optional
        Smallest propensity a weight uses: a click at position :math:`p` counts
        :math:`1/\\max(\\theta_p, \\mathrm{clip})`, so no click counts more than ``1/clip``.
        Less variance, at the price of a bias towards the logging order at the positions
        with :math:`\\theta_p < \\mathrm{clip}` (see :mod:`gbrank.objectives.propensity`).
        In the scale of the propensities (relative to position 1 when estimated). None:
        no clipping, the unbiased loss.
    warmup : int, default=10
        Boosting iterations on the starting estimate (each position's click rate within
        its queries) before the first re-estimation from the scores (``"estimate"`` only).
    update_every : int, default=5
        Iterations between re-estimations (``"estimate"`` only).
    propensity_model : {"free", "monotone", "power"}, default="free"
        The curve the estimate may take (``"estimate"`` only;
        :mod:`gbrank.objectives.propensity_models`): one value per position; the
        non-increasing curve of largest likelihood (isotonic regression weighted by each
        position's exposure, which pools thin deep positions with their neighbours); or
        :math:`\\theta_p = p^{-\\eta}`, one parameter. The constrained curves are closer
        where deep positions are thin, but the error of an estimate made jointly with the
        model comes mostly from its identification, and on simulated logs neither trained
        better rankers on average than ``"free"`` (the docs' page on clicks, "How far to
        trust the estimate"); :meth:`gbrank.objectives._binding.Binding.propensity_interval`
        bounds the estimate."""

_CLICK_NOTES = """Positions are 1-based and -1 marks a row never shown (see
    :mod:`gbrank.objectives.propensity` for where they are read from in each engine). The
    estimate belongs to the training set: a call whose scores are constant within every
    query (where the engines start) starts it afresh, so one objective trains twice alike;
    continued training carries on from the estimate kept for that data. The estimate belongs
    to the training set's binding: ``objective.binding(dtrain).propensity_`` after
    ``lgb.train`` / ``xgb.train``, ``propensity_`` of a fitted ``gbrank.Ranker``."""


def click_doc(func):
    """Fill a click objective factory's docstring with the shared parameters and notes."""
    func.__doc__ = func.__doc__.replace("{click_params}", _CLICK_PARAMS).replace("{click_notes}", _CLICK_NOTES)
    return func
