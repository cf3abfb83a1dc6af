"""XGBoost: reading a ``DMatrix`` for an objective, the parameters a custom objective needs,
building matrices and training under gbrank's early-stopping rule.

XGBoost 3.2 facts this module relies on (read in its source):

* With a custom objective the intercept is not fitted and ``base_score`` stays 0.5, while
  LightGBM starts a custom objective from 0; :func:`params` sets ``base_score`` from
  :func:`gbrank.engines.start_score` so that both engines train the same model.
* XGBoost reports its default metric (``rmse`` for the default objective) beside a custom
  metric unless ``disable_default_eval_metric`` is set; :func:`params` sets it.
* ``EarlyStopping`` without ``maximize`` guesses the direction from the metric name: it
  maximises names that start with ``auc``, ``aucpr``, ``pre``, ``map`` or ``ndcg``
  (``ndcg@10``, ``map@5``, ``precision@10``) and minimises every other (``mrr``,
  ``err@10``). gbrank builds it with the direction the metric states
  (:func:`early_stopping`: ``maximize=True`` but for the calibration metrics);
  ``xgb.train``/``xgb.cv`` users pass ``maximize=`` themselves.
* ``xgb.cv`` without ``folds`` keeps queries whole (``mkgroupfold``); with ``folds`` it
  slices rows and refuses a DMatrix with groups itself. A fold is a slice with no link to
  the whole set in XGBoost's public API: an objective trains it with the fold's own
  statistics (its label maximum), unless told the whole set's (``max_label=``).
* dart drops trees in ``predict(training=True)``, which ``Booster.update`` calls before the
  custom objective, so the gradients see the dropped model.
* The objective is called from ``Booster.boost`` (``Booster.update`` before 3.2) with the
  predictions and the ``DMatrix`` only, not the thread count: gbrank's kernels run on its
  own pool, of ``numba.get_num_threads()`` threads.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..groups import check_group
from . import positions as _positions
from ._common import Fields, engine_of, is_builtin, start_score, watched

__all__ = [
    "best_iteration",
    "dmatrix",
    "early_stopping",
    "group_sizes",
    "params",
    "predict",
    "query_weights",
    "read",
    "train",
]


def read(dmat, *, position: bool = False) -> Fields:
    """The fields of an ``xgboost.DMatrix`` (or ``QuantileDMatrix``) an objective reads.

    XGBoost weights whole queries: one weight per query is spread to the query's rows.
    XGBoost has no position field: with ``position`` the row order within each query is
    read as the position, with a warning (:func:`gbrank.engines.positions.row_order`).
    """
    labels = dmat.get_label()
    if labels.size == 0:
        raise ValueError("the DMatrix has no rows: there is nothing to rank")
    sizes = group_sizes(dmat, purpose="before training")
    weights = dmat.get_weight()
    row_weights = None
    if weights.size:
        if weights.size == sizes.size:
            row_weights = np.repeat(weights.astype(np.float64), sizes)
        elif weights.size == labels.size:
            row_weights = weights.astype(np.float64)
        else:
            raise ValueError(
                f"the DMatrix has {weights.size} weights for {sizes.size} queries and "
                f"{labels.size} rows; ranking weights are one per query"
            )
    margin = dmat.get_base_margin()
    rows = _positions.row_order(sizes) if position else None
    return Fields(labels=labels, sizes=sizes, weights=row_weights, init_score=margin if margin.size else None,
                  position=rows)


def group_sizes(dmat, *, purpose: str, optional: bool = False) -> np.ndarray | None:
    """The query sizes of a ``DMatrix``, from its ``group_ptr`` (which follows any re-ordering
    XGBoost applied to the rows): the one place gbrank reads it.

    Parameters
    ----------
    dmat : xgboost.DMatrix
    purpose : str
        What the groups are needed for, ending the error (``"to evaluate ranking metrics"``).
    optional : bool, default=False
        Return None, not an error, when the DMatrix has no query groups.

    Raises
    ------
    ValueError
        When the DMatrix has no query groups and they are not ``optional``.
    """
    ptr = dmat.get_uint_info("group_ptr")
    if ptr.size < 2:
        if optional:
            return None
        raise ValueError(
            f"the DMatrix has no query groups: build it with qid= or group=, or call set_group() {purpose}"
        )
    return np.diff(np.asarray(ptr, dtype=np.int64))


def query_weights(weight: np.ndarray, sizes: np.ndarray, *, input_rows: np.ndarray | None = None) -> np.ndarray:
    """One weight per query, as XGBoost takes them; the rows of a query must agree.
    ``input_rows``: the caller's row of each (grouped) row, for the error."""
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    per_query = weight[starts]
    differ = weight != np.repeat(per_query, sizes)
    if differ.any():
        row = int(np.flatnonzero(differ)[0])
        query = int(np.searchsorted(starts, row, side="right") - 1)
        if input_rows is None:
            where = f"query {query} has {per_query[query]:g} and {weight[row]:g} (grouped row {row})"
        else:
            where = (f"rows {int(input_rows[starts[query]])} and {int(input_rows[row])} of one query have "
                     f"{per_query[query]:g} and {weight[row]:g}")
        raise ValueError(
            "with engine='xgboost', sample weights weight whole queries: the rows of a query "
            f"must share one weight, but {where}"
        )
    return per_query


def dmatrix(X, y, sizes, *, weight=None, base_margin=None, nthread: int | None = None, quantile: bool = False, ref=None,
            enable_categorical: bool = False):
    """A ``DMatrix`` (or ``QuantileDMatrix``) with query groups; ``weight`` is per row;
    ``enable_categorical`` as XGBoost takes it (pandas ``category`` columns)."""
    import xgboost as xgb

    n_rows = len(y)
    sizes = np.diff(check_group(sizes, n_rows))
    if weight is not None and len(weight) != n_rows:
        raise ValueError(f"weight has {len(weight)} values but there are {n_rows} rows")
    qweight = None if weight is None else query_weights(np.asarray(weight, dtype=np.float64), sizes)
    kwargs = {"label": y, "group": sizes, "weight": qweight, "base_margin": base_margin, "nthread": nthread,
              "enable_categorical": enable_categorical}
    if quantile:
        return xgb.QuantileDMatrix(X, ref=ref, **kwargs)
    return xgb.DMatrix(X, **kwargs)


def params(objective: Any, given: dict | None = None) -> dict:
    """Parameters for ``xgb.train`` with ``objective``: the built-in objective by name, or
    ``base_score`` from :func:`gbrank.engines.start_score` for a custom one (a
    ``base_score`` in ``given`` wins), and no default metric."""
    out = {**(given or {}), "disable_default_eval_metric": 1}
    if is_builtin(objective, "xgboost"):
        out["objective"] = objective
    else:
        start = start_score(objective)
        if start is not None:
            out.setdefault("base_score", start)
    return out


def best_iteration(booster) -> int:
    """Rounds to predict with: the best round (1-based) under early stopping, else all."""
    best = booster.attr("best_iteration")
    return int(best) + 1 if best is not None else int(booster.num_boosted_rounds())


def _in_place(X):
    """``X`` as XGBoost's in-place prediction takes it: of scipy's sparse formats it reads
    a CSR matrix only (not CSC, COO or the sparse arrays)."""
    if not hasattr(X, "tocsr"):
        return X
    from scipy import sparse

    return X if isinstance(X, sparse.csr_matrix) else sparse.csr_matrix(X)


def predict(booster, X, rounds: int | None = None) -> np.ndarray:
    """Raw scores (margins, float64) of the rows of ``X`` (an array, a DataFrame, a scipy
    sparse matrix or a ``DMatrix``) from the first ``rounds`` rounds; by default XGBoost's choice (all rounds)."""
    rounds_kw = {} if rounds is None else {"iteration_range": (0, int(rounds))}
    if engine_of(X) == "xgboost":
        scores = booster.predict(X, output_margin=True, **rounds_kw)
    else:
        scores = booster.inplace_predict(_in_place(X), predict_type="margin", **rounds_kw)
    return np.asarray(scores, dtype=np.float64)


def early_stopping(
    rounds: int, *, data_name: str | None, metric_name: str, save_best: bool = False, min_delta: float = 0.0,
    maximize: bool = True,
):
    """XGBoost's ``EarlyStopping`` callback under gbrank's rule: one metric on one eval set,
    higher is better unless told otherwise (see :func:`gbrank.engines.watched`); the one
    place gbrank builds it."""
    try:
        from xgboost.callback import EarlyStopping
    except ImportError as exc:
        raise ImportError("XGBoost's early stopping needs xgboost: pip install 'gbrank[xgboost]'") from exc
    return EarlyStopping(rounds=int(rounds), metric_name=metric_name, data_name=data_name, maximize=maximize,
                         save_best=save_best, min_delta=min_delta)

def report_callback(report: Callable[[int, float], None], data_name: str, metric_name: str):
    """XGBoost callback: one eval set's metric after each iteration, to
    ``report(iteration, value)`` (iterations from 1), for tuners that prune unpromising runs."""
    from xgboost.callback import TrainingCallback

    class Report(TrainingCallback):
        def after_iteration(self, model, epoch, evals_log) -> bool:
            report(epoch + 1, evals_log[data_name][metric_name][-1])
            return False

    return Report()


def _metric_direction(custom_metric) -> bool:
    """Whether the first metric of ``custom_metric`` is better higher: as its
    :class:`gbrank.metrics.engine.EngineMetrics` states, else gbrank's rule (higher)."""
    from ..metrics.engine import EngineMetrics

    owner = getattr(custom_metric, "__self__", None)
    return owner.metrics[0].higher_is_better if isinstance(owner, EngineMetrics) else True


def train(
    given: dict,
    dtrain,
    objective: Callable | str,
    *,
    num_boost_round: int,
    evals: Sequence = (),
    custom_metric: Callable | None = None,
    metric_names: Sequence[str] = (),
    early_stopping_rounds: int | None = None,
    maximize: bool | None = None,
    evals_result: dict | None = None,
    verbose: bool | int = False,
    callbacks: Sequence = (),
):
    """``xgboost.train`` with a gbrank or built-in objective, gbrank metrics only.

    Parameters
    ----------
    given : dict
        XGBoost parameters, completed by :func:`params`.
    dtrain : xgboost.DMatrix
        The training set, with query groups (see :func:`dmatrix`).
    objective : gbrank objective, callable or str
        A custom objective (``obj``), or one of XGBoost's ranking objectives by name.
    num_boost_round : int
    evals : sequence of (DMatrix, str)
        Eval sets, as ``xgboost.train`` takes them.
    custom_metric : callable, optional
        E.g. ``gbrank.metrics.make_metrics(...).xgboost``.
    metric_names : sequence of str
        Names ``custom_metric`` reports; early stopping watches the first on the last eval set.
    early_stopping_rounds : int, optional
        Stop after this many rounds without improvement (:func:`early_stopping`).
    maximize : bool, optional
        Whether the watched metric is better higher. XGBoost's custom metrics do not say;
        by default the direction of ``custom_metric``'s first metric where it is
        :meth:`gbrank.metrics.engine.EngineMetrics.xgboost` (lower for ``logloss`` and ``ece``), else
        higher.
    evals_result : dict, optional
        Filled with ``{eval_name: {metric_name: [values]}}``.
    verbose : bool or int
        ``verbose_eval``.
    callbacks : sequence of xgboost.callback.TrainingCallback
        More callbacks, run after gbrank's.

    Returns
    -------
    booster, best : xgboost.Booster, int
        The model and the number of rounds to predict with.
    """
    import xgboost as xgb

    extra, callbacks = callbacks, []
    if early_stopping_rounds is not None:
        data_name, metric_name = watched([name for _, name in evals], list(metric_names))
        if maximize is None:
            maximize = _metric_direction(custom_metric)
        callbacks.append(early_stopping(early_stopping_rounds, data_name=data_name, metric_name=metric_name,
                                        maximize=maximize))
    callbacks += list(extra)
    booster = xgb.train(
        params(objective, given),
        dtrain,
        num_boost_round=num_boost_round,
        evals=list(evals),
        obj=None if isinstance(objective, str) else objective,
        custom_metric=custom_metric,
        evals_result=evals_result,
        verbose_eval=verbose,
        callbacks=callbacks,
    )
    return booster, best_iteration(booster)
