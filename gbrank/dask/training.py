"""Training on a Dask cluster with gbrank objectives, both engines through
:mod:`gbrank.engines`: every worker computes the gradients of its own whole queries."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from ..engines import is_builtin, watched
from ..engines import lightgbm as lightgbm_engine
from ..engines import xgboost as xgboost_engine
from .layout import check_partitions, partition_rows, query_sizes, require_frame
from .metrics import distributed_metrics

__all__ = ["train_lightgbm", "train_xgboost"]


def _columns(df, label_col, qid_col, weight_col, features):
    for name in (label_col,) + ((weight_col,) if weight_col else ()):
        if name not in df.columns:
            raise ValueError(f"the DataFrame has no column {name!r}; columns: {list(df.columns)}")
    if features is None:
        features = [c for c in df.columns if c not in (label_col, qid_col, weight_col)]
    features = list(features)
    if not features:
        raise ValueError("no feature columns")
    return features


def train_lightgbm(
    client,
    df,
    objective: Callable | str,
    *,
    label_col: str = "label",
    qid_col: str = "qid",
    weight_col: str | None = None,
    features: Sequence[str] | None = None,
    num_boost_round: int = 100,
    params: dict[str, Any] | None = None,
    check: bool = True,
):
    """Train LightGBM on a Dask cluster with a gbrank objective (``DaskLGBMRanker``).

    Parameters
    ----------
    client : distributed.Client
        The cluster.
    df : dask.dataframe.DataFrame
        Features, labels and query ids, every query whole in one partition (see
        :func:`partition_queries`).
    objective : gbrank objective, callable or str
        A gbrank objective, which each worker calls on its own rows with its own group sizes
        (LightGBM's four-argument form); or ``"lambdarank"`` / ``"rank_xendcg"``.
    label_col, qid_col : str
        Names of the label and query-id columns.
    weight_col : str, optional
        Column of per-row sample weights.
    features : sequence of str, optional
        Feature columns; default every column but the label, query-id and weight columns.
    num_boost_round : int, default=100
        Boosting rounds.
    params : dict, optional
        LightGBM parameters (``num_leaves``, ``learning_rate``, ...); each worker uses its
        Dask threads. ``verbosity`` defaults to -1.
    check : bool, default=True
        First verify with :func:`check_partitions` that no query crosses a partition (one
        pass over the query ids). Empty partitions (e.g. after a filter) are dropped either
        way: LightGBM cannot build a Dataset from one.

    Returns
    -------
    lightgbm.Booster
        The trained model (identical on every worker).

    Notes
    -----
    Custom metrics are not reduced across machines by LightGBM, so no eval sets are taken
    here: score the model with :func:`predict` and :func:`evaluate`, which are exact.
    """
    from lightgbm.dask import DaskLGBMRanker

    builtin = is_builtin(objective, "lightgbm")
    lightgbm_engine.check_params(params, objective)
    require_frame(df, qid_col)
    features = _columns(df, label_col, qid_col, weight_col, features)
    if check:
        rows = check_partitions(df, qid_col)["rows"].to_numpy()
    else:
        rows = partition_rows(df[qid_col])
    if not rows.any():
        raise ValueError("the DataFrame has no rows")
    if not rows.all():
        # LightGBM cannot build a Dataset from an empty partition (e.g. after a filter), and a
        # worker left without rows would fail; drop them, the others stay where they are.
        df = df.partitions[[int(i) for i in np.flatnonzero(rows)]]
    model = DaskLGBMRanker(
        client=client,
        objective=objective if builtin else _LightGBMWorkerObjective(objective),
        n_estimators=int(num_boost_round),
        **{"verbosity": -1, **(params or {})},
    )
    with warnings.catch_warnings():
        # LGBMRanker always carries n_jobs; the Dask wrapper replaces it by the worker's threads.
        warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
        model.fit(
            df[features],
            df[label_col],
            group=query_sizes(df, qid_col),
            sample_weight=None if weight_col is None else df[weight_col],
        )
    return model.booster_


def _worker_threads(objective):
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
        return objective()
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return objective()
    finally:
        numba.set_num_threads(previous)


class _WorkerObjective:
    """A gbrank objective on one XGBoost worker: reads its own DMatrix on the worker's
    threads; empty workers return nothing."""

    def __init__(self, objective):
        self.objective = objective

    def __call__(self, preds, dtrain):
        if dtrain.num_row() == 0:
            return np.zeros(0), np.zeros(0)
        return _worker_threads(lambda: self.objective(preds, dtrain))


class _LightGBMWorkerObjective:
    """A gbrank objective on one LightGBM worker (the four-argument form), on the worker's threads."""

    def __init__(self, objective):
        self.objective = objective

    def __call__(self, y_true, y_pred, weight, group):
        return _worker_threads(lambda: self.objective(y_true, y_pred, weight, group))


def train_xgboost(
    client,
    df,
    objective: Callable | str,
    *,
    label_col: str = "label",
    qid_col: str = "qid",
    features: Sequence[str] | None = None,
    num_boost_round: int = 100,
    params: dict[str, Any] | None = None,
    evals: Sequence[tuple[Any, str]] | None = None,
    metrics="ndcg@10",
    early_stopping_rounds: int | None = None,
    evals_result: dict | None = None,
    check: bool = True,
    **conventions,
):
    """Train XGBoost on a Dask cluster with a gbrank objective (``xgboost.dask.train``).

    Parameters
    ----------
    client, df, label_col, qid_col, features, num_boost_round
        As in :func:`train_lightgbm` (no weight column).
    objective : gbrank objective, callable or str
        A gbrank objective, called by each worker as ``f(preds, dtrain)`` on its own
        DMatrix (whose rows XGBoost may have re-sorted by query id); or ``"rank:ndcg"``,
        ``"rank:pairwise"``, ``"rank:map"``.
    params : dict, optional
        XGBoost parameters; each worker uses its Dask threads.
    evals : list of (dask DataFrame, str), optional
        Eval sets (same columns, queries whole) evaluated every round with
        :class:`DistributedMetrics` (exact over workers).
    metrics : str or sequence, default="ndcg@10"
        Metric specs for ``evals``; early stopping watches the first on the last eval set.
    early_stopping_rounds : int, optional
        Stop after this many rounds without improvement; the booster's ``best_iteration``
        (0-based) marks the best round.
    evals_result : dict, optional
        Filled with ``{eval_name: {metric_name: [values]}}``.
    check : bool, default=True
        First verify with :func:`check_partitions` that no query crosses a partition, in
        ``df`` and in every eval set.
    **conventions
        Metric conventions (``gain``, ``no_relevant``, ...).

    Returns
    -------
    xgboost.Booster

    Notes
    -----
    Sample weights are not taken: ``xgboost.dask`` does not implement per-query weights.
    """
    import xgboost as xgb
    from xgboost import dask as dxgb

    frames = [df] + [frame for frame, _ in evals or []]
    for frame in frames:
        require_frame(frame, qid_col)
        if check:
            check_partitions(frame, qid_col)
    features = _columns(df, label_col, qid_col, None, features)

    def matrix(frame):
        # Unnamed arrays: a worker that holds no rows of an eval set gets an empty DMatrix
        # without feature names, which XGBoost refuses against a model that has them.
        def column(data):
            return data.to_dask_array(lengths=True)

        return dxgb.DaskDMatrix(client, column(frame[features]), column(frame[label_col]), qid=column(frame[qid_col]))

    dtrain = matrix(df)
    watch = [(matrix(frame), name) for frame, name in evals or []]
    # the built-in objective by name, or base_score from the start score of a custom one
    params = xgboost_engine.params(objective, params)
    obj = None if isinstance(objective, str) else _WorkerObjective(objective)
    metric = distributed_metrics(metrics, **conventions) if watch else None
    callbacks = []
    if early_stopping_rounds is not None:
        if not watch:
            raise ValueError("early_stopping_rounds needs evals to watch")
        data_name, metric_name = watched([name for _, name in watch], metric.names)
        callbacks.append(metric.early_stopping(int(early_stopping_rounds), data_name=data_name, metric_name=metric_name))
    out = dxgb.train(
        client,
        params,
        dtrain,
        num_boost_round=int(num_boost_round),
        evals=watch or None,
        obj=obj,
        custom_metric=metric,
        callbacks=callbacks or None,
        verbose_eval=False,
    )
    if evals_result is not None:
        evals_result.update(out["history"])
    booster: xgb.Booster = out["booster"]
    booster.feature_names = list(features)
    return booster
