"""Ranking scores read as click probabilities: RCR against its baseline, a pointwise logistic
model and a pure ranking loss, in LightGBM.

Clicks are drawn from a known probability of each document's relevance grade, so the models'
probabilities ``sigmoid(score)`` can be compared with the truth. On these data (one draw, 80
test queries) the four rank alike (NDCG@10 0.656 to 0.663); the sigmoid of RCR's, the
baseline's and the logistic model's scores are probabilities (ECE 0.017 to 0.039), ListNet's
are not (0.375). The pointwise logistic model is the best calibrated here: where RCR's
listwise term pays, and where it does not, is measured in docs/benchmarks/calibrated.md.

    python examples/rcr_calibrated_probabilities.py
"""

import lightgbm as lgb
import numpy as np
from scipy.special import expit

import gbrank
from gbrank.datasets import make_ranking, split_queries
from gbrank.datasets.clicks import click_probability
from gbrank.metrics import expected_calibration_error, log_loss, ndcg

data = make_ranking(n_queries=400, docs_per_query=20, n_features=20, seed=0)
train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)
rng = np.random.default_rng(0)


def clicks(part):
    """Clicks drawn with the known probability of each document's grade, and that probability."""
    truth = click_probability(part.y, eps=0.05, max_label=4)
    return (rng.uniform(size=truth.size) < truth).astype(float), truth


(y_train, _), (y_valid, _), (y_test, p_test) = clicks(train), clicks(valid), clicks(test)

params = {"learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20, "metric": "None", "verbose": -1}
# each model stops on what it is for: the probabilistic ones on the validation log loss (LightGBM
# hands the callback probabilities under its built-in "binary", raw scores under a custom
# objective), the ranking loss on the validation NDCG@10
objectives = [
    ("gbrank.rcr(alpha=0.5)", gbrank.rcr(alpha=0.5), ["logloss"]),
    ("weighted_logistic_softmax(0.5)", gbrank.weighted_logistic_softmax(alpha=0.5), ["logloss"]),
    ("pointwise logistic (binary)", "binary", [("logloss", {"probability": True})]),
    ("listnet (ranking only)", gbrank.listnet(target="linear"), ["ndcg@10"]),
]
print(f"click rate on the test queries: {y_test.mean():.3f}")
for name, objective, stop_on in objectives:
    booster = lgb.train(
        {**params, "objective": objective},
        lgb.Dataset(train.X, y_train, group=train.group),
        num_boost_round=500,
        valid_sets=[lgb.Dataset(valid.X, y_valid, group=valid.group)],
        feval=gbrank.metrics.lightgbm_feval(stop_on),
        callbacks=[lgb.early_stopping(30, verbose=False)],
    )
    scores = booster.predict(test.X, num_iteration=booster.best_iteration, raw_score=True)
    probability = expit(scores)  # the scores, read as click probabilities
    print(
        f"{name:32s} NDCG@10 = {ndcg(test.y, scores, test.group, k=10):.4f}  "
        f"log loss {log_loss(y_test, scores):.4f}  ECE {expected_calibration_error(y_test, scores):.4f}  "
        f"mean |p - truth| {np.abs(probability - p_test).mean():.4f}"
    )
