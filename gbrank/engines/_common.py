"""What both engine adapters share: the fields of a training set, the objective dispatch,
the starting score and the early-stopping rule.

Nothing here imports an engine: the readers call methods of the objects the engines hand
to an objective, and the engines are imported inside the functions that build or train.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BUILTIN_OBJECTIVES",
    "BestRound",
    "Fields",
    "engine_of",
    "is_builtin",
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
    position : ndarray of int, shape (n_rows,), or None
        LightGBM's ``Dataset(position=)`` field as LightGBM keeps it: ``Metadata::SetPosition``
        replaces the positions by ids of the distinct values in order of first appearance,
        and the Python ``Dataset`` then holds those ids. They serve LightGBM's own
        position-bias model; a loss that needs the displayed ranks gets them through
        :func:`with_position`. XGBoost has no such field.
    """

    labels: np.ndarray
    sizes: np.ndarray
    weights: np.ndarray | None = None
    init_score: np.ndarray | None = None
    position: np.ndarray | None = None


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

    **The first metric on the last eval set, higher is better.** The best round is the
    first round reaching the highest value; training stops after ``rounds`` rounds
    without a strictly higher value, and prediction uses the rounds up to the best.
    """
    if not names:
        raise ValueError("early stopping needs an eval set to watch")
    if not metric_names:
        raise ValueError("early stopping needs a metric to watch")
    return names[-1], metric_names[0]


class BestRound:
    """Tracks the best round of the watched metric (see :func:`watched`).

    ``update(score)`` is called once per round, rounds counted from 1, and returns True
    when training should stop.
    """

    def __init__(self, rounds: int) -> None:
        if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
            raise ValueError(f"early_stopping_rounds must be a positive integer, got {rounds!r}")
        self.rounds = int(rounds)
        self.best_score = -np.inf
        self.best_round = 0
        self.round = 0

    def update(self, score: float) -> bool:
        self.round += 1
        if score > self.best_score:
            self.best_score = float(score)
            self.best_round = self.round
        return self.round - self.best_round >= self.rounds


class PositionedObjective:
    """A gbrank objective that reads positions, bound to the positions of one training set.

    Neither engine hands the displayed ranks to an objective (XGBoost has no position field;
    LightGBM keeps only ids of the distinct positions), so they travel with the objective:
    ``f(preds, data)`` reads the other fields from ``data`` and passes ``position=`` to the
    objective's ``grad_hess``. The rows must be in the order of ``position``.
    """

    def __init__(self, objective, position) -> None:
        self.objective = objective
        self.position = np.asarray(position, dtype=np.int64)

    def __call__(self, preds, data):
        from . import read

        fields = read(data)
        if fields.labels.size != self.position.size:
            raise ValueError(f"{self.position.size} positions for training data of {fields.labels.size} rows")
        return self.objective.grad_hess(fields.labels, preds, fields.sizes, fields.weights, position=self.position)


def with_position(objective, position) -> PositionedObjective:
    """Bind ``position`` (displayed rank of each row, 1-based) to an objective with
    ``uses_position = True``, for ``lgb.train`` and ``xgb.train``."""
    if not uses_position(objective):
        raise ValueError(
            f"{objective!r} does not read positions (uses_position is not True): drop the positions "
            "or use an objective that reads them"
        )
    return PositionedObjective(objective, position)
