r"""Several relevance labels for one model: label aggregation and gradient aggregation.

A training set has :math:`L` label columns :math:`y^{(1)}, \dots, y^{(L)}` (relevance, click,
purchase, ...), and one ranking objective :math:`\ell(s; y)` that trains on one label. Every
mode below calls the objective's own kernels, so any gbrank objective works.

Label aggregation (``aggregate="label"`` and ``"stochastic"``)
    ``"label"``: the objective trains on the weighted combination
    :math:`\bar y_i = \sum_l w_l y^{(l)}_i`, with weights per label or per query (the hand
    mix, computed once). ``"stochastic"``: stochastic label aggregation (Mahapatra et al.,
    KDD 2023): at every iteration each query trains on one label :math:`l`, drawn with
    probability :math:`w_l`, so that the expected gradient is the weighted sum of the
    labels' gradients while each step sees real labels. The draws come from a hash of
    ``seed``, the query's first label column and its current scores (as the randomised
    objectives' draws): fresh at every iteration, identical when a training is repeated.
    Queries alike in both draw alike, as all of them may at the first iteration, when every
    score is the same: then the draw is shared by, e.g., every query without a relevant
    document.

Gradient aggregation (``aggregate="gradient"`` and ``"constrained"``)
    ``"gradient"``: :math:`g = \sum_l w_l \nabla \ell(s; y^{(l)})`, and the same sum of
    hessians and losses: the linear scalarisation of the :math:`L` objectives.
    ``"constrained"``: the first label is the primary objective and each other label
    :math:`l` must keep its NDCG@k above a floor :math:`b_l` (Momma et al. 2020). Each
    iteration weighs label :math:`l` by
    :math:`w_l + \mu \max(0, b_l - \mathrm{NDCG@k}(s; y^{(l)}))`: a label below its floor
    gets a weight that grows with the shortfall, one above it keeps its base weight. This
    is the stateless penalty form of the paper's augmented Lagrangian (whose multipliers
    accumulate the shortfall over iterations): an objective is a value and keeps no state
    between iterations. Within an iteration the weights are fixed, so the gradient and
    hessian are those of the weighted loss (as LambdaRank's pair weights).

The weights are normalised to sum to 1 (per query when given per query). The label columns
are given to the objective, aligned with the training rows; the engines hold only one label,
which must be the first column (what their metrics and early stopping see): a training set
whose row count or first label differs is refused with the fix. An ``lgb.cv`` or ``xgb.cv``
fold therefore fails (its rows are a subset). :mod:`gbrank.dask` trains it on several label
columns of a Dask frame: each worker trains :meth:`MultiLabel.part`, the objective on its
own queries with the statistics of all the rows.

Statistics of the whole data
    What a label's objective reads of the whole data (the label maximum of ERR's gains,
    :class:`gbrank.engines.Statistics`) is computed per label column (or of the mixed
    label) from all the rows the objective was given, never from the first column's. The
    constrained form's NDCG@k of a label is the mean over all queries: on Dask workers the
    per-query sums are added over the workers (the allreduce of the statistics), so each
    worker weighs the labels as one machine would.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from .._validation import check_float, check_int, check_labels
from ..engines.statistics import Statistics, sum_over_workers
from ..gains import EXP2_MAX_LABEL
from ._base import RankingObjective
from ._random import next_uniform, query_keys, query_stream

__all__ = ["AGGREGATES", "MultiLabel", "MultiLabelState", "multi_label"]

AGGREGATES = ("gradient", "label", "stochastic", "constrained")


@njit(cache=True)
def draw_labels(scores, offsets, cumulative, keys):
    """One label per query, drawn with the probabilities whose cumulative sums are
    ``cumulative`` (one row per query), from a hash of the query's key (its seed and labels,
    :func:`gbrank.objectives._random.query_keys`) and scores."""
    n_queries = offsets.shape[0] - 1
    choice = np.empty(n_queries, dtype=np.int64)
    for q in range(n_queries):
        state = query_stream(keys[q], scores, offsets[q], offsets[q + 1])
        _, u = next_uniform(state)
        label = 0
        last = cumulative.shape[1] - 1
        while label < last and u >= cumulative[q, label]:
            label += 1
        choice[q] = label
    return choice


class MultiLabelState(NamedTuple):
    """Per-dataset state: the objective's state of each label column (or of their mix), the
    per-query weights, the offsets, the label columns, each query's random key and the
    allreduce over workers (None on one machine)."""

    inner: tuple
    weights: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    keys: np.ndarray
    reduce: Any = None


def _check_columns(labels) -> np.ndarray:
    columns = np.asarray(labels)
    if columns.ndim != 2 or columns.shape[1] < 2:
        raise ValueError(
            f"labels must be a 2-D array of shape (n_rows, n_labels) with at least two label columns, got shape "
            f"{columns.shape}; for one label, use the objective itself"
        )
    for j in range(columns.shape[1]):
        check_labels(columns[:, j], name=f"labels[:, {j}]")
    return np.ascontiguousarray(columns, dtype=np.float64)


def _check_weights(weights, n_labels: int | None, aggregate: str) -> np.ndarray | None:
    """Normalised weights; None while neither weights nor label columns are given."""
    if weights is None:
        if n_labels is None:
            return None
        weights = np.eye(n_labels)[0] if aggregate == "constrained" else np.full(n_labels, 1.0 / n_labels)
    w = np.asarray(weights, dtype=np.float64)
    shown = "n_labels" if n_labels is None else n_labels
    if w.ndim not in (1, 2) or (n_labels is not None and w.shape[-1] != n_labels):
        raise ValueError(f"weights must have shape ({shown},) or (n_queries, {shown}), got {w.shape}")
    if w.ndim == 2 and aggregate not in ("label", "stochastic"):
        raise ValueError(f"weights per query (a 2-D array) are for label aggregation; aggregate={aggregate!r} "
                         "takes one weight per label")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"weights must be finite and non-negative, got {weights!r}")
    sums = w.sum(axis=-1)
    if (sums <= 0).any():
        where = f" (query {int(np.flatnonzero(sums <= 0)[0])}'s row of the weights per query)" if w.ndim == 2 else ""
        raise ValueError(f"weights must not all be zero{where}")
    return w / sums[..., None]


class MultiLabel(RankingObjective):
    """One objective trained on several label columns; build it with :func:`multi_label`."""

    factory = "multi_label"
    _setting_names = ("objective", "aggregate", "weights", "floors", "k", "penalty", "gain", "seed")

    def __init__(self, *, objective, labels, aggregate, weights, floors, k, penalty, gain, seed, hess_floor,
                 hess_scale, whole: tuple | None = None) -> None:
        super().__init__(hess_floor=hess_floor, hess_scale=hess_scale)
        if not isinstance(objective, RankingObjective) or isinstance(objective, MultiLabel):
            raise TypeError(f"objective must be a gbrank objective (e.g. gbrank.lambdarank()), got {objective!r}")
        if objective.uses_position:
            raise TypeError(
                f"{objective.factory} learns from one click column and its display positions, which multi_label "
                "does not carry: train it on the clicks alone, or give multi_label a relevance objective "
                "(e.g. gbrank.lambdarank(), gbrank.listnet())"
            )
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        self.objective = objective
        self.aggregate = aggregate
        self.labels = None if labels is None else _check_columns(labels)
        n_labels = None if labels is None else self.labels.shape[1]
        self.weights = _check_weights(weights, n_labels, aggregate)
        if aggregate == "constrained":
            shown = "n_labels - 1" if n_labels is None else n_labels - 1
            if floors is None:
                raise ValueError("aggregate='constrained' needs floors: the lowest NDCG@k of each label after the "
                                 f"first, {shown} values in [0, 1]")
            floors = np.asarray(floors, dtype=np.float64)
            if floors.ndim != 1 or (n_labels is not None and floors.size != n_labels - 1) \
                    or not ((floors >= 0) & (floors <= 1)).all():
                raise ValueError(f"floors must be {shown} values in [0, 1] (one per label after the first), "
                                 f"got {floors.tolist()}")
        elif floors is not None:
            raise ValueError("floors are for aggregate='constrained'")
        self.floors = floors
        self.k = check_int("k", k, min=1)
        self.penalty = check_float("penalty", penalty, min=0.0)
        if gain not in ("exp2", "linear"):
            raise ValueError(f"gain must be 'exp2' or 'linear' (the gain of the NDCG@k the floors speak of), "
                             f"got {gain!r}")
        self.gain = gain
        self.seed = check_int("seed", seed, min=0, max=2**63 - 1)
        # the inner objective decides these
        self.shift_invariant = objective.shift_invariant
        self.ignores_orderless_queries = objective.ignores_orderless_queries
        #: Statistics of each label column (or of the mix) over all rows, where this
        #: objective's rows are a part of them (:meth:`part`); None: its rows are all of them.
        self._whole = whole

    def with_labels(self, labels) -> MultiLabel:
        """The same objective bound to the label columns ``labels`` (what :class:`gbrank.Ranker`
        does with a 2-D ``y``)."""
        settings = {name: getattr(self, name) for name in self._setting_names}
        return type(self)(labels=labels, hess_floor=self.hess_floor, hess_scale=self.hess_scale, **settings)

    def column_statistics(self, offsets) -> tuple:
        """The statistics of each label column (for ``aggregate="label"``, of the mixed label)
        over the bound rows, grouped by ``offsets``: what each label's objective reads of the
        whole data."""
        columns = self._mixed(offsets)[:, None] if self.aggregate == "label" else self.labels
        return tuple(Statistics(label_max=float(np.max(column, initial=0.0))) for column in columns.T)

    def part(self, queries, offsets) -> MultiLabel:
        """The same objective on the rows of ``queries`` (positions of the queries of
        ``offsets``, the bound rows' grouping), keeping the statistics of all the rows: what a
        Dask worker that holds those queries trains.

        Parameters
        ----------
        queries : array-like of int
            The queries, in the order of the worker's rows.
        offsets : array-like of int
            Offsets of the queries of all the bound rows.
        """
        if self.labels is None:
            raise ValueError("part() needs an objective bound to its label columns (multi_label(objective, labels))")
        offsets = np.asarray(offsets, dtype=np.int64)
        queries = np.asarray(queries, dtype=np.int64)
        sizes = np.diff(offsets)[queries]
        rows = np.repeat(offsets[queries], sizes) + (np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes))
        weights = self.weights[queries] if self.weights.ndim == 2 else self.weights
        settings = {name: getattr(self, name) for name in self._setting_names}
        settings["weights"] = weights
        return type(self)(labels=self.labels[rows], hess_floor=self.hess_floor, hess_scale=self.hess_scale,
                          whole=self._whole or self.column_statistics(offsets), **settings)

    def _mixed(self, offsets) -> np.ndarray:
        """The weighted combination of the label columns (``aggregate="label"``)."""
        return np.einsum("ij,ij->i", self.labels, np.repeat(self._row_weights(offsets), np.diff(offsets), axis=0))

    # ----------------------------------------------------------------- per dataset
    def _label_check(self, y_true, offsets):
        if self.labels is None:
            raise ValueError(
                "this multi-label objective has no label columns: give them with multi_label(objective, labels=Y) "
                "for lgb.train / xgb.train, or fit gbrank.Ranker with y of shape (n_rows, n_labels)"
            )
        labels = check_labels(y_true, offsets=offsets)
        n, expected = labels.shape[0], self.labels.shape[0]
        if n != expected:
            raise ValueError(
                f"the training data has {n} rows but the multi-label objective was given {expected} rows of labels: "
                "give multi_label(labels=...) the label columns of exactly the training rows, in their order. "
                "An lgb.cv / xgb.cv fold holds a subset of the rows: cross-validate with a loop instead, over "
                "gbrank.engines.query_folds(sizes, nfold=...), training each fold with lgb.train / xgb.train and "
                "multi_label(objective, labels=labels[train_rows]). On Dask, give gbrank.dask's training functions "
                "the label columns, label_col=[...], and the objective without labels"
            )
        # the engines hold labels as float32
        differs = np.flatnonzero(labels.astype(np.float32) != self.labels[:, 0].astype(np.float32))
        if differs.size:
            row = int(differs[0])
            raise ValueError(
                f"the training label at row {row} (query {int(np.searchsorted(offsets, row, side='right')) - 1}) is {labels[row]:g} but the "
                f"first label column holds {self.labels[row, 0]:g}: give the engine labels[:, 0] as its label, with "
                "the rows in the order of labels (gbrank.Ranker groups the rows by qid: give it the label columns as "
                "a 2-D y, and multi_label without labels)"
            )
        return labels

    def _row_weights(self, offsets) -> np.ndarray:
        """Weights per query, shape (n_queries, n_labels)."""
        n_queries = offsets.size - 1
        if self.weights.ndim == 2:
            if self.weights.shape[0] != n_queries:
                raise ValueError(f"weights per query have {self.weights.shape[0]} rows but the training data has "
                                 f"{n_queries} queries: give one row per training query, in their order; a "
                                 "cross-validation fold holds some of the queries and cannot split them (give "
                                 "one weight per label there)")
            return self.weights
        return np.broadcast_to(self.weights, (n_queries, self.weights.size))

    def _prepare(self, labels, offsets, statistics):
        weights = np.ascontiguousarray(self._row_weights(offsets))
        if self.aggregate == "constrained" and self.gain == "exp2":
            for j, column in enumerate(self.labels.T[1:], start=1):
                bad = np.flatnonzero((column != np.round(column)) | (column > EXP2_MAX_LABEL))
                if bad.size:
                    raise ValueError(
                        f"labels[{int(bad[0])}, {j}] is {column[bad[0]]:g}: the floors' NDCG@k with gain='exp2' "
                        f"takes integer labels 0..{EXP2_MAX_LABEL}; pass multi_label(..., gain='linear') for other "
                        "labels"
                    )
        inner = self.objective
        # each column's state from its own statistics (of all the rows), not from the first's
        whole = self._whole or self.column_statistics(offsets)
        if self.aggregate == "label":
            columns = self._mixed(offsets)[:, None]
        else:
            columns = self.labels
        states = tuple(inner._prepare(self._column_check(column, j, offsets), offsets, own)
                       for j, (column, own) in enumerate(zip(columns.T, whole)))
        return MultiLabelState(states, weights, offsets, self.labels,
                               query_keys(self.seed, np.ascontiguousarray(self.labels[:, 0]), offsets),
                               statistics.reduce if statistics is not None else None)

    def _column_check(self, column, j: int, offsets) -> np.ndarray:
        """The objective's check of one label column (of the mix), naming the column."""
        try:
            return self.objective._label_check(np.ascontiguousarray(column), offsets)
        except ValueError as exc:
            what = "the mixed label (aggregate='label')" if self.aggregate == "label" else f"label column {j}"
            raise ValueError(f"{what}: {exc}") from None

    # ----------------------------------------------------------------- per iteration
    def _label_weights(self, state: MultiLabelState, scores) -> np.ndarray:
        """The weight of each label in each query at these scores, shape (n_queries, n_labels)."""
        if self.aggregate == "stochastic":
            drawn = draw_labels(scores, state.offsets, np.cumsum(state.weights, axis=1), state.keys)
            return np.eye(state.weights.shape[1])[drawn]
        if self.aggregate == "constrained":
            boost = self.penalty * np.maximum(0.0, self.floors - self._mean_ndcg(state, scores))
            return state.weights + np.concatenate(([0.0], boost))[None, :]
        return state.weights

    def _mean_ndcg(self, state: MultiLabelState, scores) -> np.ndarray:
        """NDCG@k of each label after the first, the mean over all queries (over every
        worker's, with the state's allreduce)."""
        from ..metrics.ndcg import ndcg

        sizes = np.diff(state.offsets)
        sums = np.zeros(self.floors.size + 1)
        sums[-1] = sizes.size
        if sizes.size:
            # tied scores averaged, not taken in row order: at the first iteration every score
            # is tied, and the weights must not depend on how the rows of a query are ordered
            sums[:-1] = [ndcg(np.ascontiguousarray(column), scores, sizes, self.k, gain=self.gain, ties="average",
                              per_query=True).sum()
                         for column in state.labels.T[1:]]
        sums = sum_over_workers(sums, state.reduce)
        return sums[:-1] / max(sums[-1], 1.0)

    def _grad_hess(self, state: MultiLabelState, scores, grad, hess) -> None:
        inner = self.objective
        if self.aggregate == "label":
            g, h = inner._finish(state.inner[0], scores, None)
            grad += g
            hess += h
            return
        rows = np.diff(state.offsets)
        weights = self._label_weights(state, scores)
        for j, inner_state in enumerate(state.inner):
            w = np.repeat(weights[:, j], rows)
            if not w.any():
                continue
            # each label's gradient and hessian as the objective gives them (its hess_scale and
            # hess_floor applied), then weighted
            g, h = inner._finish(inner_state, scores, None)
            grad += w * g
            hess += w * h

    def _loss(self, state: MultiLabelState, scores) -> np.ndarray:
        inner = self.objective
        if self.aggregate == "label":
            return inner._loss(state.inner[0], scores)
        weights = self._label_weights(state, scores)
        return sum(weights[:, j] * inner._loss(s, scores) for j, s in enumerate(state.inner))

    def _params(self) -> dict[str, Any]:
        params = super()._params()
        for name in ("weights", "floors"):
            if params[name] is not None:
                params[name] = params[name].tolist()
        shown = None if self.labels is None else f"<{self.labels.shape[0]} x {self.labels.shape[1]}>"
        return {"labels": shown, **params}


def multi_label(
    objective: RankingObjective,
    labels=None,
    *,
    aggregate: str = "gradient",
    weights=None,
    floors=None,
    k: int = 10,
    penalty: float = 10.0,
    gain: str = "exp2",
    seed: int = 0,
    hess_floor: float = 1e-6,
    hess_scale: float = 1.0,
) -> MultiLabel:
    r"""Train one ranking objective on several label columns.

    Parameters
    ----------
    objective : gbrank objective
        The loss each label is trained with (``gbrank.lambdarank()``, ``gbrank.listnet()``,
        ...), with its own ``hess_scale`` and ``hess_floor`` applied to each label's hessian.
        With ``aggregate="label"`` it sees the mixed labels, which are fractional: use an
        objective that takes any label (e.g. a linear gain or target). The click objectives,
        which read display positions, are refused.
    labels : array-like of shape (n_rows, n_labels), optional
        The label columns of the training rows, in their order (only the row count and the
        first column are checked against the training set: rows swapped among equal first
        labels cannot be detected). The engine's label must be the first column (LightGBM's
        ``Dataset(label=labels[:, 0])``, XGBoost's
        ``DMatrix(label=labels[:, 0])``). Leave it out for :class:`gbrank.Ranker`, which
        binds the columns of its 2-D ``y``.
    aggregate : {"gradient", "label", "stochastic", "constrained"}, default="gradient"
        How the labels are combined: the weighted sum of the labels' gradients, the
        weighted sum of the labels, one label per query and iteration drawn with the
        weights, or the first label's objective with the others' NDCG@k kept above
        ``floors``. See :mod:`gbrank.objectives.multi_label`.
    weights : array-like of shape (n_labels,) or (n_queries, n_labels), optional
        Non-negative weights of the labels, normalised to sum to 1 (per query when 2-D,
        which ``"label"`` and ``"stochastic"`` take). Default: equal weights; for
        ``"constrained"``, all on the first label. Weights per query follow the queries in
        the order the objective trains them: the training set's with ``lgb.train`` /
        ``xgb.train``, ascending query id with :class:`gbrank.Ranker` given ``qid`` and on
        :mod:`gbrank.dask`; a cross-validation fold, which holds some of the queries, is
        refused.
    floors : array-like of shape (n_labels - 1,), optional
        ``"constrained"`` only: the lowest NDCG@``k`` of each label after the first, the
        mean over all training queries, with ``gain``, tied scores averaged and a query
        without a relevant document counting 1 (:func:`gbrank.metrics.ndcg`'s default).
    k : int, default=10
        Cut-off of the NDCG the floors speak of.
    penalty : float, default=10.0
        ``"constrained"``: weight added per unit of NDCG a label falls short of its floor.
    gain : {"exp2", "linear"}, default="exp2"
        ``"constrained"``: the gain of the NDCG the floors speak of, :math:`2^l - 1` (integer
        labels 0..31) or the label itself (any label).
    seed : int, default=0
        Seed of the ``"stochastic"`` draws.
    hess_floor : float, default=1e-6
        Lower bound on every row's hessian.
    hess_scale : float, default=1.0
        Factor on every row's hessian.

    Returns
    -------
    MultiLabel

    Examples
    --------
    >>> import numpy as np, gbrank
    >>> labels = np.array([[2, 0], [0, 1], [1, 1], [0, 0]], dtype=float)  # relevance, click
    >>> s = np.array([0.5, 1.0, -0.5, 0.2])
    >>> objective = gbrank.multi_label(gbrank.listnet(target="linear"), labels, weights=[0.7, 0.3])
    >>> objective.grad_hess(labels[:, 0], s, group=[4])[0].round(4).tolist()
    [-0.2014, 0.2713, -0.1689, 0.099]
    """
    return MultiLabel(objective=objective, labels=labels, aggregate=aggregate, weights=weights, floors=floors, k=k,
                      penalty=penalty, gain=gain, seed=seed, hess_floor=hess_floor, hess_scale=hess_scale)
