"""NDCG_Boost on LETOR 3.0 OHSUMED: accuracy next to the paper, speed next to LightGBM.

Accuracy follows the paper's protocol (Valizadegan et al. 2009, section 4): each of the five
folds trains ``gbrank.NDCGBoost`` (decision stumps, 100 iterations) on ``train`` and scores
``test``; the validation split is not used. NDCG@1..10 is averaged over the folds (each
fold's value is the mean over its test queries) and printed next to the paper's value. The
paper's text gives NDCG@3 = 0.50 on OHSUMED ("a 4% increase ... compared to FRank"); the
other points of its figure 1 are only in the plot.

NDCG is reported under two conventions:

* ``gbrank``: gain ``2**l - 1``, discount ``1/log2(1 + r)``, tied scores in input order, a
  query without relevant document scores 1 (LightGBM's and XGBoost's conventions);
* ``LETOR``: the LETOR 3.0 evaluation script (``Eval-Score-3.0.pl``) that the LETOR
  baselines and, presumably, the paper used: the same gain, discount 1 at ranks 1 and 2 and
  ``1/log2(r)`` after, ties in input order, a query without relevant document scores 0.

Speed: the native learner's time per iteration against LightGBM trained with the
``gbrank.ndcg_boost()`` objective and ``num_leaves=2`` (stumps), each including its own data
preparation (pre-sorting, Dataset binning), measured alternately in one run on the same
threads; medians over folds and repeats. Target: native at most 3x LightGBM.

Run from the repository root::

    python benchmarks/ndcg_boost_ohsumed.py [--folds 1 2 3 4 5] [--repeats 3] [--seeds 5]

The data are read from ../shared/data (or ``GBRANK_DATA_DIR``); the script exits with a
message when they are absent.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from gbrank._data_dir import data_dir
from gbrank.datasets import load_letor_fold
from gbrank.metrics import ndcg
from gbrank.ndcg_boost_learner import NDCGBoost
from gbrank.objectives.ndcg_boost import ndcg_boost

PAPER_NDCG = {3: 0.50}
CUTOFFS = tuple(range(1, 11))
# Eval-Score-3.0.pl: DCG adds the gain unchanged at ranks 1 and 2, then gain * log(2) / log(r).
LETOR_DISCOUNT = np.array([1.0, 1.0] + [1.0 / np.log2(r) for r in range(3, 11)])


def ndcg_curve(y, scores, group, convention: str) -> np.ndarray:
    if convention == "letor":
        kw = {"discount": LETOR_DISCOUNT, "no_relevant": 0.0}
    else:
        kw = {}
    return np.array([ndcg(y, scores, group, k=k, **kw) for k in CUTOFFS])


def lightgbm_stumps(train, iterations: int, threads: int):
    import lightgbm as lgb

    params = {
        "objective": ndcg_boost(),
        "metric": "None",
        "num_leaves": 2,
        "learning_rate": 0.1,
        "num_threads": threads,
        "verbose": -1,
        "seed": 0,
        "deterministic": True,
    }
    dtrain = lgb.Dataset(train.X, train.y, group=train.group, params={"verbose": -1})
    return lgb.train(params, dtrain, num_boost_round=iterations)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats per fold")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the paper's sampling variant (0: skip)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

    root = data_dir()
    folder = None if root is None else root / "letor3_ohsumed" / "QueryLevelNorm"
    if folder is None or not folder.is_dir():
        print("OHSUMED not found (../shared/data/letor3_ohsumed/QueryLevelNorm or GBRANK_DATA_DIR); nothing to do.")
        return 0
    import numba

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    folds = {k: load_letor_fold(folder, k) for k in args.folds}
    T = args.iterations
    print(f"OHSUMED QueryLevelNorm, folds {args.folds}, {T} iterations, {args.threads} threads; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at start")

    # ---------------------------------------------------------------- accuracy
    results: dict[str, list[np.ndarray]] = {}
    per_query_at3: list[np.ndarray] = []
    stages_at3: list[np.ndarray] = []

    def add(name, value):
        results.setdefault(name, []).append(value)

    for k, (train, _, test) in folds.items():
        model = NDCGBoost(n_estimators=T).fit(train.X, train.y, group=train.group, eval_at=())
        scores = model.predict(test.X)
        for conv in ("gbrank", "letor"):
            add(f"native exact, {conv}", ndcg_curve(test.y, scores, test.group, conv))
        per_query_at3.append(ndcg(test.y, scores, test.group, k=3, discount=LETOR_DISCOUNT, no_relevant=0.0, per_query=True))
        stages_at3.append(np.array([
            ndcg(test.y, s, test.group, k=3, discount=LETOR_DISCOUNT, no_relevant=0.0) for s in model.staged_predict(test.X)
        ]))
        M = np.array(model.history_["M"])
        assert np.all(np.diff(M) <= 1e-12 * M[:-1]), "M increased"
        for seed in range(args.seeds):
            sampled = NDCGBoost(n_estimators=T, sample=True, random_state=seed).fit(train.X, train.y, group=train.group, eval_at=())
            add(f"native sampled s{seed}, letor", ndcg_curve(test.y, sampled.predict(test.X), test.group, "letor"))
        booster = lightgbm_stumps(train, T, args.threads)
        add("LightGBM+ndcg_boost stumps, letor", ndcg_curve(test.y, booster.predict(test.X), test.group, "letor"))
        print(f"  fold {k}: native NDCG@3 {results['native exact, letor'][-1][2]:.4f} (LETOR), "
              f"{results['native exact, gbrank'][-1][2]:.4f} (gbrank); M {model.initial_M_:.2f} -> {M[-1]:.2f}")

    table = {name: np.mean(values, axis=0) for name, values in results.items() if not name.startswith("native sampled s")}
    if args.seeds:
        seed_means = np.array([np.mean(results[f"native sampled s{s}, letor"], axis=0) for s in range(args.seeds)])
        table[f"native sampled (mean of {args.seeds} seeds), letor"] = seed_means.mean(axis=0)

    print("\nNDCG@k on the test folds, mean over folds")
    names = list(table)
    for i, n in enumerate(names):
        print(f"  [{i + 1}] {n}")
    print(f"{'k':>3} {'paper':>6} " + " ".join(f"{f'[{i + 1}]':>7}" for i in range(len(names))))
    for i, k in enumerate(CUTOFFS):
        paper = f"{PAPER_NDCG[k]:.2f}" if k in PAPER_NDCG else "-"
        print(f"{k:>3} {paper:>6} " + " ".join(f"{table[n][i]:>7.4f}" for n in names))

    qs = np.concatenate(per_query_at3)
    rng = np.random.default_rng(0)
    boot = [np.mean(qs[rng.integers(0, qs.size, qs.size)]) for _ in range(2000)]
    print(f"\nNDCG@3 (LETOR) over all {qs.size} test queries: {qs.mean():.4f}, bootstrap s.e. {np.std(boot):.4f}; "
          f"below the paper's 0.50 by {0.50 - table['native exact, letor'][2]:.4f} (LETOR), "
          f"{0.50 - table['native exact, gbrank'][2]:.4f} (gbrank)")
    if args.seeds > 1:
        spread = seed_means[:, 2]
        print(f"sampled variant NDCG@3 (LETOR) by seed: {np.round(spread, 4).tolist()} (sd {spread.std(ddof=1):.4f})")
    curve = np.mean(stages_at3, axis=0)
    marks = [t for t in (10, 25, 50, 75, 100, 150, 200) if t <= T]
    print("native exact NDCG@3 (LETOR) by iteration: " + ", ".join(f"{t}: {curve[t - 1]:.4f}" for t in marks))

    # ---------------------------------------------------------------- speed
    first = next(iter(folds.values())).train
    NDCGBoost(n_estimators=2).fit(first.X, first.y, group=first.group, eval_at=())
    lightgbm_stumps(first, 2, args.threads)
    native_times, lgb_times = [], []
    for _ in range(args.repeats):
        for train, _, _ in folds.values():
            t0 = time.perf_counter()
            NDCGBoost(n_estimators=T).fit(train.X, train.y, group=train.group, eval_at=())
            t1 = time.perf_counter()
            lightgbm_stumps(train, T, args.threads)
            t2 = time.perf_counter()
            native_times.append((t1 - t0) / T)
            lgb_times.append((t2 - t1) / T)
    native_ms = 1e3 * np.median(native_times)
    lgb_ms = 1e3 * np.median(lgb_times)
    print(f"\ntime per iteration (median of {len(native_times)} fits, data preparation included):")
    print(f"  native NDCGBoost          {native_ms:8.2f} ms")
    print(f"  LightGBM + ndcg_boost()   {lgb_ms:8.2f} ms  (num_leaves=2)")
    print(f"  ratio native / LightGBM   {native_ms / lgb_ms:8.2f}x  (target <= 3x)")
    print(f"load average at end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
