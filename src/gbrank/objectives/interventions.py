r"""Propensities from interventions harvested across several logging rankers.

The idea
--------
Under the position-based model a document :math:`d` of query :math:`q` shown at position
:math:`k` is clicked with probability :math:`\theta_k \gamma_{qd}`. When the same pair
:math:`(q, d)` was shown at two positions :math:`k` and :math:`k'` (two rankers, an A/B test,
a randomised policy), its click-through rates there, :math:`\mathrm{CTR}_k(q, d)` and
:math:`\mathrm{CTR}_{k'}(q, d)`, have the ratio :math:`\theta_k / \theta_{k'}` whatever its
relevance: an intervention on the position, harvested from the logs instead of run
(Agarwal et al., "Estimating Position Bias without Intrusive Interventions", WSDM 2019).

The interventional sets
-----------------------
:math:`S_{kk'}` holds the pairs :math:`(q, d)` shown at both :math:`k` and :math:`k'`
(rows of the same query, document and position are summed first). Each pair enters both
sides of its set with one weight :math:`\omega`,

.. math::

    \hat c_{kk'} = \sum_{(q,d) \in S_{kk'}} \omega\, \mathrm{CTR}_k(q, d), \qquad
    \hat{\bar c}_{kk'} = \sum_{(q,d) \in S_{kk'}} \omega\, \big(1 - \mathrm{CTR}_k(q, d)\big),

so that :math:`E[\hat c_{kk'}] = \theta_k R_{kk'}` and :math:`E[\hat c_{k'k}] = \theta_{k'} R_{kk'}`
with one :math:`R_{kk'} = \sum \omega \gamma_{qd}` for both sides: the same weight on both
sides is what removes the relevance. ``weighting="harmonic"`` (default) takes
:math:`\omega = N_k N_{k'} / (N_k + N_{k'})`, :math:`N` the impressions at each position,
which is proportional to the inverse variance of the difference of the two rates and lets a
pair seen in a handful of sessions count little; ``"equal"`` takes :math:`\omega = 1`, each
pair's rates as they are (the paper's weighting for one session per logger and query).

The extremum estimator
----------------------
AllPairs (Agarwal et al. 2019, also the estimator of Fang, Agarwal and Joachims, SIGIR 2019,
without their context) maximises the Bernoulli log-likelihood of the weighted clicks and
non-clicks of every set,

.. math::

    \max_{\theta, r} \sum_{k \ne k'} \hat c_{kk'} \log(\theta_k r_{kk'})
        + \hat{\bar c}_{kk'} \log(1 - \theta_k r_{kk'}), \qquad r_{kk'} = r_{k'k},

with one relevance :math:`r_{kk'}` per unordered pair of positions. In
:math:`(\log\theta, \log r)` the objective is concave (:math:`\log(1 - e^x)` is concave), so
Newton's method with a line search that keeps :math:`\theta_k r_{kk'} < 1` finds its
maximum; :math:`\theta` is defined up to a factor, fixed by :math:`\theta_1 = 1`. Every set
with a click informs the ratio of its two positions, so a position is identified when a
chain of such sets links it to position 1; the others are NaN.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .._validation import check_int, check_present

__all__ = ["harvest_propensity", "intervention_sets", "fit_all_pairs"]

_WEIGHTINGS = ("harmonic", "equal")


#: The deepest position taken without ``n_positions``: the sets' matrices then hold at most
#: 10**8 entries each.
_DEEPEST = 10_000


def _column(values, name: str, n: int | None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but qid has {n}; give one value per logged row")
    return arr


def _numeric(values, name: str, n: int) -> np.ndarray:
    arr = _column(values, name, n)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{row}] = {arr[row]:g}: {name} must be finite and non-negative")
    return arr


def intervention_sets(qid, doc, position, clicks, *, impressions, n_positions: int | None = None,
                      weighting: str = "harmonic") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The weighted clicks and non-clicks of every interventional set.

    Takes the same rows as :func:`harvest_propensity` and returns
    ``(clicked, not_clicked, n_pairs)``, arrays of shape ``(n_positions, n_positions)``:
    entry ``[k - 1, k2 - 1]`` holds :math:`\hat c_{kk'}`, :math:`\hat{\bar c}_{kk'}` and the
    number of pairs :math:`(q, d)` in :math:`S_{kk'}` (see the module documentation).
    """
    qid = _column(qid, "qid", None)
    n = qid.shape[0]
    doc = _column(doc, "doc", n)
    for name, values in (("qid", qid), ("doc", doc)):
        check_present(name, values, "every logged row needs a query and a document id; fill or drop the rows without")
    pos = _column(position, "position", n)
    if pos.dtype.kind not in "iuf":
        raise ValueError("position must hold integers: 1 at the top, -1 for a row never shown")
    if pos.dtype.kind == "f":
        bad = ~np.isfinite(pos) | (pos != np.round(pos))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"position[{row}] = {float(pos[row])!r}: positions are integers, 1 at the top, -1 for a "
                             "row never shown")
    pos = pos.astype(np.int64)
    clicks = _numeric(clicks, "clicks", n)
    if np.ndim(impressions) == 0:
        impressions = np.full(n, impressions)
    shown = _numeric(impressions, "impressions", n)
    if weighting not in _WEIGHTINGS:
        raise ValueError(f"weighting must be one of {_WEIGHTINGS}, got {weighting!r}")
    bad = (pos == 0) | (pos < -1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"position[{row}] = {pos[row]}: positions are 1-based, -1 for a row never shown")
    unseen_clicked = (pos == -1) & (clicks > 0)
    if unseen_clicked.any():
        row = int(np.flatnonzero(unseen_clicked)[0])
        raise ValueError(f"row {row} has {clicks[row]:g} clicks but position -1 (never shown)")
    over = (pos >= 1) & (clicks > shown)
    if over.any():
        row = int(np.flatnonzero(over)[0])
        raise ValueError(
            f"row {row} has {clicks[row]:g} clicks in {shown[row]:g} impressions: clicks count the sessions "
            "with a click, at most one per impression (give impressions per row, or the sessions per query)"
        )
    unshown = (pos >= 1) & (shown == 0)
    if unshown.any():
        row = int(np.flatnonzero(unshown)[0])
        raise ValueError(f"row {row} is at position {pos[row]} with 0 impressions; give -1 for a row never shown")
    top = int(pos.max(initial=0)) if n_positions is None else check_int("n_positions", n_positions, min=1)
    if n_positions is None and top > _DEEPEST:
        row = int(np.argmax(pos))
        raise ValueError(
            f"position[{row}] = {top}: the sets of every pair of positions take {top} x {top} entries; pass "
            f"n_positions (at most {_DEEPEST}) to estimate the top positions only"
        )
    if top < 1:
        raise ValueError("no row was shown (every position is -1): there is nothing to estimate from")
    keep = (pos >= 1) & (pos <= top)

    # one row per (query, document, position): loggers that showed a pair at the same position add up
    frame = pd.DataFrame({"q": qid[keep], "d": doc[keep], "p": pos[keep], "c": clicks[keep], "n": shown[keep]})
    cells = frame.groupby(["q", "d", "p"], sort=True, observed=True)[["c", "n"]].sum().reset_index()
    pair_id = cells.groupby(["q", "d"], sort=False, observed=True).ngroup().to_numpy()
    p = cells["p"].to_numpy() - 1
    rate = cells["c"].to_numpy() / cells["n"].to_numpy()
    count = cells["n"].to_numpy()
    # every ordered pair of distinct positions of one (query, document): rows sorted by pair
    sizes = np.bincount(pair_id)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    multi = np.flatnonzero(sizes > 1)
    first, second = [], []
    for m in np.unique(sizes[multi]):
        base = starts[multi[sizes[multi] == m]]
        a, b = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
        off = a != b
        first.append((base[:, None] + a[off][None, :]).ravel())
        second.append((base[:, None] + b[off][None, :]).ravel())
    clicked = np.zeros((top, top))
    not_clicked = np.zeros((top, top))
    n_pairs = np.zeros((top, top), dtype=np.int64)
    if first:
        i = np.concatenate(first)
        j = np.concatenate(second)
        # the harmonic mean's half, N_i N_j / (N_i + N_j), without the product's overflow
        omega = 1.0 / (1.0 / count[i] + 1.0 / count[j]) if weighting == "harmonic" else np.ones(i.size)
        np.add.at(clicked, (p[i], p[j]), omega * rate[i])
        np.add.at(not_clicked, (p[i], p[j]), omega * (1.0 - rate[i]))
        np.add.at(n_pairs, (p[i], p[j]), 1)
    return clicked, not_clicked, n_pairs


def _connected_to_first(edges: np.ndarray) -> np.ndarray:
    reached = np.zeros(edges.shape[0], dtype=bool)
    reached[0] = True
    frontier = [0]
    while frontier:
        k = frontier.pop()
        for other in np.flatnonzero(edges[k] & ~reached):
            reached[other] = True
            frontier.append(int(other))
    return reached


def _log1mexp(z: np.ndarray) -> np.ndarray:
    """log(1 - e^z) for z < 0, accurate at both ends (Maechler 2012): at click-through rates
    of 1e-9 the plain form's rounding would hide the last steps of the fit."""
    return np.where(z < -np.log(2.0), np.log1p(-np.exp(np.minimum(z, 0.0))), np.log(-np.expm1(np.minimum(z, -1e-300))))


def fit_all_pairs(clicked: np.ndarray, not_clicked: np.ndarray, *, max_iter: int = 200,
                  tol: float = 1e-10) -> np.ndarray:
    r"""The AllPairs extremum estimate from the sets' weighted clicks and non-clicks
    (:func:`intervention_sets`): :math:`\theta` relative to position 1, NaN where no chain
    of sets with clicks links a position to position 1."""
    top = clicked.shape[0]
    # the estimate is the same for any common scale of the sets; at one click in total the
    # stopping rule's tolerance is relative whatever the click-through rates or the weights
    scale = float(np.sum(clicked))
    if scale > 0:
        clicked, not_clicked = clicked / scale, not_clicked / scale
    informative = (clicked + clicked.T) > 0
    np.fill_diagonal(informative, False)
    reached = _connected_to_first(informative)
    theta = np.full(top, np.nan)
    theta[0] = 1.0
    k_of, k2_of = np.nonzero(np.triu(informative & reached[:, None] & reached[None, :], 1))
    if k_of.size == 0:
        return theta
    positions = np.flatnonzero(reached)
    free = positions[1:]
    n_free = free.size
    var_of_position = np.full(top, -1)
    var_of_position[free] = np.arange(n_free)
    n_vars = n_free + k_of.size
    # the terms: (position k, set), both orders of every unordered set
    term_k = np.concatenate((k_of, k2_of))
    term_set = np.concatenate((np.arange(k_of.size), np.arange(k_of.size)))
    term_other = np.concatenate((k2_of, k_of))
    c = clicked[term_k, term_other]
    nc = not_clicked[term_k, term_other]
    term_a = var_of_position[term_k]
    term_b = n_free + term_set
    has_a = term_a >= 0

    def objective(x):
        z = x[term_b] + np.where(has_a, x[np.maximum(term_a, 0)], 0.0)
        if np.any(z[nc > 0] >= 0.0):
            return -np.inf, z
        return float(np.sum(c * z) + np.sum(nc[nc > 0] * _log1mexp(z[nc > 0]))), z

    x = np.zeros(n_vars)
    total = clicked[k_of, k2_of] + clicked[k2_of, k_of]
    seen = total + not_clicked[k_of, k2_of] + not_clicked[k2_of, k_of]
    x[n_free:] = np.log(np.clip(total / seen, 1e-12, 0.5))
    value, z = objective(x)
    for _ in range(max_iter):
        mu = np.exp(z)
        slope = c - nc * mu / -np.expm1(z)
        curve = nc * mu / np.expm1(z) ** 2
        grad = np.bincount(term_b, weights=slope, minlength=n_vars)
        grad += np.bincount(term_a[has_a], weights=slope[has_a], minlength=n_vars)
        hess = np.zeros((n_vars, n_vars))
        np.add.at(hess, (term_b, term_b), curve)
        np.add.at(hess, (term_a[has_a], term_a[has_a]), curve[has_a])
        np.add.at(hess, (term_a[has_a], term_b[has_a]), curve[has_a])
        np.add.at(hess, (term_b[has_a], term_a[has_a]), curve[has_a])
        hess[np.diag_indices(n_vars)] += 1e-9 * (1.0 + hess.diagonal())
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-12:
            new_value, new_z = objective(x + t * step)
            if new_value >= value:
                break
            t *= 0.5
        else:
            break
        x = x + t * step
        gain = new_value - value
        value, z = new_value, new_z
        if gain <= tol * (1.0 + abs(value)):
            break
    theta[free] = np.exp(x[:n_free])
    if not np.isfinite(theta[free]).all():
        unbounded = (free[~np.isfinite(theta[free])] + 1).tolist()
        raise ValueError(
            f"the propensities of positions {unbounded} have no finite estimate: the sets linking them to position 1 "
            "hold clicks but no non-click (every impression clicked), so nothing bounds their ratio"
        )
    return theta


def harvest_propensity(qid, doc, position, clicks, *, impressions, n_positions: int | None = None,
                       weighting: str = "harmonic") -> np.ndarray:
    r"""Propensities of positions 1..n_positions from documents shown at several positions.

    Intervention harvesting (Agarwal et al., WSDM 2019): wherever the same query and
    document were shown at two positions (by several logging rankers, an A/B test or a
    randomised policy), the ratio of their click-through rates there is the ratio of the
    positions' propensities. The AllPairs extremum estimator pools every such pair of
    positions; see :mod:`gbrank.objectives.interventions`. The result is usable as
    ``propensity=`` of :func:`gbrank.ips_listnet`, :func:`gbrank.ips_ranknet` and
    :func:`gbrank.pbm_listnet` (positions the logs do not link to position 1 are NaN, which
    the objectives refuse: cut ``n_positions`` or fill them).

    Parameters
    ----------
    qid, doc : array-like of shape (n_rows,)
        Query and document of each row (any values pandas can group by). A document is the
        same document in every row with the same ``(qid, doc)``.
    position : array-like of int, shape (n_rows,)
        Display position, 1 at the top; -1 for a row never shown (it must have no clicks and
        is skipped).
    clicks : array-like of shape (n_rows,)
        Sessions in which the row was clicked (at most one click per impression).
    impressions : array-like of shape (n_rows,) or scalar
        Sessions in which the row was shown at its position (a scalar: the same for every
        row, e.g. the sessions per query of each logger).
    n_positions : int, optional
        Positions to estimate; rows shown lower are skipped. Default: the lowest position
        shown.
    weighting : {"harmonic", "equal"}, default="harmonic"
        The weight of a pair :math:`(q, d)` in the set of positions :math:`k, k'`:
        :math:`N_k N_{k'} / (N_k + N_{k'})` with :math:`N` its impressions at each position,
        or 1 (each pair's click-through rates unweighted).

    Returns
    -------
    ndarray of float64, shape (n_positions,)
        :math:`\hat\theta_k / \hat\theta_1`; NaN at positions no chain of pairs with clicks
        links to position 1 (with a warning naming them).

    Notes
    -----
    The input is one row per query, document, position and logger (rows with the same
    query, document and position are summed), e.g. the logs of two rankers stacked: each
    ranker's rows with its positions, clicks and sessions. A pair seen at one position only
    tells nothing about position bias; what identifies :math:`\theta` is the pairs seen at
    two or more. The estimate needs the position-based model (examination independent of
    relevance and of the other documents).

    Examples
    --------
    >>> import numpy as np, gbrank
    >>> theta = np.array([1.0, 0.5, 0.25])
    >>> qid = [0, 0, 0, 0, 0, 0]
    >>> doc = [0, 1, 2, 0, 1, 2]                  # two loggers, the second's order rotated
    >>> position = [1, 2, 3, 2, 3, 1]
    >>> gamma = np.array([0.8, 0.4, 0.2])[doc]
    >>> clicks = 1000 * theta[np.array(position) - 1] * gamma
    >>> gbrank.harvest_propensity(qid, doc, position, clicks, impressions=1000).round(3)
    array([1.  , 0.5 , 0.25])
    """
    clicked, not_clicked, _ = intervention_sets(qid, doc, position, clicks, impressions=impressions,
                                                n_positions=n_positions, weighting=weighting)
    theta = fit_all_pairs(clicked, not_clicked)
    if theta.size > 1 and np.isnan(theta[1:]).all():
        raise ValueError(
            "no document was shown both at position 1 and at another position with a click: the logs hold "
            "no intervention on position 1 (they need two or more rankers, or a randomised policy, that show "
            "some documents at different positions)"
        )
    missing = np.flatnonzero(np.isnan(theta)) + 1
    if missing.size:
        warnings.warn(
            f"positions {missing.tolist()} are linked to position 1 by no document shown at both with a click: "
            "their propensities are NaN; pass a smaller n_positions, or fill them before training",
            stacklevel=2,
        )
    return theta
