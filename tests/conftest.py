"""Shared fixtures: the optional real LETOR data in ../shared/data (or GBRANK_DATA_DIR)."""

from __future__ import annotations

import pytest

from gbrank._data_dir import data_dir


@pytest.fixture(scope="session")
def letor_root():
    """Directory of the real LETOR copies; skips the test when it is absent."""
    root = data_dir()
    if root is None:
        pytest.skip("real LETOR data not found: set GBRANK_DATA_DIR or provide ../shared/data")
    return root


@pytest.fixture(scope="session")
def letor_path(letor_root):
    """``letor_path("letor4_mq2008/Fold1/train.txt.gz")``: that file or directory of the
    real data, skipping the test when it is missing."""

    def find(relative: str):
        path = letor_root / relative
        if not path.exists():
            pytest.skip(f"{relative} not found in {letor_root}")
        return path

    return find
