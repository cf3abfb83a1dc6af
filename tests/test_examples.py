"""Every script in examples/ runs to completion and prints a metric."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gbrank._data_dir import data_dir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
METRIC = re.compile(r"NDCG@\d+ = [01]\.\d{4}")
LETOR = "letor_from_path.py"


def imported_modules(script: Path) -> set[str]:
    """Top-level packages the script imports."""
    names = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def missing_modules(script: Path) -> list[str]:
    return sorted(name for name in imported_modules(script) if importlib.util.find_spec(name) is None)


def run(script: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_there_are_examples():
    assert len(EXAMPLES) >= 6, [p.name for p in EXAMPLES]


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_prints_a_metric(script):
    missing = missing_modules(script)
    if missing:
        pytest.skip(f"{script.name} needs {', '.join(missing)}")
    if script.name == LETOR and (data_dir() is None or not (data_dir() / "letor4_mq2008").is_dir()):
        pytest.skip("real LETOR data not found: set GBRANK_DATA_DIR or provide ../shared/data")
    result = run(script)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert METRIC.search(result.stdout), f"{script.name} printed no metric:\n{result.stdout[-2000:]}"


def test_letor_example_exits_cleanly_without_data(tmp_path):
    script = ROOT / "examples" / LETOR
    missing = missing_modules(script)
    if missing:
        pytest.skip(f"{LETOR} needs {', '.join(missing)}")
    result = run(script, env={"GBRANK_DATA_DIR": str(tmp_path / "absent")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not found" in result.stdout
    assert not METRIC.search(result.stdout)


def test_letor_example_reads_the_path_it_is_given(tmp_path):
    """A LETOR directory on the command line wins over the default location."""
    script = ROOT / "examples" / LETOR
    if missing_modules(script):
        pytest.skip(f"{LETOR} needs {', '.join(missing_modules(script))}")
    rng = np.random.default_rng(0)
    lines = []
    for q in range(40):
        for _ in range(10):
            x = rng.random(4)
            label = int(np.clip(np.floor(3 * x[0] + rng.normal(scale=0.3)), 0, 2))
            lines.append(f"{label} qid:{q + 1} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    fold = tmp_path / "tiny" / "Fold1"
    fold.mkdir(parents=True)
    for name in ("train", "vali", "test"):
        (fold / f"{name}.txt").write_text("\n".join(lines) + "\n")
    result = run(script, str(tmp_path / "tiny"), env={"GBRANK_DATA_DIR": str(tmp_path / "absent")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tiny Fold1: 40 train" in result.stdout
    assert METRIC.search(result.stdout)
