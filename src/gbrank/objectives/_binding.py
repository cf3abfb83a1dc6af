"""An objective bound to one training set.

A gbrank objective is a value: its settings, nothing else. What training needs and learns
of one training set (its fields as given and checked, the per-dataset state prepared from
them, a propensity estimate) is a :class:`Binding`, made by
:meth:`~gbrank.objectives._base.RankingObjective.bind`. The engines' calls find the binding
of their training set in :mod:`gbrank.engines.bindings`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from .._validation import check_scores
from ..engines.statistics import Statistics

__all__ = ["Binding", "same_array"]


@njit(cache=True)
def _same_words(a, b):
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


def same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two arrays (or Nones) hold the same values: same dtype, shape and bytes.

    Large arrays are compared as 64-bit words in one compiled pass without temporaries, so
    that checking a training set's fields at every call costs one read of each.
    """
    if a is None or b is None:
        return a is b
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    if a.nbytes % 8 or a.nbytes < 4096:
        return bool(np.array_equal(a, b))
    return bool(_same_words(a.reshape(-1).view(np.uint64), b.reshape(-1).view(np.uint64)))


def _kept(a) -> np.ndarray | None:
    """A private, read-only copy of a field as given, to compare later calls with."""
    if a is None:
        return None
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


class Binding:
    """An objective bound to the labels, groups, weights and positions of one training set.

    Made by ``objective.bind(labels, group, weight=..., position=..., statistics=...)``;
    ``grad_hess(scores)`` and ``loss(scores)`` then take only the scores. A binding keeps a
    copy of the fields it was made from (:meth:`holds` compares a later call's fields with
    them by value), the state prepared from them, and what training learns of them: for the
    click objectives with ``propensity="estimate"``, the propensity estimate
    (``propensity_``). A binding belongs to its training set: copies of the objective share
    nothing with it. Its arrays (``offsets``, ``weights``, ``position``, ``state``) are the
    training's working data, shared by every training on that set: read them, never write
    into them.
    """

    __slots__ = ("objective", "offsets", "weights", "position", "statistics", "state", "_given")

    def __init__(self, objective: Any, given: tuple, offsets: np.ndarray, weights: np.ndarray | None,
                 position: np.ndarray | None, statistics: Statistics, state: Any) -> None:
        self.objective = objective
        self.offsets = offsets
        self.weights = weights
        self.position = position
        self.statistics = statistics
        self.state = state
        self._given = tuple(_kept(a) for a in given)

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    @property
    def labels(self) -> np.ndarray:
        """The labels bound, as given (read-only)."""
        return self._given[0]

    def holds(self, labels, sizes, weights=None, position=None, statistics: Statistics | None = None) -> bool:
        """Whether these fields are the ones bound, value for value (an array written in
        place since counts as changed)."""
        if (statistics or Statistics()) != self.statistics:
            return False
        for kept, given in zip(self._given, (labels, sizes, weights, position)):
            if not same_array(kept, None if given is None else np.asarray(given)):
                return False
        return True

    def grad_hess(self, scores, *, init_score=None) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and hessian (float64, one per row) at ``scores``, after the sample weights,
        ``hess_scale`` and ``hess_floor``. ``init_score``: the training set's initial scores
        (LightGBM's ``init_score``, XGBoost's ``base_margin``), which ``scores`` include: a
        training starts where the scores are these plus a constant per query."""
        return self.objective._bound_gradients(self, check_scores(scores, self.n_rows, self.offsets), init_score)

    def loss(self, scores) -> float:
        """Sum over queries of the per-query loss at ``scores`` (sample weights do not enter)."""
        return float(np.sum(self.objective._loss(self.state, check_scores(scores, self.n_rows, self.offsets))))

    @property
    def propensity_(self) -> np.ndarray:
        """The propensity estimate of this training set (click objectives with
        ``propensity="estimate"``): positions 1..K, relative to the first position a row was
        shown at (position 1, unless the log starts lower: a second results page)."""
        return self.objective._estimate(self.state)

    @property
    def unexamined_(self) -> np.ndarray:
        """Of positions 1..K of ``propensity_``, those the estimate takes as never examined
        (without a click although they would have had several at the rate above them): their
        rows take no part, as rows never shown, and their ``propensity_`` (1) means nothing."""
        return self.objective._unexamined_positions(self.state)

    @property
    def left_out_(self) -> np.ndarray:
        """Of positions 1..K of ``propensity_``, those whose estimate nothing read: the ones
        whose rows take no part in the loss (``unexamined_``, and for
        :func:`gbrank.pbm_cloglog` the saturated ones, clicked in every query where a click
        says anything: their propensity has no finite estimate), and the ones no row of the
        training data was shown at. Their ``propensity_`` means nothing."""
        return self.objective._unread_positions(self.state)

    def propensity_interval(self, scores, *, n_boot: int = 200, level: float = 0.9, seed: int | None = 0):
        """Bootstrap bounds over queries of the propensity estimate at ``scores`` (the trained
        model's scores on this training set's rows), with the objective's curve and slope:
        :func:`gbrank.objectives.propensity_trust.propensity_interval`."""
        return self.objective._interval(self.state, check_scores(scores, self.n_rows, self.offsets), n_boot=n_boot,
                                        level=level, seed=seed)

    def __repr__(self) -> str:
        return f"<binding of {self.objective!r} to {self.offsets.size - 1} queries, {self.n_rows} rows>"
