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

A run interrupted while its line was being written leaves an incomplete last line, which
is ignored: that run is trained again.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .stats import FIGURES, TIMES

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


def read_journal(directory: str | os.PathLike) -> tuple[dict, list[Record]]:
    """The settings and the finished runs recorded in ``directory``'s ``runs.jsonl``.

    Raises
    ------
    FileNotFoundError
        When the directory holds no journal.
    ValueError
        When the journal is not one (a line other than the last one is not JSON).
    """
    path = Path(directory) / JOURNAL
    if not path.is_file():
        raise FileNotFoundError(f"{directory} holds no {JOURNAL}: it is not the report directory of a benchmark")
    lines = path.read_text().splitlines()
    documents = []
    for number, line in enumerate(lines, start=1):
        try:
            documents.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break  # written when the run was interrupted: that run is trained again
            raise ValueError(f"{path}: line {number} is not a journal line") from None
    if not documents or "settings" not in documents[0]:
        raise ValueError(f"{path}: no settings line")
    records = []
    for document in documents[1:]:
        run = document["run"]
        key = {k: run[k] for k in RUN_KEY}
        records.append(Record(run, _frame(document["per_query"], key), _frame(document["predictions"], key),
                              document.get("tuning")))
    return documents[0]["settings"], records


class Journal:
    """Appends each finished run to ``runs.csv`` and ``runs.jsonl`` of ``directory``.

    ``resume=False`` starts both files anew with ``settings``; ``resume=True`` keeps the runs
    already there (``finished``, by run key) after checking that they were made with the same
    settings (:func:`resumable`).
    """

    def __init__(self, directory: str | os.PathLike, settings: dict, *, resume: bool = False) -> None:
        self.directory = Path(directory)
        self.finished: dict[tuple, Record] = {}
        if resume:
            self.finished = {r.key: r for r in resumable(self.directory, settings)}
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
        with open(self.directory / JOURNAL, "a") as handle:
            handle.write(line + "\n")
        row = ["" if record.run.get(c) is None else record.run[c] for c in RUN_COLUMNS]
        with open(self.directory / RUN_LOG, "a", newline="") as handle:
            csv.writer(handle).writerow(row)


def resumable(directory: str | os.PathLike, settings: dict) -> list[Record]:
    """The runs of ``directory``'s journal, after checking that they were made with
    ``settings``.

    Raises
    ------
    FileNotFoundError
        When the directory holds no journal.
    ValueError
        When its runs were made with other settings, or on another data set of the same name.
    """
    recorded, records = read_journal(directory)
    _check_same(recorded, json.loads(json.dumps(settings)), Path(directory))
    return records


def _check_same(recorded: dict, settings: dict, directory: Path) -> None:
    """Refuse to resume runs made with other settings or other data under the same name."""
    differ = [k for k in sorted(set(recorded["config"]) | set(settings["config"]))
              if recorded["config"].get(k) != settings["config"].get(k)]
    if differ:
        shown = "; ".join(f"{k}: {recorded['config'].get(k)!r} there, {settings['config'].get(k)!r} now" for k in differ)
        raise ValueError(f"cannot resume {directory}: its runs were made with other settings ({shown})")
    before = recorded.get("datasets", {})
    changed = [n for n, description in settings.get("datasets", {}).items() if n in before and before[n] != description]
    if changed:
        raise ValueError(f"cannot resume {directory}: the data set {changed[0]!r} is not the one its runs used "
                         f"({before[changed[0]]!r} there, {settings['datasets'][changed[0]]!r} now)")
