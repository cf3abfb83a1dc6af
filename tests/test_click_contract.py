"""The data contract of the click objectives with the engines: positions as the user gave
them (any row order, any value, -1 for rows never shown), state per training set that no
number of interleaved training sets loses, and statistics of the whole data."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import gbrank
from gbrank.datasets import make_ranking, simulate_clicks
from gbrank.engines import with_position

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

LGB = {"learning_rate": 0.1, "num_leaves": 7, "verbose": -1, "num_threads": 1, "seed": 0, "min_data_in_leaf": 5}
XGB = {"max_depth": 3, "nthread": 1, "min_child_weight": 0.0, "eta": 0.3}


@pytest.fixture(scope="module")
def natural():
    """Click log with rows in natural (document) order: the position is a column."""
    d = make_ranking(80, (12, 12), 8, seed=4)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=60, top_k=12, eta=1.0, seed=1)
    return d.X, log.clicks.astype(float), d.group, log.position.astype(np.int64), log


def _dataset(X, clicks, group, position):
    """A LightGBM Dataset that keeps the position values (gbrank's builder)."""
    return gbrank.engines.lightgbm.dataset(X, clicks, group, position=position, params=LGB)


def _gradients(obj, dataset, n):
    """The objective's gradients on a Dataset, at zero scores."""
    return obj(np.zeros(n), dataset)


# ----------------------------------------------------------------------------- LightGBM positions
def test_lightgbm_dataset_in_natural_order_trains_as_the_explicit_positions(natural):
    X, clicks, group, pos, log = natural
    query = np.repeat(np.arange(group.size), group)
    assert not np.array_equal(pos, np.lexsort((pos, query)))  # not in display order
    for obj_of in (lambda: gbrank.ips_listnet(), lambda: gbrank.ips_ranknet(propensity=log.theta)):
        via_dataset = lgb.train({**LGB, "objective": obj_of()}, _dataset(X, clicks, group, pos), 12)
        bound = lgb.train({**LGB, "objective": with_position(obj_of(), pos)}, lgb.Dataset(X, clicks, group=group), 12)
        binding = obj_of().bind(clicks, group, position=pos)
        explicit = lgb.train({**LGB, "objective": lambda p, _: binding.grad_hess(p)}, lgb.Dataset(X, clicks, group=group), 12)
        np.testing.assert_allclose(via_dataset.predict(X), explicit.predict(X), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(bound.predict(X), explicit.predict(X), rtol=1e-10, atol=1e-12)


def test_lightgbm_positions_past_ten_are_kept(natural):
    X, clicks, group, pos, log = natural
    second_page = np.where(pos > 0, pos + 10, -1)  # a second results page: 11..22
    theta = 1.0 / np.arange(1, 23)
    obj = gbrank.ips_listnet(propensity=theta)
    got = _gradients(obj, _dataset(X, clicks, group, second_page), clicks.size)
    want = gbrank.ips_listnet(propensity=theta).grad_hess(clicks, np.zeros(clicks.size), group, position=second_page)
    np.testing.assert_array_equal(got[0], want[0])
    as_first_page = gbrank.ips_listnet(propensity=theta).grad_hess(clicks, np.zeros(clicks.size), group, position=pos)
    assert np.abs(got[0] - as_first_page[0]).max() > 0.1
    # estimated: the positions 11..22 are estimated, relative to 11, the top-most shown
    estimated = gbrank.ips_listnet(warmup=0)
    dataset = _dataset(X, clicks, group, second_page)
    _gradients(estimated, dataset, clicks.size)
    on_first_page = gbrank.ips_listnet(warmup=0).bind(clicks, group, position=pos)
    on_first_page.grad_hess(np.zeros(clicks.size))
    assert estimated.binding(dataset).propensity_.size == 22
    np.testing.assert_allclose(estimated.binding(dataset).propensity_[10:], on_first_page.propensity_, rtol=1e-12)


def test_lightgbm_never_shown_rows_get_no_gradient():
    d = make_ranking(60, (8, 8), 6, seed=5)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, top_k=7, seed=2)  # one row per query unseen
    pos = log.position.astype(np.int64)
    assert ((pos == -1).reshape(-1, 8).sum(axis=1) == 1).all()
    for propensity in ("estimate", log.theta[:7]):
        obj = gbrank.ips_listnet(propensity=propensity)
        grad, _ = _gradients(obj, _dataset(d.X, log.clicks.astype(float), d.group, pos), pos.size)
        np.testing.assert_array_equal(grad[pos == -1], 0.0)
        assert np.abs(grad[pos > 0]).max() > 0
    # with known propensities the error names a position the user gave
    too_few = gbrank.ips_listnet(propensity=log.theta[:5])
    with pytest.raises(ValueError, match=r"= (6|7) at row .* past the 5 known propensities"):
        _gradients(too_few, _dataset(d.X, log.clicks.astype(float), d.group, pos), pos.size)


def test_lightgbm_cv_ten_folds_read_their_rows_of_the_positions(natural):
    X, clicks, group, pos, log = natural
    folds = gbrank.engines.query_folds(group, nfold=10)

    def cv(objective, dataset):
        return lgb.cv({**LGB, "objective": objective, "metric": "None"}, dataset,
                      num_boost_round=12, folds=folds, return_cvbooster=True)["cvbooster"].boosters

    by_fold = {}

    def explicit(preds, fold):
        # each fold its own objective, given its rows' positions by hand
        obj = by_fold.setdefault(id(fold), gbrank.ips_listnet(warmup=2, update_every=2))
        return obj.grad_hess(fold.get_label(), preds, fold.get_group(), position=pos[fold.used_indices])

    # one objective for the ten interleaved folds, each keeping its own estimate
    want = cv(explicit, lgb.Dataset(X, clicks, group=group))
    assert len(by_fold) == 10
    for dataset, objective in ((_dataset(X, clicks, group, pos), gbrank.ips_listnet(warmup=2, update_every=2)),
                               (lgb.Dataset(X, clicks, group=group),
                                with_position(gbrank.ips_listnet(warmup=2, update_every=2), pos))):
        for got, expected in zip(cv(objective, dataset), want, strict=True):
            np.testing.assert_allclose(got.predict(X), expected.predict(X), rtol=1e-10, atol=1e-12)


def test_lightgbm_cv_folds_estimate_every_position_of_the_whole_set(natural):
    # the deepest positions in one query only: with_position gives every fold's estimate
    # the whole set's positions, as a Dataset built with its positions does
    X, clicks, group, pos, _ = natural
    deep = pos.copy()
    deep[: group[0]] = np.where(pos[: group[0]] > 0, pos[: group[0]] + 20, -1)
    folds = gbrank.engines.query_folds(group, nfold=3)
    for objective, dataset in ((with_position(gbrank.ips_listnet(), deep), lgb.Dataset(X, clicks, group=group)),
                               (gbrank.ips_listnet(), _dataset(X, clicks, group, deep))):
        sizes = set()

        def recording(preds, fold, objective=objective, sizes=sizes):
            out = objective(preds, fold)
            sizes.add(objective.binding(fold).propensity_.size)
            return out

        lgb.cv({**LGB, "objective": recording, "metric": "None"}, dataset, num_boost_round=2, folds=folds)
        assert sizes == {int(deep.max())}


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_a_training_set_with_initial_scores_trained_twice_starts_afresh_and_continues(natural, engine):
    """A new training on one training set starts its estimate afresh also where the set has
    initial scores (LightGBM's init_score, XGBoost's base_margin); a continued training on
    it carries on: in XGBoost 4 + 4 rounds are the 8 rounds of one training (LightGBM's
    init_model replaces a Dataset's init_score by the model's scores, so there 4 + 4 is not
    8 whatever the objective)."""
    X, clicks, group, pos, _ = natural
    init = np.random.default_rng(0).normal(scale=0.3, size=clicks.size)
    objective = with_position(gbrank.pbm_listnet(warmup=1, update_every=1), pos)
    if engine == "lightgbm":
        data = lgb.Dataset(X, clicks, group=group, init_score=init, free_raw_data=False)

        def train(rounds, model=None):
            return lgb.train({**LGB, "objective": objective}, data, rounds, init_model=model)

        def scores(booster):
            return booster.predict(X, raw_score=True) + init
    else:
        xgb = pytest.importorskip("xgboost")
        data = xgb.DMatrix(X, clicks, group=group, base_margin=init)
        params = {"max_depth": 3, "nthread": 1, "min_child_weight": 0.0}

        def train(rounds, model=None):
            return xgb.train(params, data, rounds, obj=objective, xgb_model=model)

        def scores(booster):
            return booster.predict(data, output_margin=True)
    first = scores(train(8))
    theta = objective.binding(data).propensity_
    np.testing.assert_array_equal(scores(train(8)), first)
    np.testing.assert_array_equal(objective.binding(data).propensity_, theta)
    if engine == "xgboost":
        np.testing.assert_allclose(scores(train(4, train(4))), first, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("change", ["reversed rows", "second page", "order reversed"])
def test_lightgbm_positions_set_after_construction_are_not_stale(natural, change):
    # LightGBM keeps the new ids only; shifted or reversed in value, positions keep their ids
    X, clicks, group, pos, log = natural
    dataset = _dataset(X, clicks, group, pos)
    lgb.train({**LGB, "objective": gbrank.ips_listnet()}, dataset, 2)
    new = {"reversed rows": pos[::-1], "second page": np.where(pos > 0, pos + 10, -1),
           "order reversed": np.where(pos > 0, 13 - pos, -1)}[change]
    dataset.set_position(new.copy())
    with pytest.raises(ValueError, match="positions changed after"):
        lgb.train({**LGB, "objective": gbrank.ips_listnet()}, dataset, 2)


@pytest.mark.parametrize("page", [0, 10])
def test_lightgbm_positions_gbrank_was_not_given_are_refused_every_time(natural, page):
    """Ids 0, 1, 2, ... could be positions 1, 2, 3, ... or a second page 11, 12, 13, ...:
    a Dataset whose position values gbrank was not told is refused, in display order too,
    at every call, naming the fixes; told, it trains as the explicit positions."""
    X, clicks, group, pos, log = natural
    query = np.repeat(np.arange(group.size), group)
    order = np.lexsort((pos, query))
    shown = np.where(pos[order] > 0, pos[order] + page, -1)
    for _ in range(2):
        for dataset in (lgb.Dataset(X[order], clicks[order], group=group, position=shown, params=LGB).construct(),
                        lgb.Dataset(X[order], clicks[order], group=group, position=shown, params=LGB)):
            with pytest.raises(ValueError, match="with_position.*gbrank.engines.lightgbm.dataset"):
                gbrank.ips_listnet()(np.zeros(clicks.size), dataset.construct())
            with pytest.raises(ValueError, match="with_position"):
                lgb.train({**LGB, "objective": gbrank.ips_listnet()}, dataset, 1)
    told = lgb.Dataset(X[order], clicks[order], group=group, position=shown).construct()
    got = with_position(gbrank.ips_listnet(), shown)(np.zeros(clicks.size), told)
    want = gbrank.ips_listnet().grad_hess(clicks[order], np.zeros(clicks.size), group, position=shown)
    np.testing.assert_array_equal(got[0], want[0])


def test_a_custom_loop_trains_on_the_positions_it_is_told(natural):
    """Booster.update(fobj=) on a Dataset constructed early: with_position gives the values,
    and the model equals lgb.train's with the same positions."""
    X, clicks, group, pos, log = natural
    second_page = np.where(pos > 0, pos + 10, -1)
    theta = 1.0 / np.arange(1, 23)
    dataset = lgb.Dataset(X, clicks, group=group, params=LGB).construct()
    booster = lgb.Booster({**LGB, "objective": "none"}, dataset)
    objective = with_position(gbrank.ips_listnet(propensity=theta), second_page)
    for _ in range(5):
        booster.update(fobj=objective)
    direct = lgb.train({**LGB, "objective": with_position(gbrank.ips_listnet(propensity=theta), second_page)},
                       lgb.Dataset(X, clicks, group=group), 5)
    np.testing.assert_allclose(booster.predict(X, raw_score=True), direct.predict(X, raw_score=True), rtol=1e-10,
                               atol=1e-12)


def test_with_position_refuses_a_scalar_and_its_copies_share_no_writable_array():
    objective = gbrank.pbm_listnet()
    for bad in (3, [[1, 2, 3]]):
        with pytest.raises(ValueError, match="one display position per row"):
            with_position(objective, bad)
    given = np.array([1, 2, 3])
    bound = with_position(objective, given)
    given[0] = 7
    assert bound.position[0] == 1
    for copied in (copy.copy(bound), copy.deepcopy(bound), pickle.loads(pickle.dumps(bound))):
        with pytest.raises(ValueError, match="read-only"):
            copied.position[0] = 2
        assert copied.position[0] == 1 and bound.position[0] == 1


# ----------------------------------------------------------------------------- Ranker
def test_ranker_takes_never_shown_rows_and_a_pandas_position_column():
    pd = pytest.importorskip("pandas")
    d = make_ranking(60, (8, 8), 6, seed=6)
    log = simulate_clicks(d.y, d.group, X=d.X, sessions_per_query=50, top_k=6, seed=3)
    frame = pd.DataFrame(d.X, columns=[f"f{i}" for i in range(d.X.shape[1])])
    frame["position"] = log.position
    assert (frame["position"] == -1).any()
    features = frame.drop(columns="position")
    for engine in ("lightgbm", "xgboost"):
        settings = dict(engine=engine, n_estimators=5, max_depth=3, n_jobs=1)
        model = gbrank.Ranker(gbrank.ips_listnet(), **settings)
        model.fit(features, log.clicks, group=d.group, position=frame["position"])
        as_array = gbrank.Ranker(gbrank.ips_listnet(), **settings)
        as_array.fit(d.X, log.clicks, group=d.group, position=log.position)
        np.testing.assert_array_equal(model.predict(features), as_array.predict(d.X))
        # -1 is not read as a position: shown at the top (without clicks), the rows change the
        # model (at a position nobody clicked they would count as never shown again)
        shown_first = gbrank.Ranker(gbrank.ips_listnet(), **settings)
        shown_first.fit(d.X, log.clicks, group=d.group, position=np.where(log.position > 0, log.position, 1))
        assert np.abs(shown_first.predict(d.X) - as_array.predict(d.X)).max() > 1e-3
    with pytest.raises(ValueError, match="lambdarank has no rows never shown"):
        gbrank.Ranker("lambdarank", n_estimators=2).fit(features, log.clicks, group=d.group, position=frame["position"])


# ----------------------------------------------------------------------------- XGBoost positions
def test_xgboost_row_order_only_with_a_warning_or_when_asked(natural):
    X, clicks, group, pos, log = natural
    dtrain = xgb.DMatrix(X, clicks, group=group)
    with pytest.warns(UserWarning, match=r"with_position\(objective, position\)"):
        xgb.train(XGB, dtrain, 2, obj=gbrank.ips_listnet())
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asked = xgb.train(XGB, dtrain, 3, obj=gbrank.engines.with_position(gbrank.ips_listnet(), "row_order"))
        given = xgb.train(XGB, dtrain, 3, obj=gbrank.engines.with_position(gbrank.ips_listnet(), pos))
    # rows in natural order: the given positions train another model than the row order
    assert np.abs(asked.predict(dtrain) - given.predict(dtrain)).max() > 1e-3
    obj = gbrank.ips_listnet()
    explicit = xgb.train(XGB, dtrain, 3, obj=lambda p, d: obj.grad_hess(clicks, p, group, position=pos))
    np.testing.assert_allclose(given.predict(dtrain), explicit.predict(dtrain), rtol=1e-6)


# ----------------------------------------------------------------------------- state per training set
def _fold_sets(X, clicks, group, pos, nfold):
    query = np.repeat(np.arange(group.size), group)
    out = []
    for train_rows, _ in gbrank.engines.query_folds(group, nfold=nfold):
        sizes = np.bincount(query[train_rows], minlength=group.size)
        out.append((train_rows, sizes[sizes > 0]))
    return out


@pytest.mark.parametrize("make", [lambda: gbrank.ips_listnet(warmup=2, update_every=2), lambda: gbrank.listnet()])
def test_ten_interleaved_training_sets_each_train_as_alone(natural, make):
    X, clicks, group, pos, log = natural
    folds = _fold_sets(X, clicks, group, pos, 10)
    labels = clicks if getattr(make(), "uses_position", False) else np.minimum(clicks, 4)

    def matrix(rows, sizes):
        return xgb.DMatrix(X[rows], labels[rows], group=sizes)

    def objective_for(obj, rows):
        return gbrank.engines.with_position(obj, pos[rows]) if getattr(obj, "uses_position", False) else obj

    shared = make()
    sets = [matrix(rows, sizes) for rows, sizes in folds]
    boosters = [xgb.Booster({**XGB, "base_score": 0.0}, [d]) for d in sets]
    objectives = [objective_for(shared, rows) for rows, _ in folds]
    for it in range(12):  # as xgb.cv does: one round of every fold in turn
        for booster, d, obj in zip(boosters, sets, objectives):
            booster.update(d, it, fobj=obj)
    for booster, (rows, sizes) in zip(boosters, folds):
        alone = xgb.train({**XGB, "base_score": 0.0}, matrix(rows, sizes), 12, obj=objective_for(make(), rows))
        np.testing.assert_allclose(booster.predict(xgb.DMatrix(X)), alone.predict(xgb.DMatrix(X)), rtol=1e-6, atol=1e-7)
    if getattr(shared, "mode", None) == "estimate":
        assert len({id(shared.binding(d)) for d in sets}) == 10
        assert all(shared.binding(d).propensity_.shape[0] >= 12 for d in sets)
    pickle.loads(pickle.dumps(shared))
    kept = len(gbrank.engines.bindings._kept)
    del sets, boosters, objectives, booster, d, obj
    import gc

    gc.collect()
    assert len(gbrank.engines.bindings._kept) <= kept - 10  # memory bounded by the live training sets


def test_xgb_cv_ten_folds_keep_their_estimates(natural):
    X, clicks, group, pos, log = natural
    obj = gbrank.ips_listnet(warmup=2, update_every=2)
    captured = {}

    class Keep(xgb.callback.TrainingCallback):
        def after_training(self, model):
            captured["states"] = [obj.binding(fold.dtrain).state for fold in model.cvfolds]
            return model

    xgb.cv({**XGB, "base_score": 0.0, "eval_metric": "rmse"}, xgb.DMatrix(X, clicks, group=group), 12, nfold=10,
           obj=gbrank.engines.with_position(obj, "row_order"), callbacks=[Keep()])
    states = captured["states"]
    assert len(states) == 10
    # every fold re-estimated its propensities (12 calls: warmup 2, every 2 -> 5 updates)
    for state in states:
        assert state["fit"].calls == 12
        assert not np.array_equal(state["fit"].theta, state["fit"].initial)


# ----------------------------------------------------------------------------- docs
def test_every_click_snippet_in_the_docs_runs_as_pasted():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "clicks.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 5
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "clicks.md", "exec"), namespace)
    log, data = namespace["log"], namespace["data"]
    query = np.repeat(np.arange(data.group.size), data.group)
    # a snippet keeps the rows in their natural order, not in display order
    assert not np.array_equal(log.position, np.concatenate([np.arange(1, n + 1) for n in data.group]))
    assert (namespace["position"] == log.position).all() and query.size == log.position.size
    assert np.isfinite(namespace["model"].propensity_[:5]).all()
    assert np.isfinite(namespace["booster"].predict(namespace["dtrain"])).all()


# ----------------------------------------------------------------------------- whole-data statistics
def _recording_err(seen):
    """``lambdarank(measure="err")``'s class, recording each call's labels, scores, groups and
    gradients in ``seen``."""

    class Recording(type(gbrank.lambdarank(measure="err"))):
        def _bound_gradients(self, binding, scores, init_score=None):
            out = super()._bound_gradients(binding, scores, init_score)
            seen.append((np.array(binding.labels), np.array(scores), np.diff(binding.offsets), out[0]))
            return out

    return Recording


def test_lgb_cv_folds_take_err_label_maximum_of_the_whole_set():
    d = make_ranking(40, 10, 5, seed=12)
    y = np.minimum(d.y, 2)
    y[d.qid == 39] = np.arange((d.qid == 39).sum()) % 5  # the only query with labels 3 and 4: in one fold only
    folds = gbrank.engines.query_folds(d.group, nfold=2, shuffle=False)
    seen = []
    Recording = _recording_err(seen)

    lgb.cv({**LGB, "objective": Recording("err", hess_floor=0.0), "metric": "None", "min_data_in_leaf": 2},
           lgb.Dataset(d.X, y, group=d.group), num_boost_round=1, folds=folds)
    whole = gbrank.lambdarank(measure="err", max_label=4, hess_floor=0.0)
    assert {labels.max() for labels, *_ in seen} == {2.0, 4.0}
    for labels, preds, group, grad in seen:
        np.testing.assert_allclose(grad, whole.grad_hess(labels, preds, group)[0], rtol=1e-12, atol=1e-15)


def test_xgb_cv_folds_take_their_own_err_label_maximum_unless_told():
    """An xgb.cv fold has no link to its whole set in XGBoost's public API: each fold takes
    its own label maximum (documented), and max_label= tells the whole set's."""
    d = make_ranking(40, 10, 5, seed=12)
    y = np.minimum(d.y, 2)
    y[d.qid == 39] = np.arange((d.qid == 39).sum()) % 5  # the only query with labels 3 and 4: in one fold only
    seen = []
    Recording = _recording_err(seen)

    dtrain = xgb.DMatrix(d.X, y, qid=d.qid)
    xgb.cv({**XGB, "disable_default_eval_metric": 1}, dtrain, num_boost_round=1, nfold=3, seed=0,
           obj=Recording("err", hess_floor=0.0))
    assert len(seen) == 3 and {labels.max() for labels, *_ in seen} == {2.0, 4.0}
    for labels, preds, group, grad in seen:
        own = gbrank.lambdarank(measure="err", max_label=int(labels.max()), hess_floor=0.0)
        np.testing.assert_allclose(grad, own.grad_hess(labels, preds, group)[0], rtol=1e-12, atol=1e-15)
    seen.clear()
    xgb.cv({**XGB, "disable_default_eval_metric": 1}, dtrain, num_boost_round=1, nfold=3, seed=0,
           obj=Recording("err", max_label=4, hess_floor=0.0))
    whole = gbrank.lambdarank(measure="err", max_label=4, hess_floor=0.0)
    for labels, preds, group, grad in seen:
        np.testing.assert_allclose(grad, whole.grad_hess(labels, preds, group)[0], rtol=1e-12, atol=1e-15)


def test_the_row_order_warning_points_at_the_users_line(natural):
    import sys
    import warnings

    if sys.version_info < (3, 12) and not xgb.__version__.startswith("3.2"):
        pytest.skip("before Python 3.12 the warning is placed at XGBoost 3.2's depth of a direct xgb.train")
    X, clicks, group, pos, log = natural
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xgb.train(XGB, xgb.DMatrix(X, clicks, group=group), 1, obj=gbrank.ips_listnet())
    found = [w for w in caught if "with_position" in str(w.message)]
    assert found and found[0].filename == __file__, [(w.filename, w.lineno) for w in found]
