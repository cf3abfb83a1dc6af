"""benchmarks/bench_objectives.py --sizes: one run writes the ratios, the CSV and the plot."""

from __future__ import annotations

import csv

import pytest
from helpers import benchmark_script


def _script():
    return benchmark_script("bench_objectives")


def test_sizes_run_writes_every_family_ratio_csv_and_plot(tmp_path, capsys):
    pytest.importorskip("lightgbm")
    pytest.importorskip("matplotlib")
    bench = _script()
    bench.main(["--sizes", "--rows", "1200", "--features", "8", "--rounds", "4", "--repeats", "2",
                "--engines", "lgb", "--out", str(tmp_path)])
    with open(tmp_path / "sizes.csv") as fh:
        rows = list(csv.DictReader(fh))
    # one row per gbrank objective of each LightGBM family and list length
    expected = {(builtin, name)
                for engine, builtin, names in bench.FAMILIES if engine == "lightgbm" for name in names}
    assert {(r["builtin"], r["method"]) for r in rows} == expected
    assert sorted({int(r["docs"]) for r in rows}) == sorted(bench.SIZES_DOCS)
    for row in rows:
        ratio = float(row["ratio"])
        assert float(row["ratio_min"]) <= ratio <= float(row["ratio_max"])
        assert ratio > 0.0
        assert float(row["alone_ms"]) > 0.0 and float(row["inside_ms"]) > 0.0
    assert (tmp_path / "sizes.png").stat().st_size > 0
    out = capsys.readouterr().out
    assert "load average" in out and "lgb:lambdarank()" in out
