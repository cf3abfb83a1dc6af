"""Where intervention harvesting, cascade targets and the affine correction help, and where not.

Generated data (make_ranking: 1,000 queries of 30 documents, 40 features, a 70/30 query split), a
weak logging ranker (ridge regression on 5% of the training queries), the top 10 of each
list shown, clicks simulated on the training queries; every method is gbrank.ips_listnet
trained with LightGBM on the shown rows (100 rounds, 15 leaves, learning rate 0.1) and
scored by NDCG@10 on the test queries' true labels. "gap" is the share of the
naive-to-ceiling gap closed, (m - naive) / (ceiling - naive), with the ceiling the same loss
on the true click probabilities of every training document and naive the same loss on the
raw clicks. Three worlds:

- pbm: position-based clicks, theta_p = 1/p; propensities "estimate" (the objective's own,
  one deterministic ranker) against harvest_propensity over three loggers (different weak
  rankers, each with its own sessions) and the true theta; the training log is the first
  logger's.
- cascade: the user stops at the first click; the PBM correction ("estimate") against
  cascade_targets (continuation 0) on the same sessions, unclipped and with clip=0.2.
- trust: theta_p = 1/p, eps_plus = 1, eps_minus = 0.65/p (users trust the top; Agarwal et
  al., WWW 2019); IPS with the true theta against affine_targets with the true theta and eps.

    python benchmarks/bench_click_corrections.py
    python benchmarks/bench_click_corrections.py --seeds 0 1 2 3 4 --sessions 50
"""

from __future__ import annotations

import argparse
import time

import lightgbm as lgb
import numpy as np

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks, split_queries
from gbrank.metrics import ndcg

PARAMS = {"learning_rate": 0.1, "num_leaves": 15, "verbose": -1, "num_threads": 1, "seed": 0, "min_data_in_leaf": 20}
TOP_K = 10
# the logging ranker's share of the training queries: one query, as in bench_clicks.py
LOGGING = 0.001
# the examination rate cascade-clip's targets floor at
CASCADE_CLIP = 0.2
ROUNDS = 100


def shown_rows(data, keep):
    """Features, row ids and group sizes of the rows with ``keep`` (queries left empty dropped)."""
    running = np.concatenate(([0], np.cumsum(keep)))
    sizes = running[data.offsets[1:]] - running[data.offsets[:-1]]
    return data.X[keep], np.flatnonzero(keep), sizes[sizes > 0]


def train(X, y, group, objective, position=None):
    obj = objective if position is None else gbrank.engines.with_position(objective, position)
    dtrain = lgb.Dataset(X, y, group=group)
    booster = lgb.train({**PARAMS, "objective": obj}, dtrain, num_boost_round=ROUNDS)
    return booster, dtrain


def score(booster, test):
    return ndcg(test.y, booster.predict(test.X), test.group, k=10)


def pbm_world(tr, te, sessions, seed):
    logs = [simulate_clicks(tr.y, tr.group, X=tr.X, sessions_per_query=sessions, top_k=TOP_K,
                            logging_fraction=LOGGING, seed=seed * 10 + i)
            for i in range(3)]
    log = logs[0]
    rows = np.arange(tr.y.size)
    theta_h = gbrank.harvest_propensity(np.tile(tr.qid, 3), np.tile(rows, 3),
                                        np.concatenate([g.position for g in logs]),
                                        np.concatenate([g.clicks for g in logs]), impressions=sessions)
    X, keep, group = shown_rows(tr, log.position > 0)
    out = {"naive": score(train(X, log.clicks[keep], group, gbrank.ips_listnet(propensity=None))[0], te)}
    obj = gbrank.ips_listnet()
    booster, dtrain = train(X, log.clicks[keep], group, obj, log.position[keep])
    out["estimate"] = score(booster, te)
    theta_e = obj.binding(dtrain).propensity_
    out["harvest"] = score(train(X, log.clicks[keep], group, gbrank.ips_listnet(propensity=theta_h),
                                 log.position[keep])[0], te)
    out["known"] = score(train(X, log.clicks[keep], group, gbrank.ips_listnet(propensity=log.theta),
                               log.position[keep])[0], te)
    errors = {"estimate": np.max(np.abs(theta_e[:TOP_K] / log.theta - 1)),
              "harvest": np.max(np.abs(theta_h[:TOP_K] / log.theta - 1))}
    return out, errors


def cascade_world(tr, te, sessions, seed):
    log = simulate_clicks(tr.y, tr.group, X=tr.X, sessions_per_query=sessions, top_k=TOP_K, click_model="cascade",
                          logging_fraction=LOGGING, per_session=True, seed=seed)
    X, keep, group = shown_rows(tr, log.position > 0)
    out = {"naive": score(train(X, log.clicks[keep], group, gbrank.ips_listnet(propensity=None))[0], te)}
    out["estimate"] = score(train(X, log.clicks[keep], group, gbrank.ips_listnet(), log.position[keep])[0], te)
    targets = gbrank.cascade_targets(log.session_rows, log.session_clicks, tr.y.size)
    Xc, yc, gc = targets.training_set(tr.X, tr.group)
    out["cascade"] = score(train(Xc, yc, gc, gbrank.ips_listnet(propensity=None))[0], te)
    clipped = gbrank.cascade_targets(log.session_rows, log.session_clicks, tr.y.size, clip=CASCADE_CLIP)
    Xc, yc, gc = clipped.training_set(tr.X, tr.group)
    out["cascade-clip"] = score(train(Xc, yc, gc, gbrank.ips_listnet(propensity=None))[0], te)
    return out, {}


def trust_world(tr, te, sessions, seed):
    log = simulate_clicks(tr.y, tr.group, X=tr.X, sessions_per_query=1, top_k=TOP_K,
                          logging_fraction=LOGGING, seed=seed)
    rng = np.random.default_rng(seed + 1000)
    theta = 1.0 / np.arange(1, TOP_K + 1)
    eps_minus = 0.65 / np.arange(1, TOP_K + 1)
    gamma = (2.0 ** tr.y - 1) / (2.0 ** tr.y.max() - 1)
    seen = log.position > 0
    at = log.position[seen] - 1
    p = np.zeros(tr.y.size)
    p[seen] = theta[at] * (gamma[seen] + eps_minus[at] * (1 - gamma[seen]))
    clicks = rng.binomial(np.where(seen, sessions, 0), p).astype(float)
    X, keep, group = shown_rows(tr, seen)
    out = {"naive": score(train(X, clicks[keep], group, gbrank.ips_listnet(propensity=None))[0], te)}
    out["ips-known"] = score(train(X, clicks[keep], group, gbrank.ips_listnet(propensity=theta),
                                   log.position[keep])[0], te)
    target = gbrank.affine_targets(clicks, log.position, tr.group, theta=theta, eps_plus=1.0, eps_minus=eps_minus,
                                   impressions=sessions)
    out["affine"] = score(train(X, target[keep], group, gbrank.ips_listnet(propensity=None))[0], te)
    return out, {}


def ceiling(tr, te, eps):
    relevance = gbrank.datasets.click_probability(tr.y, eps=eps)
    return score(train(tr.X, relevance, tr.group, gbrank.ips_listnet(propensity=None))[0], te)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sessions", type=int, default=100, help="sessions per training query")
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args(argv)
    worlds = {"pbm": (pbm_world, 0.1), "cascade": (cascade_world, 0.1), "trust": (trust_world, 0.0)}
    started = time.perf_counter()
    for name, (world, eps) in worlds.items():
        gaps, raw, errs = {}, {}, {}
        for seed in args.seeds:
            data = make_ranking(n_queries=args.queries, docs_per_query=(30, 30), n_features=40, noise=1.0, seed=seed)
            tr, te = split_queries(data, (0.7, 0.3), seed=seed)
            top = ceiling(tr, te, eps)
            out, err = world(tr, te, args.sessions, seed)
            for method, value in out.items():
                raw.setdefault(method, []).append(value)
                gaps.setdefault(method, []).append((value - out["naive"]) / (top - out["naive"]))
            raw.setdefault("ceiling", []).append(top)
            for method, value in err.items():
                errs.setdefault(method, []).append(value)
        print(f"\n{name}: NDCG@10 (mean over seeds {args.seeds}) and the share of the naive-to-ceiling gap closed "
              "(mean, min..max)")
        for method, values in raw.items():
            gap = gaps.get(method)
            text = "" if gap is None or method == "naive" else \
                f"  gap {np.mean(gap):6.0%} ({min(gap):.0%}..{max(gap):.0%})"
            print(f"  {method:12s} {np.mean(values):.4f}{text}")
        for method, values in errs.items():
            print(f"  largest relative error of theta_1..{TOP_K}, {method}: {np.mean(values):.1%} "
                  f"({min(values):.1%}..{max(values):.1%})")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
