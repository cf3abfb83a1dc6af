"""Categorical features in ``gbrank.Ranker``, as ``LGBMRanker`` and XGBoost's
``enable_categorical`` take them: pandas ``category`` columns, feature names kept, and a
clear error for what cannot train."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from gbrank.ranker import Ranker

ENGINES = ["lightgbm", "xgboost"]
SITES = [f"site_{i}" for i in range(12)]
# relevant sites that no order of the codes puts together
GOOD = {"site_1", "site_4", "site_6", "site_11"}


def frame(n_queries=60, docs=20, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    site = rng.choice(SITES, n)
    X = pd.DataFrame({"x": rng.random(n), "site": pd.Categorical(site, categories=SITES),
                      "qid": np.repeat(np.arange(n_queries), docs)})
    y = np.clip(np.round(2 * np.isin(site, list(GOOD)) + X["x"] + 0.3 * rng.normal(size=n)), 0, 3).astype(int)
    return X, y


def fitted(engine, **kwargs):
    pytest.importorskip(engine)
    X, y = frame()
    params = {"min_data_in_leaf": 5, "min_data_per_group": 5, "cat_smooth": 1.0} if engine == "lightgbm" else {}
    return Ranker(engine=engine, n_estimators=30, n_jobs=1, params=params, **kwargs).fit(X, y)


@pytest.mark.parametrize("engine", ENGINES)
def test_category_columns_train_as_categorical_features_with_their_names(engine):
    model = fitted(engine)
    assert model.categorical_features_ == ["site"]
    assert list(model.feature_names_in_) == ["x", "site"]
    booster = model.booster_
    if engine == "lightgbm":
        assert booster.feature_name() == ["x", "site"]
        splits = []

        def walk(node):
            if "split_feature" in node:
                splits.append((node["split_feature"], node["decision_type"]))
                walk(node["left_child"])
                walk(node["right_child"])

        for tree in booster.dump_model()["tree_info"]:
            walk(tree["tree_structure"])
        assert (1, "==") in splits, "LightGBM should split on the site as a category"
    else:
        assert booster.feature_names == ["x", "site"] and booster.feature_types == ["float", "c"]
    # the learned ranking separates the relevant sites, which no threshold on the codes can
    test, y_test = frame(n_queries=30, seed=1)
    assert model.score(test, y_test) > 0.85
    importances = model.feature_importances_
    assert importances.shape == (2,) and importances[1] > 0


@pytest.mark.parametrize("engine", ENGINES)
def test_predict_maps_categories_by_value(engine):
    model = fitted(engine)
    test, _ = frame(n_queries=5, seed=2)
    reordered = test.assign(site=test["site"].cat.reorder_categories(SITES[::-1]))
    np.testing.assert_allclose(model.predict(reordered), model.predict(test), rtol=1e-12)
    with pytest.raises(ValueError, match=r"fitted with the categorical columns \['site'\]"):
        model.predict(test.assign(site=test["site"].cat.codes))


@pytest.mark.parametrize("engine", ENGINES)
def test_string_columns_are_refused_with_the_conversion(engine):
    pytest.importorskip(engine)
    X, y = frame()
    X = X.assign(site=X["site"].astype(str))
    with pytest.raises(ValueError, match=r"columns of .* values \(\['site'\]\).*X\['site'\] = X\['site'\]\.astype\('category'\)"):
        Ranker(engine=engine, n_estimators=2).fit(X, y)


def test_lightgbm_categorical_feature_by_name_on_codes():
    pytest.importorskip("lightgbm")
    X, y = frame()
    codes = X.assign(site=X["site"].cat.codes)
    params = {"min_data_in_leaf": 5, "min_data_per_group": 5, "cat_smooth": 1.0, "categorical_feature": "name:site"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # LightGBM's "keyword ... will be ignored" would fail here
        model = Ranker(n_estimators=30, n_jobs=1, params=params).fit(codes, y)
    assert model.booster_.feature_name() == ["x", "site"]
    categorical = fitted("lightgbm")
    test, y_test = frame(n_queries=30, seed=1)
    np.testing.assert_allclose(model.predict(test.assign(site=test["site"].cat.codes)), categorical.predict(test),
                               rtol=1e-9, atol=1e-12)
    assert model.score(test.assign(site=test["site"].cat.codes), y_test) > 0.85


def test_xgboost_refuses_lightgbm_categorical_feature_with_the_fix():
    pytest.importorskip("xgboost")
    X, y = frame()
    with pytest.raises(ValueError, match=r"categorical_feature.*is LightGBM's.*astype\('category'\)"):
        Ranker(engine="xgboost", n_estimators=2, params={"categorical_feature": [1]}).fit(X, y)
