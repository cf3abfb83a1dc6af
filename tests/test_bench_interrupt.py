"""An interrupted benchmark keeps what finished: runs are written as they finish, Ctrl-C
(a real SIGINT) writes a partial report and exits 130, and ``--resume`` completes it with the
numbers an uninterrupted benchmark gives."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

from gbrank.bench import BenchConfig, TreeParams, run_benchmark  # noqa: E402
from gbrank.bench.__main__ import main  # noqa: E402
from gbrank.bench.journal import JOURNAL, RUN_COLUMNS, read_journal  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = "synthetic:queries=60,docs=10,features=5,seed=1"
METHODS = "lgb:lambdarank,lgb:listmle"
SEEDS = tuple(range(10))
FOLDS = 3
PLANNED = FOLDS * len(SEEDS) * 2
OPTIONS = ["--data", DATA, "--methods", METHODS, "--folds", str(FOLDS), "--seeds", ",".join(map(str, SEEDS)),
           "--rounds", "20", "--early-stopping", "0", "--min-data-in-leaf", "3", "--progress", "lines"]
KEY = ["dataset", "fold", "seed", "method"]
TIME_LIMIT = 600


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gbrank.bench", *OPTIONS, *args]


# A user's Ctrl-C reaches a benchmark started from a terminal, where SIGINT has its default
# action. A test runner started in the background inherits SIGINT ignored, and Python then
# installs no KeyboardInterrupt handler: the benchmark sets it itself here, as a terminal would.
_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                "runpy.run_module('gbrank.bench', run_name='__main__', alter_sys=True)")


def _environ() -> dict:
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), environ.get("PYTHONPATH")]))
    return environ


def _unbuffered_lines(fd: int):
    """The lines of a pipe, read a byte at a time: nothing past the line in hand leaves it."""
    line = b""
    while byte := os.read(fd, 1):
        line += byte
        if byte == b"\n":
            yield line.decode()
            line = b""
    if line:
        yield line.decode()


def _interrupt_after(runs: int, out: Path) -> tuple[int, str, str]:
    """Start the benchmark, send SIGINT once ``runs`` progress lines are out, and wait."""
    process = subprocess.Popen([sys.executable, "-c", _WITH_CTRL_C, *OPTIONS, "--out", str(out)], cwd=ROOT,
                               env=_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # On a loaded machine this reader may lag so far behind that the benchmark finishes before
    # the signal comes. A one-page pipe (about 40 progress lines, of PLANNED = 60), read a byte
    # at a time (a buffered read would empty it), makes the benchmark wait for the reader, so
    # the signal always finds it running.
    if hasattr(fcntl, "F_SETPIPE_SZ"):
        fcntl.fcntl(process.stderr.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    seen, err = 0, []
    try:
        for line in _unbuffered_lines(process.stderr.fileno()):
            err.append(line)
            seen += line.startswith("gbrank.bench [")
            if seen == runs:
                process.send_signal(signal.SIGINT)
                break
        stdout, rest = process.communicate(timeout=TIME_LIMIT)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stdout, "".join(err) + rest


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "report"
    code, stdout, stderr = _interrupt_after(3, out)
    snapshot = {"code": code, "stdout": stdout, "stderr": stderr, "report": (out / "report.md").read_text(),
                "runs": pd.read_csv(out / "runs.csv"), "results": json.loads((out / "results.json").read_text())}
    return out, snapshot


def test_sigint_writes_a_partial_report_of_the_finished_runs(interrupted):
    out, seen = interrupted
    assert seen["code"] == 130, seen["stderr"][-3000:]
    assert "KeyboardInterrupt" not in seen["stderr"] and "Traceback" not in seen["stderr"]
    finished = len(seen["runs"])
    assert 3 <= finished < PLANNED, "the benchmark must be interrupted while it runs"
    assert (seen["runs"]["status"] == "ok").all()
    assert list(seen["runs"].columns) == RUN_COLUMNS
    report = seen["report"]
    assert report.startswith("# gbrank benchmark report (partial)")
    assert f"interrupted after {finished} of {PLANNED} runs" in report and f"`--resume {out}`" in report
    assert seen["results"]["partial"] is True and len(seen["results"]["runs"]) == finished
    # the standard output ends with the verdict, the partial note and the report's path
    lines = seen["stdout"].strip().splitlines()
    assert lines[0].startswith("synthetic:") and lines[-1] == f"Report: {(out / 'report.md').resolve()}"
    assert "interrupted after" in lines[-2] and "|" not in seen["stdout"]


def test_resume_trains_the_rest_and_gives_the_uninterrupted_numbers(interrupted):
    out, seen = interrupted
    finished = len(seen["runs"])
    result = subprocess.run(_command("--resume", str(out)), cwd=ROOT, env=_environ(), capture_output=True,
                            text=True, timeout=TIME_LIMIT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"resuming: {finished} of {PLANNED} runs are in {out} already" in result.stderr
    trained = [line for line in result.stderr.splitlines() if line.startswith("gbrank.bench [")]
    assert len(trained) == PLANNED - finished and trained[-1].startswith(f"gbrank.bench [{PLANNED - finished}/")
    report = (out / "report.md").read_text()
    assert report.startswith("# gbrank benchmark report\n") and "Partial" not in report
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == PLANNED and not runs.duplicated(KEY).any()

    whole = run_benchmark(DATA, METHODS, folds=FOLDS, progress="off", config=BenchConfig(
        rounds=20, early_stopping=0, seeds=SEEDS, params=TreeParams(min_data_in_leaf=3)))
    assert [tuple(r[k] for k in KEY) for r in whole.runs] == list(runs[KEY].itertuples(index=False, name=None))
    for name, got in (("per_query", pd.read_csv(out / "per_query.csv")),
                      ("predictions", pd.read_csv(out / "predictions.csv.gz"))):
        want = getattr(whole, name)
        assert list(got.columns) == list(want.columns)
        numeric = [c for c in want.columns if c not in ("dataset", "fold", "method")]
        np.testing.assert_array_equal(got[["dataset", "fold", "method"]].to_numpy(), want[["dataset", "fold", "method"]].to_numpy())
        np.testing.assert_allclose(got[numeric].to_numpy(float), want[numeric].to_numpy(float), rtol=0, atol=1e-12)


def test_resume_refuses_other_settings_and_other_directories(tmp_path, capsys):
    out = tmp_path / "r"
    options = ["--data", "synthetic:queries=24,docs=5,features=3", "--methods", "lgb:listmle", "--folds", "3",
               "--min-data-in-leaf", "1", "--rounds", "2", "--progress", "off"]
    assert main([*options, "--out", str(out)]) == 0
    with pytest.raises(SystemExit) as info:
        main([*options[:-4], "--rounds", "3", "--progress", "off", "--resume", str(out)])
    assert info.value.code == 2
    assert "its runs were made with other settings (rounds: 2 there, 3 now)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*options, "--resume", str(tmp_path)])
    assert f"{tmp_path} holds no {JOURNAL}" in capsys.readouterr().err
    assert main([*options, "--resume", str(out)]) == 0  # nothing left to train
    assert "resuming: 3 of 3 runs" in capsys.readouterr().err


def test_a_line_cut_by_the_interruption_is_trained_again(tmp_path):
    out = tmp_path / "r"
    config = BenchConfig(rounds=2, seeds=(0,), params=TreeParams(min_data_in_leaf=1))
    first = run_benchmark("synthetic:queries=24,docs=5,features=3", "lgb:listmle", folds=3, config=config,
                          progress="off", journal=out)
    lines = (out / JOURNAL).read_text().splitlines()
    (out / JOURNAL).write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    assert len(read_journal(out)[1]) == 2
    again = run_benchmark("synthetic:queries=24,docs=5,features=3", "lgb:listmle", folds=3, config=config,
                          progress="off", journal=out, resume=True)
    assert [r["ndcg@10"] for r in again.runs] == [r["ndcg@10"] for r in first.runs]
    pd.testing.assert_frame_equal(again.predictions, first.predictions)
