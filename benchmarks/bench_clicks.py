"""Learning to rank from simulated position-biased clicks: how much of the bias is removed.

For each dataset (generated data, MQ2008 and OHSUMED when present), click model severity
eta and display setting, clicks are simulated on the training queries
(``gbrank.datasets.simulate_clicks``, a weak logging ranker fitted on 5% of them) and these
methods are trained on them with LightGBM, then scored by NDCG@10 on the test queries' true
labels:

* ``naive``: the softmax loss on raw clicks of the shown documents (``gbrank.ips_listnet``
  with unit propensities);
* ``ips-known``: inverse propensity weighting with the true propensities;
* ``ips-estimated``: propensities estimated jointly with the model (``propensity="estimate"``);
* ``ips-pairwise-known``, ``ips-pairwise-estimated``: the pairwise loss
  ``gbrank.ips_ranknet(weighting="dcg")`` with the true and with estimated propensities;
* ``pbm-known``, ``pbm-estimated``: the position-based model's likelihood,
  ``gbrank.pbm_listnet`` (a softmax over the scores offset by log(theta_p), raw clicks
  as targets: no inverse-propensity weights), with the true and with estimated propensities;
* ``pbm-known-es``, ``pbm-estimated-es`` (``--grid``): the same losses early-stopped on
  held-out clicks, a protocol that needs no relevance labels (``pbm_early_stopped``): every
  5th training query is held out, the loss is trained on the others for up to 300 rounds,
  the number of rounds k* minimising the held-out queries' click likelihood (the objective's
  own ``loss`` with the propensities it ended with) is chosen, and the loss is refitted on all
  the training queries for k* rounds;
* ``lgb-position``: LightGBM lambdarank on click counts with ``position`` (its position-bias
  model);
* ``lgb-position-es`` (``--grid``): the same with LightGBM's own early stopping as a user would
  run it: the held-out queries' clicks (with their positions) as ``valid_sets``, NDCG@10 on
  the clicks as the metric, then refitted on all the training queries for the best round;
* ``xgb-unbiased``: XGBoost ``rank:ndcg`` with ``lambdarank_unbiased`` (rows in display order);
* ``ceiling``: the softmax loss on the true relevance probabilities (full information).

Settings: ``all-shown`` (every document shown, the cut-off at least the longest list) and
``top10`` (a deterministic top-10 cut-off); ``top10-policy`` samples each session's ranking
from a Plackett-Luce logging policy and trains on the policy-aware weights (``ips-policy-aware``,
and ``ips-pairwise-policy-aware`` with the pairwise loss). ``--clip`` sets every IPS method's
``clip`` (default none; ``pbm-*`` have no weights to clip and ignore it).

The table gives each method's test NDCG@10, the share of the naive-to-ceiling gap it closes
and paired tests against ``naive`` over test queries (``gbrank.bench.stats.significance``).

``--worlds`` varies the world instead of the seed: a family of simulators (``WORLDS``: list
lengths fixed, uniform 2-111 and long-tailed; every document or the top 10 shown; rows logged
below a fold but never examined; count and binary clicks; eta 0.5, 1, 2; click noise; the
position-based, cascade and trust-bias click models; deterministic and Plackett-Luce logging,
the latter with 10 and 30 sessions per query).
In each world the ceiling is the same learner (LightGBM, the softmax loss) on the true labels'
gains and the naive model the same learner on the raw clicks; every method of
``WORLD_METHODS`` (the recommended procedure, ``gbrank.fit_clicks``, with its default objective,
with ``pbm_listnet``, where the log keeps its sessions (cascade clicks) on
``gbrank.cascade_targets``, and in XGBoost; gbrank's click objectives with estimated propensities at the fixed budget
and early-stopped on held-out clicks by ``click_early_stopped``, LightGBM's ``position`` mode
at the fixed budget and with its own early stopping, XGBoost's ``lambdarank_unbiased``) gets
its share of the naive-to-ceiling gap, mean and range over the seeds. One entry of
``WORLD_METHODS`` adds a method. The logging ranker of every world is a ridge regression fitted
on 0.2% of the queries; ``--logger-worlds`` (``LOGGER_WORLDS``) fits it on 1% or 5%, a better
ranker whose order the features predict more of. ``--cascade-worlds`` (``CASCADE_WORLDS``) logs
cascade clicks by users who stop at the first click and by users who may also leave without
one, and compares ``fit_clicks`` on the counts, on ``gbrank.cascade_targets`` and on the
cascade targets with the positions.

    python benchmarks/bench_clicks.py                    # quick run, generated data only
    python benchmarks/bench_clicks.py --grid --out docs/clicks/grid   # eta x sessions x 3 seeds, side by side
    python benchmarks/bench_clicks.py --full --datasets mq2008 --out docs/clicks/mq2008   # one of the docs' tables
    python benchmarks/bench_clicks.py --worlds --quick --out docs/clicks/worlds-quick   # small data, minutes
    python benchmarks/bench_clicks.py --worlds --out docs/clicks/worlds   # the family, 1000 queries, 3 seeds
    python benchmarks/bench_clicks.py --logger-worlds --out docs/clicks/logger-worlds   # better logging rankers
    python benchmarks/bench_clicks.py --cascade-worlds --out docs/clicks/cascade-worlds   # cascade, abandonment

The docs' page on learning from clicks lists the commands of all its figures.
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

import gbrank
from gbrank._data_dir import data_dir
from gbrank.bench.stats import significance
from gbrank.datasets import RankingData, load_letor_fold, make_ranking, simulate_clicks, split_queries
from gbrank.metrics import ndcg
from gbrank.objectives.propensity import estimate_propensity

METHODS = ["naive", "ips-known", "ips-estimated", "ips-pairwise-known", "ips-pairwise-estimated", "pbm-known",
           "pbm-estimated", "pbm-known-es", "pbm-estimated-es", "lgb-position", "lgb-position-es", "xgb-unbiased",
           "ceiling", "ips-policy-aware", "ips-pairwise-policy-aware"]
#: Early stopping on held-out clicks: every HOLD_OUT-th training query is held out and the
#: model trained on the others for up to MAX_ROUNDS rounds.
HOLD_OUT, MAX_ROUNDS = 5, 300
# the examination rate the cascade targets of the worlds floor at (bench_click_corrections.py)
CASCADE_CLIP = 0.2


def pairwise(propensity="estimate", clip=None):
    return gbrank.ips_ranknet(propensity, weighting="dcg", clip=clip)


def load(name: str, fold: int, seed: int):
    if name == "generated":
        data = make_ranking(1000, (30, 30), 40, noise=1.0, seed=seed)
        train, test = split_queries(data, (0.7, 0.3), seed=seed)
        return train, test
    root = data_dir()
    sub = {"mq2008": "letor4_mq2008", "ohsumed": "letor3_ohsumed/QueryLevelNorm"}[name]
    if root is None or not (root / sub).is_dir():
        return None
    splits = load_letor_fold(root / sub, fold)
    return splits.train, splits.test


def display_order(train: RankingData, logging_scores: np.ndarray) -> np.ndarray:
    """Rows of each query sorted by the logging ranker's order (stable, as the simulator)."""
    query = np.repeat(np.arange(train.group.size), train.group)
    return np.lexsort((np.arange(query.size), -logging_scores, query))


def lgb_train(params, X, label, group, rounds, objective, position=None, n_positions=None):
    """LightGBM with ``objective``: a gbrank objective takes the positions bound to it
    (``PositionedObjective``; ``n_positions``: the positions its estimate covers, when rows
    elsewhere are shown deeper than any of these), LightGBM's own ``lambdarank`` reads the Dataset's.
    The booster keeps its training Dataset as ``train_set_``, whose binding holds a click
    objective's estimate (``objective.binding(booster.train_set_).propensity_``)."""
    import lightgbm as lgb

    builtin = isinstance(objective, str)
    ds = lgb.Dataset(X, label, group=group, position=position if builtin else None, free_raw_data=False)
    if position is not None and not builtin:
        statistics = None if n_positions is None else gbrank.engines.Statistics(n_positions=n_positions)
        objective = gbrank.engines.PositionedObjective(objective, position, statistics)
    booster = lgb.train({**params, "objective": objective}, ds, rounds)
    booster.train_set_ = ds
    return booster


def held_out(group: np.ndarray, every: int = HOLD_OUT, query=None):
    """Every ``every``-th query held out (the first, the every+1-th, ...): the held-out
    groups and the held-out rows, as masks. ``query``: the query of each group, where a
    query's sessions are groups of their own (all of a query's groups go to the same side)."""
    query = np.arange(group.size) if query is None else np.asarray(query)
    queries = query % every == 0
    return queries, np.repeat(queries, group)


def click_early_stopped(params, X, clicks, group, position, propensity="estimate", *, factory=gbrank.pbm_listnet,
                        max_rounds=MAX_ROUNDS, query=None):
    """A gbrank click objective early-stopped on held-out clicks, with no relevance labels.

    ``factory(propensity=...)`` makes the objective (``gbrank.pbm_listnet``,
    ``gbrank.ips_listnet``, ``functools.partial(gbrank.ips_ranknet, weighting="dcg")``, ...).
    Every 5th query is held out (``query``: see :func:`held_out`) and the loss trained on the
    others for up to ``max_rounds`` rounds; the number of rounds k* is the one minimising the
    held-out queries' loss, measured by the objective's own ``loss`` with the propensities the
    fit ended with (for ``"estimate"``: ``factory(propensity=<its propensity_>)``; for
    ``pbm_listnet`` the click likelihood, for the IPS losses the inverse-propensity weighted
    loss), and the loss is refitted on every query for k* rounds. With estimated propensities
    k* is kept above ``warmup + update_every``, so that the refit re-estimates them at least
    twice on every query (at fewer rounds it would keep the starting estimate, the position
    click rates). Returns the refitted model, k* and the refit's objective."""
    queries, rows = held_out(group, query=query)
    fit_obj = factory(propensity=propensity)
    estimated = isinstance(propensity, str)
    least = fit_obj.warmup + fit_obj.update_every + 1 if estimated else 1
    if max_rounds < least:
        raise ValueError(f"max_rounds={max_rounds} is below the fewest rounds the protocol may choose ({least})")
    # the estimate covers every position shown, held-out queries' deeper ones included
    model = lgb_train(params, X[~rows], clicks[~rows], group[~queries], max_rounds, fit_obj, position=position[~rows],
                      n_positions=int(position.max()))
    scorer = factory(propensity=fit_obj.binding(model.train_set_).propensity_ if estimated else propensity)
    scores, losses = np.zeros(int(rows.sum())), []
    for k in range(model.current_iteration()):
        # a custom objective starts from zero scores: the scores after k + 1 rounds are the sum of the first trees
        scores = scores + model.predict(X[rows], start_iteration=k, num_iteration=1)
        losses.append(scorer.loss(clicks[rows], scores, group[queries], position=position[rows]))
    best = least + int(np.argmin(losses[least - 1:]))
    refit_obj = factory(propensity=propensity)
    return lgb_train(params, X, clicks, group, best, refit_obj, position=position), best, refit_obj


def pbm_early_stopped(params, X, clicks, group, position, propensity="estimate", *, max_rounds=MAX_ROUNDS):
    """gbrank.pbm_listnet early-stopped on held-out clicks (:func:`click_early_stopped`): the
    held-out queries' click likelihood chooses the rounds."""
    return click_early_stopped(params, X, clicks, group, position, propensity, factory=gbrank.pbm_listnet,
                               max_rounds=max_rounds)


def lgb_position_early_stopped(params, X, counts, group, rank, *, max_rounds=MAX_ROUNDS, query=None):
    """LightGBM's position mode with its own early stopping, as a user with clicks only would
    run it: the held-out queries (every 5th; ``query``: see :func:`held_out`) as
    ``valid_sets`` with their clicks and positions, NDCG@10 on the clicks as the metric, the
    best of up to ``max_rounds`` rounds, then a refit on every query for that many rounds.
    Rows in display order, ``rank`` their positions."""
    import lightgbm as lgb

    queries, rows = held_out(group, query=query)
    params = {**params, "objective": "lambdarank", "metric": "ndcg", "eval_at": [10]}
    fit = lgb.Dataset(X[~rows], counts[~rows], group=group[~queries], position=rank[~rows], free_raw_data=False)
    valid = lgb.Dataset(X[rows], counts[rows], group=group[queries], position=rank[rows], reference=fit,
                        free_raw_data=False)
    curve = {}
    lgb.train(params, fit, max_rounds, valid_sets=[valid], valid_names=["held_out"],
              callbacks=[lgb.record_evaluation(curve)])
    best = 1 + int(np.argmax(curve["held_out"]["ndcg@10"]))
    everything = lgb.Dataset(X, counts, group=group, position=rank, free_raw_data=False)
    return lgb.train(params, everything, best), best


def run_one(train, test, *, setting, eta, sessions, rounds, seed, threads, logging_fraction, clip=None,
            early_stopping=False):
    """Train every method on one simulated click log; returns per-query NDCG@10 on the test
    queries, the estimated propensities (and with ``early_stopping`` the rounds chosen), the
    log and each method's training seconds (for the early-stopped methods the held-out fit,
    the choice of rounds and the refit)."""
    import xgboost as xgb

    top_k = int(train.group.max()) if setting == "all-shown" else 10
    policy = "plackett_luce" if setting == "top10-policy" else "deterministic"
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=sessions, top_k=top_k, eta=eta,
                          policy=policy, logging_fraction=logging_fraction, seed=seed)
    order = display_order(train, log.logging_scores)
    # gbrank trains on the rows in their natural order, the positions beside them, as a
    # click log comes; the engines' own modes need the display order
    X, clicks, group = train.X, log.clicks.astype(np.float64), train.group
    rank = np.arange(order.size) - np.repeat(np.cumsum(group) - group, group) + 1
    params = {"learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1,
              "num_threads": threads, "seed": seed}
    models, extra, seconds = {}, {}, {}

    def fit(name, train_model):
        start = time.perf_counter()
        models[name] = train_model()
        seconds[name] = time.perf_counter() - start

    def ours(obj, labels, pos=None):
        return lambda: lgb_train(params, X, labels, group, rounds, obj, position=pos)

    fit("ceiling", ours(gbrank.ips_listnet(propensity=None), log.relevance * sessions))
    if policy == "plackett_luce":
        fit("naive", ours(gbrank.ips_listnet(propensity=None), clicks))
        # positions change from session to session: the policy-aware weights c / rho
        weights = log.ips_weights(clip=clip)
        fit("ips-policy-aware", ours(gbrank.ips_listnet(propensity=None), weights))
        fit("ips-pairwise-policy-aware", ours(pairwise(None), weights))
        return evaluate(models, test), extra, log, seconds
    position = log.position
    # naive: unit propensities, so that as in a click log rows never shown take no part
    fit("naive", ours(gbrank.ips_listnet(propensity=np.ones(top_k)), clicks, position))
    fit("ips-known", ours(gbrank.ips_listnet(propensity=log.theta, clip=clip), clicks, position))
    estimated = gbrank.ips_listnet(clip=clip)
    fit("ips-estimated", ours(estimated, clicks, position))
    fit("ips-pairwise-known", ours(pairwise(log.theta, clip), clicks, position))
    estimated_pairwise = pairwise(clip=clip)
    fit("ips-pairwise-estimated", ours(estimated_pairwise, clicks, position))
    # the position-based model's likelihood: no weights, so nothing to clip
    fit("pbm-known", ours(gbrank.pbm_listnet(propensity=log.theta), clicks, position))
    estimated_pbm = gbrank.pbm_listnet()
    fit("pbm-estimated", ours(estimated_pbm, clicks, position))
    extra["propensity"] = {
        name: obj.binding(models[method].train_set_).propensity_
        for name, obj, method in (("listnet", estimated, "ips-estimated"), ("pairwise", estimated_pairwise,
                                  "ips-pairwise-estimated"), ("pbm", estimated_pbm, "pbm-estimated"))
    }
    extra["rounds"] = {}
    if early_stopping:
        for name, propensity in (("pbm-known-es", log.theta), ("pbm-estimated-es", "estimate")):
            def stopped(propensity=propensity, name=name):
                model, extra["rounds"][name], obj = pbm_early_stopped(params, X, clicks, group, position, propensity)
                if name == "pbm-estimated-es":
                    extra["propensity"]["pbm-es"] = obj.binding(model.train_set_).propensity_
                return model
            fit(name, stopped)
    # the engines see every row at its rank in the logging order (rows past the cut-off,
    # never clicked, at ranks beyond it)
    counts = clicks[order].astype(np.int64)
    fit("lgb-position", lambda: lgb_train({**params, "label_gain": list(range(int(counts.max()) + 1))}, X[order],
                                          counts, group, rounds, "lambdarank", position=rank))
    if early_stopping:
        def stopped_lgb():
            model, extra["rounds"]["lgb-position-es"] = lgb_position_early_stopped(
                {**params, "label_gain": list(range(int(counts.max()) + 1))}, X[order], counts, group, rank)
            return model
        fit("lgb-position-es", stopped_lgb)
    dtrain = xgb.DMatrix(X[order], clicks[order], qid=np.repeat(np.arange(group.size), group))
    fit("xgb-unbiased", lambda: xgb.train(
        {"objective": "rank:ndcg", "lambdarank_unbiased": True, "ndcg_exp_gain": False, "eta": 0.1,
         "max_depth": 6, "nthread": threads, "seed": seed}, dtrain, rounds))
    return evaluate(models, test), extra, log, seconds


def grid(etas, sessions_list, seeds, *, rounds, threads, logging_fraction, clip=None,
         early_stopping=True) -> pd.DataFrame:
    """Generated data, every document shown: each method's share of the naive-to-ceiling gap
    closed and its training time, for every eta, sessions per query and seed (with
    ``early_stopping`` the early-stopped methods too, and the rounds they chose)."""
    rows = []
    for eta in etas:
        for sessions in sessions_list:
            for seed in seeds:
                train, test = load("generated", 1, seed)
                per_query, extra, log, seconds = run_one(train, test, setting="all-shown", eta=eta,
                                                         sessions=sessions, rounds=rounds, seed=seed, threads=threads,
                                                         logging_fraction=logging_fraction, clip=clip,
                                                         early_stopping=early_stopping)
                means = {m: float(np.mean(v)) for m, v in per_query.items()}
                gap = means["ceiling"] - means["naive"]
                # the largest relative error of each estimate over positions 1-10
                error = {method: float(np.max(np.abs(extra["propensity"][objective][:10] / log.theta[:10] - 1)))
                         for method, objective in (("ips-estimated", "listnet"), ("ips-pairwise-estimated", "pairwise"),
                                                   ("pbm-estimated", "pbm"), ("pbm-estimated-es", "pbm-es"))
                         if objective in extra["propensity"]}
                for method, value in means.items():
                    rows.append({"eta": eta, "sessions": sessions, "seed": seed, "method": method, "ndcg@10": value,
                                 "gap_closed": (value - means["naive"]) / gap if gap > 0 else np.nan,
                                 "seconds": seconds[method], "propensity_error": error.get(method, np.nan),
                                 "rounds": extra["rounds"].get(method, rounds)})
                print(f"eta={eta:g} sessions={sessions} seed={seed}: " + ", ".join(
                    f"{m} {100 * r['gap_closed']:.0f}% ({r['seconds']:.1f} s)" for m, r in
                    ((r["method"], r) for r in rows[-len(means):])), flush=True)
    return pd.DataFrame(rows)


def grid_table(results: pd.DataFrame) -> str:
    """Markdown: per eta and sessions, every method's gap closed (mean over the seeds, and
    their range) and mean training seconds, gbrank's methods beside both engines'."""
    methods = [m for m in METHODS if m in set(results["method"]) and m not in ("naive", "ceiling")]
    head = "| eta | sessions | naive → ceiling | " + " | ".join(methods) + " |"
    lines = [head, "|---|---|---|" + "---:|" * len(methods)]
    for (eta, sessions), part in results.groupby(["eta", "sessions"], sort=True):
        by = part.groupby("method")
        ndcg = by["ndcg@10"].mean()
        cells = []
        for m in methods:
            g = part[part["method"] == m]
            cells.append(f"{100 * g['gap_closed'].mean():.0f}% [{100 * g['gap_closed'].min():.0f}, "
                         f"{100 * g['gap_closed'].max():.0f}] {g['seconds'].mean():.1f} s")
        lines.append(f"| {eta:g} | {sessions} | {ndcg['naive']:.3f} → {ndcg['ceiling']:.3f} | " + " | ".join(cells) + " |")
    if "propensity_error" in results.columns:
        # how far each estimate is from the true propensities: largest relative error, positions 1-10
        estimated = [m for m in methods if results.loc[results["method"] == m, "propensity_error"].notna().any()]
        lines += ["", "| eta | sessions | " + " | ".join(f"{m}: estimate's error" for m in estimated) + " |",
                  "|---|---|" + "---:|" * len(estimated)]
        for (eta, sessions), part in results.groupby(["eta", "sessions"], sort=True):
            cells = []
            for m in estimated:
                e = part.loc[part["method"] == m, "propensity_error"]
                cells.append(f"{100 * e.mean():.0f}% [{100 * e.min():.0f}, {100 * e.max():.0f}]")
            lines.append(f"| {eta:g} | {sessions} | " + " | ".join(cells) + " |")
    if "rounds" in results.columns:
        # the rounds each early-stopped method chose on its held-out clicks
        stopped = [m for m in methods if m.endswith("-es")]
        if stopped:
            lines += ["", "| eta | sessions | " + " | ".join(f"{m}: rounds chosen" for m in stopped) + " |",
                      "|---|---|" + "---:|" * len(stopped)]
            for (eta, sessions), part in results.groupby(["eta", "sessions"], sort=True):
                cells = []
                for m in stopped:
                    r = part.loc[part["method"] == m].sort_values("seed")["rounds"]
                    cells.append("/".join(str(int(v)) for v in r))
                lines.append(f"| {eta:g} | {sessions} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def propensity_study(datasets, folds, sessions_list, *, eta, rounds, seed, threads, logging_fraction) -> pd.DataFrame:
    """Error of the estimated propensities, positions 1-10, against the number of sessions
    (every document shown), for both IPS losses; and, as a reference, the estimate from the
    scores of the ceiling model (trained on the true relevance), which no session count
    improves on."""
    rows = []
    params = {"learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1,
              "num_threads": threads, "seed": seed}
    for dataset in datasets:
        for fold in folds if dataset != "generated" else [1]:
            loaded = load(dataset, fold, seed)
            if loaded is None:
                print(f"{dataset}: data not found, skipped")
                break
            train, _ = loaded
            offsets = np.concatenate(([0], np.cumsum(train.group)))
            for sessions in sessions_list:
                log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=sessions,
                                      top_k=int(train.group.max()), eta=eta, logging_fraction=logging_fraction,
                                      seed=seed)
                order = display_order(train, log.logging_scores)
                X, clicks, position = train.X[order], log.clicks[order].astype(np.float64), log.position[order]
                estimates = {}
                for objective, obj in (("listnet", gbrank.ips_listnet()), ("pairwise", pairwise())):
                    binding = obj.bind(clicks, train.group, position=position)
                    lgb_train(params, X, clicks, train.group, rounds, lambda preds, _, binding=binding: binding.grad_hess(preds))
                    estimates[objective] = binding.propensity_
                truth = log.relevance[order] * sessions
                ceiling = gbrank.ips_listnet(propensity=None)
                model = lgb_train(params, X, truth, train.group, rounds,
                                  lambda preds, _: ceiling.grad_hess(truth, preds, train.group))
                estimates["ceiling-scores"] = estimate_propensity(model.predict(X), clicks, position, offsets,
                                                                  int(train.group.max()))
                for objective, estimate in estimates.items():
                    error = np.abs(estimate[:10] / log.theta[:10] - 1)
                    rows.append({"dataset": dataset, "fold": fold, "objective": objective,
                                 "sessions_per_query": sessions, "sessions": sessions * int(train.group.size),
                                 "eta": eta, "max_rel_error_1_10": float(error.max()),
                                 "mean_rel_error_1_10": float(error.mean())})
                    print(f"{dataset} fold {fold} {objective} {sessions} sessions per query: largest relative "
                          f"error {error.max():.3f}, mean {error.mean():.3f}", flush=True)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- a family of worlds
class World(NamedTuple):
    """One simulated click world: how the lists, the display, the user and the log vary."""

    name: str
    lengths: str = "fixed"          # "fixed" (30), "uniform" (2-111) or "long-tail" (2-111, median 12)
    top_k: int | None = None        # positions shown; None: every document
    fold: int | None = None         # positions past it logged but never examined
    click_model: str = "pbm"        # "pbm", "cascade", "cascade_abandon" or "trust"
    eta: float = 1.0
    click_noise: float = 0.0
    aggregate: str = "count"        # "count" or "binary" clicks per row
    policy: str = "deterministic"   # or "plackett_luce": one row per document shown in each session
    per_session: bool = False       # one row per document shown in each session, also with a deterministic policy
    sessions: int = 50              # sessions per training query
    logging_fraction: float = 0.002  # share of the queries the logging ranker is fitted on: more, a better one


#: The family ``--worlds`` runs: one world per line, each a change from the first.
WORLDS = [
    World("fixed30"),
    World("eta0.5", eta=0.5),
    World("eta2", eta=2.0),
    World("uniform-2-111", lengths="uniform"),
    World("long-tail", lengths="long-tail"),
    World("top10", top_k=10),
    World("fold10", fold=10),
    World("long-tail-fold30", lengths="long-tail", fold=30),
    World("binary", aggregate="binary", sessions=10),
    World("noise", click_noise=0.02),
    World("cascade-top10", click_model="cascade", top_k=10),
    World("trust", click_model="trust"),
    World("plackett-luce-top10", policy="plackett_luce", top_k=10, sessions=10),
    World("plackett-luce-30", policy="plackett_luce", top_k=10, sessions=30),
    World("per-session-top10", top_k=10, per_session=True, sessions=20),
]

#: ``--logger-worlds``: worlds of ``WORLDS`` logged by a better ranker (a ridge regression
#: fitted on 1% or 5% of the queries instead of 0.2%), whose order the features predict more
#: of: the propensities are harder to identify, and the raw clicks are closer to the labels.
LOGGER_WORLDS = [
    World("logger1-fixed30", logging_fraction=0.01),
    World("logger1-uniform-2-111", lengths="uniform", logging_fraction=0.01),
    World("logger1-top10", top_k=10, logging_fraction=0.01),
    World("logger1-binary", aggregate="binary", sessions=10, logging_fraction=0.01),
    World("logger5-fixed30", logging_fraction=0.05),
]

#: ``--unshown-worlds``: worlds whose logs hold rows never shown (position -1; a deterministic
#: top-k cut-off), by the weak logging ranker of ``WORLDS`` and by better ones, for
#: ``fit_clicks(never_shown=)``.
UNSHOWN_WORLDS = [
    World("top10", top_k=10),
    World("top5", top_k=5),
    World("uniform-top10", lengths="uniform", top_k=10),
    World("long-tail-top10", lengths="long-tail", top_k=10),
    World("eta2-top10", eta=2.0, top_k=10),
    World("trust-top10", click_model="trust", top_k=10),
    World("cascade-top10", click_model="cascade", top_k=10),
    World("logger1-top10", top_k=10, logging_fraction=0.01),
    World("logger1-top5", top_k=5, logging_fraction=0.01),
    World("logger1-uniform-top10", lengths="uniform", top_k=10, logging_fraction=0.01),
    World("logger5-top10", top_k=10, logging_fraction=0.05),
]

#: ``--cascade-worlds``: cascade clicks, by users who stop at the first click and by users who
#: may also leave without one (reaching position p with probability 1/p^eta when nothing above
#: was clicked), with the top 10 shown and every document shown, eta 1 and 2.
CASCADE_WORLDS = [
    World("cascade-top10", click_model="cascade", top_k=10),
    World("cascade-all", click_model="cascade"),
    World("abandon-top10", click_model="cascade_abandon", top_k=10),
    World("abandon-all", click_model="cascade_abandon"),
    World("abandon-eta2-top10", click_model="cascade_abandon", eta=2.0, top_k=10),
]

#: ``--binary-worlds``: the binary world of ``WORLDS`` varied one setting at a time.
BINARY_WORLDS = [
    World("binary-long-tail", lengths="long-tail", aggregate="binary", sessions=10),
    World("binary-uniform", lengths="uniform", aggregate="binary", sessions=10),
    World("binary-top10", top_k=10, aggregate="binary", sessions=10),
    World("binary-50", aggregate="binary", sessions=50),
    World("binary-3", aggregate="binary", sessions=3),
    World("binary-eta2", eta=2.0, aggregate="binary", sessions=10),
    World("binary-fold10", fold=10, aggregate="binary", sessions=10),
    World("binary-trust", click_model="trust", aggregate="binary", sessions=10),
]


def describe(world: World, letor: str | None = None) -> str:
    """The world's settings in words, for the table (``letor``: the lists are that dataset's)."""
    lengths = {"fixed": "30 docs", "uniform": "2-111 docs, uniform", "long-tail": "2-111 docs, long tail"}
    shown = "all shown" if world.top_k is None else f"top {world.top_k} shown"
    parts = [f"{letor} lists" if letor else lengths[world.lengths], shown]
    if world.fold is not None:
        parts.append(f"unexamined past {world.fold}")
    clicks = "binary clicks per session row" if rows_per_session(world) else f"{world.aggregate} clicks"
    parts += [world.click_model, f"eta {world.eta:g}", f"{clicks}, {world.sessions} sessions"]
    if world.click_noise:
        parts.append(f"noise {world.click_noise:g}")
    parts.append("Plackett-Luce policy" if world.policy == "plackett_luce" else "deterministic policy")
    if world.logging_fraction != World._field_defaults["logging_fraction"]:
        parts.append(f"logger fitted on {world.logging_fraction:.0%} of the queries")
    return ", ".join(parts)


def world_data(world: World, n_queries: int, seed: int, letor: str | None = None):
    """Generated queries of the world's list lengths, split 70/30 into training and test; or,
    with ``letor`` ("mq2008" or "ohsumed"), that dataset's fold ``seed`` (its real features,
    labels and list lengths; the world's lengths and ``n_queries`` are not used)."""
    if letor is not None:
        splits = load(letor, seed, seed)
        if splits is None:
            raise SystemExit(f"--letor {letor}: the LETOR data were not found (set GBRANK_DATA_DIR)")
        return splits
    if world.lengths == "fixed":
        data = make_ranking(n_queries, (30, 30), 40, noise=1.0, seed=seed)
    elif world.lengths == "uniform":
        data = make_ranking(n_queries, (2, 111), 40, noise=1.0, seed=seed)
    else:
        # lists of 111 cut down to lengths with a long right tail: lognormal, median 12, clipped to 2-111
        full = make_ranking(n_queries, (111, 111), 40, noise=1.0, seed=seed)
        rng = np.random.default_rng(seed)
        sizes = np.clip(np.rint(rng.lognormal(np.log(12.0), 1.0, n_queries)), 2, 111).astype(np.int64)
        rows = np.concatenate([111 * q + np.sort(rng.choice(111, n, replace=False)) for q, n in enumerate(sizes)])
        data = RankingData(full.X[rows], full.y[rows], group=sizes)
    return split_queries(data, (0.7, 0.3), seed=seed)


class ClickTrain(NamedTuple):
    """A click log as a learner sees it, with the budget every method gets.

    ``X, clicks, group, position``: the rows as gbrank takes them (with a deterministic policy
    one row per document with its click count or binary click and its display position, -1
    for rows never shown; with a stochastic policy, or where the world asks for it, one row
    per document shown in each session, every session a group of its own). ``order`` puts
    the rows in display order and ``rank`` is the display rank of each row in that order
    (rows never shown at ranks past the cut-off): the engines' own modes take ``X[order]``,
    ``clicks[order]``, ``rank``. ``query`` is the query of each group (for holding out whole
    queries). ``sessions``: the per-session records ``(session_rows, session_clicks)`` of a
    deterministic policy's log where the world keeps them (cascade clicks), else None.
    ``aggregate``: what
    :func:`gbrank.fit_clicks` is told a row's click says, ``"count"`` (the sessions it was
    clicked in; 0 or 1 on a row per session) or ``"binary"`` (whether it was clicked in
    any), or None (its default)."""

    X: np.ndarray
    clicks: np.ndarray
    group: np.ndarray
    position: np.ndarray
    order: np.ndarray
    rank: np.ndarray
    query: np.ndarray
    sessions: tuple | None
    params: dict
    rounds: int
    max_rounds: int
    threads: int
    seed: int
    aggregate: str | None


def click_train(world: World, train: RankingData, log, *, params, rounds, max_rounds, threads, seed) -> ClickTrain:
    """The world's click log in the form of :class:`ClickTrain`."""
    if rows_per_session(world):
        shown = log.session_rows >= 0
        rows = log.session_rows[shown]
        group = shown.sum(axis=1)
        keep = group > 0
        position = np.broadcast_to(np.arange(1, shown.shape[1] + 1), shown.shape)[shown]
        X, clicks = train.X[rows], log.session_clicks[shown].astype(np.float64)
        group, query = group[keep], log.session_query[keep]
        order = np.arange(rows.size)
        rank = position.astype(np.int64)
    else:
        X, clicks, group, position = train.X, log.clicks.astype(np.float64), train.group, log.position
        query = np.arange(group.size)
        order = display_order(train, log.logging_scores)
        rank = np.arange(order.size) - np.repeat(np.cumsum(group) - group, group) + 1
    sessions = (log.session_rows, log.session_clicks) if not rows_per_session(world) and keeps_sessions(world) \
        else None
    # the Plackett-Luce sessions train with fit_clicks' default on 0/1 clicks (pbm_cloglog),
    # level with the procedure on counts on 1,000 queries and ahead on 300
    aggregate = None if world.policy == "plackett_luce" else world.aggregate
    return ClickTrain(X, clicks, group, position, order, rank, query, sessions, params, rounds, max_rounds, threads,
                      seed, aggregate)


def rows_per_session(world: World) -> bool:
    """Whether the world's log has one row per document shown in each session."""
    return world.policy == "plackett_luce" or world.per_session


def keeps_sessions(world: World) -> bool:
    """Whether the world's log keeps its sessions: one row per document shown in each session,
    or the clicks of each session beside the counts (cascade clicks, for the cascade
    targets)."""
    return rows_per_session(world) or world.click_model.startswith("cascade")


class NotApplicable(Exception):
    """A method that needs what the world's log does not hold: its cell is left blank."""


#: The error recorded for a method a world does not apply to.
NOT_APPLICABLE = "not applicable"


def gbrank_fixed(factory):
    """A gbrank click objective with estimated propensities at the fixed budget of rounds."""
    def fit(d: ClickTrain):
        model = lgb_train(d.params, d.X, d.clicks, d.group, d.rounds, factory(propensity="estimate"),
                          position=d.position)
        return model.predict, d.rounds
    return fit


def gbrank_early_stopped(factory):
    """A gbrank click objective with estimated propensities, its rounds chosen on held-out
    clicks (:func:`click_early_stopped`)."""
    def fit(d: ClickTrain):
        model, best, _ = click_early_stopped(d.params, d.X, d.clicks, d.group, d.position, "estimate",
                                             factory=factory, max_rounds=d.max_rounds, query=d.query)
        return model.predict, best
    return fit


def recommended(objective=None, engine="lightgbm", **options):
    """The library's recommended procedure, :func:`gbrank.fit_clicks` (its default objective
    unless one is given; ``options``: more of its keyword arguments), with the world's
    parameters (in XGBoost those of ``xgb_unbiased``) and the early-stopped methods' budget.
    Each query's rows are one list, its sessions together where a stochastic policy logged a
    row per document shown in each session: a list per session would hold out sessions
    whose documents were trained on in the query's other sessions, and the held-out clicks
    would reward fitting those documents."""
    def fit(d: ClickTrain):
        model = gbrank.fit_clicks(d.X, d.clicks, qid=np.repeat(d.query, d.group), position=d.position,
                                  engine=engine,
                                  params=d.params if engine == "lightgbm" else _xgb_params(d),
                                  objective=None if objective is None else objective(),
                                  max_rounds=d.max_rounds, seed=d.seed, aggregate=d.aggregate, **options)
        return model.predict, model.best_rounds
    return fit


def recommended_cascade(clip=CASCADE_CLIP, position=False):
    """:func:`gbrank.fit_clicks` on :func:`gbrank.cascade_targets` (the cascade model's
    examinations, clipped at ``clip``), in the worlds whose log keeps its sessions; with
    ``position``, given the display positions too (a position-based examination on top of
    the cascade's, for users who may leave without a click)."""
    def fit(d: ClickTrain):
        if d.sessions is None:
            raise NotApplicable
        targets = gbrank.cascade_targets(*d.sessions, d.clicks.size, clip=clip)
        model = gbrank.fit_clicks(d.X, targets, d.group, position=d.position if position else None,
                                  params=d.params, max_rounds=d.max_rounds, seed=d.seed)
        return model.predict, model.best_rounds
    return fit


def _gains(d: ClickTrain) -> dict:
    return {**d.params, "label_gain": list(range(int(d.clicks.max()) + 1))}


def lgb_position_fixed(d: ClickTrain):
    """LightGBM's lambdarank with ``Dataset(position=)`` on the rows in display order, fixed rounds."""
    counts = d.clicks[d.order].astype(np.int64)
    model = lgb_train(_gains(d), d.X[d.order], counts, d.group, d.rounds, "lambdarank", position=d.rank)
    return model.predict, d.rounds


def lgb_position_es(d: ClickTrain):
    """LightGBM's position mode with its own early stopping on held-out clicks."""
    counts = d.clicks[d.order].astype(np.int64)
    model, best = lgb_position_early_stopped(_gains(d), d.X[d.order], counts, d.group, d.rank,
                                             max_rounds=d.max_rounds, query=d.query)
    return model.predict, best


def _xgb_params(d: ClickTrain) -> dict:
    return {"eta": 0.1, "max_depth": 6, "nthread": d.threads, "seed": d.seed}


def xgb_unbiased(d: ClickTrain):
    """XGBoost ``rank:ndcg`` with ``lambdarank_unbiased`` on the rows in display order, fixed rounds."""
    import xgboost as xgb

    dtrain = xgb.DMatrix(d.X[d.order], d.clicks[d.order], qid=np.repeat(np.arange(d.group.size), d.group))
    model = xgb.train({"objective": "rank:ndcg", "lambdarank_unbiased": True, "ndcg_exp_gain": False,
                       **_xgb_params(d)}, dtrain, d.rounds)
    return (lambda X: model.predict(xgb.DMatrix(X))), d.rounds


#: The methods ``--worlds`` compares: name -> fit(ClickTrain) returning (a function scoring a
#: feature matrix, the rounds trained). One entry adds a method to every world.
WORLD_METHODS = {
    "fit_clicks": recommended(),
    "fit_clicks(pbm_listnet)": recommended(gbrank.pbm_listnet),
    "fit_clicks(cascade)": recommended_cascade(),
    "fit_clicks[xgboost]": recommended(engine="xgboost"),
    "ips_listnet": gbrank_fixed(gbrank.ips_listnet),
    "ips_listnet-es": gbrank_early_stopped(gbrank.ips_listnet),
    "ips_ranknet": gbrank_fixed(functools.partial(gbrank.ips_ranknet, weighting="dcg")),
    "ips_ranknet-es": gbrank_early_stopped(functools.partial(gbrank.ips_ranknet, weighting="dcg")),
    "pbm_listnet": gbrank_fixed(gbrank.pbm_listnet),
    "pbm_listnet-es": gbrank_early_stopped(gbrank.pbm_listnet),
    "lgb-position": lgb_position_fixed,
    "lgb-position-es": lgb_position_es,
    "xgb-unbiased": xgb_unbiased,
}

#: The methods ``--binary-worlds`` compares: the recommended procedure (``pbm_cloglog`` on
#: 0/1 clicks), the two click-count objectives compared with their own estimates, and
#: LightGBM's mode.
BINARY_WORLD_METHODS = {
    "fit_clicks": recommended(),
    "fit_clicks(counts)": recommended(lambda: [gbrank.ips_ranknet(), gbrank.pbm_listnet()]),
    "lgb-position": lgb_position_fixed,
}


#: The methods ``--cascade-worlds`` compares: the recommended procedure on the click counts
#: (the position-based model), on the cascade targets, and on the cascade targets with the
#: positions; LightGBM's mode.
CASCADE_WORLD_METHODS = {
    "fit_clicks": recommended(),
    "fit_clicks(cascade)": recommended_cascade(),
    "fit_clicks(cascade, position)": recommended_cascade(position=True),
    "lgb-position": lgb_position_fixed,
}


#: The methods ``--unshown-worlds`` compares: the recommended procedure with the rows never
#: shown left out (its default) and exposed at 3% of the deepest position's propensity, and
#: LightGBM's mode (which takes them at their ranks past the cut-off).
UNSHOWN_WORLD_METHODS = {
    "fit_clicks": recommended(),
    "fit_clicks(never_shown=0.03)": recommended(never_shown=0.03),
    "lgb-position": lgb_position_fixed,
}


def run_world(world: World, seed: int, *, n_queries, rounds, max_rounds, threads, methods,
              letor: str | None = None) -> list[dict]:
    """One world, one seed: test NDCG@10 of the ceiling, the naive model and every method,
    and each one's share of the naive-to-ceiling gap, rounds and training seconds. A method
    that fails is kept, with its error and no figures. ``letor``: see :func:`world_data`."""
    train, test = world_data(world, n_queries, seed, letor)
    top_k = world.top_k or int(train.group.max())
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=world.sessions, top_k=top_k,
                          eta=world.eta, click_model=world.click_model, fold=world.fold,
                          click_noise=world.click_noise, aggregate=world.aggregate, policy=world.policy,
                          n_policy_samples=10, per_session=keeps_sessions(world),  # no method reads rho
                          logging_fraction=world.logging_fraction, seed=seed)
    params = {"learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1,
              "num_threads": threads, "seed": seed}
    d = click_train(world, train, log, params=params, rounds=rounds, max_rounds=max_rounds, threads=threads,
                    seed=seed)

    def ceiling(_):
        # the same learner on the true labels: the softmax on every training document's gain 2^l - 1
        model = lgb_train(params, train.X, np.expm1(train.y * np.log(2.0)), train.group, rounds,
                          gbrank.ips_listnet(propensity=None))
        return model.predict, rounds

    def naive(d):
        # the same learner on the raw clicks: unit propensities (rows never shown take no part)
        positions = int(d.position.max())
        obj = gbrank.ips_listnet(propensity=np.ones(positions))
        return lgb_train(params, d.X, d.clicks, d.group, rounds, obj, position=d.position).predict, rounds

    rows = []
    for name, fit in {"ceiling": ceiling, "naive": naive, **methods}.items():
        start = time.perf_counter()
        try:
            score, used = fit(d)
            value = float(np.mean(ndcg(test.y, score(test.X), test.group, k=10, per_query=True)))
            error = ""
        except NotApplicable:
            value, used, error = np.nan, np.nan, NOT_APPLICABLE
        except Exception as exc:  # a method that breaks in a world is a result, not the end of the grid
            value, used, error = np.nan, np.nan, f"{type(exc).__name__}: {exc}"
            print(f"{world.name} seed {seed}: {name} failed: {error}", flush=True)
        rows.append({"world": world.name, "seed": seed, "method": name, "ndcg@10": value, "rounds": used,
                     "seconds": time.perf_counter() - start, "error": error})
    by = {r["method"]: r["ndcg@10"] for r in rows}
    gap = by["ceiling"] - by["naive"]
    for r in rows:
        r["gap_closed"] = (r["ndcg@10"] - by["naive"]) / gap if gap > 0 else np.nan
    print(f"{world.name} seed {seed}: naive {by['naive']:.3f} -> ceiling {by['ceiling']:.3f}; " + ", ".join(
        f"{r['method']} {100 * r['gap_closed']:.0f}%" for r in rows
        if r["method"] not in ("naive", "ceiling") and r["error"] != NOT_APPLICABLE),
        flush=True)
    return rows


def worlds_grid(worlds, seeds, *, n_queries, rounds, max_rounds, threads, methods=None,
                letor: str | None = None) -> pd.DataFrame:
    """Every world and seed (:func:`run_world`), one row per world, seed and method."""
    methods = WORLD_METHODS if methods is None else methods
    rows = []
    for world in worlds:
        for seed in seeds:
            rows += run_world(world, seed, n_queries=n_queries, rounds=rounds, max_rounds=max_rounds,
                              threads=threads, methods=methods, letor=letor)
    return pd.DataFrame(rows)


def worlds_table(results: pd.DataFrame, worlds, letor: str | None = None) -> str:
    """Markdown: per world, the naive and ceiling NDCG@10 and every method's share of the gap
    closed, mean over the seeds and their range; then the worlds' settings and the rounds
    each early-stopped method chose."""
    methods = [m for m in dict.fromkeys(results["method"]) if m not in ("naive", "ceiling")]
    names = [w.name for w in worlds if w.name in set(results["world"])]
    lines = ["| world | naive → ceiling | " + " | ".join(methods) + " |", "|---|---|" + "---:|" * len(methods)]
    for name in names:
        part = results[results["world"] == name]
        ndcg_of = part.groupby("method")["ndcg@10"].mean()
        cells = []
        for m in methods:
            g = part.loc[part["method"] == m, "gap_closed"]
            if g.isna().all():
                errors = part.loc[part["method"] == m, "error"]
                cells.append("—" if (errors == NOT_APPLICABLE).all() else "failed" if (errors != "").any() else "no gap")
            elif len(g) == 1:
                cells.append(f"{100 * g.iloc[0]:.0f}%")
            else:
                cells.append(f"{100 * g.mean():.0f}% [{100 * g.min():.0f}, {100 * g.max():.0f}]")
        lines.append(f"| {name} | {ndcg_of['naive']:.3f} → {ndcg_of['ceiling']:.3f} | " + " | ".join(cells) + " |")
    stopped = [m for m in methods if m.endswith("-es")]
    lines += ["", "| world | settings |" + "".join(f" {m}: rounds |" for m in stopped),
              "|---|---|" + "---:|" * len(stopped)]
    for world in worlds:
        if world.name not in names:
            continue
        part = results[results["world"] == world.name].sort_values("seed")
        cells = ["/".join("-" if np.isnan(v) else str(int(v)) for v in part.loc[part["method"] == m, "rounds"])
                 for m in stopped]
        lines.append(f"| {world.name} | {describe(world, letor)} |" + "".join(f" {c} |" for c in cells))
    return "\n".join(lines) + "\n"


def ndcg_table(results: pd.DataFrame, worlds, against: str = "lgb-position") -> str:
    """Markdown: per world, every method's test NDCG@10, mean over the seeds, and the seeds in
    which it is ahead of ``against``; where the gap is a few thousandths of NDCG@10 (a good
    logging ranker) its shares say little, these do."""
    methods = [m for m in dict.fromkeys(results["method"]) if m not in ("ceiling", against)]
    lines = ["| world | seeds | ceiling | " + " | ".join(methods) + f" | {against} |",
             "|---|---:|---:|" + "---:|" * (len(methods) + 1)]
    for world in worlds:
        part = results[results["world"] == world.name].pivot_table(index="seed", columns="method", values="ndcg@10")
        if part.empty:
            continue
        cells = [f"{part[m].mean():.4f} ({int((part[m] > part[against]).sum())})" for m in methods]
        lines.append(f"| {world.name} | {len(part)} | {part['ceiling'].mean():.4f} | " + " | ".join(cells)
                     + f" | {part[against].mean():.4f} |")
    return "\n".join(lines) + "\n"


def evaluate(models, test):
    import xgboost as xgb

    per_query = {}
    dtest = xgb.DMatrix(test.X)
    for name, model in models.items():
        pred = model.predict(dtest) if name.startswith("xgb") else model.predict(test.X)
        per_query[name] = ndcg(test.y, pred, test.group, k=10, per_query=True)
    return per_query


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="generated, mq2008, ohsumed (default: generated; all with --full)")
    parser.add_argument("--etas", nargs="+", type=float, default=None, help="default 1 (0.5 1 2 with --full)")
    parser.add_argument("--settings", nargs="+", default=None,
                        help="all-shown, top10, top10-policy (default all-shown; all with --full)")
    parser.add_argument("--sessions", type=int, default=50, help="sessions per training query")
    parser.add_argument("--logging-fraction", type=float, default=0.002,
                        help="share of the training queries the weak logging ranker is fitted on (at least one)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="boosting rounds (default 100; 50 with --worlds --quick)")
    parser.add_argument("--folds", nargs="+", type=int, default=[1], help="LETOR folds")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="default 0 (0 1 2 with --grid)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--full", action="store_true", help="every dataset, eta and setting")
    parser.add_argument("--out", type=Path, default=None, help="write results.csv, results.inc (a Markdown table), propensity.csv and propensity.png here")
    parser.add_argument("--clip", type=float, default=None, help="clip of every IPS method (default none)")
    parser.add_argument("--grid", action="store_true",
                        help="generated data, every document shown, eta 0.5 1 2 (or --etas), 50 and 200 sessions per "
                             "query (or --sessions-grid), seeds 0 1 2 (or --seeds): gap closed, mean and range over "
                             "the seeds, and training time of every method, side by side")
    parser.add_argument("--sessions-grid", nargs="+", type=int, default=[50, 200])
    parser.add_argument("--no-early-stopping", action="store_true",
                        help="--grid without the methods early-stopped on held-out clicks (pbm-*-es, lgb-position-es)")
    parser.add_argument("--propensity-sessions", nargs="+", type=int, default=None,
                        help="only measure the estimated propensities' error for these sessions per query "
                             "(--datasets and --folds, all shown, the first --etas)")
    parser.add_argument("--worlds", action="store_true",
                        help="the family of click worlds (WORLDS): each method's share of the naive-to-ceiling gap "
                             "per world, mean and range over --seeds (default 0 1 2), 1000 generated queries")
    parser.add_argument("--binary-worlds", action="store_true",
                        help="the binary world varied (BINARY_WORLDS): fit_clicks on the 0/1 clicks, the click-count "
                             "objectives compared, LightGBM's mode; as --worlds otherwise")
    parser.add_argument("--logger-worlds", action="store_true",
                        help="worlds logged by a better ranker (LOGGER_WORLDS), every method; as --worlds otherwise")
    parser.add_argument("--unshown-worlds", action="store_true",
                        help="worlds with rows never shown (UNSHOWN_WORLDS), weak and better logging rankers: "
                             "fit_clicks with and without never_shown, LightGBM's mode; as --worlds otherwise, with a "
                             "table of NDCG@10 below the shares")
    parser.add_argument("--cascade-worlds", action="store_true",
                        help="cascade clicks with and without abandonment (CASCADE_WORLDS): fit_clicks on the counts, "
                             "on the cascade targets and on the cascade targets with positions, LightGBM's mode; as "
                             "--worlds otherwise")
    parser.add_argument("--quick", action="store_true",
                        help="--worlds on small data: 300 queries, 50 rounds, early stopping within 100, seeds 0 1")
    parser.add_argument("--world-names", nargs="+", default=None, help="--worlds: only these worlds")
    parser.add_argument("--queries", type=int, default=None, help="--worlds: generated queries per world and seed")
    parser.add_argument("--letor", choices=("mq2008", "ohsumed"), default=None,
                        help="--worlds: that LETOR dataset's real features, labels and lists instead of generated "
                             "data, the seeds its folds (default 1 to 5)")
    parser.add_argument("--max-rounds", type=int, default=None,
                        help=f"--worlds: most rounds an early-stopped method may choose (default {MAX_ROUNDS}, "
                             "100 with --quick)")
    args = parser.parse_args(argv)
    if args.worlds or args.binary_worlds or args.logger_worlds or args.unshown_worlds or args.cascade_worlds:
        run_worlds(args)
        return
    args.rounds = args.rounds or 100
    if args.grid:
        args.seeds = args.seeds or [0, 1, 2]
        import os

        load_average = os.getloadavg()
        results = grid(args.etas or [0.5, 1.0, 2.0], args.sessions_grid, args.seeds,
                       rounds=args.rounds, threads=args.threads, logging_fraction=args.logging_fraction, clip=args.clip,
                       early_stopping=not args.no_early_stopping)
        table = grid_table(results)
        print(f"machine load (1, 5, 15 min) at the start: {load_average[0]:.2f} {load_average[1]:.2f} "
              f"{load_average[2]:.2f}; at the end: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
        print(table)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            results.to_csv(args.out / "grid.csv", index=False)
            (args.out / "grid.inc").write_text(table)
        return
    if args.propensity_sessions:
        study = propensity_study(args.datasets or ["generated"], args.folds, args.propensity_sessions, eta=(args.etas or [1.0])[0], rounds=args.rounds,
                                 seed=(args.seeds or [0])[0], threads=args.threads, logging_fraction=args.logging_fraction)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            study.to_csv(args.out / "propensity_sessions.csv", index=False)
        print(study.to_string(index=False))
        return
    datasets = args.datasets or (["generated", "mq2008", "ohsumed"] if args.full else ["generated"])
    etas = args.etas or ([0.5, 1.0, 2.0] if args.full else [1.0])
    settings = args.settings or (["all-shown", "top10", "top10-policy"] if args.full else ["all-shown"])

    rows, propensities = [], []
    for dataset in datasets:
        for fold in args.folds if dataset != "generated" else [1]:
            for seed in args.seeds or [0]:
                loaded = load(dataset, fold, seed)
                if loaded is None:
                    print(f"{dataset}: data not found, skipped")
                    break
                train, test = loaded
                for setting in settings:
                    for eta in etas:
                        start = time.perf_counter()
                        per_query, extra, log, _ = run_one(train, test, setting=setting, eta=eta, sessions=args.sessions,
                                                        rounds=args.rounds, seed=seed, threads=args.threads,
                                                        logging_fraction=args.logging_fraction, clip=args.clip)
                        key = f"{dataset}/{setting}/eta={eta:g}"
                        for method, values in per_query.items():
                            for q, v in enumerate(values):
                                rows.append({"dataset": key, "method": method, "fold": f"{fold}/{seed}",
                                             "query": q, "ndcg@10": float(v)})
                        for objective, estimate in extra.get("propensity", {}).items():
                            for p, (est, true) in enumerate(zip(estimate, log.theta), start=1):
                                propensities.append({"dataset": dataset, "objective": objective, "setting": setting,
                                                     "eta": eta, "fold": fold, "seed": seed, "position": p,
                                                     "estimated": est, "true": true})
                        means = {m: float(np.mean(v)) for m, v in per_query.items()}
                        print(f"{key} fold {fold} seed {seed} ({time.perf_counter() - start:.0f} s): "
                              + ", ".join(f"{m} {v:.4f}" for m, v in means.items()), flush=True)
    per_query = pd.DataFrame(rows)
    table = summarise(per_query)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False))
    prop = pd.DataFrame(propensities)
    if not prop.empty:
        err = prop[prop["position"] <= 10].assign(rel=lambda f: (f["estimated"] / f["true"] - 1).abs())
        print("largest relative error of the estimated propensity, positions 1-10:")
        print(err.groupby(["dataset", "objective", "setting", "eta"])["rel"].max().to_string())
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "results.csv", index=False)
        prop.to_csv(args.out / "propensity.csv", index=False)
        (args.out / "results.inc").write_text(markdown(table))
        if not prop.empty:
            plot_propensity(prop, args.out / "propensity.png")


def run_worlds(args) -> None:
    """``--worlds``: run the family, print the table and write results.csv and results.inc."""
    import os

    family, methods = WORLDS, None
    if args.binary_worlds:
        family, methods = BINARY_WORLDS, BINARY_WORLD_METHODS
    elif args.logger_worlds:
        family = LOGGER_WORLDS
    elif args.unshown_worlds:
        family, methods = UNSHOWN_WORLDS, UNSHOWN_WORLD_METHODS
    elif args.cascade_worlds:
        family, methods = CASCADE_WORLDS, CASCADE_WORLD_METHODS
    chosen = family
    if args.world_names:
        known = {w.name: w for w in family}
        unknown = [n for n in args.world_names if n not in known]
        if unknown:
            raise SystemExit(f"unknown worlds {unknown}; the family: {', '.join(known)}")
        chosen = [known[n] for n in args.world_names]
    quick = args.quick
    seeds = args.seeds or ([1, 2, 3, 4, 5] if args.letor else [0, 1] if quick else [0, 1, 2])
    load_average = os.getloadavg()
    start = time.perf_counter()
    results = worlds_grid(chosen, seeds, n_queries=args.queries or (300 if quick else 1000),
                          rounds=args.rounds or (50 if quick else 100),
                          max_rounds=args.max_rounds or (100 if quick else MAX_ROUNDS), threads=args.threads,
                          methods=methods, letor=args.letor)
    table = worlds_table(results, chosen, args.letor)
    if args.unshown_worlds or args.cascade_worlds:
        table += "\n" + ndcg_table(results, chosen)
    print(f"{time.perf_counter() - start:.0f} s; machine load (1, 5, 15 min) at the start: "
          + " ".join(f"{v:.2f}" for v in load_average) + "; at the end: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        results.to_csv(args.out / "results.csv", index=False)
        (args.out / "results.inc").write_text(table)


def summarise(per_query: pd.DataFrame) -> pd.DataFrame:
    """Mean NDCG@10, gap closed, and paired tests against naive and against LightGBM's mode."""
    means = per_query.groupby(["dataset", "method"], sort=False)["ndcg@10"].mean().unstack("method")
    means = means[[m for m in METHODS if m in means.columns]]
    against = {base: significance(per_query, baseline=base).set_index(["dataset", "method"])
               for base in ("naive", "lgb-position")}
    out = []
    for dataset, row in means.iterrows():
        gap = row["ceiling"] - row["naive"]
        for method, value in row.dropna().items():
            entry = {"dataset": dataset, "method": method, "ndcg@10": value,
                     "gap_closed": (value - row["naive"]) / gap if gap > 0 else np.nan}
            for base, tests in against.items():
                found = (dataset, method) in tests.index and method != base
                for test in ("t_pvalue", "wilcoxon_pvalue"):
                    entry[f"{test}_vs_{base}"] = float(tests.loc[(dataset, method), test]) if found else np.nan
            out.append(entry)
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame) -> str:
    def p(value):
        return "" if np.isnan(value) else f"{value:.2g}"

    lines = ["| data / setting / eta | method | NDCG@10 | gap closed | vs naive: t-test p | Wilcoxon p "
             "| vs lgb-position: t-test p | Wilcoxon p |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in table.to_dict("records"):
        gap = "" if np.isnan(r["gap_closed"]) else f"{100 * r['gap_closed']:.0f}%"
        lines.append(f"| {r['dataset']} | {r['method']} | {r['ndcg@10']:.4f} | {gap} "
                     f"| {p(r['t_pvalue_vs_naive'])} | {p(r['wilcoxon_pvalue_vs_naive'])} "
                     f"| {p(r['t_pvalue_vs_lgb-position'])} | {p(r['wilcoxon_pvalue_vs_lgb-position'])} |")
    return "\n".join(lines) + "\n"


def plot_propensity(prop: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = prop[prop["position"] <= 10]
    datasets = list(shown["dataset"].unique())
    objectives = list(shown["objective"].unique())
    fig, axes = plt.subplots(len(objectives), len(datasets), figsize=(4.2 * len(datasets), 3.6 * len(objectives)),
                             squeeze=False)
    for row, objective in zip(axes, objectives):
        for ax, dataset in zip(row, datasets):
            part = shown[(shown["dataset"] == dataset) & (shown["objective"] == objective)]
            for (setting, eta), g in part.groupby(["setting", "eta"]):
                mean = g.groupby("position")[["estimated", "true"]].mean()
                line, = ax.plot(mean.index, mean["true"], "-", alpha=0.6)
                ax.plot(mean.index, mean["estimated"], "o--", color=line.get_color(), label=f"{setting}, eta={eta:g}")
            ax.set_title(f"{dataset}, {objective}: estimated (dots) vs true (line)", fontsize=9)
            ax.set_xlabel("position")
            ax.set_ylabel("propensity (position 1 = 1)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
