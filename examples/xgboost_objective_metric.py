"""XGBoost with a gbrank objective and gbrank's metrics, with early stopping.

Trains ``gbrank.listmle_topk(k=10)`` through ``xgb.train(obj=...)`` and XGBoost's built-in
``rank:ndcg``, both evaluated and stopped with gbrank's NDCG@10, and reports NDCG@10 on
held-out queries.

    python examples/xgboost_objective_metric.py
"""

import xgboost as xgb

import gbrank
from gbrank.datasets import make_ranking, split_queries

data = make_ranking(n_queries=600, docs_per_query=25, n_features=20, seed=0)
train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)

# XGBoost needs the rows of a query together and the query ids ascending; split_queries
# keeps both.
dtrain = xgb.DMatrix(train.X, train.y, qid=train.qid)
dvalid = xgb.DMatrix(valid.X, valid.y, qid=valid.qid)
dtest = xgb.DMatrix(test.X, qid=test.qid)

# The early-stopping callback watches the first metric of the list (ndcg@10), maximising it.
metrics = gbrank.metrics.make_metrics(["ndcg@10", "map@10"])
params = {
    "eta": 0.1,
    "max_depth": 4,
    # Plackett-Luce hessians are about 1/n per document: XGBoost's default
    # min_child_weight of 1 would stop trees from growing on lists of 25.
    "min_child_weight": 1e-3,
    "disable_default_eval_metric": 1,
}


def fit(objective):
    builtin = isinstance(objective, str)
    return xgb.train(
        {**params, "objective": objective} if builtin else params,
        dtrain,
        num_boost_round=300,
        obj=None if builtin else objective,
        evals=[(dvalid, "valid")],
        custom_metric=metrics.xgboost,
        callbacks=[metrics.xgboost_early_stopping(30)],
        verbose_eval=False,
    )


for name, objective in [("listmle_topk(k=10)", gbrank.listmle_topk(k=10)), ("rank:ndcg", "rank:ndcg")]:
    booster = fit(objective)
    scores = booster.predict(dtest, iteration_range=(0, booster.best_iteration + 1))
    value = gbrank.metrics.ndcg(test.y, scores, test.group, k=10)
    print(f"{name:<20} best round {booster.best_iteration + 1:>3}   test NDCG@10 = {value:.4f}")
