"""Determinism and thread safety of every objective in LightGBM and XGBoost.

* With the same seeds, two trainings give bit-identical models (LightGBM ``model_to_string``,
  XGBoost ``save_raw`` and ``get_dump``), for the randomised objectives too: their draws
  come from a hash of the seed, the query and its scores, not from a generator's state.
* With another objective seed, the randomised objectives train another model.
* One objective object shared by two trainings running in two threads gives the models the
  two trainings give one after the other.
"""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest

import gbrank
from helpers import lgb_params, small_data, xgb_params
from objective_cases import case_data, ids, objective_cases, randomised

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

def catalogue():
    """(every registered objective and example, the randomised ones among them)."""
    cases = list(objective_cases().values())
    return cases, [case for case in cases if randomised(case)]


CASES, RANDOMISED = catalogue()

LGB_PARAMS = lgb_params(num_leaves=7, min_data_in_leaf=5, learning_rate=0.3, seed=7)
XGB_PARAMS = xgb_params(max_depth=3, eta=0.3, nthread=2, seed=7)
ROUNDS = 5


def make_data(seed, n_queries=25):
    """Queries of 5..14 documents with many tied labels 0..3."""
    return small_data(seed, n_queries, 5, min_docs=5, max_docs=14, second=0.7, noise=0.6)


DATA_A = make_data(1)
DATA_B = make_data(2, n_queries=18)


class Shared:
    """Hands the same objective to every training: lgb.train deep-copies its parameters, so
    without this each LightGBM training would call a copy of its own."""

    def __init__(self, inner):
        self.inner = inner

    def __deepcopy__(self, memo):
        return self

    def __call__(self, preds, data):
        return self.inner(preds, data)


def lgb_model(objective, data, params=LGB_PARAMS):
    X, y, sizes = data
    booster = lgb.train({**params, "objective": objective}, lgb.Dataset(X, y, group=sizes), num_boost_round=ROUNDS)
    return booster.model_to_string()


def xgb_booster(objective, data, params=XGB_PARAMS):
    X, y, sizes = data
    return xgb.train(params, xgb.DMatrix(X, y, group=sizes), num_boost_round=ROUNDS, obj=objective)


def xgb_model(objective, data, params=XGB_PARAMS):
    booster = xgb_booster(objective, data, params)
    return bytes(booster.save_raw(raw_format="ubj")), tuple(booster.get_dump(with_stats=True))


def ranker_model(objective, data):
    X, y, sizes = data
    ranker = lgb.LGBMRanker(objective=objective, n_estimators=ROUNDS, num_leaves=7, min_child_samples=5,
                            learning_rate=0.3, n_jobs=2, random_state=7, deterministic=True,
                            metric="None", verbose=-1)
    return ranker.fit(X, y, group=sizes).booster_.model_to_string()


TRAIN = {"lgb.train": lgb_model, "LGBMRanker": ranker_model, "xgb.train": xgb_model}


# =========================================================================== same seeds
@pytest.mark.parametrize("engine", list(TRAIN))
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_same_seeds_give_bit_identical_models(engine, case):
    train = TRAIN[engine]
    data_a, data_b = case_data(case, DATA_A), case_data(case, DATA_B)
    first = train(case.build(seed=11), data_a)
    assert train(case.build(seed=11), data_a) == first  # a fresh object
    reused = case.build(seed=11)
    train(reused, data_b)
    assert train(reused, data_a) == first  # an object that trained on other data before
    assert train(copy.deepcopy(reused), data_a) == first  # a copy, as lgb.train makes


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_the_models_train_and_are_not_trivial(case):
    # guards the comparisons above: every objective grows real trees on this data
    booster = xgb_booster(case.build(), case_data(case, DATA_A))
    X, y, sizes = DATA_A
    pred = booster.predict(xgb.DMatrix(X))
    assert np.isfinite(pred).all() and np.unique(pred).size > 10


# =========================================================================== other seeds
@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
@pytest.mark.parametrize("case", RANDOMISED, ids=ids(RANDOMISED))
def test_another_objective_seed_gives_another_model(engine, case):
    train = TRAIN[engine]
    assert train(case.build(seed=1), DATA_A) != train(case.build(seed=2), DATA_A)


@pytest.mark.parametrize("case", RANDOMISED, ids=ids(RANDOMISED))
def test_the_seed_changes_the_gradient_not_its_law(case):
    # same scores, other seed: other draws; the average over seeds approaches the same mean
    X, y, sizes = DATA_A
    scores = np.random.default_rng(3).normal(size=y.size)
    grads = np.array([case.build(seed=s).grad_hess(y, scores, sizes)[0] for s in range(200)])
    assert not np.array_equal(grads[0], grads[1])
    half = grads[:100].mean(axis=0) - grads[100:].mean(axis=0)
    spread = grads.std(axis=0) / np.sqrt(100) + 1e-12
    assert np.abs(half / spread).max() < 6


# =========================================================================== threads
def run_in_threads(jobs):
    """Run the callables together, released at once by a barrier; return their results."""
    barrier = threading.Barrier(len(jobs))
    results = [None] * len(jobs)
    errors = []

    def work(i, job):
        try:
            barrier.wait()
            results[i] = job()
        except BaseException as exc:  # re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("engine", ["lgb.train", "xgb.train"])
@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_one_objective_in_two_threads_gives_the_sequential_models(engine, case):
    obj = case.build(seed=5)
    if engine == "lgb.train":
        shared = Shared(obj)
        params = {**LGB_PARAMS, "num_threads": 1}

        def train(data):
            return lgb_model(shared, data, params)
    else:
        params = {**XGB_PARAMS, "nthread": 1}

        def train(data):
            return xgb_model(obj, data, params)

    data_a, data_b = case_data(case, DATA_A), case_data(case, DATA_B)
    sequential = [train(data_a), train(data_b)]
    assert run_in_threads([lambda: train(data_a), lambda: train(data_b)]) == sequential
    assert run_in_threads([lambda: train(data_b), lambda: train(data_a)]) == sequential[::-1]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_concurrent_calls_on_many_datasets(case):
    # six datasets through one object from three threads: more than its cache holds, so
    # states are evicted and rebuilt while other threads read them
    datasets = [case_data(case, make_data(10 + i, n_queries=6)) for i in range(6)]
    rng = np.random.default_rng(0)
    scores = [rng.normal(size=d[1].size) for d in datasets]
    obj = case.build(seed=9)
    expected = [case.build(seed=9).grad_hess(d[1], s, d[2]) for d, s in zip(datasets, scores)]

    def job(offset):
        def run():
            out = []
            for r in range(12):
                i = (offset + r) % len(datasets)
                out.append((i, obj.grad_hess(datasets[i][1], scores[i], datasets[i][2])))
            return out
        return run

    for results in run_in_threads([job(0), job(2), job(4)]):
        for i, (grad, hess) in results:
            np.testing.assert_array_equal(grad, expected[i][0])
            np.testing.assert_array_equal(hess, expected[i][1])


# =========================================================================== estimators
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("case", RANDOMISED, ids=ids(RANDOMISED))
def test_ranker_same_seeds_same_model_other_seed_other_model(engine, case):
    X, y, sizes = DATA_A

    def fit(seed, random_state=3):
        # subsampling makes the engine's own seed matter too
        model = gbrank.Ranker(case.build(seed=seed), engine=engine, n_estimators=ROUNDS, subsample=0.8,
                              n_jobs=2, random_state=random_state)
        model.fit(X, y, group=sizes)
        booster = model.booster_
        return booster.model_to_string() if engine == "lightgbm" else bytes(booster.save_raw(raw_format="ubj"))

    first = fit(1)
    assert fit(1) == first
    assert fit(2) != first
    assert fit(1, random_state=4) != first


def test_ndcg_boost_is_deterministic_and_its_sampling_is_seeded():
    X, y, sizes = DATA_A

    def fit(**kwargs):
        model = gbrank.NDCGBoost(n_estimators=8, **kwargs).fit(X, y, group=sizes)
        return [tuple(a) for a in (model.stump_features_, model.stump_thresholds_, model.stump_polarities_, model.alphas_)]

    assert fit() == fit()
    assert fit(random_state=1) == fit(random_state=2)  # the exact search draws nothing
    assert fit(sample=True, random_state=1) == fit(sample=True, random_state=1)
    assert fit(sample=True, random_state=1) != fit(sample=True, random_state=2)


@pytest.mark.parametrize("make", [gbrank.listmle, lambda: gbrank.listmle_topk(k=5),
                                  lambda: gbrank.listnet(k=3, exact_limit=0)], ids=["listmle", "listmle_topk", "listnet_k3"])
def test_random_draws_belong_to_the_query_not_to_its_place_among_the_rows(make):
    """A Dask worker sees some of the queries, in its own order: with the default random
    tie-breaking (and ListNet's sampling) every query gets the gradient it gets on one
    machine, since the draws hash the query's labels and scores, never its index."""
    data = gbrank.datasets.make_ranking(n_queries=80, docs_per_query=(5, 30), n_features=3, seed=11)
    labels = np.minimum(data.y, 1)  # many ties
    scores = np.round(np.random.default_rng(3).normal(size=labels.size), 1)
    offsets = np.r_[0, np.cumsum(data.group)]
    whole = make().grad_hess(labels, scores, data.group)
    worker = np.random.default_rng(4).permutation(data.group.size)[:30]  # a part, shuffled
    rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in worker])
    part = make().grad_hess(labels[rows], scores[rows], data.group[worker])
    for got, want in zip(part, whole):
        np.testing.assert_array_equal(got, want[rows])
