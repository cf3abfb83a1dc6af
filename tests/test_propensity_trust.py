"""How far to trust a propensity estimate: the curves it may take (propensity_model), its
bootstrap interval over queries, and the warning that a log cannot identify it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.objectives.propensity import estimate_propensity
from gbrank.objectives.propensity_models import fit_curve
from gbrank.objectives.propensity_trust import (
    PropensityIdentificationWarning,
    check_identification,
    position_predictability,
    propensity_interval,
)

LGB = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0, "min_data_in_leaf": 5}


def poisson_loglik(theta, clicks, exposure):
    """sum_p C_p log theta_p - theta_p E_p, written out directly."""
    return float(np.sum(clicks * np.log(theta) - theta * exposure))


def offsets_of(group):
    return np.concatenate(([0], np.cumsum(group)))


@pytest.fixture(scope="module")
def click_data():
    d = make_ranking(150, (12, 12), 10, seed=2)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=100, top_k=12, eta=1.0, seed=0)
    return d.X, log.clicks.astype(float), d.group, log.position, log


# =========================================================================== curves
def test_each_curve_maximises_the_poisson_likelihood_over_its_own_family():
    from scipy.optimize import minimize, minimize_scalar

    clicks = np.array([50.0, 14.0, 16.0, 5.0, 1.0, 3.0, 0.0, 1.0])
    exposure = np.array([50.0, 30.0, 28.0, 20.0, 15.0, 10.0, 9.0, 4.0])
    free, _ = fit_curve("free", clicks, exposure, 1.0)
    np.testing.assert_allclose(free, clicks / exposure)

    # monotone: the best non-increasing curve, found by a general optimiser on the
    # parametrisation theta_p = theta_1 - sum of non-negative decrements
    monotone, _ = fit_curve("monotone", clicks, exposure, 1.0)
    assert np.all(np.diff(monotone) <= 1e-12)

    def negative(z):
        theta = np.exp(z[0]) - np.concatenate(([0.0], np.cumsum(z[1:] ** 2)))
        return np.inf if np.any(theta <= 0) else -poisson_loglik(theta, clicks, exposure)

    start = np.concatenate(([0.0], np.full(clicks.size - 1, 0.1)))
    best = minimize(negative, start, method="Nelder-Mead", options={"maxiter": 40_000, "xatol": 1e-10, "fatol": 1e-12})
    # the position without clicks pools with its neighbour: the likelihood is finite there
    assert poisson_loglik(np.maximum(monotone, 1e-300), clicks, exposure) >= -best.fun - 1e-6

    # power: A p^-eta with A profiled out, against a bounded scalar search of eta
    power, eta = fit_curve("power", clicks, exposure, 1.0)
    p = np.arange(1, clicks.size + 1)

    def profile(e):
        curve = p ** -e
        return -poisson_loglik(clicks.sum() / np.dot(curve, exposure) * curve, clicks, exposure)

    reference = minimize_scalar(profile, bounds=(0.0, 5.0), method="bounded", options={"xatol": 1e-10})
    assert eta == pytest.approx(reference.x, abs=1e-6)
    np.testing.assert_allclose(power / power[0], p ** -reference.x, rtol=1e-5)


def test_the_monotone_fit_is_the_weighted_isotonic_regression():
    from sklearn.isotonic import isotonic_regression

    rng = np.random.default_rng(0)
    for k in (1, 2, 5, 12, 60):
        for _ in range(50):
            clicks = rng.poisson(5.0, k) * rng.integers(0, 2, k)
            exposure = rng.uniform(0.5, 20.0, k)
            exposure[rng.uniform(size=k) < 0.2] = 0.0  # positions never shown: no value, no weight
            got, _ = fit_curve("monotone", clicks.astype(float), exposure, 1.0)
            seen = exposure > 0
            assert np.all(got[~seen] == 0)
            if seen.any():
                expected = isotonic_regression(clicks[seen] / exposure[seen], sample_weight=exposure[seen],
                                               increasing=False)
                np.testing.assert_allclose(got[seen], expected, atol=1e-12)


def _thin_log(curve, seed, sessions=10):
    """Every document shown in lists of 1 to ~70 (gamma lengths around 20): deep positions
    are shown in a few queries only, and get a few clicks."""
    d = make_ranking(300, 20, 8, seed=seed)
    top_k = int(d.group.max())
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=1, top_k=top_k, eta=0, seed=seed)
    theta = curve(np.arange(1, top_k + 1, dtype=float))
    rng = np.random.default_rng(100 + seed)
    prob = np.where(log.position > 0, theta[np.maximum(log.position, 1) - 1] * log.relevance, 0.0)
    return d, log, rng.binomial(sessions, prob).astype(float), theta


def _log_error(estimate, theta, shown):
    """Mean absolute log error over the shown positions, a position without a value taking
    the value above it (as the objective does)."""
    filled = estimate.copy()
    for i in range(1, filled.size):
        if np.isnan(filled[i]):
            filled[i] = filled[i - 1]
    return float(np.mean(np.abs(np.log(np.maximum(filled[shown - 1], 1e-6)) - np.log(theta[shown - 1]))))


@pytest.mark.parametrize("curve, better", [
    (lambda p: 1.0 / p, ("monotone", "power")),            # the power law is the truth
    (lambda p: 0.15 + 0.85 / p, ("monotone",)),           # it is not: only the monotone curve helps
])
def test_shape_constrained_curves_are_closer_where_deep_positions_are_thin(curve, better):
    errors = {m: [] for m in ("free", "monotone", "power")}
    for seed in range(5):
        d, log, clicks, theta = _thin_log(curve, seed)
        shown = np.unique(log.position[log.position > 0])
        for model, found in errors.items():
            estimate = estimate_propensity(np.log(log.relevance), clicks, log.position, offsets_of(d.group),
                                           theta.size, model=model)
            found.append(_log_error(estimate, theta, shown))
    free = np.mean(errors["free"])
    for model in better:
        assert np.mean(errors[model]) < 0.7 * free, errors


def test_monotone_and_power_estimates_from_training_have_their_shape(click_data):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, _ = click_data
    for make in (gbrank.ips_listnet, gbrank.ips_ranknet, gbrank.pbm_listnet):
        for model in ("monotone", "power"):
            obj = make(propensity_model=model, warmup=2, update_every=2)
            dtrain = lgb.Dataset(X, clicks, group=group)
            lgb.train({**LGB, "objective": gbrank.engines.with_position(obj, pos)}, dtrain, 8)
            theta = obj.binding(dtrain).propensity_
            assert theta[0] == 1.0
            shown = theta[np.isfinite(theta)]
            assert np.all(np.diff(shown) <= 1e-12), (make, model, theta)
            if model == "power":
                log_p = np.log(np.arange(1, theta.size + 1))
                eta = -np.log(theta[1]) / log_p[1]
                np.testing.assert_allclose(np.log(theta), -eta * log_p, atol=1e-9)
            assert f"propensity_model='{model}'" in repr(obj)
    assert "propensity_model" not in repr(gbrank.ips_listnet())


@pytest.mark.parametrize("model", ["free", "monotone", "power"])
def test_every_curve_leaves_out_the_rows_below_a_fold(model):
    # positions 6..15 are never examined: left out, they train as the rows of a log that
    # never held them; counted in, they would pass for examined and irrelevant
    lgb = pytest.importorskip("lightgbm")
    d = make_ranking(200, (15, 15), 10, seed=6)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, top_k=15, fold=5, logging_fraction=0.002,
                          seed=6)
    thetas = []
    for position in (log.position, np.where(log.position > 5, -1, log.position)):
        obj = gbrank.pbm_listnet(propensity_model=model, warmup=2, update_every=2)
        dtrain = lgb.Dataset(d.X, log.clicks, group=d.group)
        booster = lgb.train({**LGB, "objective": gbrank.engines.with_position(obj, position)}, dtrain, 8)
        binding = obj.binding(dtrain)
        thetas.append((binding.propensity_[:5], booster.predict(d.X)))
        if position is log.position:
            np.testing.assert_array_equal(binding.left_out_, np.arange(1, 16) > 5)
    np.testing.assert_allclose(thetas[0][0], thetas[1][0], rtol=1e-12)
    np.testing.assert_allclose(thetas[0][1], thetas[1][1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make", [gbrank.ips_listnet, gbrank.ips_ranknet, gbrank.pbm_listnet])
def test_an_unknown_curve_is_refused_naming_the_choices(make):
    with pytest.raises(ValueError, match="propensity_model must be one of 'free', 'monotone', 'power', got 'isotonic'"):
        make(propensity_model="isotonic")


@pytest.mark.parametrize("model", ["monotone", "power"])
def test_a_constrained_curve_summed_over_workers_is_the_one_machine_curve(model):
    import threading

    d = make_ranking(80, 10, 5, seed=9)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, top_k=8, eta=1.5, seed=5)
    scores = np.random.default_rng(0).normal(size=d.y.size)
    offsets = offsets_of(d.group)
    whole = estimate_propensity(scores, log.clicks.astype(float), log.position, offsets, 8, model=model)
    barrier = threading.Barrier(2)
    parts: dict = {}

    def reduce(values):
        # an allreduce between two threads
        parts[threading.get_ident()] = values.copy()
        barrier.wait()
        total = sum(parts.values())
        barrier.wait()
        return total

    out = {}

    def worker(name, queries):
        lo, hi = offsets[queries[0]], offsets[queries[-1]]
        out[name] = estimate_propensity(scores[lo:hi], log.clicks[lo:hi].astype(float), log.position[lo:hi],
                                        offsets[queries] - lo, 8, reduce=reduce, model=model)

    threads = [threading.Thread(target=worker, args=(n, q)) for n, q in (("a", np.arange(0, 31)), ("b", np.arange(30, 81)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(out["a"], whole, rtol=1e-10)
    np.testing.assert_allclose(out["b"], whole, rtol=1e-10)


# =========================================================================== bootstrap
def test_bootstrap_interval_covers_the_true_propensities_at_about_its_level():
    # scores that are the true log relevance: the estimator is right on average, so what is
    # left is sampling error, which the interval must cover at about its level
    d = make_ranking(200, (10, 10), 6, seed=5)
    hits = []
    for rep in range(16):
        log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, top_k=10, eta=1.0, seed=rep)
        interval = propensity_interval(np.log(log.relevance), log.clicks, log.position, d.group, n_boot=100,
                                       level=0.9, seed=rep)
        np.testing.assert_array_equal(
            interval.estimate,
            estimate_propensity(np.log(log.relevance), log.clicks.astype(float), log.position, offsets_of(d.group), 10),
        )
        hits.append((interval.lower[1:] <= log.theta[1:]) & (log.theta[1:] <= interval.upper[1:]))
    coverage = float(np.mean(hits))
    assert 0.8 <= coverage <= 0.98, coverage


def test_bootstrap_resamples_queries_not_rows():
    # three queries have ten multisets of three: resampled whole, the estimates take at most
    # ten values; rows resampled one by one would give many more
    d = make_ranking(3, (8, 8), 6, seed=1)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=300, top_k=8, eta=1.0, seed=2)
    interval = propensity_interval(np.log(log.relevance), log.clicks, log.position, d.group, n_boot=200, seed=0)
    distinct = np.unique(np.round(interval.draws[:, :4], 12), axis=0)
    assert 3 <= distinct.shape[0] <= 10


def test_more_sessions_narrow_the_interval():
    d = make_ranking(150, (8, 8), 6, seed=1)
    widths = []
    for sessions in (30, 600):
        log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=sessions, top_k=8, eta=1.0, seed=2)
        s = np.log(log.relevance)
        widths.append(np.mean(propensity_interval(s, log.clicks, log.position, d.group, n_boot=100).relative_width[1:]))
    assert widths[1] < 0.5 * widths[0], widths


@pytest.mark.parametrize("make", [gbrank.ips_listnet, gbrank.pbm_listnet])
def test_binding_interval_bounds_its_own_estimate(click_data, make):
    lgb = pytest.importorskip("lightgbm")
    X, clicks, group, pos, _ = click_data
    obj = make(propensity_model="monotone", warmup=2, update_every=2)
    dtrain = lgb.Dataset(X, clicks, group=group)
    booster = lgb.train({**LGB, "objective": gbrank.engines.with_position(obj, pos)}, dtrain, 12)
    scores = booster.predict(X)
    interval = obj.binding(dtrain).propensity_interval(scores, n_boot=50, seed=3)
    expected = estimate_propensity(scores, clicks, pos, offsets_of(group), 12, model="monotone",
                                   fit_slope=make is gbrank.ips_listnet)
    np.testing.assert_array_equal(interval.estimate, expected)
    seen = np.isfinite(interval.lower)
    assert seen[:6].all()
    assert np.all(interval.lower[seen] <= interval.estimate[seen] + 1e-12)
    assert np.all(interval.estimate[seen] <= interval.upper[seen] + 1e-12)
    assert (interval.upper[1:6] > interval.lower[1:6]).all()
    with pytest.raises(AttributeError, match="estimates none"):
        known = make(propensity=[1.0] * 12)
        dknown = lgb.Dataset(X, clicks, group=group)
        lgb.train({**LGB, "objective": gbrank.engines.with_position(known, pos)}, dknown, 2)
        known.binding(dknown).propensity_interval(scores)


@pytest.mark.parametrize("kwargs, match", [
    ({"scores": np.zeros(3)}, "scores has shape"),
    ({"level": 1.0}, r"level must lie in \(0, 1\)"),
    ({"n_boot": 1}, "n_boot"),
    ({"position": -np.ones(4, dtype=int)}, "no row was shown"),
    ({"propensity_model": "smooth"}, "propensity_model must be one of"),
    ({"clicks": [1.0, np.nan, 0.0, 0.0]}, r"clicks\[1\]"),
])
def test_bad_interval_input_is_refused_by_name(kwargs, match):
    args = {"scores": np.zeros(4), "clicks": [1.0, 0.0, 1.0, 0.0], "position": [1, 2, 1, 2], "group": [2, 2]}
    if "position" in kwargs and "clicks" not in kwargs:
        args["clicks"] = [0.0] * 4
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        propensity_interval(args.pop("scores"), args.pop("clicks"), args.pop("position"), args.pop("group"), **args)


# =========================================================================== identification
def _logging_world(seed=0):
    d = make_ranking(300, 20, 20, seed=seed)
    rng = np.random.default_rng(seed)
    return d, rng


def test_positions_that_are_a_function_of_a_feature_warn_naming_the_remedies():
    d, _ = _logging_world()
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=20, top_k=10, seed=0)
    # the logging ranker's rank kept as a feature (a common "original rank" feature)
    X = np.column_stack([d.X, np.where(log.position > 0, log.position, 99)])
    with pytest.warns(PropensityIdentificationWarning, match="Randomise part of the traffic") as record:
        r2 = check_identification(X, log.position, d.group)
    assert r2 > 0.9
    message = str(record[0].message)
    assert "several rankers" in message and "known propensities" in message


def test_a_noisy_logging_ranker_does_not_warn():
    d, rng = _logging_world()
    # logging scores: a ranker on the features plus noise the features do not carry
    logging = d.X[:, :4].sum(axis=1)
    logging = logging / logging.std() + rng.normal(0.0, 1.5, logging.size)
    log = simulate_clicks(d.y, d.group, logging, sessions_per_query=20, top_k=10, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PropensityIdentificationWarning)
        r2 = check_identification(d.X, log.position, d.group)
    assert r2 < 0.3
    # and positions drawn at random are not predicted at all
    shuffled = simulate_clicks(d.y, d.group, rng.normal(size=d.y.size), sessions_per_query=20, top_k=10, seed=0)
    assert position_predictability(d.X, shuffled.position, d.group) < 0.05


def test_predictability_rises_with_the_share_of_the_logging_order_the_features_carry():
    d, rng = _logging_world(1)
    logging = d.X[:, :4].sum(axis=1)
    logging = logging / logging.std()
    noise = rng.normal(size=logging.size)
    r2 = [position_predictability(d.X, simulate_clicks(d.y, d.group, logging + sd * noise, sessions_per_query=1,
                                                       top_k=10, seed=0).position, d.group)
          for sd in (0.0, 0.5, 2.0)]
    assert r2[0] > r2[1] > r2[2], r2


def test_identification_check_refuses_bad_input():
    with pytest.raises(ValueError, match="X must be 2-d"):
        position_predictability(np.zeros(4), [1, 2, 1, 2], [2, 2])
    with pytest.raises(ValueError, match="at least two queries"):
        position_predictability(np.zeros((4, 2)), [1, 2, 1, -1], [2, 2])
    with pytest.raises(ValueError, match=r"threshold must lie in \[0, 1\]"):
        check_identification(np.zeros((4, 2)), [1, 2, 1, 2], [2, 2], threshold=1.5)
