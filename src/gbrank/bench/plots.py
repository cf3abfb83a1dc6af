"""PNG plots of a benchmark: the difference to the baseline with its interval, NDCG@1..10 and
validation NDCG over iterations.

Methods are grouped by family (the registry's ``family`` of a gbrank objective; the engines'
built-ins and the native estimator are families of their own). A plot of many methods is cut
into one panel per family, families of a single method sharing a panel, so that each panel
holds a few lines of clearly different colours; line style tells the engine (solid LightGBM,
dashed XGBoost, dotted native) and the baseline is drawn black in every panel. Filled markers
are differences that are significant after Holm's correction, hollow ones are not.
"""

from __future__ import annotations

import hashlib
import math
import re
import textwrap
from pathlib import Path

import numpy as np

from .evaluate import NDCG_CUTOFFS

__all__ = ["panels", "plot_differences", "plot_ndcg_at_k", "plot_validation_curves", "slug", "slugs"]

_LINESTYLES = {"lgb": "-", "xgb": "--", "native": ":"}
_MARKERS = "osD^vP"
_BASELINE = {"color": "black", "linestyle": "-", "linewidth": 2.2, "zorder": 10}


def slug(name: str) -> str:
    """A file-name-safe version of a dataset name (two names can share one: see :func:`slugs`)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "data"


def slugs(names) -> dict[str, str]:
    """A file-name-safe slug per name, unique among ``names``: :func:`slug` where no other
    name has the same, else the slug with the first 8 hex digits of the name's SHA-256
    (``a`` and ``a_`` both slug to ``a``; each then gets its own suffix)."""
    names = list(dict.fromkeys(names))
    plain = {name: slug(name) for name in names}
    taken = [plain[name] for name in names]
    out = {}
    for name in names:
        if taken.count(plain[name]) == 1:
            out[name] = plain[name]
        else:
            out[name] = f"{plain[name]}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"
    return out


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def panels(methods: list[str], families: dict[str, str], baseline: str | None) -> list[tuple[str, list[str]]]:
    """``(title, methods)`` per panel: one per family of several methods (in order of first
    appearance), then one shared by the families of a single method; the baseline in none."""
    groups: dict[str, list[str]] = {}
    for method in methods:
        if method != baseline:
            groups.setdefault(families.get(method, "other"), []).append(method)
    out = [(family, members) for family, members in groups.items() if len(members) > 1]
    singles = [(family, members[0]) for family, members in groups.items() if len(members) == 1]
    if singles:
        out.append((", ".join(f for f, _ in singles), [m for _, m in singles]))
    return out


def _panel_styles(members: list[str]) -> dict[str, dict]:
    """Colours from tab10 within a panel, line style by engine, a marker each."""
    plt = _pyplot()
    cmap = plt.get_cmap("tab10")
    return {
        method: {
            "color": cmap(i % 10),
            "linestyle": _LINESTYLES.get(method.split(":", 1)[0], "-"),
            "marker": _MARKERS[i % len(_MARKERS)],
            "linewidth": 1.6,
        }
        for i, method in enumerate(members)
    }


def _family_colours(families: list[str]) -> dict[str, tuple]:
    cmap = _pyplot().get_cmap("tab10")
    return {family: cmap(i % 10) for i, family in enumerate(dict.fromkeys(families))}


def _grid(n: int, width: float, height: float):
    plt = _pyplot()
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False,
                             sharex=True, sharey=True, constrained_layout=True)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _decorate(ax, title: str, *, legend_loc: str) -> None:
    """Title, grid and legend of one panel."""
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc=legend_loc, frameon=True, framealpha=0.8)


def _save_panels(fig, axes, path: Path, *, xlabel: str, ylabel: str, title: str) -> Path:
    """Axis labels on the outer panels and the figure's title, then the figure saved."""
    for ax in axes:
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.label_outer()
    fig.suptitle(_fit(title, fig, 11), fontsize=11)
    return _save(fig, path)


def _fit(title: str, fig, fontsize: float) -> str:
    """``title`` wrapped to the figure's width: a wider title is cut on both sides (one
    panel is 6.5 inches). A character takes about 0.6 of the font size."""
    return textwrap.fill(title, width=int(fig.get_figwidth() * 72 / (0.6 * fontsize)), break_on_hyphens=False)


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def plot_differences(sig, dataset: str, families: dict[str, str], path: Path, alpha: float = 0.05) -> Path | None:
    """Every method's mean test NDCG@10 minus the baseline's with its 95% interval, sorted,
    coloured by family; filled markers are significant after Holm's correction."""
    rows = sig[sig["dataset"] == dataset].sort_values("mean_diff") if not sig.empty else sig
    if rows.empty:
        return None
    plt = _pyplot()
    baseline = rows["baseline"].iloc[0]
    # families in the order of the grid (built-ins first), then any not named there
    present = set(rows["method"])
    colours = _family_colours([f for m, f in families.items() if m in present]
                              + [families.get(m, "other") for m in rows["method"]])
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.38 * len(rows)), constrained_layout=True)
    y = np.arange(len(rows))
    for i, (_, row) in enumerate(rows.iterrows()):
        colour = colours[families.get(row["method"], "other")]
        low, high = row["ci_low"], row["ci_high"]
        if not (np.isnan(low) or np.isnan(high)):
            ax.plot([low, high], [i, i], color=colour, linewidth=2.2, solid_capstyle="butt")
        significant = bool(row["significant"])
        ax.plot([row["mean_diff"]], [i], marker="o", markersize=8, linestyle="none", color=colour,
                markerfacecolor=colour if significant else "white", markeredgewidth=1.8)
        p = row["t_pvalue_holm"]
        text = "" if np.isnan(p) else ("p<0.001" if p < 0.001 else f"p={p:.3f}")
        ax.annotate(text + (" *" if significant else ""), xy=(1.0, i), xycoords=("axes fraction", "data"),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=8,
                    fontweight="bold" if significant else "normal")
    zero = ax.axvline(0.0, color="black", linewidth=1.2, label=f"baseline {baseline}")
    ax.set_yticks(y, rows["method"])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(f"test NDCG@10 minus the baseline {baseline}, mean over queries\n95% CI, not adjusted for "
                  "multiplicity: it can exclude 0 where Holm does not reject")
    ax.set_title(_fit(f"{dataset}: difference to {baseline}; filled and * = significant after Holm "
                      f"(p<{alpha}), right: Holm-adjusted p", fig, 10), fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [plt.Line2D([], [], color=c, marker="o", linewidth=2.2, label=f) for f, c in colours.items()] + [zero]
    ax.legend(handles=handles, title="family", loc="upper left", bbox_to_anchor=(1.12, 1.0), fontsize=8,
              title_fontsize=8, frameon=False)
    return _save(fig, path)


def plot_ndcg_at_k(curves, sig, dataset: str, methods: list[str], families: dict[str, str], baseline: str | None,
                   path: Path) -> Path | None:
    """NDCG@k minus the baseline's for k = 1..10 with 95% bands, one panel per family
    (``curves`` from :func:`gbrank.bench.stats.difference_curves`); the marker at k = 10 is
    filled where the tested difference is significant after Holm's correction."""
    if curves is None or curves.empty:
        return None
    significant = {}
    if not sig.empty:
        mine = sig[sig["dataset"] == dataset]
        significant = dict(zip(mine["method"], mine["significant"]))
    groups = panels([m for m in methods if m in set(curves["method"])], families, baseline)
    fig, axes = _grid(len(groups), 6.5, 3.8)
    ks = np.array(NDCG_CUTOFFS)
    for ax, (title, members) in zip(axes, groups):
        styles = _panel_styles(members)
        ax.axhline(0.0, label=f"{baseline} (baseline)", **_BASELINE)
        for method in members:
            part = curves[curves["method"] == method].sort_values("k")
            style = dict(styles[method])
            marker = style.pop("marker")
            ax.fill_between(part["k"], part["ci_low"], part["ci_high"], color=style["color"], alpha=0.15, linewidth=0)
            ax.plot(part["k"], part["mean_diff"], label=method, **style)
            last = part.iloc[-1]
            ax.plot([last["k"]], [last["mean_diff"]], marker=marker, markersize=8, linestyle="none",
                    color=style["color"], markerfacecolor=style["color"] if significant.get(method) else "white",
                    markeredgewidth=1.6)
        ax.set_xticks(ks)
        _decorate(ax, title, legend_loc="best")
    return _save_panels(fig, axes, path, xlabel="k", ylabel="NDCG@k minus baseline",
                        title=f"{dataset}: test NDCG@k minus {baseline}, mean over queries with 95% bands; "
                        "marker at k=10 filled = significant after Holm")


def _mean_curve(curves: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean at each iteration over the curves that reach it, and how many do."""
    length = max(len(c) for c in curves)
    total = np.zeros(length)
    count = np.zeros(length)
    for curve in curves:
        total[: len(curve)] += curve
        count[: len(curve)] += 1
    return total / np.maximum(count, 1), count


def plot_validation_curves(runs: list[dict], dataset: str, methods: list[str], families: dict[str, str],
                           baseline: str | None, metric_name: str, path: Path) -> Path | None:
    """Validation ``metric_name`` after each iteration, mean over the folds (and seeds), one
    panel per family with the baseline in each.

    Runs stop at different iterations: the line is solid while every run contributes and
    faint where only the runs still training do. A dot marks the mean best iteration. The
    y-axis starts at the 2nd percentile of the plotted values, so that a slow start (the
    native NDCG_Boost's first stumps) does not flatten the others.
    """
    from matplotlib.ticker import MaxNLocator

    label = metric_name.upper()
    curves = {}
    for method in methods:
        mine = [r for r in runs if r["dataset"] == dataset and r["method"] == method and r["status"] == "ok"]
        lists = [r["valid_curve"] for r in mine if r.get("valid_curve")]
        if lists:
            mean, count = _mean_curve(lists)
            best = int(round(np.mean([r["best_iteration"] for r in mine])))
            curves[method] = (mean, count == len(lists), min(max(best, 1), mean.size))
    if not curves:
        return None
    groups = panels([m for m in methods if m in curves], families, baseline)
    if not groups:
        groups = [(families.get(baseline, ""), [])]
    fig, axes = _grid(len(groups), 6.5, 3.8)
    values = np.concatenate([c[0] for c in curves.values()])
    low, high = np.quantile(values, 0.02), values.max()
    for ax, (title, members) in zip(axes, groups):
        styles = _panel_styles(members)
        drawn = ([baseline] if baseline in curves else []) + members
        for method in drawn:
            mean, complete, best = curves[method]
            style = dict(_BASELINE) if method == baseline else dict(styles[method])
            style.pop("marker", None)
            x = np.arange(1, mean.size + 1)
            full = int(complete.sum())
            name = f"{method} (baseline)" if method == baseline else method
            ax.plot(x[:full], mean[:full], label=name, **style)
            if full < mean.size:
                ax.plot(x[full - 1:], mean[full - 1:], alpha=0.35, **{**style, "linewidth": 1.0})
            ax.plot([best], [mean[best - 1]], marker="o", color=style["color"], markersize=6, linestyle="none")
        if high > low:
            ax.set_ylim(low - 0.05 * (high - low), high + 0.05 * (high - low))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _decorate(ax, title, legend_loc="lower right")
    return _save_panels(fig, axes, path, xlabel="iteration", ylabel=f"validation {label}",
                        title=f"{dataset}: validation {label} per iteration, mean over folds and seeds "
                        "(dot: mean best iteration; faint: only the runs still training)")
