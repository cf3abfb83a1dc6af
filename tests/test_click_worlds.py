"""The simulator's options for a family of click worlds (gbrank.datasets.simulate_clicks):
trust bias, a fold below which shown rows are never examined, click noise and binary clicks.
Each option's click rates are checked against its formula by simulation, within four binomial
standard errors."""

from __future__ import annotations

import numpy as np
import pytest

from gbrank.datasets import click_probability, simulate_clicks

# one query of eight documents shown in row order (the logging scores fall down the rows)
Y = np.array([2, 0, 1, 2, 0, 1, 0, 2], dtype=float)
SCORES = np.arange(8, 0, -1, dtype=float)
P = np.arange(1, 9)
N = 40_000


def assert_rates(clicks, expected, n):
    """Observed rates within four binomial standard errors of the expected probabilities."""
    rate = np.asarray(clicks) / n
    se = np.sqrt(np.maximum(expected * (1 - expected), 1e-12) / n)
    assert np.all(np.abs(rate - expected) <= 4 * se), (rate, expected)


def test_trust_bias_click_rates_are_affine_in_relevance():
    gamma = click_probability(Y, eps=0.1)
    plus = np.linspace(0.95, 0.6, 8)
    minus = np.linspace(0.5, 0.05, 8)
    log = simulate_clicks(Y, [8], SCORES, sessions_per_query=N, top_k=8, eta=1.0, click_model="trust",
                          eps_plus=plus, eps_minus=minus, seed=1)
    expected = (1.0 / P) * (plus * gamma + minus * (1 - gamma))
    assert_rates(log.clicks, expected, N)
    np.testing.assert_array_equal(log.eps_plus, plus)
    np.testing.assert_array_equal(log.eps_minus, minus)
    # the irrelevant document at the top is clicked far more than the position-based model says
    assert log.clicks[1] / N > 2 * (1 / 2) * gamma[1]


def test_trust_bias_default_curves_are_the_papers():
    log = simulate_clicks(Y, [8], SCORES, sessions_per_query=10, top_k=8, click_model="trust", seed=0)
    np.testing.assert_allclose(log.eps_plus, 1 - (np.minimum(P, 20) + 1) / 100)
    np.testing.assert_allclose(log.eps_minus, 0.65 / np.minimum(P, 10))
    long = simulate_clicks(np.zeros(30), [30], np.arange(30, 0, -1.0), sessions_per_query=1, top_k=30,
                           click_model="trust", seed=0)
    assert long.eps_plus[-1] == pytest.approx(0.79) and long.eps_minus[-1] == pytest.approx(0.065)
    pbm = simulate_clicks(Y, [8], SCORES, sessions_per_query=10, top_k=8, seed=0)
    assert pbm.eps_plus is None and pbm.eps_minus is None


def test_trust_bias_never_clicks_the_padding_of_short_lists():
    # lists of 2 and 8 documents with top_k=8: the short list has 6 empty slots, where
    # eps_minus > 0 must not produce clicks on rows that do not exist
    y = np.concatenate(([1, 0], Y))
    scores = np.concatenate(([2.0, 1.0], SCORES))
    log = simulate_clicks(y, [2, 8], scores, sessions_per_query=2000, top_k=8, click_model="trust",
                          per_session=True, seed=3)
    assert not (log.session_clicks & (log.session_rows < 0)).any()
    np.testing.assert_array_equal(np.bincount(log.session_rows[log.session_clicks], minlength=10), log.clicks)


@pytest.mark.parametrize("click_model", ["pbm", "trust"])
def test_rows_below_the_fold_are_logged_but_never_examined(click_model):
    log = simulate_clicks(Y, [8], SCORES, sessions_per_query=N, top_k=8, eta=1.0, click_model=click_model, fold=3,
                          seed=2)
    np.testing.assert_array_equal(log.position, P)
    theta = np.where(P <= 3, 1.0 / P, 0.0)
    np.testing.assert_array_equal(log.theta, theta)
    np.testing.assert_array_equal(log.propensity, theta)
    gamma = click_probability(Y, eps=0.1)
    per_examined = gamma if click_model == "pbm" else log.eps_plus * gamma + log.eps_minus * (1 - gamma)
    assert_rates(log.clicks, theta * per_examined, N)
    assert log.clicks[3:].sum() == 0


def test_cascade_stops_at_the_fold():
    gamma = click_probability(Y, eps=0.1)
    log = simulate_clicks(Y, [8], SCORES, sessions_per_query=N, top_k=8, click_model="cascade", fold=4, seed=3)
    reach = np.concatenate(([1.0], np.cumprod(1 - gamma)[:-1]))
    expected = np.where(P <= 4, reach * gamma, 0.0)
    assert_rates(log.clicks, expected, N)


@pytest.mark.parametrize("click_model", ["pbm", "cascade", "trust"])
def test_click_noise_adds_independent_clicks_above_the_fold(click_model):
    nu = 0.05
    gamma = click_probability(Y, eps=0.1)
    clean = simulate_clicks(Y, [8], SCORES, sessions_per_query=10, top_k=8, click_model=click_model, seed=0)
    if click_model == "pbm":
        model = gamma / P
    elif click_model == "trust":
        model = (clean.eps_plus * gamma + clean.eps_minus * (1 - gamma)) / P
    else:
        model = np.concatenate(([1.0], np.cumprod(1 - gamma)[:-1])) * gamma
    model = np.where(P <= 6, model, 0.0)
    log = simulate_clicks(Y, [8], SCORES, sessions_per_query=N, top_k=8, click_model=click_model, fold=6,
                          click_noise=nu, seed=4)
    assert_rates(log.clicks, np.where(P <= 6, 1 - (1 - model) * (1 - nu), 0.0), N)


def test_noise_clicks_do_not_end_a_cascade():
    log = simulate_clicks(Y, [8], SCORES, sessions_per_query=5000, top_k=8, click_model="cascade", click_noise=0.2,
                          per_session=True, seed=5)
    assert log.session_clicks.sum(axis=1).max() > 1


def test_binary_clicks_are_whether_any_session_clicked():
    n = 5
    draws = 8000
    # draws queries alike, each with n sessions: the share of queries where a row was clicked at all
    y = np.tile(Y, draws)
    scores = np.tile(SCORES, draws)
    log = simulate_clicks(y, np.full(draws, 8), scores, sessions_per_query=n, top_k=8, aggregate="binary", seed=6)
    assert set(np.unique(log.clicks)) <= {0, 1}
    per_session = click_probability(Y, eps=0.1) / P
    expected = 1 - (1 - per_session) ** n
    assert_rates(log.clicks.reshape(draws, 8).sum(axis=0), expected, draws)
    counts = simulate_clicks(y, np.full(draws, 8), scores, sessions_per_query=n, top_k=8, seed=6)
    np.testing.assert_array_equal(log.clicks, np.minimum(counts.clicks, 1))


def test_the_options_leave_the_default_clicks_unchanged():
    plain = simulate_clicks(Y, [8], SCORES, sessions_per_query=500, top_k=8, seed=7)
    same = simulate_clicks(Y, [8], SCORES, sessions_per_query=500, top_k=8, fold=None, click_noise=0.0,
                           aggregate="count", seed=7)
    np.testing.assert_array_equal(plain.clicks, same.clicks)


@pytest.mark.parametrize("kwargs, match", [
    ({"click_model": "trust", "eps_plus": [0.9] * 3}, r"eps_plus needs one value per position 1..top_k=8"),
    ({"click_model": "trust", "eps_minus": [0.5] * 7 + [1.5]}, r"eps_minus\[7\] = 1.5 \(position 8\)"),
    ({"eps_plus": [1.0] * 8}, "belong to click_model='trust'"),
    ({"fold": 0}, "fold"),
    ({"click_noise": 1.0}, r"click_noise must lie in \[0, 1\)"),
    ({"click_noise": -0.1}, "click_noise"),
    ({"aggregate": "mean"}, "aggregate"),
])
def test_world_options_refuse_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_clicks(Y, [8], SCORES, top_k=8, **kwargs)
