"""Tuning every method with the same budget before the comparison (``--tune N``).

For each run (dataset, fold, seed, method) a seeded Optuna study (TPE, ``seed`` = the run's
seed) tries ``N`` settings, or as many as fit in ``--tune-seconds S``, each trained on the
fold's training part with early stopping and scored by the validation NDCG@10 of the
iteration it keeps (the best one; the last without early stopping). The best trial's settings then train the model whose *test* queries are reported,
as without tuning. The test part is never scored during the search: tuning is nested.

Search space. Every LightGBM and XGBoost method searches the same tree parameters
(:data:`ENGINE_SPACE`): learning rate, leaves, rows per leaf (LightGBM) or hessian sum per
leaf (XGBoost, which has no row count), L2 and the fraction of features per tree. Each
method adds its own settings, declared once: a gbrank objective's registry entry
(``search_space``), the built-ins' engine parameters and the native NDCG_Boost's arguments
in :mod:`gbrank.bench.methods`. The native estimator boosts stumps and searches only its own.
A setting fixed in the method's name (``lgb:listmle_topk(k=3)``) is not searched.

Pruning. A median pruner stops a trial whose validation NDCG@10 after an iteration is below
the median of the earlier trials' at the same iteration (after 5 trials and 10 warm-up
iterations). The values come from a callback in the engine's training call; the native
estimator takes no callbacks and is never pruned.

Reproducible: with the same seed the same trials are drawn and, the engines being
deterministic on one thread, give the same values, so the report is the same. With
``--tune-seconds`` the number of trials depends on the machine's speed.

Optuna is an extra (``pip install "gbrank[tune]"``), imported only when tuning.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import engines
from ..objectives.registry import Knob
from .methods import Method
from .train import FitResult, FoldCache, LabelGain, TreeParams, fit_method, warm_up

__all__ = ["ENGINE_SPACE", "INSTALL_HINT", "TuneResult", "engine_space", "import_optuna", "tune_method", "tuning_section"]

INSTALL_HINT = 'pip install "gbrank[tune]"'
#: The tree parameters every LightGBM and XGBoost method searches, by :class:`~gbrank.bench.train.TreeParams` field.
ENGINE_SPACE = {
    "learning_rate": Knob("learning_rate", 0.01, 0.3, log=True),
    "num_leaves": Knob("num_leaves", 4, 128, integer=True, log=True),
    "min_data_in_leaf": Knob("min_data_in_leaf", 1, 100, integer=True, log=True),
    "min_child_weight": Knob("min_child_weight", 1e-3, 10.0, log=True),
    "l2": Knob("l2", 1e-3, 100.0, log=True),
    "feature_fraction": Knob("feature_fraction", 0.5, 1.0),
}
_PER_LEAF = {"lightgbm": "min_data_in_leaf", "xgboost": "min_child_weight"}
#: Median pruner: trials that always run to the end, and iterations never pruned.
PRUNER_STARTUP_TRIALS = 5
PRUNER_WARMUP_STEPS = 10


def import_optuna():
    """Optuna, or an ImportError that says how to install it."""
    try:
        import optuna
    except ImportError as exc:
        raise ImportError(f"tuning (--tune, --tune-seconds) needs Optuna, which is not installed: {INSTALL_HINT}") from exc
    return optuna


def engine_space(engine: str) -> tuple:
    """The tree parameters (registry ``Knob`` objects) searched for methods of ``engine``; none
    for the native estimator."""
    if engine not in _PER_LEAF:
        return ()
    names = ("learning_rate", "num_leaves", _PER_LEAF[engine], "l2", "feature_fraction")
    return tuple(ENGINE_SPACE[n] for n in names)


def _suggest(trial, knob: Knob):
    if knob.choices is not None:
        return trial.suggest_categorical(knob.name, list(knob.choices))
    if knob.integer:
        return trial.suggest_int(knob.name, int(knob.low), int(knob.high), log=knob.log)
    return trial.suggest_float(knob.name, float(knob.low), float(knob.high), log=knob.log)


def _apply(method: Method, tree: TreeParams, values: dict) -> tuple[Method, TreeParams]:
    """The method with its own searched settings and the tree parameters with the engine's."""
    own = {k.name: values[k.name] for k in method.search_space()}
    engine = {k.name: values[k.name] for k in engine_space(method.engine)}
    return replace(method, kwargs={**method.kwargs, **own}), replace(tree, **engine)


def _pruning_callbacks(engine: str, trial, optuna, metric_name: str) -> tuple:
    def report(step: int, value: float) -> None:
        trial.report(value, step)
        if trial.should_prune():
            raise optuna.TrialPruned(f"pruned after iteration {step}")

    if engine in ("lightgbm", "xgboost"):
        return (engines.report_callback(engine, report, "valid", metric_name),)
    return ()


@dataclass
class TuneResult:
    """One run's search and the model trained with the best settings.

    Attributes
    ----------
    fit : FitResult
        The final model's run (test scores), trained with ``params``.
    params : dict
        The best trial's settings (tree parameters and the method's own).
    trials : list of dict
        Per trial: ``trial`` (from 1), ``state`` ("complete", "pruned"), ``value`` (best
        validation metric; None when pruned), ``best_iteration``, ``last_reported`` (the last
        iteration the engine's callback reported to the pruner; None for the native
        estimator) and ``params``.
    seconds : float
        Wall time of the search (not of the final training).
    """

    fit: FitResult
    params: dict
    trials: list
    seconds: float

    @property
    def n_pruned(self) -> int:
        return sum(t["state"] == "pruned" for t in self.trials)

    @property
    def best_value(self) -> float:
        return max(t["value"] for t in self.trials if t["value"] is not None)


def tune_method(
    method: Method,
    cache: FoldCache,
    *,
    trials: int | None,
    seconds: float | None,
    rounds: int,
    early_stopping: int,
    seed: int,
    metric,
    metric_name: str,
    gain: LabelGain | None = None,
    on_trial: Callable[[int, float | None, float | None], None] | None = None,
) -> TuneResult:
    """Search ``method``'s settings on ``cache.fold``'s validation part, then train with the best.

    Parameters
    ----------
    method : Method
    cache : FoldCache
        The fold and the starting tree parameters (those not searched, e.g. ``max_bin``).
    trials : int, optional
        Number of trials; None: as many as ``seconds`` allows.
    seconds : float, optional
        Time budget of the search; no new trial starts after it. At least one of the two.
    rounds, early_stopping, seed, metric, metric_name, gain
        As :func:`gbrank.bench.train.fit_method`; ``seed`` also seeds the sampler.
    on_trial : callable, optional
        Called after each trial with its number (from 1), its value (None when pruned) and
        the best value so far.

    Returns
    -------
    TuneResult
    """
    optuna = import_optuna()
    if trials is None and seconds is None:
        raise ValueError("tune_method needs trials, seconds or both")
    if cache.fold.valid is None:
        raise ValueError(f"tuning needs a validation part, and fold {cache.fold.name} has none: use 3 or more folds")
    # one binned dataset for every trial: built with one row per leaf, LightGBM lets each
    # trial raise min_data_in_leaf (lowering it would need the dataset re-binned)
    base = cache.with_params(replace(cache.params, min_data_in_leaf=1))
    if method.engine == "lightgbm":
        base.lightgbm()
    elif method.engine == "xgboost":
        base.xgboost()
    space = engine_space(method.engine) + method.search_space()
    fit = {"rounds": rounds, "early_stopping": early_stopping, "seed": seed, "metric": metric, "metric_name": metric_name,
           "gain": gain}
    warm_up(method, metric)

    def objective(trial) -> float:
        values = {knob.name: _suggest(trial, knob) for knob in space}
        tuned, tree = _apply(method, cache.params, values)
        callbacks = _pruning_callbacks(method.engine, trial, optuna, metric_name)
        result = fit_method(tuned, base.with_params(tree), callbacks=callbacks, **fit)
        trial.set_user_attr("best_iteration", result.best_iteration)
        return result.valid_curve[result.best_iteration - 1]

    def progress(study, trial) -> None:
        if on_trial is None:
            return
        done = [t.value for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        value = trial.value if trial.state == optuna.trial.TrialState.COMPLETE else None
        on_trial(trial.number + 1, value, max(done) if done else None)

    verbosity = optuna.logging.get_verbosity()
    # the harness shows the trials itself
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(
            direction="maximize",
            sampler=optuna.samplers.TPESampler(seed=seed),
            pruner=optuna.pruners.MedianPruner(n_startup_trials=PRUNER_STARTUP_TRIALS,
                                               n_warmup_steps=PRUNER_WARMUP_STEPS),
        )
        start = time.perf_counter()
        study.optimize(objective, n_trials=trials, timeout=seconds, callbacks=[progress])
    finally:
        optuna.logging.set_verbosity(verbosity)
    elapsed = time.perf_counter() - start
    state = {optuna.trial.TrialState.COMPLETE: "complete", optuna.trial.TrialState.PRUNED: "pruned"}
    # Optuna gives a pruned trial its last reported value: not a result of the trial
    records = [
        {"trial": t.number + 1, "state": state.get(t.state, t.state.name.lower()),
         "value": t.value if t.state == optuna.trial.TrialState.COMPLETE else None,
         "best_iteration": t.user_attrs.get("best_iteration"), "last_reported": t.last_step,
         "params": dict(t.params)}
        for t in study.trials
    ]
    if not any(r["state"] == "complete" for r in records):
        raise RuntimeError(f"no trial of {method.name} ran to the end ({len(records)} tried): give more trials or seconds")
    best = study.best_trial
    tuned, tree = _apply(method, cache.params, best.params)
    final = fit_method(tuned, base.with_params(tree), **fit)
    return TuneResult(fit=final, params=dict(best.params), trials=records, seconds=elapsed)


# ---------------------------------------------------------------------------- report
def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _spread(values: list) -> str:
    """Median [min, max] of numbers; the count of each value otherwise."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return f"{float(np.median(values)):.3g} [{_format(min(values))}, {_format(max(values))}]"
    counts: dict = {}
    for v in values:
        counts[_format(v)] = counts.get(_format(v), 0) + 1
    return ", ".join(f"{k} ×{n}" for k, n in counts.items())


def _best_so_far(trials: list) -> list[float]:
    out, best = [], -math.inf
    for t in trials:
        if t["value"] is not None:
            best = max(best, t["value"])
        out.append(best if best > -math.inf else math.nan)
    return out


def trial_table(tuning: list) -> pd.DataFrame:
    """One row per run and trial: key, ``trial``, ``state``, ``value``, ``best_so_far``,
    ``best_iteration``, ``last_reported`` and ``params`` (JSON)."""
    rows = []
    for run in tuning:
        key = {k: run[k] for k in ("dataset", "fold", "seed", "method")}
        for t, best in zip(run["trials"], _best_so_far(run["trials"])):
            rows.append({**key, "trial": t["trial"], "state": t["state"], "value": t["value"], "best_so_far": best,
                         "best_iteration": t["best_iteration"], "last_reported": t.get("last_reported"),
                         "params": json.dumps(t["params"], sort_keys=True)})
    return pd.DataFrame(rows, columns=["dataset", "fold", "seed", "method", "trial", "state", "value", "best_so_far",
                                       "best_iteration", "last_reported", "params"])


def _plot(tuning: list, dataset: str, methods: list[str], families: dict, baseline, metric_name: str, path: Path):
    from .plots import _decorate, _grid, _panel_styles, _pyplot, _save_panels, panels

    curves = {}
    for method in methods:
        runs = [r for r in tuning if r["dataset"] == dataset and r["method"] == method]
        if runs:
            length = max(len(r["trials"]) for r in runs)
            stacked = np.full((len(runs), length), np.nan)
            for i, run in enumerate(runs):
                best = _best_so_far(run["trials"])
                stacked[i, : len(best)] = best
            curves[method] = np.nanmean(stacked, axis=0)
    if not curves:
        return None
    _pyplot()
    groups = panels(list(curves), families, baseline) or [(families.get(baseline, ""), [])]
    fig, axes = _grid(len(groups), 6.5, 3.8)
    label = metric_name.upper()
    for ax, (title, members) in zip(axes, groups):
        styles = _panel_styles(members)
        for method in ([baseline] if baseline in curves else []) + members:
            style = {"color": "black", "linewidth": 2.2} if method == baseline else dict(styles[method])
            style.pop("marker", None)
            y = curves[method]
            ax.plot(np.arange(1, y.size + 1), y, label=f"{method} (baseline)" if method == baseline else method, **style)
        _decorate(ax, title, legend_loc="lower right")
    return _save_panels(fig, axes, path, xlabel="trial", ylabel=f"best validation {label} so far",
                        title=f"{dataset}: tuning, best validation {label} after each trial, mean over folds and seeds")


def tuning_section(results, out: Path, families: dict, slug: Callable[[str], str]) -> list[str]:
    """Write ``tuning.csv`` and ``tuning-<dataset>.png`` into ``out``; the report's lines."""
    from .report import markdown_table

    cfg = results.config
    trials = trial_table(results.tuning)
    trials.to_csv(out / "tuning.csv", index=False)
    budget = []
    if cfg.get("tune"):
        budget.append(f"{cfg['tune']} trials")
    if cfg.get("tune_seconds"):
        budget.append(f"at most {cfg['tune_seconds']:g} s (no trial starts after it)")
    lines = [
        "## Tuning",
        "",
        f"Every method was tuned on each fold and seed before its test figures above: {' and '.join(budget)} of a "
        "TPE search seeded with the run's seed, each trial trained on the training part with early stopping and "
        f"scored by the validation {cfg['curve_metric']} of the iteration it keeps; a median pruner (after {PRUNER_STARTUP_TRIALS} trials "
        f"and {PRUNER_WARMUP_STEPS} iterations) stopped unpromising trials from the engine's callbacks (never the "
        "native NDCG_Boost's). The best trial's settings trained the reported model; the test queries took no part "
        "in the search. Searched by every LightGBM and XGBoost method: learning rate, leaves, rows per leaf "
        "(LightGBM) or hessian sum per leaf (XGBoost), L2 and feature fraction; each method's own settings as "
        "listed below. Of the tree parameters under Settings, the searched ones were replaced by each "
        "trial's values; the number of bins (and LightGBM's minimum hessian sum per leaf) were kept.",
        "",
    ]
    methods = list(dict.fromkeys(r["method"] for r in results.tuning))
    for dataset in [d["name"] for d in results.datasets]:
        runs = [r for r in results.tuning if r["dataset"] == dataset]
        if not runs:
            continue
        rows = []
        for method in methods:
            mine = [r for r in runs if r["method"] == method]
            if not mine:
                continue
            secs = np.array([r["seconds"] for r in mine])
            best = np.array([max(t["value"] for t in r["trials"] if t["value"] is not None) for r in mine])
            n = [len(r["trials"]) for r in mine]
            pruned = [sum(t["state"] == "pruned" for t in r["trials"]) for r in mine]
            rows.append([method, f"{np.mean(n):.1f}", f"{np.mean(pruned):.1f}",
                         f"{secs.mean():.1f} ± {secs.std(ddof=1) if secs.size > 1 else 0:.1f}", f"{secs.sum():.0f}",
                         f"{best.mean():.4f} ± {best.std(ddof=1) if best.size > 1 else 0:.4f}"])
        lines += [f"### Tuning: {dataset}", "",
                  markdown_table(["method", "trials", "pruned", "tuning s per run", "tuning s total",
                                  f"best validation {cfg['curve_metric']}"], rows), "",
                  "Trials and pruned: mean per run; tuning s: wall time of the search per run (mean ± std) and "
                  "summed over the runs, without the final training; best validation: mean ± std over runs.", ""]
        labels = [f"{r['fold']}" + (f"/s{r['seed']}" if len(cfg["seeds"]) > 1 else "") for r in runs]
        columns = list(dict.fromkeys(labels))
        rows = []
        for method in methods:
            mine = {lab: r for lab, r in zip(labels, runs) if r["method"] == method}
            for name in dict.fromkeys(k for r in mine.values() for k in r["params"]):
                values = [mine[c]["params"][name] for c in columns if c in mine and name in mine[c]["params"]]
                rows.append([method, name] + [_format(mine[c]["params"].get(name)) if c in mine else "—" for c in columns]
                            + [_spread(values)])
        lines += [f"Chosen settings on {dataset} per fold" + (" and seed" if len(cfg["seeds"]) > 1 else "")
                  + ", and their spread (numbers: median [min, max]; choices: how often):", "",
                  markdown_table(["method", "setting"] + columns + ["spread"], rows), ""]
        png = _plot(results.tuning, dataset, methods, families, results.baseline, cfg["curve_metric"],
                    out / f"tuning-{slug(dataset)}.png")
        if png is not None:
            lines += [f"![{png.name}]({png.name})", ""]
    return lines
