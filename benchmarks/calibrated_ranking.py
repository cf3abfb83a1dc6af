"""Calibrated ranking (RCR) and multi-label ranking: the evidence behind their docs pages.

Part 1, calibration. On MQ2008 and OHSUMED (Fold1, labels binarised: relevant when the grade
is at least 1) and on generated data whose clicks are drawn from a known probability of each
document's grade (NDCG@10 is then measured against the true grades), LightGBM trains,
with the same trees:

* ``rcr(a)``: ``gbrank.rcr(alpha=a)`` for each ``a`` of ``--alphas``;
* ``weighted(a)``: ``gbrank.weighted_logistic_softmax(alpha=a)``, the baseline, at the same ``a``;
* ``logistic``: LightGBM's pointwise ``binary`` objective;
* the ranking objectives ``lambdarank`` (LightGBM's) and ``softmax`` (the listwise term alone,
  ``gbrank.listnet(target="linear")``); the one with the higher validation NDCG@10 is
  the *best ranking objective*.

Early stopping (patience 20, at most 500 rounds, learning rate 0.1) watches the validation
log loss for the models read as probabilities (``rcr``, ``weighted``, and ``logistic`` with
LightGBM's own ``binary_logloss``: a built-in objective hands a ``feval`` probabilities) and
the validation NDCG@10 for the ranking objectives. On the test queries the table gives NDCG@10, log loss and ECE (10
bins) of ``sigmoid(score)`` against the binary labels, and on generated data the mean
absolute error against the true click probability. NDCG@10 is compared with the best ranking
objective's per test query: the mean difference, its 95% simultaneous interval (Student's t
at level 0.05/m for the m methods compared on the dataset, Bonferroni) and the Holm-adjusted
paired t-test p-value (``gbrank.bench.stats.holm``). ``--calibration-folds`` runs part 1 alone
on each LETOR fold given (generated data: seed ``fold - 1``): the targets per fold, the mean
over the folds, and the differences pooled over the folds' test queries. With ``--engine
xgboost`` it trains every model in XGBoost instead (``XGB_PARAMS``: depth 6, ``hist``;
``binary:logistic`` and ``rank:ndcg`` for the built-ins, the gbrank objectives from
``base_score = 0``), with the same data, early stopping and measures.

Part 2, two labels. Generated queries carry a graded relevance label and a second label
(a purchase-like signal that depends on other features). ``gbrank.lambdarank(gain="linear")``
is trained on both with weights ``w`` on the first label for each ``w`` of a grid, by
hand-mixing one label (``aggregate="label"``), by stochastic label aggregation and by gradient
aggregation, and with the constrained form at a grid of floors on the second label's NDCG@10.
Each model is a point (test NDCG@10 on label 1, on label 2); the figure shows each family's
points and Pareto front.

With ``--pareto-seeds``, only part 2, on data generated with each seed, at weights strictly
between 0 and 1 (at ``w = 0`` and ``w = 1`` the three aggregations train on one label and are
the same model, so no family can dominate the hand mix there): per seed and weight, each
family's NDCG@10 on both labels minus the hand mix's, how many hand-mixed points each
family's front dominates, and the gap between the fronts in each direction ``t`` of the
weights: the family's best ``t * NDCG1 + (1 - t) * NDCG2`` over its points minus the hand
mix's (the fronts' support functions; one front dominates the other's hull where its gap is
positive in every direction). Every family's front there includes the two models of one label
each (weights 1 and 0, the same model in every family), so that a family's gap towards an end
is not the hand mix's want of a point there. With the linear gain the hand mixes are the mixed
label (``"label"``) and the mix of the labels each divided by its maximum in the query
(``"label-max"``).

``--gain exp2`` measures NDCG@10 with the gain ``2^l - 1`` (the metrics' default) and trains
each label with ``gbrank.lambdarank()`` (the same gain) in stochastic, gradient and
constrained aggregation, against three hand mixes, each trained with
``gbrank.lambdarank(gain="linear")`` on a label made of ``w`` and the two labels: the mixed
label ``w l1 + (1 - w) l2`` (``aggregate="label"``), its exponential gain
``2^(w l1 + (1 - w) l2) - 1`` (``"label-exp"``) and the mix of the labels' gains
``w (2^l1 - 1) + (1 - w) (2^l2 - 1)`` (``"gain-mix"``, whose DCG is exactly the weighted sum
of the labels' DCGs). Every model then stops on the validation ``w NDCG1 + (1 - w) NDCG2``
(the constrained form on NDCG1). ``--purchase-intercept`` sets how sparse the second label
is (the intercept of its logit: -1 gives about 27% of the documents, -3 about 8%).
``--category-scale s`` makes half the queries a category whose second label is worth ``s``
times more (a margin; the category is a feature): NDCG, per label and query, does not see the
scale, a mixed label does.

    python benchmarks/calibrated_ranking.py                        # default: a few minutes on 2 cores
    python benchmarks/calibrated_ranking.py --out docs/benchmarks  # the docs' figures and tables
    python benchmarks/calibrated_ranking.py --calibration-folds 1 2 3 4 5   # part 1 on every LETOR fold
    python benchmarks/calibrated_ranking.py --calibration-folds 1 2 3 4 5 --engine xgboost   # the same in XGBoost
    python benchmarks/calibrated_ranking.py --pareto-seeds 1 2 3 4 5   # the front over seeds
    python benchmarks/calibrated_ranking.py --pareto-seeds 1 2 3 4 5 --gain exp2 --queries 2000 \
        --weights 9 --threads 1 [--purchase-intercept -3]    # exponential gain, per-label objectives
    python benchmarks/calibrated_ranking.py --pareto-seeds 6 7 8 9 10 --queries 2000 --weights 9 --threads 1 \
        --category-scale 10                                  # a label worth more in some queries
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

import gbrank
from gbrank._data_dir import data_dir
from gbrank.bench.stats import holm
from gbrank.datasets import RankingData, load_letor_fold, make_ranking, split_queries
from gbrank.datasets.clicks import click_probability
from gbrank.metrics import (
    expected_calibration_error,
    log_loss,
    ndcg,
    pareto_front,
    per_label_ndcg,
)

PARAMS = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20, "metric": "None", "verbosity": -1,
          "num_threads": 2, "deterministic": True, "force_row_wise": True, "seed": 0}
XGB_PARAMS = {"eta": 0.1, "max_depth": 6, "tree_method": "hist", "nthread": 2, "seed": 0,
              "disable_default_eval_metric": 1}
PATIENCE, MAX_ROUNDS = 20, 500


# --------------------------------------------------------------------------- data
def binarised(data: RankingData) -> RankingData:
    return RankingData(data.X, (data.y >= 1).astype(float), group=data.group)


def generated(seed: int, n_queries: int) -> tuple[tuple[RankingData, ...], tuple[np.ndarray, np.ndarray]]:
    """Train, validation and test queries with clicks drawn from a known probability; the
    test rows' relevance grades and true click probability."""
    data = make_ranking(n_queries=n_queries, docs_per_query=20, n_features=20, seed=seed)
    parts = split_queries(data, (0.6, 0.2, 0.2), seed=seed)
    rng = np.random.default_rng(seed)
    out, truth = [], None
    for part in parts:
        truth = click_probability(part.y, eps=0.05, max_label=4)
        out.append(RankingData(part.X, (rng.uniform(size=truth.size) < truth).astype(float), group=part.group))
    return tuple(out), (parts[-1].y, truth)


def datasets(names, n_queries: int, fold: int = 1):
    """Each dataset's train, validation and test parts: LETOR fold ``fold``, or generated data
    of seed ``fold - 1``."""
    root = data_dir()
    for name in names:
        if name == "generated":
            parts, truth = generated(fold - 1, n_queries)
            yield name, parts, truth
            continue
        folder = {"mq2008": "letor4_mq2008", "ohsumed": "letor3_ohsumed/QueryLevelNorm"}[name]
        if root is None or not (root / folder).is_dir():
            print(f"{name}: LETOR data not found (set GBRANK_DATA_DIR), skipped")
            continue
        parts = load_letor_fold(root / folder, fold)
        yield name, tuple(binarised(part) for part in parts), None


# --------------------------------------------------------------------------- training
def train(objective, train_set: RankingData, valid: RankingData, watch: str, engine: str = "lightgbm"):
    """One model, early-stopped on the validation ``watch`` (``"logloss"`` or ``"ndcg"``):
    the raw scores at the best round (a function of the features) and that round's number.
    ``objective`` is a gbrank objective, ``"binary"`` (the engine's logistic regression) or
    ``"lambdarank"`` (the engine's LambdaRank: LightGBM's, XGBoost's ``rank:ndcg``)."""
    metrics = gbrank.metrics.make_metrics(["logloss" if watch == "logloss" else "ndcg@10"])
    if engine == "xgboost":
        return _train_xgboost(objective, train_set, valid, metrics)
    import lightgbm as lgb

    params = {**PARAMS, "objective": objective}
    if objective == "binary":
        # a built-in objective hands its feval probabilities, not raw scores: its own log loss
        params["metric"], feval = "binary_logloss", None
    else:
        feval = metrics.lightgbm
    booster = lgb.train(
        params,
        lgb.Dataset(train_set.X, train_set.y, group=train_set.group),
        num_boost_round=MAX_ROUNDS,
        valid_sets=[lgb.Dataset(valid.X, valid.y, group=valid.group)],
        feval=feval,
        callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
    )
    best = booster.best_iteration
    return (lambda X: booster.predict(X, num_iteration=best, raw_score=True)), best


def _train_xgboost(objective, train_set: RankingData, valid: RankingData, metrics):
    import xgboost as xgb

    params, obj = dict(XGB_PARAMS), None
    custom_metric, stopping = metrics.xgboost, metrics.xgboost_early_stopping(PATIENCE)
    if objective == "binary":
        # XGBoost hands a custom metric probabilities under binary:logistic: its own log loss
        params.update(objective="binary:logistic", eval_metric="logloss", disable_default_eval_metric=0)
        custom_metric, stopping = None, xgb.callback.EarlyStopping(rounds=PATIENCE, metric_name="logloss", maximize=False)
    elif objective == "lambdarank":
        params["objective"] = "rank:ndcg"
    else:
        params["base_score"], obj = 0.0, objective
    booster = xgb.train(
        params,
        xgb.DMatrix(train_set.X, train_set.y, group=train_set.group),
        num_boost_round=MAX_ROUNDS,
        obj=obj,
        evals=[(xgb.DMatrix(valid.X, valid.y, group=valid.group), "valid")],
        custom_metric=custom_metric,
        callbacks=[stopping],
        verbose_eval=False,
    )
    last = booster.best_iteration + 1
    return (lambda X: booster.predict(xgb.DMatrix(X), iteration_range=(0, last), output_margin=True)), last


def calibration_part(names, alphas, n_queries: int, fold: int = 1,
                     engine: str = "lightgbm") -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Every method on each dataset's fold ``fold``: the table, the per-query comparisons with
    the best ranking objective, and each method's per-query NDCG@10 (``(dataset, method)``)."""
    rows, per_query = [], {}
    for dataset, (train_set, valid, test), truth in datasets(names, n_queries, fold):
        methods = {f"rcr({a:g})": (gbrank.rcr(alpha=a), "logloss") for a in alphas}
        methods.update({f"weighted({a:g})": (gbrank.weighted_logistic_softmax(alpha=a), "logloss") for a in alphas})
        methods.update({"logistic": ("binary", "logloss"), "lambdarank": ("lambdarank", "ndcg"),
                        "softmax": (gbrank.listnet(target="linear"), "ndcg")})
        valid_ndcg = {}
        for method, (objective, watch) in methods.items():
            started = time.perf_counter()
            predict, rounds = train(objective, train_set, valid, watch, engine)
            scores, valid_scores = predict(test.X), predict(valid.X)
            valid_ndcg[method] = ndcg(valid.y, valid_scores, valid.group, k=10)
            # generated data: ranked against the true grades, not the drawn clicks
            graded = test.y if truth is None else truth[0]
            per_query[(dataset, method)] = ndcg(graded, scores, test.group, k=10, per_query=True)
            row = {"dataset": dataset, "method": method, "ndcg@10": per_query[(dataset, method)].mean(),
                   "logloss": log_loss(test.y, scores), "ece": expected_calibration_error(test.y, scores),
                   "rounds": rounds, "seconds": time.perf_counter() - started}
            if truth is not None:
                row["mae_truth"] = float(np.abs(1 / (1 + np.exp(-scores)) - truth[1]).mean())
            rows.append(row)
            print(f"{dataset:10s} {method:14s} NDCG@10 {row['ndcg@10']:.4f} log loss {row['logloss']:.4f} "
                  f"ECE {row['ece']:.4f} rounds {row['rounds']}", flush=True)
        best = max(("lambdarank", "softmax"), key=valid_ndcg.get)
        for row in rows:
            if row["dataset"] == dataset:
                row["best_ranking"] = best
    table = pd.DataFrame(rows)
    return table, compare(table, per_query), per_query


def over_folds(names, alphas, n_queries: int, folds, engine: str = "lightgbm") -> list[str]:
    """Part 1 on each fold (generated data: one seed per fold): the targets per fold, and the
    NDCG@10 differences to each fold's best ranking objective pooled over the folds' test
    queries (every LETOR query is a test query of one fold)."""
    tables, pooled = [], {}
    for fold in folds:
        table, _, per_query = calibration_part(names, alphas, n_queries, fold, engine)
        tables.append(table.assign(fold=fold))
        for dataset, part in table.groupby("dataset", sort=False):
            best = part["best_ranking"].iloc[0]
            for method in [*part["method"], "best ranking"]:
                scores = per_query[(dataset, best if method == "best ranking" else method)]
                pooled.setdefault((dataset, method), []).append(scores)
    table = pd.concat(tables, ignore_index=True)
    lines = [("| dataset | fold | best ranking | alpha | RCR NDCG@10 - best ranking | within 0.005 | RCR log loss vs "
              "logistic | within 2% | beats the weighted baseline on one |"), "|---|---|---|---|---|---|---|---|---|"]
    for fold, part in table.groupby("fold"):
        for dataset, rows in part.groupby("dataset", sort=False):
            best = rows["best_ranking"].iloc[0]
            lines += [line.replace(f"| {dataset} |", f"| {dataset} | {fold} | {best} |", 1)
                      for line in targets(rows, alphas)]
    per_query = {key: np.concatenate(parts) for key, parts in pooled.items()}
    summary = table.groupby(["dataset", "method"], sort=False)[["ndcg@10", "logloss", "ece"]].mean().reset_index()
    summary["best_ranking"] = "best ranking"
    summary = summary[~summary["method"].isin(["lambdarank", "softmax"])]
    lines += ["", "Mean over the folds:", "", markdown(summary.drop(columns="best_ranking")), "",
              "NDCG@10 minus each fold's best ranking objective, per test query, pooled over the folds:", "",
              markdown(compare(summary, per_query))]
    return lines


def compare(table: pd.DataFrame, per_query: dict) -> pd.DataFrame:
    """Per dataset: each method's NDCG@10 minus the best ranking objective's, per test query."""
    out = []
    for dataset, part in table.groupby("dataset", sort=False):
        best = part["best_ranking"].iloc[0]
        others = [m for m in part["method"] if m != best]
        level = 0.05 / len(others)
        pvalues, found = [], []
        for method in others:
            d = per_query[(dataset, method)] - per_query[(dataset, best)]
            half = stats.t.ppf(1 - level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
            p = stats.ttest_1samp(d, 0.0).pvalue if np.any(d != 0) else 1.0
            found.append({"dataset": dataset, "method": method, "versus": best, "mean_difference": d.mean(),
                          "low": d.mean() - half, "high": d.mean() + half, "p": p})
            pvalues.append(p)
        for entry, adjusted in zip(found, holm(np.array(pvalues))):
            entry["p_holm"] = adjusted
        out += found
    return pd.DataFrame(out)


def targets(table: pd.DataFrame, alphas) -> list[str]:
    """The issue's targets, checked per dataset and alpha."""
    lines = []
    for dataset, part in table.groupby("dataset", sort=False):
        by = part.set_index("method")
        best = by.loc[by["best_ranking"].iloc[0]]
        for a in alphas:
            rcr, weighted = by.loc[f"rcr({a:g})"], by.loc[f"weighted({a:g})"]
            ndcg_ok = rcr["ndcg@10"] >= best["ndcg@10"] - 0.005
            loss_ok = rcr["logloss"] <= 1.02 * by.loc["logistic", "logloss"]
            beats = rcr["ndcg@10"] > weighted["ndcg@10"] or rcr["logloss"] < weighted["logloss"]
            lines.append(f"| {dataset} | {a:g} | {rcr['ndcg@10'] - best['ndcg@10']:+.4f} | {'yes' if ndcg_ok else 'no'} "
                         f"| {rcr['logloss'] / by.loc['logistic', 'logloss'] - 1:+.2%} | {'yes' if loss_ok else 'no'} "
                         f"| {'yes' if beats else 'no'} |")
    return lines


# --------------------------------------------------------------------------- two labels
def two_labels(seed: int, n_queries: int, intercept: float = -1.0, scale: float = 1.0):
    data = make_ranking(n_queries=n_queries, docs_per_query=20, n_features=20, seed=seed)
    rng = np.random.default_rng(seed + 1)
    # a purchase-like label from other features than most of the relevance, and from price
    logit = 1.5 * data.X[:, 5] - 1.0 * data.X[:, 0] + 0.5 * data.X[:, 6] + intercept
    second = (rng.uniform(size=data.y.size) < 1 / (1 + np.exp(-logit))).astype(float) * 2
    X = data.X
    if scale != 1.0:
        # half the queries are of a category whose purchases are worth `scale` times more
        # (a margin); the category is a feature, as a shop's model would have it
        category = np.repeat(rng.integers(0, 2, size=data.group.size), data.group).astype(float)
        second = second * np.where(category == 1, scale, 1.0)
        X = np.column_stack([X, category])
    labels = np.column_stack([data.y, second])
    # split the row indices, carried as the label, to take both label columns along
    parts = split_queries(RankingData(X, np.arange(data.y.size, dtype=float), group=data.group),
                          (0.6, 0.2, 0.2), seed=seed)
    return [(part.X, labels[part.y.astype(int)], part.group) for part in parts]


HAND_MIXES = ("label", "label-exp", "gain-mix")


def hand_mixed(labels: np.ndarray, w: float, mode: str) -> np.ndarray:
    """The single label of a hand mix (``--gain exp2``): the mixed label, its exponential
    gain, or the mix of the labels' exponential gains."""
    weights = np.array([w, 1 - w])
    if mode == "label":
        return labels @ weights
    if mode == "label-exp":
        return np.exp2(labels @ weights) - 1
    return (np.exp2(labels) - 1) @ weights


def scalarised_feval(labels: np.ndarray, group: np.ndarray, w: float, gain: str):
    """LightGBM ``feval``: ``w NDCG1 + (1 - w) NDCG2`` at 10 of the validation rows."""
    def feval(preds, _):
        first, second = per_label_ndcg(labels, preds, group, k=10, gain=gain)
        return "scalarised_ndcg@10", w * first + (1 - w) * second, True
    return feval


def per_query_max(labels: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Each label column divided by its maximum in the query (0 where that is 0)."""
    top = np.repeat(np.maximum.reduceat(labels, np.r_[0, np.cumsum(group)[:-1]], axis=0), group, axis=0)
    return np.divide(labels, top, out=np.zeros_like(labels), where=top > 0)


def pareto_part(n_queries: int, n_weights: int, seed: int = 1, weights=None, gain: str = "linear",
                intercept: float = -1.0, threads: int = 2, scale: float = 1.0, ends: bool = False,
                hands: tuple | None = None) -> pd.DataFrame:
    """Every family's models on one seed's data. ``ends``: also the two models of one label
    each (``"one-label"``, weights 1 and 0), the common ends of every family's front.
    ``hands``: the hand mixes (default: ``HAND_MIXES`` with ``gain="exp2"``, else the mixed
    label); with the linear gain, ``"label-max"`` mixes the labels each divided by its
    maximum in the query."""
    import lightgbm as lgb

    (X, labels, group), (Xv, lv, gv), (Xt, lt, gt) = two_labels(seed, n_queries, intercept, scale)
    weights = np.linspace(0.0, 1.0, n_weights) if weights is None else np.asarray(weights)
    if hands is None:
        hands = HAND_MIXES if gain == "exp2" else ("label",)
    runs = [(mode, w, {"aggregate": "label" if mode == "label-max" else mode, "weights": [w, 1 - w]})
            for mode in (*hands, "stochastic", "gradient") for w in weights]
    if ends:
        runs += [("one-label", w, {"aggregate": "gradient", "weights": [w, 1 - w]}) for w in (0.0, 1.0)]
    floors = np.linspace(0.5, 0.75, n_weights)
    runs += [("constrained", b, {"aggregate": "constrained", "floors": [b], "penalty": 20.0}) for b in floors]
    rows = []
    for mode, setting, kwargs in runs:
        w = kwargs.get("weights", [1.0, 0.0])[0]
        train_label = labels[:, 0]
        if gain == "linear":
            columns, valid = (per_query_max(labels, group), per_query_max(lv, gv)) if mode == "label-max" else (labels, lv)
            objective = gbrank.multi_label(gbrank.lambdarank(gain="linear"), columns, **kwargs)
            train_label = columns[:, 0]
            valid_label = valid @ np.array(kwargs.get("weights", [1.0, 0.0]))
            feval = gbrank.metrics.lightgbm_feval(["ndcg@10"], gain="linear")
        else:
            if mode in hands:
                train_label = hand_mixed(labels, w, mode)
                objective = gbrank.lambdarank(gain="linear")
            else:
                objective = gbrank.multi_label(gbrank.lambdarank(), labels, **kwargs)
            valid_label, feval = lv[:, 0], scalarised_feval(lv, gv, w, gain)
        booster = lgb.train(
            {**PARAMS, "num_threads": threads, "objective": objective},
            lgb.Dataset(X, train_label, group=group),
            num_boost_round=MAX_ROUNDS,
            valid_sets=[lgb.Dataset(Xv, valid_label, group=gv)],
            feval=feval,
            callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
        )
        scores = booster.predict(Xt, num_iteration=booster.best_iteration)
        first, second = per_label_ndcg(lt, scores, gt, k=10, gain=gain)
        rows.append({"seed": seed, "mode": mode, "setting": setting, "ndcg_label1": first, "ndcg_label2": second,
                     "rounds": booster.best_iteration})
        print(f"{mode:12s} {setting:.2f}  NDCG@10 label 1 {first:.4f}  label 2 {second:.4f}", flush=True)
    return pd.DataFrame(rows)


def over_seeds(seeds, n_queries: int, n_weights: int, gain: str = "linear", intercept: float = -1.0,
               threads: int = 2, scale: float = 1.0) -> tuple[list[str], pd.DataFrame]:
    """Part 2 on each seed's data at interior weights: the families' differences to each hand
    mix per weight (mean and range over seeds), the gaps between the fronts per direction and
    the dominance counts per seed (Markdown lines), and every model's point."""
    weights = np.linspace(0.0, 1.0, n_weights + 2)[1:-1]
    hands = HAND_MIXES if gain == "exp2" else ("label", "label-max")
    points = pd.concat([pareto_part(n_queries, n_weights, seed, weights, gain, intercept, threads, scale, ends=True,
                                    hands=hands) for seed in seeds], ignore_index=True)
    columns = ["ndcg_label1", "ndcg_label2"]
    lines = [("| family | hand mix | w | label 1 - hand mix: mean [min, max] | label 2 - hand mix: mean [min, max] | "
             "seeds better on both |"), "|---|---|---|---|---|---|"]
    for hand_mode in hands:
        hand = points[points["mode"] == hand_mode].set_index(["seed", "setting"])[columns]
        for mode in ("stochastic", "gradient"):  # the constrained form has floors, not weights
            own = points[points["mode"] == mode].set_index(["seed", "setting"])[columns]
            for w, part in (own - hand).reset_index().groupby("setting"):
                cells = [f"{part[c].mean():+.4f} [{part[c].min():+.4f}, {part[c].max():+.4f}]" for c in columns]
                both = int(((part["ndcg_label1"] > 0) & (part["ndcg_label2"] > 0)).sum())
                lines.append(f"| {mode} | {hand_mode} | {w:.2f} | {cells[0]} | {cells[1]} | {both} of {len(part)} |")
    lines += ["", "| family | hand mix | t | front gap: mean [min, max] | seeds ahead |", "|---|---|---|---|---|"]
    for hand_mode in hands:
        for mode in ("stochastic", "gradient", "constrained"):
            gaps = np.array([front_gaps(part, mode, hand_mode, weights) for _, part in points.groupby("seed")])
            for t, gap in zip(weights, gaps.T):
                lines.append(f"| {mode} | {hand_mode} | {t:.2f} | {gap.mean():+.4f} [{gap.min():+.4f}, "
                             f"{gap.max():+.4f}] | {int((gap > 0).sum())} of {gap.size} |")
    lines += ["", ("| seed | hand mix | family | front points | hand-mixed front points it dominates | its front points "
              "the hand-mixed front dominates |"), "|---|---|---|---|---|---|"]
    for seed, part in points.groupby("seed"):
        for hand_mode in hands:
            lines += [f"| {seed} | {hand_mode} " + line for line in dominance(part, hand_mode)]
    return lines, points


def family_points(points: pd.DataFrame, mode: str) -> np.ndarray:
    """The family's (NDCG1, NDCG2) points with the one-label models, where trained: the ends
    of every family's front."""
    return points[points["mode"].isin([mode, "one-label"])][["ndcg_label1", "ndcg_label2"]].to_numpy()


def front_gaps(points: pd.DataFrame, mode: str, hand_mode: str, directions) -> np.ndarray:
    """In each direction t, the best ``t * NDCG1 + (1 - t) * NDCG2`` of the family's points
    minus the hand mix's (:func:`family_points`)."""
    t = np.asarray(directions)[:, None]

    def support(name: str) -> np.ndarray:
        p = family_points(points, name)
        return (t * p[:, 0] + (1 - t) * p[:, 1]).max(axis=1)

    return support(mode) - support(hand_mode)


def dominance(points: pd.DataFrame, hand_mode: str = "label") -> list[str]:
    """For each aggregation, how many of the hand mix's front points one of its points
    dominates, and how many of its own front's points the hand-mixed front dominates."""
    hand = points[points["mode"] == hand_mode][["ndcg_label1", "ndcg_label2"]].to_numpy()
    hand = hand[pareto_front(hand)]
    lines = []
    for mode in ("stochastic", "gradient", "constrained"):
        own = points[points["mode"] == mode][["ndcg_label1", "ndcg_label2"]].to_numpy()
        own = own[pareto_front(own)]
        covered = sum(any((o >= h).all() and (o > h).any() for o in own) for h in hand)
        beaten = sum(any((h >= o).all() and (h > o).any() for h in hand) for o in own)
        lines.append(f"| {mode} | {len(own)} | {covered} of {len(hand)} | {beaten} |")
    return lines


# --------------------------------------------------------------------------- report
def markdown(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame``, numbers to 4 decimals."""
    def cell(value) -> str:
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["generated", "mq2008", "ohsumed"])
    parser.add_argument("--alphas", nargs="+", type=float, default=[0.5])
    parser.add_argument("--queries", type=int, default=300, help="generated queries (each 20 documents)")
    parser.add_argument("--weights", type=int, default=4, help="points per family on the Pareto figure")
    parser.add_argument("--out", type=Path, help="directory for the tables, figures and report")
    parser.add_argument("--calibration-folds", nargs="+", type=int,
                        help="only the calibration part, on these LETOR folds (generated data: seed fold - 1)")
    parser.add_argument("--pareto-seeds", nargs="+", type=int,
                        help="only the two-label part, over these seeds, at interior weights (module notes)")
    parser.add_argument("--gain", choices=("linear", "exp2"), default="linear",
                        help="with --pareto-seeds: the NDCG gain measured and trained per label (module notes)")
    parser.add_argument("--purchase-intercept", type=float, default=-1.0,
                        help="with --pareto-seeds: intercept of the second label's logit (lower: sparser)")
    parser.add_argument("--category-scale", type=float, default=1.0,
                        help="with --pareto-seeds: the second label's worth in half the queries (a category)")
    parser.add_argument("--threads", type=int, default=2, help="LightGBM threads of the two-label models")
    parser.add_argument("--engine", choices=("lightgbm", "xgboost"), default="lightgbm",
                        help="with --calibration-folds: the engine every model of the calibration part trains in")
    args = parser.parse_args(argv)
    if args.engine != "lightgbm" and not args.calibration_folds:
        parser.error("--engine is for --calibration-folds; the default run's tables and figures are LightGBM's")
    if not args.pareto_seeds and (args.gain != "linear" or args.purchase_intercept != -1.0
                                  or args.category_scale != 1.0):
        parser.error("--gain, --purchase-intercept and --category-scale are for --pareto-seeds; the default run's part 2 is the "
                     "figure's, with the linear gain")
    if args.pareto_seeds:
        started = time.perf_counter()
        lines, points = over_seeds(args.pareto_seeds, args.queries, args.weights, args.gain,
                                   args.purchase_intercept, args.threads, args.category_scale)
        print("\n".join(lines))
        print(f"\n{time.perf_counter() - started:.0f} s")
        if args.out is not None:
            stem = f"multi-label-seeds-{args.gain}-intercept{args.purchase_intercept:g}-scale{args.category_scale:g}"
            args.out.mkdir(parents=True, exist_ok=True)
            points.to_csv(args.out / f"{stem}.csv", index=False)
            first = points[points["seed"] == args.pareto_seeds[0]]
            title = f"seed {args.pareto_seeds[0]}"
            if args.category_scale != 1.0:
                title += f", label 2 worth {args.category_scale:g} times more in half the queries"
            pareto_figure(first, args.out / f"{stem}.png", title=title)
        return

    if args.calibration_folds:
        started = time.perf_counter()
        print("\n".join(over_folds(args.datasets, args.alphas, args.queries, args.calibration_folds, args.engine)))
        print(f"\n{time.perf_counter() - started:.0f} s")
        return
    table, differences, _ = calibration_part(args.datasets, args.alphas, args.queries)
    points = pareto_part(args.queries, args.weights, threads=args.threads)
    report = ["## Calibration", "", markdown(table), "",
              ("NDCG@10 minus the best ranking objective's, per test query (95% simultaneous intervals, "
              "Holm-adjusted paired t-tests):"), "", markdown(differences), "",
              ("| dataset | alpha | RCR NDCG@10 - best ranking | within 0.005 | RCR log loss vs logistic | within 2% "
              "| beats the weighted baseline on one |"), "|---|---|---|---|---|---|---|",
              *targets(table, args.alphas), "", "## Two labels", "", markdown(points), "",
              ("| family | front points | hand-mixed front points it dominates | its front points the hand-mixed "
              "front dominates |"), "|---|---|---|---|", *dominance(points)]
    print("\n".join(report))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "calibrated.csv", index=False)
        differences.to_csv(args.out / "calibrated-ndcg-differences.csv", index=False)
        points.to_csv(args.out / "multi-label-pareto.csv", index=False)
        (args.out / "calibrated-report.md").write_text("\n".join(report) + "\n")
        pareto_figure(points, args.out / "multi-label-pareto.png")
        figure_calibration(table, differences, args.out / "calibrated.png")


def pareto_figure(points: pd.DataFrame, path: Path, title: str | None = None) -> None:
    """Each family's points and Pareto front (:func:`family_points`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fronts = {name: family_points(points, name) for name in points["mode"].unique() if name != "one-label"}
    names = {"label": "hand-mixed label", "label-max": "hand-mixed, each label / its query maximum",
             "label-exp": "hand-mixed, exponential gain", "gain-mix": "hand-mixed gains",
             "stochastic": "stochastic label aggregation", "gradient": "gradient aggregation",
             "constrained": "constrained (floors on label 2)"}
    ax = gbrank.metrics.pareto_plot({names[k]: v for k, v in fronts.items()},
                                    axis_labels=("test NDCG@10, label 1 (relevance)",
                                                 "test NDCG@10, label 2 (purchase)"))
    if title:
        ax.set_title(title)
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=110)
    plt.close(ax.figure)


def figure_calibration(table: pd.DataFrame, differences: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets_ = list(dict.fromkeys(table["dataset"]))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for i, dataset in enumerate(datasets_):
        part = differences[differences["dataset"] == dataset]
        y = np.arange(len(part)) + 0.25 * i
        axes[0].errorbar(part["mean_difference"], y, xerr=[part["mean_difference"] - part["low"],
                                                         part["high"] - part["mean_difference"]],
                         fmt="o", label=dataset, capsize=2)
        axes[0].set_yticks(np.arange(len(part)) + 0.25)
        axes[0].set_yticklabels(part["method"])
    axes[0].axvline(0, color="0.6", linestyle=":")
    axes[0].set_xlabel("test NDCG@10 minus the best ranking objective")
    axes[0].legend(fontsize="small")
    for ax, column, title in ((axes[1], "logloss", "test log loss"), (axes[2], "ece", "test ECE (10 bins)")):
        pivot = table.pivot(index="method", columns="dataset", values=column).reindex(
            list(dict.fromkeys(table["method"])))[datasets_]
        pivot.plot.barh(ax=ax, legend=column == "ece")
        ax.set_xlabel(title)
        ax.set_ylabel("")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
