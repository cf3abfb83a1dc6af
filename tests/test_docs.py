"""The documentation: it builds with warnings as errors, and what it states is checked.

* the Sphinx build, in strict mode, so that a broken reference fails the suite;
* the worked example of the metrics page: every row's reference value is recomputed with the
  library it names (LightGBM, XGBoost, pytrec_eval, scikit-learn) and the gbrank call of
  the row must give the same number;
* the defaults in the parameter tables of the objective pages are those of the code;
* the code of the getting-started page runs as written;
* every example script is shown on the examples page, and every benchmark script and
  report on the benchmarks page;
* every code block of the docs runs in a test, or is marked as a fragment (an illustration
  with names it does not define, a shell command that installs or runs for minutes): a
  ``<!-- fragment -->`` line right before the fence. ``text`` blocks show output. Python
  blocks marked ``<!-- needs-letor-data -->`` run in the real LETOR data's directory, and are
  skipped when it is absent;
* the home page, the package description and the README say what gbrank does and how to
  build and test it.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import gbrank

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def table_rows(block: str) -> list[list[str]]:
    """Cells of the body rows of the first markdown table in ``block``."""
    lines = [line.strip() for line in block.strip().splitlines() if line.strip().startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


# --------------------------------------------------------------------------- the build
def test_site_builds_in_strict_mode(tmp_path):
    for module in ("sphinx", "myst_parser", "furo"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the documentation tools are not installed ({module}): pip install -e '.[docs]'")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-6000:] or result.stdout[-6000:]
    assert (tmp_path / "html" / "objectives" / "plackett-luce.html").is_file()
    # every registered objective has its factory documented (an autodoc anchor) on some page
    from gbrank.objectives import registry

    html = "".join(page.read_text() for page in (tmp_path / "html").rglob("*.html"))
    missing = [s.name for s in registry.specs().values() if f'id="{s.module}.{s.name}"' not in html]
    assert not missing, f"registered objectives without a documented factory: {missing}"


def test_every_registered_objective_has_a_guide_page():
    from gbrank.objectives import registry

    def shows(spec) -> bool:
        page = DOCS / f"{spec.guide.page}.md"
        return page.is_file() and re.search(rf"gbrank\.{spec.name}\b|\b{spec.name}\(", page.read_text()) is not None

    missing = [s.name for s in registry.specs().values() if s.guide is None or not shows(s)]
    assert not missing, f"registered objectives without a guide page that shows them: {missing}"


# --------------------------------------------------------------------------- metrics page
METRICS_PAGE = (DOCS / "metrics.md").read_text()
_WORKED = METRICS_PAGE.split("<!-- worked-example -->")[1].split("<!-- /worked-example -->")[0]
WORKED_ROWS = table_rows(_WORKED)
WORKED_SETUP = python_blocks(METRICS_PAGE.split("## Worked example")[1])[0]


def worked_namespace() -> dict:
    namespace: dict = {}
    exec(WORKED_SETUP, namespace)
    return namespace


def lightgbm_value(y, s, metric: str, k: int, **params) -> float:
    lgb = pytest.importorskip("lightgbm")
    data = lgb.Dataset(np.zeros((y.size, 1)), y, group=[y.size], init_score=s, params={"verbose": -1})
    booster = lgb.Booster({"objective": "lambdarank", "metric": metric, "eval_at": [k], "verbose": -1, **params}, data)
    (result,) = booster.eval_train()
    return float(result[2])


def xgboost_value(y, s, metric: str, **params) -> float:
    xgb = pytest.importorskip("xgboost")
    data = xgb.DMatrix(np.zeros((y.size, 1)), y, qid=np.zeros(y.size, dtype=np.int64), base_margin=s)
    objective = "rank:map" if metric.startswith(("map", "pre")) else "rank:ndcg"
    booster = xgb.train({"objective": objective, "eval_metric": metric, **params}, data, num_boost_round=0)
    return float(booster.eval(data).rsplit(":", 1)[1])


def trec_eval_value(y, s, docnos, measure: str) -> float:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrel = {"q": {d: int(label) for d, label in zip(docnos, y)}}
    run = {"q": {d: float(score) for d, score in zip(docnos, s)}}
    result = pytrec_eval.RelevanceEvaluator(qrel, {measure}).evaluate(run)["q"]
    return float(result[measure.replace(".", "_")])


def reference_value(reference: str, ns: dict) -> float:
    """Compute the row's reference with the library the row names."""
    y, s = np.asarray(ns["y"], dtype=np.float64), np.asarray(ns["s"], dtype=np.float64)
    quoted = re.findall(r"`([^`]*)`", reference)
    library = reference.split()[0]
    if library == "LightGBM":
        name, k = quoted[0].split("@")
        return lightgbm_value(y, s, name, int(k), **_params(quoted[1:]))
    if library == "XGBoost":
        params = {k: str(v).lower() for k, v in _params(quoted[1:]).items()}
        labels = (y > 0).astype(np.float64) if "binary labels" in reference else y
        return xgboost_value(labels, s, quoted[0], **params)
    if library == "trec_eval":
        return trec_eval_value(y, s, ns["docnos"], quoted[0])
    if library == "scikit-learn":
        from sklearn.metrics import ndcg_score

        call = re.fullmatch(r"ndcg_score\(k=(\d+)\)", quoted[0])
        assert call, reference
        return float(ndcg_score([y], [s], k=int(call.group(1))))
    raise AssertionError(f"no reference implementation for {reference!r}")


def _params(settings: list[str]) -> dict:
    """``["label_gain=[0, 1, 2, 3]", "ndcg_exp_gain=false"]`` as engine parameters."""
    out = {}
    for setting in settings:
        key, value = setting.split("=", 1)
        out[key] = False if value == "false" else True if value == "true" else ast.literal_eval(value)
    return out


def test_worked_example_table_is_found():
    assert len(WORKED_ROWS) >= 15
    assert {row[0].split()[0] for row in WORKED_ROWS} == {"LightGBM", "XGBoost", "trec_eval", "scikit-learn"}


@pytest.mark.parametrize("row", WORKED_ROWS, ids=[row[0].replace("`", "") for row in WORKED_ROWS])
def test_worked_example_row(row):
    reference, stated, call = row[0], float(row[1]), row[2].strip("`")
    ns = worked_namespace()
    assert reference_value(reference, ns) == pytest.approx(stated, abs=5e-7), "the library disagrees with the page"
    assert eval(call, ns) == pytest.approx(stated, abs=5e-7), "the gbrank call disagrees with the page"


def test_trec_eval_tie_order_of_the_worked_example():
    ns = worked_namespace()
    assert [ns["docnos"][i] for i in ns["trec"]] == ["d1", "d2", "d5", "d4", "d3", "d6"]


def test_queries_without_relevant_documents_follow_the_stated_conventions():
    """LightGBM's ndcg/map and XGBoost's ndcg@k give 1, trec_eval, scikit-learn and @k- give 0."""
    from sklearn.metrics import ndcg_score

    from gbrank.metrics import mean_average_precision, ndcg

    y = np.zeros(6)
    s = np.array([0.9, 0.8, 0.5, 0.4, 0.3, 0.1])
    group = [6]
    assert lightgbm_value(y, s, "ndcg", 3) == 1.0 == ndcg(y, s, group, k=3)
    assert lightgbm_value(y, s, "map", 3) == 1.0 == mean_average_precision(y, s, group, k=3)
    assert xgboost_value(y, s, "ndcg@3") == 1.0 == ndcg(y, s, group, k=3)
    assert xgboost_value(y, s, "ndcg@3-") == 0.0 == ndcg(y, s, group, k=3, no_relevant=0.0)
    assert xgboost_value(y, s, "map@3-") == 0.0 == mean_average_precision(y, s, group, k=3, no_relevant=0.0)
    docnos = [f"d{i}" for i in range(1, 7)]
    assert trec_eval_value(y, s, docnos, "ndcg_cut.3") == 0.0 == ndcg(y, s, group, k=3, gain="linear", no_relevant=0.0)
    assert trec_eval_value(y, s, docnos, "map") == 0.0 == mean_average_precision(
        y, s, group, denominator="R", no_relevant=0.0
    )
    assert float(ndcg_score([y], [s], k=3)) == 0.0 == ndcg(y, s, group, k=3, gain="linear", no_relevant=0.0)


# --------------------------------------------------------------------------- objective pages
# Callables documented on a guide page beside its registered objectives.
PAGE_EXTRAS = {"objectives/ndcg-boost.md": ["NDCGBoost"]}
NO_DEFAULT = "—"


def parameter_pages() -> dict[str, list[str]]:
    """Guide page -> the callables whose parameter tables it holds: the registry's objectives
    by their guide page, and the extras."""
    from gbrank.objectives import registry

    pages: dict[str, list[str]] = {}
    for spec in registry.specs().values():
        if spec.guide is not None:
            pages.setdefault(f"{spec.guide.page}.md", []).append(spec.name)
    for page, names in PAGE_EXTRAS.items():
        pages.setdefault(page, []).extend(names)
    return pages


def parameter_tables(text: str) -> list[list[list[str]]]:
    tables = re.findall(r"^\| parameter \|.*?(?=^[^|]|\Z)", text, flags=re.S | re.M)
    return [[[c.strip() for c in line.strip().strip("|").split("|")] for line in t.strip().splitlines()] for t in tables]


def default_of(func, name: str):
    """The default of ``name`` in ``func``'s signature, following ``**kwargs`` to the class built."""
    target = func.__init__ if inspect.isclass(func) else func
    params = inspect.signature(target).parameters
    if name in params:
        return params[name].default
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        built = typing.get_type_hints(func)["return"]
        return default_of(built, name)
    raise AssertionError(f"{func.__name__} takes no parameter {name!r}")


def documented_rows():
    """``(page, row number, owners, parameter, stated default)`` for every parameter-table row."""
    for page, names in parameter_pages().items():
        number = 0
        for table in parameter_tables((DOCS / page).read_text()):
            header = table[0]
            for row in table[2:]:
                number += 1
                cells = dict(zip(header, row))
                name = cells["parameter"].strip("`")
                if "factories" in cells and cells["factories"] not in ("all", "both"):
                    owners = re.findall(r"`(\w+)`", cells["factories"])
                else:
                    owners = [n for n in names if _takes(getattr(gbrank, n), name)]
                yield page, number, owners, name, cells["default"]


def _takes(func, name: str) -> bool:
    try:
        default_of(func, name)
    except AssertionError:
        return False
    return True


DEFAULT_CASES = [
    pytest.param(page, owner, name, stated, id=f"{owner}-{name}")
    for page, _, owners, name, stated in documented_rows()
    for owner in owners
]


@pytest.mark.parametrize("page,owner,name,stated", DEFAULT_CASES)
def test_parameter_tables_state_the_defaults_of_the_code(page, owner, name, stated):
    actual = default_of(getattr(gbrank, owner), name)
    if stated == NO_DEFAULT:
        assert actual is inspect.Parameter.empty, f"{page}: {owner}({name}) has a default, {actual!r}"
    else:
        assert ast.literal_eval(stated.strip("`")) == actual, f"{page}: {owner}({name}) defaults to {actual!r}"


def test_every_parameter_table_row_names_a_parameter_of_the_code():
    rows = list(documented_rows())
    assert len(rows) >= 35
    orphans = [(page, name) for page, _, owners, name, _ in rows if not owners]
    assert not orphans, f"rows whose parameter no documented callable takes: {orphans}"


# --------------------------------------------------------------------------- getting started
def test_getting_started_code_runs(capsys):
    pytest.importorskip("lightgbm")
    pytest.importorskip("xgboost")
    namespace: dict = {}
    for block in python_blocks((DOCS / "getting-started.md").read_text()):
        exec(compile(block, "getting-started.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert len(re.findall(r"\b0\.\d+", printed)) >= 5, printed
    assert namespace["model"].score(namespace["frame"](namespace["test"]), namespace["test"].y) > 0.5


# --------------------------------------------------------------------------- examples page
def test_every_example_is_on_the_examples_page():
    page = (DOCS / "examples.md").read_text()
    shown = set(re.findall(r"literalinclude:?\}? \.\./examples/(\S+\.py)", page))
    listed = set(re.findall(r"^\| `(\S+\.py)` \|", page, flags=re.M))
    scripts = {p.name for p in (ROOT / "examples").glob("*.py")}
    assert shown == scripts == listed


# --------------------------------------------------------------------------- benchmarks page
def test_every_benchmark_report_and_reproduction_is_on_the_benchmarks_page():
    page = (DOCS / "benchmarks.md").read_text()
    linked = set(re.findall(r"\]\(benchmarks/([\w.-]+\.md)\)", page))
    reports = {p.name for p in (DOCS / "benchmarks").glob("*.md")}
    assert reports <= linked, f"not linked from benchmarks.md: {sorted(reports - linked)}"
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")}
    missing = {name for name in scripts if f"benchmarks/{name}" not in page}
    assert not missing, f"benchmark scripts not on benchmarks.md: {sorted(missing)}"


# --------------------------------------------------------------------------- every code block
FRAGMENT = "<!-- fragment -->"
NEEDS_DATA = "<!-- needs-letor-data -->"
MARKERS = (FRAGMENT, NEEDS_DATA)
OUTPUT = "text"
#: Pages whose python blocks another test runs: getting started (above).
RUN_ELSEWHERE = {"getting-started.md"}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    body: str
    marker: str | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a page, without MyST directives (``{toctree}``, ...), each
    with the marker line right before its fence, if any."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = re.match(r"^(`{3,}|~{3,})(.*)$", lines[i])
        if not match:
            i += 1
            continue
        fence, info = match.group(1), match.group(2).strip()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence)), len(lines))
        if not info.startswith("{"):
            before = lines[i - 1].strip() if i else ""
            blocks.append(Block(str(path.relative_to(DOCS)), i + 1, info.split()[0] if info else "",
                                "\n".join(lines[i + 1:end]) + "\n", before if before in MARKERS else None))
        i = end + 1
    return blocks


BLOCKS = [block for page in sorted(DOCS.rglob("*.md")) for block in code_blocks(page)]
RUN_PAGES = sorted({b.page for b in BLOCKS if b.lang == "python" and b.marker != FRAGMENT} - RUN_ELSEWHERE)


def test_every_code_block_runs_in_a_test_or_is_a_fragment():
    assert len(BLOCKS) > 30 and RUN_PAGES
    unmarked = [str(b) for b in BLOCKS if b.marker is None and b.lang not in ("python", OUTPUT)]
    assert not unmarked, f"code blocks no test runs: run them or mark them {FRAGMENT}: {unmarked}"
    misplaced = [str(b) for b in BLOCKS if b.marker == NEEDS_DATA and b.lang != "python"]
    assert not misplaced
    # python blocks run: by the getting-started test, or page by page below
    runnable = {b.page for b in BLOCKS if b.lang == "python" and b.marker != FRAGMENT}
    assert runnable <= set(RUN_PAGES) | RUN_ELSEWHERE


def test_fragments_are_valid_python():
    for block in BLOCKS:
        if block.lang == "python":
            compile(block.body, str(block), "exec")


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_code_runs(page, tmp_path, monkeypatch):
    blocks = [b for b in BLOCKS if b.page == page and b.lang == "python" and b.marker != FRAGMENT]
    if any(b.marker == NEEDS_DATA for b in blocks):
        from gbrank._data_dir import data_dir

        root = data_dir()
        if root is None:
            pytest.skip("real LETOR data not found: set GBRANK_DATA_DIR or provide ../shared/data")
        monkeypatch.chdir(root)
    else:
        monkeypatch.chdir(tmp_path)
    for engine in ("lightgbm", "xgboost", "dask", "distributed"):
        if any(re.search(rf"^\s*(import|from) {engine}\b", b.body, re.M) for b in blocks):
            pytest.importorskip(engine)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block.body, str(block), "exec"), namespace)


def test_a_marker_is_seen_where_it_is_written(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text(f"text\n\n{FRAGMENT}\n```python\nx = undefined\n```\n\n```bash\nls\n```\n\n"
                    "````md\n```python\nnot a block\n```\n````\n")
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path)
    blocks = code_blocks(page)
    assert [(b.line, b.lang, b.marker) for b in blocks] == [(4, "python", FRAGMENT), (8, "bash", None), (12, "md", None)]


# --------------------------------------------------------------------------- what gbrank is
CAPABILITIES = ["ListMLE", "W-ListMLE", "RankNet", "ListNet", "RankCosine", "NDCG_Boost", "LambdaRank", "LambdaLoss",
                "clicks", "metrics", "Ranker", "NDCGBoost", "Dask", "benchmark"]


def test_home_page_and_package_description_list_every_capability():
    tomllib = pytest.importorskip("tomllib")
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    home = (DOCS / "index.md").read_text().split("```")[0]
    for text, where in ((home, "docs/index.md"), (description, "pyproject.toml"), (README.split("##")[0], "README")):
        missing = [c for c in CAPABILITIES if c.lower() not in text.lower()]
        assert not missing, f"{where} does not mention {missing}"


def test_lambdaloss_docstring_speaks_of_no_k():
    assert "k" not in inspect.signature(gbrank.lambdaloss).parameters
    assert "``k``" not in gbrank.lambdaloss.__doc__ and "at k" not in gbrank.lambdaloss.__doc__
    assert "(at ``k`` when given)" in gbrank.lambdarank.__doc__


def test_lambdaloss_is_shown_runnable():
    example = ROOT / "examples" / "lambdaloss_lightgbm.py"
    assert "gbrank.lambdaloss(" in example.read_text()
    started = [b for b in BLOCKS if b.page == "getting-started.md" and b.lang == "python"]
    assert any("gbrank.lambdaloss(" in b.body for b in started)
    objective_page = [b for b in BLOCKS if b.page == "objectives/lambdarank.md" and b.lang == "python"]
    assert any("gbrank.lambdaloss(" in b.body and b.marker is None for b in objective_page)


# --------------------------------------------------------------------------- the README
README = (ROOT / "README.md").read_text()


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_readme_links_to_sections_that_exist():
    links = re.findall(r"\]\((docs/[^)#]+)#([^)]+)\)", README)
    assert ("docs/data.md", "tables") in links
    for path, anchor in links:
        headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), flags=re.M)
        assert anchor in {_anchor(h) for h in headings}, (path, anchor)


def test_readme_says_how_to_build_the_docs_and_how_long_the_tests_take():
    assert "sphinx-build -W --keep-going -b html docs site" in README
    assert re.search(r"about \d+ minutes on a quiet 2-core machine", README)
