r"""How far to trust an estimate of the propensities: a bootstrap interval, and a check that
the log can identify them at all.

Sampling error
--------------
:func:`propensity_interval` resamples the *queries* of the log with replacement (a query's
clicks are not independent of each other: they share its relevance and its per-query factor
:math:`\kappa_q`), re-fits the propensities on each resample with the model's scores held
fixed, and reports each position's percentile interval (Efron and Tibshirani, *An
Introduction to the Bootstrap*, 1993, ch. 13). It measures how much the clicks' noise moves
the estimate, nothing else: the scores are taken as the relevance, so the error of a
relevance model that absorbed part of the position effect is not in it.

Identification
--------------
Without interventions the propensities are identified only through the positions that the
features do not explain: the model sees the features, not the positions, so where a
document's position is a function of its features, the model can learn
:math:`\log\theta_{p} + \log\gamma` as well as :math:`\log\gamma`, and no amount of clicks
tells the two apart. :func:`position_predictability` measures how much of the variation of
the log position within queries (the part the per-query factor does not absorb) a quick
gradient-boosted fit on the features predicts on held-out queries; :func:`check_identification`
warns with :class:`PropensityIdentificationWarning` when it is near all of it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._validation import check_float, check_int
from ..groups import check_group
from .propensity import _alternate, check_positions
from .propensity_models import check_propensity_model

__all__ = [
    "PropensityIdentificationWarning",
    "PropensityInterval",
    "check_identification",
    "position_predictability",
    "propensity_interval",
]


class PropensityIdentificationWarning(UserWarning):
    """The click log cannot tell the propensities from relevance: the display positions are
    (almost) a function of the features."""


@dataclass(frozen=True)
class PropensityInterval:
    """A propensity estimate with per-position bootstrap bounds.

    Attributes
    ----------
    estimate : ndarray of shape (n_positions,)
        The estimate on the whole log, relative to the top-most position with clicks.
    lower, upper : ndarray of shape (n_positions,)
        Percentile bounds over the resamples (NaN where fewer than half the resamples give
        the position a value).
    level : float
        The nominal coverage of each position's interval.
    draws : ndarray of shape (n_boot, n_positions)
        The estimate on each resample (NaN where it gives the position no value).
    """

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    draws: np.ndarray

    @property
    def relative_width(self) -> np.ndarray:
        """``(upper - lower) / estimate`` per position: a width of 1 is an estimate
        uncertain by its own size."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (self.upper - self.lower) / self.estimate


def propensity_interval(scores, clicks, position, group, *, n_positions: int | None = None,
                        propensity_model: str = "free", fit_slope: bool = True, n_boot: int = 200,
                        level: float = 0.9, n_rounds: int = 30, seed: int | None = 0) -> PropensityInterval:
    r"""Bootstrap interval over queries of the propensity estimate, the scores held fixed.

    The estimate is :func:`gbrank.objectives.propensity.estimate_propensity`'s with the same
    settings; each of the ``n_boot`` resamples draws as many queries as the log has, with
    replacement, and re-fits from the whole log's estimate.

    Parameters
    ----------
    scores : array-like of shape (n_rows,)
        The model's scores on the logged rows (for instance ``booster.predict(X)`` after
        training with ``propensity="estimate"``).
    clicks : array-like of shape (n_rows,)
        Clicks per row.
    position : array-like of int, shape (n_rows,)
        Display positions, 1 at the top, -1 for rows never shown.
    group : array-like of shape (n_queries,)
        Query sizes; each query's rows are contiguous.
    n_positions : int, optional
        Positions to estimate; default the deepest one shown.
    propensity_model : {"free", "monotone", "power"}, default="free"
        The curve (:mod:`gbrank.objectives.propensity_models`); the objective's own, to
        bound its estimate.
    fit_slope : bool, default=True
        Fit the slope of the relevance link (False for :func:`gbrank.pbm_listnet`, whose
        scores are the log-relevance).
    n_boot : int, default=200
        Resamples.
    level : float, default=0.9
        Nominal coverage of each position's interval, in (0, 1).
    n_rounds : int, default=30
        Alternations of each fit.
    seed : int or None, default=0
        Seed of the resampling.

    Returns
    -------
    PropensityInterval
    """
    clicks = np.asarray(clicks, dtype=np.float64)
    offsets = check_group(group, clicks.shape[0])
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != clicks.shape:
        raise ValueError(f"scores has shape {scores.shape} but clicks has {clicks.shape}: give one score per row")
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"scores[{row}] is not finite")
    if clicks.size and (not np.isfinite(clicks).all() or clicks.min() < 0):
        row = int(np.flatnonzero(~(np.isfinite(clicks) & (clicks >= 0)))[0])
        raise ValueError(f"clicks[{row}] = {clicks[row]!r}: clicks must be finite and non-negative")
    pos = check_positions(position, clicks, offsets, None)
    if not (pos >= 1).any():
        raise ValueError("no row was shown (every position is -1): there is nothing to estimate")
    deepest = int(pos.max())
    n_positions = deepest if n_positions is None else check_int("n_positions", n_positions, min=deepest)
    model = check_propensity_model(propensity_model)
    n_boot = check_int("n_boot", n_boot, min=2)
    level = check_float("level", level, min=0.0, strict=True)
    if level >= 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    n_rounds = check_int("n_rounds", n_rounds, min=1)
    return _interval(scores, clicks, pos, offsets, n_positions, model=model, fit_slope=bool(fit_slope),
                     n_boot=n_boot, level=level, n_rounds=n_rounds, seed=seed)


def _interval(scores, clicks, pos, offsets, n_positions, *, model, fit_slope, n_boot, level, n_rounds,
              seed) -> PropensityInterval:
    """:func:`propensity_interval` on checked inputs."""
    settings = {"n_rounds": n_rounds, "reduce": None, "fit_slope": fit_slope, "model": model}
    whole = _alternate(scores, clicks, pos, offsets, n_positions, **settings)
    rng = np.random.default_rng(seed)
    n_queries = offsets.size - 1
    draws = np.empty((n_boot, n_positions))
    for b in range(n_boot):
        counts = rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries)).astype(np.float64)
        draws[b] = _alternate(scores, clicks, pos, offsets, n_positions, query_weight=counts, start=whole,
                              **settings).relative()
    valid = np.isfinite(draws)
    tail = 100.0 * (1.0 - level) / 2.0
    lower = np.full(n_positions, np.nan)
    upper = np.full(n_positions, np.nan)
    enough = valid.sum(axis=0) >= n_boot / 2
    if enough.any():
        lower[enough] = np.nanpercentile(draws[:, enough], tail, axis=0)
        upper[enough] = np.nanpercentile(draws[:, enough], 100.0 - tail, axis=0)
    return PropensityInterval(estimate=whole.relative(), lower=lower, upper=upper, level=level, draws=draws)


def position_predictability(X, position, group, *, max_rows: int = 50_000, seed: int | None = 0) -> float:
    r"""Share of the within-query variance of the log position that the features predict.

    The target is :math:`\log p_i` minus its query's mean over the shown rows (a per-query
    constant is absorbed by the per-query factor of the click model, so only the variation
    within queries confounds relevance); a gradient-boosted regression on the features
    (scikit-learn's ``HistGradientBoostingRegressor``, 100 iterations) is fitted on half
    the queries and scored by :math:`R^2` on the other half, and the other way round, on
    at most ``max_rows`` shown rows of whole queries. Near 1: the positions are a function of
    the features, and the log cannot identify the propensities; near 0: the positions vary
    independently of the features (a randomised logging policy). Queries with one shown row
    carry no within-query variation and are left out.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        The features the ranking model is trained on.
    position : array-like of int, shape (n_rows,)
        Display positions, 1 at the top, -1 for rows never shown.
    group : array-like of shape (n_queries,)
        Query sizes; each query's rows are contiguous.
    max_rows : int, default=50_000
        Shown rows used at most (whole queries, drawn at random).
    seed : int or None, default=0
        Seed of the split into halves and of the row subsample.

    Returns
    -------
    float
        Cross-fitted :math:`R^2`, at most 1 (below 0 where the fit predicts worse than the
        query means).
    """
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (rows, features), got shape {X.shape}")
    offsets = check_group(group, X.shape[0])
    pos = check_positions(position, np.zeros(X.shape[0]), offsets, None)
    max_rows = check_int("max_rows", max_rows, min=2)
    sizes = np.diff(offsets)
    query = np.repeat(np.arange(sizes.size), sizes)
    shown = pos >= 1
    per_query = np.bincount(query[shown], minlength=sizes.size)
    rng = np.random.default_rng(seed)
    candidates = rng.permutation(np.flatnonzero(per_query >= 2))
    if candidates.size < 2:
        raise ValueError("position_predictability needs at least two queries with two or more shown rows")
    chosen = candidates[: max(2, int(np.searchsorted(np.cumsum(per_query[candidates]), max_rows, side="right")))]
    keep = shown & np.isin(query, chosen)
    q = query[keep]
    target = np.log(pos[keep].astype(np.float64))
    _, local = np.unique(q, return_inverse=True)
    target = target - (np.bincount(local, weights=target) / np.bincount(local))[local]
    total = float(np.sum(target ** 2))
    if total <= 0:
        return 0.0
    half = np.isin(q, chosen[: chosen.size // 2])
    residual = 0.0
    for train in (half, ~half):
        model = HistGradientBoostingRegressor(max_iter=100, random_state=0 if seed is None else seed)
        # one thread: a check, not the training; on a shared machine more threads cost more than they save
        with threadpool_limits(1):
            model.fit(X[keep][train], target[train])
            predicted = model.predict(X[keep][~train])
        # the prediction's own per-query mean is absorbed by the per-query factor too
        centred = predicted - (np.bincount(local[~train], weights=predicted, minlength=local.max() + 1)
                               / np.maximum(np.bincount(local[~train], minlength=local.max() + 1), 1))[local[~train]]
        residual += float(np.sum((target[~train] - centred) ** 2))
    return 1.0 - residual / total


def check_identification(X, position, group, *, threshold: float = 0.5, max_rows: int = 50_000,
                         seed: int | None = 0) -> float:
    """Warn when the features predict the display positions so well that the log cannot
    identify the propensities; return :func:`position_predictability`.

    Parameters
    ----------
    X, position, group, max_rows, seed
        As :func:`position_predictability`.
    threshold : float, default=0.5
        The predictability (cross-fitted :math:`R^2`) from which it warns. On simulated logs
        (lists of 1 to about 70 documents), the estimates a training ended with were 0.06-0.35
        (``pbm_listnet``) and 0.32-3.0 (``ips_listnet``) off in mean absolute log error over
        positions 1-10 from logs at 0.5 or above whose logging order follows relevance, and
        0.03-0.08 and 0.05-0.23 from logs below 0.4 (the docs' page on clicks, "How far to
        trust the estimate").

    Returns
    -------
    float
        The predictability.

    Warns
    -----
    PropensityIdentificationWarning
        When the predictability is at least ``threshold``, naming what to do.
    """
    threshold = check_float("threshold", threshold, min=0.0)
    if threshold > 1.0:
        raise ValueError(f"threshold must lie in [0, 1], got {threshold!r}")
    r2 = position_predictability(X, position, group, max_rows=max_rows, seed=seed)
    if r2 >= threshold:
        warnings.warn(
            f"the features predict {r2:.0%} of the variation of the display positions within queries "
            f"(warning from {threshold:.0%}): the model can learn much of the position from them, so this log "
            "identifies the propensities weakly or not at all, and propensity='estimate' leans towards where it "
            "starts (each position's click rate). Randomise part of the traffic (shuffle or swap the top "
            "positions in a share of the sessions), pool the logs of several rankers or A/B tests so that "
            "documents appear at several positions, or pass known propensities (propensity=[...]) measured "
            "by such an experiment",
            PropensityIdentificationWarning, stacklevel=2,
        )
    return r2
