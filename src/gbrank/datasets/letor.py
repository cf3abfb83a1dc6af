"""Readers for LETOR/SVMlight ranking files and LightGBM's data-plus-``.query`` pairs.

Parsing is scikit-learn's ``load_svmlight_file`` (compiled, well tested); this module adds
what ranking needs around it: gzip detection, query groups from ``qid:`` or a ``.query``
file, a common feature count across the splits of a fold, and errors that name the file and
the line.
"""

from __future__ import annotations

import gzip
import io
import operator
import os
import re
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..groups import check_group, qid_to_sizes, scattered_query
from ._container import RankingData

__all__ = ["LetorFold", "fold_directories", "is_fold_directory", "load_letor", "load_letor_fold"]

_GZIP_MAGIC = b"\x1f\x8b"
_SPLIT_NAMES = {
    "train": ("train", "trainingset"),
    "vali": ("vali", "validationset"),
    "test": ("test", "testset"),
}


class LetorFold(NamedTuple):
    """The three splits of a LETOR fold, with the same number of feature columns."""

    train: RankingData
    vali: RankingData
    test: RankingData


def _check_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


def _read_bytes(path: Path) -> bytes:
    """The file's content, gunzipped when it starts with the gzip magic bytes."""
    raw = path.read_bytes()
    if raw[:2] != _GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error) as exc:
        raise ValueError(
            f"{path}: cannot decompress: {exc} (truncated or corrupt gzip file)"
        ) from exc


def _svmlight(data: bytes, n_features: int | None, dtype: np.dtype):
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(
        io.BytesIO(data), n_features=n_features, dtype=dtype, zero_based=False, query_id=True
    )


def _excerpt(line: bytes) -> str:
    text = line.decode("utf-8", "replace").rstrip("\r")
    return repr(text if len(text) <= 60 else text[:60] + "...")


def _parse_error(path: Path, data: bytes, exc: Exception, n_features, dtype) -> str:
    """Name the first line the parser rejects: bisect over line ranges, reusing the parser.

    The parser's errors are line-local, so a range fails exactly when it holds a bad line;
    the search parses about as many lines as the file has.
    """
    lines = data.split(b"\n")
    lo, hi = 0, len(lines)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            _svmlight(b"\n".join(lines[lo:mid]), n_features, dtype)
        except (ValueError, OverflowError):
            hi = mid
        else:
            lo = mid
    try:
        _svmlight(lines[lo], n_features, dtype)
    except (ValueError, OverflowError) as line_exc:
        return f"{path}: line {lo + 1}: {line_exc}: {_excerpt(lines[lo])}"
    return f"{path}: {exc}"


def _record_lines(data: bytes) -> list[tuple[int, bytes]]:
    """Line number and text before any comment of each record; the parser skips blank and
    comment-only lines, so record ``i`` is row ``i``."""
    records = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        body = line.split(b"#", 1)[0]
        if body.strip():
            records.append((number, body))
    return records


#: Largest dense feature matrix read without a check (values), and how much larger than the
#: stored values a denser one may be: a line with a feature index of 10**9 would otherwise
#: make a 40-byte file ask for gigabytes.
_DENSE_FREE = 10**7
_DENSE_PER_STORED = 100


def _check_dense_size(path: Path, data: bytes, X) -> None:
    """Refuse a file whose largest feature index makes the dense matrix far larger than the
    values it stores, naming the line that holds it."""
    dense = X.shape[0] * X.shape[1]
    if dense <= max(_DENSE_FREE, _DENSE_PER_STORED * X.nnz):
        return
    row = int(np.searchsorted(X.indptr, int(np.argmax(X.indices)), side="right") - 1)
    number, body = _record_lines(data)[row]
    raise ValueError(
        f"{path}: line {number}: feature index {X.shape[1]} makes a dense matrix of {X.shape[0]} x {X.shape[1]} "
        f"values for {X.nnz} stored ones; a LETOR file numbers its features 1, 2, ...: fix the line, or give "
        f"n_features= to refuse indices above it: {_excerpt(body)}"
    )


def _scattered_lines(qid: np.ndarray, data: bytes) -> str | None:
    """Name the lines where a query's lines resume after another query's, or None."""
    scattered = scattered_query(qid)
    if scattered is None:
        return None
    q, first, second = scattered
    lines = _record_lines(data)
    return (f"the lines of qid {q} are not together: line {lines[first][0]} starts them and line "
            f"{lines[second][0]} resumes them after other queries; put each query's lines together")


def _find_query_file(path: Path) -> Path | None:
    base = path.name[:-3] if path.name.endswith(".gz") else path.name
    for name in (base + ".query", base + ".query.gz"):
        candidate = path.with_name(name)
        if candidate.is_file():
            return candidate
    return None


def _read_query_file(query_path: Path, n_rows: int, data_path: Path) -> np.ndarray:
    data = _read_bytes(query_path)
    try:
        sizes = np.loadtxt(io.BytesIO(data), dtype=np.int64, ndmin=1, comments="#")
    except ValueError as exc:
        raise ValueError(f"{query_path}: one integer group size per line expected: {exc}") from exc
    try:
        check_group(sizes, n_rows)
    except ValueError as exc:
        raise ValueError(f"{query_path}: {exc} in {data_path}") from exc
    return sizes


def _load(path, n_features, query_file, dtype):
    """Parse one file into (CSR features, labels, group sizes or None, qid or None)."""
    path = Path(path)
    if n_features is not None:
        n_features = operator.index(n_features)
        if n_features < 1:
            raise ValueError(f"n_features must be positive, got {n_features}")
    data = _read_bytes(path)
    if data and not data.endswith(b"\n"):
        last = data.count(b"\n") + 1
        raise ValueError(
            f"{path}: line {last} does not end with a newline, so the file looks truncated "
            "(if it is complete, end it with a newline)"
        )
    try:
        X, y, qid = _svmlight(data, n_features, dtype)
    except (ValueError, OverflowError) as exc:  # an index or qid beyond int64 is an OverflowError
        raise ValueError(_parse_error(path, data, exc, n_features, dtype)) from exc
    if X.shape[0] == 0:
        raise ValueError(f"{path}: the file holds no records")

    if not np.isfinite(y).all():
        number, body = _record_lines(data)[int(np.flatnonzero(~np.isfinite(y))[0])]
        raise ValueError(f"{path}: line {number}: the label must be finite: {_excerpt(body)}")
    _check_dense_size(path, data, X)

    if qid.size == 0:
        qid = None
    elif qid.size != X.shape[0]:
        number, body = next((n, b) for n, b in _record_lines(data) if b"qid:" not in b)
        raise ValueError(
            f"{path}: line {number} has no qid: but other lines do: {_excerpt(body)}"
        )

    group = None
    if qid is not None:
        try:
            group = qid_to_sizes(qid)
        except ValueError as exc:
            raise ValueError(f"{path}: {_scattered_lines(qid, data) or exc}") from exc
    if query_file is None:
        query_file = _find_query_file(path)
    if query_file is not None:
        sizes = _read_query_file(Path(query_file), X.shape[0], path)
        if group is not None and not np.array_equal(sizes, group):
            raise ValueError(
                f"{query_file}: the group sizes disagree with the qid: blocks of {path}"
            )
        group = sizes
    if group is None:
        raise ValueError(
            f"{path}: the lines have no qid: and no query file was found next to it "
            f"({path.name.removesuffix('.gz')}.query); pass query_file="
        )
    return X, y, group, qid


def load_letor(
    path: str | os.PathLike,
    *,
    n_features: int | None = None,
    query_file: str | os.PathLike | None = None,
    dtype=np.float64,
) -> RankingData:
    """Read a LETOR/SVMlight ranking file into dense features, labels and query groups.

    Lines read ``<label> [qid:<q>] <index>:<value> ... [# comment]`` with one-based feature
    indices; column ``j`` of ``X`` holds feature ``j + 1`` and features a line leaves out are
    0. The file may be plain or gzip-compressed (recognised by its content, not its name).
    Query groups come from ``qid:`` (each query's lines contiguous) or, for LightGBM's
    format, from a ``.query`` file holding one group size per line.

    Parameters
    ----------
    path : str or path-like
        The data file, e.g. ``Fold1/train.txt.gz`` or ``rank.train``.
    n_features : int, optional
        Number of feature columns. By default the largest index in the file; pass it when
        splits of sparse data must share a width (LightGBM's example: ``n_features=300``).
    query_file : str or path-like, optional
        Group sizes, one per line. By default a sibling ``<name>.query`` or
        ``<name>.query.gz`` is used when present (``<name>`` without ``.gz``), as LightGBM
        does. When the lines also have ``qid:``, the two must agree.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        dtype of ``X``.

    Returns
    -------
    RankingData
        ``X`` (n_rows, n_features), ``y`` float64 labels, ``group`` sizes and ``qid`` (the
        file's ids, or ``0 .. n_queries - 1`` when it has none).

    Raises
    ------
    ValueError
        Naming the file, and the line where the parser or the checks locate it: a malformed
        line, a last line without newline (truncated), a truncated or corrupt gzip stream,
        a non-finite label, ``qid:`` on some lines only, a query whose lines are not
        contiguous, a feature index above ``n_features``, missing or inconsistent groups.

    Notes
    -----
    Labels are returned as read: finite, but not checked to be non-negative integers, since
    that depends on the loss (LETOR's semi-supervised sets mark unjudged documents -1);
    gbrank's metrics and objectives check them. Feature values are not checked either: a
    ``nan`` stays a missing value for the boosting engines.
    """
    dtype = _check_dtype(dtype)
    X, y, group, qid = _load(path, n_features, query_file, dtype)
    return RankingData(X.toarray(), y, group=group, qid=qid)


def fold_directories(root: str | os.PathLike) -> list[Path]:
    """The ``Fold1``, ``Fold2``, ... directories of a LETOR dataset directory, in fold order."""
    found: dict[int, Path] = {}
    for child in sorted(Path(root).iterdir()):
        match = re.fullmatch(r"Fold(\d+)", child.name)
        if match and child.is_dir():
            number = int(match.group(1))
            if number in found:
                raise ValueError(f"{root}: {found[number].name} and {child.name} are both fold {number}: keep one")
            found[number] = child
    return [found[number] for number in sorted(found)]


def _split_candidates(folder: Path, split: str) -> list[Path]:
    return [folder / f"{stem}{suffix}" for stem in _SPLIT_NAMES[split] for suffix in (".txt", ".txt.gz")]


def is_fold_directory(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a directory holding a fold's training file itself."""
    path = Path(path)
    return path.is_dir() and any(p.is_file() for p in _split_candidates(path, "train"))


def _fold_folder(root: Path, fold: int | str | None) -> Path:
    """The directory holding the fold's files: ``root`` itself, or ``root/Fold<fold>``."""
    if not root.is_dir():
        raise FileNotFoundError(f"no such directory: {root}")
    if fold is None:
        if is_fold_directory(root):
            return root
        dirs = fold_directories(root)
        if dirs:
            raise ValueError(
                f"{root} holds the folds {', '.join(d.name for d in dirs)}: choose one with fold=, "
                f"e.g. load_letor_fold({str(root)!r}, fold=1), or pass a fold directory"
            )
        raise FileNotFoundError(
            f"{root} is neither a fold directory (no {', '.join(p.name for p in _split_candidates(root, 'train'))}) "
            "nor a dataset directory holding Fold1, Fold2, ..."
        )
    name = fold if isinstance(fold, str) else f"Fold{operator.index(fold)}"
    folder = root / name
    if folder.is_dir():
        return folder
    if is_fold_directory(root):
        raise FileNotFoundError(
            f"no fold directory {folder}: {root} is itself a fold directory; "
            f"read it with load_letor_fold({str(root)!r}) (no fold=)"
        )
    dirs = fold_directories(root)
    have = f"it holds {', '.join(d.name for d in dirs)}" if dirs else "it holds no Fold1, Fold2, ... directories"
    raise FileNotFoundError(f"no fold directory {folder}: {have}")


def load_letor_fold(
    root: str | os.PathLike,
    fold: int | str | None = None,
    *,
    n_features: int | None = None,
    dtype=np.float64,
) -> LetorFold:
    """Read the train, validation and test files of one LETOR fold.

    Parameters
    ----------
    root : str or path-like
        The dataset directory holding ``Fold1`` ... ``Fold5`` (e.g. ``letor4_mq2008`` or
        ``letor3_ohsumed/QueryLevelNorm``) with ``fold`` to choose one, or a fold directory
        itself (e.g. ``letor4_mq2008/Fold1``) without ``fold``; ``python -m gbrank.bench``
        reads both the same way.
    fold : int or str, optional
        Fold number (``1`` reads ``Fold1``) or the directory name; leave it out when
        ``root`` is a fold directory.
    n_features : int, optional
        Number of feature columns; by default the largest index over the three files, so
        the splits always share a width.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        dtype of the feature matrices.

    Returns
    -------
    LetorFold
        Named tuple ``(train, vali, test)`` of `RankingData`. Files are looked up as
        ``train``/``vali``/``test`` (LETOR 4.0, QueryLevelNorm) or
        ``trainingset``/``validationset``/``testset`` (other LETOR 3.0 versions), with
        suffix ``.txt`` or ``.txt.gz``.

    Raises
    ------
    FileNotFoundError
        For a missing directory or file, naming it and what the directory holds instead
        (a fold directory given with ``fold=``, or the folds there are).
    ValueError
        For a dataset directory without ``fold``, and for unreadable files (as
        :func:`load_letor`).
    """
    dtype = _check_dtype(dtype)
    folder = _fold_folder(Path(root), fold)
    paths = []
    for split in _SPLIT_NAMES:
        tried = _split_candidates(folder, split)
        found = next((p for p in tried if p.is_file()), None)
        if found is None:
            raise FileNotFoundError(
                f"no {split} file in {folder} (looked for {', '.join(p.name for p in tried)})"
            )
        paths.append(found)
    parts = [_load(p, n_features, None, dtype) for p in paths]
    width = n_features if n_features is not None else max(X.shape[1] for X, *_ in parts)
    splits = []
    for X, y, group, qid in parts:
        X.resize(X.shape[0], width)
        splits.append(RankingData(X.toarray(), y, group=group, qid=qid))
    return LetorFold(*splits)
