"""Command line of the benchmark harness: ``python -m gbrank.bench`` or ``gbrank``."""

from __future__ import annotations

import argparse
import difflib
import inspect
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from ..objectives import registry
from ..datasets import make_ranking
from .data import _NAME, _SYNTHETIC_ALIASES, DEFAULT_SYNTHETIC, parse_data
from .evaluate import CONVENTIONS, GAINS
from .methods import all_method_names, default_method_names, describe, group_names, method_objective, parse_methods
from .journal import JOURNAL, RUN_LOG, read_journal, refuse_links, resumable
from .report import new_report_dir, partial_note, write_report
from .checks import LABEL_TABLE_MAX, OBJECTIVE_BUDGET_SECONDS
from .run import (
    DEFAULT_BASELINE,
    DEFAULT_FOLDS,
    DEFAULT_SEEDS,
    PROGRESS_MODES,
    BenchConfig,
    plan_benchmark,
    run_benchmark,
)
from .train import TreeParams

#: Exit status of an interrupted benchmark (128 + SIGINT, as shells report it).
INTERRUPTED = 130
_SYNTHETIC_DEFAULT = "queries={n_queries},docs={docs_per_query},features={n_features},seed={seed}".format(**DEFAULT_SYNTHETIC)


def _epilog() -> str:
    """The methods and data specs, with the gbrank objectives read from the registry."""
    width = max(len(method_objective(n)) for n in registry.names())
    objectives = []
    for name in registry.names():
        spec = registry.get(name)
        line = f"    {method_objective(name):<{width}}  {spec.family}: {spec.summary}"
        if spec.examples[0]:
            line += " [default " + ", ".join(f"{k}={v!r}" for k, v in spec.examples[0].items()) + "]"
        objectives.append(line)
    objectives = "\n".join(objectives)
    return f"""\
methods: <engine>:<objective>, comma-separated; engines lgb, xgb, native.
  built-ins: lgb:lambdarank, lgb:rank_xendcg, xgb:rank:ndcg, xgb:rank:pairwise
  gbrank objectives (in lgb or xgb, e.g. lgb:listmle or xgb:listmle; gbrank's LambdaRank is
  lgb:gbrank_lambdarank or xgb:gbrank_lambdarank, lgb:lambdarank being LightGBM's own):
{objectives}
    factory arguments in parentheses override the defaults, e.g. lgb:listmle_topk(k=3)
    or "lgb:listnet(k=2, target=rank_log)"
  native:ndcgboost: the stump-boosting NDCG_Boost
  lgb:multi_label(objective=NAME, aggregate=..., weights=[...]) (and xgb:): the gbrank objective
    NAME on every label column of a table (label, label_click, ...) with gbrank.multi_label
  calibrated methods (rcr, weighted_logistic_softmax; rcr(alpha=1.0) is a pointwise logistic
    regression) also get their test log loss and ECE in the report; the others a blank
  an engine-qualified built-in name is that engine's own built-in; one engine's built-in name
    under the other engine (lambdarank in XGBoost) is refused as ambiguous: XGBoost's LambdaMART
    is xgb:rank:ndcg, gbrank's LambdaRank xgb:gbrank_lambdarank
  groups: default ({len(default_method_names())} methods), all ({len(all_method_names())}: every objective in
    both engines), builtins; a group runs on each data set the methods that fit its labels
    (LightGBM's built-ins need integer labels up to {LABEL_TABLE_MAX} with the linear gain, the
    click objectives 0/1 labels); a method named on its own that does not fit is refused there,
    in one line, and the others run; --list-methods shows each with its family
  cost: a quadratic objective (RankNet, W-RankNet, LambdaLoss, NDCG_Boost) whose estimated
    objective time in one run exceeds {OBJECTIVE_BUDGET_SECONDS:g} s on the longest queries is warned
    about before training, with the estimate and a truncation that caps it

data: synthetic[:queries=N,docs=N,features=N,seed=N,...] (default: synthetic:{_SYNTHETIC_DEFAULT}),
  letor:DIR (its Fold1..FoldN, or DIR itself as one train/vali/test split), letor:FILE,
  table:FILE (.parquet/.feather/.csv/.tsv, compressed or not, with qid and label columns;
  columns label_<name> are further labels, never features; .pkl only with --allow-pickle),
  or a bare path; NAME=SPEC names it in the report.

examples:
  python -m gbrank.bench
  python -m gbrank.bench --methods all --rounds 500
  python -m gbrank.bench --data ohsumed=letor:../shared/data/letor3_ohsumed/QueryLevelNorm \\
      --methods lgb:lambdarank,lgb:listmle_topk,lgb:wlistmle --conventions letor --seeds 0,1,2
  python -m gbrank.bench --data letor:../shared/data/letor4_mq2008/Fold1 --methods lgb:lambdarank,lgb:listmle
"""


def _bounded(convert, expected: str, bound: str, ok):
    """An argparse type: ``convert(text)``, refused unless ``ok(value)``."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {bound}, got {value!r}")
        return value

    return parse


_positive_int = _bounded(int, "a positive integer", "a positive integer", lambda value: value >= 1)
_non_negative_int = _bounded(int, "an integer >= 0", "an integer >= 0", lambda value: value >= 0)
_positive_float = _bounded(float, "a number", "a number > 0", lambda value: value > 0)
_non_negative_float = _bounded(float, "a number", "a number >= 0", lambda value: value >= 0)


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 0,1,2, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("expected at least one seed")
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"seeds must be distinct, got {text!r}")
    return seeds


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    return names


def build_parser() -> argparse.ArgumentParser:
    defaults = TreeParams()
    parser = argparse.ArgumentParser(
        prog="gbrank",
        description="Benchmark gbrank's ranking objectives against LightGBM's and XGBoost's "
        "built-in rankers with k-fold cross-validation, and write a report.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", action="append", metavar="SPEC",
                        help="dataset spec, repeatable (default: synthetic)")
    parser.add_argument("--methods", default="default", metavar="LIST",
                        help="comma-separated methods or groups (default: default)")
    parser.add_argument("--folds", type=_positive_int, default=DEFAULT_FOLDS, metavar="N",
                        help=f"folds per dataset, at least 2 (default: {DEFAULT_FOLDS})")
    parser.add_argument("--rounds", type=_positive_int, default=300, metavar="N",
                        help="maximum boosting iterations (default: 300)")
    parser.add_argument("--early-stopping", type=_non_negative_int, default=30, metavar="N",
                        help="stop after N iterations without a better validation NDCG@10; 0: never (default: 30)")
    parser.add_argument("--seeds", type=_seeds, default=DEFAULT_SEEDS, metavar="LIST",
                        help="comma-separated seeds, one run per seed; a query's figures are averaged "
                        f"over the seeds (default: {','.join(map(str, DEFAULT_SEEDS))})")
    parser.add_argument("--baseline", metavar="METHOD",
                        help=f"method the significance tests compare against (default: {DEFAULT_BASELINE} "
                        "if it is run, else the first method)")
    parser.add_argument("--out", metavar="DIR",
                        help="report directory (default: a new ./gbrank-report, ./gbrank-report-2, ...)")
    parser.add_argument("--force", action="store_true", help="write into --out even if it is not empty")
    parser.add_argument("--resume", metavar="DIR",
                        help="complete the interrupted benchmark whose report directory is DIR: its "
                        "finished runs are kept, the others trained, the report rewritten; give the "
                        "same options as the first time (each run is written to DIR/runs.jsonl and "
                        "DIR/runs.csv as it finishes; Ctrl-C writes a partial report and exits 130)")
    parser.add_argument("--threads", type=_positive_int, default=1, metavar="N",
                        help="threads for the engines and gbrank's kernels (default: 1; the default data "
                        "are small, where synchronising threads costs more than it saves, and on a "
                        "loaded machine several threads per run multiply the wall time)")
    parser.add_argument("--conventions", choices=sorted(CONVENTIONS), default="lightgbm",
                        help="metric conventions: lightgbm (gbrank's defaults) or letor (LETOR's "
                        "evaluation script, as in the papers) (default: lightgbm)")
    parser.add_argument("--gain", choices=GAINS, default="auto",
                        help="NDCG gain of the evaluation and of every method with a gain (LightGBM's "
                        "label_gain, XGBoost's ndcg_exp_gain, a gbrank objective's gain or target): exp2 "
                        "(2^l-1, integer labels 0..31) or linear (the label, any labels >= 0); auto: "
                        "gbrank.Ranker's label policy, exp2 for integer labels 0..31, else linear, "
                        "chosen per data set from all its labels (default: auto)")
    trees = parser.add_argument_group("tree parameters (the same for every method)")
    trees.add_argument("--learning-rate", type=_positive_float, default=defaults.learning_rate, metavar="X",
                       help=f"(default: {defaults.learning_rate})")
    trees.add_argument("--num-leaves", type=_positive_int, default=defaults.num_leaves, metavar="N",
                       help=f"(default: {defaults.num_leaves})")
    trees.add_argument("--min-data-in-leaf", type=_non_negative_int, default=defaults.min_data_in_leaf, metavar="N",
                       help=f"LightGBM only (default: {defaults.min_data_in_leaf})")
    trees.add_argument("--min-child-weight", type=_non_negative_float, default=defaults.min_child_weight, metavar="X",
                       help=f"minimum hessian sum per leaf (default: {defaults.min_child_weight})")
    trees.add_argument("--max-bin", type=_positive_int, default=defaults.max_bin, metavar="N",
                       help=f"(default: {defaults.max_bin})")
    tuning = parser.add_argument_group("tuning (needs Optuna: pip install \"gbrank[tune]\")")
    tuning.add_argument("--tune", type=_positive_int, default=0, metavar="N",
                        help="tune every method with N trials on each fold's validation queries before "
                        "training the reported model (default: no tuning)")
    tuning.add_argument("--tune-seconds", type=_positive_float, metavar="S",
                        help="tune every method for S seconds per fold instead (with --tune: whichever ends first)")
    tables = parser.add_argument_group("tables")
    tables.add_argument("--qid-col", default="qid", metavar="NAME", help="query-id column (default: qid)")
    tables.add_argument("--label-col", default="label", metavar="NAME", help="label column (default: label)")
    tables.add_argument("--features", type=_names, metavar="LIST",
                        help="comma-separated feature columns (default: every column but the query id and the label)")
    tables.add_argument("--drop", type=_names, metavar="LIST",
                        help="comma-separated columns that are not features (ids, URLs, notes)")
    tables.add_argument("--allow-pickle", action="store_true",
                        help="read .pkl/.pickle tables; UNSAFE: reading a pickle runs any code its author put "
                        "in it, so give this only for files you made yourself (default: refused)")
    parser.add_argument("--progress", choices=PROGRESS_MODES, default="auto",
                        help="bar: a progress bar; lines: one line per finished run on stderr; auto: "
                        "the bar on a terminal, lines otherwise (default: auto)")
    parser.add_argument("--list-methods", action="store_true",
                        help="list every method and whether it can run here, then exit")
    parser.add_argument("--debug", action="store_true",
                        help="print the traceback of a failed run (default: its error in one line)")
    return parser


def _list_methods() -> None:
    default = set(default_method_names())
    methods = parse_methods(all_method_names())
    width = max(len(m.name) for m in methods) + len(" (default)")
    for method in methods:
        reason = method.unavailable_reason()
        name = method.name + (" (default)" if method.name in default else "")
        print(f"{name:<{width}}  {describe(method)}" + ("" if reason is None else f"  [unavailable: {reason}]"))
    print(f"groups: {', '.join(group_names())}")
    print("multi-label: lgb:multi_label(objective=NAME, ...) and xgb:multi_label(objective=NAME, ...): a gbrank "
          "objective on every label column of a table (label, label_<name>, ...)")


_DATA_KINDS = ("synthetic", "letor", "table")


def _closest(word: str, candidates) -> str | None:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def _data_hint(spec: str) -> str:
    """`` (did you mean ...?)`` for a misspelt data kind, synthetic option or file name."""
    text = spec.strip()
    match = _NAME.match(text)
    prefix = ""
    if match:
        prefix, text = match.group(1) + "=", match.group(2)
    kind, sep, rest = text.partition(":")
    if sep and kind not in _DATA_KINDS and not Path(text).expanduser().exists():
        close = _closest(kind, _DATA_KINDS)
        if close is not None:
            return f" (did you mean {prefix}{close}:{rest}?)"
    if kind == "synthetic":
        options = set(_SYNTHETIC_ALIASES) | set(inspect.signature(make_ranking).parameters)
        for item in rest.split(","):
            key = item.partition("=")[0].strip()
            if key and key not in options:
                close = _closest(key, options)
                return f" (did you mean {close!r}?)" if close else ""
        return ""
    path = Path(rest if sep and kind in _DATA_KINDS else text).expanduser()
    if not path.exists() and path.parent.is_dir():
        close = _closest(path.name, [p.name for p in path.parent.iterdir()])
        if close is not None:
            return f" (did you mean {path.parent / close}?)"
    return ""


def _check_out(out: Path, force: bool) -> str | None:
    """Why the report cannot be written into ``out`` (created here if missing), or None."""
    if out.exists() and not out.is_dir():
        return f"{out} exists and is not a directory"
    if out.is_dir() and any(out.iterdir()) and not force:
        return f"{out} exists and is not an empty directory (use --force to write into it)"
    try:
        refuse_links(out)
    except ValueError as exc:
        return str(exc)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the report directory {out}: {exc.strerror or exc}"
    try:
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        return f"cannot write into the report directory {out}: {exc.strerror or exc}"
    if not os.access(out, os.W_OK | os.X_OK):
        return f"cannot write into the report directory {out}: permission denied"
    return None


def main(argv=None) -> int:
    """Run the command line; returns the exit status (1 when a run failed, 130 when
    interrupted, after writing the partial report)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_methods:
        _list_methods()
        return 0
    if args.num_leaves < 2:
        parser.error(f"argument --num-leaves: expected at least 2, got {args.num_leaves}")
    if args.folds < 2:
        parser.error(f"argument --folds: cross-validation needs at least 2 folds, got {args.folds}")

    if args.tune or args.tune_seconds:
        from .tune import import_optuna

        try:
            import_optuna()
        except ImportError as exc:
            parser.error(f"argument --tune: {exc}")
    try:
        methods = parse_methods(args.methods)
    except ValueError as exc:
        parser.error(f"argument --methods: {exc}")
    for method in methods:
        if method.builtin or method.unavailable_reason() is not None:
            continue
        try:
            method.build(0)
        except (TypeError, ValueError) as exc:
            parser.error(f"argument --methods: {method.name}: {exc}")
    baseline = None
    if args.baseline is not None:
        try:
            baseline = parse_methods([args.baseline])[0].name
        except ValueError as exc:
            parser.error(f"argument --baseline: {exc}")
        if baseline not in [m.name for m in methods]:
            parser.error(f"argument --baseline: {baseline} is not among --methods")

    if args.qid_col == args.label_col:
        parser.error(f"argument --label-col: the query-id and label columns must differ, both are {args.qid_col!r}")
    if args.features and args.drop:
        parser.error("argument --drop: give the feature columns (--features) or the columns to leave out "
                     "(--drop), not both")
    datasets = []
    for spec in args.data or ["synthetic"]:
        try:
            datasets.append(parse_data(spec, folds=args.folds, qid_col=args.qid_col, label_col=args.label_col,
                                       features=args.features, drop=args.drop, allow_pickle=args.allow_pickle))
        except (ValueError, FileNotFoundError, OSError) as exc:
            parser.error(f"argument --data: {exc}{_data_hint(spec)}")
    if (args.features or args.drop) and all(d.label_column is None for d in datasets):
        parser.error(f"argument {'--features' if args.features else '--drop'}: it chooses the columns of a table "
                     "(table:FILE), and no --data is one")
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        parser.error(f"argument --data: dataset names must be unique, got {names}; name them with NAME=SPEC")

    config = BenchConfig(
        rounds=args.rounds,
        early_stopping=args.early_stopping,
        seeds=args.seeds,
        threads=args.threads,
        params=TreeParams(
            learning_rate=args.learning_rate,
            num_leaves=args.num_leaves,
            min_data_in_leaf=args.min_data_in_leaf,
            min_child_weight=args.min_child_weight,
            max_bin=args.max_bin,
        ),
        conventions=args.conventions,
        tune=args.tune,
        tune_seconds=args.tune_seconds,
        gain=args.gain,
    )
    # every combination of data, methods and options is checked here, before anything trains
    try:
        plan = plan_benchmark(datasets, methods, folds=args.folds, config=config, baseline=baseline)
    except (ValueError, ImportError) as exc:
        parser.error(str(exc))

    # before any training: a report that cannot be written would lose every run
    if args.resume is not None:
        out = Path(args.resume)
        if args.out is not None and Path(args.out).resolve() != out.resolve():
            parser.error("argument --out: --resume writes the report into the directory it resumes; drop --out")
        try:
            resumable(out, plan.settings())
        except (ValueError, OSError) as exc:
            parser.error(f"argument --resume: {exc}")
        created = False
    else:
        out = Path(args.out) if args.out else new_report_dir()
        created = not out.exists()
        problem = _check_out(out, args.force)
        if problem is not None:
            parser.error(f"argument --out: {problem}")

    try:
        results = run_benchmark(plan, progress=args.progress, journal=out, resume=args.resume is not None,
                                debug=args.debug)
    except BaseException:
        # an interrupted run leaves no empty report directory behind
        if created and out.is_dir() and not _has_runs(out):
            shutil.rmtree(out)
        raise
    command = "python -m gbrank.bench " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    report = write_report(results, out, command=command.strip())
    # the verdict and where the report is; the tables are in the report
    print(_plain(_section(report.read_text(), "## Verdict")))
    print()
    failed = [r for r in results.runs if r["status"] != "ok"]
    if failed:
        print(f"{len(failed)} run(s) failed; see the 'Not run' section of the report.")
    refused = [s for s in results.skipped if s["named"]]
    if refused:
        print(f"{len(refused)} method(s) refused on a data set whose labels they cannot take; see the 'Not run' "
              "section of the report.")
    if results.partial:
        print(_plain(partial_note(results, out)))
    print(f"Report: {report.resolve()}")
    if results.partial:
        return INTERRUPTED
    return 1 if failed or refused else 0


def _has_runs(out: Path) -> bool:
    """Whether ``out`` holds anything but the journal's header lines."""
    try:
        return bool(read_journal(out)[1]) or any(p.name not in (JOURNAL, RUN_LOG) for p in out.iterdir())
    except (OSError, ValueError):
        return any(out.iterdir())


def _section(text: str, heading: str) -> str:
    """The body of the markdown section under ``heading``."""
    body = text.split(heading + "\n", 1)[1]
    return re.split(r"\n(?:## |Command:\n)", body, maxsplit=1)[0].strip()


def _plain(markdown: str) -> str:
    return markdown.replace("**", "").replace("`", "")

if __name__ == "__main__":
    sys.exit(main())
