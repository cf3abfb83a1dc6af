"""gbrank.fit_clicks: the rounds of a click objective chosen on held-out clicks.

The criterion is checked against a direct implementation (a loop over queries, the
temperature found by a generic scalar minimiser); the chosen rounds against the recorded
curve, and the curve against the held-out fit's own predictions; the procedure against a
badly chosen fixed number of rounds on a simulated log, in both engines.
"""

from __future__ import annotations

import math
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

import gbrank
from gbrank.click_training import (
    BINARY_CLICK_L2,
    CLICK_L2,
    CLICK_NUM_LEAVES,
    HeldOutClickLikelihood,
    click_likelihood,
)
from gbrank.datasets import make_ranking, simulate_clicks, split_queries
from gbrank.metrics import ndcg

ENGINES = ["lightgbm", "xgboost"]
# one thread each: the tests share their machine
THREADS = {"lightgbm": {"num_threads": 1, "verbose": -1}, "xgboost": {"nthread": 1}}
# what fit_clicks and fit_propensity train with where params set no number of leaves (LightGBM)
LEAVES = {"lightgbm": {"num_leaves": CLICK_NUM_LEAVES}, "xgboost": {}}
# ... and that, where params set no L2 penalty either
L2 = {"lightgbm": {"lambda_l2": CLICK_L2, **LEAVES["lightgbm"]}, "xgboost": {"lambda": CLICK_L2}}
# ... and where every click is 0 or 1
BINARY_L2 = {"lightgbm": {"lambda_l2": BINARY_CLICK_L2, **LEAVES["lightgbm"]}, "xgboost": {"lambda": BINARY_CLICK_L2}}


def direct_nll(scores, clicks, group, position, theta, tau):
    """-sum_i c_i log(theta_p e^(tau s_i) / sum_j theta_p_j e^(tau s_j)) per click, a
    query at a time, over its shown rows, as the position-based model writes it: the
    exposure of a shown row is its position's propensity."""
    exposure = [theta[p - 1] if p >= 1 else 0.0 for p in position]
    return direct_exposure_nll(scores, clicks, group, exposure, tau)


def direct_exposure_nll(scores, clicks, group, exposure, tau):
    """The criterion with an exposure per row (a propensity, or the expected examinations of
    cascade targets) over the rows with one, a query at a time."""
    total, n_clicks, start = 0.0, 0.0, 0
    for size in group:
        rows = [i for i in range(start, start + size) if exposure[i] > 0]
        weights = {i: exposure[i] * math.exp(tau * scores[i]) for i in rows}
        norm = sum(weights.values())
        for i in rows:
            if clicks[i] > 0:
                total -= clicks[i] * math.log(weights[i] / norm)
                n_clicks += clicks[i]
        start += size
    return total / n_clicks


def profiled_loss(scores, clicks, offsets, position) -> float:
    """The selection criterion per click: the profiled per-query losses summed over the clicks."""
    from gbrank.click_training import _profiled_queries

    per_query, total = _profiled_queries(scores, clicks, offsets, position)
    return float(per_query.sum()) / total


def small_log(seed=0):
    rng = np.random.default_rng(seed)
    group = np.array([4, 6, 3, 5, 7])
    n = int(group.sum())
    position = np.concatenate([rng.permutation(g) + 1 for g in group])
    position[[2, 12]] = -1
    clicks = rng.poisson(2.0 / position.clip(1)).astype(float)
    clicks[position == -1] = 0
    scores = np.log1p(clicks) + rng.normal(size=n)  # informative, not perfectly
    theta = 1.0 / np.arange(1, 8)
    return scores, clicks, group, position, theta


def test_the_criterion_is_the_position_based_likelihood_at_the_best_temperature():
    from scipy.optimize import minimize_scalar

    scores, clicks, group, position, theta = small_log()
    value, tau = click_likelihood(scores, clicks, group, position=position, propensity=theta)
    best = minimize_scalar(lambda t: direct_nll(scores, clicks, group, position, theta, t), bounds=(0, 20),
                           method="bounded", options={"xatol": 1e-9})
    assert tau > 0
    assert tau == pytest.approx(best.x, rel=1e-5)
    assert value == pytest.approx(best.fun, rel=1e-10)
    held, held_tau = click_likelihood(scores, clicks, group, position=position, propensity=theta, temperature=0.7)
    assert held_tau == 0.7
    assert held == pytest.approx(direct_nll(scores, clicks, group, position, theta, 0.7), rel=1e-12)


def test_at_temperature_one_the_criterion_is_pbm_listnets_loss_per_click():
    scores, clicks, group, position, theta = small_log(1)
    value, _ = click_likelihood(scores, clicks, group, position=position, propensity=theta, temperature=1.0)
    loss = gbrank.pbm_listnet(propensity=theta).loss(clicks, scores, group, position=position)
    assert value == pytest.approx(loss / clicks.sum(), rel=1e-10)


def test_the_criterion_ignores_the_scale_and_shift_of_the_scores_and_rows_never_shown():
    scores, clicks, group, position, theta = small_log(2)
    value, tau = click_likelihood(scores, clicks, group, position=position, propensity=theta)
    moved = 7.0 * scores + np.repeat(np.arange(group.size) * 3.0, group)
    moved[position == -1] = 1e6
    moved_value, moved_tau = click_likelihood(moved, clicks, group, position=position, propensity=theta)
    assert moved_value == pytest.approx(value, rel=1e-9)
    assert moved_tau == pytest.approx(tau / 7.0, rel=1e-6)


def test_a_reversed_order_is_not_rewarded():
    # clicks on the top-scored rows only: reversed scores explain them only with tau < 0,
    # which the criterion refuses; it falls back to the positions alone (tau = 0)
    group = np.array([3, 3])
    position = np.array([1, 2, 3, 1, 2, 3])
    clicks = np.array([0.0, 0, 5, 0, 0, 4])
    scores = np.array([3.0, 2, 1, 3, 2, 1])
    theta = np.ones(3)
    value, tau = click_likelihood(scores, clicks, group, position=position, propensity=theta)
    assert tau == 0.0
    assert value == pytest.approx(math.log(3))


def test_the_profiled_temperature_is_the_minimum_on_many_logs():
    # a Newton step that lands exactly on the root once fell back to the middle of the bracket
    # and returned a temperature off the minimum (on 34 of these 200 logs)
    from scipy.optimize import minimize_scalar

    worse = []
    for seed in range(200):
        scores, clicks, group, position, theta = small_log(seed)
        scores = scores * np.random.default_rng(seed).uniform(0.2, 5.0)
        value, tau = click_likelihood(scores, clicks, group, position=position, propensity=theta)
        best = minimize_scalar(lambda t: direct_nll(scores, clicks, group, position, theta, t),
                               bounds=(0.0, max(4.0 * tau, 1.0)), method="bounded", options={"xatol": 1e-12})
        if value > best.fun + 1e-10:
            worse.append((seed, value, best.fun))
    assert worse == []


def test_the_comparison_fits_the_propensities_on_the_held_out_clicks_too():
    from scipy.optimize import minimize

    from gbrank.groups import group_offsets

    scores, clicks, group, position, _ = small_log(1)
    value = profiled_loss(scores, clicks, group_offsets(clicks.size, group=group), position)
    clicked = sorted({int(p) for p, c in zip(position, clicks) if p >= 1 and c > 0})
    positions = int(position.max())

    def direct(x):
        # theta of the positions with a click, relative to the first of them; the others -> 0
        theta = np.full(positions, 1e-300)
        theta[np.array(clicked) - 1] = np.exp(np.r_[0.0, x[1:]])
        shown = np.where(theta[np.maximum(position, 1) - 1] > 1e-300, position, -1)
        return direct_nll(scores, clicks, group, shown, theta, x[0])

    start = np.r_[1.0, np.zeros(len(clicked) - 1)]
    best = minimize(direct, start, method="L-BFGS-B", bounds=[(0.0, None)] + [(None, None)] * (len(clicked) - 1),
                    options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 10000})
    assert value == pytest.approx(best.fun, rel=1e-7)
    theta = 1.0 / np.arange(1, positions + 1)
    assert value < click_likelihood(scores, clicks, group, position=position, propensity=theta)[0]


@pytest.fixture(scope="module")
def log():
    data = make_ranking(240, (3, 30), 10, noise=0.5, seed=3)
    train, test = split_queries(data, (0.7, 0.3), seed=3)
    clicks = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=40, top_k=10, eta=1.0,
                             logging_fraction=0.002, seed=3)
    return train, test, clicks


def _ndcg(model, test):
    return ndcg(test.y, model.predict(test.X), test.group, k=10)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_chosen_rounds_minimise_the_recorded_held_out_curve(engine, log):
    pytest.importorskip(engine)
    train, _, clicks = log
    fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position,
                            objective=gbrank.pbm_listnet(propensity=clicks.theta), engine=engine, max_rounds=40,
                            params=THREADS[engine],
                            refit=False, seed=1)
    assert fit.curve.shape == fit.temperature.shape == (40,)
    assert fit.best_rounds == 1 + int(np.argmin(fit.curve))
    assert np.ptp(fit.curve) > 0
    # each recorded value is the criterion of the held-out fit's first k rounds
    held = np.isin(np.repeat(np.arange(train.group.size), train.group), fit.held_out_queries)
    for k in (1, fit.best_rounds, 40):
        scores = gbrank.engines.predict(fit.booster, train.X[held], k)
        value, tau = click_likelihood(scores, clicks.clicks[held], train.group[fit.held_out_queries],
                                      position=clicks.position[held], propensity=clicks.theta)
        assert value == pytest.approx(fit.curve[k - 1], rel=1e-6)
        assert tau == pytest.approx(fit.temperature[k - 1], rel=1e-4)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_refit_has_the_chosen_rounds_and_the_estimate_of_every_query(engine, log):
    pytest.importorskip(engine)
    train, test, clicks = log
    objective = gbrank.ips_ranknet()
    fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, objective=objective,
                            engine=engine, params=THREADS[engine], max_rounds=30)
    rounds = fit.booster.current_iteration() if engine == "lightgbm" else fit.booster.num_boosted_rounds()
    assert rounds == fit.best_rounds and fit.refitted
    # the same training, by hand: the estimate is the refit's, on every query
    booster, dtrain = _train_by_hand(engine, THREADS[engine], train, clicks, objective, fit.best_rounds)
    np.testing.assert_allclose(fit.propensity_, objective.binding(dtrain).propensity_)
    np.testing.assert_allclose(fit.predict(test.X), gbrank.engines.predict(booster, test.X), rtol=1e-6, atol=1e-9)


@pytest.fixture(scope="module")
def varied_log():
    # lists of 2 to 60 documents, every one shown, a weak logging ranker: the world of the
    # trials that chose the default objective, smaller
    data = make_ranking(400, (2, 60), 40, noise=1.0, seed=4)
    train, test = split_queries(data, (0.6, 0.4), seed=4)
    clicks = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=50, top_k=int(train.group.max()),
                             eta=1.0, logging_fraction=0.002, seed=4)
    return train, test, clicks


@pytest.mark.parametrize("engine", ENGINES)
def test_fit_clicks_beats_a_badly_chosen_number_of_rounds(engine, varied_log):
    # the default objective with estimated propensities, trained on every query for the
    # longest budget the procedure considers, against the procedure: measured on unseen
    # queries' true labels, as the share of the gap between the naive softmax on raw clicks
    # and the softmax on the true click probabilities (seeds 3, 4, 5 gave margins of 0.08 to
    # 0.80 in both engines; seed 4: 0.4)
    pytest.importorskip(engine)
    train, test, clicks = varied_log
    params = ({"learning_rate": 0.2, "num_leaves": 15, "num_threads": 1, "verbose": -1} if engine == "lightgbm"
              else {"eta": 0.2, "max_depth": 4, "nthread": 1})
    objective = gbrank.ips_ranknet()
    fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, objective=objective,
                            engine=engine, params=params, max_rounds=150)
    fixed, _ = _train_by_hand(engine, params, train, clicks, objective, 150)

    def ranker(labels):
        return gbrank.Ranker(gbrank.ips_listnet(propensity=None), n_estimators=50, n_jobs=1).fit(
            train.X, labels, group=train.group)

    naive, ceiling = _ndcg(ranker(clicks.clicks), test), _ndcg(ranker(clicks.relevance), test)
    assert ceiling > naive + 0.05

    def closed(model):
        return (ndcg(test.y, gbrank.engines.predict(model, test.X), test.group, k=10) - naive) / (ceiling - naive)

    assert fit.best_rounds < 100
    assert closed(fit.booster) > closed(fixed) + 0.2


def _train_by_hand(engine, params, train, clicks, objective, rounds):
    params = {**L2[engine], **params}
    bound = gbrank.engines.with_position(objective, clicks.position)
    if engine == "lightgbm":
        import lightgbm as lgb

        dtrain = lgb.Dataset(train.X, clicks.clicks, group=train.group)
        return lgb.train({**params, "objective": bound}, dtrain, rounds), dtrain
    import xgboost as xgb

    dtrain = xgb.DMatrix(train.X, clicks.clicks, group=train.group)
    return xgb.train({**params, "base_score": 0.0}, dtrain, rounds, obj=bound), dtrain


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell:UserWarning")  # small logs of 0/1 clicks
@pytest.mark.parametrize("engine", ENGINES)
def test_binary_clicks_are_fitted_by_default_with_pbm_cloglog_and_refit_as_by_hand(engine, log):
    train, _, clicks = log
    binary = SimpleNamespace(clicks=(clicks.clicks > 0).astype(float), position=clicks.position)
    fit = gbrank.fit_clicks(train.X, binary.clicks, train.group, position=binary.position, engine=engine,
                            params=THREADS[engine], max_rounds=15)
    assert fit.objective.factory == "pbm_cloglog" and 1 <= fit.best_rounds <= 15
    assert fit.params == {**THREADS[engine], **BINARY_L2[engine]}
    booster, _ = _train_by_hand(engine, {**THREADS[engine], **BINARY_L2[engine]}, train, binary, gbrank.pbm_cloglog(),
                                fit.best_rounds)
    np.testing.assert_allclose(fit.predict(train.X), gbrank.engines.predict(booster, train.X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fit_pickles_and_predicts_alike(engine, log):
    pytest.importorskip(engine)
    train, test, clicks = log
    fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                            params=THREADS[engine], max_rounds=15)
    back = pickle.loads(pickle.dumps(fit))
    assert back.best_rounds == fit.best_rounds and back.engine == engine
    np.testing.assert_array_equal(back.curve, fit.curve)
    np.testing.assert_array_equal(back.propensity_, fit.propensity_)
    np.testing.assert_allclose(back.predict(test.X), fit.predict(test.X))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_metric_stops_a_users_own_training(engine, log):
    pytest.importorskip(engine)
    train, _, clicks = log
    held_q = np.arange(train.group.size) % 5 == 0
    held = np.repeat(held_q, train.group)
    objective = gbrank.pbm_listnet()
    bound = gbrank.engines.with_position(objective, clicks.position[~held])
    if engine == "lightgbm":
        import lightgbm as lgb

        dtrain = lgb.Dataset(train.X[~held], clicks.clicks[~held], group=train.group[~held_q])
        dvalid = lgb.Dataset(train.X[held], clicks.clicks[held], group=train.group[held_q], reference=dtrain)
        metric = HeldOutClickLikelihood(objective, dtrain, clicks.clicks[held], train.group[held_q],
                                        position=clicks.position[held])
        booster = lgb.train({"objective": bound, "metric": "None", "verbose": -1, "learning_rate": 0.3,
                             "num_threads": 1}, dtrain, 300, valid_sets=[dvalid], feval=metric.lightgbm,
                            callbacks=[lgb.early_stopping(10, verbose=False)])
        best = booster.best_iteration
    else:
        import xgboost as xgb

        dtrain = xgb.DMatrix(train.X[~held], clicks.clicks[~held], group=train.group[~held_q])
        dvalid = xgb.DMatrix(train.X[held], clicks.clicks[held], group=train.group[held_q])
        metric = HeldOutClickLikelihood(objective, dtrain, clicks.clicks[held], train.group[held_q],
                                        position=clicks.position[held])
        booster = xgb.train({"eta": 0.3, "nthread": 1, "base_score": 0.0, "disable_default_eval_metric": 1},
                            dtrain, 300, obj=bound, evals=[(dvalid, "held_out")], custom_metric=metric.xgboost,
                            early_stopping_rounds=10, verbose_eval=False)
        best = booster.best_iteration + 1
    assert best == 1 + int(np.argmin(metric.curve))
    assert len(metric.curve) == best + 10 < 300
    assert len(metric.propensity) == len(metric.curve)
    np.testing.assert_array_equal(metric.propensity[-1], objective.binding(dtrain).propensity_)


# ----------------------------------------------------------------------------- bad input
def _args(log):
    train, _, clicks = log
    return train.X, clicks.clicks.astype(float), train.group, clicks.position.copy()


def test_bad_input_is_refused_with_the_fix(log):
    X, clicks, group, position = _args(log)
    with pytest.raises(ValueError, match="position is required"):
        gbrank.fit_clicks(X, clicks, group, position=None)
    shown = position.copy()
    shown[group[0] + group[1]:group[0] + group[1] + group[2]] = -1
    no_clicks = clicks.copy()
    no_clicks[shown == -1] = 0
    with pytest.raises(ValueError, match=r"query 2 .* has no shown row .* drop it"):
        gbrank.fit_clicks(X, no_clicks, group, position=shown)
    unseen = position.copy()
    row = int(np.flatnonzero(clicks > 0)[0])
    unseen[row] = -1
    with pytest.raises(ValueError, match=rf"row {row} \(query \d+\) has .* clicks but position -1"):
        gbrank.fit_clicks(X, clicks, group, position=unseen)
    with pytest.raises(ValueError, match="at least one query must be held out"):
        gbrank.fit_clicks(X[:group[:2].sum()], clicks[:group[:2].sum()], group[:2], position=position[:group[:2].sum()])
    with pytest.raises(ValueError, match="the (held-out|training) queries have no click"):
        gbrank.fit_clicks(X, np.where(np.repeat(np.arange(group.size), group) == 0, clicks, 0.0), group,
                          position=position, held_out=0.05)
    with pytest.raises(ValueError, match=r"propensity=None\) reads no positions"):
        gbrank.fit_clicks(X, clicks, group, position=position, objective=gbrank.ips_listnet(propensity=None))
    with pytest.raises(TypeError, match="must be a gbrank click objective"):
        gbrank.fit_clicks(X, clicks, group, position=position, objective=gbrank.listnet())
    with pytest.raises(ValueError, match="one propensity per position"):
        gbrank.fit_clicks(X, clicks, group, position=position, objective=gbrank.pbm_listnet(propensity=[1.0, 0.5]))
    with pytest.raises(ValueError, match="engine must be"):
        gbrank.fit_clicks(X, clicks, group, position=position, engine="catboost")
    with pytest.raises(ValueError, match="held_out must be"):
        gbrank.fit_clicks(X, clicks, group, position=position, held_out=1.0)
    with pytest.raises(ValueError, match="clicks must be finite counts"):
        gbrank.fit_clicks(X, -clicks, group, position=position)
    with pytest.raises(ValueError, match="X has"):
        gbrank.fit_clicks(X[:-1], clicks, group, position=position)
    for share in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="never_shown"):
            gbrank.fit_clicks(X, clicks, group, position=position, never_shown=share)
    with pytest.raises(TypeError, match="never_shown"):
        gbrank.fit_clicks(X, clicks, group, position=position, never_shown="0.03")
    with pytest.raises(ValueError, match="an objective was given: leave never_shown out"):
        gbrank.fit_clicks(X, clicks, group, position=position, never_shown=0.03, objective=gbrank.pbm_listnet())
    for told in (None, "binary"):
        with pytest.raises(ValueError, match=r"read as whether each row was clicked in any session .*aggregate='count' "
                                             r"reads 0/1 clicks as counts\): leave never_shown out"):
            gbrank.fit_clicks(X, (clicks > 0).astype(float), group, position=position, never_shown=0.01,
                              aggregate=told)
    with pytest.raises(ValueError, match=r"aggregate='binary' reads .*row 0 has 2\.0: .*pass aggregate='count'"):
        gbrank.fit_clicks(X, np.where(np.arange(clicks.size) == 0, 2.0, clicks > 0), group, position=position,
                          aggregate="binary")
    for told in ("any", True):
        with pytest.raises(ValueError, match="aggregate must be one of 'count', 'binary'"):
            gbrank.fit_clicks(X, clicks, group, position=position, aggregate=told)
        with pytest.raises(ValueError, match="aggregate must be one of 'count', 'binary'"):
            gbrank.fit_propensity(X, clicks, group, position=position, aggregate=told)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("name", ["num_trees", "num_iterations", "n_estimators", "early_stopping_round",
                                  "objective", "loss", "metric", "eval_metric"])
def test_params_that_would_override_the_procedure_are_refused(log, engine, name):
    # LightGBM takes num_trees (any alias of num_iterations) in params over the rounds asked
    # for: fit_clicks would train and refit fewer rounds than max_rounds without a word
    X, clicks, group, position = _args(log)
    with pytest.raises(ValueError, match=rf"params may not set \['{name}'\]: fit_clicks .* max_rounds="):
        gbrank.fit_clicks(X, clicks, group, position=position, engine=engine, params={name: 3})
    with pytest.raises(ValueError, match=rf"params may not set \['{name}'\]: fit_propensity .* rounds="):
        gbrank.fit_propensity(X, clicks, group, position=position, engine=engine, params={name: 3})


def test_params_must_be_a_dict(log):
    X, clicks, group, position = _args(log)
    with pytest.raises(TypeError, match="params must be a dict"):
        gbrank.fit_clicks(X, clicks, group, position=position, params=[("num_leaves", 3)])
    with pytest.raises(TypeError, match="params must be a dict"):
        gbrank.fit_propensity(X, clicks, group, position=position, params="num_leaves=3")


def test_the_metric_refuses_the_training_set(log):
    _, clicks, group, position = _args(log)
    metric = HeldOutClickLikelihood(gbrank.pbm_listnet(propensity=np.ones(10)), None, clicks[:group[0]], group[:1],
                                    position=position[:group[0]])
    with pytest.raises(ValueError, match="give it only the held-out set"):
        metric(np.zeros(clicks.size))


def test_query_ids_give_the_fit_of_query_sizes(log):
    X, clicks, group, position = _args(log)
    by_size = gbrank.fit_clicks(X, clicks, group, position=position, params=THREADS["lightgbm"], max_rounds=5)
    by_id = gbrank.fit_clicks(X, clicks, qid=np.repeat(np.arange(group.size) * 7 + 3, group), position=position,
                              params=THREADS["lightgbm"], max_rounds=5)
    np.testing.assert_array_equal(by_id.curve, by_size.curve)
    np.testing.assert_array_equal(by_id.held_out_queries, by_size.held_out_queries)


# ----------------------------------------------------------------------------- cascade targets
@pytest.fixture(scope="module")
def cascade_log():
    data = make_ranking(200, (3, 20), 10, noise=0.5, seed=5)
    train, test = split_queries(data, (0.7, 0.3), seed=5)
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=30, top_k=10, click_model="cascade",
                          per_session=True, logging_fraction=0.002, seed=5)
    targets = gbrank.cascade_targets(log.session_rows, log.session_clicks, train.y.size, clip=0.2)
    assert not targets.examined.all()  # the fit must leave rows out
    return train, test, targets


@pytest.mark.parametrize("engine", ENGINES)
def test_cascade_targets_are_scored_by_each_rows_examinations(engine, cascade_log):
    from scipy.optimize import minimize_scalar

    pytest.importorskip(engine)
    train, _, targets = cascade_log
    fit = gbrank.fit_clicks(train.X, targets, train.group, engine=engine, params=THREADS[engine], max_rounds=20,
                            refit=False, seed=2)
    assert fit.propensity_ is None and fit.objective.factory == "ips_ranknet"
    assert fit.best_rounds == 1 + int(np.argmin(fit.curve)) and np.ptp(fit.curve) > 0
    query = np.repeat(np.arange(train.group.size), train.group)
    held = np.isin(query, fit.held_out_queries)
    sizes = np.bincount(query[held], minlength=train.group.size)[fit.held_out_queries]
    for k in (1, fit.best_rounds, 20):
        scores = gbrank.engines.predict(fit.booster, train.X[held & targets.examined], k)
        # the held-out fit scores the examined rows only: spread them back over the query's rows
        full = np.zeros(held.sum())
        full[targets.examined[held]] = scores
        best = minimize_scalar(lambda tau: direct_exposure_nll(full, targets.clicks[held], sizes,
                                                               targets.examinations[held], tau),
                               bounds=(0.0, 20.0), method="bounded", options={"xatol": 1e-10})
        assert fit.curve[k - 1] == pytest.approx(best.fun, rel=1e-7)
        assert fit.temperature[k - 1] == pytest.approx(best.x, rel=1e-4)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_cascade_refit_trains_on_every_examined_row(engine, cascade_log):
    pytest.importorskip(engine)
    train, test, targets = cascade_log
    objective = gbrank.ips_listnet(propensity=None)
    fit = gbrank.fit_clicks(train.X, targets, train.group, objective=objective, engine=engine,
                            params=THREADS[engine], max_rounds=15)
    X, y, group = targets.training_set(train.X, train.group)
    if engine == "lightgbm":
        import lightgbm as lgb

        booster = lgb.train({**THREADS[engine], **L2[engine], "objective": objective},
                            lgb.Dataset(X, y, group=group), fit.best_rounds)
    else:
        import xgboost as xgb

        booster = xgb.train({**THREADS[engine], **L2[engine], "base_score": 0.0}, xgb.DMatrix(X, y, group=group),
                            fit.best_rounds, obj=objective)
    np.testing.assert_allclose(fit.predict(test.X), gbrank.engines.predict(booster, test.X), rtol=1e-6, atol=1e-9)


def test_cascade_targets_refuse_propensities(cascade_log):
    train, _, targets = cascade_log
    for objective in (gbrank.ips_ranknet(), gbrank.pbm_listnet(propensity=None), gbrank.listnet()):
        with pytest.raises(ValueError, match=r"ips_ranknet\(propensity=None\)"):
            gbrank.fit_clicks(train.X, targets, train.group, objective=objective)
    with pytest.raises(ValueError, match="X has"):
        gbrank.fit_clicks(train.X[:-1], targets, train.group)
    with pytest.raises(ValueError, match="cascade targets: leave never_shown out"):
        gbrank.fit_clicks(train.X, targets, train.group, never_shown=0.03)


@pytest.fixture(scope="module")
def abandonment_log():
    # the clicks benchmark's world with the top 10 shown, 400 queries
    data = make_ranking(400, (30, 30), 40, noise=1.0, seed=0)
    train, test = split_queries(data, (0.7, 0.3), seed=0)
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=50, top_k=10,
                          click_model="cascade_abandon", per_session=True, logging_fraction=0.002, seed=0)
    targets = gbrank.cascade_targets(log.session_rows, log.session_clicks, train.y.size, clip=0.2)
    return train, test, log, targets


@pytest.mark.parametrize("engine", ENGINES)
def test_cascade_targets_with_positions_are_the_targets_as_click_counts(engine, abandonment_log):
    """With positions, the cascade targets of the examined rows are trained as click counts
    at their positions, the rows never examined as never shown: the default on counts."""
    pytest.importorskip(engine)
    train, test, log, targets = abandonment_log
    fit = gbrank.fit_clicks(train.X, targets, train.group, position=log.position, engine=engine,
                            params=THREADS[engine], max_rounds=20)
    by_hand = gbrank.fit_clicks(train.X, np.where(targets.examined, targets.targets, 0.0), train.group,
                                position=np.where(targets.examined, log.position, -1), engine=engine,
                                params=THREADS[engine], max_rounds=20)
    assert fit.propensity_fit is not None and fit.objective.factory == "pbm_listnet"
    assert fit.best_rounds == by_hand.best_rounds
    np.testing.assert_array_equal(fit.curve, by_hand.curve)
    np.testing.assert_array_equal(fit.propensity_, by_hand.propensity_)
    np.testing.assert_array_equal(fit.predict(test.X), by_hand.predict(test.X))
    # the examination on top of the cascade's falls with the position, as the users leave
    assert np.all(np.diff(fit.propensity_[:5]) < 0)


def test_cascade_targets_of_one_session_are_still_counts(abandonment_log):
    # with one session every target is 0 or 1: still clicks per examination, not 0/1 clicks
    train, _, log, _ = abandonment_log
    first = np.unique(log.session_query, return_index=True)[1]
    one = gbrank.cascade_targets(log.session_rows[first], log.session_clicks[first], train.y.size)
    fit = gbrank.fit_clicks(train.X, one, train.group, position=log.position, params=THREADS["lightgbm"],
                            max_rounds=5)
    assert fit.propensity_fit is not None and fit.params["lambda_l2"] == CLICK_L2


def test_abandonment_is_corrected_where_the_cascade_alone_is_not(abandonment_log):
    train, test, log, targets = abandonment_log
    params = {**THREADS["lightgbm"], "num_leaves": 15}
    raw = gbrank.fit_clicks(train.X, log.clicks, train.group, position=log.position, params=params,
                            objective=gbrank.pbm_listnet(propensity=np.ones(10)), max_rounds=60)
    cascade = gbrank.fit_clicks(train.X, targets, train.group, params=params, max_rounds=60)
    both = gbrank.fit_clicks(train.X, targets, train.group, position=log.position, params=params, max_rounds=60)
    # a session without a click is read by the cascade alone as every document examined: it
    # ranks no better than the raw clicks (0.494 against 0.517; with the positions 0.663)
    assert _ndcg(both, test) > max(_ndcg(cascade, test), _ndcg(raw, test)) + 0.05


def test_cascade_targets_with_positions_refuse_what_does_not_apply(abandonment_log):
    train, _, log, targets = abandonment_log
    with pytest.raises(ValueError, match=r"position must hold one display position per row of the cascade targets"):
        gbrank.fit_clicks(train.X, targets, train.group, position=log.position[:-1])
    with pytest.raises(ValueError, match="the clicks are cascade targets: leave never_shown out"):
        gbrank.fit_clicks(train.X, targets, train.group, position=log.position, never_shown=0.03)
    np.testing.assert_array_equal(targets.position, log.position)  # the sessions' ranks: a deterministic ranker's
    shifted = np.where(log.position > 0, log.position + 1, -1)
    row = int(np.flatnonzero(targets.examined)[0])
    with pytest.raises(ValueError, match=rf"position\[{row}\] = {shifted[row]}, but the sessions show row {row} at "
                                         rf"rank {log.position[row]}: give the positions of the sessions"):
        gbrank.fit_clicks(train.X, targets, train.group, position=shifted)
    # a stochastic policy shows a row at several ranks: no position per row to estimate an examination for
    moving = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=10, top_k=10, click_model="cascade",
                             policy="plackett_luce", n_policy_samples=5, per_session=True, seed=0)
    sampled = gbrank.cascade_targets(moving.session_rows, moving.session_clicks, train.y.size)
    with pytest.raises(ValueError, match=r"the sessions show row \d+ at more than one rank: .*leave position out"):
        gbrank.fit_clicks(train.X, sampled, train.group, position=sampled.position)


# ----------------------------------------------------------------------------- several objectives
@pytest.mark.parametrize("engine", ENGINES)
def test_of_several_objectives_the_one_that_explains_the_held_out_clicks_best_is_refit(engine, log):
    pytest.importorskip(engine)
    train, test, clicks = log
    objectives = [gbrank.ips_ranknet(), gbrank.pbm_listnet()]
    fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, objective=objectives,
                            engine=engine, params=THREADS[engine], max_rounds=25)
    assert fit.candidates == tuple(objectives) and fit.selection.shape == (2,)
    chosen = int(np.argmin(fit.selection))
    assert fit.objective is objectives[chosen]
    # each candidate's figure is the profiled criterion of its own held-out fit at its best round
    query = np.repeat(np.arange(train.group.size), train.group)
    held = np.isin(query, fit.held_out_queries)
    offsets = np.concatenate(([0], np.cumsum(train.group[fit.held_out_queries])))
    for objective, figure in zip(objectives, fit.selection):
        alone = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, objective=objective,
                                  engine=engine, params=THREADS[engine], max_rounds=25, refit=False)
        scores = alone.predict(train.X[held])
        assert figure == pytest.approx(profiled_loss(scores, clicks.clicks[held], offsets, clicks.position[held]),
                                      rel=1e-9)
    # and the chosen one is refit as if it had been given alone
    single = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position,
                               objective=objectives[chosen], engine=engine, params=THREADS[engine], max_rounds=25)
    assert single.best_rounds == fit.best_rounds
    np.testing.assert_allclose(fit.predict(test.X), single.predict(test.X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_default_on_counts_fits_the_propensities_first_then_holds_them(engine, log):
    pytest.importorskip(engine)
    train, test, clicks = log
    params = THREADS[engine]
    fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                            params=params, max_rounds=12)
    # the first stage is pbm_listnet's joint estimate after max_rounds rounds on every query,
    # from the click rates and from flat propensities, and their geometric mean, by hand
    ends = []
    for start in ("click_rate", "flat"):
        objective = gbrank.pbm_listnet(start=start)
        _, dtrain = _train_by_hand(engine, params, train, clicks, objective, 12)
        ends.append(objective.binding(dtrain))
    settled = fit.propensity_fit
    assert settled.rounds == 12
    np.testing.assert_allclose(settled.from_click_rates, ends[0].propensity_, rtol=1e-12)
    np.testing.assert_allclose(settled.from_flat, ends[1].propensity_, rtol=1e-12)
    np.testing.assert_allclose(settled.propensity_, np.sqrt(ends[0].propensity_ * ends[1].propensity_), rtol=1e-12)
    np.testing.assert_array_equal(settled.left_out_, ends[0].left_out_)
    np.testing.assert_array_equal(ends[1].left_out_, ends[0].left_out_)
    # the two ends differ, and bracket the geometric mean
    assert not np.allclose(settled.from_click_rates, settled.from_flat)
    assert np.all(np.minimum(settled.from_click_rates, settled.from_flat) <= settled.propensity_ * (1 + 1e-12))
    assert np.all(settled.propensity_ <= np.maximum(settled.from_click_rates, settled.from_flat) * (1 + 1e-12))
    # then pbm_listnet with the estimate held, as if given by hand; the rows never shown take no part
    assert [c.factory for c in fit.candidates] == ["pbm_listnet"] and fit.objective.mode == "known"
    np.testing.assert_array_equal(fit.propensity_, settled.propensity_)
    np.testing.assert_array_equal(fit.objective.propensity, settled.propensity_)
    given = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=settled.position, engine=engine,
                              params=params, max_rounds=12,
                              objective=gbrank.pbm_listnet(propensity=settled.propensity_))
    assert given.best_rounds == fit.best_rounds
    np.testing.assert_array_equal(given.curve, fit.curve)
    np.testing.assert_allclose(given.predict(test.X), fit.predict(test.X), rtol=1e-12, atol=1e-12)
    # never_shown: the rows never shown one position past the deepest, at that share of its propensity
    assert (clicks.position == -1).any() and not settled.left_out_.any()
    exposed = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                                params=params, max_rounds=12, never_shown=0.05)
    np.testing.assert_array_equal(exposed.propensity_, settled.propensity_)
    np.testing.assert_array_equal(exposed.left_out_, settled.left_out_)
    theta = np.append(settled.propensity_, 0.05 * settled.propensity_[-1])
    np.testing.assert_array_equal(exposed.objective.propensity, theta)
    given = gbrank.fit_clicks(train.X, clicks.clicks, train.group, engine=engine, params=params, max_rounds=12,
                              position=np.where(clicks.position == -1, settled.propensity_.size + 1,
                                                settled.position),
                              objective=gbrank.pbm_listnet(propensity=theta))
    np.testing.assert_array_equal(given.curve, exposed.curve)
    np.testing.assert_allclose(given.predict(test.X), exposed.predict(test.X), rtol=1e-12, atol=1e-12)
    assert not np.allclose(exposed.predict(test.X), fit.predict(test.X))
    # and the public function gives the same first stage
    alone = gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                                  params=params, rounds=12)
    np.testing.assert_array_equal(alone.propensity_, settled.propensity_)
    np.testing.assert_array_equal(alone.position, settled.position)
    with pytest.raises(ValueError, match="empty sequence"):
        gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, objective=[])


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell")
def test_rows_never_shown_count_as_examined_without_a_click_at_the_share_given():
    # a logging ranker fitted on 5% of the queries shows its top 10 of 30: the documents it
    # never showed are worse than those it showed
    data = make_ranking(300, (30, 30), 10, seed=11)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, logging_fraction=0.05,
                          seed=11)
    unshown = log.position == -1
    assert data.y[unshown].mean() < data.y[~unshown].mean()
    fits = {share: gbrank.fit_clicks(data.X, log.clicks, data.group, position=log.position, refit=False,
                                     params=THREADS["lightgbm"], max_rounds=30, never_shown=share)
            for share in (0.0, 0.03, 0.3)}
    # the held-out criterion counts each row never shown as exposed to share x the deepest
    # propensity, without a click: the direct sum over the held-out queries, at the temperature
    # a generic minimiser finds
    from scipy.optimize import minimize_scalar

    offsets = np.concatenate(([0], np.cumsum(data.group)))
    for share, fit in fits.items():
        theta = fit.propensity_fit.propensity_
        exposure = np.where(unshown, share * theta[-1], theta[log.position - 1])
        held = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in fit.held_out_queries])
        args = (gbrank.engines.predict(fit.booster, data.X[held], fit.best_rounds), log.clicks[held],
                data.group[fit.held_out_queries], exposure[held])
        direct = minimize_scalar(lambda tau, a=args: direct_exposure_nll(*a, tau), bounds=(0, 50), method="bounded")
        assert fit.curve[fit.best_rounds - 1] == pytest.approx(direct.fun, rel=1e-6)
    # the more exposure, the fewer rows never shown the model puts in each query's top 10
    def unshown_in_top10(fit):
        scores = fit.predict(data.X)
        return np.mean([unshown[offsets[q] + np.argsort(-scores[offsets[q]:offsets[q + 1]])[:10]].mean()
                        for q in range(data.group.size)])

    shares = [unshown_in_top10(fits[share]) for share in (0.0, 0.03, 0.3)]
    assert shares[0] > shares[1] > shares[2]


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell")
@pytest.mark.parametrize("engine", ENGINES)
def test_every_scipy_sparse_format_gives_the_fit_of_csr(engine):
    pytest.importorskip(engine)
    sparse = pytest.importorskip("scipy.sparse")
    data = make_ranking(120, (5, 20), 8, seed=2)
    X = np.where(np.abs(data.X) < 0.5, 0.0, data.X)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=30, top_k=10, seed=2)

    def fit(M):
        return gbrank.fit_clicks(M, log.clicks, data.group, position=log.position, engine=engine,
                                 params=THREADS[engine], max_rounds=8)

    csr = fit(sparse.csr_matrix(X))
    for form in (sparse.csc_matrix, sparse.coo_matrix, sparse.csr_array, sparse.csc_array):
        other = fit(form(X))
        assert other.best_rounds == csr.best_rounds
        np.testing.assert_array_equal(other.predict(form(X)), csr.predict(sparse.csr_matrix(X)))


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell")
def test_a_fit_on_a_dataframe_refuses_its_columns_in_another_order(log):
    pd = pytest.importorskip("pandas")
    train, test, clicks = log
    names = [f"f{i}" for i in range(train.X.shape[1])]
    frame = pd.DataFrame(train.X, columns=names)
    fit = gbrank.fit_clicks(frame, clicks.clicks, train.group, position=clicks.position, params=THREADS["lightgbm"],
                            max_rounds=5)
    assert list(fit.feature_names_in_) == names
    np.testing.assert_array_equal(fit.predict(pd.DataFrame(test.X, columns=names)), fit.predict(test.X))
    with pytest.raises(ValueError, match=r"X has the columns .*pass X\[fit.feature_names_in_\]"):
        fit.predict(pd.DataFrame(test.X, columns=names)[names[::-1]])
    on_array = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position,
                                 params=THREADS["lightgbm"], max_rounds=5)
    assert on_array.feature_names_in_ is None


def test_the_propensities_fitted_first_leave_out_the_rows_below_a_fold():
    data = make_ranking(200, (15, 15), 10, seed=6)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=15, fold=5,
                          logging_fraction=0.002, seed=6)
    est = gbrank.fit_propensity(data.X, log.clicks, data.group, position=log.position, params=THREADS["lightgbm"],
                                rounds=20)
    np.testing.assert_array_equal(est.left_out_, np.arange(1, 16) > 5)
    np.testing.assert_array_equal(est.position, np.where(log.position > 5, -1, log.position))
    assert (est.propensity_[5:] == 1.0).all() and (np.diff(est.propensity_[:5]) < 0).all()
    # trained with them, the model does not learn the logging order from the unexamined rows
    fit = gbrank.fit_clicks(data.X, log.clicks, data.group, position=log.position, params=THREADS["lightgbm"],
                            max_rounds=20)
    np.testing.assert_array_equal(fit.propensity_fit.position, est.position)
    np.testing.assert_array_equal(fit.left_out_, est.left_out_)
    # an estimating objective's fit says which of its propensities nothing read, refitted or not
    for refit in (True, False):
        fit = gbrank.fit_clicks(data.X, log.clicks, data.group, position=log.position, params=THREADS["lightgbm"],
                                max_rounds=10, objective=gbrank.ips_ranknet(), refit=refit)
        np.testing.assert_array_equal(fit.left_out_, np.arange(1, 16) > 5)
        assert (fit.propensity_[5:] == 1.0).all()


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell")
def test_positions_no_row_was_shown_at_are_reported_as_read_by_nothing():
    # a log of the second results page alone (positions 11..20), and one that never shows
    # position 3: the estimate is relative to the first position shown, and the positions
    # without a row are in left_out_, whatever fit reports them
    data = make_ranking(150, (10, 10), 8, seed=3)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, logging_fraction=0.002,
                          seed=3)
    top = gbrank.fit_clicks(data.X, log.clicks, data.group, position=log.position, params=THREADS["lightgbm"],
                            max_rounds=10)
    assert not top.left_out_.any()
    page = np.where(log.position > 0, log.position + 10, -1)
    second = gbrank.fit_clicks(data.X, log.clicks, data.group, position=page, params=THREADS["lightgbm"],
                               max_rounds=10)
    np.testing.assert_array_equal(second.left_out_, np.arange(1, 21) <= 10)
    np.testing.assert_array_equal(second.propensity_fit.left_out_, np.arange(1, 21) <= 10)
    np.testing.assert_allclose(second.propensity_[10:], top.propensity_, rtol=1e-12)
    np.testing.assert_allclose(second.predict(data.X), top.predict(data.X), rtol=1e-12, atol=1e-12)
    gap = np.where(log.position >= 3, log.position + 1, log.position)
    for refit in (True, False):
        fit = gbrank.fit_clicks(data.X, log.clicks, data.group, position=gap, params=THREADS["lightgbm"],
                                max_rounds=10, objective=gbrank.ips_ranknet(), refit=refit)
        np.testing.assert_array_equal(fit.left_out_, np.arange(1, 12) == 3)
    dtrain = gbrank.engines.lightgbm.dataset(data.X, log.clicks, data.group, position=gap)
    objective = gbrank.pbm_listnet()
    lgb = pytest.importorskip("lightgbm")
    lgb.train({**THREADS["lightgbm"], "objective": objective}, dtrain, 3)
    np.testing.assert_array_equal(objective.binding(dtrain).left_out_, np.arange(1, 12) == 3)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_a_query_wholly_below_the_fold_takes_no_part(engine):
    # a second results page nobody reached: once its positions are found never examined, the
    # query has no examined row, held out or trained on
    data = make_ranking(180, (10, 10), 10, seed=7)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=10, logging_fraction=0.002,
                          seed=7)
    clicks, position = log.clicks.astype(float), log.position.copy()
    second = np.arange(150 * 10, 180 * 10)  # the rows of queries 150..179
    clicks[second] = 0.0
    position[second] = 11 + (np.arange(second.size) % 10) // 2
    fit = gbrank.fit_clicks(data.X, clicks, data.group, position=position, engine=engine, params=THREADS[engine],
                            max_rounds=10, held_out=0.3)
    assert fit.propensity_fit.left_out_[10:].all() and not fit.propensity_fit.left_out_[:10].any()
    assert (fit.propensity_fit.position[second] == -1).all()
    assert np.isin(np.arange(150, 180), fit.held_out_queries).any()
    assert np.isfinite(fit.curve).all()


def test_fit_propensity_refuses_bad_input_with_the_fix(log):
    train, _, clicks = log
    with pytest.raises(ValueError, match="position is required"):
        gbrank.fit_propensity(train.X, clicks.clicks, train.group)
    with pytest.raises(ValueError, match="rounds"):
        gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position, rounds=0)
    with pytest.raises(ValueError, match="engine must be"):
        gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position, engine="catboost")
    with pytest.raises(ValueError, match="X has"):
        gbrank.fit_propensity(train.X[:-1], clicks.clicks, train.group, position=clicks.position)
    bad = clicks.clicks.astype(float)
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"clicks\[3\]"):
        gbrank.fit_propensity(train.X, bad, train.group, position=clicks.position)
    with pytest.raises(ValueError, match="the log has no click"):
        gbrank.fit_propensity(train.X, 0 * clicks.clicks, train.group, position=clicks.position)


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell:UserWarning")  # small logs of 0/1 clicks
def test_the_default_for_binary_clicks_is_the_cloglog_likelihood(log):
    train, _, clicks = log
    binary = (clicks.clicks > 0).astype(float)
    fit = gbrank.fit_clicks(train.X, binary, train.group, position=clicks.position, params=THREADS["lightgbm"],
                            max_rounds=5)
    assert [c.factory for c in fit.candidates] == ["pbm_cloglog"] and fit.candidates[0].mode == "estimate"
    given = gbrank.fit_clicks(train.X, binary, train.group, position=clicks.position, params=THREADS["lightgbm"],
                              max_rounds=5, objective=gbrank.pbm_cloglog())
    assert given.best_rounds == fit.best_rounds
    np.testing.assert_array_equal(given.predict(train.X), fit.predict(train.X))
    # said in so many words, the same
    told = gbrank.fit_clicks(train.X, binary, train.group, position=clicks.position, params=THREADS["lightgbm"],
                             max_rounds=5, aggregate="binary")
    np.testing.assert_array_equal(told.predict(train.X), fit.predict(train.X))
    # told they are counts (each over one session), the procedure on counts
    fit = gbrank.fit_clicks(train.X, binary, train.group, position=clicks.position, params=THREADS["lightgbm"],
                            max_rounds=2, aggregate="count")
    assert [c.factory for c in fit.candidates] == ["pbm_listnet"] and fit.propensity_fit is not None
    assert fit.params["lambda_l2"] == CLICK_L2
    # one count above 1 and the clicks are counts: the click-count objectives
    binary[np.flatnonzero(binary)[0]] = 2.0
    fit = gbrank.fit_clicks(train.X, binary, train.group, position=clicks.position, params=THREADS["lightgbm"],
                            max_rounds=2)
    assert [c.factory for c in fit.candidates] == ["pbm_listnet"] and fit.propensity_fit is not None


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell:UserWarning")  # one session's clicks per row
def test_a_row_per_session_told_counts_is_the_procedure_on_the_counts_of_those_sessions():
    # a deterministic logger's sessions, a row per document shown in each (its click 0 or 1),
    # a query's sessions one list: with aggregate="count" the position-based likelihood of the
    # rows is that of the counts of those sessions, up to a constant per query
    data = make_ranking(120, (8, 12), 6, seed=3)
    sessions = 6
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=sessions, top_k=5, per_session=True,
                          seed=3)
    shown = log.session_rows >= 0
    rows = log.session_rows[shown]
    clicks = log.session_clicks[shown].astype(float)
    position = np.broadcast_to(np.arange(1, shown.shape[1] + 1), shown.shape)[shown]
    qid = np.repeat(log.session_query, shown.sum(axis=1))
    params = THREADS["lightgbm"]
    fit = gbrank.fit_clicks(data.X[rows], clicks, qid=qid, position=position, params=params, max_rounds=6,
                            aggregate="count")
    assert fit.objective.factory == "pbm_listnet" and fit.propensity_fit is not None
    assert fit.params["lambda_l2"] == CLICK_L2
    theta = fit.propensity_
    scores = np.random.default_rng(0).normal(size=data.y.size)
    per_session = gbrank.pbm_listnet(propensity=theta).bind(clicks, np.unique(qid, return_counts=True)[1],
                                                             position=position)
    counts = gbrank.pbm_listnet(propensity=theta).bind(log.clicks.astype(float), data.group, position=log.position)
    query_clicks = np.add.reduceat(log.clicks.astype(float), np.cumsum(data.group) - data.group)
    # every shown document is in every session: each query's softmax sums over `sessions` copies
    assert per_session.loss(scores[rows]) == pytest.approx(counts.loss(scores) + np.log(sessions) * query_clicks.sum(),
                                                           rel=1e-9)
    # told nothing, 0/1 clicks read as whether clicked in any session
    default = gbrank.fit_clicks(data.X[rows], clicks, qid=qid, position=position, params=params, max_rounds=6)
    assert default.objective.factory == "pbm_cloglog" and default.params["lambda_l2"] == BINARY_CLICK_L2
    # fit_propensity takes its penalty by the same reading
    first = gbrank.fit_propensity(data.X[rows], clicks, qid=qid, position=position, params=params, rounds=6,
                                  aggregate="count")
    assert first.params["lambda_l2"] == CLICK_L2
    assert gbrank.fit_propensity(data.X[rows], clicks, qid=qid, position=position, params=params,
                                 rounds=6).params["lambda_l2"] == BINARY_CLICK_L2


def test_the_criterion_leaves_out_rows_at_positions_the_fit_takes_as_unexamined():
    # below a fold nobody scrolls past, the estimate takes the clickless positions as never
    # examined and trains without their rows; the criterion must do the same, or it scores
    # them as examined and irrelevant and rewards the model for learning the logging order
    import lightgbm as lgb

    data = make_ranking(200, (15, 15), 10, seed=6)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=50, top_k=15, fold=5,
                          logging_fraction=0.002, seed=6)
    held_q = np.arange(data.group.size) % 5 == 0
    held = np.repeat(held_q, data.group)
    objective = gbrank.pbm_listnet()
    dtrain = lgb.Dataset(data.X[~held], log.clicks[~held], group=data.group[~held_q])
    dvalid = lgb.Dataset(data.X[held], log.clicks[held], group=data.group[held_q], reference=dtrain)
    metric = HeldOutClickLikelihood(objective, dtrain, log.clicks[held], data.group[held_q], position=log.position[held])
    booster = lgb.train({"objective": gbrank.engines.with_position(objective, log.position[~held]), "metric": "None",
                         "verbose": -1, "num_threads": 1}, dtrain, 10, valid_sets=[dvalid], feval=metric.lightgbm)
    binding = objective.binding(dtrain)
    np.testing.assert_array_equal(binding.unexamined_, np.arange(1, 16) > 5)
    below = log.position[held].copy()
    below[below > 5] = -1
    value, _ = click_likelihood(booster.predict(data.X[held], raw_score=True), log.clicks[held], data.group[held_q],
                                position=below, propensity=binding.propensity_)
    assert metric.curve[-1] == pytest.approx(value, rel=1e-9)


@pytest.mark.filterwarnings("ignore:the held-out clicks hardly tell:UserWarning")  # small logs of 0/1 clicks
@pytest.mark.parametrize("engine", ENGINES)
def test_an_l2_penalty_is_set_unless_params_give_one(engine, log):
    pytest.importorskip(engine)
    train, test, clicks = log

    def fit(**extra):
        return gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                                 params={**THREADS[engine], **extra}, max_rounds=8,
                                 objective=gbrank.ips_listnet())

    default, stated = fit(), fit(**L2[engine])
    np.testing.assert_array_equal(default.curve, stated.curve)
    np.testing.assert_array_equal(default.predict(test.X), stated.predict(test.X))
    assert default.params == {**THREADS[engine], **L2[engine]} == stated.params
    # every alias of the engine's parameter is the user's own value, not overridden
    names = {"lightgbm": ["lambda_l2", "reg_lambda", "lambda", "l2_regularization"],
             "xgboost": ["lambda", "reg_lambda"]}[engine]
    unpenalised_curve = fit(**{names[0]: 0.0}).curve
    assert not np.allclose(unpenalised_curve, default.curve)
    for name in names[1:]:
        np.testing.assert_array_equal(fit(**{name: 0.0}).curve, unpenalised_curve, err_msg=name)
    # fit_propensity trains alike
    alone = gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                                  params=THREADS[engine], rounds=40)
    by_hand = gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                                    params={**THREADS[engine], **L2[engine]}, rounds=40)
    unpenalised = gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position,
                                        engine=engine, params={**THREADS[engine], names[0]: 0.0}, rounds=40)
    np.testing.assert_array_equal(alone.propensity_, by_hand.propensity_)
    assert not np.allclose(alone.propensity_, unpenalised.propensity_)
    assert alone.params == {**THREADS[engine], **L2[engine]} and unpenalised.params[names[0]] == 0.0
    # 0/1 clicks, noisier labels, get the larger penalty, in both functions; a value given is kept
    binary = (clicks.clicks > 0).astype(float)

    def fit_binary(**extra):
        return gbrank.fit_clicks(train.X, binary, train.group, position=clicks.position, engine=engine,
                                 params={**THREADS[engine], **extra}, max_rounds=8,
                                 objective=gbrank.ips_listnet())

    default, stated = fit_binary(), fit_binary(**BINARY_L2[engine])
    np.testing.assert_array_equal(default.curve, stated.curve)
    assert default.params == {**THREADS[engine], **BINARY_L2[engine]} == stated.params
    assert not np.allclose(fit_binary(**L2[engine]).curve, default.curve)
    assert fit_binary(**{names[-1]: 0.0}).params == {**THREADS[engine], **LEAVES[engine], names[-1]: 0.0}
    alone = gbrank.fit_propensity(train.X, binary, train.group, position=clicks.position, engine=engine,
                                  params=THREADS[engine], rounds=40)
    assert alone.params == {**THREADS[engine], **BINARY_L2[engine]}


def test_lightgbm_trains_trees_of_fifteen_leaves_unless_params_say_otherwise(log):
    train, _, clicks = log

    def leaves(fit):
        return max(tree["num_leaves"] for tree in fit.booster.dump_model()["tree_info"])

    def fit(**extra):
        return gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position,
                                 params={**THREADS["lightgbm"], "min_data_in_leaf": 2, **extra}, max_rounds=6,
                                 objective=gbrank.ips_listnet())

    default = fit()
    assert default.params["num_leaves"] == CLICK_NUM_LEAVES and leaves(default) == CLICK_NUM_LEAVES
    for name in ("num_leaves", "num_leaf", "max_leaves", "max_leaf", "max_leaf_nodes"):
        given = fit(**{name: 31})
        assert "num_leaves" not in given.params or name == "num_leaves", name
        assert leaves(given) > CLICK_NUM_LEAVES, name
    alone = gbrank.fit_propensity(train.X, clicks.clicks, train.group, position=clicks.position,
                                  params=THREADS["lightgbm"], rounds=5)
    assert alone.params["num_leaves"] == CLICK_NUM_LEAVES


# ----------------------------------------------------------------------------- the held-out evidence
@pytest.mark.parametrize("engine", ENGINES)
def test_the_held_out_gain_is_the_chosen_fit_against_the_positions_alone(engine, log):
    import warnings

    from gbrank.click_training import _profiled_queries

    pytest.importorskip(engine)
    train, _, clicks = log
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an informative log: no warning
        fit = gbrank.fit_clicks(train.X, clicks.clicks, train.group, position=clicks.position, engine=engine,
                                params=THREADS[engine], max_rounds=25, refit=False)
    held_q = np.zeros(train.group.size, dtype=bool)
    held_q[fit.held_out_queries] = True
    held = np.repeat(held_q, train.group)
    position = fit.propensity_fit.position[held]
    scores, held_clicks = fit.predict(train.X[held]), clicks.clicks[held]
    # the per-query losses at the joint optimum (theta and tau fitted on all held-out queries
    # together) sum to the criterion
    sizes = train.group[held_q]
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    fitted, total = _profiled_queries(scores, held_clicks, offsets, position)
    alone, _ = _profiled_queries(np.zeros(held_clicks.size), held_clicks, offsets, position)
    assert total == held_clicks[position >= 1].sum()
    assert fitted.sum() / total == pytest.approx(fit.selection[0], rel=1e-9)
    # a query without a click counts for nothing
    no_clicks = np.add.reduceat(held_clicks * (position >= 1), offsets[:-1]) == 0
    np.testing.assert_array_equal(fitted[no_clicks], 0.0)
    np.testing.assert_array_equal(alone[no_clicks], 0.0)
    difference = alone - fitted
    gain, error = fit.held_out_gain
    assert gain == pytest.approx(difference.sum() / total, rel=1e-12)
    assert gain == pytest.approx(profiled_loss(np.zeros(held_clicks.size), held_clicks, offsets, position)
                                 - fit.selection[0], rel=1e-9)
    assert error == pytest.approx(math.sqrt(sizes.size * np.var(difference, ddof=1)) / total, rel=1e-12)
    assert gain > error > 0


@pytest.mark.parametrize("engine", ENGINES)
def test_clicks_the_features_do_not_explain_are_warned_about(engine, log):
    pytest.importorskip(engine)
    train, _, clicks = log
    # the same positions, the clicks shuffled among the rows at each position: nothing in the
    # features explains them (one shuffle; the test is one standard error, so some shuffles
    # pass it by chance)
    rng = np.random.default_rng(1)
    shuffled = clicks.clicks.copy()
    for p in np.unique(clicks.position):
        at = np.flatnonzero(clicks.position == p)
        shuffled[at] = shuffled[rng.permutation(at)]
    with pytest.warns(UserWarning, match=r"hardly tell the model at its chosen round \(\d+\) from the positions alone"):
        fit = gbrank.fit_clicks(train.X, shuffled, train.group, position=clicks.position, engine=engine,
                                params=THREADS[engine], max_rounds=25)
    gain, error = fit.held_out_gain
    assert not gain > error


def test_cascade_targets_have_no_held_out_gain(cascade_log):
    train, _, targets = cascade_log
    fit = gbrank.fit_clicks(train.X, targets, train.group, params=THREADS["lightgbm"], max_rounds=5)
    assert fit.held_out_gain is None
