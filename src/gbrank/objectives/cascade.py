r"""Click targets under a cascade examination model, from per-session records.

The model
---------
In the cascade model (Craswell et al. 2008) a user reads the list from the top, and stops at
the first click; the dependent click model (DCM, Guo et al. 2009) lets the user go on after a
click at rank :math:`j` with probability :math:`\lambda_j` (the *continuation*), and always
after a rank without a click. Whether a document is examined then depends on the clicks above it in the same session,
not on its position alone. Given those clicks, the examination probability
:math:`P_{s,i} = P(E_{s,i} = 1 \mid c_{s,<r_s(i)})` of row :math:`i` at rank :math:`r_s(i)`
of session :math:`s` follows from a forward pass down the list: the probability :math:`q`
that the user still reads is 1 at the top; a click at rank :math:`j` sets it to
:math:`\lambda_j`; a rank without a click, showing a document of relevance :math:`\gamma`,
updates it by Bayes' rule to :math:`q(1 - \gamma)/(1 - q\gamma)`. For the cascade model
(:math:`\lambda = 0`) that is 1 down to the first click and 0 below it; with
:math:`0 < \lambda_j < 1` it depends on the relevance of the documents not clicked since the
last click, which is estimated with the targets (below) by alternating the two to a fixed
point. A click is then :math:`P(c_{s,i} = 1 \mid c_{s,<r_s(i)}) = P_{s,i}\, \gamma_i`: the
examination model of cascade model-based inverse propensity scoring (CM-IPS; Vardasbi, de
Rijke and Markov, SIGIR 2020), where each click counts :math:`1/P_{s,i}`.

The targets
-----------
With :math:`\lambda = 0` (the plain cascade model) :math:`P_{s,i}` is 0 below the first
click, so the per-click weight :math:`1/P_{s,i}` is 1 for every click that happened, and
the sessions where the row was not examined are simply lost: summing :math:`c/P` gives the
raw clicks back, still biased against documents below relevant ones. The targets here
divide instead by the row's expected number of examinations,

.. math::

    t_i = N_i\, \frac{\sum_s c_{s,i}}{\sum_s P_{s,i}},

with :math:`N_i` the sessions that showed row :math:`i`: the self-normalised form of CM-IPS,
the cascade model's own estimate of :math:`\gamma_i` (clicks per examination) on the scale of
the clicks. Given the clicks above the row in every session, :math:`P_{s,i}` is fixed and
:math:`E[\sum_s c_{s,i}] = \gamma_i \sum_s P_{s,i}`, so :math:`E[t_i] = N_i \gamma_i`
exactly wherever the row was examined at all (:math:`\sum_s P_{s,i} > 0`), when the
:math:`P_{s,i}` are known: for the cascade model (and :math:`\lambda_j \in \{0, 1\}`) they
are, and with :math:`0 < \lambda_j < 1` they hold estimated relevances, which makes the
targets consistent (the relevance estimate of the DCM with known continuations) rather
than exactly unbiased. Rows never examined carry no information: they are
marked, and are to be left out of the training set (:meth:`CascadeTargets.training_set`),
not given target 0, which would push them down as irrelevant.

The targets are per-row inverse-propensity weighted clicks, the ``propensity=None`` labels
of :func:`gbrank.ips_listnet` and :func:`gbrank.ips_ranknet`, whose losses are linear in
them: in expectation the loss on :math:`N_i \gamma_i`.

Users who leave without a click
-------------------------------
Neither model lets a user leave the list without a click: a session without one reads as
every document examined. Where users do leave, a document's targets are too low the further
down it is shown. :func:`gbrank.fit_clicks` given the targets and the display positions
estimates a position-based examination on top of the cascade's (see "Cascade clicks" in
:mod:`gbrank.click_training`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_float, check_int
from ..groups import check_group

__all__ = ["CascadeTargets", "cascade_targets"]

# Alternations of filter and estimate for a continuation strictly between 0 and 1, and the
# change in any relevance estimate at which they stop.
_MAX_ROUNDS = 200
_TOL = 1e-10


def _after_a_stop(clicked, lam):
    """(session, rank) of the first click below a click with continuation 0, or None."""
    stops = np.cumsum(clicked & (lam[None, :] == 0), axis=1)
    below = clicked[:, 1:] & (stops[:, :-1] > 0)
    if not below.any():
        return None
    s, r = np.argwhere(below)[0]
    return int(s), int(r) + 1


def _examination(rows, clicked, lam, relevance):
    """P(rank r of session s examined | the clicks above it): the DCM's forward filter.

    ``q``, the probability that the user still reads, is 1 at the top; a click at rank r
    sets it to the continuation lambda_r (the user read r, and reads on with that
    probability); a rank without a click updates it by Bayes' rule, q (1 - g) / (1 - q g)
    with g the row's relevance (read and not clicked, or no longer reading).
    """
    n_sessions, k = rows.shape
    out = np.empty(rows.shape)
    q = np.ones(n_sessions)
    for r in range(k):
        out[:, r] = q
        g = np.where(rows[:, r] >= 0, np.clip(relevance[np.maximum(rows[:, r], 0)], 0.0, 1.0), 0.0)
        denominator = 1.0 - q * g
        kept = np.divide(q * (1.0 - g), denominator, out=q.copy(), where=denominator > 0)
        q = np.where(clicked[:, r], lam[r], kept)
    return out


@dataclass(frozen=True, eq=False)
class CascadeTargets:
    """Per-row click targets under a cascade examination model (:func:`cascade_targets`).

    Attributes
    ----------
    targets : ndarray of float64, shape (n_rows,)
        :math:`N_i \\sum_s c_{s,i} / \\sum_s P_{s,i}` (the denominator at least
        ``clip`` :math:`N_i` where clipped); 0 for rows never examined.
    clicks : ndarray of float64, shape (n_rows,)
        Sessions in which the row was clicked.
    impressions : ndarray of float64, shape (n_rows,)
        Sessions in which the row was shown, :math:`N_i`.
    examinations : ndarray of float64, shape (n_rows,)
        Expected number of examinations, :math:`\\sum_s P_{s,i}`.
    examined : ndarray of bool, shape (n_rows,)
        Rows with ``examinations > 0``: the rows to train on.
    position : ndarray of int64, shape (n_rows,)
        The rank at which the sessions showed each row, where it was the same in all of
        them (a deterministic ranker's log); 0 where it differed, -1 where no session showed
        the row.
    """

    targets: np.ndarray
    clicks: np.ndarray
    impressions: np.ndarray
    examinations: np.ndarray
    examined: np.ndarray
    position: np.ndarray

    def training_set(self, X, group):
        """``(X, targets, group)`` of the examined rows only: the rows never examined carry no
        information about their relevance, and queries left without rows are dropped.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            The features of the rows the targets were computed for, in the same order.
        group : array-like of shape (n_queries,)
            Query sizes; each query's rows are contiguous.
        """
        offsets = check_group(group, self.targets.shape[0])
        shape = np.shape(X)
        if len(shape) != 2 or shape[0] != self.targets.shape[0]:
            raise ValueError(f"X must be a matrix with one row per row of the targets ({self.targets.shape[0]}), got "
                             f"shape {shape}")
        keep = self.examined
        running = np.concatenate(([0], np.cumsum(keep)))
        kept = running[offsets[1:]] - running[offsets[:-1]]
        return np.asarray(X)[keep], self.targets[keep], kept[kept > 0]


def cascade_targets(session_rows, session_clicks, n_rows: int, *, continuation=0.0,
                    clip: float | None = None) -> CascadeTargets:
    r"""Inverse-propensity weighted click targets under the cascade model or the DCM.

    Each session's examination of a row, :math:`P_{s,i}`, depends on the clicks above it
    (see :mod:`gbrank.objectives.cascade`), and the target of row :math:`i` is
    :math:`N_i \sum_s c_{s,i} / \sum_s P_{s,i}`, in expectation :math:`N_i \gamma_i` given
    the clicks above. Train :func:`gbrank.ips_listnet` or :func:`gbrank.ips_ranknet` with
    ``propensity=None`` on them, over the examined rows
    (:meth:`CascadeTargets.training_set`).

    Parameters
    ----------
    session_rows : array-like of int, shape (n_sessions, k)
        The row shown at each rank of each session, rank 1 first; -1 where the list is
        shorter (as ``simulate_clicks(..., per_session=True).session_rows``).
    session_clicks : array-like of bool, shape (n_sessions, k)
        Whether the row at each rank was clicked.
    n_rows : int
        Rows of the data set (row ids are ``0..n_rows-1``).
    continuation : float or array-like of shape (k,), default=0.0
        :math:`\lambda_j`, the probability that the user reads on after a click at rank
        :math:`j`: 0 is the cascade model (stop at the first click), values in (0, 1] the
        DCM, 1 examination of the whole list.
    clip : float, optional
        Smallest examination rate a target uses: :math:`t_i = N_i \sum_s c_{s,i} /
        \max(\sum_s P_{s,i}, \mathrm{clip}\, N_i)`, so that no click counts more than
        ``1/clip``. Less variance from rows rarely examined (those below relevant
        documents), at the price of under-weighting them by their examination rate over
        ``clip``: a lean towards the logging order there. None: the unbiased targets.

    Returns
    -------
    CascadeTargets

    Examples
    --------
    >>> import numpy as np, gbrank
    >>> rows = np.array([[0, 1, 2], [0, 1, 2], [0, 1, 2]])
    >>> clicked = np.array([[True, False, False], [False, True, False], [False, False, False]])
    >>> t = gbrank.cascade_targets(rows, clicked, 3)   # row 1 examined twice, row 2 once
    >>> t.examinations.tolist(), t.targets.tolist()
    ([3.0, 2.0, 1.0], [1.0, 1.5, 0.0])
    """
    rows = np.asarray(session_rows)
    clicked = np.asarray(session_clicks)
    if rows.ndim != 2:
        raise ValueError(f"session_rows must be two-dimensional (sessions x ranks), got shape {rows.shape}")
    if clicked.shape != rows.shape:
        raise ValueError(f"session_clicks has shape {clicked.shape} but session_rows has {rows.shape}")
    if rows.dtype.kind not in "iu":
        raise TypeError(f"session_rows must hold integer row ids, got dtype {rows.dtype}")
    if clicked.dtype.kind not in "bi" or (clicked.dtype.kind == "i" and not np.isin(clicked, (0, 1)).all()):
        raise ValueError("session_clicks must hold booleans (or 0 and 1): whether each shown row was clicked")
    clicked = clicked.astype(bool)
    n_rows = check_int("n_rows", n_rows, min=0)
    clip = check_float("clip", clip, min=0.0, strict=True, optional=True)
    if clip is not None and clip > 1:
        raise ValueError(f"clip is an examination rate, in (0, 1]; got {clip!r}")
    bad = (rows < -1) | (rows >= n_rows)
    if bad.any():
        s, r = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(f"session {s} shows row {rows[s, r]} at rank {r + 1}: row ids lie in 0..{n_rows - 1}, -1 for none")
    ghost = (rows == -1) & clicked
    if ghost.any():
        s, r = (int(v) for v in np.argwhere(ghost)[0])
        raise ValueError(f"session {s} has a click at rank {r + 1}, where it shows no row (-1)")
    if rows.size:
        ordered = np.sort(rows, axis=1)
        twice = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
        if twice.any():
            s = int(np.flatnonzero(twice.any(axis=1))[0])
            row = int(ordered[s, 1:][twice[s]][0])
            ranks = (np.flatnonzero(rows[s] == row) + 1).tolist()
            raise ValueError(f"session {s} shows row {row} at ranks {ranks}: a session shows each row once")
    k = rows.shape[1]
    lam = np.broadcast_to(np.asarray(continuation, dtype=np.float64), (k,)) if np.ndim(continuation) == 0 \
        else np.asarray(continuation, dtype=np.float64)
    if lam.shape != (k,):
        raise ValueError(f"continuation must be a number or one value per rank ({k}), got shape {lam.shape}")
    if not (np.isfinite(lam) & (lam >= 0) & (lam <= 1)).all():
        raise ValueError("continuation holds probabilities: every value must lie in [0, 1]")

    impossible = _after_a_stop(clicked, lam)
    if impossible is not None:
        s, r = impossible
        raise ValueError(
            f"session {s} has a click at rank {r + 1} below a click after which the user stops (continuation 0 "
            "at its rank): the cascade model allows one click per session; give continuation > 0 (the DCM)"
        )
    shown = rows >= 0
    at = rows[shown]
    impressions = np.bincount(at, minlength=n_rows).astype(np.float64)
    clicks = np.bincount(at, weights=clicked[shown], minlength=n_rows)
    relevance = np.zeros(n_rows)
    np.divide(clicks, impressions, out=relevance, where=impressions > 0)
    # the filter needs the relevance of the unclicked rows below a click only where the user
    # may or may not have read on (0 < continuation < 1): alternate filter and estimate there
    rounds = 1 if np.isin(lam, (0.0, 1.0)).all() else _MAX_ROUNDS
    for _ in range(rounds):
        examine = _examination(rows, clicked, lam, relevance)
        examinations = np.bincount(at, weights=examine[shown], minlength=n_rows)
        examined = examinations > 0
        new = np.zeros(n_rows)
        new[examined] = clicks[examined] / examinations[examined]
        change = np.max(np.abs(new - relevance), initial=0.0)
        relevance = new
        if change <= _TOL:
            break
    targets = impressions * relevance
    if clip is not None:
        targets[examined] = impressions[examined] * clicks[examined] / np.maximum(
            examinations[examined], clip * impressions[examined])
    rank = np.broadcast_to(np.arange(1, k + 1), rows.shape)[shown]
    lowest, highest = np.full(n_rows, k + 1), np.zeros(n_rows, dtype=np.int64)
    np.minimum.at(lowest, at, rank)
    np.maximum.at(highest, at, rank)
    position = np.where(impressions == 0, -1, np.where(lowest == highest, highest, 0))
    return CascadeTargets(targets=targets, clicks=clicks, impressions=impressions, examinations=examinations,
                          examined=examined, position=position)
