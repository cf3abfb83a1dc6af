r"""Learning to rank from binary clicks: the position-based model with a complementary
log-log link.

The loss
--------
Often a log keeps, per shown document, only whether it was clicked in any of the sessions
that showed it: :math:`c_i \in \{0, 1\}`. Under the position-based model with :math:`N`
sessions, :math:`P(c_i = 1) = 1 - (1 - \theta_{p_i} \gamma_i)^N`: it saturates, a relevant
document near the top is clicked whatever its position's examination, and the click-count
model :math:`E[c_i] \propto \theta_{p_i} \gamma_i` that :func:`gbrank.pbm_listnet`, the IPS
losses and their propensity estimate assume no longer holds (it takes the saturation for a
flat position bias). The complementary log-log model describes it: clicks in each session at
the rate :math:`\theta_{p_i} \mu_i`, and :math:`c_i = 1` when there was at least one,

.. math::

    P(c_i = 1) = 1 - e^{-\lambda_i}, \qquad \lambda_i = \kappa_q \theta_{p_i} e^{s_i},

with :math:`e^{s_i}` the relevance and :math:`\kappa_q` a factor per query (its number of
sessions, which varies between queries), profiled out as :func:`gbrank.pbm_listnet` profiles
the number of clicks. The loss is the negative log-likelihood of the query's clicks,

.. math::

    L(s) = \min_{\kappa_q > 0} \sum_{i \in q} \Big[(1 - c_i)\,\lambda_i
           - c_i \log\big(1 - e^{-\lambda_i}\big)\Big],

convex in :math:`s_i + \log \kappa_q`. With :math:`x = \lambda_i` at the profiled
:math:`\kappa_q`,

.. math::

    g_i = \begin{cases} x & c_i = 0 \\ -\dfrac{x}{e^x - 1} & c_i = 1 \end{cases}, \qquad
    h^0_i = \begin{cases} x & c_i = 0 \\ \dfrac{x\,(x e^x - e^x + 1)}{(e^x - 1)^2} & c_i = 1 \end{cases},
    \qquad h_i = h^0_i \Big(1 - \frac{h^0_i}{\sum_{j \in q} h^0_j}\Big),

the gradient (the profile's envelope) and the exact diagonal of the profiled loss's hessian,
positive semi-definite. A query's gradients sum to zero. A query whose shown rows were all
clicked, or none, says nothing of their order (its factor runs off to infinity or zero) and
contributes nothing; a row never shown (position -1) takes no part.

The propensities
----------------
Known, or estimated jointly with the model (``propensity="estimate"``) by the same
likelihood: after ``warmup`` iterations and every ``update_every`` ones, the per-query
factors and :math:`\log \theta_p` are fitted to the clicks at the current scores by
alternating Newton steps (each convex in its own variable), starting from the previous
estimate, and reported relative to the top-most position with clicks. The first estimate
is the one at equal scores within each query. As for the other click objectives it is
identified through the features only (:mod:`gbrank.objectives.propensity`), positions
without a click get none, and positions below a fold are found and left out the same way.
A position clicked in every query where a click says anything has no finite estimate (the
likelihood rises without end in its propensity): :func:`saturated_positions` finds such
positions from the clicks alone, and their rows are left out of the loss and the estimate,
as rows below a fold are.

With each query's factor profiled, the estimate has an incidental-parameter bias on short
lists (too steep; see the objective's page for figures). On the clicks benchmark's binary
world (30 documents per query, every one shown, :math:`\theta_p = 1/p`, clicked in any of 10
sessions, 1,000 queries, three seeds) the estimate at the rounds :func:`gbrank.fit_clicks`
chose was 0.94-0.96, 0.90-0.97, 0.80-0.95 and 0.70-0.82 of the truth at positions 2, 5, 10
and 20; the click-count model's (:func:`gbrank.pbm_listnet`) was 1.4-1.5, 1.8-2.1, 1.7-2.2
and 1.7-2.0 times it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from .._parallel import MIN_ROWS_PER_THREAD_LIGHT, over_queries
from ..engines.statistics import sum_over_workers
from .propensity import _MIN_PROPENSITY, OffsetClickObjective, _Estimate, _first_bad, click_doc

__all__ = ["PBMCloglog", "estimate_cloglog_propensity", "pbm_cloglog", "saturated_positions"]

# Newton's method on a query's log factor: iterations at most, and the tolerance on the
# derivative relative to the query's clicks
_PROFILE_ITERATIONS = 300
_PROFILE_TOLERANCE = 1e-12
# the largest exponent of a rate: e^700 is finite in float64
_MAX_EXPONENT = 700.0
# below it a clicked row's terms take their series in x = e^z (x < 1e-12)
_SMALL_EXPONENT = -27.6
# alternations of the propensities' estimate per update, and the largest change of a log
# propensity in one of them
_ESTIMATE_ROUNDS = 20
_MAX_LOG_STEP = 2.0


@njit(cache=True, inline="always")
def _terms(z, clicked):
    """Loss, first and second derivative in ``z`` of one row with rate ``x = e^z``."""
    x = math.exp(min(z, _MAX_EXPONENT))
    if not clicked:
        return x, x, x
    if z < _SMALL_EXPONENT:
        # 1 - e^-x = x (1 - x/2 + ...): the closed forms below would lose every digit, and
        # -log x = -z stays finite where x underflows
        return -z + 0.5 * x, -1.0 + 0.5 * x, 0.5 * x
    miss = math.exp(-x)
    hit = -math.expm1(-x)
    return -math.log(hit), -x * miss / hit, x * miss * (x - hit) / (hit * hit)


@njit(cache=True)
def _solve(z, clicked, start, end, ref, t, n_clicked, reach):
    """The root in t of the query's derivative, sum_i g(z_i - ref + t), from ``t``: steps of
    ``reach``, doubled, outwards until the root is bracketed, then Newton's method on the
    increasing derivative, bisecting wherever a Newton step would leave the bracket or shrink
    it slower than bisection (a rate far from the root moves it by 1 per Newton step)."""
    lo = -np.inf
    hi = np.inf
    last = np.inf
    for _ in range(_PROFILE_ITERATIONS):
        grad = 0.0
        curvature = 0.0
        for i in range(start, end):
            _, g, h = _terms((z[i] - ref) + t, clicked[i])
            grad += g
            curvature += h
        if abs(grad) <= _PROFILE_TOLERANCE * n_clicked:
            break
        if grad > 0.0:
            hi = t
        else:
            lo = t
        newton = t - grad / curvature if curvature > 0.0 else np.nan
        if math.isfinite(lo) and math.isfinite(hi):
            if not lo < newton < hi or abs(2.0 * grad) > abs(last * curvature):
                step = 0.5 * (lo + hi)
            else:
                step = newton
        else:
            step = newton if abs(newton - t) <= reach else t + (reach if grad < 0.0 else -reach)
            reach *= 2.0
        if step == t:
            break
        last = step - t
        t = step
    return t


@njit(cache=True)
def _profile(z, clicked, start, end):
    """The query's profiled log factor as ``(ref, t)``, u = t - ref, so that row i's log rate is
    ``(z_i - ref) + t`` with ``ref`` the score of the rows whose rates the optimum sets (exact
    where the scores are far apart, beyond float64's resolution of u itself); NaN ``t`` when
    the query has no click or only clicks."""
    n_clicked = 0
    top = -np.inf
    bottom = np.inf
    for i in range(start, end):
        n_clicked += clicked[i]
        top = max(top, z[i])
        bottom = min(bottom, z[i])
    if n_clicked == 0 or n_clicked == end - start:
        return top, np.nan
    total = 0.0
    for i in range(start, end):
        total += math.exp(z[i] - top)
    # the start: the expected number of clicks, were none saturated, is the observed one;
    # the first steps are on the scale of the scores' spread, as far as the root may be
    t = _solve(z, clicked, start, end, top, math.log(n_clicked) - math.log(total), n_clicked, 1.0 + (top - bottom))
    # again from the rows nearest the optimum, whose rates it sets: with scores far apart,
    # z_i - top + t has lost the digits that matter
    pivot = start
    for i in range(start + 1, end):
        if abs((z[i] - top) + t) < abs((z[pivot] - top) + t):
            pivot = i
    ref = z[pivot]
    guess = min(max((z[pivot] - top) + t, -_MAX_EXPONENT), _MAX_EXPONENT)
    return ref, _solve(z, clicked, start, end, ref, guess, n_clicked, 1.0)


@njit(cache=True, nogil=True)
def cloglog_kernel(q0, q1, z, clicked, offsets, grad, hess, want_loss, loss, profiled):
    """The loss of the queries ``q0 <= q < q1`` over offset scores ``z``, each query's factor
    profiled, with each row's gradient and, ``profiled``, the diagonal of the profiled loss's
    hessian; else each row's own second derivative in its log rate (the factors held, as the
    propensities' Newton step takes it). A query without a factor gets zeros."""
    for q in range(q0, q1):
        start, end = offsets[q], offsets[q + 1]
        ref, t = _profile(z, clicked, start, end)
        loss[q] = 0.0
        if math.isnan(t):
            for i in range(start, end):
                grad[i] = 0.0
                hess[i] = 0.0
            continue
        curvature = 0.0
        for i in range(start, end):
            value, g, h = _terms((z[i] - ref) + t, clicked[i])
            grad[i] = g
            hess[i] = h
            curvature += h
            if want_loss:
                loss[q] += value
        if profiled and curvature > 0.0:  # 0 where the scores separate the clicks beyond float64's reach
            for i in range(start, end):
                hess[i] *= 1.0 - hess[i] / curvature


def cloglog_loss(z, clicked, offsets, grad, hess, want_loss, profiled=True) -> np.ndarray:
    """Per-query loss; ``grad`` and ``hess`` filled (:func:`cloglog_kernel`), over offset
    scores ``z`` and 0/1 ``clicked`` (uint8)."""
    loss = np.empty(offsets.size - 1)
    over_queries(cloglog_kernel, offsets, z, clicked, offsets, grad, hess, want_loss, loss, profiled,
                 min_rows=MIN_ROWS_PER_THREAD_LIGHT)
    return loss


def saturated_positions(clicks, position, offsets, n_positions: int, reduce=None) -> np.ndarray:
    r"""Positions 1..n_positions whose shown rows were clicked in every query where a click
    says anything (one that has both clicked and unclicked shown rows).

    There the likelihood of :func:`pbm_cloglog` rises without end in :math:`\theta_p`: with
    each query's factor free, a position that is always clicked is best explained as always
    examined enough, and its rows carry no information on the order. Left in, its
    propensity runs off to infinity and every other one, relative to it, to the floor.
    Leaving its rows out can leave a query without a click, which then says nothing either:
    repeated until nothing changes. ``reduce`` sums the per-position counts over the workers
    of a distributed training (every worker calls this together).
    """
    clicked = np.asarray(clicks) > 0
    shown = np.asarray(position) >= 1
    at = np.maximum(position, 1) - 1
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(sizes.size), sizes)
    saturated = np.zeros(n_positions, dtype=bool)
    while True:
        kept = shown & ~saturated[at]
        n_kept = np.bincount(query[kept], minlength=sizes.size)
        n_clicked = np.bincount(query[kept & clicked], minlength=sizes.size)
        telling = kept & ((n_clicked > 0) & (n_clicked < n_kept))[query]
        counts = sum_over_workers(np.concatenate([
            np.bincount(at[telling & clicked], minlength=n_positions).astype(np.float64),
            np.bincount(at[telling & ~clicked], minlength=n_positions).astype(np.float64)]), reduce)
        now = saturated | ((counts[:n_positions] > 0) & (counts[n_positions:] == 0))
        if np.array_equal(now, saturated):
            return saturated
        saturated = now


def estimate_cloglog_propensity(scores, clicks, position, offsets, n_positions: int, *, start=None,
                                n_rounds: int = _ESTIMATE_ROUNDS, reduce=None, saturated=None) -> np.ndarray:
    r"""Propensities :math:`\hat\theta_p`, p = 1..n_positions, of the complementary log-log
    position-based model, relative to the top-most position with clicks (NaN at positions
    without a click), from 0/1 clicks and the model's scores.

    Maximises the likelihood of :func:`pbm_cloglog` over the propensities: it alternates
    the per-query factors (profiled exactly) with one Newton step in every
    :math:`\log \theta_p` (at most 2 in size), ``n_rounds`` times, from ``start`` (relative
    propensities, one per position) or from equal ones. The rows at saturated positions
    (:func:`saturated_positions`, or ``saturated`` where the caller has them) take no part,
    and those positions, like the ones without a click, get NaN: their likelihood has no
    finite maximum. ``reduce`` sums the per-position sums over the workers of a distributed
    training (:class:`gbrank.engines.Statistics`), as in
    :func:`gbrank.objectives.propensity.estimate_propensity`.
    """
    shown = position >= 1
    at = np.maximum(position, 1) - 1
    clicked = (np.asarray(clicks) > 0).astype(np.uint8)
    if saturated is None:
        saturated = saturated_positions(clicks, position, offsets, n_positions, reduce)
    position_clicks = sum_over_workers(np.bincount(at[shown], weights=clicked[shown], minlength=n_positions), reduce)
    position_clicks[saturated] = 0.0
    # a position without a click has theta -> 0 at the optimum, a saturated one theta -> inf:
    # the rows of either drop out
    keep = shown & (position_clicks[at] > 0)
    sizes = np.diff(offsets)
    per_query = np.bincount(np.repeat(np.arange(sizes.size), sizes)[keep], minlength=sizes.size)
    kept_offsets = np.concatenate(([0], np.cumsum(per_query))).astype(np.int64)
    s = np.asarray(scores, dtype=np.float64)[keep]
    c = clicked[keep]
    p = at[keep]
    log_theta = np.zeros(n_positions) if start is None else np.log(np.maximum(np.asarray(start, dtype=np.float64),
                                                                              _MIN_PROPENSITY))
    grad = np.empty(s.size)
    hess = np.empty(s.size)
    for _ in range(n_rounds):
        cloglog_loss(s + log_theta[p], c, kept_offsets, grad, hess, False, profiled=False)
        sums = sum_over_workers(np.concatenate([np.bincount(p, weights=grad, minlength=n_positions),
                                                np.bincount(p, weights=hess, minlength=n_positions)]), reduce)
        g, h = sums[:n_positions], sums[n_positions:]
        moved = h > 0
        log_theta[moved] -= np.clip(g[moved] / h[moved], -_MAX_LOG_STEP, _MAX_LOG_STEP)
    theta = np.exp(log_theta - log_theta.max())
    return _Estimate(theta, 1.0, 1.0, position_clicks, "free").relative()


class PBMCloglog(OffsetClickObjective):
    """Position-based model likelihood of binary clicks (complementary log-log link); build
    it with :func:`pbm_cloglog`."""

    factory = "pbm_cloglog"
    #: A query whose shown rows were all clicked, or none, has no profiled factor: it says
    #: nothing of their order and gets no gradient (unlike the IPS losses' unbiased estimate).
    ignores_orderless_queries = True

    def __init__(self, propensity: Any, *, clip: float | None, **settings: Any) -> None:
        if settings.get("propensity_model", "free") != "free":
            raise ValueError(
                f"pbm_cloglog estimates one propensity per position (propensity_model='free'), got "
                f"propensity_model={settings['propensity_model']!r}: the monotone and power curves are fitted "
                "for the click-count model; use them with pbm_listnet, ips_listnet or ips_ranknet"
            )
        super().__init__(propensity, clip=clip, **settings)

    def _label_check(self, y_true, offsets):
        clicks = super()._label_check(y_true, offsets)
        binary = (clicks == 0) | (clicks == 1)
        if not binary.all():
            row, q = _first_bad(~binary, offsets)
            raise ValueError(
                f"pbm_cloglog takes binary clicks (1: clicked in any session, 0: not); y_true[{row}] = "
                f"{clicks[row]:g} at row {row} (query {q}). For click counts use pbm_listnet, ips_listnet or "
                "ips_ranknet"
            )
        return clicks

    def _saturated_positions(self, clicks, position, offsets, n_positions, reduce):
        return saturated_positions(clicks, position, offsets, n_positions, reduce)

    def _fit_propensity(self, scores, state, n_positions, start):
        return estimate_cloglog_propensity(scores, state["clicks"], state["fit_position"], state["offsets"],
                                           n_positions,
                                           start=start, reduce=state["reduce"], saturated=state["saturated"])

    def _interval(self, state, scores, *, n_boot: int, level: float, seed):
        raise ValueError(
            "the bootstrap interval (gbrank.objectives.propensity_trust) is of the click-count model's estimate; "
            "pbm_cloglog's estimate has none: compare it with pbm_listnet's, or give the propensities"
        )

    def _bind(self, state) -> None:
        # the kernel's rows (the shown ones) clicked or not: fixed for the training set
        clicks = state["clicks"] if state["shown"] is None else state["clicks"][state["shown"]]
        state["clicked"] = (clicks > 0).astype(np.uint8)

    def _kernel(self, state, scores, at, weight, inverse, offsets, grad, hess, want_loss):
        z = scores if inverse is None else scores + state["offset"]
        return cloglog_loss(z, state["clicked"], offsets, grad, hess, want_loss)


@click_doc
def pbm_cloglog(
    propensity: Any = "estimate",
    *,
    clip: float | None = None,
    warmup: int = 10,
    update_every: int = 5,
    propensity_model: str = "free",
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> PBMCloglog:
    r"""Position-based model likelihood of binary clicks, with a complementary log-log link.

    .. math::

        L(s) = \min_{\kappa_q > 0} \sum_{i \in q} \Big[(1 - c_i)\,\lambda_i
               - c_i \log\big(1 - e^{-\lambda_i}\big)\Big], \qquad
        \lambda_i = \kappa_q \theta_{p_i} e^{s_i},

    per query, over its shown rows, with :math:`c_i \in \{0, 1\}` whether row :math:`i` was
    clicked in any session (the labels) and :math:`\theta_{p_i}` the propensity of its
    display position. It is the likelihood of clicks that saturate: a document examined
    often enough is clicked whatever its position, which the click-count model of
    :func:`gbrank.pbm_listnet` and the IPS losses takes for flat position bias. Use it for
    logs that keep a 0/1 click per shown document; for click counts use
    :func:`gbrank.pbm_listnet`. See :mod:`gbrank.objectives.clicks_cloglog` for the
    derivation and the estimator.

    Parameters
    ----------
    propensity : "estimate", array-like or None, default="estimate"
        ``"estimate"``: estimated from the clicks jointly with the model, by this
        likelihood (the binding's ``propensity_`` after training). An array: the known
        propensities :math:`\theta_1, \theta_2, \dots` of positions 1, 2, .... None: no
        offsets (the naive loss); positions are not read.
    clip : None
        Refused: the propensities are offsets of the scores, not weights.
    warmup : int, default=10
        Boosting iterations on the starting estimate (at equal scores within each query)
        before the first re-estimation from the scores (``"estimate"`` only).
    update_every : int, default=5
        Iterations between re-estimations (``"estimate"`` only).
    propensity_model : {"free"}, default="free"
        One value per position; the other curves of the click-count model are refused.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Returns
    -------
    PBMCloglog

    Notes
    -----
    {click_notes}

    Examples
    --------
    >>> import numpy as np, gbrank
    >>> y, s = np.array([1.0, 0.0, 1.0, 0.0]), np.array([0.5, 1.0, -0.5, 0.2])  # one query
    >>> objective = gbrank.pbm_cloglog(propensity=[1.0, 0.5, 0.25, 0.125])
    >>> round(objective.loss(y, s, group=[4], position=[1, 2, 3, 4]), 4)
    3.6769
    >>> objective.grad_hess(y, s, group=[4], position=[1, 2, 3, 4])[0].round(4).tolist()
    [-0.4334, 1.2285, -0.933, 0.138]
    """
    return PBMCloglog(
        propensity, clip=clip, warmup=warmup, update_every=update_every, hess_floor=hess_floor, hess_scale=hess_scale,
        propensity_model=propensity_model
    )
