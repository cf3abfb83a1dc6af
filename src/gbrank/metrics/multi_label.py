"""Evaluating one ranking against several label columns: NDCG per label, and Pareto fronts.

A model trained on several labels (:func:`gbrank.multi_label`) trades them off; what it
achieves is a point with one NDCG per label, and a family of models (one per weighting) a
set of points whose non-dominated ones form its Pareto front.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .ndcg import ndcg

__all__ = ["pareto_front", "pareto_plot", "per_label_ndcg"]


def per_label_ndcg(labels, y_pred, group, k: int | None = 10, **conventions) -> np.ndarray:
    """NDCG@k of one ranking against each label column.

    Parameters
    ----------
    labels : array-like of shape (n_rows, n_labels)
        The label columns.
    y_pred : array-like of shape (n_rows,)
        Scores.
    group : array-like of shape (n_queries,)
        Group sizes.
    k : int or None, default=10
        Cut-off.
    **conventions
        Keyword arguments of :func:`gbrank.metrics.ndcg` (``gain``, ``ties``, ...).

    Returns
    -------
    ndarray of shape (n_labels,)

    Examples
    --------
    >>> from gbrank.metrics import per_label_ndcg
    >>> labels = [[2, 0], [0, 1], [1, 1], [0, 0]]
    >>> per_label_ndcg(labels, [0.5, 1.0, -0.5, 0.2], [4], k=3).round(4).tolist()
    [0.5213, 0.6131]
    """
    columns = np.asarray(labels)
    if columns.ndim != 2 or columns.shape[1] == 0:
        raise ValueError(f"labels must have shape (n_rows, n_labels) with a label column or more, got {columns.shape}")
    values = []
    for j in range(columns.shape[1]):
        try:
            values.append(ndcg(columns[:, j], y_pred, group, k, **conventions))
        except ValueError as error:
            if "y_true" not in str(error):
                raise
            raise type(error)(f"labels[:, {j}]: {error}") from error
    return np.array(values)


def pareto_front(points) -> np.ndarray:
    """Which points no other point dominates (at least as high in every coordinate, higher in one).

    Parameters
    ----------
    points : array-like of shape (n_points, n_objectives)
        Higher is better in every coordinate.

    Returns
    -------
    ndarray of bool, shape (n_points,)

    Examples
    --------
    >>> from gbrank.metrics import pareto_front
    >>> pareto_front([[0.8, 0.5], [0.7, 0.6], [0.7, 0.4], [0.8, 0.5]]).tolist()
    [True, True, False, True]
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"points must have shape (n_points, n_objectives), got {p.shape}")
    if not np.isfinite(p).all():
        row = int(np.flatnonzero(~np.isfinite(p).all(axis=1))[0])
        raise ValueError(f"points[{row}] = {p[row].tolist()} is not finite: a point no comparison can place")
    at_least = (p[None, :, :] >= p[:, None, :]).all(axis=2)
    better = (p[None, :, :] > p[:, None, :]).any(axis=2)
    return ~(at_least & better).any(axis=1)


def pareto_plot(fronts: Mapping[str, Sequence], *, axis_labels: Sequence[str] = ("NDCG@10, label 1",
                                                                                  "NDCG@10, label 2"),
                ax: Any = None) -> Any:
    """Plot each family's points and its Pareto front, two objectives.

    Parameters
    ----------
    fronts : mapping of str to array-like of shape (n_points, 2)
        Family name (``"gradient aggregation"``, ``"hand-mixed label"``) -> its points, one
        per weighting, each (objective 1, objective 2), higher is better.
    axis_labels : pair of str
        The two axes' titles.
    ax : matplotlib Axes, optional
        Where to draw; a new figure's by default.

    Returns
    -------
    matplotlib.axes.Axes

    Notes
    -----
    Needs matplotlib (``pip install 'gbrank[bench]'``).
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("pareto_plot needs matplotlib: pip install 'gbrank[bench]'") from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.5))
    for name, values in fronts.items():
        p = np.asarray(values, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != 2:
            raise ValueError(f"the points of {name!r} must have shape (n_points, 2), got {p.shape}")
        front = p[pareto_front(p)]
        front = front[np.argsort(front[:, 0])]
        (line,) = ax.plot(front[:, 0], front[:, 1], marker="o", label=name)
        ax.scatter(p[:, 0], p[:, 1], s=12, color=line.get_color(), alpha=0.5)
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.legend(fontsize="small")
    return ax
