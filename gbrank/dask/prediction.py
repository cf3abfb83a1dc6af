"""Scoring a Dask DataFrame with a trained booster of either engine."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..engines import predict as engine_predict

__all__ = ["predict"]


def predict(booster, df, features: Sequence[str] | None = None):
    """Raw scores of every row, as a Dask Series partitioned like ``df`` (same index).

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        A model, e.g. from :func:`train_lightgbm` or :func:`train_xgboost`.
    df : dask.dataframe.DataFrame
        Rows to score.
    features : sequence of str, optional
        Feature columns, default the booster's feature names.
    """
    if features is None:
        features = booster.feature_name() if hasattr(booster, "feature_name") else booster.feature_names
        if features is None:
            raise ValueError("the booster has no feature names: pass features=")
    features = list(features)
    missing = [c for c in features if c not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame lacks the model's features {missing[:5]}")
    return df[features].map_partitions(_predict_part, booster, meta=("score", np.float64))


def _predict_part(part: pd.DataFrame, booster) -> pd.Series:
    values = engine_predict(booster, part.to_numpy(dtype=np.float64))
    return pd.Series(values, index=part.index, name="score")
