"""What both engine adapters share: the fields of a training set, the objective dispatch,
the starting score, the early-stopping rule and the parameters a front-end sets itself.

Nothing here imports an engine: the readers call methods of the objects the engines hand
to an objective, and the engines are imported inside the functions that build or train.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, replace
from typing import Any, ContextManager

import numpy as np

from .._parallel import engine_threads
from . import bindings
from . import positions as _positions
from .statistics import Statistics

__all__ = [
    "BUILTIN_OBJECTIVES",
    "BestRound",
    "Fields",
    "engine_of",
    "gradients",
    "is_builtin",
    "kernel_threads",
    "reads_position",
    "start_score",
    "uses_position",
    "watched",
    "with_position",
]

#: Ranking objectives built into each engine (with LightGBM's aliases of rank_xendcg).
BUILTIN_OBJECTIVES = {
    "lightgbm": ("lambdarank", "rank_xendcg", "xendcg", "xe_ndcg", "xe_ndcg_mart", "xendcg_mart"),
    "xgboost": ("rank:ndcg", "rank:pairwise", "rank:map"),
}


@dataclass(frozen=True)
class Fields:
    """The fields of one engine training set that a ranking objective reads.

    Attributes
    ----------
    labels : ndarray of shape (n_rows,)
        As the engine stores them (float32 in both).
    sizes : ndarray of int64, shape (n_queries,)
        Query sizes; the rows of a query are contiguous.
    weights : ndarray of float64, shape (n_rows,), or None
        Per-row weights. XGBoost's per-query weights are spread to the query's rows.
    init_score : ndarray or None
        LightGBM's ``init_score`` / XGBoost's ``base_margin``; the scores an objective
        receives already include it.
    position : ndarray of int64, shape (n_rows,), or None
        The displayed positions as the user gave them (1-based, -1 for rows never shown),
        read only when asked for: see :mod:`gbrank.engines.positions`.
    statistics : Statistics or None
        Statistics of the whole training data where the rows are a part of it (an
        ``lgb.cv`` fold): see :mod:`gbrank.engines.statistics`.
    """

    labels: np.ndarray
    sizes: np.ndarray
    weights: np.ndarray | None = None
    init_score: np.ndarray | None = None
    position: np.ndarray | None = None
    statistics: Statistics | None = None


def engine_of(obj: Any) -> str | None:
    """``"lightgbm"`` for a ``lightgbm.Dataset``, ``"xgboost"`` for an ``xgboost.DMatrix``
    (any kind), None for anything else. Imports neither engine."""
    module = type(obj).__module__
    if module.startswith("lightgbm") and hasattr(obj, "get_label"):
        return "lightgbm"
    if module.startswith("xgboost") and hasattr(obj, "get_uint_info"):
        return "xgboost"
    return None


def is_builtin(objective: Any, engine: str) -> bool:
    """Whether ``objective`` names one of ``engine``'s own ranking objectives.

    A string that is not one of them is refused with the list, so that a typo never trains
    a regression objective.
    """
    if not isinstance(objective, str):
        return False
    if objective not in BUILTIN_OBJECTIVES[engine]:
        raise ValueError(
            f"{objective!r} is not a ranking objective of {engine}; built-in ones are "
            f"{list(BUILTIN_OBJECTIVES[engine])}, or pass a gbrank objective"
        )
    return True


def _unwrap(objective: Any) -> Any:
    # Wrappers that time or bind an objective keep it in ``.objective``.
    while hasattr(objective, "objective") and callable(getattr(objective, "objective")):
        objective = objective.objective
    return objective


def start_score(objective: Any) -> float | None:
    """The score every row starts from, or None to keep the engine's own choice.

    Built-in objectives keep the engine's (LightGBM's ``boost_from_average``, XGBoost's
    fitted intercept). A custom objective starts from 0: LightGBM always does so, and
    XGBoost's ``base_score`` is set to 0 so that both engines train the same model. For
    shift-invariant losses the start does not change the model; for the others
    (RankCosine) it does.
    """
    if isinstance(objective, str):
        return None
    return 0.0


def uses_position(objective: Any) -> bool:
    """Whether a gbrank objective reads the displayed positions (``uses_position = True``)."""
    return bool(getattr(_unwrap(objective), "uses_position", False))


def watched(names: list[str] | tuple[str, ...], metric_names: list[str] | tuple[str, ...]) -> tuple[str, str]:
    """The early-stopping rule: ``(eval set, metric)`` that decides when to stop.

    **The first metric on the last eval set, higher is better** (lower for the calibration
    metrics ``logloss`` and ``ece``, as the metric states). The best round is the first
    round reaching the best value; training stops after ``rounds`` rounds without a
    strictly better one, and prediction uses the rounds up to the best.
    """
    if not names:
        raise ValueError("early stopping needs an eval set to watch")
    if not metric_names:
        raise ValueError("early stopping needs a metric to watch")
    return names[-1], metric_names[0]


class BestRound:
    """Tracks the best round of the watched metric (see :func:`watched`), the highest
    value, or the lowest with ``higher_is_better=False``.

    ``update(score)`` is called once per round, rounds counted from 1, and returns True
    when training should stop.
    """

    def __init__(self, rounds: int, *, higher_is_better: bool = True) -> None:
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise ValueError(f"early_stopping_rounds must be a positive integer, got {rounds!r}")
        self.rounds = int(rounds)
        self.sign = 1.0 if higher_is_better else -1.0
        self.best_score = -np.inf * self.sign
        self.best_round = 0
        self.round = 0

    def update(self, score: float) -> bool:
        self.round += 1
        if self.sign * score > self.sign * self.best_score:
            self.best_score = float(score)
            self.best_round = self.round
        return self.round - self.best_round >= self.rounds


#: Parameters that change how many rounds an engine trains: LightGBM's ``num_iterations`` and
#: ``early_stopping_round`` with their aliases (LightGBM takes any of them in ``params`` over
#: ``lgb.train``'s ``num_boost_round``), and the scikit-learn spellings.
ROUNDS_PARAMS = frozenset({
    "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees", "num_round", "num_rounds", "nrounds",
    "num_boost_round", "n_estimators", "max_iter",
    "early_stopping_round", "early_stopping_rounds", "early_stopping", "n_iter_no_change",
})

#: What a front-end that chooses the objective, the metrics and the rounds from its own
#: arguments sets itself: the rounds, the objective (LightGBM's aliases too) and the metrics.
FRONT_END_PARAMS = ROUNDS_PARAMS | {
    "objective", "objective_type", "app", "application", "loss",
    "metric", "metrics", "metric_types", "eval_metric",
}


def refuse_params(params: dict | None, names: frozenset, fix: str) -> None:
    """Refuse engine ``params`` that are not a dict, or that set any of ``names``: in a
    front-end that sets them from its own arguments they would override those arguments
    (LightGBM's ``num_trees`` over the rounds) or be dropped without a word."""
    if params is not None and not isinstance(params, dict):
        raise TypeError(f"params must be a dict of engine parameters, got {type(params).__name__}")
    given = sorted(names.intersection(params or {}))
    if given:
        raise ValueError(f"params may not set {given}: {fix}")


_NO_ENGINE = contextlib.nullcontext()


def kernel_threads(owner: Any) -> ContextManager[None]:
    """Where the kernels of an objective call for the training set ``owner`` run: inside
    LightGBM's training on its OpenMP team, at most as many threads as it trains with (its
    ``num_threads``, resolved from the Dataset's parameters as LightGBM resolves them;
    ``gbrank._parallel.engine_threads``); elsewhere (XGBoost, which gives an objective no
    thread count, plain arrays) on gbrank's pool of ``numba.get_num_threads()`` threads."""
    if engine_of(owner) == "lightgbm":
        from .lightgbm import training_threads

        return engine_threads("lightgbm", training_threads(getattr(owner, "params", None)))
    return _NO_ENGINE


def reads_position(objective: Any) -> bool:
    """Whether ``objective`` needs the displayed positions of its training set: a gbrank
    objective's ``reads_position``, another package's ``uses_position``."""
    reads = getattr(objective, "reads_position", None)
    return bool(reads) if reads is not None else uses_position(objective)


def gradients(objective, preds, data=None, *, labels=None, sizes=None, weights=None, position=None,
              statistics: Statistics | None = None, init_score=None):
    """``(grad, hess)`` of ``objective`` at ``preds``: the one path from an engine's call to
    the kernels.

    The fields are read from the engine's training set ``data`` (a ``lightgbm.Dataset`` or
    ``xgboost.DMatrix``; the positions too where the objective reads them and none are
    given), or given (``labels``, ``sizes``, ``weights``, ``init_score``: LightGBM's
    scikit-learn wrapper, ``grad_hess``, a Dask worker). A gbrank objective finds its
    binding to them in :mod:`gbrank.engines.bindings` (bound anew where a field changed) and runs its kernels
    where :func:`kernel_threads` says; an objective of another package gets
    ``grad_hess(..., position=)`` when there are positions, else the engine's own call.
    """
    from . import read

    if labels is None:
        fields = read(data, position=position is None and reads_position(objective))
        labels, sizes, weights, init_score = fields.labels, fields.sizes, fields.weights, fields.init_score
        position = fields.position if position is None else position
        statistics = statistics or fields.statistics
    if getattr(objective, "bind", None) is None:
        if position is not None:
            return objective.grad_hess(labels, preds, sizes, weights, position=position)
        return objective(preds, data) if data is not None else objective(labels, preds, weights, sizes)
    owner = data if data is not None else bindings.owner_of_labels(labels)
    if owner is None and getattr(objective, "mode", None) == "estimate":
        warnings.warn(
            f"{objective!r} estimates its propensities across calls, but the labels are a {type(labels).__name__}, "
            "not a numpy array: nothing is kept between calls, so every call starts the estimate afresh. Pass "
            "y_true as a numpy array (the same one at every call), or bind once with objective.bind(labels, "
            "group, position=...) and call the binding's grad_hess",
            UserWarning, stacklevel=3)
    binding = bindings.bound(objective, owner, labels, sizes, weights, position, statistics)
    with kernel_threads(data):
        return binding.grad_hess(preds, init_score=init_score)


class PositionedObjective:
    """A gbrank objective that reads positions, with the positions of one training set.

    The engines' training sets carry no positions an objective can read (XGBoost has no
    such field; LightGBM keeps only ids of them once a Dataset is constructed), so they
    travel with the objective: ``f(preds, data)`` reads the other fields from ``data`` and
    hands the positions to the objective. The rows must be in the order of ``position``;
    an ``lgb.cv`` fold takes its rows of them. ``"row_order"`` says that each query's rows
    are in display order (positions 1, 2, 3, ...). ``statistics`` are those of the whole
    training data (:mod:`gbrank.engines.statistics`), given by a front-end that sees more
    than ``data`` (a Dask worker's part).
    """

    def __init__(self, objective, position, statistics: Statistics | None = None) -> None:
        self.objective = objective
        self.row_order = isinstance(position, str)
        self.position = None
        if not self.row_order:
            values = np.asarray(position)
            if values.ndim != 1:
                raise ValueError(
                    f"position must hold one display position per row of the training set (a 1-d array), got shape "
                    f"{values.shape}; or 'row_order' where each query's rows are in display order"
                )
            self.position = _positions.check(values, values.size)
            self.position.setflags(write=False)
        self.statistics = statistics

    def __setstate__(self, state) -> None:
        # a deep copy or an unpickled one holds its own array, read-only as the original's:
        # its shallow copies share it
        self.__dict__.update(state)
        if self.position is not None:
            self.position.setflags(write=False)

    def __call__(self, preds, data):
        from . import read

        fields = read(data)
        n = fields.labels.size
        statistics = self.statistics or fields.statistics
        if self.row_order:
            position = _positions.row_order(fields.sizes, asked=True)
        else:
            position = _positions.of_rows(self.position, data, n)
            if statistics is None or statistics.n_positions is None:
                # given for the whole training set: an lgb.cv fold's estimate spans its positions
                statistics = replace(statistics or Statistics(), n_positions=max(int(self.position.max(initial=1)), 1))
        return gradients(self.objective, preds, data, labels=fields.labels, sizes=fields.sizes,
                         weights=fields.weights, position=position, statistics=statistics,
                         init_score=fields.init_score)

    def binding(self, data):
        """The objective's binding to the training set ``data`` (see
        :meth:`gbrank.objectives._base.RankingObjective.binding`)."""
        return self.objective.binding(data)

    @property
    def propensity_(self):
        raise AttributeError(
            "the propensity estimate belongs to the training set, not to the objective: read "
            "it as with_position(...).binding(dtrain).propensity_ (or objective.binding(dtrain).propensity_)"
        )

    def __repr__(self) -> str:
        return f"with_position({self.objective!r}, {'row_order' if self.row_order else '[...]'})"


def with_position(objective, position) -> PositionedObjective:
    """Bind ``position`` to an objective with ``uses_position = True``, for ``lgb.train`` and
    ``xgb.train``.

    Parameters
    ----------
    objective : gbrank objective
        One that reads positions (the click objectives).
    position : array-like of int, shape (n_rows,), or "row_order"
        The display position of each row of the training set (1 = top, -1 if never shown),
        in its row order (a pandas Series is read by its values); or ``"row_order"``: each
        query's rows are in display order, from position 1.
    """
    if not uses_position(objective):
        raise ValueError(
            f"{objective!r} does not read positions (uses_position is not True): drop the positions "
            "or use an objective that reads them"
        )
    if isinstance(position, str) and position != _positions.ROW_ORDER:
        raise ValueError(f"position must be an array of positions or {_positions.ROW_ORDER!r}, got {position!r}")
    return PositionedObjective(objective, position)
