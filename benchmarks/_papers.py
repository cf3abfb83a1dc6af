"""Shared plumbing of the paper reproductions (``reproduce_*.py``): data, settings, tables.

Every reproduction runs on the benchmark harness (:mod:`gbrank.bench`) and prints markdown:
our figures next to the paper's, the settings, and the command that made them. With
``--markdown PATH`` the same text is written to a file (the tables in docs/benchmarks/).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from gbrank._data_dir import data_dir
from gbrank.bench import BenchConfig, TreeParams, run_benchmark, write_report
from gbrank.bench.report import markdown_table, new_report_dir
from gbrank.bench.stats import fold_table

OHSUMED = "letor3_ohsumed/QueryLevelNorm"

# One tree setting for every OHSUMED reproduction. OHSUMED has 63-64 training queries per
# fold, so small trees and a low learning rate, stopped early on the fold's validation queries
# (the LETOR baselines the papers compare with select their models on them too). It was
# chosen among five candidates (learning rate 0.02-0.1, 4-31 leaves, 20-200 documents per
# leaf) by the mean best *validation* NDCG@10 of lambdarank, (W-)RankNet and (W-)ListMLE.
OHSUMED_TREES = TreeParams(learning_rate=0.05, num_leaves=7, min_data_in_leaf=100)
OHSUMED_ROUNDS = 1000
OHSUMED_PATIENCE = 100
OHSUMED_SEEDS = "0,1,2,3,4"


def ohsumed_root() -> Path:
    """The OHSUMED QueryLevelNorm folds, or exit with a message saying where they were sought."""
    root = data_dir()
    if root is None or not (root / OHSUMED / "Fold1").is_dir():
        if root is not None:
            where = f"no {root / OHSUMED}"
        elif os.environ.get("GBRANK_DATA_DIR"):
            where = f"GBRANK_DATA_DIR={os.environ['GBRANK_DATA_DIR']} is not a directory"
        else:
            where = "no ../shared/data next to the repository and GBRANK_DATA_DIR is not set"
        sys.exit(
            f"OHSUMED not found ({where}): this reproduction needs LETOR 3.0 OHSUMED "
            "(QueryLevelNorm, Fold1..Fold5); put it in ../shared/data/letor3_ohsumed or set "
            "GBRANK_DATA_DIR to the directory holding letor3_ohsumed/"
        )
    return root / OHSUMED


def parser(description: str, *, rounds: int, seeds: str, early_stopping: int = 50) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--folds", type=int, default=5, help="folds used (default: 5)")
    p.add_argument("--rounds", type=int, default=rounds, help=f"maximum boosting iterations (default: {rounds})")
    p.add_argument("--early-stopping", type=int, default=early_stopping,
                   help=f"patience on the validation fold, 0 for none (default: {early_stopping})")
    p.add_argument("--seeds", default=seeds, help=f"comma-separated seeds (default: {seeds})")
    p.add_argument("--threads", type=int, default=1, help="threads per run (default: 1)")
    p.add_argument("--out", help="harness report directory (default: a new ./gbrank-report-<paper>)")
    p.add_argument("--markdown", help="also write the printed markdown to this file")
    return p


def ohsumed_setup(doc: str, argv=None) -> tuple[argparse.Namespace, str, BenchConfig]:
    """What an OHSUMED reproduction starts from: its command line (described by the first line
    of ``doc``, OHSUMED defaults), the harness data spec of the folds and the harness settings."""
    args = parser(doc.splitlines()[0], rounds=OHSUMED_ROUNDS, seeds=OHSUMED_SEEDS,
                  early_stopping=OHSUMED_PATIENCE).parse_args(argv)
    config = BenchConfig(
        rounds=args.rounds, early_stopping=args.early_stopping, seeds=seeds_of(args.seeds),
        threads=args.threads, params=OHSUMED_TREES, conventions="letor",
    )
    return args, f"OHSUMED=letor:{ohsumed_root()}", config

def seeds_of(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(",") if s.strip())


def command_line() -> str:
    return "python " + " ".join(shlex.quote(a) for a in sys.argv)


def document(title: str, intro: str, table: str, *body: str, settings: list[str]) -> str:
    """The markdown of a reproduction: title, what was compared, the command, our table, the
    ``body`` (findings), then the ``settings`` (from :func:`settings_lines`); one line per item."""
    return "\n".join([f"# {title}", "", intro, "", "Command:", "", "<!-- fragment -->", "```", command_line(), "```", "", table, "",
                      *body, "", "Settings:", "", *settings])


def run(data, methods, *, folds: int, config: BenchConfig, baseline: str | None = None):
    """Run the harness; returns (results, seconds)."""
    start = time.perf_counter()
    results = run_benchmark(data, methods, folds=folds, config=config, baseline=baseline)
    failed = [r for r in results.runs if r["status"] != "ok"]
    if failed:
        sys.exit(f"{len(failed)} run(s) failed, first: {failed[0]['method']}: {failed[0]['error']}")
    return results, time.perf_counter() - start


def save_report(results, out: str | None, paper: str) -> Path:
    path = Path(out) if out else new_report_dir(f"gbrank-report-{paper}")
    return write_report(results, path, command=command_line(), title=f"gbrank: reproduction of {paper}")


def fold_means(results) -> pd.DataFrame:
    """Per method: mean and std over folds of every figure (index: method)."""
    folds = fold_table(results.runs)
    grouped = folds.groupby("method", sort=False)
    return grouped.mean(numeric_only=True).join(grouped.std(ddof=1, numeric_only=True).add_suffix("_std"))


def paired(results, a: str, b: str, metric: str = "ndcg@10") -> tuple[float, float, float, int]:
    """Mean per-query difference a - b of ``metric`` (mean over seeds), the p-values of the
    paired t-test and the Wilcoxon signed-rank test over all test queries, and their number."""
    from scipy import stats

    pq = results.per_query
    table = pq[pq["method"].isin([a, b])].groupby(["method", "fold", "query"])[metric].mean().unstack("method").dropna()
    diff = table[a] - table[b]
    if not np.any(diff.to_numpy()):
        return 0.0, 1.0, 1.0, len(table)
    return (float(diff.mean()), float(stats.ttest_rel(table[a], table[b]).pvalue),
            float(stats.wilcoxon(table[a], table[b]).pvalue), len(table))


def fmt(value: float, std: float | None = None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    text = f"{value:.{digits}f}"
    if std is not None and not np.isnan(std):
        text += f" ± {std:.{digits}f}"
    return text


def pvalue(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def settings_lines(config: BenchConfig, folds: int, seconds: float, extra: list[str] = (), *,
                   report: Path | None = None, report_of: str = "") -> list[str]:
    """The harness settings, one markdown item each; ``extra`` before the wall time, and last
    where the harness report (from :func:`save_report`) of ``report_of`` went."""
    t = config.params
    lines = [
        f"- Folds: {folds}; seeds {', '.join(map(str, config.seeds))} (each fold's figure is the mean over "
        "seeds; tables show the mean over folds, ± the standard deviation over folds where shown).",
        f"- LightGBM trees: learning rate {t.learning_rate}, {t.num_leaves} leaves, at least "
        f"{t.min_data_in_leaf} documents per leaf, {t.max_bin} bins; at most {config.rounds} iterations"
        + (f", early stopping after {config.early_stopping} iterations without a better validation "
           f"NDCG@{config.curve_k}" if config.early_stopping else ", no early stopping") + ".",
        f"- Metrics: {config.conventions} conventions"
        + (" (LETOR's `Eval-Score-3.0.pl`: gain 2^l-1, discount 1 at ranks 1-2 and 1/log2(r) after, a "
           "query without relevant documents scores 0, P@k divides by k)" if config.conventions == "letor" else "")
        + ".",
        *extra,
        f"- Wall time {seconds / 60:.1f} min with {config.threads} thread(s) on a shared, loaded 2-core "
        f"machine ({platform.python_implementation()} {platform.python_version()}), {date.today().isoformat()}.",
    ]
    if report is not None:
        lines.append(f"- Full harness report{report_of} (per-query figures, predictions, plots; written by the "
                     f"command, not committed): `{report.parent.name}/`.")
    return lines


def emit(text: str, markdown: str | None) -> None:
    print(text)
    if markdown:
        Path(markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(markdown).write_text(text + "\n")
        print(f"\nwritten to {markdown}", file=sys.stderr)


__all__ = [
    "OHSUMED_PATIENCE",
    "OHSUMED_ROUNDS",
    "OHSUMED_SEEDS",
    "OHSUMED_TREES",
    "command_line",
    "document",
    "emit",
    "fmt",
    "fold_means",
    "markdown_table",
    "ohsumed_root",
    "ohsumed_setup",
    "paired",
    "parser",
    "pvalue",
    "run",
    "save_report",
    "seeds_of",
    "settings_lines",
]
