"""gbrank.cascade_targets: per-row click targets under the cascade model and the DCM, from
per-session records: against a direct implementation, exactly unbiased given the clicks
above (by enumeration of every click pattern), and on the simulator's cascade clicks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks


def direct_examination(rows, clicked, lam, gamma, s, r):
    """P(rank r of session s examined | clicks above) by Bayes' rule over where the user
    stopped: after the last click above (at rank j) the user read on with probability lam_j
    and then skipped every row up to r; or stopped."""
    above = [j for j in range(r) if clicked[s, j]]
    if not above:
        return 1.0
    j = above[-1]
    skipped = np.prod([1.0 - gamma[rows[s, m]] for m in range(j + 1, r) if rows[s, m] >= 0])
    reading = lam[j] * skipped
    return reading / (reading + 1.0 - lam[j]) if reading > 0 else 0.0


def direct_targets(rows, clicked, n_rows, lam, gamma):
    """N_i sum_s c_si / sum_s P_si, written out session by session, at the relevance gamma."""
    clicks = np.zeros(n_rows)
    shown = np.zeros(n_rows)
    exam = np.zeros(n_rows)
    for s in range(rows.shape[0]):
        for r in range(rows.shape[1]):
            i = rows[s, r]
            if i >= 0:
                shown[i] += 1
                exam[i] += direct_examination(rows, clicked, lam, gamma, s, r)
                clicks[i] += clicked[s, r]
    out = np.zeros(n_rows)
    out[exam > 0] = shown[exam > 0] * clicks[exam > 0] / exam[exam > 0]
    return out, exam


def dcm_pattern_probability(pattern, gamma, lam):
    """P(click pattern) of one session of the list gamma[0], gamma[1], ... under the DCM,
    by a forward pass over the latent 'still reading' state."""
    reading, stopped = 1.0, 0.0
    for c, g, l in zip(pattern, gamma, lam):
        if c:
            reading, stopped = reading * g * l, reading * g * (1 - l)
        else:
            reading, stopped = reading * (1 - g), stopped
    return reading + stopped


def simulate_dcm(gamma, lam, n_sessions, rng):
    k = gamma.size
    clicked = np.zeros((n_sessions, k), dtype=bool)
    reading = np.ones(n_sessions, dtype=bool)
    for r in range(k):
        clicked[:, r] = reading & (rng.random(n_sessions) < gamma[r])
        reading &= ~clicked[:, r] | (rng.random(n_sessions) < lam[r])
    return clicked


# =========================================================================== the targets
@pytest.mark.parametrize("lam", [0.0, 0.4, [0.2, 0.7, 1.0, 0.0]])
def test_targets_match_a_direct_implementation(lam):
    rng = np.random.default_rng(0)
    n_rows, k = 9, 4
    rows = np.array([rng.permutation(n_rows)[:k] for _ in range(200)])
    rows[rng.random(rows.shape) < 0.1] = -1
    lam_k = np.broadcast_to(np.asarray(lam, dtype=float), (k,))
    clicked = np.zeros(rows.shape, dtype=bool)
    for s in range(rows.shape[0]):  # clicks the model allows: none after a stop
        reading = True
        for r in range(k):
            clicked[s, r] = reading and rows[s, r] >= 0 and rng.random() < 0.4
            reading = reading and (not clicked[s, r] or lam_k[r] > 0)
    got = gbrank.cascade_targets(rows, clicked, n_rows, continuation=lam)
    # at its own relevance estimate (targets / impressions) the direct formula gives the targets back:
    # the fixed point of filter and estimate
    gamma = np.divide(got.targets, got.impressions, out=np.zeros(n_rows), where=got.impressions > 0)
    want, exam = direct_targets(rows, clicked, n_rows, lam_k, gamma)
    np.testing.assert_allclose(got.targets, want, rtol=1e-8)  # the alternation stops at a change of 1e-10
    np.testing.assert_allclose(got.examinations, exam, rtol=1e-8)
    np.testing.assert_array_equal(got.examined, exam > 0)


@pytest.mark.parametrize("lam", [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.0, 1.0, 0.3]])
def test_targets_are_unbiased_given_the_row_was_examined(lam):
    # the cascade model, and any mix of stopping (0) and reading on (1) after a click: the
    # examination probabilities are known from the clicks above, and the targets exactly unbiased
    # every click pattern of two sessions of the list (rows 0, 1, 2), with its exact probability
    gamma = np.array([0.7, 0.5, 0.3])
    lam = np.array(lam)
    rows = np.array([[0, 1, 2], [0, 1, 2]])
    patterns = list(itertools.product([False, True], repeat=3))
    mean = np.zeros(3)
    examined = np.zeros(3)
    total = 0.0
    for first, second in itertools.product(patterns, repeat=2):
        prob = dcm_pattern_probability(first, gamma, lam) * dcm_pattern_probability(second, gamma, lam)
        if prob == 0.0:
            continue
        total += prob
        t = gbrank.cascade_targets(rows, np.array([first, second]), 3, continuation=lam)
        mean += prob * t.targets
        examined += prob * t.examined
    assert total == pytest.approx(1.0)
    # E[t_i | examined at all] = N_i gamma_i with N_i = 2 sessions
    np.testing.assert_allclose(mean / examined, 2 * gamma, rtol=1e-12)


def test_the_dcm_estimate_converges_where_raw_clicks_do_not():
    rng = np.random.default_rng(1)
    gamma = np.array([0.8, 0.2, 0.6, 0.4, 0.1])
    lam = np.array([0.3, 0.5, 0.2, 0.6, 0.9])
    n = 200_000
    clicked = simulate_dcm(gamma, lam, n, rng)
    rows = np.broadcast_to(np.arange(5), clicked.shape)
    t = gbrank.cascade_targets(rows, clicked, 5, continuation=lam)
    np.testing.assert_allclose(t.targets / n, gamma, atol=0.01)
    # raw click rates rank row 2 (gamma 0.6) below row 0 by far more than the relevance says
    raw = clicked.mean(axis=0)
    assert np.max(np.abs(raw - gamma)) > 0.2


def test_the_simulators_cascade_clicks_give_the_relevance():
    data = make_ranking(n_queries=20, docs_per_query=(8, 8), n_features=5, seed=2)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=4000, top_k=8, click_model="cascade",
                          per_session=True, seed=3)
    t = gbrank.cascade_targets(log.session_rows, log.session_clicks, data.y.size)
    enough = t.examinations >= 400
    assert enough.sum() > 60
    np.testing.assert_allclose(t.targets[enough] / 4000, log.relevance[enough], atol=0.06)
    np.testing.assert_array_equal(t.clicks, log.clicks)
    np.testing.assert_array_equal(t.impressions, np.where(log.position > 0, 4000, 0))
    np.testing.assert_array_equal(t.position, log.position)


def test_each_rows_position_is_its_rank_where_every_session_agrees():
    rows = np.array([[0, 1, 2], [0, 2, -1], [0, 1, 2]])
    t = gbrank.cascade_targets(rows, np.zeros(rows.shape, dtype=bool), 5)
    np.testing.assert_array_equal(t.position, [1, 2, 0, -1, -1])  # row 2 at ranks 3 and 2; rows 3, 4 never shown


def test_clip_bounds_the_weight_of_a_click_and_changes_nothing_else():
    rng = np.random.default_rng(6)
    rows = np.array([rng.permutation(12)[:6] for _ in range(300)])
    gamma = rng.uniform(0.05, 0.9, 12)
    clicked = np.zeros(rows.shape, dtype=bool)
    for s in range(rows.shape[0]):
        for r in range(6):
            clicked[s, r] = rng.random() < gamma[rows[s, r]]
            if clicked[s, r]:
                break
    free = gbrank.cascade_targets(rows, clicked, 12)
    clipped = gbrank.cascade_targets(rows, clicked, 12, clip=0.3)
    rate = free.examinations / free.impressions
    low = free.examined & (rate < 0.3)
    assert low.any() and (~low & free.examined).any()
    np.testing.assert_allclose(clipped.targets[~low], free.targets[~low])
    np.testing.assert_allclose(clipped.targets[low], free.targets[low] * rate[low] / 0.3)
    assert np.all(clipped.targets <= clipped.clicks / 0.3 + 1e-9)


def test_training_set_keeps_the_examined_rows_and_their_queries():
    rows = np.array([[0, 1, 2], [3, 4, -1]])
    clicked = np.array([[True, False, False], [False, False, False]])
    t = gbrank.cascade_targets(rows, clicked, 7)
    X = np.arange(14.0).reshape(7, 2)
    Xk, yk, gk = t.training_set(X, [3, 1, 3])  # queries: rows 0-2, row 3, rows 4-6
    assert t.examined.tolist() == [True, False, False, True, True, False, False]
    np.testing.assert_array_equal(Xk, X[[0, 3, 4]])
    np.testing.assert_array_equal(yk, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(gk, [1, 1, 1])


def test_targets_train_ips_listnet_with_lightgbm():
    lgb = pytest.importorskip("lightgbm")
    data = make_ranking(n_queries=60, docs_per_query=(10, 10), n_features=8, seed=4)
    log = simulate_clicks(data.y, data.group, X=data.X, sessions_per_query=100, top_k=10, click_model="cascade",
                          per_session=True, seed=5)
    t = gbrank.cascade_targets(log.session_rows, log.session_clicks, data.y.size)
    X, y, group = t.training_set(data.X, data.group)
    booster = lgb.train({"objective": gbrank.ips_listnet(propensity=None), "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y, group=group), num_boost_round=5)
    assert np.isfinite(booster.predict(data.X)).all()


# =========================================================================== input contract
@pytest.mark.parametrize("rows, clicked, kwargs, match", [
    ([[0, 1]], [[True, True]], {}, "session 0 has a click at rank 2 below a click after which the user stops"),
    ([[0, 5]], [[False, False]], {}, "session 0 shows row 5 at rank 2"),
    ([[0, -1]], [[False, True]], {}, "session 0 has a click at rank 2, where it shows no row"),
    ([[1, 2], [0, 0]], [[False, True], [False, True]], {}, r"session 1 shows row 0 at ranks \[1, 2\]"),
    ([[0, 1]], [[False]], {}, "session_clicks has shape"),
    ([0, 1], [False, True], {}, "two-dimensional"),
    ([[0, 1]], [[0, 2]], {}, "booleans"),
    ([[0, 1]], [[False, False]], {"continuation": [0.5]}, "one value per rank"),
    ([[0, 1]], [[False, False]], {"continuation": 1.5}, r"\[0, 1\]"),
    ([[0, 1]], [[False, False]], {"clip": 0.0}, "clip must be a finite number > 0"),
    ([[0, 1]], [[False, False]], {"clip": 2.0}, r"clip is an examination rate, in \(0, 1\]"),
])
def test_bad_sessions_are_refused_naming_the_session(rows, clicked, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gbrank.cascade_targets(np.array(rows), np.array(clicked), 3, **kwargs)
