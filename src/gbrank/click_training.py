r"""The recommended way to learn from clicks: the rounds chosen on held-out clicks.

A click objective with estimated propensities has no relevance labels to early-stop on, and
its result depends on the number of boosting rounds. :func:`fit_clicks` chooses them on the
clicks themselves: it holds out a share of the queries, trains on the others for up to
``max_rounds`` rounds, records after every round the held-out queries' click likelihood
under the position-based model (:func:`click_likelihood`), takes the round that minimises
it, and refits on every query for that many rounds.

The criterion
-------------
Under the position-based model a click on the shown document :math:`i` of query :math:`q`
has :math:`E[c_i] \propto \theta_{p_i} \gamma_i`. Given the number :math:`C_q` of the
query's clicks, they are multinomial over its shown documents, with

.. math::

    \pi_i(\tau) = \frac{\theta_{p_i} e^{\tau s_i}}{\sum_{j \in q} \theta_{p_j} e^{\tau s_j}},
    \qquad
    \ell(\tau) = -\frac{1}{\sum_q C_q} \sum_q \sum_{i \in q} c_i \log \pi_i(\tau),

the relevance :math:`\gamma_i \propto e^{\tau s_i}` given by the model's scores :math:`s`
and the propensities :math:`\theta` the fit estimated (or were given). The criterion is
:math:`\min_{\tau \ge 0} \ell(\tau)`: the temperature :math:`\tau` is profiled, one scalar
fitted on the held-out clicks at every round.

Why a temperature: only :func:`gbrank.pbm_listnet` has scores on the scale of
:math:`\log \gamma` (it maximises this likelihood); :func:`gbrank.ips_listnet`'s are at its
optimum but not along the way, and :func:`gbrank.ips_ranknet`'s never are (a pairwise
logistic loss sets their scale by its own ``sigma``, whatever the relevance). At
:math:`\tau = 1` the criterion would judge the scale of the scores as much as their order,
and choose the round at which the scale happens to fit: on a simulated log (lists of 2 to
60 documents, known propensities) ``ips_ranknet(sigma=4)`` with :math:`\tau` held at 1
chose 122 and 39 rounds for two seeds, where the profiled criterion chose 5 and 10 (test
NDCG@10 0.467 and 0.599 against 0.554 and 0.642; the best rounds in hindsight were 7 and 9).
With :math:`\tau` profiled it is the
same for :math:`s` and :math:`a s` (any :math:`a > 0`), and for a shift of a query's scores,
so it measures how well the scores' ordering and spacing explain the held-out clicks, for
every objective alike. It is one parameter fitted on all the held-out clicks, so it adds
next to no freedom. :math:`\tau \ge 0` keeps a model whose order is reversed from being rewarded for
it (at :math:`\tau = 0` the scores explain nothing and the position alone is left).
:math:`\ell` is convex in :math:`\tau` (a log-sum-exp of linear functions), so the profile
is a one-dimensional convex minimisation.

Rows never shown (position -1) take no part, nor do the rows at positions an estimate takes
as never examined (below a fold: see :mod:`gbrank.objectives.propensity`; the fit trains
without them, and counted as examined without a click they would reward a model for learning
the logging order) or, for :func:`gbrank.pbm_cloglog`, as saturated (clicked wherever a
click says anything; the fit trains without them too): the binding's ``left_out_``. A query
without clicks contributes nothing.
The propensities are those of the round's own fit: an estimate moves as boosting goes on,
and the refit after :math:`k` rounds ends with the estimate made at its round :math:`k`, so
the curve judges each round as the refit would stand there, scores and estimate together.
At :math:`k` up to the objective's ``warmup`` the estimate is still the starting one (each
position's click rate); where the curve chooses such a round, ``propensity_`` is that.

The propensities first
----------------------
On click counts the default fits the propensities before it chooses any rounds
(:func:`fit_propensity`): :func:`gbrank.pbm_listnet` with ``propensity="estimate"`` is
trained on every query for ``max_rounds`` rounds, and ``pbm_listnet`` is then trained with
the estimate it ended with held, on the rows the estimate takes as examined. Why: the joint
estimate starts from each position's click rate, too steep by as much as the logging ranker
is good, and leaves it only as fast as the model learns, so that at the few dozen rounds the
criterion chooses it is still near its start; the refit ended with it. The long training
lets it move (``pbm_listnet`` and its estimate maximise one likelihood, so the training is a
joint maximum-likelihood fit), while the rounds are chosen for the ranking alone. On the
simulated worlds of the clicks benchmark (1,000 queries, seeds 0 to 2, LightGBM) this took
the lists of 2 to 111 documents from 54% to 73% of the gap between raw clicks and true
labels (the seed whose logging ranker was best from 6% to 39%), the mean over the ten
position-based worlds from 80% to 83%, and no world lost more than a point. The other
objectives keep their own estimates: :func:`gbrank.ips_ranknet`'s, which fits a slope of its
own, flattens far past the truth in a long training (11.5 times it at position 20 after 300
rounds), and trained with it held ``ips_ranknet`` closed less in six of seven worlds;
:func:`gbrank.pbm_cloglog` on 0/1 clicks closed less too (57% to 37%).

The long training runs twice, from the click rates and from flat propensities, and the
estimate held is the geometric mean of the two ends (see :func:`fit_propensity`): where the
features predict the logging order, each end stays near its start, the first too steep and
the second too flat. With a better logging ranker than the benchmark's (fitted on 1% of the
queries instead of 0.2%) the steep end alone over-corrected so far that the model ranked
worse than the raw clicks.

Rows never shown
----------------
A row at position -1 (a document the log holds but did not show, as below a top-k cut-off)
has no propensity, and by default takes no part: what the model learns of such documents
comes from their features alone. Where the logging ranker is good, what it left out is
worse than what it showed, and a corrected model, which has seen nothing of it, lifts too
much of it into its top ranks (on a simulated log of a better logging ranker's top 10 of
30, 42% of its top 10 were documents never shown, against 17% for the raw clicks' model).
``fit_clicks(never_shown=share)`` trains the default objective with each such row one
position past the deepest, exposed at ``share`` times the deepest examined position's
propensity, without a click, in the fit and in the criterion alike: the prior that the
logging ranker put it low for a reason. ``propensity_`` and ``left_out_`` stay those of
the positions shown.

On the simulated worlds of the clicks benchmark with rows never shown
(``benchmarks/bench_clicks.py --unshown-worlds``; LightGBM, 1,000 queries, seeds 0 to 2),
``never_shown=0.03`` against the default, in test NDCG@10:

- with a better logging ranker (fitted on 1% or 5% of the queries instead of 0.2%) it
  helps in all four worlds: the top 5 of 30 shown 0.636 against 0.565, the top 10 0.639
  against 0.625 (seeds 0 to 9: 0.677 against 0.664, ahead of LightGBM's ``position`` mode
  in eight seeds of ten, against two), lists of 2 to 111 with the top 10 shown 0.640
  against 0.604, the logger fitted on 5% 0.650 against 0.624;
- with the weak logging ranker it costs where many documents are left out: the top 5 of
  30 0.547 against 0.619 (LightGBM's mode 0.580), lists of 2 to 111 0.627 against 0.636,
  trust bias 0.609 against 0.627; it changes less than 0.004 with the top 10 of 30, at
  :math:`\eta = 2`, on long-tailed lists and under cascade clicks.

The clicks cannot tell which log is which: no click falls on a row never shown, and the
spread of :func:`fit_propensity`'s two starts, which grows with the logging ranker's
strength, overlapped between the weak logger's worlds and the better ones'. So it is not
the default; where the logging ranker is a good one (a production ranker usually is),
compare both on a few queries with relevance labels. 0.03 was chosen among 0.01, 0.03 and
0.1 on the top-10 worlds (seeds 0 to 4); 0.1 did better with the better logger and cost
the weak one's top 10 a fifth of the gap.

Comparing objectives
--------------------
Each objective's curve judges its rounds with its own estimate of the propensities, and the
estimates differ between objectives (:func:`gbrank.pbm_listnet` fits them by this very
likelihood, the IPS objectives by regression-EM on their scores). To compare objectives,
the held-out fit of each at its chosen round is scored by the same likelihood minimised over
the temperature and the propensities both, fitted on the held-out clicks:
:math:`\min_{\tau \ge 0, \theta} \ell(\tau, \theta)`. Every candidate gets the same freedom,
so the comparison is of how well the scores explain the clicks, whatever the candidate's own
estimate. On the simulated worlds of the clicks benchmark (500 queries, seeds 0 to 2, the
held-out fits), choosing between ``ips_ranknet`` and ``pbm_listnet`` this way picked the one
with the better test NDCG@10 in 67% of the cases, against 56% with each candidate's own
estimate, and closed 56% of the gap between raw clicks and true labels on average against
51% for either alone.

Where every click is 0 or 1, the default is :func:`gbrank.pbm_cloglog` alone: clicks that
say whether each row was clicked in any of its sessions saturate, and the click-count
objectives' propensity estimate takes that for flat position bias (see
:mod:`gbrank.objectives.clicks_cloglog`). Its rounds are chosen on the criterion above,
with its own estimate of the propensities. The values cannot say what a 0/1 click is:
``aggregate`` does. A row per document shown in each session is a count over one session
as much as a click in any of one: ``aggregate="count"`` trains such rows with the procedure
on counts. On the clicks benchmark's world of such rows from a deterministic logging
ranker (the top 10 of 30 shown, 20 sessions per query, 1,000 queries, seeds 0 to 2) that
closed 86% of the gap between raw clicks and true labels, against 76% for the default; on
the sessions of a Plackett–Luce policy the default was level with it on 1,000 queries and
ahead on 300 (see the page on learning from clicks).

With cascade targets (:func:`gbrank.cascade_targets`) the exposure of a held-out row is its
expected number of examinations, :math:`\sum_s P_{s,i}`, in place of
:math:`\theta_{p_i}`: known, the same for every round and every candidate.

Cascade clicks
--------------
The cascade targets are each row's clicks per examination, its examinations read from the
clicks above it in every session. A session without a click reads to them as every document
examined, yet users also leave a list without clicking. Given the positions as well, each
examined row's target is trained as its clicks at its position, with the default on click
counts, so that a position-based examination :math:`\theta_p` (how far down users read when
nothing above was clicked) is estimated on top of the cascade's: a click is then expected
:math:`\theta_{p_i} \gamma_i` times per examination the cascade model counts. On the cascade
worlds of the clicks benchmark (1,000 queries, seeds 0 to 4) the targets alone closed 83%
and 62% of the gap between raw clicks and true labels with the top 10 and every document
shown, and none of it where users may leave (-6% and -2%); with the positions 82%, 93%, 80%
and 83%. Where users leave steeply (:math:`\theta_p = p^{-2}`), 62%, behind the
position-based default on the click counts (72%).

The L2 penalty
--------------
Clicks are noisy labels, and the engines' default L2 penalties on the leaf values (0 in
LightGBM, 1 in XGBoost) let leaves of a few dozen rows fit the noise. Where ``params`` set
none, every training here (the propensities' fit, the held-out fits and the refit) has
:data:`CLICK_L2`, 200, on click counts and cascade targets, and :data:`BINARY_CLICK_L2`,
1000, where every click is 0 or 1 (unless ``aggregate="count"``): a row's one bit is the
noisiest label of all. On the
thirteen simulated worlds of the clicks benchmark (1,000 queries, seeds 0 to 4, LightGBM)
200 took the share of the gap closed from 83% to 88% on average over the ten position-based
worlds, 0/1 clicks from 59% to 76%, and was ahead of no penalty in 52 of the 65 world and
seed pairs; 100 and 500 were within a point of 200. On 0/1 clicks 1000 took the binary
world from 76% to 78% and the Plackett–Luce log from 55% to 62% (seeds 0 to 4), and the
eight variations of the binary world from 50% to 55% on average (seeds 0 to 2).

For the same reason LightGBM trains trees of :data:`CLICK_NUM_LEAVES`, 15 leaves, where
``params`` set no ``num_leaves`` (LightGBM's default is 31; the benchmark's worlds train with
15). On six of those worlds (fixed and uniform 2-111 lists, the top 10 shown, long-tailed
lists with a fold at 30, 0/1 clicks, cascade clicks; seeds 0 to 2) 31 leaves closed 81% of
the gap on average and 15 leaves 86% at learning rate 0.1, 85% and 88% at 0.05; 15 leaves
were ahead in every world at both rates.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import engines as _engines
from ._validation import check_bool, check_choice, check_float, check_int
from .engines._common import FRONT_END_PARAMS, refuse_params
from .engines.statistics import Statistics
from .groups import group_offsets

__all__ = ["BINARY_CLICK_L2", "CLICK_L2", "CLICK_NUM_LEAVES", "ClickFit", "HeldOutClickLikelihood", "PropensityFit", "click_likelihood",
           "fit_clicks", "fit_propensity"]

#: The name under which the engines report the held-out criterion.
METRIC_NAME = "click_nll"

#: The L2 penalty on leaf values that :func:`fit_clicks` and :func:`fit_propensity` train with
#: on click counts where ``params`` set none (LightGBM's ``lambda_l2``, XGBoost's ``lambda``):
#: see "The L2 penalty" above.
CLICK_L2 = 200.0

#: The same, where every click is 0 or 1 (unless ``aggregate="count"``).
BINARY_CLICK_L2 = 1000.0

#: The leaves per tree that :func:`fit_clicks` and :func:`fit_propensity` train LightGBM with
#: where ``params`` set none (LightGBM's default is 31): see "The L2 penalty" above.
CLICK_NUM_LEAVES = 15

# the parameter's names in each engine, the first the one set
_L2_NAMES = {"lightgbm": ("lambda_l2", "reg_lambda", "lambda", "l2_regularization"),
             "xgboost": ("lambda", "reg_lambda")}
_LEAVES_NAMES = ("num_leaves", "num_leaf", "max_leaves", "max_leaf", "max_leaf_nodes")

# profiling the temperature: a root of the derivative to this relative tolerance
_TAU_ITERATIONS = 200
_TAU_TOLERANCE = 1e-10
# comparing objectives: rounds of the propensities' fit on the held-out clicks at most
_THETA_ITERATIONS = 1000


def _default_objectives(*, cascade: bool) -> list:
    """The default objectives where the propensities are not fitted first: cascade targets
    and 0/1 clicks (counts: :func:`fit_propensity`, then ``pbm_listnet``)."""
    from .objectives import ips_ranknet, pbm_cloglog

    return [ips_ranknet(propensity=None)] if cascade else [pbm_cloglog()]


# ----------------------------------------------------------------------------- the criterion
def _check_finite_scores(scores: np.ndarray, rows: np.ndarray) -> None:
    """Refuse a non-finite score of the held-out ``rows``, naming the first."""
    if not np.isfinite(scores).all():
        at = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"the score of held-out row {int(rows[at])} is {scores[at]}: scores must be finite")


class _HeldOut:
    """The held-out clicks of the shown rows, per query, ready to score against each shown
    row's exposure (its propensity, or its expected number of examinations)."""

    def __init__(self, clicks: np.ndarray, offsets: np.ndarray, shown: np.ndarray) -> None:
        sizes = np.diff(offsets)
        query = np.repeat(np.arange(sizes.size), sizes)
        self.n_rows = clicks.size
        self.shown = np.flatnonzero(shown)
        self.query = query[shown]
        self.n_queries = sizes.size
        self.clicks = clicks[shown]
        self.query_clicks = np.bincount(self.query, weights=self.clicks, minlength=self.n_queries)
        self.total = float(self.query_clicks.sum())

    def _moments(self, s: np.ndarray, tau: float, log_theta: np.ndarray):
        """Per row the log of pi(tau); the derivative and the curvature of the summed loss."""
        z = tau * s + log_theta
        top = np.full(self.n_queries, -np.inf)
        np.maximum.at(top, self.query, z)
        e = np.exp(z - top[self.query])
        norm = np.bincount(self.query, weights=e, minlength=self.n_queries)
        pi = e / norm[self.query]
        log_pi = z - top[self.query] - np.log(norm[self.query])
        mean = np.bincount(self.query, weights=pi * s, minlength=self.n_queries)
        second = np.bincount(self.query, weights=pi * s * s, minlength=self.n_queries)
        grad = float(np.sum(self.query_clicks * mean) - np.sum(self.clicks * s))
        curvature = float(np.sum(self.query_clicks * (second - mean * mean)))
        return log_pi, grad, curvature

    def loss(self, scores: np.ndarray, log_theta: np.ndarray, tau: float | None) -> tuple[float, float]:
        """The criterion (per click) and the temperature it was taken at: ``tau`` if given,
        else the profiled one. ``log_theta``: the log exposure of each shown row."""
        s = np.asarray(scores, dtype=np.float64)[self.shown]
        _check_finite_scores(s, self.shown)
        if tau is None:
            tau = self._profile(s, log_theta)
        value, _ = self._at(s, tau, log_theta)
        return value, tau

    def _at(self, s: np.ndarray, tau: float, log_theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The criterion (per click) and each shown row's log pi at the temperature ``tau``."""
        log_pi, _, _ = self._moments(s, tau, log_theta)
        return -float(np.sum(self.clicks * log_pi)) / self.total, log_pi

    def _profile(self, s: np.ndarray, log_theta: np.ndarray) -> float:
        # the loss is convex in tau, so its derivative is increasing: a safeguarded Newton
        # search for its root within a bracket [lo, hi] that always holds it
        _, grad, _ = self._moments(s, 0.0, log_theta)
        if grad >= 0:
            return 0.0  # the scores explain the clicks no better than the positions alone
        lo, hi = 0.0, 1.0 / max(float(np.std(s)), 1e-12)
        for _ in range(_TAU_ITERATIONS):
            _, grad, _ = self._moments(s, hi, log_theta)
            if grad >= 0:
                break
            lo, hi = hi, 2.0 * hi
        else:
            return hi  # the scores separate the clicks perfectly: the loss falls without end
        tau = 0.5 * (lo + hi)
        for _ in range(_TAU_ITERATIONS):
            _, grad, curvature = self._moments(s, tau, log_theta)
            # the temperature returned is one whose derivative was taken: a Newton step that
            # lands on the root moves no further, and must not fall back to the bracket's middle
            if abs(grad) <= _TAU_TOLERANCE * self.total:
                break
            if grad > 0:
                hi = tau
            else:
                lo = tau
            if hi - lo <= _TAU_TOLERANCE * hi:
                break
            step = tau - grad / curvature if curvature > 0 else np.nan
            tau = step if lo < step < hi else 0.5 * (lo + hi)
        return float(tau)


def _check_theta(propensity, max_position: int) -> np.ndarray:
    theta = np.asarray(propensity, dtype=np.float64)
    if theta.ndim != 1 or theta.size < max_position:
        raise ValueError(
            f"propensity has {theta.size} values but a shown row is at position {max_position}: give one "
            "propensity per position, up to the deepest one shown"
        )
    if not (np.isfinite(theta[:max_position]).all() and (theta[:max_position] > 0).all()):
        raise ValueError("propensities must be finite and > 0 at every shown position")
    return theta


def _profiled_queries(scores, clicks, offsets, position) -> tuple[np.ndarray, float]:
    r"""Each query's negative log-likelihood of its clicks at the minimum of the criterion
    with the propensities fitted on these clicks as well,
    :math:`\min_{\tau \ge 0,\, \theta} \ell(\tau, \theta)`, and the number of clicks.

    Positions without a click here get :math:`\theta_p \to 0` at the optimum, so their rows
    drop out. For a given :math:`\tau` the propensities are updated by iterative
    proportional fitting (each position's clicks over those the model expects there, the
    update of the Poisson model with a factor per query, whose conditional is this
    multinomial), alternated with the temperature's profile until the loss stops falling.
    """
    shown = position >= 1
    at = np.maximum(position, 1) - 1
    clicked_at = np.bincount(at[shown], weights=clicks[shown], minlength=int(position.max()))
    clicked = clicked_at > 0
    held = _HeldOut(clicks, offsets, shown & clicked[at])
    pos = at[held.shown]
    s = np.asarray(scores, dtype=np.float64)[held.shown]
    _check_finite_scores(s, held.shown)
    log_theta = np.zeros(clicked_at.size)
    value, best = np.inf, None
    for _ in range(_THETA_ITERATIONS):
        z = log_theta[pos]
        new, log_pi = held._at(s, held._profile(s, z), z)
        done = value - new <= _TAU_TOLERANCE * abs(new)
        if new < value:
            value, best = new, log_pi
        if done:
            break
        expected = np.bincount(pos, weights=held.query_clicks[held.query] * np.exp(log_pi),
                               minlength=clicked_at.size)
        log_theta[clicked] += np.log(clicked_at[clicked]) - np.log(expected[clicked])
        log_theta -= log_theta[clicked].max()
    return -np.bincount(held.query, weights=held.clicks * best, minlength=held.n_queries), held.total


def click_likelihood(scores, clicks, group=None, *, qid=None, position, propensity,
                     temperature: float | None = None) -> tuple[float, float]:
    r"""Held-out click likelihood under the position-based model, per click.

    .. math::

        \min_{\tau \ge 0} -\frac{1}{\sum_i c_i} \sum_q \sum_{i \in q} c_i
        \log \frac{\theta_{p_i} e^{\tau s_i}}{\sum_{j \in q} \theta_{p_j} e^{\tau s_j}}

    over the shown rows (see :mod:`gbrank.click_training` for why the temperature
    :math:`\tau` is profiled). Lower is better.

    Parameters
    ----------
    scores : array-like of shape (n_rows,)
        The model's scores.
    clicks : array-like of shape (n_rows,)
        Clicks per row (counts or 0/1).
    group : array-like of int, optional
        Query sizes (or ``qid``: a query id per row, rows of a query together).
    qid : array-like, optional
    position : array-like of int, shape (n_rows,)
        Display position per row, 1 at the top, -1 if never shown.
    propensity : array-like
        :math:`\theta_1, \theta_2, \dots`, one per position up to the deepest shown.
    temperature : float, optional
        Hold :math:`\tau` at this value instead of profiling it (1: the scores as
        log-relevances, as :func:`gbrank.pbm_listnet` fits them).

    Returns
    -------
    loss, temperature : float, float
        The criterion and the :math:`\tau` it was taken at.
    """
    clicks, offsets, position = _check_log(clicks, group, qid, position)
    held = _HeldOut(clicks, offsets, position >= 1)
    if held.total == 0:
        raise ValueError("no shown row has a click: the click likelihood needs clicks")
    theta = _check_theta(propensity, int(position.max()))
    tau = check_float("temperature", temperature, min=0.0, optional=True)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != clicks.shape:
        raise ValueError(f"scores has shape {scores.shape} but there are {clicks.size} rows")
    return held.loss(scores, np.log(theta[position[held.shown] - 1]), tau)


class HeldOutClickLikelihood:
    r"""The held-out click likelihood (:func:`click_likelihood`) as an engine metric.

    For ``lgb.train(feval=metric.lightgbm, valid_sets=[held_out_set])`` or
    ``xgb.train(custom_metric=metric.xgboost, evals=[(held_out_dmatrix, "held_out")])``:
    after every round it scores the held-out rows with the propensities the objective's fit
    on ``train_set`` holds at that round (its binding's ``propensity_``, without the rows at
    the positions of its ``left_out_``; known ones as given), profiles the temperature,
    and reports ``click_nll`` (lower is better), which
    the engines' early stopping can watch. It records each round's value (``curve``), its
    temperature and, for an estimate, the propensities.

    Parameters
    ----------
    objective : gbrank click objective
        The objective being trained (the one given to :func:`gbrank.engines.with_position`).
    train_set : lightgbm.Dataset or xgboost.DMatrix
        The training set it is trained on.
    clicks, group, position
        The held-out rows' clicks, query sizes and display positions (-1: never shown), in
        the held-out set's row order.
    """

    def __init__(self, objective, train_set, clicks, group, *, position) -> None:
        _check_objective(objective)
        self._bind_rows(objective, train_set, *_check_log(clicks, group, None, position))

    @classmethod
    def _checked(cls, objective, train_set, clicks, offsets, position) -> HeldOutClickLikelihood:
        """The metric on rows already checked as a log: :func:`fit_clicks`'s, whose positions
        after the propensities are settled may leave a query no examined row (a results page
        nobody reached), which then takes no part."""
        metric = cls.__new__(cls)
        metric._bind_rows(objective, train_set, clicks, offsets, position)
        return metric

    def _bind_rows(self, objective, train_set, clicks, offsets, position) -> None:
        self.objective = objective
        self.train_set = train_set
        self._start(clicks, offsets, position >= 1)
        self._rows = (clicks, offsets, position)
        self._left_out = np.zeros(0, dtype=bool)
        self._deepest = int(position.max())
        self.propensity: list[np.ndarray] = []

    def _start(self, clicks, offsets, shown) -> None:
        self._held = _HeldOut(clicks, offsets, shown)
        if self._held.total == 0:
            raise ValueError("the held-out rows have no click on a shown row: hold out queries with clicks")
        self.curve: list[float] = []
        self.temperature: list[float] = []

    def __call__(self, scores) -> float:
        scores = np.asarray(scores, dtype=np.float64).ravel()
        if scores.size != self._held.n_rows:
            raise ValueError(
                f"the metric got {scores.size} scores for {self._held.n_rows} held-out rows: give it only "
                "the held-out set (valid_sets / evals), not the training set"
            )
        log_exposure = self._log_exposure()
        value, tau = self._held.loss(scores, log_exposure, None)
        self.curve.append(value)
        self.temperature.append(tau)
        return value

    def lightgbm(self, preds, data):
        """LightGBM ``feval``: ``("click_nll", value, False)``."""
        return METRIC_NAME, self(preds), False

    def xgboost(self, predt, dmat):
        """XGBoost ``custom_metric``: ``("click_nll", value)`` (minimise it)."""
        return METRIC_NAME, self(predt)

    def _theta(self) -> np.ndarray:
        if self.objective.mode == "known":
            return _check_theta(self.objective.propensity, self._deepest)
        theta = self.objective.binding(self.train_set).propensity_
        if theta.size < self._deepest:
            raise ValueError(
                f"the propensity estimate covers positions 1..{theta.size} and a held-out row is at position "
                f"{self._deepest}: train with gbrank.engines.PositionedObjective(objective, position, "
                "gbrank.engines.Statistics(n_positions=<deepest position of all rows>))"
            )
        return theta

    def _log_exposure(self) -> np.ndarray:
        theta = self._theta()
        clicks, offsets, position = self._rows
        if self.objective.mode == "estimate":
            self.propensity.append(theta.copy())
            # rows at positions the fit leaves out take no part, as in its loss: counted as
            # examined without a click, rows below a fold would reward a model for the logging order
            left_out = self.objective._left_out_positions(self.objective.binding(self.train_set).state)
            if not np.array_equal(left_out, self._left_out):
                from .objectives.propensity import examined_rows

                self._left_out = left_out
                self._held = _HeldOut(clicks, offsets, examined_rows(position, left_out))
                if self._held.total == 0:
                    raise ValueError(
                        "every held-out click is at a position the fit leaves out (never examined, or saturated): "
                        "hold out other queries (another seed), or give the propensities"
                    )
        return np.log(theta[position[self._held.shown] - 1])


class _ExaminationLikelihood(HeldOutClickLikelihood):
    """The held-out criterion with each row's expected number of examinations as its
    exposure (cascade targets): the same at every round, whatever the objective."""

    def __init__(self, clicks, offsets, examinations) -> None:
        self.train_set = None
        self._start(clicks, offsets, examinations > 0)
        self._log_examinations = np.log(examinations[self._held.shown])

    def _log_exposure(self) -> np.ndarray:
        return self._log_examinations


# ----------------------------------------------------------------------------- inputs
def _check_log(clicks, group, qid, position):
    clicks = np.asarray(clicks, dtype=np.float64)
    if clicks.ndim != 1:
        raise ValueError(f"clicks must be 1-d, one value per row, got shape {clicks.shape}")
    offsets = group_offsets(clicks.size, group=group, qid=qid)
    bad = ~np.isfinite(clicks) | (clicks < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"clicks[{row}] = {clicks[row]:g}: clicks must be finite counts >= 0")
    if position is None:
        raise ValueError(
            "position is required: the display position of every row (1 = top, -1 = never shown), "
            "which the click likelihood and the propensities are about"
        )
    position = _engines.positions.check(position, clicks.size, offsets)
    unseen = (position == -1) & (clicks > 0)
    if unseen.any():
        row = int(np.flatnonzero(unseen)[0])
        q = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ValueError(
            f"row {row} (query {q}) has {clicks[row]:g} clicks but position -1 (never shown): a document "
            "that was not shown cannot be clicked; give its display position"
        )
    sizes = np.diff(offsets)
    shown = np.bincount(np.repeat(np.arange(sizes.size), sizes), weights=position >= 1, minlength=sizes.size)
    if (shown == 0).any():
        q = int(np.flatnonzero(shown == 0)[0])
        raise ValueError(
            f"query {q} (rows {int(offsets[q])}..{int(offsets[q + 1]) - 1}) has no shown row (every position "
            "is -1): it holds no click information; drop it, or give its display positions"
        )
    return clicks, offsets, position


def _check_engine(engine) -> None:
    if engine not in ("lightgbm", "xgboost"):
        raise ValueError(f"engine must be 'lightgbm' or 'xgboost', got {engine!r}")


def _check_rows(X, n_rows: int, what: str = "clicks has") -> None:
    if len(X.shape) != 2:
        raise ValueError(f"X must be a matrix of features (n_rows, n_features), got shape {X.shape}")
    if X.shape[0] != n_rows:
        raise ValueError(f"X has {X.shape[0]} rows but {what} {n_rows}")


def _check_objective(objective) -> None:
    from .objectives.propensity import ClickObjective

    if not isinstance(objective, ClickObjective):
        raise TypeError(
            f"objective must be a gbrank click objective (gbrank.ips_ranknet(), gbrank.ips_listnet(), "
            f"gbrank.pbm_listnet(), gbrank.pbm_cloglog()), got {objective!r}"
        )
    if objective.mode == "weighted_labels":
        raise ValueError(
            f"{objective.factory}(propensity=None) reads no positions and holds no propensities, which the "
            "held-out click likelihood needs: use propensity='estimate' or the known propensities"
        )


def _check_cascade_objective(objective) -> None:
    from .objectives.propensity import ClickObjective

    if not isinstance(objective, ClickObjective) or objective.mode != "weighted_labels" \
            or objective.factory in ("pbm_listnet", "pbm_cloglog"):
        raise ValueError(
            f"with cascade targets the clicks are already weighted by their examinations: give an IPS objective "
            f"without propensities, gbrank.ips_ranknet(propensity=None) or gbrank.ips_listnet(propensity=None), "
            f"got {objective!r}"
        )


def _abandonment_log(targets, position) -> tuple[np.ndarray, np.ndarray]:
    """Cascade targets given with positions, as a log of clicks: each examined row's target
    (its clicks per examination, on the scale of its sessions) at its position; the rows the
    sessions never examined at position -1, so that they take no part."""
    position = np.asarray(position)
    if position.shape != targets.targets.shape:
        raise ValueError(f"position must hold one display position per row of the cascade targets "
                         f"({targets.targets.size}), got shape {position.shape}")
    moved = np.flatnonzero(targets.examined & (targets.position == 0))
    if moved.size:
        raise ValueError(f"the sessions show row {int(moved[0])} at more than one rank: an examination per position "
                         "needs each row at one rank, as a deterministic ranker shows it; leave position out")
    differ = np.flatnonzero(targets.examined & (position != targets.position))
    if differ.size:
        row = int(differ[0])
        raise ValueError(f"position[{row}] = {position[row].item()!r}, but the sessions show row {row} at rank "
                         f"{int(targets.position[row])}: give the positions of the sessions (CascadeTargets.position)")
    return np.where(targets.examined, targets.targets, 0.0), np.where(targets.examined, position, -1)


def _cascade_log(X, targets, group, qid):
    """The examined rows of cascade targets, the queries left with none dropped: their row
    indices, training labels, clicks, expected examinations, query offsets and the indices of
    the queries kept."""
    n_rows = targets.targets.size
    offsets = group_offsets(n_rows, group=group, qid=qid)
    _check_rows(X, n_rows, "the cascade targets have")
    rows = np.flatnonzero(targets.examined)
    if rows.size == 0:
        raise ValueError("no row of the cascade targets was examined: the sessions hold no click information")
    sizes = np.diff(offsets)
    kept = np.bincount(np.repeat(np.arange(sizes.size), sizes)[rows], minlength=sizes.size)
    return (rows, targets.targets[rows], targets.clicks[rows], targets.examinations[rows],
            np.concatenate(([0], np.cumsum(kept[kept > 0]))), np.flatnonzero(kept > 0))


def _split(offsets: np.ndarray, clicks: np.ndarray, held_out: float, seed: int | None) -> np.ndarray:
    """The held-out queries, a mask: ``held_out`` of them at random, with clicks (of shown
    rows) on both sides."""
    n_queries = offsets.size - 1
    sizes = np.diff(offsets)
    query_clicks = np.bincount(np.repeat(np.arange(n_queries), sizes), weights=clicks, minlength=n_queries)
    n_held = round(held_out * n_queries)
    if n_held < 1 or n_held >= n_queries:
        raise ValueError(
            f"held_out={held_out:g} of {n_queries} queries holds out {n_held}: at least one query must be held "
            "out and one trained on; give more queries or change held_out"
        )
    held = np.zeros(n_queries, dtype=bool)
    held[np.random.default_rng(seed).choice(n_queries, n_held, replace=False)] = True
    for side, name in ((held, "held-out"), (~held, "training")):
        if query_clicks[side].sum() == 0:
            raise ValueError(
                f"the {name} queries have no click (held_out={held_out:g}, seed={seed}): give more queries with "
                "clicks, or change held_out or seed"
            )
    return held


# ----------------------------------------------------------------------------- training
@dataclass
class PropensityFit:
    r"""The propensities of the position-based model, fitted by a long joint training
    (:func:`fit_propensity`).

    Attributes
    ----------
    propensity_ : ndarray of shape (n_positions,)
        :math:`\hat\theta_p` for positions 1, 2, ..., the deepest given, relative to
        the first position a row was shown at (position 1, unless the log starts lower);
        a value nothing reads at the positions of ``left_out_``.
    left_out_ : ndarray of bool, shape (n_positions,)
        The positions the estimate takes as never examined (clickless below a fold), and
        those no row was shown at.
    position : ndarray of int, shape (n_rows,)
        The positions given, with -1 at the rows of the positions left out: train with
        ``propensity_`` on these, so that those rows take no part.
    rounds : int
        The rounds of the joint training.
    params : dict
        The engine parameters it trained with: those given, with ``verbose`` and the L2
        penalty (:data:`CLICK_L2`, or :data:`BINARY_CLICK_L2` on 0/1 clicks unless
        ``aggregate="count"``) added where they set none.
    from_click_rates, from_flat : ndarray of shape (n_positions,)
        The estimates of the two trainings, from each position's click rate and from flat
        propensities; ``propensity_`` is their geometric mean. How far apart they are says
        how weakly the log identifies the propensities.
    """

    propensity_: np.ndarray
    left_out_: np.ndarray
    position: np.ndarray
    rounds: int
    params: dict
    from_click_rates: np.ndarray
    from_flat: np.ndarray


@dataclass
class ClickFit:
    """A click objective's model, its rounds chosen on held-out clicks (:func:`fit_clicks`).

    Attributes
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        The model: refitted on every query for ``best_rounds`` rounds, or (``refit=False``)
        the held-out fit, of which ``predict`` uses the first ``best_rounds`` rounds.
    engine : str
        ``"lightgbm"`` or ``"xgboost"``.
    objective : gbrank click objective
        The objective trained.
    best_rounds : int
        The number of rounds that minimises ``curve``.
    curve : ndarray of shape (max_rounds,)
        The held-out click likelihood per click after rounds 1, 2, ..., max_rounds.
    temperature : ndarray of shape (max_rounds,)
        The temperature profiled at each round.
    propensity_ : ndarray or None
        The propensities the model ends with: the refit's estimate (the held-out fit's at
        ``best_rounds`` without refit), or the known ones; None with cascade targets (whose
        examinations are per session, not per position). At the positions of ``left_out_``
        it is a value nothing read.
    left_out_ : ndarray of bool or None
        Of positions 1..K of ``propensity_``, those whose rows took no part in training (found
        never examined below a fold, or saturated for :func:`gbrank.pbm_cloglog`) and those
        no training row was shown at: give their rows position -1 wherever ``propensity_`` is
        used as known propensities. None with cascade targets.
    feature_names_in_ : ndarray of str or None
        The columns of ``X`` where it was a DataFrame; :meth:`predict` refuses a DataFrame
        with others or in another order.
    held_out_queries : ndarray of int
        The held-out queries' indices (among all the queries given).
    refitted : bool
        Whether ``booster`` was refitted on every query.
    candidates : tuple
        The objectives compared (one, unless several were given).
    selection : ndarray of shape (len(candidates),)
        Per candidate, the held-out click likelihood per click of its chosen round with the
        propensities fitted on the held-out clicks (with cascade targets: ``curve``'s
        minimum); ``objective`` is the candidate with the lowest.
    propensity_fit : PropensityFit or None
        The propensities fitted first (the default on click counts, :func:`fit_propensity`):
        the objective holds them, and rows at the positions they leave out were trained as
        never shown. None otherwise.
    params : dict
        The engine parameters every training used: those given, with ``verbose`` (LightGBM)
        and the L2 penalty (:data:`CLICK_L2`, or :data:`BINARY_CLICK_L2` on 0/1 clicks
        unless ``aggregate="count"``) added where they set none.
    held_out_gain : (float, float) or None
        How much better than the positions alone the chosen held-out fit explains the
        held-out clicks: the criterion of ``selection`` for a model without scores minus
        that of ``objective`` (per click), and its standard error over the held-out queries.
        Where the first is not above the second, :func:`fit_clicks` warns: the held-out
        clicks could not tell the model from none, so its rounds were chosen on noise. None
        with cascade targets.
    """

    booster: Any
    engine: str
    objective: Any
    best_rounds: int
    curve: np.ndarray
    temperature: np.ndarray
    propensity_: np.ndarray
    held_out_queries: np.ndarray
    refitted: bool
    candidates: tuple
    selection: np.ndarray
    params: dict
    propensity_fit: PropensityFit | None = None
    held_out_gain: tuple[float, float] | None = None
    left_out_: np.ndarray | None = None
    feature_names_in_: np.ndarray | None = None

    def predict(self, X) -> np.ndarray:
        """Scores (float64) of the rows of ``X`` from the chosen rounds; higher ranks first.
        Fitted on a DataFrame, a DataFrame must have its columns in the same order (LightGBM
        reads columns by place and would score others silently)."""
        columns = getattr(X, "columns", None)
        if self.feature_names_in_ is not None and columns is not None and \
                list(columns) != list(self.feature_names_in_):
            raise ValueError(f"X has the columns {list(columns)}, and the fit had {list(self.feature_names_in_)}: "
                             "pass X[fit.feature_names_in_]")
        return _engines.predict(self.booster, X, self.best_rounds)


def _held_out_gain(per_query: np.ndarray, clicks, offsets, position, best: int) -> tuple[float, float]:
    """How much better than the positions alone the chosen model explains the held-out
    clicks: the difference of the two profiled criteria (per click), and its standard error
    over the held-out queries. Warns where the difference is within one standard error."""
    alone, total = _profiled_queries(np.zeros(clicks.size), clicks, offsets, position)
    difference = alone - per_query
    gain = float(difference.sum()) / total
    error = float(np.sqrt(difference.size) * np.std(difference, ddof=1)) / total if difference.size > 1 else np.inf
    if not gain > error:
        warnings.warn(
            f"the held-out clicks hardly tell the model at its chosen round ({best}) from the positions alone: "
            f"its held-out click likelihood is better by {gain:.3g} per click, within one standard error "
            f"({error:.3g} over {difference.size} held-out queries), so the rounds were chosen on noise and the "
            "model may rank no better than the raw clicks. Give more queries or more sessions per query, or "
            "check the model on queries with relevance labels (ClickFit.held_out_gain holds both figures)",
            UserWarning, stacklevel=3,
        )
    return gain, error


def _as_matrix(X):
    """``X`` as the fits take rows of it: an array, a DataFrame, or a sparse matrix in CSR
    form (COO has no rows to take; CSC takes them slowly)."""
    if not hasattr(X, "shape"):
        return np.asarray(X)
    return X.tocsr() if hasattr(X, "tocsr") else X


def _take(X, rows: np.ndarray):
    """The rows of ``X`` (an array, a DataFrame or a sparse matrix) at positions ``rows``."""
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def _train(engine: str, params: dict, X, clicks, sizes, objective, position, rounds: int, n_positions: int,
           metric: tuple | None = None):
    """Train ``rounds`` rounds; returns the booster and the training set (whose binding holds
    the estimate). ``position`` None: an objective that reads none (cascade targets).
    ``metric``: (held-out X, labels, sizes, the metric object)."""
    bound = objective if position is None else _engines.PositionedObjective(objective, position,
                                                                            Statistics(n_positions=n_positions))
    if engine == "lightgbm":
        from .engines import lightgbm as lgb_engine

        dtrain = lgb_engine.dataset(X, clicks, sizes, params=params, free_raw_data=False)
        valid, feval = [], None
        if metric is not None:
            Xh, ch, gh, evaluate = metric
            evaluate.train_set = dtrain
            valid, feval = [lgb_engine.dataset(Xh, ch, gh, params=params, reference=dtrain)], evaluate.lightgbm
        booster, _ = lgb_engine.train(params, dtrain, bound, num_boost_round=rounds, valid=valid,
                                      valid_names=["held_out"] * len(valid), feval=feval)
        return booster, dtrain
    from .engines import xgboost as xgb_engine

    dtrain = xgb_engine.dmatrix(X, clicks, sizes)
    evals, custom = [], None
    if metric is not None:
        Xh, ch, gh, evaluate = metric
        evaluate.train_set = dtrain
        evals, custom = [(xgb_engine.dmatrix(Xh, ch, gh), "held_out")], evaluate.xgboost
    booster, _ = xgb_engine.train(params, dtrain, bound, num_boost_round=rounds, evals=evals, custom_metric=custom)
    return booster, dtrain


def _fit_propensity(engine: str, params: dict, X, clicks, sizes, position, rounds: int) -> PropensityFit:
    from .objectives import pbm_listnet
    from .objectives.propensity import examined_rows

    ends = []
    for start in ("click_rate", "flat"):
        objective = pbm_listnet(propensity="estimate", start=start)
        _, dtrain = _train(engine, params, X, clicks, sizes, objective, position, rounds, int(position.max()))
        ends.append(objective.binding(dtrain))
    # both leave out the same positions: found from the clicks alone
    left_out = ends[0].left_out_
    # rows never shown are -1 already
    kept = np.where(examined_rows(position, left_out), position, -1)
    from_click_rates, from_flat = (binding.propensity_ for binding in ends)
    return PropensityFit(propensity_=np.sqrt(from_click_rates * from_flat), left_out_=left_out, position=kept,
                         rounds=rounds, params=dict(params), from_click_rates=from_click_rates, from_flat=from_flat)


def _with_never_shown(settled: PropensityFit, position: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """The propensities and positions to train on once they are fitted: with ``share``, the
    rows never shown one position past the deepest, exposed at ``share`` of the deepest
    examined position's propensity."""
    theta = settled.propensity_
    if share == 0 or not (position == -1).any():
        return theta, settled.position
    return (np.append(theta, share * theta[~settled.left_out_][-1]),
            np.where(position == -1, theta.size + 1, settled.position))


def fit_propensity(
    X,
    clicks,
    group=None,
    *,
    qid=None,
    position=None,
    engine: Literal["lightgbm", "xgboost"] = "lightgbm",
    params: dict | None = None,
    rounds: int = 300,
    aggregate: Literal["count", "binary"] | None = None,
) -> PropensityFit:
    r"""Fit the propensities of the position-based model by a long joint training, for
    click counts.

    :func:`gbrank.pbm_listnet` with ``propensity="estimate"`` is trained on every query for
    ``rounds`` rounds, and the estimate it ends with is returned. That objective and its
    estimate maximise one likelihood, :math:`E[c_i] = \theta_{p_i} \kappa_q e^{s_i}`, so the
    training alternates between the two halves of a joint maximum-likelihood fit (the
    scores by boosting, the propensities by :mod:`gbrank.objectives.propensity`'s exact
    updates). The estimate starts from each position's click rate, which overstates the
    decay by as much as the logging ranker is good, and moves away from it only as fast as
    the model learns: after the rounds a ranking model should stop at, it is still close to
    where it started. :func:`fit_clicks` therefore fits the propensities first, with this
    function, and then trains with them held.

    On the simulated logs of the page on learning from clicks (lists of 2 to 111 documents,
    every one shown, 50 sessions, seed 1), the estimate at positions 2, 5, 10 and 20 was
    0.85, 0.64, 0.55 and 0.50 of the truth at the start, 0.91, 0.76, 0.70, 0.67 after 50
    rounds and 0.92, 0.80, 0.77, 0.77 after 300.

    Where the features predict the logging order, the log identifies the propensities
    weakly, and a long training ends near where it started. So the joint training runs
    twice, from the click rates (too steep) and from flat propensities (``start="flat"``:
    too flat, as the scores take up what the positions explain), and ``propensity_`` is the
    geometric mean of the two ends, ``from_click_rates`` and ``from_flat``. With every
    document of 30 shown and a logging ranker fitted on 1% of the queries (seed 0), the
    ends were 0.93, 0.80 and 0.80 and 1.12, 1.21 and 1.44 of the truth at positions 2, 5 and
    10; with one fitted on 0.2%, 0.99, 1.01 and 1.06 and 1.13, 1.35 and 1.48. An estimate
    too steep over-corrects, and where the logging ranker is good that ranks worse than the
    raw clicks; one too flat under-corrects, and ranks between the raw clicks and the
    truth.

    Parameters
    ----------
    X, clicks, group, qid, position, engine, params
        As :func:`fit_clicks` (``clicks``: counts per row, or a row per document shown in
        each session; for clicks that say whether a row was clicked in any of its sessions
        the click-count model takes saturation for flat position bias, see
        :func:`gbrank.pbm_cloglog`; ``params`` without an L2 penalty get :data:`CLICK_L2`,
        or on 0/1 clicks :data:`BINARY_CLICK_L2` unless ``aggregate="count"``, and
        LightGBM's without ``num_leaves`` :data:`CLICK_NUM_LEAVES`, as there).
    aggregate : {"count", "binary"}, optional
        What a 0/1 click is, as in :func:`fit_clicks`; here it sets only the L2 penalty.
    rounds : int, default=300
        Rounds of the joint training.

    Returns
    -------
    PropensityFit
        ``propensity_``, ``left_out_``, the ``position`` to train with, and the two ends.

    Examples
    --------
    >>> import gbrank
    >>> from gbrank.datasets import make_ranking, simulate_clicks
    >>> data = make_ranking(200, (5, 30), 10, seed=0)
    >>> log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, seed=0)
    >>> est = gbrank.fit_propensity(data.X, log.clicks, data.group, position=log.position, rounds=50)
    >>> est.propensity_[0] == 1.0 and est.propensity_.shape == (10,)
    True
    >>> fit = gbrank.fit_clicks(data.X, log.clicks, data.group, position=est.position,
    ...                         objective=gbrank.ips_ranknet(propensity=est.propensity_), max_rounds=40)
    """
    _check_engine(engine)
    rounds = check_int("rounds", rounds, min=1)
    aggregate = _check_aggregate(aggregate)
    X = _as_matrix(X)
    clicks, offsets, position = _check_log(clicks, group, qid, position)
    _check_rows(X, clicks.size)
    if not clicks.any():
        raise ValueError("the log has no click: nothing to estimate the propensities from (they would stay at 1)")
    params = _engine_params(engine, params, "fit_propensity trains gbrank.pbm_listnet(propensity='estimate') for "
                            "rounds= rounds with no metric: set the rounds with rounds=",
                            binary=_reads_binary(clicks, aggregate))
    return _fit_propensity(engine, params, X, clicks, np.diff(offsets), position, rounds)


def _engine_params(engine: str, params: dict | None, fix: str, *, binary: bool) -> dict:
    refuse_params(params, FRONT_END_PARAMS, fix)
    params = dict(params or {})
    if engine == "lightgbm":
        params.setdefault("verbose", -1)
        if not any(name in params for name in _LEAVES_NAMES):
            params["num_leaves"] = CLICK_NUM_LEAVES
    names = _L2_NAMES[engine]
    if not any(name in params for name in names):
        params[names[0]] = BINARY_CLICK_L2 if binary else CLICK_L2
    return params


def _check_aggregate(aggregate) -> str | None:
    return None if aggregate is None else check_choice("aggregate", aggregate, ("count", "binary"))


def _reads_binary(clicks: np.ndarray, aggregate: str | None) -> bool:
    """Whether the clicks are read as whether each row was clicked in any session: as
    ``aggregate`` says, or by default where every click is 0 or 1."""
    if aggregate is None:
        return bool(np.isin(clicks, (0.0, 1.0)).all())
    if aggregate == "binary":
        other = np.flatnonzero(~np.isin(clicks, (0.0, 1.0)))
        if other.size:
            raise ValueError(f"aggregate='binary' reads each row's click as whether it was clicked in any session, "
                             f"0 or 1; row {other[0]} has {float(clicks[other[0]])!r}: for clicks counted over the "
                             f"sessions pass aggregate='count'")
    return aggregate == "binary"


def fit_clicks(
    X,
    clicks,
    group=None,
    *,
    qid=None,
    position=None,
    objective=None,
    engine: Literal["lightgbm", "xgboost"] = "lightgbm",
    params: dict | None = None,
    max_rounds: int = 300,
    held_out: float = 0.2,
    seed: int | None = 0,
    refit: bool = True,
    never_shown: float = 0.0,
    aggregate: Literal["count", "binary"] | None = None,
) -> ClickFit:
    r"""Train a click objective, its number of rounds chosen on held-out clicks.

    The recommended procedure for learning to rank from a click log without relevance
    labels: ``held_out`` of the queries (at random, with ``seed``) are held out, the
    objective is trained on the others for ``max_rounds`` rounds, the held-out queries'
    click likelihood under the position-based model (:func:`click_likelihood`, with the
    temperature profiled and the propensities of each round's fit) is recorded after
    every round, the round that minimises it is chosen, and the objective is trained
    afresh on every query for that many rounds (its propensities estimated afresh). Of
    several objectives, the one whose chosen round explains the held-out clicks best is
    the one refit. On click counts the default fits the propensities first
    (:func:`fit_propensity`) and trains with them held.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Features (an array, a DataFrame or a scipy sparse matrix, as the engine takes it:
        XGBoost takes the entries a sparse matrix leaves out as missing values, LightGBM
        as zeros).
    clicks : array-like of shape (n_rows,), or CascadeTargets
        Clicks per row: counts over the sessions, or 0/1 (see ``aggregate``). Counts, not
        click rates: the L2 penalty below is set for counts, and rates (counts divided by
        the sessions) train as if each row had one session (the clicks benchmark's top 10
        shown, 50 sessions per query, seeds 0 and 1: 88% and 82% of the gap as rates, the
        second at ``max_rounds``, against 90% and 88% as counts). Or, for clicks
        that follow the cascade model (users read down the list and stop after a click), the targets of
        :func:`gbrank.cascade_targets` computed from the sessions: without ``position``, the
        objective (an IPS one with ``propensity=None``) is trained on them over the examined
        rows, and the criterion takes each held-out row's expected number of examinations in
        place of its position's propensity. With ``position``, for users who may also leave
        the list without a click: each examined row's target is taken as its clicks, and the
        procedure on click counts (the propensities fitted first, then ``pbm_listnet``) puts
        a position-based examination on top of the cascade's (``propensity_``: how far down
        users go when nothing above was clicked); see "Cascade clicks" in
        :mod:`gbrank.click_training`.
    group : array-like of int, optional
        Query sizes, the rows of each query together (or ``qid``). Where the log has a row
        per document shown in each session, give each query's sessions as one list, not a
        list per session: the held-out lists must not share documents with the
        trained ones, or the held-out clicks reward fitting those documents and the rounds
        run long (a Plackett–Luce log of 30 sessions per query: 239 and 294 rounds and 41%
        and −10% of the gap with a list per session, 160 and 62 rounds and 70% and 64% with
        one per query).
    qid : array-like, optional
        A query id per row, the rows of each query together.
    position : array-like of int, shape (n_rows,)
        The display position of each row, 1 at the top; -1 for a row logged but never shown
        (no clicks; it takes no part in the loss or the criterion, unless ``never_shown``).
        Required, except with cascade targets, where it asks for the examination beyond the
        cascade's (the rows the sessions never examined then take no part); it must be the
        rank at which the sessions showed each examined row (``CascadeTargets.position``),
        and a row shown at several ranks, as by a stochastic policy, is refused.
    objective : gbrank click objective or sequence of them, optional
        The objective to train, or several to compare: each is fitted on the same held-out
        split and its rounds chosen, and the one whose chosen round explains the held-out
        clicks best, with propensities fitted on those clicks for every candidate alike
        (``selection``), is refit. Default, on click counts: the propensities fitted first
        by :func:`fit_propensity` (``max_rounds`` rounds of ``gbrank.pbm_listnet()`` on every
        query; ``propensity_fit``), then ``gbrank.pbm_listnet`` with them held, the rows at
        the positions they leave out trained as never shown (see "The propensities first"
        in :mod:`gbrank.click_training`). Where every click is 0 or 1 (unless
        ``aggregate="count"``), ``gbrank.pbm_cloglog()`` alone: such clicks saturate, which
        the click-count model of the other two takes for flat position bias (on the simulated log that keeps
        whether a row was clicked in any of 10 sessions it closed 75% of the gap, against
        71% for ``pbm_listnet``, and was ahead or level in seven of eight variations of that
        log; on long lists of binary clicks both fall below the raw clicks in some seeds: see
        the page on learning from clicks). With cascade targets,
        default ``gbrank.ips_ranknet(propensity=None)``. Known propensities are used as
        given, in the loss and in the criterion of the rounds.
    engine : {"lightgbm", "xgboost"}, default="lightgbm"
    params : dict, optional
        The engine's parameters (``lgb.train``'s or ``xgb.train``'s), e.g. the learning
        rate; ``{"verbose": -1}`` is added for LightGBM unless given, and an L2 penalty on
        the leaf values of :data:`CLICK_L2` (200; LightGBM's ``lambda_l2``, XGBoost's
        ``lambda``), or :data:`BINARY_CLICK_L2` (1000) on 0/1 clicks (unless
        ``aggregate="count"``), unless
        ``params`` give one under any of its names: clicks are noisy labels, which the
        engines' defaults (0 and 1) let small leaves fit; in LightGBM also trees of
        :data:`CLICK_NUM_LEAVES` (15) leaves, unless ``params`` set ``num_leaves`` under
        any of its names (LightGBM's default is 31). The objective,
        the metrics and the rounds (with LightGBM's aliases, such as ``num_trees``) are set
        here and refused in ``params``.
    max_rounds : int, default=300
        Rounds of the held-out fit: the longest model considered.
    held_out : float, default=0.2
        Share of the queries held out to choose the rounds.
    seed : int or None, default=0
        Seed of the choice of held-out queries, drawn by their place in the order given:
        the same queries in another order hold out others (the rows within a query may
        come in any order).
    refit : bool, default=True
        Refit on every query for the chosen rounds (else keep the held-out fit, cut at them).
    never_shown : float in [0, 1), default=0
        With the default objective on click counts, the exposure of a row given position -1,
        relative to the deepest examined position's propensity: the row is trained (and
        judged by the criterion) as examined that much without a click, a sign that the
        logging ranker put it below what it showed. For logs from a strong logging ranker
        that showed its top few: see "Rows never shown" in :mod:`gbrank.click_training`,
        where 0.03 helped and where it cost. ``0`` leaves such rows out, as the other
        objectives do (a given objective, 0/1 clicks read as such and cascade targets
        refuse a value).
    aggregate : {"count", "binary"}, optional
        What a row's click says: ``"count"``, the number of sessions in which it was clicked;
        ``"binary"``, whether it was clicked in any of its sessions, 0 or 1 (as
        ``simulate_clicks(aggregate="binary")`` draws; a count above 1 is refused). By
        default, ``"binary"`` where every click is 0 or 1, else ``"count"``. The values
        cannot say which a 0/1 click is: where each row is one session's document, pass
        ``"count"`` for a deterministic logging ranker's sessions (on the clicks benchmark
        86% of the gap against 76% for the default; see "What a 0/1 click says" on the page
        on learning from clicks).

    Returns
    -------
    ClickFit
        ``booster``, ``objective``, ``best_rounds``, ``curve``, ``propensity_``,
        ``selection`` and ``predict(X)``.

    Examples
    --------
    >>> import gbrank
    >>> from gbrank.datasets import make_ranking, simulate_clicks
    >>> data = make_ranking(200, (5, 30), 10, seed=0)
    >>> log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, seed=0)
    >>> fit = gbrank.fit_clicks(data.X, log.clicks, data.group, position=log.position, max_rounds=40)
    >>> 1 <= fit.best_rounds <= 40 and fit.curve.shape == (40,)
    True

    Cascade clicks, from the sessions:

    >>> log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10,
    ...                       click_model="cascade", per_session=True, seed=0)
    >>> targets = gbrank.cascade_targets(log.session_rows, log.session_clicks, data.y.size, clip=0.2)
    >>> fit = gbrank.fit_clicks(data.X, targets, data.group, max_rounds=40)
    >>> fit.propensity_ is None and 1 <= fit.best_rounds <= 40
    True
    """
    _check_engine(engine)
    from .objectives.cascade import CascadeTargets

    targets_given = isinstance(clicks, CascadeTargets)
    # the cascade's examinations as the exposure; with positions, the position-based model on the targets
    cascade = targets_given and position is None
    max_rounds = check_int("max_rounds", max_rounds, min=1)
    held_out = check_float("held_out", held_out, min=0.0, strict=True)
    if held_out >= 1:
        raise ValueError(f"held_out must be a share of the queries in (0, 1), got {held_out!r}")
    seed = check_int("seed", seed, min=0, optional=True)
    refit = check_bool("refit", refit)
    aggregate = _check_aggregate(aggregate)
    never_shown = check_float("never_shown", never_shown, min=0.0)
    if never_shown >= 1:
        raise ValueError(f"never_shown is a share of the deepest examined position's propensity, in [0, 1): "
                         f"got {never_shown!r}")
    if objective is None:
        candidates = None  # the default depends on the clicks: see below
    elif isinstance(objective, (list, tuple)):
        candidates = list(objective)
        if not candidates:
            raise ValueError("objective is an empty sequence: give one click objective or several to compare")
    else:
        candidates = [objective]
    X = _as_matrix(X)
    if aggregate == "binary" and targets_given:
        raise ValueError("aggregate='binary' is for clicks that say whether each row was clicked in any session; "
                         "cascade targets are clicks per examination: leave aggregate out")
    settle = binary = False
    if targets_given and not cascade:
        # users who may leave without a click
        clicks, position = _abandonment_log(clicks, position)
    if cascade:
        candidates = candidates or _default_objectives(cascade=True)
        for candidate in candidates:
            _check_cascade_objective(candidate)
        rows, labels, clicks, examinations, offsets, queries = _cascade_log(X, clicks, group, qid)
        X = _take(X, rows)
        counted = clicks
    else:
        for candidate in candidates or ():
            _check_objective(candidate)
        clicks, offsets, position = _check_log(clicks, group, qid, position)
        _check_rows(X, clicks.size)
        # cascade targets are clicks per examination, however few: counts, not 0/1 clicks
        binary = _reads_binary(clicks, "count" if targets_given else aggregate)
        # on counts the default fits the propensities first: once the inputs are checked, below
        settle = candidates is None and not binary
        if candidates is None and not settle:
            candidates = _default_objectives(cascade=False)
        for candidate in candidates or ():
            if candidate.mode == "known":
                _check_theta(candidate.propensity, int(position.max()))
        labels, counted = clicks, clicks * (position >= 1)
        queries = np.arange(offsets.size - 1)
    if never_shown > 0 and (targets_given or not settle):
        why = ("the clicks are cascade targets" if targets_given
               else "the clicks are read as whether each row was clicked in any session (the default is "
                    "pbm_cloglog; aggregate='count' reads 0/1 clicks as counts)" if objective is None
               else "an objective was given")
        raise ValueError(f"never_shown applies to the default objective on click counts, which fits the "
                         f"propensities first; {why}: leave never_shown out")
    params = _engine_params(engine, params, "fit_clicks chooses the objective and the rounds on held-out clicks: "
                            "pass objective= and max_rounds=", binary=binary)
    sizes = np.diff(offsets)
    held_queries = _split(offsets, counted, held_out, seed)
    settled = None
    if settle:
        from .objectives import pbm_listnet

        settled = _fit_propensity(engine, params, X, clicks, sizes, position, max_rounds)
        theta, position = _with_never_shown(settled, position, never_shown)
        candidates = [pbm_listnet(propensity=theta)]
    held_rows = np.repeat(held_queries, sizes)
    fit_rows = np.flatnonzero(~held_rows)
    rows = np.flatnonzero(held_rows)
    held_offsets = np.concatenate(([0], np.cumsum(sizes[held_queries])))
    n_positions = 0 if cascade else int(position.max())
    train_position = None if cascade else position[fit_rows]

    fits = []
    for candidate in candidates:
        if cascade:
            metric = _ExaminationLikelihood(clicks[rows], held_offsets, examinations[rows])
        else:
            # each fit's estimate lives in the binding of its own training set: one objective serves both
            metric = HeldOutClickLikelihood._checked(candidate, None, clicks[rows], held_offsets, position[rows])
        booster, _ = _train(engine, params, _take(X, fit_rows), labels[fit_rows], sizes[~held_queries], candidate,
                            train_position, max_rounds, n_positions,
                            metric=(_take(X, rows), labels[rows], sizes[held_queries], metric))
        curve = np.asarray(metric.curve)
        if curve.size != max_rounds:
            raise RuntimeError(f"the held-out criterion was recorded {curve.size} times in {max_rounds} rounds")
        best = int(np.argmin(curve)) + 1
        if cascade:
            score, per_query = float(curve[best - 1]), None
        else:
            held_scores = _engines.predict(booster, _take(X, rows), best)
            per_query, total = _profiled_queries(held_scores, clicks[rows], held_offsets, position[rows])
            score = float(per_query.sum()) / total
        fits.append((candidate, booster, metric, curve, best, per_query, score))
    selection = np.array([fit[-1] for fit in fits])
    objective, booster, metric, curve, best, per_query, _ = fits[int(np.argmin(selection))]
    gain = None if cascade else _held_out_gain(per_query, clicks[rows], held_offsets, position[rows], best)

    theta = left_out = None
    if refit:
        booster, dtrain = _train(engine, params, X, labels, sizes, objective, None if cascade else position, best,
                                 n_positions)
        if objective.mode == "estimate":
            theta, left_out = objective.binding(dtrain).propensity_, objective.binding(dtrain).left_out_
    elif objective.mode == "estimate":
        theta, left_out = metric.propensity[best - 1], objective.binding(metric.train_set).left_out_
    if settled is not None:
        theta, left_out = settled.propensity_, settled.left_out_
    elif objective.mode == "known":
        theta = np.asarray(objective.propensity, dtype=np.float64)
        left_out = np.zeros(theta.size, dtype=bool)
    return ClickFit(booster=booster, engine=engine, objective=objective, best_rounds=best, curve=curve,
                    temperature=np.asarray(metric.temperature), propensity_=theta,
                    held_out_queries=queries[held_queries], refitted=refit, candidates=tuple(candidates),
                    selection=selection, params=dict(params), propensity_fit=settled, held_out_gain=gain,
                    left_out_=left_out,
                    feature_names_in_=np.asarray(X.columns, dtype=object) if hasattr(X, "columns") else None)
