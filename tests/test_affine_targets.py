"""gbrank.affine_targets: the affine correction for trust bias (Vardasbi, Oosterhuis and de
Rijke, CIKM 2020): unbiased, against a direct implementation; the per-query shift keeps the
targets non-negative and the order they aim at; negative targets are refused by the click
objectives with an error naming the fix."""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks

THETA = 1.0 / np.arange(1, 11)
EPS_PLUS = np.ones(10)
EPS_MINUS = 0.65 / np.arange(1, 11)  # users trust the top results (Agarwal et al., WWW 2019)


def trust_bias_clicks(gamma, position, impressions, rng, theta=THETA, eps_plus=EPS_PLUS, eps_minus=EPS_MINUS):
    """Clicks of independent sessions: examined with theta_p, then clicked with eps_plus_p if
    relevant (probability gamma) and eps_minus_p if not."""
    seen = position >= 1
    p = np.zeros(gamma.shape)
    at = position[seen] - 1
    p[seen] = theta[at] * (eps_plus[at] * gamma[seen] + eps_minus[at] * (1 - gamma[seen]))
    return rng.binomial(np.where(seen, impressions, 0), p)


def direct_targets(clicks, position, sizes, impressions, shift):
    out = []
    start = 0
    for n in sizes:
        rows = range(start, start + n)
        trust = {i: impressions * EPS_MINUS[position[i] - 1] / (EPS_PLUS - EPS_MINUS)[position[i] - 1]
                 for i in rows if position[i] >= 1}
        m = max(trust.values(), default=0.0) if shift else 0.0
        for i in rows:
            if position[i] >= 1:
                alpha = THETA[position[i] - 1] * (EPS_PLUS - EPS_MINUS)[position[i] - 1]
                beta = THETA[position[i] - 1] * EPS_MINUS[position[i] - 1]
                out.append((clicks[i] - impressions * beta) / alpha + m)
            else:
                out.append(m)
        start += n
    return np.array(out)


@pytest.fixture(scope="module")
def shown():
    data = make_ranking(n_queries=40, docs_per_query=(12, 12), n_features=6, seed=1)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=1, top_k=10, seed=2)
    gamma = (2.0 ** data.y - 1) / (2.0 ** data.y.max() - 1)
    return data, log.position, gamma


@pytest.mark.parametrize("shift", [True, False])
def test_targets_match_a_direct_implementation(shown, shift):
    data, position, gamma = shown
    clicks = trust_bias_clicks(gamma, position, 50, np.random.default_rng(0))
    got = gbrank.affine_targets(clicks, position, data.group, theta=THETA, eps_plus=EPS_PLUS, eps_minus=EPS_MINUS,
                                impressions=50, shift=shift)
    np.testing.assert_allclose(got, direct_targets(clicks, position, data.group, 50, shift), rtol=1e-12)
    assert (got >= 0).all() if shift else (got < 0).any()


def test_unshifted_targets_are_unbiased_and_ips_is_not(shown):
    data, position, gamma = shown
    seen = position >= 1
    at = position[seen] - 1
    kwargs = dict(theta=THETA, eps_plus=EPS_PLUS, eps_minus=EPS_MINUS, impressions=100, shift=False)
    # the targets are linear in the clicks: at the expected clicks they are the expected targets
    expected = np.zeros(gamma.shape)
    expected[seen] = 100 * THETA[at] * (EPS_PLUS[at] * gamma[seen] + EPS_MINUS[at] * (1 - gamma[seen]))
    t = gbrank.affine_targets(expected, position, data.group, **kwargs)
    np.testing.assert_allclose(t[seen], 100 * gamma[seen], rtol=1e-12, atol=1e-10)
    # and the mean over independent logs converges there (within 5 standard errors)
    draws = np.array([gbrank.affine_targets(trust_bias_clicks(gamma, position, 100, np.random.default_rng(s)),
                                            position, data.group, **kwargs) for s in range(2000)])
    error = np.abs(draws.mean(axis=0) - 100 * gamma)[seen]
    assert np.all(error <= 5 * draws.std(axis=0)[seen] / np.sqrt(2000) + 1e-9)
    # inverse propensity scoring keeps the trust: an irrelevant document at the top gets more
    # than a fairly relevant one at position 5
    ips = expected[seen] / THETA[at]
    assert ips[(at == 0) & (gamma[seen] == 0)].min() > ips[(at == 4) & (gamma[seen] > 0.3)].max()


def test_the_shift_is_constant_per_query_and_free_of_the_clicks(shown):
    data, position, gamma = shown
    kwargs = dict(theta=THETA, eps_plus=EPS_PLUS, eps_minus=EPS_MINUS, impressions=30)
    a = trust_bias_clicks(gamma, position, 30, np.random.default_rng(2))
    b = trust_bias_clicks(gamma, position, 30, np.random.default_rng(3))
    for clicks in (a, b):
        shifted = gbrank.affine_targets(clicks, position, data.group, **kwargs)
        raw = gbrank.affine_targets(clicks, position, data.group, shift=False, **kwargs)
        diff = shifted - raw
        per_query = np.split(diff, np.cumsum(data.group)[:-1])
        assert all(np.ptp(d) < 1e-9 for d in per_query)
    shift_a = gbrank.affine_targets(a, position, data.group, **kwargs) - gbrank.affine_targets(
        a, position, data.group, shift=False, **kwargs)
    shift_b = gbrank.affine_targets(b, position, data.group, **kwargs) - gbrank.affine_targets(
        b, position, data.group, shift=False, **kwargs)
    np.testing.assert_allclose(shift_a, shift_b)


def test_with_trust_the_same_everywhere_the_shifted_targets_are_ips(shown):
    data, position, gamma = shown
    eps_minus = np.full(10, 0.2)
    clicks = trust_bias_clicks(gamma, position, 40, np.random.default_rng(4), eps_minus=eps_minus)
    t = gbrank.affine_targets(clicks, position, data.group, theta=THETA, eps_plus=1.0, eps_minus=0.2, impressions=40)
    seen = position >= 1
    full = np.all([np.all(position[s:e] >= 1) for s, e in zip(np.cumsum(data.group) - data.group,
                                                                np.cumsum(data.group))])
    assert not full  # some rows unshown: they get the shift, the target of an irrelevant document
    np.testing.assert_allclose(t[seen], clicks[seen] / (THETA[position[seen] - 1] * 0.8), rtol=1e-12)
    np.testing.assert_allclose(t[~seen], 40 * 0.2 / 0.8)


def test_the_softmax_minimiser_keeps_the_order_of_the_relevance():
    # expected shifted targets N gamma + m: the softmax loss is minimised at pi proportional to them
    obj = gbrank.ips_listnet(propensity=None)
    gamma = np.array([0.1, 0.9, 0.0, 0.5])
    target = 100 * gamma + 100 * 0.65 / 0.35
    best = np.log(target)
    grad, _ = obj.grad_hess(target, best, [4])
    np.testing.assert_allclose(grad, 0.0, atol=1e-9)
    assert np.array_equal(np.argsort(best), np.argsort(gamma))


@pytest.mark.parametrize("factory", [gbrank.ips_listnet, gbrank.ips_ranknet, gbrank.pbm_listnet])
def test_negative_targets_are_refused_naming_the_shift(shown, factory):
    data, position, gamma = shown
    clicks = trust_bias_clicks(gamma, position, 20, np.random.default_rng(5))
    raw = gbrank.affine_targets(clicks, position, data.group, theta=THETA, eps_plus=EPS_PLUS, eps_minus=EPS_MINUS,
                                impressions=20, shift=False)
    row = int(np.flatnonzero(raw < 0)[0])
    with pytest.raises(ValueError, match=rf"y_true must be non-negative; y_true\[{row}\] = .*unbounded below.*shift=True"):
        factory(propensity=None).grad_hess(raw, np.zeros(raw.size), data.group)


def test_shifted_targets_train_with_lightgbm_and_the_unshifted_are_refused(shown):
    lgb = pytest.importorskip("lightgbm")
    data, position, gamma = shown
    clicks = trust_bias_clicks(gamma, position, 20, np.random.default_rng(6))
    kwargs = dict(theta=THETA, eps_plus=EPS_PLUS, eps_minus=EPS_MINUS, impressions=20)
    params = {"objective": gbrank.ips_listnet(propensity=None), "verbose": -1, "num_threads": 1}
    good = gbrank.affine_targets(clicks, position, data.group, **kwargs)
    booster = lgb.train(params, lgb.Dataset(data.X, good, group=data.group), num_boost_round=5)
    assert np.isfinite(booster.predict(data.X)).all()
    bad = gbrank.affine_targets(clicks, position, data.group, shift=False, **kwargs)
    with pytest.raises(ValueError, match="shift=True"):
        lgb.train(params, lgb.Dataset(data.X, bad, group=data.group), num_boost_round=5)


@pytest.mark.parametrize("change, match", [
    (dict(eps_minus=1.0), "at position 1 eps_minus = 1 and eps_plus = 1"),
    (dict(eps_minus=[0.1, 0.2]), "eps_minus must be a number or one value per position"),
    (dict(theta=[1.0, 0.0, 0.3]), "the propensity of position 2 is 0.0"),
    (dict(position=[1, 4, 2]), "past the 3 known propensities"),
    (dict(clicks=[3, 2, 30]), "row 2 has 30 clicks in 10 impressions"),
    (dict(clicks=[3, -2, 1]), "must be non-negative"),
    (dict(group=[2]), "group sizes sum to 2"),
    (dict(impressions=[10, 10]), "impressions has shape"),
])
def test_bad_input_is_refused(change, match):
    args = dict(clicks=[3, 2, 1], position=[1, 2, 3], group=[3], theta=[1.0, 0.5, 0.3], eps_plus=1.0,
                eps_minus=0.2, impressions=10)
    args.update(change)
    with pytest.raises(ValueError, match=match):
        gbrank.affine_targets(**args)
