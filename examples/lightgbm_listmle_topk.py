"""LightGBM with top-k ListMLE, gbrank's metrics as feval, and early stopping.

Trains ``gbrank.listmle_topk(k=10)`` and LightGBM's built-in ``lambdarank`` with the same
trees and the same validation metric, stops each on the validation NDCG@10, and reports
NDCG@10 on held-out queries.

    python examples/lightgbm_listmle_topk.py
"""

import lightgbm as lgb

import gbrank
from gbrank.datasets import make_ranking, split_queries

data = make_ranking(n_queries=600, docs_per_query=25, n_features=20, seed=0)
train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)

# "metric": "None" turns LightGBM's own ndcg off, so the feval's first metric is the one
# early stopping watches (first_metric_only=True).
params = {"learning_rate": 0.1, "num_leaves": 15, "metric": "None", "verbose": -1}
feval = gbrank.metrics.lightgbm_feval(["ndcg@10", "map@10"])


def fit(objective):
    dtrain = lgb.Dataset(train.X, train.y, group=train.group)
    dvalid = lgb.Dataset(valid.X, valid.y, group=valid.group, reference=dtrain)
    return lgb.train(
        {**params, "objective": objective},
        dtrain,
        num_boost_round=300,
        valid_sets=[dvalid],
        valid_names=["valid"],
        feval=feval,
        callbacks=[lgb.early_stopping(30, first_metric_only=True, verbose=False)],
    )


for name, objective in [("listmle_topk(k=10)", gbrank.listmle_topk(k=10)), ("lambdarank", "lambdarank")]:
    booster = fit(objective)
    scores = booster.predict(test.X, num_iteration=booster.best_iteration)
    value = gbrank.metrics.ndcg(test.y, scores, test.group, k=10)
    print(f"{name:<20} best round {booster.best_iteration:>3}   test NDCG@10 = {value:.4f}")
