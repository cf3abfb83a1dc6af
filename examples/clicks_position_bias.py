"""Learning to rank from position-biased clicks with LightGBM.

Clicks are simulated on generated data (a weak logging ranker, fitted on one query, shows every document; the
user examines position p with probability 1/p). Four models learn from the same clicks:
the naive softmax loss on raw clicks, inverse propensity weighting with the true
propensities, and with propensities estimated from the clicks, with the listwise and with
the pairwise loss; the ceiling learns from the true relevance. All are scored by NDCG@10 on the test queries' true labels.
"""

import lightgbm as lgb
import numpy as np

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks, split_queries

data = make_ranking(n_queries=300, docs_per_query=(20, 20), n_features=20, noise=1.0, seed=0)
train, test = split_queries(data, (0.7, 0.3), seed=0)
log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=100, top_k=20, eta=1.0,
                      logging_fraction=0.005, seed=0)

# The rows of a query need no particular order: each row's display position travels with
# the objective, bound by gbrank.engines.with_position (LightGBM keeps only ids of a Dataset's
# positions; see docs/clicks.md).
X, clicks, position = train.X, log.clicks, log.position
params = {"learning_rate": 0.1, "num_leaves": 15, "verbose": -1, "num_threads": 1, "seed": 0}
datasets = {}


def fit(objective, labels, position=None):
    dataset = datasets[id(objective)] = lgb.Dataset(X, labels, group=train.group)
    if position is not None:
        objective = gbrank.engines.with_position(objective, position)
    booster = lgb.train({**params, "objective": objective}, dataset, num_boost_round=60)
    return gbrank.metrics.ndcg(test.y, booster.predict(test.X), test.group, k=10)


estimated = gbrank.ips_listnet()  # propensity="estimate"
results = {
    "naive (raw clicks)": fit(gbrank.ips_listnet(propensity=None), clicks),
    "IPS, true propensities": fit(gbrank.ips_listnet(propensity=log.theta), clicks, position),
    "IPS, estimated propensities": fit(estimated, clicks, position),
    "IPS pairwise (DCG), estimated": fit(gbrank.ips_ranknet(weighting="dcg"), clicks, position),
    "ceiling (true relevance)": fit(gbrank.ips_listnet(propensity=None), log.relevance),
}
for name, value in results.items():
    print(f"{name:31s} NDCG@10 = {value:.4f}")
# the estimate belongs to the training set it was made on
print("estimated propensity, positions 1-5:", np.round(estimated.binding(datasets[id(estimated)]).propensity_[:5], 2))
print("true propensity,      positions 1-5:", np.round(log.theta[:5], 2))
