"""Query-group representations, their conversions and validation messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbrank.gains import discount_values, gain_values
from gbrank.groups import (
    check_group,
    group_offsets,
    offsets_to_sizes,
    qid_to_sizes,
    row_in_query,
    sizes_to_offsets,
    sizes_to_qid,
)


def test_round_trips():
    sizes = np.array([3, 1, 4, 2])
    offsets = sizes_to_offsets(sizes)
    np.testing.assert_array_equal(offsets, [0, 3, 4, 8, 10])
    np.testing.assert_array_equal(offsets_to_sizes(offsets), sizes)
    qid = sizes_to_qid(sizes)
    np.testing.assert_array_equal(qid, [0, 0, 0, 1, 2, 2, 2, 2, 3, 3])
    np.testing.assert_array_equal(qid_to_sizes(qid), sizes)
    assert offsets.dtype == np.int64
    np.testing.assert_array_equal(row_in_query(sizes), [0, 1, 2, 0, 0, 1, 2, 3, 0, 1])
    assert row_in_query([]).size == 0


def test_qid_may_be_unsorted_but_must_be_contiguous():
    np.testing.assert_array_equal(qid_to_sizes([7, 7, 3, 3, 3, 9]), [2, 3, 1])
    with pytest.raises(ValueError, match="qid must be sorted: qid 7 at row 1 is followed by qid 3 at row 2"):
        qid_to_sizes([7, 7, 3, 3, 3, 9], require_sorted=True)
    with pytest.raises(ValueError, match="qid 1 starts blocks at rows 0 and 3"):
        qid_to_sizes([1, 1, 2, 1])
    assert qid_to_sizes([]).size == 0


@pytest.mark.parametrize("qid", [[0, 0, np.nan, np.nan, 2, 2], [0, 0, np.nan, 1, 1, 1], [0, 0, None, 1, 1, 1],
                                 pd.array([0, 0, pd.NA, 1, 1, 1], dtype="Int64")])
def test_a_missing_query_id_is_refused_naming_the_row(qid):
    # NaN equals nothing, itself included: each such row passed for a query of its own, and
    # two of them crashed the contiguity check
    with pytest.raises(ValueError, match=r"qid\[2\] is missing .*: give every row a query id"):
        qid_to_sizes(qid)
    with pytest.raises(ValueError, match=r"qid\[2\] is missing"):
        group_offsets(6, qid=qid)


@pytest.mark.parametrize(
    "group,n_rows,message",
    [
        ([2, 2], 5, "group sizes sum to 4 but there are 5 rows"),
        ([2, 0, 3], 5, r"group\[1\] = 0 \(query 1 has no documents\)"),
        ([2, -1, 4], 5, "group sizes must be positive"),
        ([2.5, 2.5], 5, "must hold integers"),
        ([[2, 3]], 5, "one-dimensional"),
        (None, 5, "query groups are required"),
        ([np.nan, 5], 5, "NaN"),
        # sizes whose sum wraps around int64 to the row count (it crashed the process)
        ([2**63 - 1, 2**63 - 1, 5], 3, "group size 9223372036854775807 of query 0 is more than the 3 rows"),
    ],
)
def test_check_group_messages(group, n_rows, message):
    with pytest.raises(ValueError, match=message):
        check_group(group, n_rows)


def test_check_group_accepts_float_and_int32_sizes():
    np.testing.assert_array_equal(check_group(np.array([2.0, 3.0]), 5), [0, 2, 5])
    np.testing.assert_array_equal(check_group(np.array([2, 3], dtype=np.int32), 5), [0, 2, 5])


def test_group_offsets_takes_exactly_one_source():
    np.testing.assert_array_equal(group_offsets(4, qid=[5, 5, 6, 6]), [0, 2, 4])
    np.testing.assert_array_equal(group_offsets(4, group=[1, 3]), [0, 1, 4])
    with pytest.raises(ValueError, match="exactly one"):
        group_offsets(4, group=[4], qid=[0, 0, 0, 0])
    with pytest.raises(ValueError, match="qid has 3 entries but there are 4 rows"):
        group_offsets(4, qid=[0, 0, 0])


def test_offsets_must_start_at_zero_and_increase():
    with pytest.raises(ValueError, match="start with 0"):
        offsets_to_sizes([1, 3])
    with pytest.raises(ValueError, match="strictly increasing"):
        offsets_to_sizes([0, 3, 3])


def test_gains():
    np.testing.assert_array_equal(gain_values([0, 1, 3]), [0, 1, 7])
    np.testing.assert_array_equal(gain_values([0, 1.5, 3], "linear"), [0, 1.5, 3])
    np.testing.assert_array_equal(gain_values([0, 2, 1], [0.0, 10.0, 20.0]), [0, 20, 10])
    assert gain_values([31])[0] == 2.0**31 - 1
    with pytest.raises(ValueError, match="exceeds the largest supported label 31"):
        gain_values([32])
    with pytest.raises(ValueError, match="largest supported label 2 with a gain array of length 3"):
        gain_values([3], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="must hold integers"):
        gain_values([0.5])
    with pytest.raises(ValueError, match="non-negative"):
        gain_values([-1], "linear")
    with pytest.raises(ValueError, match="gain must be"):
        gain_values([1], "cubic")


def test_discounts_by_hand():
    np.testing.assert_allclose(discount_values(3), [1.0, 1 / np.log2(3), 0.5])
    np.testing.assert_allclose(discount_values(4, "zipf"), [1.0, 0.5, 1 / 3, 0.25])
    np.testing.assert_allclose(discount_values(3, 0.5), [1.0, 2**-0.5, 3**-0.5])
    np.testing.assert_array_equal(discount_values(4, [1.0, 0.5]), [1.0, 0.5, 0.0, 0.0])
    np.testing.assert_array_equal(discount_values(3, lambda r: 1.0 / r**2), [1.0, 0.25, 1 / 9])
    with pytest.raises(ValueError, match="beta > 0"):
        discount_values(3, -0.5)
    with pytest.raises(ValueError, match="must return 3 values"):
        discount_values(3, lambda r: r[:2])
    with pytest.raises(ValueError, match="finite and non-negative"):
        discount_values(2, [1.0, -1.0])
