"""Benchmark harness: gbrank's objectives against the engines' built-in rankers.

Runs a grid of (engine, objective) methods on one or more datasets with k-fold
cross-validation, the same tree parameters for every method, early stopping on the
validation part, and writes a report (markdown table with paired significance tests against
a baseline, CSV/JSON of every per-fold and per-query figure, the test predictions, and PNG
plots)::

    python -m gbrank.bench                      # the embedded synthetic default
    python -m gbrank.bench --data letor:../shared/data/letor4_mq2008 --methods all
    python -m gbrank.bench --tune 30            # tune every method first (Optuna, the [tune] extra)

From Python::

    from gbrank.bench import BenchConfig, run_benchmark, write_report
    results = run_benchmark("synthetic", "lgb:lambdarank,lgb:listmle_topk", folds=5,
                            config=BenchConfig(rounds=200))          # BenchConfig(tune=30) tunes
    write_report(results, "gbrank-report")

Modules: :mod:`~gbrank.bench.methods` (method names), :mod:`~gbrank.bench.data` (dataset
specs and folds), :mod:`~gbrank.bench.checks` (the labels each method takes and the work it
would do, checked before training), :mod:`~gbrank.bench.train` (one training run),
:mod:`~gbrank.bench.run` (the grid), :mod:`~gbrank.bench.tune` (``--tune``), :mod:`~gbrank.bench.journal` (runs written as they
finish, for ``--resume``), :mod:`~gbrank.bench.evaluate` (metric conventions and gains), :mod:`~gbrank.bench.stats`
(summaries and tests), :mod:`~gbrank.bench.report` and :mod:`~gbrank.bench.plots`.
"""

from .data import BenchData, Fold, from_folds, from_table, parse_data
from .evaluate import CONVENTIONS, per_query_metrics
from .methods import Method, all_method_names, default_method_names, parse_methods
from .report import new_report_dir, write_report
from .run import BenchConfig, Plan, Results, plan_benchmark, run_benchmark
from .stats import significance, summary
from .train import TreeParams

__all__ = [
    "CONVENTIONS",
    "BenchConfig",
    "BenchData",
    "Fold",
    "Method",
    "Plan",
    "Results",
    "TreeParams",
    "all_method_names",
    "default_method_names",
    "from_folds",
    "from_table",
    "new_report_dir",
    "parse_data",
    "parse_methods",
    "per_query_metrics",
    "plan_benchmark",
    "run_benchmark",
    "significance",
    "summary",
    "write_report",
]
