"""Dask: the thin adapters that drive ``lightgbm.dask`` and ``xgboost.dask`` for
:mod:`gbrank.dask`, and what a gbrank objective needs on a worker.

Every worker calls the objective on its own rows (whole queries); what an objective needs of
the whole data comes with it as :class:`gbrank.engines.Statistics`, computed on the client
before training, with ``reduce`` an allreduce over the workers for what changes during
training (the propensity estimate's sums).

XGBoost 3.2 and LightGBM 4.7 facts this module relies on (read in their sources):

* ``xgboost.dask`` concatenates a worker's partitions in partition order and, when the query
  ids are then not ascending, re-sorts the rows with an unstable ``np.argsort``, which
  scrambles the rows within a query (``sort_data_by_qid``); :mod:`gbrank.dask` refuses such
  frames.
* XGBoost has no position field: the positions travel in ``label_lower_bound``, a per-row
  field that XGBoost keeps in step with the rows and reads only for its survival objectives.
* ``xgboost.collective.allreduce`` works inside ``xgboost.dask.train``, where the objective
  is called: every worker calls the objective once per round, empty workers included.
* ``DaskLGBMRanker`` passes no positions to a worker's Dataset; its custom objective gets
  LightGBM's four arguments and no way to reduce over workers.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import positions as _positions
from ._common import gradients
from .statistics import Statistics

__all__ = ["LightGBMWorkerObjective", "XGBoostWorkerObjective", "allreduce_sum", "lightgbm_train", "xgboost_matrix",
           "xgboost_train"]


def allreduce_sum(values: np.ndarray) -> np.ndarray:
    """Element-wise sum over the workers of the running ``xgboost.dask.train``."""
    from xgboost import collective

    return collective.allreduce(np.ascontiguousarray(values, dtype=np.float64), collective.Op.SUM)


def _worker_threads(call: Callable[[], Any]) -> Any:
    """Run the objective's kernels on the worker's thread budget.

    numba sizes its thread pool by the machine's cores, while a Dask worker is given
    ``nthreads`` (the engines train with that many): without this, every worker's kernels
    would use every core, competing with the other workers' trees and kernels.
    """
    try:
        import numba
        from distributed import get_worker

        threads = min(get_worker().state.nthreads, numba.config.NUMBA_NUM_THREADS)
    except (ImportError, ValueError, AttributeError):
        return call()
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return call()
    finally:
        numba.set_num_threads(previous)


class XGBoostWorkerObjective:
    """A gbrank objective on one XGBoost worker: its own DMatrix, the positions carried in
    ``label_lower_bound`` (with ``positions``), the whole data's ``statistics``, the worker's
    threads. An empty worker returns nothing, or, for an objective that
    ``reduces_over_workers``, takes part with no rows: it joins the allreduces."""

    def __init__(self, objective, statistics: Statistics, positions: bool) -> None:
        self.objective = objective
        self.statistics = statistics
        self.positions = positions

    def __call__(self, preds, dtrain):
        from . import xgboost as engine

        if dtrain.num_row() == 0:
            if not getattr(self.objective, "reduces_over_workers", False):
                return np.zeros(0), np.zeros(0)
            empty = np.zeros(0)
            return _worker_threads(lambda: gradients(
                self.objective, empty, dtrain, labels=empty, sizes=np.zeros(0, dtype=np.int64),
                position=np.zeros(0, dtype=np.int64) if self.positions else None, statistics=self.statistics))
        fields = engine.read(dtrain)
        position = None
        if self.positions:
            bound = dtrain.get_float_info("label_lower_bound")
            position = _positions.check(bound, fields.labels.size, name="position column")
        return _worker_threads(lambda: gradients(
            self.objective, preds, dtrain, labels=fields.labels, sizes=fields.sizes, weights=fields.weights,
            position=position, statistics=self.statistics))


class LightGBMWorkerObjective:
    """A gbrank objective on one LightGBM worker (the four-argument form), with the whole
    data's ``statistics``, on the worker's threads."""

    def __init__(self, objective, statistics: Statistics) -> None:
        self.objective = objective
        self.statistics = statistics

    def __call__(self, y_true, y_pred, weight, group):
        return _worker_threads(lambda: gradients(
            self.objective, y_pred, labels=y_true, sizes=group, weights=weight, statistics=self.statistics))


def lightgbm_train(client, X, y, group, *, weight=None, objective, statistics: Statistics | None,
                   num_boost_round: int, params: dict | None):
    """``DaskLGBMRanker`` with a gbrank objective (wrapped for the workers) or a built-in one."""
    import warnings

    from lightgbm.dask import DaskLGBMRanker

    model = DaskLGBMRanker(
        client=client,
        objective=objective if isinstance(objective, str) else LightGBMWorkerObjective(objective, statistics),
        n_estimators=int(num_boost_round),
        **{"verbosity": -1, **(params or {})},
    )
    with warnings.catch_warnings():
        # LGBMRanker always carries n_jobs; the Dask wrapper replaces it by the worker's threads.
        warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
        model.fit(X, y, group=group, sample_weight=weight)
    return model.booster_


def xgboost_matrix(client, X, y, qid, position=None):
    """A ``DaskDMatrix`` (Dask arrays), the positions, if any, in ``label_lower_bound``."""
    from xgboost import dask as dxgb

    extra = {} if position is None else {"label_lower_bound": position}
    return dxgb.DaskDMatrix(client, X, y, qid=qid, **extra)


def xgboost_train(client, params: dict, dtrain, objective, *, statistics: Statistics | None, positions: bool,
                  num_boost_round: int, evals: Sequence = (), custom_metric=None, callbacks: Sequence = ()):
    """``xgboost.dask.train`` with a gbrank objective (wrapped for the workers, with the
    allreduce of :func:`allreduce_sum`) or a built-in one."""
    from dataclasses import replace

    from xgboost import dask as dxgb

    obj = None
    if not isinstance(objective, str):
        obj = XGBoostWorkerObjective(objective, replace(statistics or Statistics(), reduce=allreduce_sum), positions)
    return dxgb.train(
        client,
        params,
        dtrain,
        num_boost_round=int(num_boost_round),
        evals=list(evals) or None,
        obj=obj,
        custom_metric=custom_metric,
        callbacks=list(callbacks) or None,
        verbose_eval=False,
    )
