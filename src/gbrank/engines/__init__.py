"""One layer between gbrank and the engines: every front-end (``Ranker``, the benchmark
harness, ``gbrank.dask``) and every objective call goes through it.

* :func:`read`: the fields of a LightGBM ``Dataset`` or XGBoost ``DMatrix`` an objective
  reads (labels, query sizes, per-row weights, init score, positions as the user gave them,
  statistics of the whole data), with the refusals of what an engine would otherwise get
  silently wrong (``lightgbm.read``);
* :mod:`gbrank.engines.positions`: the one place that resolves displayed positions;
* :mod:`gbrank.engines.statistics`: statistics of the whole training data (label maximum,
  positions, sums over Dask workers), never of the slice an objective sees;
* :func:`is_builtin`: an engine's own ranking objective by name, or a gbrank one;
* :func:`start_score`: the starting score a custom objective trains from, 0 in both engines;
* :func:`watched` and :class:`BestRound`: the early-stopping rule, **the first metric on
  the last eval set, higher is better** (lower for the calibration metrics), with the best
  round as the model's length;
* :func:`report_callback`: an engine callback that hands a tuner each iteration's metric;
* :func:`predict`: raw scores of a LightGBM or XGBoost booster, as float64;
  :func:`best_rounds`: the rounds it should predict with;
* :func:`query_folds`: cross-validation folds that keep queries whole, for ``lgb.cv(folds=)``;
* :func:`with_position`: displayed positions bound to an objective that reads them;
* :func:`gradients`: the one path from an engine's call to an objective's kernels, through
  the training set's binding (:mod:`gbrank.engines.bindings`);
* :func:`kernel_threads`: where an objective's kernels run inside an engine's training
  (LightGBM's OpenMP team, no larger than the one it trains with).

The engine modules, :mod:`gbrank.engines.lightgbm` and :mod:`gbrank.engines.xgboost`,
import their engine only inside the functions that build or train.
"""

from __future__ import annotations

import numpy as np

from ..groups import sizes_to_offsets, sizes_to_qid
from . import bindings, lightgbm, positions, statistics, xgboost
from ._common import (
    BUILTIN_OBJECTIVES,
    BestRound,
    Fields,
    PositionedObjective,
    engine_of,
    gradients,
    is_builtin,
    kernel_threads,
    reads_position,
    start_score,
    uses_position,
    watched,
    with_position,
)
from .statistics import Statistics

__all__ = [
    "BUILTIN_OBJECTIVES",
    "BestRound",
    "Fields",
    "PositionedObjective",
    "Statistics",
    "bindings",
    "positions",
    "statistics",
    "best_rounds",
    "engine_of",
    "gradients",
    "is_builtin",
    "kernel_threads",
    "predict",
    "query_folds",
    "read",
    "reads_position",
    "report_callback",
    "start_score",
    "uses_position",
    "watched",
    "with_position",
]


def read(data, *, position: bool = False) -> Fields:
    """The fields of a ``lightgbm.Dataset`` or any ``xgboost.DMatrix``.

    With ``position``, also the displayed positions (:mod:`gbrank.engines.positions`): a
    LightGBM Dataset's as the user gave them to :func:`gbrank.engines.lightgbm.dataset`
    (refused with the fix when LightGBM holds only ids of them), XGBoost's row order within
    each query, with a warning naming how to give them.
    """
    engine = engine_of(data)
    if engine == "lightgbm":
        return lightgbm.read(data, position=position)
    if engine == "xgboost":
        return xgboost.read(data, position=position)
    raise TypeError(f"expected a lightgbm.Dataset or an xgboost.DMatrix, got {type(data).__name__}")


def report_callback(engine: str, report, data_name: str, metric_name: str):
    """A ``"lightgbm"`` or ``"xgboost"`` training callback calling ``report(iteration, value)``
    with ``metric_name`` on the eval set ``data_name`` after each iteration (from 1)."""
    if engine == "lightgbm":
        return lightgbm.Report(report, data_name, metric_name)
    if engine == "xgboost":
        return xgboost.report_callback(report, data_name, metric_name)
    raise ValueError(f"engine must be 'lightgbm' or 'xgboost', got {engine!r}")


def predict(booster, X, rounds: int | None = None) -> np.ndarray:
    """Raw scores (float64) of the rows of ``X`` from the first ``rounds`` rounds of a
    ``lightgbm.Booster`` or ``xgboost.Booster``; by default the engine's choice. ``rounds``
    lies in 1 .. the rounds trained (the engines read 0, a negative or a larger number
    each their own way)."""
    module = type(booster).__module__
    if module.startswith("lightgbm"):
        trained, engine = booster.current_iteration(), lightgbm
    elif module.startswith("xgboost"):
        trained, engine = booster.num_boosted_rounds(), xgboost
    else:
        raise TypeError(f"expected a lightgbm.Booster or an xgboost.Booster, got {type(booster).__name__}")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer))
                               or not 1 <= rounds <= trained):
        raise ValueError(f"rounds must be an integer in 1 .. {trained} (the rounds trained) or None, got {rounds!r}")
    return engine.predict(booster, X, rounds)

def best_rounds(booster) -> int:
    """Rounds a ``lightgbm.Booster`` or ``xgboost.Booster`` should predict with: its best
    round (1-based) when early stopping marked one, otherwise every round trained.

    XGBoost's ``Booster.predict`` uses every round unless told otherwise, even after early
    stopping; LightGBM's uses the best one.
    """
    module = type(booster).__module__
    if module.startswith("lightgbm"):
        return lightgbm.best_iteration(booster)
    if module.startswith("xgboost"):
        return xgboost.best_iteration(booster)
    raise TypeError(f"expected a lightgbm.Booster or an xgboost.Booster, got {type(booster).__name__}")


def query_folds(data, nfold: int = 5, *, shuffle: bool = True, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train_rows, test_rows)`` pairs that keep every query whole.

    Parameters
    ----------
    data : lightgbm.Dataset, xgboost.DMatrix or array-like of int
        The training set (its query groups are read) or the query sizes.
    nfold : int, default=5
        Number of folds; queries are dealt into ``nfold`` parts of nearly equal counts.
    shuffle : bool, default=True
        Shuffle the queries (with ``seed``) before dealing them.
    seed : int, default=0

    Returns
    -------
    list of (ndarray, ndarray)
        Row indices, sorted, for ``lgb.cv(folds=...)``, or for a loop over the folds with
        ``lgb.train`` / ``xgb.train`` (``xgb.cv`` refuses folds of a DMatrix with groups:
        XGBoost cannot slice one).
    """
    if engine_of(data) == "lightgbm":
        sizes = data.get_group()
        if sizes is None:
            raise ValueError("the Dataset has no query groups: build it with group=")
    elif engine_of(data) == "xgboost":
        sizes = xgboost.group_sizes(data, purpose="to split it into folds of whole queries")
    else:
        sizes = data
    offsets = sizes_to_offsets(sizes)
    n_queries = offsets.size - 1
    if isinstance(nfold, bool) or not isinstance(nfold, (int, np.integer)) or not 2 <= nfold <= n_queries:
        raise ValueError(f"nfold must be an integer from 2 to the number of queries ({n_queries}), got {nfold!r}")
    order = np.random.default_rng(seed).permutation(n_queries) if shuffle else np.arange(n_queries)
    query_of_row = sizes_to_qid(np.diff(offsets))
    folds = []
    for part in np.array_split(order, nfold):
        test = np.isin(query_of_row, part)
        folds.append((np.flatnonzero(~test), np.flatnonzero(test)))
    return folds
