"""gbrank.harvest_propensity: position bias from documents shown at several positions
(intervention harvesting, AllPairs extremum estimator), against an independent direct
implementation, against the known propensities, and against the click objectives' own
estimate on one deterministic ranker."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.objectives.interventions import intervention_sets

LGB = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0, "min_data_in_leaf": 5}


def direct_sets(qid, doc, position, clicks, impressions, top, weighting):
    """The interventional sets written out with dictionaries and loops."""
    cells: dict = {}
    for q, d, p, c, n in zip(qid, doc, position, clicks, impressions):
        if 1 <= p <= top:
            old = cells.get((q, d, p), (0.0, 0.0))
            cells[(q, d, p)] = (old[0] + c, old[1] + n)
    by_pair: dict = {}
    for (q, d, p), value in cells.items():
        by_pair.setdefault((q, d), {})[p] = value
    clicked = np.zeros((top, top))
    not_clicked = np.zeros((top, top))
    for shown in by_pair.values():
        for k, k2 in itertools.permutations(shown, 2):
            (c, n), (_, n2) = shown[k], shown[k2]
            w = n * n2 / (n + n2) if weighting == "harmonic" else 1.0
            clicked[k - 1, k2 - 1] += w * c / n
            not_clicked[k - 1, k2 - 1] += w * (1 - c / n)
    return clicked, not_clicked


def direct_all_pairs(clicked, not_clicked):
    """AllPairs as the paper writes it: maximise sum c log(theta_k r_kk') + nc log(1 - theta_k r_kk')
    over theta and symmetric r in (0, 1), with scipy's bounded optimiser, then divide by theta_1."""
    optimize = pytest.importorskip("scipy.optimize")
    top = clicked.shape[0]
    sets = [(k, k2) for k in range(top) for k2 in range(k + 1, top) if clicked[k, k2] + clicked[k2, k] > 0]

    def unpack(x):
        return x[:top], dict(zip(sets, x[top:]))

    def negative_likelihood(x):
        theta, r = unpack(x)
        total = 0.0
        for (k, k2), rel in r.items():
            for a, b in ((k, k2), (k2, k)):
                mu = theta[a] * rel
                total += clicked[a, b] * math.log(mu) + not_clicked[a, b] * math.log(1 - mu)
        return -total

    x0 = np.concatenate((np.full(top, 0.5), np.full(len(sets), 0.5)))
    fit = optimize.minimize(negative_likelihood, x0, method="L-BFGS-B", bounds=[(1e-6, 1 - 1e-6)] * x0.size,
                            options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000, "maxfun": 200000})
    theta = fit.x[:top]
    return theta / theta[0]


def _noisy_logs(seed, n_queries=40, docs=6, loggers=3, sessions=50, eta=1.0):
    rng = np.random.default_rng(seed)
    theta = (1.0 / np.arange(1, docs + 1)) ** eta
    gamma = rng.uniform(0.05, 0.9, size=(n_queries, docs))
    rows = []
    for _ in range(loggers):
        for q in range(n_queries):
            order = rng.permutation(docs)
            for p, d in enumerate(order, start=1):
                n = int(rng.integers(sessions // 2, sessions + 1))
                rows.append((q, d, p, rng.binomial(n, theta[p - 1] * gamma[q, d]), n))
    qid, doc, position, clicks, impressions = map(np.array, zip(*rows))
    return qid, doc, position, clicks, impressions, theta


# =========================================================================== the estimator
@pytest.mark.parametrize("weighting", ["harmonic", "equal"])
def test_sets_match_a_direct_construction(weighting):
    qid, doc, position, clicks, impressions, _ = _noisy_logs(0, n_queries=8, docs=4)
    qid = np.array([f"q{q}" for q in qid])  # any value pandas groups by
    got_c, got_nc, n_pairs = intervention_sets(qid, doc, position, clicks, impressions=impressions,
                                               weighting=weighting)
    want_c, want_nc = direct_sets(qid, doc, position, clicks, impressions, 4, weighting)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-12)
    np.testing.assert_allclose(got_nc, want_nc, rtol=1e-12)
    assert n_pairs.sum() > 0 and np.all(n_pairs == n_pairs.T)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("weighting", ["harmonic", "equal"])
def test_estimate_matches_a_direct_implementation_of_all_pairs(seed, weighting):
    qid, doc, position, clicks, impressions, _ = _noisy_logs(seed, n_queries=15, docs=4, sessions=20)
    got = gbrank.harvest_propensity(qid, doc, position, clicks, impressions=impressions, weighting=weighting)
    want = direct_all_pairs(*direct_sets(qid, doc, position, clicks, impressions, 4, weighting))
    np.testing.assert_allclose(got, want, rtol=2e-4)


def test_expected_clicks_give_the_true_propensities_exactly():
    rng = np.random.default_rng(5)
    theta = np.sort(rng.uniform(0.05, 1.0, 8))[::-1]
    theta /= theta[0]
    gamma = rng.uniform(0.1, 0.9, size=(20, 8))
    rows = []
    for logger in range(2):
        for q in range(20):
            for p, d in enumerate(rng.permutation(8), start=1):
                n = 100 * (logger + 1)
                rows.append((q, d, p, n * theta[p - 1] * gamma[q, d], n))
    qid, doc, position, clicks, impressions = map(np.array, zip(*rows))
    np.testing.assert_allclose(gbrank.harvest_propensity(qid, doc, position, clicks, impressions=impressions),
                               theta, rtol=1e-7)


def test_rows_of_one_position_from_several_loggers_add_up():
    qid, doc, position, clicks, impressions, _ = _noisy_logs(3, n_queries=10, docs=4)
    once = gbrank.harvest_propensity(qid, doc, position, clicks, impressions=impressions)
    # the same rows split in two halves (two loggers that agree on the position) give the same estimate
    half = clicks // 2
    twice = gbrank.harvest_propensity(
        np.concatenate((qid, qid)), np.concatenate((doc, doc)), np.concatenate((position, position)),
        np.concatenate((half, clicks - half)), impressions=np.concatenate((impressions // 2,
                                                                          impressions - impressions // 2)),
    )
    assert not np.allclose(half / (impressions // 2), clicks / impressions)
    np.testing.assert_allclose(once, twice, rtol=1e-9)


# =========================================================================== against the simulator
def _loggers(data, n_loggers, sessions, eta=1.0, top_k=10):
    logs = [simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=sessions, top_k=top_k, eta=eta,
                            logging_fraction=0.05, seed=seed) for seed in range(n_loggers)]
    rows = np.arange(data.y.size)
    stack = dict(
        qid=np.concatenate([data.qid] * n_loggers), doc=np.concatenate([rows] * n_loggers),
        position=np.concatenate([log.position for log in logs]), clicks=np.concatenate([log.clicks for log in logs]),
    )
    return logs, stack


@pytest.fixture(scope="module")
def generated():
    return make_ranking(n_queries=300, docs_per_query=(20, 20), n_features=20, seed=0)


def test_harvesting_recovers_theta_far_better_than_the_estimate_on_one_ranker(generated):
    logs, stack = _loggers(generated, 3, 200)
    theta = logs[0].theta
    harvested = gbrank.harvest_propensity(**stack, impressions=200)
    harvest_error = np.max(np.abs(harvested / theta - 1))
    # the objectives' own estimate on one deterministic ranker's log (positions 1-10)
    obj = gbrank.ips_listnet()
    dtrain = lgb_dataset(generated, logs[0])
    lgb = pytest.importorskip("lightgbm")
    lgb.train({**LGB, "objective": gbrank.engines.with_position(obj, logs[0].position)}, dtrain,
              num_boost_round=40)
    em_error = np.max(np.abs(obj.binding(dtrain).propensity_ / theta - 1))
    assert harvest_error < 0.05
    assert em_error > 3 * harvest_error, (harvest_error, em_error)


def lgb_dataset(data, log):
    lgb = pytest.importorskip("lightgbm")
    return lgb.Dataset(data.X, log.clicks, group=data.group)


@pytest.mark.parametrize("eta", [0.5, 2.0])
def test_harvesting_follows_the_severity_of_the_bias(generated, eta):
    logs, stack = _loggers(generated, 2, 500, eta=eta, top_k=5)
    harvested = gbrank.harvest_propensity(**stack, impressions=500)
    np.testing.assert_allclose(harvested, logs[0].theta, rtol=0.12)


def test_harvested_propensities_train_the_click_objectives(generated):
    lgb = pytest.importorskip("lightgbm")
    logs, stack = _loggers(generated, 2, 200)
    theta = gbrank.harvest_propensity(**stack, impressions=200)
    for factory in (gbrank.ips_listnet, gbrank.ips_ranknet, gbrank.pbm_listnet):
        obj = factory(propensity=theta)
        booster = lgb.train({**LGB, "objective": gbrank.engines.with_position(obj, logs[0].position)},
                            lgb_dataset(generated, logs[0]), num_boost_round=3)
        assert np.isfinite(booster.predict(generated.X)).all()


def test_one_deterministic_ranker_holds_no_intervention(generated):
    logs, stack = _loggers(generated, 1, 100)
    with pytest.raises(ValueError, match="no intervention on position 1"):
        gbrank.harvest_propensity(**stack, impressions=100)


# =========================================================================== input contract
def test_positions_linked_by_no_pair_are_nan_with_a_warning():
    qid = [0, 0, 0, 0, 0, 0]
    doc = [0, 1, 2, 0, 1, 2]
    position = [1, 2, 3, 3, 2, 1]  # document 1 stays at position 2: nothing links position 2
    clicks = [40, 20, 5, 10, 20, 20]
    with pytest.warns(UserWarning, match=r"positions \[2\]"):
        theta = gbrank.harvest_propensity(qid, doc, position, clicks, impressions=100)
    assert theta[0] == 1.0 and np.isnan(theta[1]) and np.isfinite(theta[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gbrank.harvest_propensity(qid, doc, position, clicks, impressions=100, n_positions=1).tolist() == [1.0]
    with pytest.raises(ValueError, match="propensity of position 2 is nan"):
        gbrank.ips_listnet(propensity=theta)


def test_rows_never_shown_are_skipped():
    qid, doc, position, clicks, impressions, _ = _noisy_logs(4, n_queries=10, docs=4)
    base = gbrank.harvest_propensity(qid, doc, position, clicks, impressions=impressions)
    extra = gbrank.harvest_propensity(np.append(qid, 0), np.append(doc, 99), np.append(position, -1),
                                      np.append(clicks, 0), impressions=np.append(impressions, 0))
    np.testing.assert_array_equal(base, extra)


@pytest.mark.parametrize("impressions, rate, weighting", [
    (1e155, 1.0, "harmonic"),    # N_i N_j beyond the float range
    (1e9, 1e-9, "equal"),        # click-through rates of 1e-9
    (1e9, 1e-9, "harmonic"),
])
def test_the_estimate_holds_at_extreme_counts_and_rates(impressions, rate, weighting):
    theta = np.array([1.0, 0.5, 0.25])
    qid, doc, position = np.zeros(6, int), np.array([0, 1, 2, 0, 1, 2]), np.array([1, 2, 3, 2, 3, 1])
    clicks = impressions * rate * theta[position - 1] * np.array([0.8, 0.4, 0.2])[doc]
    estimate = gbrank.harvest_propensity(qid, doc, position, clicks, impressions=impressions, weighting=weighting)
    np.testing.assert_allclose(estimate, theta, rtol=1e-4)


def test_sets_without_a_non_click_are_refused_not_infinite():
    qid, doc, position = np.zeros(6, int), np.array([0, 1, 2, 0, 1, 2]), np.array([1, 2, 3, 2, 3, 1])
    with pytest.raises(ValueError, match=r"positions \[2, 3\] have no finite estimate"):
        gbrank.harvest_propensity(qid, doc, position, np.full(6, 100.0), impressions=100)


@pytest.mark.parametrize("change, match", [
    (dict(clicks=[5, 1, 300]), r"row 2 has 300 clicks in 100 impressions"),
    (dict(position=[1, 0, 2]), r"position\[1\] = 0"),
    (dict(position=[1, -1, 2]), r"row 1 has 1 clicks but position -1"),
    (dict(position=[1.5, 2, 1]), r"position\[0\] = 1.5: positions are integers"),
    (dict(position=[1, 2, np.inf]), r"position\[2\] = inf: positions are integers"),
    (dict(qid=[0, np.nan, 0]), r"qid\[1\] is missing"),
    (dict(doc=[0, None, 2]), r"doc\[1\] is missing"),
    (dict(position=[1, 2, 20_000]), r"position\[2\] = 20000: .* pass n_positions"),
    (dict(clicks=[5, -1, 3]), r"clicks\[1\] = -1:"),
    (dict(clicks=[5, np.nan, 3]), r"clicks\[1\] = nan"),
    (dict(doc=[0, 1]), "doc has 2 rows but qid has 3"),
    (dict(impressions=[100, 0, 100], clicks=[5, 0, 3]), "row 1 is at position 2 with 0 impressions"),
    (dict(weighting="inverse"), "weighting must be one of"),
    (dict(n_positions=0), "n_positions"),
])
def test_bad_input_is_refused_naming_the_row(change, match):
    args = dict(qid=[0, 0, 0], doc=[0, 1, 0], position=[1, 2, 2], clicks=[5, 1, 3], impressions=100)
    args.update(change)
    with pytest.raises(ValueError, match=match):
        gbrank.harvest_propensity(**args)
