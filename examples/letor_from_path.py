"""Train on a LETOR dataset read from disk (MQ2008, OHSUMED, ... in the Fold1..Fold5 layout).

    python examples/letor_from_path.py [DATASET_DIR] [--fold N]

DATASET_DIR holds ``Fold1`` ... ``Fold5`` with ``train``/``vali``/``test`` files (``.txt`` or
``.txt.gz``). By default the MQ2008 copy in ``../shared/data`` next to the checkout (or under
``$GBRANK_DATA_DIR``) is used; without it the script says so and exits.
"""

import argparse
import os
import sys
from pathlib import Path

import lightgbm as lgb

import gbrank
from gbrank._data_dir import data_dir
from gbrank.datasets import load_letor_fold


def default_path():
    root = data_dir()
    return None if root is None else root / "letor4_mq2008"


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("path", nargs="?", type=Path, default=default_path(), help="dataset directory holding Fold1..Fold5")
parser.add_argument("--fold", type=int, default=1, help="fold number (default 1)")
args = parser.parse_args()
if args.path is None or not args.path.is_dir():
    where = os.environ.get("GBRANK_DATA_DIR")
    looked = args.path or (f"GBRANK_DATA_DIR={where} is not a directory" if where else "no ../shared/data")
    print(f"LETOR data not found ({looked}); pass a dataset directory.")
    sys.exit(0)

train, vali, test = load_letor_fold(args.path, args.fold)
print(f"{args.path.name} Fold{args.fold}: {train.n_queries} train, {vali.n_queries} vali, {test.n_queries} test queries")

dtrain = lgb.Dataset(train.X, train.y, group=train.group)
dvali = lgb.Dataset(vali.X, vali.y, group=vali.group, reference=dtrain)
params = {"learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 50, "metric": "None", "verbose": -1}

for name, objective in [("listmle_topk(k=10)", gbrank.listmle_topk(k=10)), ("lambdarank", "lambdarank")]:
    booster = lgb.train(
        {**params, "objective": objective},
        dtrain,
        num_boost_round=500,
        valid_sets=[dvali],
        feval=gbrank.metrics.lightgbm_feval("ndcg@10"),
        callbacks=[lgb.early_stopping(50, verbose=False)],
    )
    scores = booster.predict(test.X, num_iteration=booster.best_iteration)
    # MQ2008 has queries without any relevant document: LightGBM counts them as NDCG 1,
    # trec_eval as 0. Both conventions are printed.
    as_lightgbm = gbrank.metrics.ndcg(test.y, scores, test.group, k=10)
    as_trec = gbrank.metrics.ndcg(test.y, scores, test.group, k=10, no_relevant=0.0)
    print(f"{name:<20} test NDCG@10 = {as_lightgbm:.4f} (empty queries = 1)   {as_trec:.4f} (empty queries = 0)")
