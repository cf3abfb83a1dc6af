"""Global statistics of a training set, computed from the whole data once, in the engine layer.

An objective sees the rows an engine hands it: on one machine the whole training set, but on
a Dask worker only that worker's queries, and in an ``lgb.cv`` fold only the fold. Anything
an objective derives from the whole data rather than from one query (the label maximum of
ERR's gains, the number of positions of the propensity estimate, the sums of the
propensity estimate's updates) comes from here, so that one machine and N workers compute
the same thing:

* :class:`Statistics` holds the values computed by the front-end that sees the whole data
  (``gbrank.dask`` before training, the LightGBM reader for an ``lgb.cv`` fold from its full
  set, or the user: ``objective.bind(..., statistics=)``), and ``reduce``, which sums an
  array over the workers (the identity on one machine). They reach the objective as an
  argument of its binding; without any, the rows at hand are the whole data.
* An ``xgb.cv`` fold has no link to its whole set in XGBoost's public API: it is trained
  with its own statistics (its own label maximum), unless the objective is told the whole
  set's (``lambdarank(measure="err", max_label=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Statistics", "label_max", "sum_over_workers"]


@dataclass(frozen=True)
class Statistics:
    """Statistics of the whole training data an objective cannot see from its rows.

    Attributes
    ----------
    label_max : float, optional
        The largest label.
    n_positions : int, optional
        The largest display position.
    reduce : callable, optional
        ``reduce(array) -> array``: the element-wise sum of ``array`` over the workers that
        train together, called by all of them at the same point (an allreduce); None on one
        machine.
    """

    label_max: float | None = None
    n_positions: int | None = None
    reduce: Callable[[np.ndarray], np.ndarray] | None = None


def label_max(labels: np.ndarray, statistics: Statistics | None) -> float:
    """The largest label of the whole training data: ``statistics``' where they have it,
    else of ``labels`` (the rows at hand are the whole data)."""
    if statistics is not None and statistics.label_max is not None:
        return statistics.label_max
    return float(np.max(labels, initial=0))


def sum_over_workers(values: np.ndarray, reduce: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    """``values`` summed over the workers with ``reduce`` (as they are on one machine)."""
    if reduce is None:
        return values
    return np.asarray(reduce(np.ascontiguousarray(values, dtype=np.float64)), dtype=np.float64)
