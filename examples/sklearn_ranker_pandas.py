"""The scikit-learn style estimator on a pandas DataFrame that carries the query ids.

``gbrank.Ranker`` trains any gbrank objective on LightGBM or XGBoost with one set of
parameters. The ``qid`` column of the DataFrame groups the rows into queries (it is never a
feature, and the rows of a query need not be contiguous); ``score`` is NDCG@10 and
``GroupKFold`` keeps queries whole in cross-validation.

    python examples/sklearn_ranker_pandas.py
"""

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold, cross_val_score

import gbrank
from gbrank.datasets import make_ranking, split_queries

data = make_ranking(n_queries=600, docs_per_query=25, n_features=20, seed=0)
train, valid, test = split_queries(data, (0.6, 0.2, 0.2), seed=0)


def frame(part):
    df = pd.DataFrame(part.X, columns=[f"f{j}" for j in range(part.n_features)])
    df.insert(0, "qid", part.qid)
    return df


# Shuffled rows: the estimator groups them by the qid column itself.
rng = np.random.default_rng(0)
rows = rng.permutation(len(train))
train_df, train_y = frame(train).iloc[rows], train.y[rows]
valid_df, test_df = frame(valid), frame(test)

for engine in ("lightgbm", "xgboost"):
    model = gbrank.Ranker(
        gbrank.listmle_topk(k=10),
        engine=engine,
        n_estimators=300,
        learning_rate=0.1,
        num_leaves=15,
        min_child_weight=1e-3,
    )
    model.fit(train_df, train_y, eval_set=[(valid_df, valid.y)], early_stopping_rounds=30)
    print(f"Ranker({engine:<8}) best round {model.best_iteration_:>3}   test NDCG@10 = {model.score(test_df, test.y):.4f}")

scores = cross_val_score(
    gbrank.Ranker(gbrank.listmle_topk(k=10), n_estimators=50, num_leaves=15),
    train_df,
    train_y,
    groups=train_df["qid"],
    cv=GroupKFold(n_splits=3),
)
print(f"3-fold GroupKFold NDCG@10 = {scores.mean():.4f} +- {scores.std():.4f}")
