"""A fuzzed corpus of tables and journals through the command line (#31): the cases of the
issue plus random truncations, byte flips and column shuffles. Every input gives a report or
a one-line error; none raises a traceback or executes code.

The corpus is drawn from a fixed seed and kept tiny (9 queries of 4 documents, one round,
three folds), and the plots are not drawn, so that the whole file runs in seconds.
"""

from __future__ import annotations

import gzip
import os
import pickle
import shutil

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

from gbrank.bench import __main__ as cli  # noqa: E402
from gbrank.bench import report  # noqa: E402
from gbrank.bench.journal import JOURNAL, RUN_LOG  # noqa: E402

SEED = 31
OPTIONS = ["--methods", "lgb:lambdarank,lgb:listmle", "--folds", "3", "--rounds", "1", "--early-stopping", "0",
           "--min-data-in-leaf", "1", "--progress", "off"]


class _Payload:
    """A pickle that leaves a file behind when it is read."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"echo ran > {self.marker}",))


def _base() -> pd.DataFrame:
    rng = np.random.default_rng(SEED)
    n = 9 * 4
    return pd.DataFrame({"qid": np.repeat(np.arange(9), 4), "label": rng.integers(0, 3, n),
                         "f1": rng.random(n).round(3), "f2": rng.random(n).round(3)})


def _flip(data: bytes, rng, flips: int) -> bytes:
    out = bytearray(data)
    for _ in range(flips):
        out[int(rng.integers(len(out)))] = int(rng.integers(256))
    return bytes(out)


def _tables(marker) -> dict[str, bytes]:
    """File name -> content: the issue's cases, then random variants of a good table."""
    rng = np.random.default_rng(SEED)
    frame = _base()
    csv = frame.to_csv(index=False).encode()
    corpus = {"good.csv": csv, "good.csv.gz": gzip.compress(csv), "empty.csv": b"", "header.csv": b"qid,label,f1\n"}
    corpus["two_labels.csv"] = csv.replace(b"f2", b"label", 1)
    corpus["two_qids.csv"] = csv.replace(b"f1", b"qid", 1)
    for name, change in (("huge.csv", 1e9), ("fractional.csv", 0.5), ("negative.csv", -1.0), ("inf.csv", np.inf)):
        changed = frame.astype({"label": float})
        changed.loc[5, "label"] = change
        corpus[name] = changed.to_csv(index=False).encode()
    corpus["no_qid.csv"] = frame.assign(qid=frame["qid"].where(frame.index != 3)).to_csv(index=False).encode()
    corpus["doc_id.csv"] = frame.assign(doc_id=[f"d{i}" for i in range(len(frame))]).to_csv(index=False).encode()
    corpus["evil.pkl"] = pickle.dumps(_Payload(marker))
    corpus["evil.pkl.gz"] = gzip.compress(pickle.dumps(_Payload(marker)))
    corpus["evil_in.csv"] = pickle.dumps(_Payload(marker))
    corpus["junk.parquet"] = _flip(b"PAR1" + bytes(64) + b"PAR1", rng, 4)
    corpus["cut.csv.gz"] = corpus["good.csv.gz"][: len(corpus["good.csv.gz"]) // 2]
    for i, at in enumerate(sorted(rng.integers(1, len(csv), 4))):
        corpus[f"cut{i}.csv"] = csv[:at]
    for i in range(8):
        corpus[f"flip{i}.csv"] = _flip(csv, rng, 1 + i % 3)
    for i in range(2):
        corpus[f"flip{i}.csv.gz"] = _flip(corpus["good.csv.gz"], rng, 1)
    for i in range(3):
        columns = list(rng.permutation(frame.columns))
        corpus[f"shuffled{i}.csv"] = frame[columns].to_csv(index=False).encode()
    return corpus


@pytest.fixture
def no_plots(monkeypatch):
    for name in ("plot_differences", "plot_ndcg_at_k", "plot_validation_curves"):
        monkeypatch.setattr(report, name, lambda *args, **kwargs: None)


def _outcome(argv, capsys) -> tuple[int, str]:
    """The exit status and stderr of one command line, which must end in a report (0 or 1)
    or a one-line error (2), never in a traceback."""
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err[-2000:]
    if status == 2:
        assert err.strip().splitlines()[-1].startswith("gbrank: error: "), err[-2000:]
    else:
        assert status in (0, 1), (status, err[-2000:])
    return status, err


def test_fuzzed_tables_give_a_report_or_a_one_line_error(tmp_path, capsys, no_plots):
    marker = tmp_path / "code-ran"
    outcomes = {}
    for name, content in _tables(marker).items():
        path = tmp_path / name
        path.write_bytes(content)
        status, err = _outcome(["--data", f"table:{path}", *OPTIONS, "--out", str(tmp_path / f"out-{name}")], capsys)
        if status == 2:
            assert name in err.strip().splitlines()[-1], err  # the error names the file
        else:
            assert (tmp_path / f"out-{name}" / "report.md").is_file()
        outcomes[name] = status
    assert not marker.exists()
    # the cases end as they must: refused, or a report
    for refused in ("empty.csv", "two_labels.csv", "two_qids.csv", "negative.csv", "inf.csv", "no_qid.csv",
                    "doc_id.csv", "evil.pkl", "evil.pkl.gz", "cut.csv.gz", "junk.parquet"):
        assert outcomes[refused] == 2, refused
    assert outcomes["good.csv"] == outcomes["good.csv.gz"] == 0
    # lgb:lambdarank is refused on them, lgb:listmle reported
    assert outcomes["huge.csv"] == outcomes["fractional.csv"] == 1
    assert all(outcomes[f"shuffled{i}.csv"] == 0 for i in range(3))


def _journals(good: bytes) -> dict[str, bytes]:
    rng = np.random.default_rng(SEED + 1)
    lines = good.splitlines(keepends=True)
    corpus = {"empty": b"", "not utf-8": b"\xff\xfe" + good, "braces": lines[0] + b"{}\n" + b"".join(lines[1:]),
              "settings moved": b"".join(lines[1:2] + lines[:1] + lines[2:]), "doubled": good + lines[-1],
              "no settings": b"".join(lines[1:]), "nulls": good.replace(b'"status": "ok"', b'"status": null', 1)}
    for i, at in enumerate(sorted(rng.integers(1, len(good), 6))):
        corpus[f"cut{i}"] = good[:at]
    for i in range(10):
        corpus[f"flip{i}"] = _flip(good, rng, 1 + i % 3)
    return corpus


def test_fuzzed_journals_give_a_report_or_a_one_line_error(tmp_path, capsys, no_plots):
    table = tmp_path / "t.csv"
    table.write_bytes(_base().to_csv(index=False).encode())
    options = ["--data", f"table:{table}", *OPTIONS]
    first = tmp_path / "first"
    assert cli.main([*options, "--out", str(first)]) == 0
    capsys.readouterr()
    good = (first / JOURNAL).read_bytes()
    outcomes = {}
    for i, (name, content) in enumerate(_journals(good).items()):
        out = tmp_path / f"resume{i}"
        out.mkdir()
        (out / JOURNAL).write_bytes(content)
        shutil.copy(first / RUN_LOG, out / RUN_LOG)
        status, err = _outcome([*options, "--resume", str(out)], capsys)
        if status != 2:
            assert (out / "report.md").is_file()
            # whatever the journal held, it is a journal again: every line reads
            again, err = _outcome([*options, "--resume", str(out)], capsys)
            assert again in (0, 1) and "resuming: 6 of 6 runs" in err
        outcomes[name] = status
    for refused in ("empty", "not utf-8", "braces", "settings moved", "no settings", "nulls"):
        assert outcomes[refused] == 2, refused
    assert outcomes["doubled"] == 0
    assert sum(outcomes[f"cut{i}"] == 0 for i in range(6)) >= 4  # a cut after the settings line resumes
