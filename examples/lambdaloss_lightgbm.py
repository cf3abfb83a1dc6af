"""LambdaLoss (NDCG-Loss2++) and gbrank's LambdaRank in LightGBM, against the built-in.

Trains LightGBM's built-in ``lambdarank``, ``gbrank.lambdarank()`` (the same model by
default) and ``gbrank.lambdaloss("ndcg_loss2pp", mu=10)`` with the same trees, stops each on
the validation NDCG@10, and reports NDCG@10 on held-out queries.

    python examples/lambdaloss_lightgbm.py
"""

import lightgbm as lgb

import gbrank
from gbrank.datasets import make_ranking, split_queries

data = make_ranking(n_queries=600, docs_per_query=25, n_features=20, seed=0)
train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)

params = {"learning_rate": 0.1, "num_leaves": 15, "metric": "None", "verbose": -1}
feval = gbrank.metrics.lightgbm_feval(["ndcg@10"])
objectives = [
    ("built-in lambdarank", "lambdarank"),
    ("gbrank.lambdarank()", gbrank.lambdarank()),
    ("gbrank.lambdaloss(ndcg_loss2pp)", gbrank.lambdaloss("ndcg_loss2pp", mu=10)),
]

for name, objective in objectives:
    dtrain = lgb.Dataset(train.X, train.y, group=train.group)
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.group, reference=dtrain)
    booster = lgb.train(
        {**params, "objective": objective},
        dtrain,
        num_boost_round=300,
        valid_sets=[dvalid],
        feval=feval,
        callbacks=[lgb.early_stopping(30, verbose=False)],
    )
    scores = booster.predict(test.X, num_iteration=booster.best_iteration)
    value = gbrank.metrics.ndcg(test.y, scores, test.group, k=10)
    print(f"{name:<32} best round {booster.best_iteration:>3}   test NDCG@10 = {value:.4f}")
