"""Summaries over folds and paired significance tests over queries.

Fold figures. A run's figure is the mean over its test queries. With several seeds, a
fold's figure is the mean over the seeds; the summary is the mean and sample standard
deviation (``ddof=1``) of the fold figures.

Significance. For each method and the baseline, a test query's NDCG@10 is first averaged
over the seeds (the seeds re-train on the same query, they are not new observations, so they
must not multiply the number of pairs), then paired by test query and pooled over all folds:
each query is tested in exactly one fold, so the pooled differences are one per query and
independent across queries, and their number is the number of queries, not folds (five fold
means would leave a t-test with four degrees of freedom).

On the differences ``d``: the mean with a 95% confidence interval from Student's t
(``mean ± t(0.975, n-1) · sd/√n``, ``scipy.stats.t.interval``), the
paired t-test and the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``, zero differences
dropped), two-sided. The t interval is chosen over a bootstrap because it is the interval of
the test the verdict uses (it excludes 0 exactly when p < 0.05), it is deterministic, and with
hundreds of queries the mean of the bounded per-query differences is close to normal.

Multiplicity. Every method is compared with the baseline, so a dataset poses ``m`` questions
at once. The p-values of each test are adjusted with Holm's step-down method over the ``m``
methods compared on the dataset (:func:`holm`), which keeps the probability of any false
claim at most 5% without assuming the tests independent; a method is *significant* when its
Holm-adjusted t-test p-value is below 0.05.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .evaluate import CALIBRATION_FIGURES, MAP_CUTOFF, NDCG_CUTOFFS, PRECISION_CUTOFFS, label_figure

__all__ = ["ALPHA", "FIGURES", "RANKING_FIGURES", "TIMES", "difference_curves", "figure_names", "fold_table", "holm", "significance",
           "summary"]

#: Every run's figures: the ranking figures (also per query) and the calibration ones; these are None (NaN) for a method whose scores are
#: not probabilities. A table with several label columns adds one ``ndcg@10:<column>`` each.
RANKING_FIGURES = [f"ndcg@{k}" for k in NDCG_CUTOFFS] + [f"map@{MAP_CUTOFF}"] + [f"p@{k}" for k in PRECISION_CUTOFFS]
FIGURES = RANKING_FIGURES + list(CALIBRATION_FIGURES)
TIMES = ["train_seconds", "objective_ms_per_iter", "n_iterations", "best_iteration"]
TEST_METRIC = "ndcg@10"
#: Level of the tests and of the confidence intervals (95%).
ALPHA = 0.05


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of ``pvalues`` (NaN stays NaN and is not counted).

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value is
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting where it is below ``alpha`` is Holm's
    procedure at family-wise level ``alpha``.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def figure_names(runs: list[dict]) -> list[str]:
    """``FIGURES`` and the per-label figures (``ndcg@10:<column>``) the runs hold, in the
    order they first appear."""
    prefix = label_figure("")
    extra = dict.fromkeys(k for r in runs for k in r if k.startswith(prefix))
    return FIGURES + list(extra)


def fold_table(runs: list[dict]) -> pd.DataFrame:
    """One row per dataset, method and fold: the successful runs' figures averaged over seeds
    (a figure a run lacks, such as a calibration figure of a ranking method, is NaN and left
    out of the mean)."""
    ok = [r for r in runs if r["status"] == "ok"]
    figures = figure_names(ok)
    if not ok:
        return pd.DataFrame(columns=["dataset", "method", "fold", *figures, *TIMES])
    frame = pd.DataFrame(ok).reindex(columns=["dataset", "method", "fold", "seed", *figures, *TIMES])
    frame = frame.astype({c: float for c in figures + TIMES})
    return frame.groupby(["dataset", "method", "fold"], sort=False)[figures + TIMES].mean().reset_index()


def summary(runs: list[dict]) -> pd.DataFrame:
    """Mean and standard deviation over folds of every figure and time, per dataset and
    method; columns ``<figure>_mean``, ``<figure>_std`` and ``n_folds``."""
    folds = fold_table(runs)
    figures = [c for c in folds.columns if c not in ("dataset", "method", "fold", *TIMES)]
    rows = []
    for (dataset, method), group in folds.groupby(["dataset", "method"], sort=False):
        row = {"dataset": dataset, "method": method, "n_folds": len(group)}
        for column in figures + TIMES:
            values = group[column].dropna().to_numpy()
            row[f"{column}_mean"] = float(values.mean()) if values.size else np.nan
            row[f"{column}_std"] = float(values.std(ddof=1)) if values.size > 1 else np.nan
        rows.append(row)
    columns = ["dataset", "method", "n_folds"] + [f"{c}_{s}" for c in figures + TIMES for s in ("mean", "std")]
    return pd.DataFrame(rows, columns=columns)


def _t_interval(d: np.ndarray) -> tuple[float, float]:
    """95% t interval of the mean of ``d`` (the interval of the paired t-test)."""
    from scipy import stats

    mean = float(d.mean())
    if d.size < 2 or not np.any(d != d[0]):
        return mean, mean
    low, high = stats.t.interval(1 - ALPHA, d.size - 1, loc=mean, scale=stats.sem(d))
    return float(low), float(high)


def _paired(per_query: pd.DataFrame, dataset: str, method: str, baseline: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    part = per_query[(per_query["dataset"] == dataset) & per_query["method"].isin([method, baseline])]
    table = part.groupby(["method", "fold", "query"], sort=False)[metric].mean().unstack("method")
    table = table.dropna()
    return table[method].to_numpy(), table[baseline].to_numpy()


def significance(per_query: pd.DataFrame, baseline: str | None, metric: str = TEST_METRIC) -> pd.DataFrame:
    """Paired tests of every method against ``baseline`` on per-query ``metric`` (module doc).

    Columns: ``dataset, method, baseline, metric, n_queries, method_mean, baseline_mean,
    mean_diff, ci_low, ci_high`` (95% t interval of the mean difference), ``t_statistic,
    t_pvalue, t_pvalue_holm, wilcoxon_statistic, wilcoxon_pvalue, wilcoxon_pvalue_holm,
    significant`` (Holm-adjusted t-test p-value below 0.05). A method identical to the
    baseline on every query gets p-value 1 and the interval [0, 0].
    """
    from scipy import stats

    columns = ["dataset", "method", "baseline", "metric", "n_queries", "method_mean", "baseline_mean",
               "mean_diff", "ci_low", "ci_high", "t_statistic", "t_pvalue", "t_pvalue_holm",
               "wilcoxon_statistic", "wilcoxon_pvalue", "wilcoxon_pvalue_holm", "significant"]
    rows = []
    if baseline is None or per_query.empty:
        return pd.DataFrame(columns=columns)
    for dataset in per_query["dataset"].unique():
        present = per_query.loc[per_query["dataset"] == dataset, "method"].unique()
        if baseline not in present:
            continue
        mine = []
        for method in present:
            if method == baseline:
                continue
            a, b = _paired(per_query, dataset, method, baseline, metric)
            diff = a - b
            row = {"dataset": dataset, "method": method, "baseline": baseline, "metric": metric,
                   "n_queries": int(diff.size),
                   "method_mean": float(a.mean()) if diff.size else np.nan,
                   "baseline_mean": float(b.mean()) if diff.size else np.nan,
                   "mean_diff": float(diff.mean()) if diff.size else np.nan}
            if diff.size < 2:
                row.update(ci_low=np.nan, ci_high=np.nan, t_statistic=np.nan, t_pvalue=np.nan,
                           wilcoxon_statistic=np.nan, wilcoxon_pvalue=np.nan)
            elif not np.any(diff):
                row.update(ci_low=0.0, ci_high=0.0, t_statistic=0.0, t_pvalue=1.0,
                           wilcoxon_statistic=np.nan, wilcoxon_pvalue=1.0)
            else:
                with warnings.catch_warnings():
                    # a constant non-zero difference makes the t statistic infinite: fine
                    warnings.simplefilter("ignore", RuntimeWarning)
                    t = stats.ttest_rel(a, b)
                    ci = _t_interval(diff)
                w = stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
                row.update(ci_low=ci[0], ci_high=ci[1],
                           t_statistic=float(t.statistic), t_pvalue=float(t.pvalue),
                           wilcoxon_statistic=float(w.statistic), wilcoxon_pvalue=float(w.pvalue))
            mine.append(row)
        t_holm = holm([r["t_pvalue"] for r in mine])
        w_holm = holm([r["wilcoxon_pvalue"] for r in mine])
        for row, tp, wp in zip(mine, t_holm, w_holm):
            row.update(t_pvalue_holm=float(tp), wilcoxon_pvalue_holm=float(wp), significant=bool(tp < ALPHA))
        rows += mine
    return pd.DataFrame(rows, columns=columns)


def difference_curves(per_query: pd.DataFrame, dataset: str, baseline: str, ks=NDCG_CUTOFFS) -> pd.DataFrame:
    """Per method and cut-off ``k``: the mean per-query NDCG@k difference to ``baseline`` and
    its 95% t interval, paired and seed-averaged as in :func:`significance` (for the plots).

    Columns: ``method, k, mean_diff, ci_low, ci_high``.
    """
    part = per_query[per_query["dataset"] == dataset]
    columns = [f"ndcg@{k}" for k in ks]
    by_query = part.groupby(["method", "fold", "query"], sort=False)[columns].mean()
    rows = []
    if baseline not in by_query.index.get_level_values("method"):
        return pd.DataFrame(rows, columns=["method", "k", "mean_diff", "ci_low", "ci_high"])
    base = by_query.xs(baseline, level="method")
    for method in part["method"].unique():
        if method == baseline:
            continue
        diff = (by_query.xs(method, level="method") - base).dropna()
        for k, column in zip(ks, columns):
            d = diff[column].to_numpy()
            low, high = _t_interval(d) if d.size else (np.nan, np.nan)
            rows.append({"method": method, "k": k, "mean_diff": float(d.mean()) if d.size else np.nan,
                         "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=["method", "k", "mean_diff", "ci_low", "ci_high"])
