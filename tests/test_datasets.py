"""gbrank.datasets: LETOR/SVMlight readers, RankingData, make_ranking and query splits."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from gbrank.datasets import (
    LetorFold,
    RankingData,
    kfold_queries,
    load_letor,
    load_letor_fold,
    make_ranking,
    split_queries,
)
from gbrank.datasets.letor import fold_directories

# ---------------------------------------------------------------------------------------
# Real data: counts from the data README's tables
# ---------------------------------------------------------------------------------------

# The five parts of each collection: (queries, docs, label counts 0/1/2). LETOR rotates
# them: fold k tests on part k, validates on part k - 1 (fold 1 on part 5) and trains on the
# other three, which gives the README's table of every fold.
MQ2008 = [(156, 2874, (2319, 378, 177)), (157, 2933, (2316, 427, 190)), (157, 3635, (3080, 385, 170)),
          (157, 3062, (2424, 411, 227)), (157, 2707, (2140, 400, 167))]
OHSUMED = [(22, 3383, (2794, 274, 315)), (21, 2570, (1751, 451, 368)), (21, 3076, (2162, 501, 413)),
           (21, 3573, (2139, 813, 621)), (21, 3538, (2457, 546, 535))]


def fold_counts(parts, fold: int) -> dict:
    """``{"train": counts, "vali": counts, "test": counts}`` of fold ``fold`` (1-based)."""
    test, vali = fold - 1, (fold - 2) % len(parts)
    train = [part for i, part in enumerate(parts) if i not in (test, vali)]
    summed = (sum(p[0] for p in train), sum(p[1] for p in train), tuple(map(sum, zip(*(p[2] for p in train)))))
    return {"train": summed, "vali": parts[vali], "test": parts[test]}


DATASETS = {
    "letor4_mq2008": (MQ2008, 46),
    "letor3_ohsumed/QueryLevelNorm": (OHSUMED, 45),
}


@pytest.mark.parametrize("fold", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_letor_folds_match_the_readme(letor_path, dataset, fold):
    table, n_features = DATASETS[dataset]
    splits = load_letor_fold(letor_path(dataset), fold)
    assert isinstance(splits, LetorFold)
    for name, part in zip(splits._fields, splits):
        n_queries, n_docs, labels = fold_counts(table, fold)[name]
        assert part.n_queries == n_queries, name
        assert len(part) == n_docs == part.group.sum(), name
        assert part.X.shape == (n_docs, n_features)
        assert part.X.dtype == np.float64
        assert tuple(np.bincount(part.y.astype(np.int64), minlength=3)) == labels, name
        assert np.unique(part.qid).size == n_queries
        # query-level normalised features
        assert part.X.min() >= 0 and part.X.max() <= 1


def qid_blocks(parts):
    """Number of query blocks over several files."""
    return sum(p.n_queries for p in parts)


def test_mq2008_totals_and_first_line(letor_path):
    root = letor_path("letor4_mq2008")
    tests = [load_letor(root / f"Fold{k}" / "test.txt.gz") for k in range(1, 6)]
    qid = np.concatenate([t.qid for t in tests])
    y = np.concatenate([t.y for t in tests])
    sizes = np.concatenate([t.group for t in tests])
    assert np.unique(qid).size == qid_blocks(tests) == 784
    assert y.size == 15211
    assert tuple(np.bincount(y.astype(np.int64))) == (12279, 2001, 931)
    assert (qid.min(), qid.max()) == (10002, 19997)
    assert (sizes.min(), sizes.max(), np.median(sizes)) == (5, 121, 8)
    no_relevant = [not t.y[a:b].any() for t in tests for a, b in zip(t.offsets, t.offsets[1:])]
    assert sum(no_relevant) == 220

    train = load_letor(root / "Fold1" / "train.txt.gz")
    # "0 qid:10002 1:0.007477 2:0.000000 ... #docid = GX008-86-4444840 ..."
    assert (train.y[0], train.qid[0], train.X[0, 0], train.X[0, 1]) == (0, 10002, 0.007477, 0)
    # the README's rotation: Fold1/train = Fold2/test + Fold3/test + Fold4/test
    rebuilt = [tests[1], tests[2], tests[3]]
    np.testing.assert_array_equal(train.X, np.vstack([t.X for t in rebuilt]))
    np.testing.assert_array_equal(train.y, np.concatenate([t.y for t in rebuilt]))
    np.testing.assert_array_equal(train.group, np.concatenate([t.group for t in rebuilt]))


def test_ohsumed_totals(letor_path):
    root = letor_path("letor3_ohsumed/QueryLevelNorm")
    tests = [load_letor(root / f"Fold{k}" / "test.txt.gz", dtype=np.float32) for k in range(1, 6)]
    qid = np.concatenate([t.qid for t in tests])
    assert tests[0].X.dtype == np.float32
    np.testing.assert_array_equal(np.unique(qid), np.arange(1, 107))
    assert qid_blocks(tests) == 106
    assert qid.size == 16140
    sizes = np.concatenate([t.group for t in tests])
    assert (sizes.min(), sizes.max(), np.median(sizes)) == (35, 320, 147)


def test_lightgbm_example_pair(letor_path):
    root = letor_path("lightgbm_lambdarank_example")
    train = load_letor(root / "rank.train.gz", n_features=300)  # finds rank.train.query.gz
    assert (len(train), train.n_queries, train.n_features) == (3005, 201, 300)
    assert (train.group.min(), train.group.max()) == (1, 27)
    assert tuple(np.bincount(train.y.astype(np.int64))) == (645, 1211, 858, 222, 69)
    np.testing.assert_array_equal(train.qid, np.repeat(np.arange(201), train.group))
    sizes = np.loadtxt(gzip.open(root / "rank.train.query.gz"), dtype=np.int64)
    np.testing.assert_array_equal(train.group, sizes)

    test = load_letor(root / "rank.test.gz", n_features=300,
                      query_file=root / "rank.test.query.gz")
    assert (len(test), test.n_queries, test.n_features) == (768, 50, 300)
    assert (test.group.min(), test.group.max()) == (6, 24)
    assert tuple(np.bincount(test.y.astype(np.int64))) == (206, 256, 252, 44, 10)
    # sparse: about 95 non-zeros per line
    assert 80 < np.count_nonzero(train.X) / len(train) < 110


def test_lightgbm_example_needs_n_features_to_be_large_enough(letor_path):
    path = letor_path("lightgbm_lambdarank_example/rank.train.gz")
    with pytest.raises(ValueError, match=r"rank\.train\.gz: line \d+: n_features was set to 200"):
        load_letor(path, n_features=200)


# ---------------------------------------------------------------------------------------
# Small files written here: formats, comments, groups
# ---------------------------------------------------------------------------------------

LETOR_TEXT = (
    "# a comment line\n"
    "2 qid:7 1:0.5 2:0.25 3:1 #docid = A inc = 1 prob = 0.5\n"
    "0 qid:7 1:0.125 3:2\n"
    "\n"
    "1 qid:3 2:-1.5 3:4e-1 # docid = B\n"
    "0 qid:9 1:0 2:0 3:0\n"
)
EXPECTED_X = np.array(
    [[0.5, 0.25, 1.0], [0.125, 0.0, 2.0], [0.0, -1.5, 0.4], [0.0, 0.0, 0.0]]
)


def write(path, text: str | bytes, compress: bool = False):
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("name, compress", [("a.txt", False), ("a.txt.gz", True),
                                            ("plain-named.gz", False), ("gz-named.txt", True)])
def test_plain_and_gzip_files_read_the_same(tmp_path, name, compress):
    data = load_letor(write(tmp_path / name, LETOR_TEXT, compress))
    np.testing.assert_array_equal(data.X, EXPECTED_X)
    np.testing.assert_array_equal(data.y, [2, 0, 1, 0])
    np.testing.assert_array_equal(data.qid, [7, 7, 3, 9])
    np.testing.assert_array_equal(data.group, [2, 1, 1])
    np.testing.assert_array_equal(data.offsets, [0, 2, 3, 4])


def test_crlf_line_endings(tmp_path):
    data = load_letor(write(tmp_path / "crlf.txt", LETOR_TEXT.replace("\n", "\r\n")))
    np.testing.assert_array_equal(data.X, EXPECTED_X)


def test_n_features_pads_and_dtype(tmp_path):
    data = load_letor(write(tmp_path / "a.txt", LETOR_TEXT), n_features=5, dtype=np.float32)
    assert data.X.dtype == np.float32 and data.X.shape == (4, 5)
    np.testing.assert_array_equal(data.X[:, :3], EXPECTED_X.astype(np.float32))
    assert not data.X[:, 3:].any()
    with pytest.raises(ValueError, match="float32 or float64"):
        load_letor(tmp_path / "a.txt", dtype=np.int64)


def test_query_file_pair(tmp_path):
    text = "1 1:0.5\n0 2:1\n2 1:3\n0 3:1\n1 1:1\n"
    write(tmp_path / "rank.train", text)
    write(tmp_path / "rank.train.query", "2\n3\n")
    data = load_letor(tmp_path / "rank.train")
    np.testing.assert_array_equal(data.group, [2, 3])
    np.testing.assert_array_equal(data.qid, [0, 0, 1, 1, 1])
    write(tmp_path / "rank.test.gz", text, compress=True)
    write(tmp_path / "rank.test.query.gz", "4\n1\n", compress=True)
    np.testing.assert_array_equal(load_letor(tmp_path / "rank.test.gz").group, [4, 1])
    write(tmp_path / "other.txt", "1\n1\n1\n1\n1\n")
    explicit = load_letor(tmp_path / "rank.train", query_file=tmp_path / "other.txt")
    np.testing.assert_array_equal(explicit.group, [1, 1, 1, 1, 1])


def test_query_file_must_agree_with_qid(tmp_path):
    path = write(tmp_path / "q.txt", LETOR_TEXT)
    write(tmp_path / "sizes", "2\n1\n1\n")
    assert load_letor(path, query_file=tmp_path / "sizes").n_queries == 3
    write(tmp_path / "sizes", "1\n2\n1\n")
    with pytest.raises(ValueError, match=r"sizes: the group sizes disagree with the qid"):
        load_letor(path, query_file=tmp_path / "sizes")


@pytest.mark.parametrize(
    "sizes, message",
    [("2\n2\n", r"rank\.train\.query: group sizes sum to 4 but there are 5 rows in .*train"),
     ("2\n0\n3\n", r"rank\.train\.query: group sizes must be positive"),
     ("2\n1.5\n", r"rank\.train\.query: one integer group size per line")],
)
def test_bad_query_file(tmp_path, sizes, message):
    write(tmp_path / "rank.train", "1 1:0.5\n0 2:1\n2 1:3\n0 3:1\n1 1:1\n")
    write(tmp_path / "rank.train.query", sizes)
    with pytest.raises(ValueError, match=message):
        load_letor(tmp_path / "rank.train")


def test_no_qid_and_no_query_file(tmp_path):
    write(tmp_path / "rank.train.gz", "1 1:0.5\n0 2:1\n", compress=True)
    with pytest.raises(ValueError, match=r"no qid: and no query file .*train\.query.*query_file="):
        load_letor(tmp_path / "rank.train.gz")


# ---------------------------------------------------------------------------------------
# Malformed and truncated files: the error names the file and the line
# ---------------------------------------------------------------------------------------

GOOD_LINES = [
    "0 qid:1 1:0.1 2:0.2 3:0.3 # first",
    "1 qid:1 1:0.4 2:0.5 3:0.6",
    "# note",
    "2 qid:2 1:0.7 2:0.8 3:0.9",
]


@pytest.mark.parametrize(
    "bad_line",
    ["1 qid:2 1:0.1 2:abc 3:0.3",   # value
     "1 qid:2 1:0.1 x:0.2 3:0.3",   # index
     "1 qid:2 1:0.1 2 3:0.3",       # pair without colon
     "high qid:2 1:0.1",            # label
     "1 qid:2.5 1:0.1",             # qid
     "1 qid:2 0:0.1 1:0.3",         # zero index in a one-based format
     "1 qid:2 2:0.1 1:0.3",         # indices out of order
     "1 qid:2 1:0.1 1:0.3"],        # repeated index
)
@pytest.mark.parametrize("compress", [False, True])
def test_malformed_line_is_named(tmp_path, bad_line, compress):
    lines = GOOD_LINES * 3
    lines.insert(9, bad_line)  # line 10
    name = "bad.txt.gz" if compress else "bad.txt"
    path = write(tmp_path / name, "\n".join(lines) + "\n", compress)
    with pytest.raises(ValueError, match=r"bad\.txt(\.gz)?: line 10: .*" + bad_line[:6]):
        load_letor(path)


def test_feature_index_above_n_features_is_named(tmp_path):
    path = write(tmp_path / "wide.txt", "\n".join(GOOD_LINES + ["0 qid:2 1:0.1 7:0.2"]) + "\n")
    with pytest.raises(ValueError, match=r"wide\.txt: line 5: n_features was set to 3"):
        load_letor(path, n_features=3)


def test_truncated_plain_file(tmp_path):
    full = "\n".join(GOOD_LINES) + "\n"
    path = write(tmp_path / "cut.txt", full[:-4])  # cut inside the last value
    with pytest.raises(ValueError, match=r"cut\.txt: line 4 does not end with a newline.*trunc"):
        load_letor(path)


def test_truncated_gzip_file(tmp_path):
    blob = gzip.compress(("\n".join(GOOD_LINES) + "\n").encode() * 200)
    path = write(tmp_path / "cut.txt.gz", blob[: len(blob) // 2])
    with pytest.raises(ValueError, match=r"cut\.txt\.gz: cannot decompress.*truncated or corrupt"):
        load_letor(path)
    path = write(tmp_path / "junk.txt.gz", b"\x1f\x8b" + b"not really gzip" * 10)
    with pytest.raises(ValueError, match=r"junk\.txt\.gz: cannot decompress"):
        load_letor(path)


@pytest.mark.parametrize("text", ["", "# only a comment\n\n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(ValueError, match=r"empty\.txt: the file holds no records"):
        load_letor(write(tmp_path / "empty.txt", text))


def test_non_finite_label_is_named(tmp_path):
    lines = GOOD_LINES + ["nan qid:2 1:0.1 2:0.2 3:0.3"]
    with pytest.raises(ValueError, match=r"nan\.txt: line 5: the label must be finite"):
        load_letor(write(tmp_path / "nan.txt", "\n".join(lines) + "\n"))


def test_qid_on_some_lines_only(tmp_path):
    lines = GOOD_LINES + ["1 1:0.1 2:0.2 3:0.3"]
    with pytest.raises(ValueError, match=r"mixed\.txt: line 5 has no qid: but other lines do"):
        load_letor(write(tmp_path / "mixed.txt", "\n".join(lines) + "\n"))


def test_non_contiguous_qid(tmp_path):
    lines = GOOD_LINES + ["1 qid:1 1:0.1 2:0.2 3:0.3"]
    message = r"split\.txt: the lines of qid 1 are not together: line 1 starts them and line 5 resumes them"
    with pytest.raises(ValueError, match=message):
        load_letor(write(tmp_path / "split.txt", "\n".join(lines) + "\n"))


@pytest.mark.parametrize("line, message", [
    # a 40-byte file asking for a dense matrix of 2 x 2*10**7 values
    ("1 qid:1 1:0.5 20000000:1", r"line 1: feature index 20000000 makes a dense matrix of 2 x 20000000 values"),
    ("1 qid:1 1:0.5 1000000000000:1", r"line 1: value too large to convert to int"),
    ("1 qid:99999999999999999999 1:0.5", r"line 1: Python int too large"),
])
def test_a_line_no_engine_could_take_is_named(tmp_path, line, message):
    with pytest.raises(ValueError, match=r"crafted\.txt: " + message):
        load_letor(write(tmp_path / "crafted.txt", line + "\n0 qid:1 1:0.2\n"))


def test_two_directories_of_one_fold_are_refused(tmp_path):
    for name in ("Fold01", "Fold1", "Fold2"):
        (tmp_path / name).mkdir()
    with pytest.raises(ValueError, match=r"Fold01 and Fold1 are both fold 1: keep one"):
        fold_directories(tmp_path)


def test_labels_are_read_as_written(tmp_path):
    # LETOR's semi-supervised sets mark unjudged documents -1; the loader keeps them
    data = load_letor(write(tmp_path / "semi.txt", "-1 qid:1 1:0.5\n2.5 qid:1 1:0.1\n"))
    np.testing.assert_array_equal(data.y, [-1, 2.5])


# ---------------------------------------------------------------------------------------
# load_letor_fold on a hand-made fold directory
# ---------------------------------------------------------------------------------------


def test_fold_directory_shares_the_widest_feature_count(tmp_path):
    fold = tmp_path / "Fold2"
    fold.mkdir()
    write(fold / "train.txt.gz", "1 qid:1 1:1 4:1\n0 qid:1 2:1\n", compress=True)
    write(fold / "vali.txt", "1 qid:2 1:1\n")
    write(fold / "test.txt", "0 qid:3 6:2\n")
    splits = load_letor_fold(tmp_path, 2)
    assert [p.n_features for p in splits] == [6, 6, 6]
    np.testing.assert_array_equal(splits.test.X, [[0, 0, 0, 0, 0, 2]])
    assert load_letor_fold(tmp_path, "Fold2", n_features=8).vali.X.shape == (1, 8)
    with pytest.raises(ValueError, match=r"test\.txt: line 1: n_features was set to 5"):
        load_letor_fold(tmp_path, 2, n_features=5)


def test_fold_directory_letor3_names_and_missing_files(tmp_path):
    fold = tmp_path / "Fold1"
    fold.mkdir()
    for name in ("trainingset", "validationset", "testset"):
        write(fold / f"{name}.txt", "1 qid:1 1:1\n0 qid:1 1:2\n")
    assert load_letor_fold(tmp_path, 1).train.n_queries == 1
    (fold / "testset.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"no test file in .*Fold1 \(looked for test\.txt"):
        load_letor_fold(tmp_path, 1)
    with pytest.raises(FileNotFoundError, match=r"no fold directory .*Fold3"):
        load_letor_fold(tmp_path, 3)


# ---------------------------------------------------------------------------------------
# RankingData
# ---------------------------------------------------------------------------------------


def small_data():
    X = np.arange(14, dtype=np.float64).reshape(7, 2)
    return RankingData(X, [0, 1, 2, 0, 1, 0, 3], qid=[5, 5, 5, 2, 2, 9, 9])


def test_ranking_data_from_group_or_qid():
    data = small_data()
    np.testing.assert_array_equal(data.group, [3, 2, 2])
    np.testing.assert_array_equal(data.offsets, [0, 3, 5, 7])
    assert (data.n_queries, data.n_features, len(data)) == (3, 2, 7)
    X, y, group = data
    assert X is data.X and y is data.y and group is data.group
    from_group = RankingData(data.X, data.y, group=[3, 2, 2])
    np.testing.assert_array_equal(from_group.qid, [0, 0, 0, 1, 1, 2, 2])
    assert RankingData(np.ones((2, 1), dtype=np.int64), [0, 1], group=[2]).X.dtype == np.float64
    assert "n_queries=3" in repr(data)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [({}, ValueError, "pass group= .* or qid="),
     ({"group": [3, 3]}, ValueError, "group sizes sum to 6 but there are 7 rows"),
     ({"group": [3, 2, 2], "qid": [1, 1, 1, 2, 2, 2, 3]}, ValueError, "do not match"),
     ({"qid": [1, 1, 2, 2, 1, 3, 3]}, ValueError, "contiguous"),
     ({"qid": [1.0] * 7}, TypeError, "qid must hold integers"),
     ({"qid": [1, 1]}, ValueError, "qid has shape")],
)
def test_ranking_data_rejects_inconsistent_groups(kwargs, error, message):
    with pytest.raises(error, match=message):
        RankingData(np.zeros((7, 2)), np.zeros(7), **kwargs)


def test_ranking_data_rejects_bad_shapes():
    with pytest.raises(ValueError, match="two-dimensional"):
        RankingData(np.zeros(3), np.zeros(3), group=[3])
    with pytest.raises(ValueError, match="y has shape"):
        RankingData(np.zeros((3, 1)), np.zeros(2), group=[3])


def test_subset_keeps_rows_of_the_chosen_queries_in_the_given_order():
    data = small_data()
    sub = data.subset([2, 0])
    np.testing.assert_array_equal(sub.qid, [9, 9, 5, 5, 5])
    np.testing.assert_array_equal(sub.group, [2, 3])
    np.testing.assert_array_equal(sub.X, data.X[[5, 6, 0, 1, 2]])
    np.testing.assert_array_equal(sub.y, [0, 3, 0, 1, 2])
    masked = data.subset(np.array([False, True, True]))
    np.testing.assert_array_equal(masked.qid, [2, 2, 9, 9])
    assert data.subset([]).n_queries == 0
    with pytest.raises(ValueError, match="only once"):
        data.subset([1, 1])
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        data.subset([3])
    with pytest.raises(ValueError, match="boolean query mask"):
        data.subset([True, False])


# ---------------------------------------------------------------------------------------
# make_ranking
# ---------------------------------------------------------------------------------------


def test_make_ranking_is_deterministic_for_a_seed():
    a = make_ranking(60, 20, 12, seed=3)
    b = make_ranking(60, 20, 12, seed=3)
    c = make_ranking(60, 20, 12, seed=4)
    for field in ("X", "y", "group", "qid"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.group, c.group)


def test_make_ranking_dtype_changes_only_the_container():
    a = make_ranking(40, 15, 9, dtype=np.float32)
    b = make_ranking(40, 15, 9)
    assert (a.X.dtype, b.X.dtype) == (np.float32, np.float64)
    np.testing.assert_array_equal(a.X.astype(np.float64), b.X)
    np.testing.assert_array_equal(a.y, b.y)


def test_make_ranking_shapes_and_labels():
    data = make_ranking(2000, 30, 25, n_levels=4, seed=1)
    assert data.n_queries == 2000 and data.n_features == 25
    assert len(data) == data.group.sum() == data.y.size
    np.testing.assert_array_equal(data.qid, np.repeat(np.arange(2000), data.group))
    assert data.y.dtype == np.float64
    np.testing.assert_array_equal(np.unique(data.y), [0, 1, 2, 3])
    # most documents irrelevant, few highly relevant: the default geometric 0.45 decay
    freq = np.bincount(data.y.astype(np.int64)) / len(data)
    target = 0.45 ** np.arange(4) / (0.45 ** np.arange(4)).sum()
    np.testing.assert_allclose(freq, target, atol=2e-3)
    assert np.isfinite(data.X).all()


def test_make_ranking_label_probs():
    data = make_ranking(500, 20, 5, n_levels=3, label_probs=[1, 1, 2])
    freq = np.bincount(data.y.astype(np.int64)) / len(data)
    np.testing.assert_allclose(freq, [0.25, 0.25, 0.5], atol=2e-3)


def test_make_ranking_list_lengths_vary():
    data = make_ranking(3000, 50, 3)
    assert data.group.min() >= 1
    assert abs(data.group.mean() - 50) < 2
    assert 0.4 < data.group.std() / data.group.mean() < 0.6
    ranged = make_ranking(3000, (2, 9), 3).group
    assert (ranged.min(), ranged.max()) == (2, 9)
    assert np.unique(ranged).size == 8


def test_make_ranking_feature_roles():
    data = make_ranking(400, 50, 20, n_informative=4, n_redundant=6, noise=0.3, seed=2)
    corr = np.array([abs(np.corrcoef(data.X[:, j], data.y)[0, 1]) for j in range(20)])
    # informative and redundant columns carry the signal; the last ten are pure noise
    assert corr[:10].max() > 0.2
    assert corr[10:].max() < 0.05
    mixing = np.abs(np.corrcoef(data.X[:, :10], rowvar=False)[:4, 4:10])
    assert mixing.max() > 0.3


def test_make_ranking_query_effect_varies_relevant_counts():
    def share_without_relevant(effect):
        data = make_ranking(2000, 10, 4, query_effect=effect, seed=5)
        return np.mean(np.add.reduceat(data.y, data.offsets[:-1]) == 0)

    assert share_without_relevant(3.0) > share_without_relevant(0.0) + 0.1


@pytest.mark.parametrize(
    "kwargs, message",
    [({"n_queries": 0}, "n_queries"),
     ({"n_features": 0}, "n_features"),
     ({"n_levels": 1}, "n_levels"),
     ({"n_features": 5, "n_informative": 6}, "n_informative"),
     ({"n_features": 5, "n_informative": 3, "n_redundant": 3}, "n_redundant"),
     ({"docs_per_query": 0}, "docs_per_query"),
     ({"docs_per_query": (5, 2)}, "low <= high"),
     ({"noise": -1.0}, "noise"),
     ({"query_effect": float("nan")}, "query_effect"),
     ({"n_levels": 3, "label_probs": [1, 2]}, "label_probs"),
     ({"label_probs": [0, 0, 0, 0, 0]}, "label_probs"),
     ({"dtype": np.int32}, "dtype")],
)
def test_make_ranking_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_ranking(**{"n_queries": 10, "docs_per_query": 5, "n_features": 8, **kwargs})


def ndcg10(y, scores, offsets):
    """Mean NDCG@10 (2^l - 1 gains, log2 discounts, 1 for a query without relevant docs)."""
    values = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        labels = y[a:b]
        top = labels[np.argsort(-scores[a:b], kind="stable")][:10]
        best = np.sort(labels)[::-1][:10]
        discount = 1 / np.log2(np.arange(2, 2 + top.size))
        ideal = ((2**best - 1) * discount).sum()
        values.append(((2**top - 1) * discount).sum() / ideal if ideal > 0 else 1.0)
    return float(np.mean(values))


def test_make_ranking_is_learnable_but_not_trivial():
    lgb = pytest.importorskip("lightgbm")

    def held_out_ndcg(noise):
        data = make_ranking(300, 30, 20, noise=noise, seed=7)
        train, test = split_queries(data, (0.7, 0.3), seed=0)
        params = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "verbose": -1,
                  "num_threads": 1, "min_data_in_leaf": 20, "deterministic": True}
        train_set = lgb.Dataset(train.X, train.y, group=train.group)
        test_set = lgb.Dataset(test.X, test.y, group=test.group, reference=train_set)
        record = {}
        booster = lgb.train(params, train_set, 60, valid_sets=[test_set], valid_names=["test"],
                            callbacks=[lgb.record_evaluation(record)])
        value = ndcg10(test.y, booster.predict(test.X), test.offsets)
        # the helper that scores random rankings below agrees with LightGBM's own metric
        assert value == pytest.approx(record["test"]["ndcg@10"][-1], abs=1e-9)
        return value, test

    clean, _ = held_out_ndcg(0.0)
    noisy, test = held_out_ndcg(0.75)
    rng = np.random.default_rng(0)
    random = np.mean([ndcg10(test.y, rng.standard_normal(len(test)), test.offsets)
                      for _ in range(10)])
    # label noise caps what any model reaches; without it the ground truth is learnable
    assert random + 0.25 < noisy < 0.9
    assert clean > noisy + 0.05


# ---------------------------------------------------------------------------------------
# Splits by query
# ---------------------------------------------------------------------------------------


def rows_by_qid(data):
    return {int(q): (data.X[a:b], data.y[a:b])
            for q, a, b in zip(data.qid[data.offsets[:-1]], data.offsets[:-1], data.offsets[1:])}


def test_split_queries_partitions_whole_queries():
    data = make_ranking(101, 8, 4, seed=9)
    original = rows_by_qid(data)
    parts = split_queries(data, (0.6, 0.2, 0.2), seed=1)
    assert [p.n_queries for p in parts] == [61, 20, 20]
    seen = np.concatenate([np.unique(p.qid) for p in parts])
    np.testing.assert_array_equal(np.sort(seen), np.arange(101))
    for part in parts:
        assert np.all(np.diff(part.qid[part.offsets[:-1]]) > 0)  # original order kept
        for q, (X, y) in rows_by_qid(part).items():
            np.testing.assert_array_equal(X, original[q][0])
            np.testing.assert_array_equal(y, original[q][1])
    again = split_queries(data, (0.6, 0.2, 0.2), seed=1)
    np.testing.assert_array_equal(again[2].qid, parts[2].qid)
    first, second = split_queries(data, (1, 1), shuffle=False)
    np.testing.assert_array_equal(np.unique(first.qid), np.arange(50))
    np.testing.assert_array_equal(np.unique(second.qid), np.arange(50, 101))


@pytest.mark.parametrize("fractions, message", [((0.5, 0.0, 0.5), "positive"),
                                                ((0.98, 0.01, 0.01), "would be empty"),
                                                ((), "non-empty")])
def test_split_queries_rejects_bad_fractions(fractions, message):
    with pytest.raises(ValueError, match=message):
        split_queries(make_ranking(30, 4, 2), fractions)


def test_kfold_queries_covers_each_query_once():
    data = make_ranking(23, 5, 3, seed=4)
    folds = list(kfold_queries(data, 5, seed=2))
    assert len(folds) == 5
    tested = np.concatenate([np.unique(test.qid) for _, test in folds])
    np.testing.assert_array_equal(np.sort(tested), np.arange(23))
    assert sorted(test.n_queries for _, test in folds) == [4, 4, 5, 5, 5]
    for train, test in folds:
        assert train.n_queries + test.n_queries == 23
        assert not np.intersect1d(train.qid, test.qid).size
        assert len(train) + len(test) == len(data)
    with pytest.raises(ValueError, match="n_splits"):
        kfold_queries(data, 24)
    with pytest.raises(ValueError, match="n_splits"):
        kfold_queries(data, 1)


def test_the_data_folder_beside_a_source_checkout_is_found(monkeypatch):
    # the package sits two folders below the checkout's top (src/gbrank), and the data beside
    # the checkout: a wrong count of parents skips every real-data test without a word
    from pathlib import Path

    from gbrank._data_dir import data_dir

    monkeypatch.delenv("GBRANK_DATA_DIR", raising=False)
    beside = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not beside.is_dir():
        pytest.skip("no data folder beside this checkout")
    assert data_dir() == beside
