"""The front-ends agree: metrics take query ids as Ranker does, and the clicks example says
what the clicks page says (and what the engines do)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks

ROOT = Path(__file__).resolve().parent.parent

METRICS = ["ndcg", "mean_average_precision", "mean_reciprocal_rank", "precision_at_k", "err"]


@pytest.mark.parametrize("name", METRICS)
def test_metrics_take_query_ids_in_any_row_order(name):
    data = make_ranking(n_queries=12, docs_per_query=(3, 9), n_features=3, seed=4)
    scores = np.random.default_rng(0).normal(size=len(data))
    metric = getattr(gbrank.metrics, name)
    expected = metric(data.y, scores, data.group, k=5, per_query=True)
    shuffled = np.random.default_rng(1).permutation(len(data))
    # the ids are shuffled numbers, so ascending id is not the order of the groups
    ids = np.random.default_rng(2).permutation(100)[: data.n_queries][np.repeat(np.arange(data.n_queries), data.group)]
    got = metric(data.y[shuffled], scores[shuffled], qid=ids[shuffled], k=5, per_query=True)
    np.testing.assert_allclose(got, expected[np.argsort(ids[np.cumsum(data.group) - 1], kind="stable")], rtol=1e-12)
    assert metric(data.y[shuffled], scores[shuffled], qid=ids[shuffled], k=5) == pytest.approx(
        metric(data.y, scores, data.group, k=5), rel=1e-12)


def test_metrics_refuse_missing_or_doubled_queries():
    y, s = np.array([1.0, 0.0, 2.0]), np.array([0.3, 0.2, 0.1])
    with pytest.raises(ValueError, match=r"query groups are required: .* or qid"):
        gbrank.metrics.ndcg(y, s)
    with pytest.raises(ValueError, match="not both"):
        gbrank.metrics.ndcg(y, s, [3], qid=[1, 1, 1])
    with pytest.raises(ValueError, match="qid has 2 entries but there are 3 rows"):
        gbrank.metrics.ndcg(y, s, qid=[1, 1])
    with pytest.raises(ValueError, match="of one length"):
        gbrank.metrics.ndcg(y, s[:2], qid=[1, 1, 1])
    # qid is not a metric convention that make_metrics would pass to every call
    with pytest.raises(TypeError):
        gbrank.metrics.make_metrics("ndcg@10", qid=[1, 1, 1])


def test_click_objectives_need_no_display_order_as_the_example_and_the_page_say():
    lgb = pytest.importorskip("lightgbm")
    data = make_ranking(n_queries=40, docs_per_query=10, n_features=5, seed=0)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=30, top_k=10, seed=0)
    params = {"num_leaves": 7, "verbose": -1, "num_threads": 1, "deterministic": True}
    query = np.repeat(np.arange(data.n_queries), data.group)
    shown = np.lexsort((log.position, query))
    assert not np.array_equal(shown, np.arange(len(data)))
    scores = []
    for rows in (np.arange(len(data)), shown):
        objective = gbrank.engines.with_position(gbrank.ips_listnet(propensity=log.theta), log.position[rows])
        dataset = lgb.Dataset(data.X[rows], log.clicks[rows], group=data.group)
        booster = lgb.train({**params, "objective": objective}, dataset, num_boost_round=5)
        scores.append(booster.predict(data.X))
    np.testing.assert_allclose(scores[0], scores[1], rtol=1e-9, atol=1e-12)
    example = (ROOT / "examples" / "clicks_position_bias.py").read_text()
    assert "need no particular order" in example and "display order" not in example
    assert "The rows need no particular order" in (ROOT / "docs" / "clicks.md").read_text()
