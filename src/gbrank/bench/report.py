"""The report directory of a benchmark: markdown, CSV/JSON figures, test predictions, plots.

Files
-----
``report.md``
    The verdict (per dataset: the best method, its difference to the baseline with a 95%
    interval, and whether it is significant after Holm's correction), settings, one table
    per dataset (NDCG@1/3/5/10, MAP@10 as mean ± std over folds, training time, objective
    time per iteration, best iteration, and the paired tests against the baseline with raw
    and Holm-adjusted p-values), NDCG@1..10 means, plots, methods that did not run. Where a
    method's scores are probabilities (:mod:`gbrank.bench.evaluate`), the table adds log loss
    and ECE beside NDCG, with — for the methods whose scores are not probabilities; a table
    with several label columns adds each method's test NDCG@10 on each column.
``summary.csv``
    Per dataset and method: ``<figure>_mean``, ``<figure>_std`` over folds, ``n_folds``.
``folds.csv``
    Per dataset, method and fold: every figure and time (mean over seeds).
``runs.csv``
    Per dataset, fold, seed and method: status, error, times, iterations, figures; appended
    as each run finishes when the harness writes a journal (:mod:`gbrank.bench.journal`).
``runs.jsonl``
    The journal: every finished run with its figures and test scores, written as it
    finished; ``--resume`` reads it.
``per_query.csv``
    Per run and test query: ``dataset, fold, seed, method, query, qid, n_docs`` and the
    figures ``ndcg@1`` .. ``ndcg@10``, ``map@10``, ``p@1``, ``p@3``, ``p@5``, ``p@10``.
``predictions.csv.gz``
    Per run and test document, in the test part's row order: ``dataset, fold, seed, method,
    query, qid, label, score``. The rows of one run with the same ``query`` form one query,
    so every figure can be recomputed from this file with :mod:`gbrank.metrics`.
``curves.csv``
    Validation metric after each iteration: ``dataset, fold, seed, method, iteration, value``.
``significance.csv``
    The paired tests with intervals and Holm-adjusted p-values (:mod:`gbrank.bench.stats`).
``results.json``
    ``config``, ``versions``, ``datasets``, ``methods``, ``baseline``, ``runs`` (with the
    validation curves), ``summary`` and ``significance``.
``ndcg10_difference-<dataset>.png``
    Every method's test NDCG@10 minus the baseline's with its 95% interval, coloured by
    family, significant differences (after Holm's correction) filled. ``<dataset>`` is the
    data set's name made safe for a file name, with a hash suffix where two names of the
    report would give the same one (:func:`~gbrank.bench.plots.slugs`).
``ndcg_at_k-<dataset>.png``, ``validation_ndcg-<dataset>.png``
    NDCG@1..10 minus the baseline's with 95% bands, and the validation NDCG per iteration,
    one panel per family.
``tuning.csv``, ``tuning-<dataset>.png``
    With ``--tune``: every trial of every run, and the best validation NDCG@10 so far
    against the trials (:mod:`gbrank.bench.tune`).
"""

from __future__ import annotations

import json
import math
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from .evaluate import LABEL_CUTOFF, MAP_CUTOFF, NDCG_CUTOFFS, label_figure
from .journal import RUN_COLUMNS, refuse_links
from .plots import plot_differences, plot_ndcg_at_k, plot_validation_curves, slugs
from .run import Results
from .stats import ALPHA, FIGURES, difference_curves, fold_table, significance, summary

__all__ = ["TABLE_COLUMNS", "markdown_table", "new_report_dir", "partial_note", "verdict", "write_report"]

#: Columns of each dataset's table in report.md.
TABLE_COLUMNS = [
    "method", "NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", f"MAP@{MAP_CUTOFF}",
    "train s", "objective ms/iter", "best iter", "ΔNDCG@10 [95% CI]",
    "p (t)", "p (t, Holm)", "p (Wilcoxon)", "p (Wilcoxon, Holm)",
]
_QUALITY = {"NDCG@1": "ndcg@1", "NDCG@3": "ndcg@3", "NDCG@5": "ndcg@5", "NDCG@10": "ndcg@10",
            f"MAP@{MAP_CUTOFF}": f"map@{MAP_CUTOFF}"}
#: Columns added after MAP where some method's scores are probabilities; lower is better.
_CALIBRATION = {"log loss": "logloss", "ECE": "ece"}


def new_report_dir(base: str | Path = "gbrank-report") -> Path:
    """``base`` if it does not exist yet, else the first free ``base-2``, ``base-3``, ..."""
    base = Path(base)
    if not base.exists():
        return base
    i = 2
    while Path(f"{base}-{i}").exists():
        i += 1
    return Path(f"{base}-{i}")


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for package in ("gbrank", "numpy", "numba", "lightgbm", "xgboost", "scipy", "pandas"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = None
    return out


def _mean_std(mean, std, digits: int) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    text = f"{mean:.{digits}f}"
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        text += f" ± {std:.{digits}f}"
    return text


def _pvalue(p) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _interval(row) -> str:
    if row["ci_low"] is None or math.isnan(row["ci_low"]):
        return f"{row['mean_diff']:+.4f}"
    return f"{row['mean_diff']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]"


def _pvalue_text(p) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p not available"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def verdict(sig: pd.DataFrame, dataset: str, baseline: str | None, n_seeds: int) -> str:
    """A few sentences on ``dataset``: the best method by mean test NDCG@10 over the queries,
    its difference to the baseline with the 95% interval, and whether that difference is
    significant after Holm's correction over all methods compared."""
    rows = sig[sig["dataset"] == dataset] if not sig.empty else sig
    if baseline is None or rows.empty:
        return (f"**{dataset}**: no comparison with a baseline (fewer than two methods ran, or the baseline "
                "did not; see 'Not run').")
    m = len(rows)
    per_seed = f", each query's NDCG@10 averaged over the {n_seeds} seeds" if n_seeds > 1 else ""
    how = (f"Paired over the {int(rows['n_queries'].max())} test queries{per_seed}; 95% t interval; "
           f"Holm's correction over the {m} method{'s' if m > 1 else ''} compared with the baseline.")
    better = rows[rows["significant"] & (rows["mean_diff"] > 0)]["method"].tolist()
    worse = rows[rows["significant"] & (rows["mean_diff"] < 0)]["method"].tolist()
    top = rows.loc[rows["mean_diff"].idxmax()]
    if top["mean_diff"] > 0:
        text = (f"**{dataset}**: the best method is **{top['method']}**, test NDCG@10 {top['method_mean']:.4f}, "
                f"{top['mean_diff']:+.4f} against the baseline {baseline} ({top['baseline_mean']:.4f}; 95% CI "
                f"{top['ci_low']:+.4f} to {top['ci_high']:+.4f}), {_pvalue_text(top['t_pvalue'])}, Holm-adjusted "
                f"{_pvalue_text(top['t_pvalue_holm'])}: ")
        text += ("significant at the 5% level." if top["significant"] else
                 "not significant at the 5% level, so these data do not tell it from the baseline.")
    else:
        text = (f"**{dataset}**: the baseline **{baseline}** has the best test NDCG@10 ({top['baseline_mean']:.4f}); "
                f"the runner-up {top['method']} is {top['mean_diff']:+.4f} (95% CI {top['ci_low']:+.4f} to "
                f"{top['ci_high']:+.4f}), Holm-adjusted {_pvalue_text(top['t_pvalue_holm'])}.")
    text += (" After the correction, " + (f"better than the baseline: {', '.join(better)}; " if better else
             "no method is significantly better than the baseline; ")
             + (f"worse: {', '.join(worse)}." if worse else "none is significantly worse."))
    return f"{text} {how}"


def partial_note(results: Results, out: Path) -> str:
    """The warning of a partial report: how many runs finished, and how to resume."""
    planned = f" of {results.n_planned}" if results.n_planned else ""
    return (f"**Partial report**: the benchmark was interrupted after {len(results.runs)}{planned} runs; "
            f"the figures below cover only those. Run the same command with `--resume {out}` to train "
            "the others and complete it.")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table; columns after the first are right-aligned."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


_CALIBRATION_NOTE = (
    " Log loss and ECE (lower is better, bold the lowest): the test documents' mean log loss and expected "
    "calibration error (10 bins) of the sigmoid of the score against label / max_label (the method's, by default "
    "the data set's largest label, at least 1), for the methods "
    "whose scores are probabilities of relevance; — for the others, whose scores are not probabilities."
)


def _calibrated(rows_by_method: pd.DataFrame, present: list[str]) -> dict[str, str]:
    """The calibration columns, where some method of the table has their figures."""
    if not present or not all(f"{key}_mean" in rows_by_method.columns for key in _CALIBRATION.values()):
        return {}
    return _CALIBRATION if rows_by_method.loc[present, "logloss_mean"].notna().any() else {}


def _dataset_table(summ: pd.DataFrame, sig: pd.DataFrame, dataset: str, methods: list[str], baseline) -> str:
    rows_by_method = summ[summ["dataset"] == dataset].set_index("method")
    present = [m for m in methods if m in rows_by_method.index]
    calibration = _calibrated(rows_by_method, present)
    best = {col: rows_by_method.loc[present, f"{key}_mean"].max() for col, key in _QUALITY.items()} if present else {}
    best.update({col: rows_by_method.loc[present, f"{key}_mean"].min() for col, key in calibration.items()})
    sig = sig[sig["dataset"] == dataset].set_index("method") if not sig.empty else sig
    rows = []
    for method in present:
        row = rows_by_method.loc[method]
        cells = [f"{method} (baseline)" if method == baseline else method]
        for col, key in {**_QUALITY, **calibration}.items():
            text = _mean_std(row[f"{key}_mean"], row[f"{key}_std"], 4)
            if np.isclose(row[f"{key}_mean"], best[col], rtol=0, atol=5e-5):
                text = f"**{text}**"
            cells.append(text)
        cells.append(_mean_std(row["train_seconds_mean"], row["train_seconds_std"], 2))
        cells.append(_mean_std(row["objective_ms_per_iter_mean"], row["objective_ms_per_iter_std"], 2))
        cells.append(_mean_std(row["best_iteration_mean"], row["best_iteration_std"], 0))
        if method == baseline or sig.empty or method not in sig.index:
            cells += ["—"] * 5
        else:
            s = sig.loc[method]
            holm_t = _pvalue(s["t_pvalue_holm"])
            cells += [_interval(s), _pvalue(s["t_pvalue"]), f"**{holm_t}**" if s["significant"] else holm_t,
                      _pvalue(s["wilcoxon_pvalue"]), _pvalue(s["wilcoxon_pvalue_holm"])]
        rows.append(cells)
    header = TABLE_COLUMNS[:len(_QUALITY) + 1] + list(calibration) + TABLE_COLUMNS[len(_QUALITY) + 1:]
    return markdown_table(header, rows)


def _label_table(summ: pd.DataFrame, dataset: str, methods: list[str], names) -> str | None:
    """Each method's test NDCG@10 on each label column (mean ± std over folds), the best
    bold; None where no method has them (every run failed or was refused)."""
    rows_by_method = summ[summ["dataset"] == dataset].set_index("method")
    keys = [f"ndcg@{LABEL_CUTOFF}"] + [label_figure(name) for name in names[1:]]
    if any(f"{key}_mean" not in rows_by_method.columns for key in keys):
        return None
    present = [m for m in methods if m in rows_by_method.index]
    if not present:
        return None
    best = {key: rows_by_method.loc[present, f"{key}_mean"].max() for key in keys}
    rows = []
    for method in present:
        row = rows_by_method.loc[method]
        cells = [method]
        for key in keys:
            text = _mean_std(row[f"{key}_mean"], row[f"{key}_std"], 4)
            cells.append(f"**{text}**" if np.isclose(row[f"{key}_mean"], best[key], rtol=0, atol=5e-5) else text)
        rows.append(cells)
    return markdown_table(["method"] + list(names), rows)


def _ndcg_curve_table(summ: pd.DataFrame, dataset: str, methods: list[str]) -> str:
    rows_by_method = summ[summ["dataset"] == dataset].set_index("method")
    rows = []
    for method in methods:
        if method in rows_by_method.index:
            rows.append([method] + [f"{rows_by_method.loc[method, f'ndcg@{k}_mean']:.4f}" for k in NDCG_CUTOFFS])
    return markdown_table(["method"] + [f"@{k}" for k in NDCG_CUTOFFS], rows)


def _json_ready(value):
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.ndarray):
        return _json_ready(value.tolist())
    if callable(value):
        return getattr(value, "__name__", repr(value))
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [_json_ready(r) for r in frame.to_dict(orient="records")]


def write_report(results: Results, out: str | Path, *, command: str | None = None, title: str = "gbrank benchmark report") -> Path:
    """Write every file of the report into ``out`` (created); returns the path of report.md."""
    out = Path(out)
    refuse_links(out)
    out.mkdir(parents=True, exist_ok=True)
    methods = [m["name"] for m in results.methods]
    summ = summary(results.runs)
    sig = significance(results.per_query, results.baseline)
    folds = fold_table(results.runs)
    metric_name = results.config["curve_metric"]

    summ.to_csv(out / "summary.csv", index=False)
    folds.to_csv(out / "folds.csv", index=False)
    runs_frame = pd.DataFrame([{k: v for k, v in r.items() if k != "valid_curve"} for r in results.runs])
    runs_frame = runs_frame.reindex(columns=RUN_COLUMNS + [c for c in runs_frame.columns if c not in RUN_COLUMNS])
    runs_frame.to_csv(out / "runs.csv", index=False)
    results.per_query.to_csv(out / "per_query.csv", index=False)
    # level 1: less than half the time of the default level 6, for a file about 15% larger
    results.predictions.to_csv(out / "predictions.csv.gz", index=False, compression={"method": "gzip", "compresslevel": 1})
    sig.to_csv(out / "significance.csv", index=False)
    curves = [
        {"dataset": r["dataset"], "fold": r["fold"], "seed": r["seed"], "method": r["method"], "iteration": i + 1, "value": v}
        for r in results.runs if r["status"] == "ok" for i, v in enumerate(r.get("valid_curve") or [])
    ]
    pd.DataFrame(curves, columns=["dataset", "fold", "seed", "method", "iteration", "value"]).to_csv(out / "curves.csv", index=False)

    families = {m["name"]: m.get("family", "other") for m in results.methods}
    slug = slugs(d["name"] for d in results.datasets).__getitem__
    plots = {}
    for dataset in results.datasets:
        name = dataset["name"]
        ok = [m for m in methods if m in set(summ.loc[summ["dataset"] == name, "method"])]
        if not ok:
            continue
        diff_png = plot_differences(sig, name, families, out / f"ndcg10_difference-{slug(name)}.png", alpha=ALPHA)
        curves_k = difference_curves(results.per_query, name, results.baseline) if results.baseline else None
        ndcg_png = plot_ndcg_at_k(curves_k, sig, name, ok, families, results.baseline,
                                  out / f"ndcg_at_k-{slug(name)}.png")
        curve_png = plot_validation_curves(results.runs, name, ok, families, results.baseline, metric_name,
                                           out / f"validation_ndcg-{slug(name)}.png")
        plots[name] = [p.name for p in (diff_png, ndcg_png, curve_png) if p is not None]

    versions = _versions()
    document = {
        "config": _json_ready(results.config),
        "versions": versions,
        "command": command,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "datasets": results.datasets,
        "methods": results.methods,
        "baseline": results.baseline,
        "figures": FIGURES,
        "runs": [_json_ready(r) for r in results.runs],
        "summary": _records(summ),
        "significance": _records(sig),
        "plots": plots,
        **({"tuning": _json_ready(results.tuning)} if results.tuning else {}),
        "skipped": results.skipped,
        "partial": results.partial,
        "n_planned": results.n_planned,
    }
    (out / "results.json").write_text(json.dumps(document, indent=1, allow_nan=False))

    cfg = results.config
    params = cfg["params"]
    lines = [f"# {title}" + (" (partial)" if results.partial else ""), ""]
    if results.partial:
        lines += [partial_note(results, out), ""]
    lines += ["## Verdict", ""]
    for dataset in results.datasets:
        lines += [verdict(sig, dataset["name"], results.baseline, len(cfg["seeds"])), ""]
    if command:
        lines += ["Command:", "", "```", command, "```", ""]
    lines += [
        "## Settings",
        "",
        f"- Methods: {', '.join(methods)}.",
        "- Folds: " + ", ".join(f"{d['n_folds']} ({d['name']})" for d in results.datasets) + "; "
        f"seeds: {', '.join(map(str, cfg['seeds']))} (figures are "
        "averaged over seeds within a fold, then mean ± sample std over folds).",
        f"- Boosting: at most {cfg['rounds']} iterations; "
        + (f"early stopping after {cfg['early_stopping']} iterations without a better validation "
           f"{metric_name}, the best iteration is kept" if cfg["early_stopping"] else "no early stopping")
        + ".",
        f"- Trees (every LightGBM and XGBoost method): learning rate {params['learning_rate']}, "
        f"{params['num_leaves']} leaves, min {params['min_data_in_leaf']} rows per leaf (LightGBM), "
        f"min hessian sum {params['min_child_weight']} per leaf, {params['max_bin']} bins; "
        "the native NDCG_Boost boosts decision stumps.",
        f"- Metrics: {cfg['conventions_description']}.",
        "- Gain (`--gain " + cfg.get("gain", "auto") + "`): "
        + "; ".join(f"{d['name']}: {d['gain_reason']}" for d in results.datasets if "gain_reason" in d)
        + ". The evaluation and every method with a gain use it (LightGBM's `label_gain`, XGBoost's "
        "`ndcg_exp_gain`, a gbrank objective's `gain` or `target`), unless a method's name sets one.",
        f"- Significance: per-query {sig['metric'].iloc[0] if not sig.empty else 'ndcg@10'} of each method "
        f"against the baseline **{results.baseline}**, each query's value averaged over the seeds first (seeds "
        "re-train on the same queries and must not count as more observations), then paired over all test "
        "queries of all folds (each query is tested once); mean difference with a 95% t confidence interval, "
        "Student's paired t-test (`scipy.stats.ttest_rel`) and Wilcoxon signed-rank test "
        "(`scipy.stats.wilcoxon`, zero differences dropped), two-sided; each test's p-values Holm-adjusted "
        f"over the methods compared on the dataset. Significant: Holm-adjusted t-test p < {ALPHA}.",
        "- Times: `train s` is the training call's wall time without the harness's validation "
        "metric (and without building the engine's dataset or compiling kernels), the `train` "
        "seconds of the progress lines, whose `run` seconds also count building the fold's engine "
        "data, compiling kernels on first use, the validation metric and scoring; `objective ms/iter` "
        "is the time inside a gbrank objective per iteration (— for built-ins, which run inside "
        "the engine); `best iter` is the iteration kept.",
        f"- Threads: {cfg['threads']}. Versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items() if v) + ".",
        "",
    ]
    for dataset in results.datasets:
        name = dataset["name"]
        lines += [f"## {name}", "", dataset["description"] + ".", ""]
        lines += [_dataset_table(summ, sig, name, methods, results.baseline), ""]
        by_method = summ[summ["dataset"] == name].set_index("method")
        lines += ["Figures: mean ± std over folds. Bold: the best mean in the column, and a Holm-adjusted "
                  f"p-value below {ALPHA}. ΔNDCG@10: mean per-query difference to the baseline with its 95% "
                  "t interval; p: two-sided paired tests, raw and Holm-adjusted over the methods compared."
                  + (_CALIBRATION_NOTE if _calibrated(by_method, [m for m in methods if m in by_method.index]) else ""),
                  ""]
        labels = _label_table(summ, name, methods, dataset["label_names"]) if dataset.get("label_names") else None
        if labels is not None:
            lines += [f"NDCG@{LABEL_CUTOFF} on each label column (test, mean ± std over folds; each column's "
                      "gain: " + ", ".join(f"{c} {g}" for c, g in dataset["label_gains"].items()) + "):", "",
                      labels, ""]
        lines += ["NDCG@1..10 (test, mean over folds):", "", _ndcg_curve_table(summ, name, methods), ""]
        for png in plots.get(name, []):
            lines += [f"![{png}]({png})", ""]
    if results.tuning:
        from .tune import tuning_section

        lines += tuning_section(results, out, families, slug)
    unavailable = [m for m in results.methods if not m["available"]]
    failed = [r for r in results.runs if r["status"] != "ok"]
    if unavailable or failed or results.skipped:
        lines += ["## Not run", ""]
        lines += [f"- {m['name']}: unavailable: {m['reason']}" for m in unavailable]
        lines += [f"- {s['method']} on {s['dataset']}: {'refused' if s['named'] else 'left out of the group'}: "
                  f"{s['reason']}; {s['fix']}" for s in results.skipped]
        lines += [f"- {r['method']} on {r['dataset']} {r['fold']} seed {r['seed']}: failed: {r['error']}" for r in failed]
        lines += [""]
    lines += [
        "## Files",
        "",
        "`summary.csv` (mean/std over folds), `folds.csv` (per fold), `runs.csv` (per run), "
        "`runs.jsonl` (written by the command line: every run as it finished, read by `--resume`), "
        "`per_query.csv` (per test query), `predictions.csv.gz` (test scores with labels, query "
        "and qid, enough to recompute every figure), `curves.csv` (validation metric per "
        "iteration), `significance.csv`, `results.json` (all of it with the settings).",
        "",
    ]
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report
