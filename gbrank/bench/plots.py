"""PNG plots of a benchmark: NDCG@1..10 per method and validation NDCG over iterations."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .evaluate import NDCG_CUTOFFS

__all__ = ["plot_ndcg_at_k", "plot_validation_curves", "slug"]

_LINESTYLES = {"lgb": "-", "xgb": "--", "native": ":"}
_MARKERS = "osD^v<>ph*XP"


def slug(name: str) -> str:
    """A file-name-safe version of a dataset name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "data"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _styles(methods: list[str], baseline: str | None) -> dict[str, dict]:
    """Colour from a qualitative map (dark shades first), line style by engine, marker by
    method; the baseline drawn thick black."""
    plt = _pyplot()
    if len(methods) > 10:
        cmap = plt.get_cmap("tab20")
        palette = [cmap(i) for i in list(range(0, 20, 2)) + list(range(1, 20, 2))]
    else:
        cmap = plt.get_cmap("tab10")
        palette = [cmap(i) for i in range(10)]
    styles = {}
    others = [m for m in methods if m != baseline]
    for i, method in enumerate(others):
        engine = method.split(":", 1)[0]
        styles[method] = {
            "color": palette[i % len(palette)],
            "linestyle": _LINESTYLES.get(engine, "-"),
            "marker": _MARKERS[i % len(_MARKERS)],
            "linewidth": 1.6,
            "markersize": 4,
        }
    if baseline in methods:
        styles[baseline] = {"color": "black", "linestyle": "-", "marker": "o", "linewidth": 2.6, "markersize": 5,
                            "zorder": 10}
    return styles


def _label(method: str, baseline: str | None) -> str:
    return method + (" (baseline)" if method == baseline else "")


def plot_ndcg_at_k(summary, dataset: str, methods: list[str], baseline: str | None, path: Path, title: str = "") -> Path:
    """NDCG@k for k = 1..10 per method, mean over folds (as figure 1 of Valizadegan et al.),
    and beside it the difference to the baseline, where close curves separate."""
    plt = _pyplot()
    rows = summary[summary["dataset"] == dataset].set_index("method")
    present = [m for m in methods if m in rows.index]
    styles = _styles(present, baseline)
    ks = np.array(NDCG_CUTOFFS)
    curves = {m: np.array([rows.loc[m, f"ndcg@{k}_mean"] for k in ks]) for m in present}
    with_delta = baseline in curves and len(curves) > 1
    fig, axes = plt.subplots(1, 2 if with_delta else 1, figsize=(15 if with_delta else 10, 6),
                             constrained_layout=True, squeeze=False)
    ax = axes[0, 0]
    for method in present:
        ax.plot(ks, curves[method], label=_label(method, baseline), **styles[method])
    ax.set_ylabel("NDCG@k (test, mean over folds)")
    ax.set_title(title or f"{dataset}: test NDCG@k, mean over folds")
    if with_delta:
        delta = axes[0, 1]
        for method in present:
            delta.plot(ks, curves[method] - curves[baseline], **styles[method])
        delta.set_ylabel(f"NDCG@k minus {baseline}")
        delta.set_title(f"difference to the baseline {baseline}")
    for a in axes[0]:
        a.set_xticks(ks)
        a.set_xlabel("k")
        a.grid(True, alpha=0.3)
    fig.legend(loc="outside right center", fontsize=8, frameon=False)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _mean_curve(curves: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean at each iteration over the curves that reach it, and how many do."""
    length = max(len(c) for c in curves)
    total = np.zeros(length)
    count = np.zeros(length)
    for curve in curves:
        total[: len(curve)] += curve
        count[: len(curve)] += 1
    return total / np.maximum(count, 1), count


def plot_validation_curves(runs: list[dict], dataset: str, methods: list[str], baseline: str | None,
                           metric_name: str, path: Path) -> Path | None:
    """Validation ``metric_name`` after each iteration, mean over the folds (and seeds).

    Runs stop at different iterations: the line is solid while every run contributes and
    faint where only the runs still training do. A dot marks the mean best iteration. The
    y-axis starts at the 2nd percentile of the plotted values, so that a slow start (the
    native NDCG_Boost's first stumps) does not flatten the others.
    """
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    label = metric_name.upper()
    present = []
    curves = {}
    for method in methods:
        mine = [r for r in runs if r["dataset"] == dataset and r["method"] == method and r["status"] == "ok"]
        lists = [r["valid_curve"] for r in mine if r.get("valid_curve")]
        if lists:
            mean, count = _mean_curve(lists)
            best = int(round(np.mean([r["best_iteration"] for r in mine])))
            curves[method] = (mean, count == len(lists), min(max(best, 1), mean.size))
            present.append(method)
    if not present:
        return None
    styles = _styles(present, baseline)
    fig, ax = plt.subplots(figsize=(11, 6), constrained_layout=True)
    values = []
    for method in present:
        mean, complete, best = curves[method]
        style = dict(styles[method])
        style.pop("marker")
        x = np.arange(1, mean.size + 1)
        full = int(complete.sum())
        ax.plot(x[:full], mean[:full], label=_label(method, baseline), **style)
        if full < mean.size:
            ax.plot(x[full - 1:], mean[full - 1:], alpha=0.35, **{**style, "linewidth": 1.0})
        ax.plot([best], [mean[best - 1]], marker="o", color=style["color"], markersize=6, linestyle="none")
        values.append(mean)
    values = np.concatenate(values)
    low, high = np.quantile(values, 0.02), values.max()
    if high > low:
        ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"validation {label} (mean over folds)")
    ax.set_title(f"{dataset}: validation {label} per iteration "
                 "(dot: mean best iteration; faint: only the folds still training)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
