"""Bad and extreme files and datasets: LETOR reading, RankingData, query splits
(docs/reliability.md). An error naming the file, line, row or query, or a documented result.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import gbrank
from gbrank.datasets import RankingData, kfold_queries, load_letor, make_ranking, split_queries

LINES = ["0 qid:1 1:0.1 2:0.2 3:0.3", "1 qid:1 1:0.4 2:0.5 3:0.6", "2 qid:2 1:0.7 2:0.8 3:0.9"]


def write(path, text, compress=False):
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(
    "last, message",
    [("1 qid:2 1:0.1 2:", r"line 4: could not convert string to float.*'1 qid:2 1:0\.1 2:'"),
     ("1 qid: 1:0.1", r"line 4: invalid literal for int\(\).*'1 qid: 1:0\.1'"),
     ("1 qid:2 1:0.1 1:0.2", r"line 4: .*'1 qid:2 1:0\.1 1:0\.2'")],
    ids=["value-cut", "qid-cut", "repeated-index"],
)
def test_letor_line_cut_short_is_named(tmp_path, compress, last, message):
    path = write(tmp_path / ("cut.txt.gz" if compress else "cut.txt"), "\n".join(LINES + [last]) + "\n", compress)
    with pytest.raises(ValueError, match=r"cut\.txt(\.gz)?: " + message):
        load_letor(path)


def test_letor_file_cut_mid_line_or_mid_stream(tmp_path):
    text = "\n".join(LINES) + "\n"
    with pytest.raises(ValueError, match=r"plain\.txt: line 3 does not end with a newline, so the file looks truncated"):
        load_letor(write(tmp_path / "plain.txt", text[:-5]))
    blob = gzip.compress(text.encode() * 50)
    with pytest.raises(ValueError, match=r"gz\.txt\.gz: cannot decompress.*truncated or corrupt gzip"):
        load_letor(write(tmp_path / "gz.txt.gz", blob[:20]))


def test_letor_binary_garbage_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"garbage\.bin: "):
        load_letor(write(tmp_path / "garbage.bin", bytes(range(256)) * 4))
    with pytest.raises(ValueError, match=r"garbage\.bin: line \d+: "):
        load_letor(write(tmp_path / "garbage.bin", bytes(range(256)) * 4 + b"\n"))


def test_letor_non_finite_features_are_kept_as_read(tmp_path):
    data = load_letor(write(tmp_path / "x.txt", "\n".join(LINES + ["1 qid:2 1:nan 2:inf 3:-inf"]) + "\n"))
    assert np.isnan(data.X[3, 0]) and data.X[3, 1] == np.inf and data.X[3, 2] == -np.inf


def test_letor_labels_are_kept_and_checked_by_the_loss(tmp_path):
    # LETOR's semi-supervised sets mark unjudged documents -1: read as written, refused by the loss
    data = load_letor(write(tmp_path / "semi.txt", "\n".join(LINES + ["-1 qid:2 1:1", "1e40 qid:2 1:1"]) + "\n"))
    np.testing.assert_array_equal(data.y, [0, 1, 2, -1, 1e40])
    with pytest.raises(ValueError, match=r"y_true\[3\] = -1 at row 3 \(query 1\)"):
        gbrank.listmle().grad_hess(data.y, np.zeros(len(data)), data.group)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_ranking_data_refuses_non_finite_labels(bad):
    with pytest.raises(ValueError, match=r"row 4 \(query 1\)"):
        RankingData(np.zeros((6, 2)), [0, 1, 2, 0, bad, 1], group=[3, 3])


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(y=[0, 1, 2], group=[2, 2]), r"group sizes sum to 4 but there are 3 rows"),
     (dict(y=[0, 1, 2], group=[3, 0]), r"group\[1\] = 0 \(query 1 has no documents\)"),
     (dict(y=[0, 1, 2], qid=[1, 2, 1]), r"contiguous: qid 1 starts blocks at rows 0 and 2"),
     (dict(y=[0, 1], group=[3]), r"y has shape \(2,\) but X has 3 rows"),
     (dict(y=[0, 1, 2]), r"pass group= \(query sizes\) or qid=")],
    ids=["group-sum", "zero-group", "non-contiguous-qid", "label-length", "no-groups"],
)
def test_ranking_data_bad_groups_and_lengths(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RankingData(np.zeros((3, 2)), **kwargs)


def test_empty_ranking_data_is_a_dataset_of_no_queries():
    data = RankingData(np.zeros((0, 2)), np.zeros(0), group=np.zeros(0, dtype=int))
    assert data.n_queries == 0 and len(data) == 0
    with pytest.raises(ValueError, match=r"n_queries must be an integer >= 1, got 0"):
        make_ranking(n_queries=0)


def test_query_splits_of_too_few_queries():
    data = make_ranking(n_queries=3, docs_per_query=(1, 1), n_features=2)
    with pytest.raises(ValueError, match=r"3 queries cannot be split into parts of .*: part 2 would be empty"):
        split_queries(data, (1, 1, 1, 1))
    with pytest.raises(ValueError, match=r"n_splits must lie in \[2, n_queries=3\], got 5"):
        list(kfold_queries(data, 5))
    # single-document queries are valid data: objectives give them zero gradient
    grad, _ = gbrank.listmle().grad_hess(data.y, np.zeros(3), data.group)
    np.testing.assert_array_equal(grad, 0.0)


# --------------------------------------------------------------------------- the page
def test_the_reliability_page_lists_every_bad_input_test():
    import re
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    page = (tests.parent / "docs" / "reliability.md").read_text()
    rows = [line for line in page.splitlines() if re.match(r"^\| \d+ \|", line)]
    numbers = [int(line.split("|")[1]) for line in rows]
    assert numbers == list(range(1, len(rows) + 1)) and len(rows) >= 25
    named = set(re.findall(r"`(test_\w+)`", "\n".join(rows)))
    here = set()
    for path in sorted(tests.glob("test_bad_input_*.py")):
        here |= set(re.findall(r"^def (test_\w+)", path.read_text(), flags=re.M))
    assert named <= here, f"the page names tests that do not exist: {sorted(named - here)}"
    assert here - named == {"test_the_reliability_page_lists_every_bad_input_test"}, sorted(here - named)
