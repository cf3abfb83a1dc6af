"""benchmarks/bench_clicks.py: early stopping on held-out clicks (pbm-*-es, lgb-position-es)."""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from helpers import benchmark_script


def _script():
    return benchmark_script("bench_clicks")


@pytest.fixture(scope="module")
def clicks_log():
    data = make_ranking(n_queries=60, docs_per_query=(10, 10), n_features=8, seed=3)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, eta=1.0, seed=3)
    params = {"learning_rate": 0.1, "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1,
              "seed": 0}
    return data, log, params


def test_held_out_is_every_fifth_query_and_its_rows():
    bench = _script()
    group = np.array([2, 3, 1, 4, 2, 5, 1])
    queries, rows = bench.held_out(group)
    assert queries.tolist() == [True, False, False, False, False, True, False]
    assert rows.tolist() == [True] * 2 + [False] * 10 + [True] * 5 + [False]


@pytest.mark.parametrize("propensity", ["estimate", "known"])
def test_pbm_early_stopped_refits_for_the_rounds_of_least_held_out_loss(clicks_log, propensity):
    pytest.importorskip("lightgbm")
    bench = _script()
    data, log, params = clicks_log
    clicks = log.clicks.astype(np.float64)
    theta = "estimate" if propensity == "estimate" else log.theta
    model, best, obj = bench.pbm_early_stopped(params, data.X, clicks, data.group, log.position, theta, max_rounds=40)
    assert model.current_iteration() == best
    if propensity == "estimate":
        # the refit re-estimates the propensities at least twice on every query
        assert best > obj.warmup + obj.update_every
        assert obj.binding(model.train_set_).propensity_.shape == log.theta.shape
    # the same choice, recomputed from whole predictions of a fit on the same queries
    queries, rows = bench.held_out(data.group)
    fit_obj = gbrank.pbm_listnet(propensity=theta)
    fitted = bench.lgb_train(params, data.X[~rows], clicks[~rows], data.group[~queries], 40, fit_obj,
                             position=log.position[~rows])
    scorer = gbrank.pbm_listnet(propensity=fit_obj.binding(fitted.train_set_).propensity_
                                if propensity == "estimate" else log.theta)
    losses = [scorer.loss(clicks[rows], fitted.predict(data.X[rows], num_iteration=k), data.group[queries],
                          position=log.position[rows]) for k in range(1, 41)]
    least = 16 if propensity == "estimate" else 1
    assert best == least + int(np.argmin(losses[least - 1:]))


def test_lgb_position_early_stopped_refits_for_the_best_held_out_round(clicks_log):
    pytest.importorskip("lightgbm")
    bench = _script()
    data, log, params = clicks_log
    order = bench.display_order(data, log.logging_scores)
    counts = log.clicks[order].astype(np.int64)
    group = data.group
    rank = np.arange(order.size) - np.repeat(np.cumsum(group) - group, group) + 1
    gains = {**params, "label_gain": list(range(int(counts.max()) + 1))}
    model, best = bench.lgb_position_early_stopped(gains, data.X[order], counts, group, rank, max_rounds=20)
    assert 1 <= best <= 20
    assert model.current_iteration() == best


@pytest.mark.parametrize("factory", ["pbm_listnet", "ips_listnet"])
def test_click_early_stopped_scores_held_out_rows_deeper_than_any_training_row(factory):
    pytest.importorskip("lightgbm")
    bench = _script()
    # query 0, held out, is the longest: its last rows are shown deeper than any training row
    data = make_ranking(n_queries=40, docs_per_query=(8, 8), n_features=6, seed=5)
    group = data.group.copy()
    group[0], group[1] = 12, 4
    log = simulate_clicks(data.y, group, X=data.X, sessions_per_query=50, top_k=12, eta=1.0, seed=5)
    queries, rows = bench.held_out(group)
    assert log.position[rows].max() == 12 > log.position[~rows].max()
    params = {"num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1}
    model, best, obj = bench.click_early_stopped(params, data.X, log.clicks.astype(np.float64), group, log.position,
                                                 factory=getattr(gbrank, factory), max_rounds=20)
    assert model.current_iteration() == best and best > obj.warmup + obj.update_every
    assert obj.binding(model.train_set_).propensity_.shape == (12,)
