"""The inverse-propensity weighted pairwise loss (gbrank.ips_ranknet): gradients against a
direct implementation, properties with the pair weights fixed, and training on clicks.

Unbiasedness over click draws, clipping, positions and bad input are tested for every click
objective in tests/test_clicks.py."""

from __future__ import annotations

import numpy as np
import pytest

import gbrank
from helpers import fd_gradient


def direct_loss(clicks, position, theta, scores, sizes, *, dcg=False, at=None, sigma=1.0):
    """sum_i c_i / theta_{p_i} sum_{j != i} lambda_ij log2(1 + exp(-sigma (s_i - s_j))) over
    each query's shown rows, written out pair by pair; lambda_ij = 1 / log2(1 + rank of i by
    ``at`` among the shown rows, ties in row order) with ``dcg``."""
    at = scores if at is None else at
    total, start = 0.0, 0
    for n in sizes:
        rows = [r for r in range(start, start + n) if position[r] >= 1]
        ranked = sorted(rows, key=lambda r: -at[r])  # stable: ties keep row order
        for i in rows:
            w = clicks[i] / theta[position[i] - 1]
            discount = 1.0 / np.log2(2.0 + ranked.index(i)) if dcg else 1.0
            for j in rows:
                if j != i:
                    total += w * discount * np.logaddexp(0.0, -sigma * (scores[i] - scores[j])) / np.log(2.0)
        start += n
    return total


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(4)
    sizes = np.array([5, 3, 6, 1])
    pos = np.concatenate([np.arange(1, n + 1) for n in sizes])
    pos[[3, 12]] = -1  # rows never shown
    clicks = rng.integers(0, 4, sizes.sum()).astype(float)
    clicks[pos == -1] = 0.0
    theta = np.array([1.0, 0.7, 0.45, 0.3, 0.22, 0.2])
    return clicks, pos, theta, rng.normal(size=sizes.sum()), sizes


@pytest.mark.parametrize("weighting, sigma", [("constant", 1.0), ("constant", 2.5), ("dcg", 1.0), ("dcg", 0.5)])
def test_gradient_and_hessian_match_finite_differences_of_a_direct_loss(case, weighting, sigma):
    clicks, pos, theta, s, sizes = case
    dcg = weighting == "dcg"
    obj = gbrank.ips_ranknet(propensity=theta, weighting=weighting, sigma=sigma, hess_floor=0.0)
    grad, hess = obj.grad_hess(clicks, s, sizes, position=pos)
    # the pair weights (dcg: the clicked row's rank) frozen at s
    f = lambda x: direct_loss(clicks, pos, theta, x, sizes, dcg=dcg, at=s, sigma=sigma)  # noqa: E731
    np.testing.assert_allclose(obj.loss(clicks, s, sizes, position=pos), f(s), rtol=1e-12)
    np.testing.assert_allclose(obj.fixed_weight_loss(clicks, s + 0.3 * np.cos(s), sizes, s, position=pos),
                               f(s + 0.3 * np.cos(s)), rtol=1e-12)
    np.testing.assert_allclose(grad, fd_gradient(f, s), rtol=1e-6, atol=1e-7)
    h = 1e-4
    second = np.array([(f(s + e) - 2 * f(s) + f(s - e)) / h**2 for e in np.eye(s.size) * h])
    np.testing.assert_allclose(hess, second, rtol=1e-4, atol=1e-5)
    assert grad[pos == -1].tolist() == [0.0, 0.0] and hess[pos == -1].tolist() == [0.0, 0.0]


def test_weighted_labels_are_the_clicks_divided_by_the_propensities(case):
    clicks, pos, theta, s, sizes = case
    shown = pos >= 1
    weights = np.where(shown, clicks / theta[np.maximum(pos, 1) - 1], 0.0)
    for weighting in ("constant", "dcg"):
        a = gbrank.ips_ranknet(propensity=theta, weighting=weighting).grad_hess(clicks, s, sizes, position=pos)
        b = gbrank.ips_ranknet(propensity=None, weighting=weighting).grad_hess(
            weights[shown], s[shown], [4, 3, 5, 1])
        np.testing.assert_allclose(a[0][shown], b[0], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(a[1][shown], b[1], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighting", ["constant", "dcg"])
def test_properties_with_the_pair_weights_fixed(weighting, seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 8, size=4)
    n = sizes.sum()
    pos = np.concatenate([rng.permutation(np.arange(1, k + 1)) for k in sizes])
    clicks = rng.integers(0, 3, n).astype(float)
    s = rng.normal(scale=3.0, size=n)
    obj = gbrank.ips_ranknet(propensity=1.0 / np.arange(1, 8), weighting=weighting, hess_floor=0.0)
    grad, hess = obj.grad_hess(clicks, s, sizes, position=pos)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    # a query's gradients sum to zero; hessians are non-negative
    np.testing.assert_allclose(np.add.reduceat(grad, offsets[:-1]), 0.0, atol=1e-10)
    assert (hess >= 0).all()
    # a constant added to a query's scores changes nothing (the ranks neither)
    shift = np.repeat(rng.normal(size=sizes.size) * 10, sizes)
    np.testing.assert_allclose(obj.loss(clicks, s + shift, sizes, position=pos), obj.loss(clicks, s, sizes, position=pos),
                               rtol=1e-10)
    np.testing.assert_allclose(obj.grad_hess(clicks, s + shift, sizes, position=pos)[0], grad, rtol=1e-8, atol=1e-10)
    # the order of the queries does not matter
    back = np.arange(sizes.size)[::-1]
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in back])
    g_rev, h_rev = obj.grad_hess(clicks[rows], s[rows], sizes[back], position=pos[rows])
    np.testing.assert_allclose(g_rev, grad[rows], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h_rev, hess[rows], rtol=1e-12, atol=1e-14)
    # no click, no gradient; huge scores give finite values
    assert not obj.grad_hess(np.zeros(n), s, sizes, position=pos)[0].any()
    big_g, big_h = obj.grad_hess(clicks, s * 1e6, sizes, position=pos)
    assert np.isfinite(big_g).all() and np.isfinite(big_h).all()
    assert np.isfinite(obj.loss(clicks, s * 1e6, sizes, position=pos))


def test_dcg_weights_favour_the_top_and_are_held_fixed(case):
    clicks, pos, theta, s, sizes = case
    obj = gbrank.ips_ranknet(propensity=theta, weighting="dcg")
    at = s.copy()
    moved = s.copy()
    moved[0] += 10.0  # row 0 to the top of its query: its pairs weigh D(1) = 1 from then on
    frozen = obj.fixed_weight_loss(clicks, moved, sizes, at, position=pos)
    assert frozen == pytest.approx(direct_loss(clicks, pos, theta, moved, sizes, dcg=True, at=at))
    assert obj.loss(clicks, moved, sizes, position=pos) == pytest.approx(
        direct_loss(clicks, pos, theta, moved, sizes, dcg=True, at=moved))


@pytest.mark.slow
def test_training_on_clicks_with_the_true_propensities_beats_the_naive_loss():
    lgb = pytest.importorskip("lightgbm")
    from gbrank.datasets import make_ranking, simulate_clicks, split_queries

    data = make_ranking(300, (20, 20), 20, noise=1.0, seed=0)
    train, test = split_queries(data, (0.7, 0.3), seed=0)
    log = simulate_clicks(train.y, train.group, X=train.X, sessions_per_query=100, top_k=20, eta=1.0,
                          logging_fraction=0.005, seed=0)
    query = np.repeat(np.arange(train.group.size), train.group)
    order = np.lexsort((log.position, query))
    X, clicks, pos = train.X[order], log.clicks[order].astype(float), log.position[order]
    params = {"learning_rate": 0.1, "num_leaves": 15, "verbose": -1, "num_threads": 1, "seed": 0}

    sets = {}

    def ndcg(obj, labels, position=None):
        objective = obj if position is None else gbrank.engines.with_position(obj, position)
        sets[id(obj)] = lgb.Dataset(X, labels, group=train.group)
        booster = lgb.train({**params, "objective": objective}, sets[id(obj)], 40)
        return gbrank.metrics.ndcg(test.y, booster.predict(test.X), test.group, k=10)

    naive = ndcg(gbrank.ips_ranknet(propensity=None), clicks)
    known = ndcg(gbrank.ips_ranknet(propensity=log.theta, weighting="dcg"), clicks, pos)
    estimated_obj = gbrank.ips_ranknet(weighting="dcg")
    estimated = ndcg(estimated_obj, clicks, pos)
    ceiling = ndcg(gbrank.ips_ranknet(propensity=None, weighting="dcg"), log.relevance[order])
    assert known > naive + 0.5 * (ceiling - naive)
    assert estimated > naive + 0.5 * (ceiling - naive)
    assert np.all(np.diff(estimated_obj.binding(sets[id(estimated_obj)]).propensity_[:10]) < 0)
