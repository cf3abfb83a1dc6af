"""Bad and extreme input to the click tools: the simulator, fit_clicks, harvesting, the
affine and cascade targets, and the multi-label reporting (docs/reliability.md). An error
naming the row, position or setting, or a documented result; never a NaN or an infinity.
"""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from gbrank.click_training import click_likelihood
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.metrics import log_loss, pareto_front, per_label_ndcg

Y, GROUP = np.array([2, 0, 1, 0, 3, 1, 0]), [4, 3]
SCORES = np.arange(7.0)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_label": np.nan}, "max_label must be a finite number >= 0"),
    ({"max_label": np.inf}, "max_label must be a finite number >= 0"),
    ({"eps": "a"}, "eps must be a finite number"),
    ({"temperature": "a"}, "temperature must be a finite number > 0"),
    ({"seed": "a"}, "seed must be an integer >= 0"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"per_session": "yes"}, "per_session must be True or False"),
])
def test_simulator_settings_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        simulate_clicks(Y, GROUP, SCORES, **kwargs)


def test_simulator_features_of_the_wrong_shape_or_not_finite_are_named():
    X = np.random.default_rng(0).normal(size=(7, 3))
    for bad in (np.vstack([X, X]), X[:5], X[:, 0]):
        with pytest.raises(ValueError, match=r"X must be a matrix with one row per label \(7 rows\)"):
            simulate_clicks(Y, GROUP, X=bad, logging_fraction=1.0)
    missing = X.copy()
    missing[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"X\[2, 1\] = nan"):
        simulate_clicks(Y, GROUP, X=missing, logging_fraction=1.0)
    # standardised, features near the float range log the same order
    huge = simulate_clicks(Y, GROUP, X=X * 1e300, logging_fraction=1.0, seed=0)
    np.testing.assert_allclose(huge.logging_scores, simulate_clicks(Y, GROUP, X=X, logging_fraction=1.0,
                                                                     seed=0).logging_scores, rtol=1e-12)


def test_ips_weights_name_the_position_a_steep_curve_underflows_at():
    log = simulate_clicks(Y, GROUP, SCORES, eta=1000.0, click_noise=0.5)
    with pytest.raises(ValueError, match=r"clicked at position \d+, whose examination probability is 0"):
        log.ips_weights()
    assert np.isfinite(log.ips_weights(clip=0.01)).all()


def test_fit_clicks_refuses_a_vector_of_features_a_bad_seed_and_a_truthy_refit():
    data = make_ranking(30, (4, 8), 3, seed=0)
    log = simulate_clicks(data.y, data.group, X=data.X, seed=0)
    fit = {"position": log.position, "max_rounds": 2, "params": {"num_threads": 1, "verbose": -1}}
    with pytest.raises(ValueError, match=r"X must be a matrix of features \(n_rows, n_features\)"):
        gbrank.fit_clicks(data.X[:, 0], log.clicks, data.group, **fit)
    with pytest.raises(ValueError, match=r"X must be a matrix of features"):
        gbrank.fit_propensity(data.X[:, 0], log.clicks, data.group, position=log.position, rounds=2)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        gbrank.fit_clicks(data.X, log.clicks, data.group, seed="a", **fit)
    with pytest.raises(ValueError, match="refit must be True or False"):
        gbrank.fit_clicks(data.X, log.clicks, data.group, refit="no", **fit)


def test_click_likelihood_names_the_row_of_a_score_that_is_not_finite():
    with pytest.raises(ValueError, match="the score of held-out row 2 is nan"):
        click_likelihood(np.array([0.0, 0.0, np.nan, 0.0]), [1, 0, 1, 0], [2, 2], position=[1, 2, 1, 2],
                         propensity=[1.0, 0.5])


def test_affine_targets_refuse_a_vanishing_correction_and_a_truthy_shift():
    args = {"theta": np.array([1.0, 1e-310]), "eps_plus": 1.0, "eps_minus": 0.1, "impressions": 100}
    with pytest.raises(ValueError, match=r"corrected target of row 1 is not finite: .* position 2"):
        gbrank.affine_targets([30.0, 5.0], [1, 2], [2], **args)
    with pytest.raises(ValueError, match="shift must be True or False"):
        gbrank.affine_targets([30.0, 5.0], [1, 2], [2], theta=np.array([1.0, 0.5]), eps_plus=1.0, eps_minus=0.1,
                              impressions=100, shift="no")


def test_cascade_training_set_refuses_features_of_other_rows():
    targets = gbrank.cascade_targets([[0, 1, 2], [3, 4, -1]], [[0, 1, 0], [1, 0, 0]], 5)
    with pytest.raises(ValueError, match=r"one row per row of the targets \(5\), got shape \(4, 2\)"):
        targets.training_set(np.zeros((4, 2)), [3, 2])


def test_multi_label_reporting_names_the_column_and_refuses_nan_points():
    with pytest.raises(ValueError, match=r"labels\[:, 1\]: y_true contains NaN at row 1"):
        per_label_ndcg([[2, 0], [0, np.nan]], [0.1, 0.2], [2])
    with pytest.raises(ValueError, match="a label column or more"):
        per_label_ndcg(np.zeros((2, 0)), [0.1, 0.2], [2])
    with pytest.raises(ValueError, match=r"points\[1\] = \[0.1, nan\] is not finite"):
        pareto_front([[0.8, 0.5], [0.1, np.nan]])
    with pytest.raises(ValueError, match=r"weights must not all be zero \(query 1's row"):
        gbrank.multi_label(gbrank.listnet(), np.zeros((5, 2)), aggregate="label", weights=[[1, 0], [0, 0]])


def test_log_loss_of_scores_near_the_float_range_is_their_mean():
    assert log_loss([1, 0], [-1e308, 1e308]) == pytest.approx(1e308, rel=1e-12)
