"""How far to trust an estimated propensity: its curve, its bootstrap interval, its identification.

Three studies on simulated position-based clicks, the figures of the section "How far to
trust the estimate" of the docs' page on learning from clicks:

* ``curves``: the error of the estimate with each ``propensity_model`` (``free``,
  ``monotone``, ``power``) and the test NDCG@10 of the model trained with it. Generated data
  (300 training and 150 test queries, gamma-distributed list lengths around 20, 1 to about
  70 documents), the weak logging ranker of ``gbrank.datasets.simulate_clicks``; the clicks
  are drawn from the position-based model at its display positions with a chosen curve
  theta_p: ``p^-0.5``, ``p^-1``, ``p^-2`` (the simulator's family) and ``0.15+0.85/p`` (one
  no power law fits); every document shown, or the top 10; 20 or 100 sessions per query;
  seeds 0, 1, 2. The error is the mean absolute log error over the positions shown (a
  position without an estimate taking the value above it, as the objectives do), of the
  estimate from the true relevance (``oracle``: what the curve alone does) and of the
  estimate a LightGBM training ends with (100 rounds, 15 leaves, learning rate 0.1), for
  ``pbm_listnet`` and ``ips_listnet``.
* ``identification``: the cross-fitted share of the positions' within-query variation the
  features predict (``gbrank.objectives.propensity_trust.position_predictability``) against
  the error over positions 1-10 of the estimate after training, for logging rankers from a
  function of the features (the logging rank kept as a feature; the rank of a feature
  unrelated to relevance; the weak ranker) to ones with ever more noise the features do
  not carry.
* ``coverage``: how often the 90% bootstrap interval over queries holds the true
  propensity, positions 2-10, over 40 simulated logs, with the scores held at the true log
  relevance (the interval measures sampling error only).

    python benchmarks/bench_propensity_trust.py --out docs/clicks/trust
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.metrics import ndcg
from gbrank.objectives.propensity import estimate_propensity
from gbrank.objectives.propensity_models import PROPENSITY_MODELS
from gbrank.objectives.propensity_trust import (
    position_predictability,
    propensity_interval,
)

CURVES = {
    "p^-0.5": lambda p: p ** -0.5,
    "p^-1": lambda p: 1.0 / p,
    "p^-2": lambda p: p ** -2.0,
    "0.15+0.85/p": lambda p: 0.15 + 0.85 / p,
}
PARAMS = {"learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1, "num_threads": 1}


def filled(estimate: np.ndarray) -> np.ndarray:
    """The estimate a user would apply: a position without a value takes the one above it."""
    out = estimate.copy()
    above = 1.0
    for i in range(out.size):
        if np.isnan(out[i]):
            out[i] = above
        above = out[i]
    return np.maximum(out, 1e-6)


def log_error(estimate, theta, positions) -> float:
    return float(np.mean(np.abs(np.log(filled(estimate)[positions - 1]) - np.log(theta[positions - 1]))))


def train(objective, X, clicks, group, position):
    import lightgbm as lgb

    dtrain = lgb.Dataset(X, clicks, group=group)
    booster = lgb.train({**PARAMS, "objective": gbrank.engines.with_position(objective, position)}, dtrain, 100)
    return booster, objective.binding(dtrain).propensity_


def curves(seeds) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        data = make_ranking(450, 20, 20, seed=seed)
        n_train = int(data.group[:300].sum())
        X, y, group = data.X[:n_train], data.y[:n_train], data.group[:300]
        offsets = np.concatenate(([0], np.cumsum(group)))
        for shown in ("all", "top 10"):
            top_k = int(group.max()) if shown == "all" else 10
            # positions and relevance from the simulator; the clicks drawn below with each curve
            log = simulate_clicks(y, group, X=X, sessions_per_query=1, top_k=top_k, eta=0.0, seed=seed)
            position = log.position
            positions = np.unique(position[position > 0])
            for curve, theta_of in CURVES.items():
                theta = theta_of(np.arange(1, top_k + 1, dtype=np.float64))
                for sessions in (20, 100):
                    rng = np.random.default_rng(1000 + seed)
                    rate = np.where(position > 0, theta[np.maximum(position, 1) - 1] * log.relevance, 0.0)
                    clicks = rng.binomial(sessions, rate).astype(np.float64)
                    for model in PROPENSITY_MODELS:
                        oracle = estimate_propensity(np.log(log.relevance), clicks, position, offsets, top_k,
                                                     model=model)
                        row = {"seed": seed, "shown": shown, "curve": curve, "sessions": sessions, "model": model,
                               "oracle_error": log_error(oracle, theta, positions)}
                        for name in ("pbm_listnet", "ips_listnet"):
                            booster, estimate = train(getattr(gbrank, name)(propensity_model=model), X, clicks,
                                                      group, position)
                            row[f"{name}_error"] = log_error(estimate, theta, positions)
                            row[f"{name}_ndcg10"] = float(ndcg(data.y[n_train:], booster.predict(data.X[n_train:]),
                                                               data.group[300:], k=10))
                        rows.append(row)
                        print(row, flush=True)
    return pd.DataFrame(rows)


def identification(seeds) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        data = make_ranking(300, 20, 20, seed=seed)
        weak = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=1, seed=seed).logging_scores
        weak = weak / weak.std()
        noise = np.random.default_rng(seed).normal(size=weak.size)
        # the last feature is pure noise in make_ranking's data: a logging order unrelated to relevance
        loggers = {"the logging rank as a feature": weak, "the rank of an irrelevant feature": data.X[:, -1],
                   "the weak ranker": weak}
        loggers.update({f"the weak ranker + noise, sd {sd:g}": weak + sd * noise for sd in (0.3, 0.5, 1.0, 2.0)})
        for top_k in (10, int(data.group.max())):
            for logger, scores in loggers.items():
                log = simulate_clicks(data.y, data.group, scores, sessions_per_query=100, top_k=top_k, eta=1.0,
                                      seed=seed)
                X = data.X
                if logger == "the logging rank as a feature":
                    X = np.column_stack([data.X, np.where(log.position > 0, log.position, top_k + 1)])
                row = {"seed": seed, "shown": "top 10" if top_k == 10 else "all", "logger": logger,
                       "predictability": position_predictability(X, log.position, data.group)}
                for name in ("pbm_listnet", "ips_listnet"):
                    _, estimate = train(getattr(gbrank, name)(), X, log.clicks.astype(np.float64), data.group,
                                        log.position)
                    row[f"{name}_error_1_10"] = log_error(estimate[:10], log.theta[:10], np.arange(1, 11))
                rows.append(row)
                print(row, flush=True)
    return pd.DataFrame(rows)


def coverage(n_logs: int) -> pd.DataFrame:
    data = make_ranking(200, (10, 10), 6, seed=5)
    rows = []
    for model in PROPENSITY_MODELS:
        hits, widths = [], []
        start = time.perf_counter()
        for rep in range(n_logs):
            log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, eta=1.0, seed=rep)
            interval = propensity_interval(np.log(log.relevance), log.clicks, log.position, data.group, n_boot=200,
                                           propensity_model=model, seed=rep)
            hits.append((interval.lower[1:] <= log.theta[1:]) & (log.theta[1:] <= interval.upper[1:]))
            widths.append(np.mean(interval.relative_width[1:]))
        rows.append({"model": model, "coverage": float(np.mean(hits)), "relative_width": float(np.mean(widths)),
                     "seconds_per_interval": (time.perf_counter() - start) / n_logs})
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (numbers as pandas prints them)."""
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * frame.shape[1]]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", nargs="+", default=["curves", "identification", "coverage"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--logs", type=int, default=40, help="simulated logs of the coverage study")
    parser.add_argument("--out", type=Path, default=None, help="folder for the CSV tables and the Markdown ones (.inc)")
    args = parser.parse_args(argv)
    tables = {}
    if "curves" in args.studies:
        raw = curves(args.seeds)
        columns = ["oracle_error", "pbm_listnet_error", "ips_listnet_error", "pbm_listnet_ndcg10", "ips_listnet_ndcg10"]
        tables["curves"] = raw.groupby(["shown", "curve", "sessions", "model"], sort=False)[columns].mean().round(3)
        tables["curves_raw"] = raw
    if "identification" in args.studies:
        raw = identification(args.seeds[:2])
        tables["identification"] = raw.groupby(["shown", "logger"], sort=False).agg(
            predictability=("predictability", "mean"), pbm_error_1_10=("pbm_listnet_error_1_10", "mean"),
            ips_error_1_10=("ips_listnet_error_1_10", "mean")).round(3)
        tables["identification_raw"] = raw
    if "coverage" in args.studies:
        tables["coverage"] = coverage(args.logs).set_index("model").round(3)
    for name, table in tables.items():
        if not name.endswith("_raw"):
            print(f"\n{name}\n{table.to_string()}")
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            table.to_csv(args.out / f"{name}.csv")
            if not name.endswith("_raw"):
                (args.out / f"{name}.inc").write_text(markdown(table.reset_index()))


if __name__ == "__main__":
    main()
