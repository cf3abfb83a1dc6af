"""The Dask placement tests hold on a busy machine.

They once failed only when other jobs loaded the machine (most likely a task that an idle
worker stole, which the test took for a misplaced partition).
Here they run in a pytest of their own beside two processes that keep cores busy, as a
loaded CI machine would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")

ROOT = Path(__file__).resolve().parent.parent
BUSY = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end:\n    pass\n"


def test_placement_tests_hold_beside_two_busy_processes():
    # each busy process ends by itself after two minutes should this test be killed
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/test_dask.py", "-q", "-p", "no:cacheprovider",
             "-k", "holds_every_partition_on_its_worker or spreads_rows", "-W", "ignore::DeprecationWarning"],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout
