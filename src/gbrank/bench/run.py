"""The benchmark grid: every dataset x fold x seed x method, trained and scored on the test part.

:func:`plan_benchmark` reads the data and the methods and checks every combination before
anything trains (:mod:`gbrank.bench.checks`): what no run could use is an error, a method
that cannot take a data set's labels is refused or left out there with one line, and the
quadratic objectives are warned about when their estimated work exceeds the budget.
:func:`run_benchmark` trains the plan. A run that fails is recorded with its error, printed
in one line (its traceback with ``debug=True``, the command line's ``--debug``), and the
others go on.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from ..groups import sizes_to_qid
from .checks import cost_warning, gain_problem, label_problem, label_range_problem
from .data import BenchData, parse_data
from .evaluate import (CALIBRATION_FIGURES, CONVENTIONS, GAINS, calibration_metrics, gain_description, label_gains,
                       label_metrics, ndcg_at, per_query_metrics)
from .journal import Journal, Record
from .methods import Method, parse_methods
from .train import FoldCache, LabelGain, TreeParams, fit_method

__all__ = [
    "DEFAULT_BASELINE",
    "DEFAULT_FOLDS",
    "DEFAULT_SEEDS",
    "PROGRESS_MODES",
    "BenchConfig",
    "Plan",
    "Results",
    "journal_settings",
    "plan_benchmark",
    "run_benchmark",
]

DEFAULT_BASELINE = "lgb:lambdarank"
#: Folds and seeds of ``python -m gbrank.bench`` without options. On its data one seed ranks
#: the methods as stably as three seeds on three folds, in the same time (docs/benchmarks.md).
DEFAULT_FOLDS = 5
DEFAULT_SEEDS = (0,)
#: ``progress`` of :func:`run_benchmark`: ``auto`` shows the bar on a terminal and lines
#: otherwise (pipes, files, CI logs, notebooks).
PROGRESS_MODES = ("auto", "bar", "lines", "off")


@dataclass(frozen=True)
class BenchConfig:
    """Settings shared by every run of a benchmark.

    Parameters
    ----------
    rounds : int
        Maximum boosting iterations (stumps for the native NDCG_Boost).
    early_stopping : int
        Stop after this many iterations without a better validation NDCG@``curve_k`` and
        keep the best iteration; 0 trains all ``rounds``. Without a validation part nothing
        stops early.
    seeds : tuple of int
        One run per seed: the engines' seeds, the objectives' tie-breaking and sampling
        seeds. The folds do not depend on them.
    threads : int
        Threads of the engines and of gbrank's numba kernels. One by default: on small data
        the synchronisation of threads costs more than it saves.
    params : TreeParams
        Tree parameters, the same for every method.
    conventions : {"lightgbm", "letor"}
        Metric conventions (:mod:`gbrank.bench.evaluate`).
    gain : {"auto", "exp2", "linear"}
        NDCG gain of the evaluation and of every method that has a gain, unless its name
        sets one (:class:`~gbrank.bench.train.LabelGain`): ``2**l - 1`` or the label. ``auto``
        follows :class:`gbrank.Ranker`'s label policy on each data set's labels: ``exp2`` for
        integer labels 0..31, ``linear`` otherwise.
    curve_k : int
        Cut-off of the validation NDCG recorded per iteration.
    tune : int
        Tune every method with this many trials before training it (:mod:`gbrank.bench.tune`);
        0: no tuning.
    tune_seconds : float, optional
        Tune every method for this long instead (with ``tune`` too: whichever ends first).
    """

    rounds: int = 300
    early_stopping: int = 30
    seeds: tuple = DEFAULT_SEEDS
    threads: int = 1
    params: TreeParams = field(default_factory=TreeParams)
    conventions: str = "lightgbm"
    gain: str = "auto"
    curve_k: int = 10
    tune: int = 0
    tune_seconds: float | None = None

    def __post_init__(self):
        if self.rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {self.rounds}")
        if self.early_stopping < 0:
            raise ValueError(f"early_stopping must be >= 0, got {self.early_stopping}")
        if not self.seeds:
            raise ValueError("seeds must hold at least one seed")
        if self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        if self.conventions not in CONVENTIONS:
            raise ValueError(f"conventions must be one of {', '.join(CONVENTIONS)}, got {self.conventions!r}")
        if self.gain not in GAINS:
            raise ValueError(f"gain must be one of {', '.join(GAINS)}, got {self.gain!r}")
        if self.tune < 0:
            raise ValueError(f"tune must be >= 0 trials, got {self.tune}")
        if self.tune_seconds is not None and not self.tune_seconds > 0:
            raise ValueError(f"tune_seconds must be > 0, got {self.tune_seconds}")

    @property
    def tuned(self) -> bool:
        return bool(self.tune or self.tune_seconds)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["seeds"] = list(self.seeds)
        return out


@dataclass
class Results:
    """Everything a benchmark measured; :func:`gbrank.bench.write_report` writes it out.

    Attributes
    ----------
    config : dict
    datasets : list of dict
        ``name``, ``description``, ``n_folds``, ``gain`` (the resolved NDCG gain,
        ``"exp2"`` or ``"linear"``), ``gain_reason``; with several label columns also
        ``label_names`` and ``label_gains`` (the gain of each column after the first).
    methods : list of dict
        ``name``, ``engine``, ``objective``, ``family``, ``builtin``, ``available``, ``reason``.
    baseline : str or None
        The method the significance tests compare against.
    runs : list of dict
        One per dataset, fold, seed and method: ``status`` ("ok" or "failed"), ``error``,
        ``train_seconds``, ``objective_ms_per_iter``, ``n_iterations``, ``best_iteration``,
        ``valid_curve`` and the mean of every test figure: the ranking figures, ``logloss``
        and ``ece`` (None unless the method's scores are probabilities) and, with several
        label columns, ``ndcg@10:<column>`` for each column after the first.
    per_query : DataFrame
        One row per run and test query: ``dataset, fold, seed, method, query, qid, n_docs``
        and the figures (``ndcg@1`` .. ``ndcg@10``, ``map@10``, ``p@1`` ...); ``qid`` is the
        data's query id, numbered in order of first appearance where a table's ids are not
        integers (:func:`gbrank.bench.data.from_table`).
    predictions : DataFrame
        The test scores: ``dataset, fold, seed, method, query, qid, label, score``, in the
        test part's row order, enough to recompute every figure.
    tuning : list of dict
        With tuning, one per run: ``dataset, fold, seed, method``, ``params`` (the chosen
        settings), ``seconds`` and ``trials`` (:class:`gbrank.bench.tune.TuneResult`).
    partial : bool
        Whether the benchmark was interrupted (Ctrl-C) before every run finished.
    n_planned : int or None
        The number of runs of the whole grid.
    skipped : list of dict
        The methods that did not train on a data set whose labels they do not fit
        (:mod:`gbrank.bench.checks`): ``dataset, method, reason, fix`` and ``named`` (True: the
        method was named and is refused; False: a group's method, left out).
    """

    config: dict
    datasets: list
    methods: list
    baseline: str | None
    runs: list
    per_query: pd.DataFrame
    predictions: pd.DataFrame
    tuning: list = field(default_factory=list)
    partial: bool = False
    n_planned: int | None = None
    skipped: list = field(default_factory=list)


def _set_threads(threads: int) -> None:
    import numba

    from .._threading import configure_threading

    # setting the thread count starts numba's threading layer: choose it first
    configure_threading()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def _progress_mode(progress) -> str:
    if progress is None or progress is True or progress is False:
        progress = {None: "auto", True: "bar", False: "off"}[progress]
    if progress not in PROGRESS_MODES:
        raise ValueError(f"progress must be one of {', '.join(PROGRESS_MODES)}, got {progress!r}")
    if progress == "auto":
        isatty = getattr(sys.stderr, "isatty", None)
        return "bar" if isatty is not None and isatty() else "lines"
    return progress


class _Progress:
    """The bar on a terminal; elsewhere one line per finished run, which a log keeps."""

    def __init__(self, total: int, mode: str) -> None:
        self.total, self.mode, self.done = total, mode, 0
        self.bar = None
        if mode == "bar":
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)

    def start(self, key: dict) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"{key['dataset']} {key['fold']} seed {key['seed']} {key['method']}", refresh=False)

    def finish(self, key: dict, seconds: float, ndcg: float | None, train_seconds: float | None) -> None:
        """``train``: the report's ``train s`` (the engine's training call); ``run``: the whole
        run, which adds building the fold's engine data (first method of a fold), compiling
        kernels (first use in the process), the validation metric and scoring the test part."""
        self.done += 1
        if self.bar is not None:
            self.bar.update()
        elif self.mode == "lines":
            outcome = "failed" if ndcg is None else f"NDCG@10 {ndcg:.4f}, train {train_seconds:.2f} s"
            print(f"gbrank.bench [{self.done}/{self.total}] {key['dataset']} {key['fold']} seed {key['seed']} "
                  f"{key['method']}: {outcome}, run {seconds:.2f} s", file=sys.stderr, flush=True)

    def trial(self, key: dict, trial: int, total: int | None, value: float | None, best: float | None) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"{key['dataset']} {key['fold']} seed {key['seed']} {key['method']} "
                                     f"trial {trial}" + (f"/{total}" if total else ""))
        elif self.mode == "lines":
            outcome = "pruned" if value is None else f"validation {value:.4f}"
            if best is not None:
                outcome += f", best {best:.4f}"
            print(f"gbrank.bench [{self.done + 1}/{self.total}] {key['dataset']} {key['fold']} seed {key['seed']} "
                  f"{key['method']}: trial {trial}" + (f"/{total}" if total else "") + f" {outcome}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def journal_settings(config: BenchConfig, folds: int, datasets: list[BenchData]) -> dict:
    """What a resumed benchmark must share with the runs in its journal: the settings, and
    each data set's description and fingerprint under its name."""
    return {"config": {**config.as_dict(), "folds": folds},
            "datasets": {d.name: {"description": d.description, "fingerprint": d.fingerprint()} for d in datasets}}


@dataclass
class Plan:
    """Everything decided before training (:func:`plan_benchmark`): the data sets, the methods,
    each data set's gain, the methods left out of or refused on a data set, the cost warnings
    and the baseline. :func:`run_benchmark` trains it."""

    config: BenchConfig
    folds: int
    datasets: list
    grid: list
    runnable: list
    method_info: list
    gains: dict
    skipped: list
    warnings: list
    baseline: str | None
    chosen: bool
    #: Per data set with several label columns, the NDCG gain of each column after the first.
    label_gains: dict = field(default_factory=dict)

    def methods_for(self, dataset: BenchData) -> list[Method]:
        """The runnable methods that train on ``dataset``."""
        out = {s["method"] for s in self.skipped if s["dataset"] == dataset.name}
        return [m for m in self.runnable if m.name not in out]

    @property
    def n_planned(self) -> int:
        return sum(d.n_folds * len(self.config.seeds) * len(self.methods_for(d)) for d in self.datasets)

    @property
    def refused(self) -> list[dict]:
        """The named methods refused on a data set."""
        return [s for s in self.skipped if s["named"]]

    def settings(self) -> dict:
        return journal_settings(self.config, self.folds, self.datasets)


def plan_benchmark(
    data="synthetic",
    methods="default",
    *,
    folds: int = DEFAULT_FOLDS,
    config: BenchConfig | None = None,
    baseline: str | None = None,
    qid_col: str = "qid",
    label_col: str = "label",
    features=None,
    drop=None,
    allow_pickle: bool = False,
) -> Plan:
    """Read the data and the methods and check every combination before anything trains
    (the arguments are :func:`run_benchmark`'s).

    Raises
    ------
    ValueError
        For data or settings that no run could use: unreadable data, a gain the labels do
        not allow, tuning without a validation part, a baseline not among the methods.
    """
    config = config or BenchConfig()
    specs = data if isinstance(data, (list, tuple)) else [data]
    datasets: list[BenchData] = [
        parse_data(s, folds=folds, qid_col=qid_col, label_col=label_col, features=features, drop=drop,
                   allow_pickle=allow_pickle)
        for s in specs
    ]
    names = [d.name for d in datasets]
    if len(set(names)) != len(names):
        raise ValueError(f"dataset names must be unique, got {names}; name them with NAME=SPEC")
    grid = parse_methods(methods)
    if config.params.linear_tree and any(m.engine == "xgboost" for m in grid):
        raise ValueError("linear_tree is a LightGBM option: drop the xgb methods or linear_tree")
    chosen = baseline is not None
    baseline = _choose_baseline(baseline, grid)
    if config.tuned:
        from .tune import import_optuna

        import_optuna()
        for dataset in datasets:
            if not dataset.has_validation():
                raise ValueError(
                    f"tuning chooses settings on each fold's validation part, and {dataset.name} has none "
                    f"({dataset.n_folds} folds leave none; a LETOR fold needs its vali file): use 3 or more folds"
                )
    for dataset in datasets:
        problem = (label_range_problem(dataset.labels(), dataset.name, dataset.label_column)
                   or gain_problem(config.gain, dataset.labels(), dataset.name, dataset.label_column))
        table = dataset.label_columns()
        for j, column in enumerate(dataset.label_names[1:], start=1):
            problem = (problem or label_range_problem(table[:, j], dataset.name, column)
                       or gain_problem(config.gain, table[:, j], dataset.name, column))
        if problem is not None:
            raise ValueError(problem)
    gains = {d.name: LabelGain.of(config.gain, d.labels()) for d in datasets}
    column_gains = {d.name: label_gains(config.gain, d.label_names, d.label_columns()) for d in datasets
                    if d.label_names}

    method_info, runnable = [], []
    for method in grid:
        reason = method.unavailable_reason()
        method_info.append(
            {"name": method.name, "engine": method.engine, "objective": method.objective, "family": method.family,
             "builtin": method.builtin, "available": reason is None, "reason": reason}
        )
        if reason is None:
            runnable.append(method)
    skipped, warnings = [], []
    for dataset in datasets:
        for method in runnable:
            problem = label_problem(method, gains[dataset.name], dataset.labels(), dataset.label_column,
                                    dataset.label_names, dataset.label_columns())
            if problem is not None:
                skipped.append({"dataset": dataset.name, "method": method.name, "reason": problem.reason,
                                "fix": problem.fix, "named": method.group is None, "group": method.group})
                continue
            warning = cost_warning(method, dataset.name, dataset.training_sizes(), config.rounds)
            if warning is not None:
                warnings.append(warning)
    unfit = next((s for s in skipped if s["method"] == baseline), None)
    if chosen and unfit is not None:
        raise ValueError(f"argument --baseline: {baseline} cannot run on {unfit['dataset']} ({unfit['reason']}): "
                         "choose a baseline that runs on every data set")
    return Plan(config=config, folds=folds, datasets=datasets, grid=grid, runnable=runnable,
                method_info=method_info, gains=gains, skipped=skipped, warnings=warnings, baseline=baseline,
                chosen=chosen, label_gains=column_gains)


def _announce(plan: Plan) -> None:
    """One line per method that will not run, or not everywhere, and per cost warning."""
    for info in plan.method_info:
        if not info["available"]:
            print(f"gbrank.bench: {info['name']} is unavailable and skipped: {info['reason']}", file=sys.stderr)
    for item in plan.skipped:
        if item["named"]:
            print(f"gbrank.bench: refused: {item['method']} on {item['dataset']}: {item['reason']}; {item['fix']}",
                  file=sys.stderr)
        else:
            print(f"gbrank.bench: {item['method']} (from {item['group']}) is left out on {item['dataset']}: "
                  f"{item['reason']} ({item['fix']})", file=sys.stderr)
    for warning in plan.warnings:
        print(f"gbrank.bench: warning: {warning}", file=sys.stderr)


def _gain_reason(requested: str, gain: LabelGain) -> str:
    """Why the data set's NDCG gain is what it is, for the report."""
    text = f"NDCG gain {gain_description(gain.gain)}"
    if requested != "auto":
        return f"{text} (--gain {requested})"
    if gain.gain == "exp2":
        return f"{text} (auto: integer labels 0..{gain.max_label:g})"
    why = "fractional labels" if not gain.integer else f"labels up to {gain.max_label:g}, above 31"
    return f"{text} (auto: {why})"


def _baseline_that_ran(default: str, methods: list[Method], runs: list[dict], datasets: list[str]) -> str:
    """``default``, or when it has no successful run on some dataset, the first method that
    has one on every dataset: a baseline without results would leave nothing compared."""

    def ran_everywhere(name: str) -> bool:
        return {r["dataset"] for r in runs if r["method"] == name and r["status"] == "ok"} >= set(datasets)

    if ran_everywhere(default):
        return default
    fallback = next((m.name for m in methods if ran_everywhere(m.name)), default)
    if fallback != default:
        print(f"gbrank.bench: the baseline is {fallback}: {default} did not run on every dataset", file=sys.stderr)
    return fallback


def _choose_baseline(baseline, methods: list[Method]) -> str | None:
    names = [m.name for m in methods]
    if baseline is None:
        return DEFAULT_BASELINE if DEFAULT_BASELINE in names else names[0]
    name = parse_methods([baseline])[0].name
    if name not in names:
        raise ValueError(f"the baseline {name} is not among the methods ({', '.join(names)})")
    return name


def run_benchmark(
    data="synthetic",
    methods="default",
    *,
    folds: int = DEFAULT_FOLDS,
    config: BenchConfig | None = None,
    baseline: str | None = None,
    qid_col: str = "qid",
    label_col: str = "label",
    progress: str | bool | None = "auto",
    journal: str | os.PathLike | None = None,
    resume: bool = False,
    debug: bool = False,
) -> Results:
    """Train and score every method on every fold of every dataset.

    Parameters
    ----------
    data : str, BenchData, RankingData, DataFrame, a list of them, or a Plan
        Dataset specs (see :mod:`gbrank.bench.data`), or a :class:`Plan` from
        :func:`plan_benchmark`, which holds the data, methods and settings (``methods``,
        ``folds``, ``config``, ``baseline`` and the columns are then not read).
    methods : str or list
        Method names or groups (see :mod:`gbrank.bench.methods`).
    folds : int
        Folds per dataset (a LETOR directory's first ``folds``; one fold directory is one split).
    config : BenchConfig, optional
    baseline : str, optional
        Method the significance tests compare against; default ``lgb:lambdarank`` when it
        is in the grid and ran on every dataset (it cannot run on fractional labels),
        otherwise the first method that did.
    qid_col, label_col : str
        Column names of tables.
    progress : {"auto", "bar", "lines", "off"}
        ``bar``: a progress bar on stderr; ``lines``: one line per finished run on stderr
        (dataset, fold, seed, method, test NDCG@10, ``train`` seconds as the report's
        ``train s``, and ``run`` seconds of the whole run: engine data, compiling, scoring);
        ``auto`` (or None): the bar when stderr is a terminal, the lines otherwise. True and
        False mean bar and off.
    journal : str or path-like, optional
        A directory where each run is written as it finishes (``runs.csv`` and
        ``runs.jsonl``, :mod:`gbrank.bench.journal`), usually the report's.
    resume : bool
        Read the runs already in ``journal`` instead of training them again (refused when
        they were made with other settings or other data); otherwise ``journal`` starts anew.
    debug : bool
        Print a failed run's traceback; otherwise its error in one line.

    Returns
    -------
    Results
        On an interruption (``KeyboardInterrupt``, Ctrl-C) the runs that finished, with
        ``partial=True``: pass them to :func:`~gbrank.bench.report.write_report`, and resume
        later with ``resume=True``.
    """
    mode = _progress_mode(progress)
    plan = data if isinstance(data, Plan) else plan_benchmark(
        data, methods, folds=folds, config=config, baseline=baseline, qid_col=qid_col, label_col=label_col)
    config, folds, datasets = plan.config, plan.folds, plan.datasets
    conventions = CONVENTIONS[config.conventions]
    metric_name = f"ndcg@{config.curve_k}"
    gains = plan.gains
    _set_threads(config.threads)
    _announce(plan)

    log = None if journal is None else Journal(journal, plan.settings(), resume=resume)
    finished = {} if log is None else log.finished
    grid_keys = {(d.name, seed, m.name) for d in datasets for seed in config.seeds for m in plan.methods_for(d)}
    resumed = sum((k[0], k[2], k[3]) in grid_keys for k in finished)
    planned = plan.n_planned
    if resumed:
        print(f"gbrank.bench: resuming: {resumed} of {planned} runs are in {journal} already", file=sys.stderr)
    records: list[Record] = []
    interrupted = False
    bar = _Progress(planned - resumed, mode)
    try:
        for dataset in datasets:
            gain = gains[dataset.name]
            metric = ndcg_at(config.curve_k, conventions, gain.gain)
            for fold_index in range(dataset.n_folds):
                fold = dataset.fold(fold_index)
                cache = FoldCache(fold, config.params, config.threads)
                for seed in config.seeds:
                    for method in plan.methods_for(dataset):
                        key = {"dataset": dataset.name, "fold": fold.name, "seed": seed, "method": method.name}
                        done = finished.get(tuple(key.values()))
                        if done is not None:
                            records.append(done)
                            continue
                        bar.start(key)
                        started = time.perf_counter()
                        record = _run(method, cache, key, config, metric, metric_name, gain, conventions, bar, debug,
                                      plan.label_gains.get(dataset.name, {}))
                        records.append(record)
                        if log is not None:
                            log.append(record)
                        # after the journal: a run whose line is out is kept
                        bar.finish(key, time.perf_counter() - started, record.run.get("ndcg@10"),
                                   record.run.get("train_seconds"))
    except KeyboardInterrupt:
        # stop here and keep what finished: the caller writes a partial report
        interrupted = True
        print(f"\ngbrank.bench: interrupted; {len(records)} of {planned} runs finished", file=sys.stderr)
    finally:
        bar.close()
    runs = [r.run for r in records]
    per_query = [r.per_query for r in records if r.per_query is not None]
    predictions = [r.predictions for r in records if r.predictions is not None]

    baseline = plan.baseline
    if not plan.chosen:
        baseline = _baseline_that_ran(baseline, plan.runnable, runs, [d.name for d in datasets])
    columns = ["dataset", "fold", "seed", "method", "query", "qid"]
    return Results(
        config={**config.as_dict(), "folds": folds, "curve_metric": metric_name,
                "conventions_description": conventions.description},
        datasets=[{"name": d.name, "description": d.description, "n_folds": d.n_folds,
                   "gain": gains[d.name].gain, "gain_reason": _gain_reason(config.gain, gains[d.name]),
                   **({"label_names": list(d.label_names), "label_gains": plan.label_gains[d.name]}
                      if d.label_names else {})}
                  for d in datasets],
        methods=plan.method_info,
        baseline=baseline,
        runs=runs,
        per_query=pd.concat(per_query, ignore_index=True) if per_query else pd.DataFrame(columns=columns),
        predictions=pd.concat(predictions, ignore_index=True) if predictions else pd.DataFrame(columns=columns),
        partial=interrupted,
        n_planned=planned,
        tuning=[r.tuning for r in records if r.tuning is not None],
        skipped=[{k: v for k, v in item.items() if k != "group"} for item in plan.skipped],
    )


def _run(method: Method, cache: FoldCache, key: dict, config: BenchConfig, metric, metric_name: str,
         gain: LabelGain, conventions, bar: _Progress, debug: bool = False, column_gains: dict | None = None) -> Record:
    """Train (after tuning, when asked) and score one method on one fold with one seed; a
    failure is recorded, not raised. Besides the ranking figures: the calibration figures of
    a method whose scores are probabilities (None for the others), and on several label
    columns the NDCG@10 of each (``column_gains``: the gain of each column after the first)."""
    test = cache.fold.test
    tuned, tuning = {}, None
    try:
        if config.tuned:
            result, tuned = _fit_tuned(method, cache, config, metric, metric_name, gain, bar, key)
            tuning = {**key, **tuned.pop("record")}
        else:
            result = fit_method(
                method, cache, rounds=config.rounds, early_stopping=config.early_stopping,
                seed=key["seed"], metric=metric, metric_name=metric_name, gain=gain,
            )
        figures = per_query_metrics(test.y, result.test_scores, test.group, conventions, gain.gain)
        calibration = dict.fromkeys(CALIBRATION_FIGURES)
        if method.probabilistic:
            calibration = calibration_metrics(test.y, result.test_scores, _max_label(method, gain))
        by_label = {}
        if cache.fold.label_names:
            by_label = label_metrics(cache.fold.labels[2], cache.fold.label_names, result.test_scores, test.group,
                                     conventions, column_gains or {})
    except Exception as exc:  # one failing method must not lose the others' results
        where = f"{method.name} failed on {key['dataset']} {key['fold']} seed {key['seed']}"
        if debug:
            print(f"gbrank.bench: {where}:\n{traceback.format_exc()}", file=sys.stderr)
        else:
            message = " ".join(str(exc).split())
            print(f"gbrank.bench: {where}: {type(exc).__name__}: {message} (--debug shows the traceback)",
                  file=sys.stderr)
        return Record({**key, "status": "failed", "error": f"{type(exc).__name__}: {exc}"})
    run = {
        **key,
        "status": "ok",
        "error": None,
        "train_seconds": result.train_seconds,
        "objective_ms_per_iter": result.objective_ms_per_iteration,
        "n_iterations": result.n_iterations,
        "best_iteration": result.best_iteration,
        "n_test_queries": test.n_queries,
        **{name: float(np.mean(values)) for name, values in figures.items()},
        **calibration,
        **by_label,
        **tuned,
        "valid_curve": result.valid_curve,
    }
    per_query = pd.DataFrame({
        **key, "query": np.arange(test.n_queries),
        "qid": test.qid[np.cumsum(test.group) - test.group], "n_docs": test.group,
    })
    for name, values in figures.items():
        per_query[name] = values
    predictions = pd.DataFrame({
        **key, "query": sizes_to_qid(test.group), "qid": test.qid,
        "label": test.y, "score": result.test_scores,
    })
    for j, column in enumerate(cache.fold.label_names[1:], start=1):
        predictions[column] = cache.fold.labels[2][:, j]
    return Record(run, per_query, predictions, tuning)


def _max_label(method: Method, gain: LabelGain) -> float:
    """The label a probabilistic method reads as probability 1: its ``max_label`` setting, or
    the data set's largest label, at least 1 (what its objective takes from the training data)."""
    given = method.settings().get("max_label")
    return float(given) if given is not None else max(gain.max_label, 1.0)


def _fit_tuned(method, cache, config: BenchConfig, metric, metric_name, gain: LabelGain, bar: _Progress, key: dict):
    """The tuned run, and its figures for ``runs`` with the tuning ``record`` among them."""
    from .tune import tune_method

    tuned = tune_method(
        method, cache, trials=config.tune or None, seconds=config.tune_seconds, rounds=config.rounds,
        early_stopping=config.early_stopping, seed=key["seed"], metric=metric, metric_name=metric_name, gain=gain,
        on_trial=lambda trial, value, best: bar.trial(key, trial, config.tune, value, best),
    )
    return tuned.fit, {
        "tune_seconds": tuned.seconds, "tune_trials": len(tuned.trials), "tune_pruned": tuned.n_pruned,
        "tune_best_valid": tuned.best_value,
        "record": {"params": tuned.params, "seconds": tuned.seconds, "trials": tuned.trials},
    }
