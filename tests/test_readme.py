"""Every code block of the README runs as pasted.

Python blocks run in a fresh interpreter in an empty temporary directory, must print an
NDCG@10 and nothing from the engines' loggers. Shell blocks other than the two set-up
commands are ``gbrank`` command lines: they run with ``--rounds 3`` on a small generated
table, and on the real MQ2008 ``Fold1`` when it is present (skipped otherwise). The relative
links of the README point at existing files.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gbrank._data_dir import data_dir

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"(?:<!-- (?P<marker>[\w-]+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
BLOCKS = [(m["marker"], m["lang"], m["body"]) for m in FENCE.finditer(README)]
SETUP = {
    "main-command": 'pip install -e ".[all]" && python -m gbrank.bench\n',
    "test-command": 'pip install -e ".[test]" && python -m pytest\n',
}
PYTHON = [body for marker, lang, body in BLOCKS if lang == "python"]
COMMANDS = [
    line
    for marker, lang, body in BLOCKS
    if lang in ("bash", "sh", "shell", "console") and marker not in SETUP
    for line in body.splitlines()
    if line.strip()
]
NDCG = re.compile(r"NDCG@10:? [01]\.\d+")


def run(args, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{args}\nexit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_the_set_up_commands_are_the_two_of_today():
    setup = {marker: body for marker, lang, body in BLOCKS if marker}
    assert setup == SETUP
    assert README.count("<!-- main-command -->") == 1 and README.count("<!-- test-command -->") == 1


def test_the_readme_has_the_blocks_a_new_user_needs():
    assert len(PYTHON) >= 3
    text = "\n".join(PYTHON)
    for needed in ("lgb.train", "xgb.train", "xgboost_metric", "early_stopping_rounds", "gbrank.Ranker", "pd.DataFrame", "gbrank.datasets"):
        assert needed in text, needed
    assert any("letor:" in line for line in COMMANDS) and any("table:" in line for line in COMMANDS)


@pytest.mark.parametrize("index", range(len(PYTHON)), ids=[f"python-{i}" for i in range(len(PYTHON))])
def test_python_block_runs_as_pasted(index, tmp_path):
    code = PYTHON[index]
    for engine in ("lightgbm", "xgboost", "pandas"):
        if re.search(rf"^import {engine}\b", code, re.M) and importlib.util.find_spec(engine) is None:
            pytest.skip(f"needs {engine}")
    script = tmp_path / "block.py"
    script.write_text(code)
    result = run([sys.executable, str(script)], cwd=tmp_path)
    output = result.stdout + result.stderr
    assert NDCG.search(output), output
    value = float(NDCG.search(output).group().split()[-1])
    assert 0.3 < value <= 1.0, output
    # quiet engines: no [LightGBM] [Info] lines, no XGBoost log lines
    assert "[LightGBM]" not in output and "[0]\t" not in output, output
    assert list(tmp_path.iterdir()) == [script]


def write_table(path: Path) -> None:
    import pandas as pd

    from gbrank.datasets import make_ranking

    data = make_ranking(n_queries=60, docs_per_query=15, n_features=5, seed=0)
    frame = pd.DataFrame(data.X, columns=[f"f{j}" for j in range(data.n_features)])
    frame.insert(0, "qid", data.qid)
    frame.insert(1, "label", data.y)
    frame.to_csv(path, index=False)


@pytest.mark.slow
@pytest.mark.parametrize("line", COMMANDS, ids=[f"command-{i}" for i in range(len(COMMANDS))])
def test_command_line_runs(line, tmp_path):
    args = shlex.split(line)
    assert args[0] == "gbrank", f"README shell blocks hold gbrank command lines only: {line}"
    args = [sys.executable, "-m", "gbrank.bench", *args[1:]]
    args[args.index("--rounds") + 1] = "3"
    spec_at = args.index("--data") + 1
    kind, path = args[spec_at].split(":", 1)
    if kind == "letor":
        root = data_dir()
        fold = None if root is None else root / "letor4_mq2008" / Path(path).name
        if fold is None or not fold.is_dir():
            pytest.skip("real MQ2008 data not found: set GBRANK_DATA_DIR or provide ../shared/data")
        args[spec_at] = f"letor:{fold}"
    else:
        write_table(tmp_path / path)
    run(args, cwd=tmp_path)
    out = tmp_path / args[args.index("--out") + 1]
    assert (out / "report.md").is_file() and (out / "results.json").is_file()
    if "--methods" in args:
        summary = (out / "summary.csv").read_text()
        for method in args[args.index("--methods") + 1].split(","):
            assert method in summary, (method, summary)


def test_relative_links_point_at_files():
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert (ROOT / link).is_file(), link
