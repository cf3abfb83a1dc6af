"""Several label columns on Dask: :func:`gbrank.multi_label` trained by every worker on its
own queries, with the statistics of the whole frame.

The engines' Dask interfaces hand a worker one label per row, so the label columns cannot
ride in the engine's label. They are read once on the client, in the frame's partition order
(every query whole in one partition), and bound to the objective; the engine's label of a
row is then its query's *key*: the query's place in that order plus one, a whole number that
float32 (both engines' label type) holds exactly up to 2**24 - 1 queries. A worker reads the
keys of its queries and trains :meth:`gbrank.objectives.multi_label.MultiLabel.part`: the
objective on those queries' label columns, with the statistics of every label column over
the whole frame (the label maximum of ERR's gains), so that one machine and N workers
compute the same gradients. The constrained form's NDCG of each label is summed over the
workers with XGBoost's allreduce; ``lightgbm.dask`` has none, so that form trains with
:func:`gbrank.dask.train_xgboost` only.
"""

from __future__ import annotations

from typing import Sequence

import dask
import numpy as np
import pandas as pd

from ..engines.statistics import Statistics, sum_over_workers
from ..groups import qid_to_sizes
from ..objectives.multi_label import MultiLabel

__all__ = ["KEY_COLUMN", "MAX_QUERIES", "WorkerMultiLabel", "bind_frame", "check_objective", "label_columns",
           "with_query_keys"]

#: The column that carries each row's query key to the engine.
KEY_COLUMN = "__gbrank_query_key"
#: The most queries whose keys float32 holds exactly.
MAX_QUERIES = 2**24 - 1


def label_columns(label_col) -> list[str] | None:
    """The label columns of a multi-label ``label_col`` (a list of names), or None for one."""
    if isinstance(label_col, str):
        return None
    names = list(label_col)
    if len(names) < 2 or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise ValueError(f"label_col must be one column name, or two or more distinct names of label columns "
                         f"(the engine's label first), got {label_col!r}")
    return names


def check_objective(objective, names: list[str] | None, engine: str) -> None:
    """A multi-label objective needs several label columns and the others one."""
    multi = isinstance(objective, MultiLabel)
    if names is None and multi:
        raise ValueError(
            "a multi-label objective trains on several label columns: name them, label_col=['label', "
            "'label_click', ...] (the engine's label first), and build the objective without labels"
        )
    if names is not None and not multi:
        raise ValueError(f"label_col names {len(names)} label columns, which only gbrank.multi_label(...) trains "
                         "on: wrap the objective, or give one label column")
    if not multi:
        return
    if objective.labels is not None:
        raise ValueError("on Dask the label columns come from the frame (label_col=[...]): build the objective "
                         "without labels, gbrank.multi_label(objective, aggregate=..., weights=...)")
    if engine == "lightgbm" and objective.aggregate == "constrained":
        raise ValueError("aggregate='constrained' averages each label's NDCG over all workers, and lightgbm.dask "
                         "gives an objective no way to sum over workers: train it with gbrank.dask.train_xgboost")


def _part_table(part: pd.DataFrame, qid_col: str, names: list[str]):
    """A partition's query sizes, each query's id and its rows' label columns."""
    labels = np.column_stack([pd.to_numeric(part[n], errors="coerce").to_numpy(dtype=np.float64) for n in names]) \
        if len(part) else np.zeros((0, len(names)))
    qid = part[qid_col].to_numpy()
    sizes = qid_to_sizes(qid)
    return sizes, qid[np.cumsum(sizes) - sizes], labels


def bind_frame(df, objective: MultiLabel, names: list[str], qid_col: str) -> tuple[MultiLabel, np.ndarray]:
    """The objective bound to the frame's label columns in partition order, and the query
    offsets of that order; the columns checked (finite, >= 0; the error names the column and
    the query)."""
    parts = dask.compute(*[dask.delayed(_part_table)(p, qid_col, names)
                           for p in df[[qid_col, *names]].to_delayed()])
    sizes = np.concatenate([s for s, _, _ in parts]).astype(np.int64)
    ids = np.concatenate([q for _, q, _ in parts])
    labels = np.concatenate([t for _, _, t in parts])
    if sizes.size > MAX_QUERIES:
        raise ValueError(f"the frame has {sizes.size} queries; multi-label training on Dask keys them in float32 "
                         f"labels, exact up to {MAX_QUERIES} queries: train on fewer queries per model")
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    bad = ~np.isfinite(labels) | (labels < 0)
    if bad.any():
        row, column = map(int, np.argwhere(bad)[0])
        query = int(np.searchsorted(offsets, row, side="right")) - 1
        value = labels[row, column]
        what = "a missing or non-numeric value" if np.isnan(value) else f"the value {value:g}"
        raise ValueError(f"label column {names[column]!r} has {what} in query {ids[query]} (its row "
                         f"{row - offsets[query]}); labels must be finite numbers >= 0: fix or drop that row")
    bound = objective.with_labels(labels)
    bound._row_weights(offsets)  # weights per query: one row per query of the frame
    return bound, offsets


def _keys(part: pd.DataFrame, qid_col: str, starts: np.ndarray, partition_info=None) -> pd.DataFrame:
    sizes = qid_to_sizes(part[qid_col].to_numpy())
    first = starts[partition_info["number"]] if partition_info else 0
    keys = np.repeat(np.arange(first + 1, first + 1 + sizes.size, dtype=np.float32), sizes)
    return part.assign(**{KEY_COLUMN: keys})


def with_query_keys(df, offsets_per_part: Sequence[int], qid_col: str):
    """``df`` with :data:`KEY_COLUMN`: each row's query key, from the first query number of
    each partition (``offsets_per_part``)."""
    meta = df._meta.assign(**{KEY_COLUMN: np.zeros(0, dtype=np.float32)})
    return df.map_partitions(_keys, qid_col, np.asarray(offsets_per_part, dtype=np.int64), meta=meta)


class WorkerMultiLabel:
    """A multi-label objective on one worker, in the engines' call forms: LightGBM's
    ``(keys, scores, weight, group)`` and XGBoost's ``(scores, dtrain)``, the engine's label
    holding each row's query key. It trains the objective on the worker's queries
    (:meth:`~gbrank.objectives.multi_label.MultiLabel.part`, bound once per worker), with
    XGBoost's allreduce for the constrained form."""

    def __init__(self, objective: MultiLabel, offsets: np.ndarray) -> None:
        self.objective = objective
        self.offsets = offsets
        #: An empty XGBoost worker still joins the allreduce of the constrained form.
        self.reduces_over_workers = objective.aggregate == "constrained"
        self._binding = None
        self._queries = None

    def __call__(self, *args):
        if len(args) == 2:
            from ..engines import xgboost as engine
            from ..engines.dask import allreduce_sum

            scores, dtrain = args
            if dtrain.num_row() == 0:
                keys, sizes, weights = np.zeros(0), np.zeros(0, dtype=np.int64), None
            else:
                fields = engine.read(dtrain)
                keys, sizes, weights = fields.labels, fields.sizes, fields.weights
            reduce = allreduce_sum
        else:
            keys, scores, weights, sizes = args
            reduce = None
        sizes = np.asarray(sizes, dtype=np.int64)
        if not sizes.size:
            # no queries here: take part in the constrained form's sum of NDCG over the workers
            sum_over_workers(np.zeros(self.objective.floors.size + 1), reduce)
            return np.zeros(0), np.zeros(0)
        binding = self._bind(np.asarray(keys), sizes, weights, reduce)
        return binding.grad_hess(np.asarray(scores, dtype=np.float64))

    def _bind(self, keys, sizes, weights, reduce):
        starts = np.cumsum(sizes) - sizes
        queries = keys[starts].astype(np.int64) - 1 if sizes.size else np.zeros(0, dtype=np.int64)
        if self._binding is not None and np.array_equal(queries, self._queries):
            return self._binding
        n_queries = self.offsets.size - 1
        if ((queries < 0) | (queries >= n_queries)).any() or (keys != np.repeat(keys[starts], sizes)).any() \
                or (np.diff(self.offsets)[np.clip(queries, 0, max(n_queries - 1, 0))] != sizes).any():
            raise ValueError("a worker's rows do not hold the query keys gbrank.dask gave them: train the frame "
                             "with gbrank.dask.train_lightgbm or train_xgboost, which add them")
        part = self.objective.part(queries, self.offsets)
        self._binding = part.bind(part.labels[:, 0], sizes, weight=weights, statistics=Statistics(reduce=reduce))
        self._queries = queries
        return self._binding
