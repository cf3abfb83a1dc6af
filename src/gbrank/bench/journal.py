"""The runs of a benchmark written as they finish, so that an interrupted benchmark keeps them
and a later one resumes from them.

Two files in the report directory, appended and flushed (closed) after every run:

``runs.csv``
    One row per finished run (:data:`RUN_COLUMNS`), for a person or a spreadsheet to follow.
``runs.jsonl``
    A first line with the settings, then one line per finished run with everything the report
    needs: the run's record (with its validation curve), its per-query figures and its test
    scores. Floats are written with ``repr``, so a resumed report holds the same numbers as
    an uninterrupted one.

The settings line holds the benchmark's settings and, under each data set's name, its
description and fingerprint (:meth:`gbrank.bench.data.BenchData.fingerprint`); a resume that
adds a data set writes it there too, so that every later resume checks it.

A run interrupted while its line was being written leaves an incomplete last line, which
is ignored: that run is trained again. Before the journal is written to again the cut line
is removed, so that the next line starts on a line of its own. Any other line that is not a
run's record is an error that names the line and what to do.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .evaluate import CALIBRATION_FIGURES, label_figure
from .stats import FIGURES, RANKING_FIGURES, TIMES

__all__ = ["JOURNAL", "RUN_COLUMNS", "RUN_LOG", "Journal", "Record", "read_journal", "resumable"]

JOURNAL = "runs.jsonl"
RUN_LOG = "runs.csv"
RUN_KEY = ("dataset", "fold", "seed", "method")
#: Columns of ``runs.csv``: the run's key, outcome, times and mean test figures.
RUN_COLUMNS = [*RUN_KEY, "status", "error", *TIMES, "n_test_queries", *FIGURES]


@dataclass
class Record:
    """One finished run: its record for ``Results.runs`` and, when it succeeded, its rows of
    ``Results.per_query`` and ``Results.predictions``, and its search for ``Results.tuning``
    when it was tuned."""

    run: dict
    per_query: pd.DataFrame | None = None
    predictions: pd.DataFrame | None = None
    tuning: dict | None = None

    @property
    def key(self) -> tuple:
        return tuple(self.run[k] for k in RUN_KEY)


def _plain(value):
    """numpy scalars as Python numbers for json."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to the journal")


def _columns(frame: pd.DataFrame | None) -> dict | None:
    if frame is None:
        return None
    return {c: frame[c].tolist() for c in frame.columns if c not in RUN_KEY}


def _frame(columns: dict | None, key: dict) -> pd.DataFrame | None:
    if columns is None:
        return None
    body = pd.DataFrame(columns)
    return pd.DataFrame({**{k: [v] * len(body) for k, v in key.items()}, **{c: body[c] for c in body.columns}})


_FIX = ("remove that line to train its run again, or run the benchmark anew into another directory "
        "(without --resume)")


def _is_number(value, *, integer: bool = False, optional: bool = False, low: float | None = None,
               high: float | None = None) -> bool:
    if value is None:
        return optional
    if isinstance(value, bool):
        return False
    if integer:
        number = isinstance(value, int) and abs(value) < 2**63
    else:
        # a journal holds float64 figures and int64 counts: anything outside is not one it wrote
        number = (isinstance(value, int) and abs(value) < 2**63) or (isinstance(value, float) and math.isfinite(value))
    return number and (low is None or value >= low) and (high is None or value <= high)


def _numbers(values: list) -> bool:
    """Whether ``values`` are all finite numbers (a column of a run's figures or scores)."""
    try:
        array = np.asarray(values)
    except (ValueError, OverflowError):  # nested lists of unequal lengths
        return False
    return array.ndim == 1 and (array.dtype.kind in "iu" or (array.dtype.kind == "f" and bool(np.isfinite(array).all())))


def _columns_problem(columns, required: tuple[str, ...]) -> str | None:
    if not isinstance(columns, dict):
        return "its columns are not an object of lists"
    missing = [c for c in required if c not in columns]
    if missing:
        return f"it has no column {missing[0]!r}"
    if not all(isinstance(v, list) for v in columns.values()):
        return "a column is not a list"
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        return "its columns differ in length"
    if lengths == {0}:
        return "its columns are empty"
    return None


_PER_QUERY = ("query", "qid", "n_docs", *RANKING_FIGURES)
_PREDICTIONS = ("query", "qid", "label", "score")


def _run_problem(document) -> str | None:
    """What makes ``document`` other than a run's record, or None."""
    if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
        return "it has no run record"
    run = document["run"]
    kinds = {"dataset": str, "fold": str, "method": str}
    for key in RUN_KEY:
        if key not in run:
            return f"its run has no {key!r}"
        if key == "seed" and not _is_number(run[key], integer=True):
            return "its run's seed is not an integer"
        if key in kinds and not isinstance(run[key], kinds[key]):
            return f"its run's {key} is not a string"
    if run.get("status") == "failed":
        return None if isinstance(run.get("error"), str) else "its failed run has no error"
    if run.get("status") != "ok":
        return f"its run's status is {run.get('status')!r}, neither 'ok' nor 'failed'"
    # every figure within the range the harness can write: a ranking figure and the ECE in
    # [0, 1], the log loss and every time or count at least 0
    for figure in (*RANKING_FIGURES, *(k for k in run if isinstance(k, str) and k.startswith(label_figure("")))):
        if not _is_number(run.get(figure), low=0.0, high=1.0):
            return f"its run's {figure} is not a number in [0, 1]"
    for figure in CALIBRATION_FIGURES:
        if not _is_number(run.get(figure), optional=True, low=0.0, high=1.0 if figure == "ece" else None):
            return f"its run's {figure} is not a number of its range"
    for time in TIMES:
        if not _is_number(run.get(time), integer=time in ("n_iterations", "best_iteration"), optional=True, low=0.0):
            return f"its run's {time} is not a number >= 0"
    if not _is_number(run.get("n_test_queries"), integer=True, low=1.0):
        return "its run's n_test_queries is not a count of queries"
    curve = run.get("valid_curve")
    if curve is not None and not (isinstance(curve, list) and all(_is_number(v) for v in curve)):
        return "its run's valid_curve is not a list of numbers"
    for name, required in (("per_query", _PER_QUERY), ("predictions", _PREDICTIONS)):
        problem = _columns_problem(document.get(name), required)
        if problem is not None:
            return f"its {name}: {problem}"
        if not all(_numbers(document[name][c]) for c in required if c != "qid"):
            return f"its {name}: a value is not a number"
    if len(document["per_query"]["qid"]) != run["n_test_queries"]:
        return f"its per_query holds {len(document['per_query']['qid'])} queries, its run {run['n_test_queries']}"
    return _tuning_problem(document.get("tuning"), run)


def _tuning_problem(tuning, run: dict) -> str | None:
    """What makes a run's ``tuning`` other than the search the harness records, or None."""
    if tuning is None:
        return None
    if not isinstance(tuning, dict) or any(tuning.get(k) != run[k] for k in RUN_KEY):
        return "its tuning is not the search of its run"
    trials = tuning.get("trials")
    if not isinstance(tuning.get("params"), dict) or not isinstance(trials, list) or not trials:
        return "its tuning has no params or trials"
    for trial in trials:
        if not (isinstance(trial, dict) and isinstance(trial.get("state"), str)
                and isinstance(trial.get("params"), dict) and _is_number(trial.get("value"), optional=True)
                and _is_number(trial.get("trial"), integer=True)
                and _is_number(trial.get("best_iteration"), integer=True, optional=True)):
            return "its tuning has a trial that is not one"
    if not any(trial["value"] is not None for trial in trials):
        return "its tuning has no complete trial"
    return None


def _settings_problem(document) -> str | None:
    if not isinstance(document, dict) or not isinstance(document.get("settings"), dict):
        return "it is not the settings line"
    settings = document["settings"]
    if not isinstance(settings.get("config"), dict):
        return "its settings have no config"
    if not isinstance(settings.get("datasets", {}), dict):
        return "its settings' datasets are not an object"
    return None


def read_journal(directory: str | os.PathLike) -> tuple[dict, list[Record]]:
    """The settings and the finished runs recorded in ``directory``'s ``runs.jsonl``.

    Raises
    ------
    FileNotFoundError
        When the directory holds no journal.
    ValueError
        When the journal is not one: a line other than the last one is not a run's record
        (the message names the line and what to do), or the first is not the settings.
    """
    settings, records, _ = _read(Path(directory))
    return settings, records


def _read(directory: Path) -> tuple[dict, list[Record], int]:
    """:func:`read_journal`, and the length in bytes of the journal's readable lines (all but
    a last line that an interruption cut)."""
    path = directory / JOURNAL
    if not path.is_file():
        raise FileNotFoundError(f"{directory} holds no {JOURNAL}: it is not the report directory of a benchmark")
    try:
        lines = path.read_bytes().decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: byte {exc.start} is not UTF-8 text, so this is not a journal the harness "
                         "wrote; run the benchmark anew into another directory (without --resume)") from None
    documents, readable = [], 0
    for number, line in enumerate(lines, start=1):
        try:
            document = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, or an integer of too many digits
            if number == len(lines) and number > 1:
                break  # written when the run was interrupted: that run is trained again
            document = None
        problem = _settings_problem(document) if number == 1 else _run_problem(document)
        if problem is not None:
            raise ValueError(f"{path}: line {number} is not a journal line ({problem}); "
                             + ("the first line must hold the settings: run the benchmark anew into another "
                                "directory (without --resume)" if number == 1 else _FIX))
        documents.append(document)
        readable += len(line.encode("utf-8"))
    if not documents:
        raise ValueError(f"{path}: no settings line; run the benchmark anew into another directory (without --resume)")
    records, seen = [], {}
    for number, document in enumerate(documents[1:], start=2):
        run = document["run"]
        key = {k: run[k] for k in RUN_KEY}
        first, kept = seen.setdefault(tuple(key.values()), (number, document))
        if first != number:
            if kept == document:
                continue  # the same line twice says nothing new
            raise ValueError(f"{path}: lines {first} and {number} hold different records of the same run ({key}); "
                             + _FIX)
        records.append(Record(run, _frame(document.get("per_query"), key), _frame(document.get("predictions"), key),
                              document.get("tuning")))
    return documents[0]["settings"], records, readable


def _keep_readable(path: Path, readable: int) -> None:
    """Cut ``path`` to its first ``readable`` bytes (dropping a last line that an interruption
    cut), ending it with a newline, so that the next line written starts a line of its own."""
    with open(path, "rb+") as handle:
        handle.truncate(readable)
        if readable:
            handle.seek(readable - 1)
            if handle.read(1) != b"\n":
                handle.write(b"\n")


def _cut_partial_line(path: Path) -> None:
    """Remove a last line that an interruption cut (one without its newline) from the run log,
    so that the next row written starts a line of its own."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "rb+") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def _replace_first_line(path: Path, line: str) -> None:
    """Write ``line`` as the first line of ``path`` in place of the one there, atomically (a
    new file renamed over the old one)."""
    with open(path, "rb") as handle:
        handle.readline()
        rest = handle.read()
    # a new file of its own (never one a name in the directory points to), renamed over the old
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(line.encode("utf-8") + b"\n" + rest)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def refuse_links(directory: Path) -> None:
    """Refuse a report directory that holds a symbolic link (or anything but files and
    folders): the harness writes its files there, and would write through a link to a file
    outside it."""
    if not directory.is_dir():
        return
    for entry in directory.iterdir():
        if entry.is_symlink() or not (entry.is_file() or entry.is_dir()):
            raise ValueError(f"{directory}: {entry.name} is a link or a special file, and the harness writes its "
                             "report files into this directory: remove it, or write the report into another "
                             "directory")


class Journal:
    """Appends each finished run to ``runs.csv`` and ``runs.jsonl`` of ``directory``.

    ``resume=False`` starts both files anew with ``settings``; ``resume=True`` keeps the runs
    already there (``finished``, by run key) after checking that they were made with the same
    settings and data (:func:`resumable`), removes a line cut by an interruption, and records
    the data sets the resume adds in the settings line.
    """

    def __init__(self, directory: str | os.PathLike, settings: dict, *, resume: bool = False) -> None:
        self.directory = Path(directory)
        self.finished: dict[tuple, Record] = {}
        refuse_links(self.directory)
        if resume:
            recorded, records, readable = _read(self.directory)
            settings = _plain_json(settings)
            _check_same(recorded, settings, self.directory, records)
            self.finished = {r.key: r for r in records}
            _keep_readable(self.directory / JOURNAL, readable)
            merged = {**recorded, "datasets": {**recorded.get("datasets", {}), **settings["datasets"]}}
            if merged != recorded:
                _replace_first_line(self.directory / JOURNAL, json.dumps({"settings": merged}))
            if (self.directory / RUN_LOG).is_file():
                _cut_partial_line(self.directory / RUN_LOG)
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(self.directory / JOURNAL, "w") as handle:
                handle.write(json.dumps({"settings": settings}, default=_plain) + "\n")
            with open(self.directory / RUN_LOG, "w", newline="") as handle:
                csv.writer(handle).writerow(RUN_COLUMNS)

    def append(self, record: Record) -> None:
        """Write ``record`` to both files; closing each flushes it, so an interruption that
        follows keeps the run."""
        line = json.dumps({"run": record.run, "per_query": _columns(record.per_query),
                           "predictions": _columns(record.predictions), "tuning": record.tuning}, default=_plain)
        # one write of the whole line: a crash leaves at most this line cut, never a line
        # merged into the next
        with open(self.directory / JOURNAL, "ab") as handle:
            handle.write((line + "\n").encode("utf-8"))
        row = ["" if record.run.get(c) is None else record.run[c] for c in RUN_COLUMNS]
        with open(self.directory / RUN_LOG, "a", newline="") as handle:
            csv.writer(handle).writerow(row)


def _plain_json(settings: dict) -> dict:
    return json.loads(json.dumps(settings, default=_plain))


def resumable(directory: str | os.PathLike, settings: dict) -> list[Record]:
    """The runs of ``directory``'s journal, after checking that they were made with
    ``settings``.

    Raises
    ------
    FileNotFoundError
        When the directory holds no journal.
    ValueError
        When its runs were made with other settings, or on other data under the same name,
        or a line is not a run's record.
    """
    refuse_links(Path(directory))
    recorded, records = read_journal(directory)
    _check_same(recorded, _plain_json(settings), Path(directory), records)
    return records


def _dataset_entry(entry) -> tuple:
    """``(description, fingerprint)`` of a data set in the settings line (a journal written
    before fingerprints holds the description alone)."""
    if isinstance(entry, dict):
        return entry.get("description"), entry.get("fingerprint")
    return entry, None


def _check_same(recorded: dict, settings: dict, directory: Path, records: list[Record]) -> None:
    """Refuse to resume runs made with other settings or other data under the same name,
    or runs whose data the settings line does not record with a fingerprint to check."""
    differ = [k for k in sorted(set(recorded["config"]) | set(settings["config"]))
              if recorded["config"].get(k) != settings["config"].get(k)]
    if differ:
        shown = "; ".join(f"{k}: {recorded['config'].get(k)!r} there, {settings['config'].get(k)!r} now" for k in differ)
        raise ValueError(f"cannot resume {directory}: its runs were made with other settings ({shown})")
    before = recorded.get("datasets", {})
    now = settings.get("datasets", {})
    for name in dict.fromkeys(r.run["dataset"] for r in records):
        if name in now and _dataset_entry(before.get(name))[1] is None:
            raise ValueError(f"cannot resume {directory}: its runs on {name!r} have no fingerprint of their data "
                             "in its settings line to check the data against: run the benchmark anew into another "
                             "directory (without --resume)")
    for name, entry in now.items():
        if name not in before:
            continue
        (was, was_print), (now, now_print) = _dataset_entry(before[name]), _dataset_entry(entry)
        if was != now:
            raise ValueError(f"cannot resume {directory}: the data set {name!r} is not the one its runs used "
                             f"({was!r} there, {now!r} now)")
        if was_print is not None and now_print is not None and was_print != now_print:
            if isinstance(was_print, dict) and isinstance(now_print, dict):
                shown = "; ".join(f"{k}: {was_print.get(k)!r} there, {now_print.get(k)!r} now"
                                  for k in sorted(set(was_print) | set(now_print), key=str)
                                  if was_print.get(k) != now_print.get(k))
            else:
                shown = f"{was_print!r} there, {now_print!r} now"
            raise ValueError(f"cannot resume {directory}: the data set {name!r} has changed since its runs were "
                             f"made ({shown}): resume with the data they used, or run the benchmark anew "
                             "into another directory")
