"""The native NDCG_Boost learner (Valizadegan et al. 2009, Algorithm 1) next to its objective.

``gbrank.NDCGBoost`` boosts decision stumps with the paper's weights and step size; the
``gbrank.ndcg_boost()`` objective minimises the same relaxation of NDCG with LightGBM's trees.

    python examples/ndcg_boost_native.py
"""

import lightgbm as lgb

import gbrank
from gbrank.datasets import make_ranking, split_queries

data = make_ranking(n_queries=600, docs_per_query=25, n_features=20, seed=0)
train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)

model = gbrank.NDCGBoost(n_estimators=200).fit(
    train.X,
    train.y,
    group=train.group,
    eval_set=[(valid.X, valid.y, valid.group)],
    eval_at=(10,),
    early_stopping_rounds=30,
)
# history_ holds every stump trained; the model keeps those up to the best one
relaxation = model.history_["M"][model.n_estimators_ - 1]
print(f"NDCGBoost: {model.n_estimators_} stumps, relaxation M {model.initial_M_:.4f} -> {relaxation:.4f}")
value = gbrank.metrics.ndcg(test.y, model.predict(test.X), test.group, k=10)
print(f"{'NDCGBoost (stumps)':<28} test NDCG@10 = {value:.4f}")

dtrain = lgb.Dataset(train.X, train.y, group=train.group)
dvalid = lgb.Dataset(valid.X, valid.y, group=valid.group, reference=dtrain)
booster = lgb.train(
    {"objective": gbrank.ndcg_boost(), "metric": "None", "num_leaves": 15, "verbose": -1},
    dtrain,
    num_boost_round=300,
    valid_sets=[dvalid],
    feval=gbrank.metrics.lightgbm_feval("ndcg@10"),
    callbacks=[lgb.early_stopping(30, verbose=False)],
)
value = gbrank.metrics.ndcg(test.y, booster.predict(test.X, num_iteration=booster.best_iteration), test.group, k=10)
print(f"{'ndcg_boost() on LightGBM':<28} test NDCG@10 = {value:.4f}")
