r"""Simulated click logs with position bias, for evaluating learning to rank from clicks.

The protocol of the unbiased learning-to-rank literature (Joachims, Swaminathan and Schnabel,
WSDM 2017; Ai et al., SIGIR 2018): a logging ranker orders each query's documents, every
session shows the top ``top_k`` of that order, and a simulated user clicks.

Position-based model (``click_model="pbm"``): the document at position :math:`p` is
examined with probability :math:`\theta_p = (1/p)^\eta`, independently of the others, and an
examined document of label :math:`l` is clicked with probability

.. math::

    r(l) = \epsilon + (1 - \epsilon) \frac{2^l - 1}{2^{l_\max} - 1},

so :math:`P(\text{click at } p) = \theta_p\, r(l)`.

Cascade model (``click_model="cascade"``): the user reads from the top, clicks an examined
document with probability :math:`r(l)` and stops at the first click (Craswell et al. 2008).
Examination then depends on the documents above, so no per-position :math:`\theta_p`
describes it: a test of what a position-based estimator does when its model is wrong. The
document at position :math:`p` is clicked with probability
:math:`r(l_p) \prod_{j < p} (1 - r(l_j))`, whatever :math:`\eta`.

Cascade model with abandonment (``click_model="cascade_abandon"``): the same, except that
after each position without a click the user may also leave: position :math:`p` is reached,
when nothing above it was clicked, with probability :math:`\theta_p = (1/p)^\eta` (after
position :math:`p` the user goes on with probability :math:`\theta_{p+1}/\theta_p`). The
document at position :math:`p` is clicked with probability
:math:`\theta_p\, r(l_p) \prod_{j < p} (1 - r(l_j))`: a session without a click no longer
means that every document was examined, which a cascade correction alone assumes.

Trust bias (``click_model="trust"``; Agarwal et al., WWW 2019; Vardasbi et al., CIKM 2020):
an examined document is relevant with probability :math:`\gamma = r(l)`, and users trust
the top of the list: they click an examined relevant document with probability
:math:`\epsilon^+_p` and an examined irrelevant one with probability :math:`\epsilon^-_p`,
both depending on the position, so

.. math::

    P(\text{click at } p) = \theta_p \left(\epsilon^+_p\, \gamma + \epsilon^-_p (1 - \gamma)\right),

affine in :math:`\gamma`, which inverse propensities alone cannot undo. By default
:math:`\epsilon^+_p = 1 - (\min(p, 20) + 1)/100` and :math:`\epsilon^-_p = 0.65/\min(p, 10)`
(Vardasbi et al., CIKM 2020 and SIGIR 2021, after Agarwal et al.).

The fold (``fold=f``): positions past :math:`f` are shown and logged, with their positions,
but never examined, :math:`\theta_p = 0` for :math:`p > f` (a page of ``top_k`` results of
which the user sees the first :math:`f`); under the cascade model the user stops at the fold.

Click noise (``click_noise=nu``): in every session each document shown at or above the fold
also gets a click with probability :math:`\nu`, independently of examination, relevance and
the other documents (a misclick); the row is clicked if the click model or the noise clicks
it, :math:`P = 1 - (1 - P_{\text{model}})(1 - \nu)`. The noise clicks do not stop a cascade.

Clicks per row (``aggregate``): ``"count"``, the number of sessions in which the row was
clicked (in every session a row is clicked at most once); ``"binary"``, whether it was
clicked in any of them, :math:`1 - (1 - P)^N` over :math:`N` sessions at one position.

Logging policies: ``"deterministic"`` shows the same top ``top_k`` of the logging scores in
every session; ``"plackett_luce"`` samples each session's ranking from the Plackett–Luce
distribution of ``logging_scores / temperature`` (Gumbel top-k trick), so that every document
has a chance to be shown, as the policy-aware estimator (Oosterhuis and de Rijke, CIKM 2020)
needs. ``ClickLog.propensity`` is each row's examination probability per session under the
policy, :math:`\rho_i = E_\pi[\theta_{\mathrm{rank}(i)}]` (estimated by sampling the policy
independently of the sessions for ``"plackett_luce"``; exact for ``"deterministic"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_bool, check_choice, check_float, check_int
from ..groups import check_group, row_in_query, sizes_to_qid

__all__ = ["ClickLog", "click_probability", "simulate_clicks"]

# Sessions simulated per chunk: bounds the memory of the (sessions x list length) arrays.
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True, eq=False)
class ClickLog:
    """Simulated clicks; aggregate per row, per session when asked for.

    Attributes
    ----------
    clicks : ndarray of int64, shape (n_rows,)
        Number of sessions in which each row was clicked (``aggregate="count"``), or 1 where
        it was clicked in any session and 0 elsewhere (``aggregate="binary"``).
    position : ndarray of int64, shape (n_rows,) or None
        Deterministic policy: the row's display position, 1 at the top, -1 for rows never
        shown. None for a stochastic policy (positions change from session to session).
    propensity : ndarray of float64, shape (n_rows,)
        Examination probability of each row per session under the logging policy, under
        the position-based model: :math:`\\theta_{p_i}` for the deterministic policy, 0 for
        rows never shown or shown below the fold.
    theta : ndarray of float64, shape (top_k,)
        The true examination probabilities :math:`\\theta_1..\\theta_k` of the position-based
        model (and of the trust-bias model), 0 past the fold.
    relevance : ndarray of float64, shape (n_rows,)
        Click probability of each row when examined, :math:`r(l_i)`.
    logging_scores : ndarray of float64, shape (n_rows,)
        The logging ranker's scores.
    sessions_per_query : int
        Sessions simulated for every query.
    eps_plus, eps_minus : ndarray of float64, shape (top_k,), or None
        With ``click_model="trust"``: the click probabilities :math:`\\epsilon^+_p` of an
        examined relevant document and :math:`\\epsilon^-_p` of an examined irrelevant one.
        None otherwise.
    session_query, session_rows, session_clicks : ndarray or None
        With ``per_session=True``: the query of each session (n_sessions,), the row shown at
        each position (n_sessions, top_k; -1 where the list is shorter) and whether it was
        clicked (bool, same shape). None otherwise.
    """

    clicks: np.ndarray
    position: np.ndarray | None
    propensity: np.ndarray
    theta: np.ndarray
    relevance: np.ndarray
    logging_scores: np.ndarray
    sessions_per_query: int
    eps_plus: np.ndarray | None = None
    eps_minus: np.ndarray | None = None
    session_query: np.ndarray | None = None
    session_rows: np.ndarray | None = None
    session_clicks: np.ndarray | None = None

    def ips_weights(self, clip: float | None = None) -> np.ndarray:
        """Inverse-propensity weighted clicks :math:`c_i / \\max(\\rho_i, \\text{clip})` (0 for
        unclicked rows).

        These are the labels of :func:`gbrank.ips_listnet` with ``propensity=None``; with a
        stochastic policy they are the policy-aware weights. Without ``clip``, a clicked row
        whose estimated propensity is 0 (a Plackett–Luce policy's rankings, sampled apart
        from the sessions, never showed it) is refused, naming the fix.
        """
        out = np.zeros(self.clicks.shape[0])
        hit = self.clicks > 0
        rho = self.propensity[hit]
        if clip is not None:
            rho = np.maximum(rho, check_float("clip", clip, min=0.0, strict=True))
        unseen = np.flatnonzero(hit)[rho <= 0]
        if unseen.size and self.position is not None:
            row = int(unseen[0])
            raise ValueError(
                f"row {row} was clicked at position {int(self.position[row])}, whose examination probability is 0 "
                f"({unseen.size} such rows; a curve as steep as this one underflows there): give ips_weights(clip=...)"
            )
        if unseen.size:
            raise ValueError(
                f"row {int(unseen[0])} was clicked but its estimated propensity is 0 ({unseen.size} such rows): "
                "the policy's rankings sampled for the propensities never showed it; simulate with more "
                "n_policy_samples, or give ips_weights(clip=...)"
            )
        out[hit] = self.clicks[hit] / rho
        return out


def click_probability(labels, *, eps: float = 0.1, max_label: float | None = None) -> np.ndarray:
    r"""Click probability of an examined document, :math:`r(l) = \epsilon + (1-\epsilon)(2^l-1)/(2^{l_\max}-1)`."""
    labels = np.asarray(labels, dtype=np.float64)
    if labels.size and (not np.isfinite(labels).all() or labels.min() < 0):
        raise ValueError("labels must be finite and non-negative")
    eps = check_float("eps", eps, min=0.0)
    max_label = check_float("max_label", max_label, min=0.0, optional=True)
    top = float(labels.max()) if max_label is None and labels.size else float(max_label or 0)
    if labels.size and labels.max() > top:
        row = int(np.argmax(labels))
        raise ValueError(f"label {labels[row]:g} at row {row} exceeds max_label={top:g}")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must lie in [0, 1], got {eps!r}")
    if top <= 0:
        return np.full(labels.shape, eps)
    return eps + (1.0 - eps) * np.expm1(labels * np.log(2.0)) / np.expm1(top * np.log(2.0))


def _trust_curves(click_model, eps_plus, eps_minus, k):
    """The trust-bias model's (eps_plus, eps_minus) over positions 1..k, or None for other models."""
    if click_model != "trust":
        if eps_plus is not None or eps_minus is not None:
            raise ValueError(f"eps_plus and eps_minus belong to click_model='trust', not {click_model!r}")
        return None
    p = np.arange(1, k + 1)
    curves = []
    for name, given, default in (("eps_plus", eps_plus, 1.0 - (np.minimum(p, 20) + 1) / 100.0),
                                 ("eps_minus", eps_minus, 0.65 / np.minimum(p, 10))):
        if given is None:
            curves.append(default)
            continue
        values = np.asarray(given, dtype=np.float64)
        if values.ndim != 1 or values.size < k:
            raise ValueError(f"{name} needs one value per position 1..top_k={k}, got shape {values.shape}")
        bad = ~np.isfinite(values[:k]) | (values[:k] < 0) | (values[:k] > 1)
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name}[{at}] = {float(values[at]):g} (position {at + 1}): it must be a probability in [0, 1]"
            )
        curves.append(values[:k].copy())
    return tuple(curves)


def _checked_features(X, n_rows: int) -> np.ndarray:
    """``X`` as a float matrix of ``n_rows`` finite rows, or an error naming the first bad entry."""
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != n_rows:
        raise ValueError(f"X must be a matrix with one row per label ({n_rows} rows), got shape {A.shape}")
    bad = ~np.isfinite(A)
    if bad.any():
        row, col = (int(i[0]) for i in np.nonzero(bad))
        raise ValueError(f"X[{row}, {col}] = {float(A[row, col])!r}: the features the logging ranker is fitted on must be "
                         "finite (or pass logging_scores)")
    return A


def _weak_logging_scores(X, y, offsets, fraction, rng):
    """Ridge regression of the labels on the features of a random ``fraction`` of the queries."""
    n_queries = offsets.shape[0] - 1
    n_fit = max(1, int(round(fraction * n_queries)))
    chosen = np.sort(rng.choice(n_queries, size=n_fit, replace=False))
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in chosen])
    A = np.asarray(X, dtype=np.float64)
    # standardising is the same for any positive scale of a column: a column whose squares
    # could overflow the variance is divided by its largest magnitude first
    top = np.abs(A).max(axis=0)
    A = A / np.where(top > 1e150, top, 1.0)
    mean = A[rows].mean(axis=0)
    scale = A[rows].std(axis=0)
    scale[scale == 0] = 1.0
    Z = (A[rows] - mean) / scale
    gram = Z.T @ Z + np.eye(Z.shape[1]) * max(1.0, 0.01 * rows.size)
    w = np.linalg.solve(gram, Z.T @ (y[rows] - y[rows].mean()))
    return ((A - mean) / scale) @ w


def _padded(values, offsets, fill):
    sizes = np.diff(offsets)
    out = np.full((sizes.size, int(sizes.max())), fill, dtype=np.float64)
    q = sizes_to_qid(sizes)
    col = row_in_query(sizes)
    out[q, col] = values
    return out, q, col


def _rankings(scores_pad, n_sessions, k, policy, temperature, rng):
    """Columns shown at positions 1..k for each of ``n_sessions`` copies of each query row."""
    if policy == "deterministic":
        # stable order by score, descending (rows of equal score keep their row order)
        ranked = np.argsort(-scores_pad, axis=1, kind="stable")[:, :k]
        return np.repeat(ranked, n_sessions, axis=0)
    rep = np.repeat(scores_pad / temperature, n_sessions, axis=0)
    keys = rep + rng.gumbel(size=rep.shape)
    if k < keys.shape[1]:
        top = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    else:
        top = np.broadcast_to(np.arange(keys.shape[1]), keys.shape)
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def simulate_clicks(
    y,
    group,
    logging_scores=None,
    *,
    X=None,
    logging_fraction: float = 0.05,
    sessions_per_query: int = 100,
    top_k: int = 10,
    eta: float = 1.0,
    eps: float = 0.1,
    max_label: float | None = None,
    click_model: str = "pbm",
    eps_plus=None,
    eps_minus=None,
    fold: int | None = None,
    click_noise: float = 0.0,
    aggregate: str = "count",
    policy: str = "deterministic",
    temperature: float = 1.0,
    n_policy_samples: int = 1000,
    per_session: bool = False,
    seed: int | None = 0,
) -> ClickLog:
    r"""Simulate position-biased clicks on labelled ranking data.

    Every query gets ``sessions_per_query`` sessions. Each session shows the top ``top_k``
    documents of the logging policy's ranking; under the position-based model the document
    at position :math:`p` (1 at the top) is clicked with probability

    .. math::

        P(c = 1) = \theta_p\, r(l), \qquad \theta_p = (1/p)^\eta, \qquad
        r(l) = \epsilon + (1 - \epsilon) \frac{2^l - 1}{2^{l_\max} - 1}.

    See the module documentation for the cascade and trust-bias models, the fold, click noise
    and the stochastic policy.

    Parameters
    ----------
    y : array-like of shape (n_rows,)
        Integer relevance labels (non-negative).
    group : array-like of shape (n_queries,)
        Query sizes; each query's rows are contiguous.
    logging_scores : array-like of shape (n_rows,), optional
        Scores of the logging ranker (higher is shown first). If omitted, a weak logging
        ranker is fitted: ridge regression of the labels on ``X`` over a random
        ``logging_fraction`` of the queries.
    X : array-like of shape (n_rows, n_features), optional
        Features, needed only without ``logging_scores``.
    logging_fraction : float, default=0.05
        Share of the queries the weak logging ranker is fitted on.
    sessions_per_query : int, default=100
        Sessions per query.
    top_k : int, default=10
        Positions shown per session (a list shorter than ``top_k`` is shown whole). Use at
        least the longest list length to show every document.
    eta : float, default=1.0
        Severity of the position bias, :math:`\theta_p = (1/p)^\eta`; 0 is no bias.
    eps : float, default=0.1
        Click probability of an examined irrelevant document.
    max_label : float, optional
        :math:`l_\max`; default the largest label in ``y``.
    click_model : {"pbm", "cascade", "cascade_abandon", "trust"}, default="pbm"
        Position-based model, the cascade model (stop at the first click), the cascade model
        in which the user may also leave without a click (position :math:`p` reached with
        probability :math:`\theta_p` when nothing above was clicked) or the position-based
        model with trust bias.
    eps_plus, eps_minus : array-like of shape (>= top_k,), optional
        ``click_model="trust"`` only: :math:`\epsilon^+_p` and :math:`\epsilon^-_p`, the
        probability of a click on an examined relevant and irrelevant document at positions
        1, 2, ..., each in [0, 1]. Default :math:`1 - (\min(p, 20) + 1)/100` and
        :math:`0.65/\min(p, 10)`.
    fold : int, optional
        Positions past ``fold`` are shown and logged but never examined; default none (every
        shown position is examined with probability :math:`\theta_p`).
    click_noise : float, default=0.0
        Probability of a noise click on each document shown at or above the fold, in every
        session, independent of everything else.
    aggregate : {"count", "binary"}, default="count"
        ``clicks`` per row: the number of sessions with a click on it, or whether any had one.
    policy : {"deterministic", "plackett_luce"}, default="deterministic"
        Show the top of the logging scores' order in every session, or sample each session's
        ranking from the Plackett–Luce distribution of ``logging_scores / temperature``.
    temperature : float, default=1.0
        Temperature of the Plackett–Luce policy.
    n_policy_samples : int, default=1000
        Rankings sampled per query to estimate ``propensity`` under the Plackett–Luce policy.
    per_session : bool, default=False
        Also return every session's displayed rows and clicks.
    seed : int or None, default=0
        Seed of ``numpy.random.default_rng``; the same seed gives the same clicks.

    Returns
    -------
    ClickLog
    """
    labels = np.asarray(y, dtype=np.float64)
    if labels.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {labels.shape}")
    offsets = check_group(group, labels.shape[0])
    if labels.size == 0:
        raise ValueError("y is empty: there is nothing to show")
    bad = ~np.isfinite(labels) | (labels < 0) | (labels != np.floor(labels))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y[{row}] = {labels[row]!r}: labels must be non-negative integers")
    k = check_int("top_k", top_k, min=1)
    n_sessions = check_int("sessions_per_query", sessions_per_query, min=1)
    eta = check_float("eta", eta, min=0.0)
    check_choice("click_model", click_model, ("pbm", "cascade", "cascade_abandon", "trust"))
    check_choice("aggregate", aggregate, ("count", "binary"))
    fold = check_int("fold", fold, min=1, optional=True)
    noise = check_float("click_noise", click_noise, min=0.0)
    if noise >= 1.0:
        raise ValueError(f"click_noise must lie in [0, 1), got {click_noise!r}")
    trust = _trust_curves(click_model, eps_plus, eps_minus, k)
    if policy not in ("deterministic", "plackett_luce"):
        raise ValueError(f"policy must be 'deterministic' or 'plackett_luce', got {policy!r}")
    temperature = check_float("temperature", temperature, min=0.0, strict=True)
    per_session = check_bool("per_session", per_session)
    rng = np.random.default_rng(check_int("seed", seed, min=0, optional=True))
    if logging_scores is None:
        if X is None:
            raise ValueError("pass logging_scores, or X to fit a weak logging ranker on")
        logging_fraction = check_float("logging_fraction", logging_fraction, min=0.0, strict=True)
        if logging_fraction > 1.0:
            raise ValueError(f"logging_fraction must lie in (0, 1], got {logging_fraction!r}")
        scores = _weak_logging_scores(_checked_features(X, labels.size), labels, offsets, logging_fraction, rng)
    else:
        scores = np.asarray(logging_scores, dtype=np.float64)
        if scores.shape != labels.shape:
            raise ValueError(f"logging_scores has shape {scores.shape} but y has {labels.shape}")
        if not np.isfinite(scores).all():
            row = int(np.flatnonzero(~np.isfinite(scores))[0])
            raise ValueError(f"logging_scores[{row}] is not finite")

    relevance = click_probability(labels, eps=eps, max_label=max_label)
    theta = (1.0 / np.arange(1, k + 1)) ** float(eta)
    if fold is not None:
        theta[fold:] = 0.0
    go_on = theta / np.concatenate(([1.0], np.maximum(theta[:-1], np.finfo(float).tiny)))
    n_rows = labels.shape[0]
    n_queries = offsets.shape[0] - 1
    scores_pad, row_query, row_col = _padded(scores, offsets, -np.inf)
    rel_pad, _, _ = _padded(relevance, offsets, 0.0)
    width = scores_pad.shape[1]
    shown = min(k, width)
    row_of = np.full((n_queries, width), -1, dtype=np.int64)
    row_of[row_query, row_col] = np.arange(n_rows)

    clicks = np.zeros(n_rows, dtype=np.int64)
    keep_q, keep_rows, keep_clicks = [], [], []
    above_fold = np.arange(shown) < (shown if fold is None else fold)
    per_chunk = max(1, _CHUNK_CELLS // (width * n_sessions))
    for first in range(0, n_queries, per_chunk):
        qs = np.arange(first, min(first + per_chunk, n_queries))
        cols = _rankings(scores_pad[qs], n_sessions, shown, policy, temperature, rng)
        sess_q = np.repeat(qs, n_sessions)
        rows = row_of[sess_q[:, None], cols]
        rel = np.where(rows >= 0, rel_pad[sess_q[:, None], cols], 0.0)
        u = rng.random(rows.shape)
        if click_model == "pbm":
            clicked = u < theta[:shown] * rel
        elif click_model == "trust":
            plus, minus = trust
            clicked = (rows >= 0) & (u < theta[:shown] * (plus[:shown] * rel + minus[:shown] * (1.0 - rel)))
        else:
            hit = (u < rel) & above_fold
            if click_model == "cascade_abandon":
                # past each position without a click the user goes on with probability
                # theta_{p+1} / theta_p, so that position p is reached with probability theta_p
                hit &= np.cumprod(rng.random(rows.shape) < go_on[:shown], axis=1, dtype=np.int8).astype(bool)
            first_hit = np.where(hit.any(axis=1), hit.argmax(axis=1), shown)
            clicked = hit & (np.arange(shown) == first_hit[:, None])
        if noise > 0:
            clicked |= (rng.random(rows.shape) < noise) & (rows >= 0) & above_fold
        np.add.at(clicks, rows[clicked], 1)
        if per_session:
            keep_q.append(sess_q)
            keep_rows.append(rows)
            keep_clicks.append(clicked)

    position = None
    propensity = np.zeros(n_rows)
    if policy == "deterministic":
        ranked = np.argsort(-scores_pad, axis=1, kind="stable")[:, :shown]
        rows = row_of[np.arange(n_queries)[:, None], ranked]
        position = np.full(n_rows, -1, dtype=np.int64)
        at = rows >= 0
        position[rows[at]] = np.broadcast_to(np.arange(1, shown + 1), rows.shape)[at]
        propensity[position > 0] = theta[position[position > 0] - 1]
    else:
        m = check_int("n_policy_samples", n_policy_samples, min=1)
        per_chunk = max(1, _CHUNK_CELLS // (width * m))
        for first in range(0, n_queries, per_chunk):
            qs = np.arange(first, min(first + per_chunk, n_queries))
            cols = _rankings(scores_pad[qs], m, shown, policy, temperature, rng)
            rows = row_of[np.repeat(qs, m)[:, None], cols]
            at = rows >= 0
            np.add.at(propensity, rows[at], np.broadcast_to(theta[:shown], rows.shape)[at] / m)

    if aggregate == "binary":
        clicks = np.minimum(clicks, 1)
    if per_session:
        pad = k - shown
        sr = np.concatenate(keep_rows)
        sc = np.concatenate(keep_clicks)
        if pad:
            sr = np.pad(sr, ((0, 0), (0, pad)), constant_values=-1)
            sc = np.pad(sc, ((0, 0), (0, pad)), constant_values=False)
        session = dict(session_query=np.concatenate(keep_q), session_rows=sr, session_clicks=sc)
    else:
        session = {}
    plus, minus = trust if trust is not None else (None, None)
    return ClickLog(clicks=clicks, position=position, propensity=propensity, theta=theta, relevance=relevance,
                    logging_scores=scores, sessions_per_query=n_sessions, eps_plus=plus, eps_minus=minus, **session)
