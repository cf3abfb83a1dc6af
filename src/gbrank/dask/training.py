"""Training on a Dask cluster with gbrank objectives, both engines through
:mod:`gbrank.engines` (:mod:`gbrank.engines.dask` drives them): every worker computes the
gradients of its own whole queries, with the statistics of the whole data computed here,
before training (:mod:`gbrank.engines.statistics`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import dask
import numpy as np

from ..engines import Statistics, is_builtin, reads_position, watched
from ..engines import dask as dask_engine
from ..engines import lightgbm as lightgbm_engine
from ..engines import xgboost as xgboost_engine
from ..engines._common import ROUNDS_PARAMS, refuse_params
from ..groups import qid_to_sizes
from .layout import check_partitions, partition_rows, query_sizes, require_frame, require_numeric, stable_partitions
from .metrics import distributed_metrics
from .multi_label import KEY_COLUMN, WorkerMultiLabel, bind_frame, check_objective, label_columns, with_query_keys

__all__ = ["train_lightgbm", "train_xgboost"]


def _columns(df, label_col, qid_col, weight_col, features, position_col=None):
    labels = [label_col] if isinstance(label_col, str) else list(label_col)
    for name in (*labels,) + ((weight_col,) if weight_col else ()) + ((position_col,) if position_col else ()):
        if name not in df.columns:
            raise ValueError(f"the DataFrame has no column {name!r}; columns: {list(df.columns)}")
    if features is None:
        features = [c for c in df.columns if c not in (*labels, qid_col, weight_col, position_col, KEY_COLUMN)]
    elif set(features) & set(labels):
        raise ValueError(f"features name the label column {sorted(set(features) & set(labels))[0]!r}")
    features = list(features)
    if not features:
        raise ValueError("no feature columns")
    require_numeric(df, features)
    return features


def _statistics(df, label_col: str, position_col: str | None) -> Statistics:
    """The statistics of the whole frame an objective needs and cannot see from one worker's rows."""
    wanted = [df[label_col].max()] + ([df[position_col].max()] if position_col else [])
    values = dask.compute(*wanted)
    return Statistics(
        label_max=float(values[0]),
        n_positions=max(int(values[1]), 1) if position_col else None,
    )


def _multi_label(df, objective, names, qid_col):
    """The frame with each row's query key, and the objective each worker trains
    (:mod:`gbrank.dask.multi_label`)."""
    bound, offsets = bind_frame(df, objective, names, qid_col)
    queries = dask.compute(*[dask.delayed(_n_queries)(p) for p in df[qid_col].to_delayed()])
    starts = np.concatenate(([0], np.cumsum(queries)[:-1])).astype(np.int64)
    return with_query_keys(df, starts, qid_col), WorkerMultiLabel(bound, offsets)


def _n_queries(qid) -> int:
    return int(qid_to_sizes(qid.to_numpy()).size)


def train_lightgbm(
    client,
    df,
    objective: Callable | str,
    *,
    label_col: str | Sequence[str] = "label",
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
    label_col : str or sequence of str, default="label"
        The label column; or, for a :func:`gbrank.multi_label` objective (built without
        labels), its label columns, the first one first: each worker trains its own queries
        with every column's statistics of the whole frame.
    qid_col : str
        Name of the query-id column.
    weight_col : str, optional
        Column of per-row sample weights.
    features : sequence of str, optional
        Feature columns; default every column but the label, query-id and weight columns.
    num_boost_round : int, default=100
        Boosting rounds.
    params : dict, optional
        LightGBM parameters (``num_leaves``, ``learning_rate``, ...); each worker uses its
        Dask threads. ``verbosity`` defaults to -1. The rounds are ``num_boost_round``'s:
        ``num_trees`` and LightGBM's other aliases of them are refused here.
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

    What an objective needs of the whole data (the label maximum of ERR's gains) is computed
    from the whole frame before training, so every worker computes the gradients one
    machine would. LightGBM's Dask interface passes no positions to the workers: the click
    objectives that read them are refused (train them with :func:`train_xgboost`).
    """
    builtin = is_builtin(objective, "lightgbm")
    names = label_columns(label_col)
    check_objective(objective, names, "lightgbm")
    lightgbm_engine.check_params(params, objective)
    refuse_params(params, ROUNDS_PARAMS, "pass num_boost_round=")
    if not builtin and reads_position(objective):
        raise ValueError(
            f"{objective!r} reads display positions, which lightgbm.dask does not pass to a worker's "
            "Dataset: train it with gbrank.dask.train_xgboost(..., position_col=...), or give "
            "inverse-propensity weighted clicks as labels with propensity=None"
        )
    require_frame(df, qid_col)
    features = _columns(df, label_col, qid_col, weight_col, features)
    # LightGBM takes the partitions of the features, labels and groups apart and zips them.
    df = stable_partitions(df)
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
    if names is not None:
        if (params or {}).get("metric", "None") not in ("None", "none", "", None, []):
            raise ValueError("with several label columns the engine's label holds each row's query key, which "
                             "LightGBM's metrics would read as labels: drop the metric from params, and score the "
                             "model with gbrank.dask.evaluate(..., label_col=column) for each label column")
        params = {**(params or {}), "metric": "None"}
        df, objective = _multi_label(df, objective, names, qid_col)
        label_col, statistics = KEY_COLUMN, None
    else:
        statistics = None if builtin else _statistics(df, label_col, None)
    return dask_engine.lightgbm_train(
        client,
        df[features],
        df[label_col],
        query_sizes(df, qid_col),
        weight=None if weight_col is None else df[weight_col],
        objective=objective,
        statistics=statistics,
        num_boost_round=num_boost_round,
        params=params,
    )


def train_xgboost(
    client,
    df,
    objective: Callable | str,
    *,
    label_col: str | Sequence[str] = "label",
    qid_col: str = "qid",
    position_col: str | None = None,
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
        As in :func:`train_lightgbm` (no weight column). With several label columns the
        eval sets hold them too and are scored on the first.
    objective : gbrank objective, callable or str
        A gbrank objective, called by each worker on its own DMatrix; or ``"rank:ndcg"``,
        ``"rank:pairwise"``, ``"rank:map"``.
    position_col : str, optional
        Column of display positions (1 = top, -1 never shown), for the click objectives;
        required by those that read them.
    params : dict, optional
        XGBoost parameters; each worker uses its Dask threads. The rounds are
        ``num_boost_round``'s (``n_estimators`` and its kind are refused here).
    evals : list of (dask DataFrame, str), optional
        Eval sets (same columns, queries whole) evaluated every round with
        :class:`DistributedMetrics` (exact over workers).
    metrics : str or sequence, default="ndcg@10"
        Metric specs for ``evals``; early stopping watches the first on the last eval set.
    early_stopping_rounds : int, optional
        Stop after this many rounds without improvement; the booster's ``best_iteration``
        (0-based) marks the best round. The booster keeps every round trained, as
        ``xgboost.train`` does: :func:`predict` scores with the best round, XGBoost's own
        ``Booster.predict`` needs ``iteration_range=(0, booster.best_iteration + 1)``, and
        ``booster[: booster.best_iteration + 1]`` is the model of the best round alone (to
        save).
    evals_result : dict, optional
        Filled with ``{eval_name: {metric_name: [values]}}``.
    check : bool, default=True
        First verify with :func:`check_partitions` that no query crosses a partition, in
        ``df`` and in every eval set, and that ``df``'s query ids ascend through its
        partitions (XGBoost re-sorts a worker's rows otherwise, and not stably: the rows of a
        query would lose their order); :func:`partition_queries` makes them so.
    **conventions
        Metric conventions (``gain``, ``no_relevant``, ...).

    Returns
    -------
    xgboost.Booster
        Every round trained, feature names set; ``best_iteration`` under early stopping.

    Notes
    -----
    Sample weights are not taken: ``xgboost.dask`` does not implement per-query weights.

    What an objective needs of the whole data is computed from the whole frame before
    training (the label maximum of ERR's gains, the number of positions), and the propensity
    estimate of the click objectives sums its statistics over the workers at every update
    (an allreduce), so every worker computes the gradients one machine would.
    """
    frames = [df] + [frame for frame, _ in evals or []]
    for i, frame in enumerate(frames):
        require_frame(frame, qid_col)
        if check:
            check_partitions(frame, qid_col, ascending=i == 0)
    # XGBoost takes the partitions of the features, labels and ids apart and zips them.
    df = stable_partitions(df)
    evals = [(stable_partitions(frame), name) for frame, name in evals or []]
    features = _columns(df, label_col, qid_col, None, features, position_col)
    names = label_columns(label_col)
    check_objective(objective, names, "xgboost")
    refuse_params(params, ROUNDS_PARAMS, "pass num_boost_round= and early_stopping_rounds=")
    builtin = isinstance(objective, str)
    if not builtin and position_col is None and reads_position(objective):
        raise ValueError(
            f"{objective!r} reads display positions: name the column that holds them, "
            "train_xgboost(..., position_col='position')"
        )

    def column(data):
        # Unnamed arrays: a worker that holds no rows of an eval set gets an empty DMatrix
        # without feature names, which XGBoost refuses against a model that has them.
        return data.to_dask_array(lengths=True)

    def matrix(frame, label, position=None):
        return dask_engine.xgboost_matrix(client, column(frame[features]), column(frame[label]),
                                          column(frame[qid_col]), position)

    positioned = not builtin and position_col is not None and reads_position(objective)
    first = label_col if names is None else names[0]
    watch = [(matrix(frame, first), name) for frame, name in evals or []]
    # the built-in objective by name, or base_score from the start score of a custom one
    params = xgboost_engine.params(objective, params)
    if names is not None:
        df, objective = _multi_label(df, objective, names, qid_col)
        dtrain, statistics = matrix(df, KEY_COLUMN), None
    else:
        dtrain = matrix(df, label_col, column(df[position_col]).astype(np.float32) if positioned else None)
        statistics = None if builtin else _statistics(df, label_col, position_col if positioned else None)
    metric = distributed_metrics(metrics, **conventions) if watch else None
    callbacks = []
    if early_stopping_rounds is not None:
        if not watch:
            raise ValueError("early_stopping_rounds needs evals to watch")
        data_name, metric_name = watched([name for _, name in watch], metric.names)
        callbacks.append(metric.early_stopping(int(early_stopping_rounds), data_name=data_name, metric_name=metric_name))
    out = dask_engine.xgboost_train(
        client,
        params,
        dtrain,
        objective,
        statistics=statistics,
        positions=positioned,
        num_boost_round=num_boost_round,
        evals=watch,
        custom_metric=metric,
        callbacks=callbacks,
    )
    if evals_result is not None:
        evals_result.update(out["history"])
    booster = out["booster"]
    booster.feature_names = list(features)
    return booster
