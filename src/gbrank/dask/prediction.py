"""Scoring a Dask DataFrame with a trained booster of either engine."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..engines import best_rounds
from ..engines import predict as engine_predict
from .layout import require_numeric

__all__ = ["predict"]


def predict(booster, df, features: Sequence[str] | None = None, *, rounds: int | None = None):
    """Raw scores of every row, as a Dask Series partitioned like ``df`` (same index).

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        A model, e.g. from :func:`train_lightgbm` or :func:`train_xgboost`.
    df : dask.dataframe.DataFrame
        Rows to score.
    features : sequence of str, optional
        Feature columns, default the booster's feature names.
    rounds : int, optional
        Boosting rounds to score with. Default: the best round when the booster was early
        stopped (its ``best_iteration``, as :func:`train_xgboost` leaves it; the metric
        watched was computed with that many rounds), otherwise every round.
    """
    if features is None:
        features = booster.feature_name() if hasattr(booster, "feature_name") else booster.feature_names
        if features is None:
            raise ValueError("the booster has no feature names: pass features=")
    features = list(features)
    missing = [c for c in features if c not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame lacks the model's features {missing[:5]}")
    require_numeric(df, features)
    if rounds is None:
        rounds = best_rounds(booster)
    # The whole partition goes to the task (not df[features]): Dask reads a projection of
    # files in other partitions than the frame, and the scores must line up with df's rows.
    return df.map_partitions(_predict_part, booster, features, rounds, meta=("score", np.float64))


def _predict_part(part: pd.DataFrame, booster, features, rounds) -> pd.Series:
    values = engine_predict(booster, part[features].to_numpy(dtype=np.float64), rounds)
    return pd.Series(values, index=part.index, name="score")
