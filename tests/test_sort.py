"""The kernels' stable descending sort against NumPy's stable argsort."""

import numpy as np
import pytest

from gbrank._sort import order_desc


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 31, 32, 33, 120, 257])
@pytest.mark.parametrize("distinct", [1, 3, 1000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_order_desc_is_numpys_stable_descending_order(n, distinct, dtype):
    rng = np.random.default_rng(n * 1000 + distinct)
    values = rng.integers(0, distinct, n).astype(dtype) - 0.5
    expected = np.argsort(-values, kind="stable")
    np.testing.assert_array_equal(order_desc(values), expected)
    assert np.all(np.diff(values[order_desc(values)]) <= 0)
