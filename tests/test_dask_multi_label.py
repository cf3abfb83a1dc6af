"""Several label columns of a Dask frame train gbrank.multi_label (#33): every worker computes
the gradients one machine computes on the whole frame, with each label column's statistics
of the whole frame and, in the constrained form, each label's NDCG over all workers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

import gbrank  # noqa: E402
from gbrank import dask as gdask  # noqa: E402
from gbrank.datasets import make_ranking  # noqa: E402
from gbrank.objectives.multi_label import MultiLabel  # noqa: E402

XGB = {"max_depth": 3, "eta": 0.3, "min_child_weight": 0.0, "tree_method": "hist", "nthread": 1}
LGB = {"num_leaves": 4, "min_data_in_leaf": 5}
LABELS = ["label", "label_click", "label_buy"]
RECORD: list = []


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        yield client


class RecordingMultiLabel(MultiLabel):
    """Notes, on whichever worker, its label columns, scores, query sizes and gradients."""

    def _bound_gradients(self, binding, scores, init_score=None):
        out = super()._bound_gradients(binding, scores, init_score)
        RECORD.append((np.array(binding.state.labels), np.array(scores), np.diff(binding.offsets), out[0].copy(),
                       distributed.get_worker().address))
        return out


def recording(inner, **settings):
    return RecordingMultiLabel(objective=inner, labels=None, aggregate=settings.pop("aggregate", "gradient"),
                               weights=settings.pop("weights", None), floors=settings.pop("floors", None),
                               k=settings.pop("k", 10), penalty=settings.pop("penalty", 10.0), gain="exp2", seed=0,
                               hess_floor=1e-6, hess_scale=1.0)


def labelled_frame():
    """Three label columns whose maxima differ between the two halves of the queries, the
    halves in reverse for the second and third columns: a worker's own maxima are wrong."""
    d = make_ranking(200, 12, 6, seed=3)
    low = d.qid < 100
    y = np.minimum(d.y, 4)
    y[low] = np.minimum(y[low], 2)
    rng = np.random.default_rng(0)
    click = rng.integers(0, 5, y.size).astype(float)
    click[~low] = np.minimum(click[~low], 1)
    buy = np.where(low, 3.0 * (d.X[:, 1] > 0.5), 1.0 * (d.X[:, 2] > 0.5))
    frame = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(d.X.shape[1])])
    frame["label"], frame["label_click"], frame["label_buy"], frame["qid"] = y, click, buy, d.qid
    return frame


def placed(client, frame):
    return gdask.place_partitions(client, gdask.partition_queries(dd.from_pandas(frame, npartitions=2, sort=False),
                                                                  npartitions=2))


def last_round(frame_in_order):
    """The last round's worker records joined in partition order (place_partitions puts one
    partition on each worker), checked against the frame's rows."""
    calls = [r for r in RECORD[-2:] if r[2].size]
    assert len({r[4] for r in calls}) == 2, "both workers should train"
    labels = np.concatenate([r[0] for r in calls])
    order = [0, 1]
    if not np.array_equal(labels, frame_in_order[LABELS].to_numpy()):
        order = [1, 0]
    calls = [calls[i] for i in order]
    labels = np.concatenate([r[0] for r in calls])
    np.testing.assert_array_equal(labels, frame_in_order[LABELS].to_numpy())
    return (labels, np.concatenate([r[1] for r in calls]), np.concatenate([r[2] for r in calls]),
            np.concatenate([r[3] for r in calls]))


def err():
    return gbrank.lambdarank(measure="err", gain="linear", hess_floor=0.0)


# the inner objectives read the label maximum of the whole data: ERR's gains, RCR's targets
# (the mixed label's, with aggregate="label")
CASES = [
    ("lightgbm", err, {"aggregate": "gradient", "weights": [0.5, 0.3, 0.2]}),
    ("xgboost", err, {"aggregate": "gradient", "weights": [0.5, 0.3, 0.2]}),
    ("lightgbm", err, {"aggregate": "stochastic", "weights": [0.5, 0.3, 0.2]}),
    ("xgboost", gbrank.rcr, {"aggregate": "label", "weights": [0.5, 0.3, 0.2]}),
    ("xgboost", err, {"aggregate": "constrained", "floors": [0.97, 0.97], "penalty": 5.0}),
]


@pytest.mark.parametrize("engine, make, settings", CASES, ids=[f"{e}-{s['aggregate']}" for e, _, s in CASES])
def test_workers_compute_the_gradients_of_one_machine(client, engine, make, settings):
    frame = labelled_frame()
    df = placed(client, frame)
    in_order = df.compute()
    inner = make()
    RECORD.clear()
    objective = recording(inner, **dict(settings))
    if engine == "xgboost":
        gdask.train_xgboost(client, df, objective, label_col=LABELS, num_boost_round=3, params=XGB)
    else:
        gdask.train_lightgbm(client, df, objective, label_col=LABELS, num_boost_round=3, params=LGB)
    labels, scores, sizes, grad = last_round(in_order)
    assert np.ptp(scores) > 0, "the last round's scores should have moved"
    whole = gbrank.multi_label(inner, labels, **settings)
    np.testing.assert_allclose(grad, whole.grad_hess(labels[:, 0], scores, sizes)[0], rtol=1e-10, atol=1e-12)
    # what the whole frame's statistics change: each worker alone would compute other gradients
    if settings["aggregate"] != "stochastic":
        rows = np.repeat(np.arange(sizes.size) < 100, sizes)
        halves = [(rows, sizes[:100]), (~rows, sizes[100:])]
        assert not all(np.allclose(grad[r], gbrank.multi_label(inner, labels[r], **settings).grad_hess(
            labels[r, 0], scores[r], s)[0]) for r, s in halves)


def test_trained_model_matches_one_machine(client):
    frame = labelled_frame()
    df = placed(client, frame)
    in_order = df.compute()
    objective = gbrank.multi_label(gbrank.listnet(target="linear"), weights=[0.6, 0.2, 0.2])
    booster = gdask.train_xgboost(client, df, objective, label_col=LABELS, num_boost_round=10, params=XGB)
    X = in_order[[f"f{i}" for i in range(6)]].to_numpy()
    labels = in_order[LABELS].to_numpy()
    single = xgb.train({**XGB, "base_score": 0.0}, xgb.DMatrix(X, labels[:, 0], qid=in_order["qid"].to_numpy()), 10,
                       obj=gbrank.multi_label(gbrank.listnet(target="linear"), labels, weights=[0.6, 0.2, 0.2]))
    # the same gradients; the trees differ only by the workers' histogram bins, as in test_dask
    qid = in_order["qid"].to_numpy()
    scores = gdask.predict(booster, df)
    for column in LABELS:
        # per-label NDCG, exact over the workers: one evaluate per label column
        value = gdask.evaluate(df, scores, "ndcg@10", label_col=column)["ndcg@10"]
        assert value == pytest.approx(gbrank.metrics.ndcg(in_order[column].to_numpy(), booster.inplace_predict(X),
                                                          qid=qid, k=10))
        assert value == pytest.approx(gbrank.metrics.ndcg(in_order[column].to_numpy(), single.inplace_predict(X),
                                                          qid=qid, k=10), abs=0.02)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_refusals_name_the_fix(client, engine):
    df = placed(client, labelled_frame())
    train = gdask.train_xgboost if engine == "xgboost" else gdask.train_lightgbm
    params = XGB if engine == "xgboost" else LGB
    multi = gbrank.multi_label(gbrank.listnet())
    with pytest.raises(ValueError, match=r"name them, label_col=\['label'"):
        train(client, df, multi, num_boost_round=1, params=params)
    with pytest.raises(ValueError, match="which only gbrank.multi_label"):
        train(client, df, gbrank.listnet(), label_col=LABELS, num_boost_round=1, params=params)
    with pytest.raises(ValueError, match="build the objective without labels"):
        train(client, df, gbrank.multi_label(gbrank.listnet(), np.zeros((3, 3))), label_col=LABELS,
              num_boost_round=1, params=params)
    with pytest.raises(ValueError, match="two or more distinct names"):
        train(client, df, multi, label_col=["label"], num_boost_round=1, params=params)
    with pytest.raises(ValueError, match=r"weights must have shape \(3,\)"):
        train(client, df, gbrank.multi_label(gbrank.listnet(), weights=[0.5, 0.5]), label_col=LABELS,
              num_boost_round=1, params=params)


def test_constrained_needs_xgboost(client):
    df = placed(client, labelled_frame())
    objective = gbrank.multi_label(gbrank.listnet(), aggregate="constrained", floors=[0.5, 0.5])
    with pytest.raises(ValueError, match="train it with gbrank.dask.train_xgboost"):
        gdask.train_lightgbm(client, df, objective, label_col=LABELS, num_boost_round=1, params=LGB)


@pytest.mark.parametrize("bad, what", [(np.nan, "a missing or non-numeric value"), (-1.0, "the value -1")])
def test_a_bad_label_value_names_the_column_and_query(client, bad, what):
    frame = labelled_frame()
    frame.loc[30, "label_buy"] = bad
    qid = frame.loc[30, "qid"]
    row = 30 - int(np.flatnonzero(frame["qid"] == qid)[0])
    df = placed(client, frame)
    with pytest.raises(ValueError, match=f"label column 'label_buy' has {what} in query {qid} \\(its row {row}\\); "
                                         "labels must be finite numbers >= 0"):
        gdask.train_xgboost(client, df, gbrank.multi_label(gbrank.listnet()), label_col=LABELS, num_boost_round=1,
                            params=XGB)
