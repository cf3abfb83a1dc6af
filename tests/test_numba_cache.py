"""A read-only install: numba cannot cache next to gbrank nor in the home folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gbrank._numba_cache import ensure_cache

pytest.importorskip("lightgbm")

ROOT = Path(__file__).resolve().parents[1]
WARNING = "numba cannot cache gbrank's compiled kernels"

# Runs first in the child. numba (and gbrank) test a cache folder by creating a temporary
# file in it; refusing that outside the temporary directory is what a read-only install
# with no writable home looks like, also to a test run as root.
READ_ONLY = """
import errno, os, tempfile
_allowed = os.path.realpath(tempfile.gettempdir()) + os.sep
_temporary_file = tempfile.TemporaryFile
def _refuse_outside_temp(*args, dir=None, **kwargs):
    if dir is not None and not os.path.realpath(dir).startswith(_allowed):
        raise OSError(errno.EROFS, "Read-only file system", dir)
    return _temporary_file(*args, dir=dir, **kwargs)
tempfile.TemporaryFile = _refuse_outside_temp
"""

TRAIN = """
import lightgbm as lgb
import gbrank
from gbrank.datasets import make_ranking
data = make_ranking(n_queries=20, docs_per_query=8, n_features=4, seed=0)
params = {"objective": gbrank.listnet(), "verbosity": -1, "num_threads": 1}
booster = lgb.train(params, lgb.Dataset(data.X, data.y, group=data.group), num_boost_round=3)
print(booster.num_trees(), os.environ["NUMBA_CACHE_DIR"])
"""


def run_read_only(tmp_path: Path) -> subprocess.CompletedProcess:
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    home = tmp_path / "home"  # a file: no cache folder can be made under it
    home.touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != "XDG_CACHE_HOME"}
    env.update(TMPDIR=str(temporary), HOME=str(home), PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="always")
    return subprocess.run([sys.executable, "-c", READ_ONLY + TRAIN], capture_output=True, text=True, env=env, timeout=600)


def test_read_only_install_trains_and_caches_in_the_temporary_directory(tmp_path):
    done = run_read_only(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count(WARNING) == 1, done.stderr[-3000:]
    trees, folder = done.stdout.split()
    assert trees == "3"
    folder = Path(folder)
    assert folder.parent == tmp_path / "tmp" and folder.name.startswith("gbrank-numba-cache")
    assert any(folder.rglob("*.nbi")), "the kernels were not cached in the folder gbrank chose"
    # the next process finds the same folder, and warns once again
    again = run_read_only(tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count(WARNING) == 1
    assert again.stdout.split() == [trees, str(folder)]


def test_a_cache_folder_set_by_the_user_is_left_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert ensure_cache() is None
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path)
