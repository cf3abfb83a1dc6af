"""Summaries over folds and paired significance tests over queries.

Fold figures. A run's figure is the mean over its test queries. With several seeds, a
fold's figure is the mean over the seeds; the summary is the mean and sample standard
deviation (``ddof=1``) of the fold figures.

Significance. For each method and the baseline, the per-query NDCG@10 (mean over seeds) is
paired by test query over all folds (each query is tested once per fold set). Two tests on
the differences: Student's paired t-test (``scipy.stats.ttest_rel``) and the Wilcoxon
signed-rank test (``scipy.stats.wilcoxon``, zero differences dropped, two-sided). The
p-values are not corrected for the number of methods compared.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .evaluate import MAP_CUTOFF, NDCG_CUTOFFS, PRECISION_CUTOFFS

__all__ = ["FIGURES", "TIMES", "fold_table", "significance", "summary"]

FIGURES = [f"ndcg@{k}" for k in NDCG_CUTOFFS] + [f"map@{MAP_CUTOFF}"] + [f"p@{k}" for k in PRECISION_CUTOFFS]
TIMES = ["train_seconds", "objective_ms_per_iter", "n_iterations", "best_iteration"]
TEST_METRIC = "ndcg@10"


def fold_table(runs: list[dict]) -> pd.DataFrame:
    """One row per dataset, method and fold: the successful runs' figures averaged over seeds."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return pd.DataFrame(columns=["dataset", "method", "fold", *FIGURES, *TIMES])
    frame = pd.DataFrame(ok)[["dataset", "method", "fold", "seed", *FIGURES, *TIMES]]
    frame = frame.astype({c: float for c in FIGURES + TIMES})
    return frame.groupby(["dataset", "method", "fold"], sort=False)[FIGURES + TIMES].mean().reset_index()


def summary(runs: list[dict]) -> pd.DataFrame:
    """Mean and standard deviation over folds of every figure and time, per dataset and
    method; columns ``<figure>_mean``, ``<figure>_std`` and ``n_folds``."""
    folds = fold_table(runs)
    rows = []
    for (dataset, method), group in folds.groupby(["dataset", "method"], sort=False):
        row = {"dataset": dataset, "method": method, "n_folds": len(group)}
        for column in FIGURES + TIMES:
            values = group[column].dropna().to_numpy()
            row[f"{column}_mean"] = float(values.mean()) if values.size else np.nan
            row[f"{column}_std"] = float(values.std(ddof=1)) if values.size > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _paired(per_query: pd.DataFrame, dataset: str, method: str, baseline: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    part = per_query[(per_query["dataset"] == dataset) & per_query["method"].isin([method, baseline])]
    table = part.groupby(["method", "fold", "query"], sort=False)[metric].mean().unstack("method")
    table = table.dropna()
    return table[method].to_numpy(), table[baseline].to_numpy()


def significance(per_query: pd.DataFrame, baseline: str | None, metric: str = TEST_METRIC) -> pd.DataFrame:
    """Paired tests of every method against ``baseline`` on per-query ``metric``.

    Columns: ``dataset, method, baseline, metric, n_queries, mean_diff, t_statistic,
    t_pvalue, wilcoxon_statistic, wilcoxon_pvalue``. A method identical to the baseline on
    every query gets p-value 1.
    """
    from scipy import stats

    columns = ["dataset", "method", "baseline", "metric", "n_queries", "mean_diff",
               "t_statistic", "t_pvalue", "wilcoxon_statistic", "wilcoxon_pvalue"]
    rows = []
    if baseline is None or per_query.empty:
        return pd.DataFrame(columns=columns)
    for dataset in per_query["dataset"].unique():
        present = per_query.loc[per_query["dataset"] == dataset, "method"].unique()
        if baseline not in present:
            continue
        for method in present:
            if method == baseline:
                continue
            a, b = _paired(per_query, dataset, method, baseline, metric)
            diff = a - b
            row = {"dataset": dataset, "method": method, "baseline": baseline, "metric": metric,
                   "n_queries": int(diff.size), "mean_diff": float(diff.mean()) if diff.size else np.nan}
            if diff.size < 2:
                row.update(t_statistic=np.nan, t_pvalue=np.nan, wilcoxon_statistic=np.nan, wilcoxon_pvalue=np.nan)
            elif not np.any(diff):
                row.update(t_statistic=0.0, t_pvalue=1.0, wilcoxon_statistic=np.nan, wilcoxon_pvalue=1.0)
            else:
                with warnings.catch_warnings():
                    # a constant non-zero difference makes the t statistic infinite: fine
                    warnings.simplefilter("ignore", RuntimeWarning)
                    t = stats.ttest_rel(a, b)
                w = stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
                row.update(t_statistic=float(t.statistic), t_pvalue=float(t.pvalue),
                           wilcoxon_statistic=float(w.statistic), wilcoxon_pvalue=float(w.pvalue))
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)
