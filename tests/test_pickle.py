"""gbrank goes to other processes: the lazy package and every export pickle by reference,
with the standard pickle and with cloudpickle, in functions defined in ``__main__`` as a
process pool (loky) and a Dask cluster with worker processes send them."""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import gbrank

ROOT = Path(__file__).resolve().parent.parent
TIME_LIMIT = 600
PACKAGES = ["gbrank", "gbrank.metrics", "gbrank.datasets", "gbrank.objectives"]


def _exports():
    for package in PACKAGES:
        module = importlib.import_module(package)
        yield package, module
        for name in module.__all__:
            if not name.startswith("__"):
                yield f"{package}.{name}", getattr(module, name)


EXPORTS = list(_exports())


@pytest.mark.parametrize("name,value", EXPORTS, ids=[name for name, _ in EXPORTS])
def test_every_export_pickles_by_reference(name, value):
    cloudpickle = pytest.importorskip("cloudpickle")
    for dumps in (pickle.dumps, cloudpickle.dumps):
        assert pickle.loads(dumps(value)) is value, name


def test_the_dask_module_pickles_by_reference():
    pytest.importorskip("distributed")
    cloudpickle = pytest.importorskip("cloudpickle")
    assert pickle.loads(pickle.dumps(gbrank.dask)) is gbrank.dask
    assert pickle.loads(cloudpickle.dumps(gbrank.dask)) is gbrank.dask


def test_every_exported_module_is_covered():
    modules = {name for name, value in EXPORTS if isinstance(value, types.ModuleType)}
    assert set(PACKAGES) <= modules


def run_main(tmp_path: Path, code: str) -> str:
    """Run ``code`` as the ``__main__`` script of a fresh interpreter that imports this tree."""
    script = tmp_path / "main.py"
    script.write_text(textwrap.dedent(code))
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), environ.get("PYTHONPATH")]))
    try:
        result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=environ, capture_output=True,
                                text=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {TIME_LIMIT} s; output so far:\n{exc.stdout}\n{exc.stderr}")
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_a_scorer_using_gbrank_in_cross_val_score_under_loky(tmp_path):
    pytest.importorskip("lightgbm")
    out = run_main(tmp_path, """
        import numpy as np
        import pandas as pd
        from sklearn.model_selection import GroupKFold, cross_val_score

        import gbrank


        def ndcg_at_5(estimator, X, y):
            sizes = gbrank.groups.qid_to_sizes(X["qid"].to_numpy())
            return gbrank.metrics.ndcg(y, estimator.predict(X), sizes, k=5)


        if __name__ == "__main__":
            data = gbrank.datasets.make_ranking(n_queries=30, docs_per_query=8, n_features=4, seed=0)
            X = pd.DataFrame(data.X, columns=["a", "b", "c", "d"]).assign(qid=data.qid)
            ranker = gbrank.Ranker(gbrank.listmle(), n_estimators=3, n_jobs=1)
            kwargs = dict(groups=data.qid, cv=GroupKFold(n_splits=2), scoring=ndcg_at_5)
            pooled = cross_val_score(ranker, X, data.y, n_jobs=2, **kwargs)
            serial = cross_val_score(ranker, X, data.y, n_jobs=1, **kwargs)
            assert np.allclose(pooled, serial), (pooled, serial)
            print("scores", *pooled)
    """)
    scores = [float(s) for s in out.split("scores", 1)[1].split()]
    assert len(scores) == 2 and all(0 < s <= 1 for s in scores)


def test_a_task_using_gbrank_on_a_dask_worker_process(tmp_path):
    pytest.importorskip("distributed")
    out = run_main(tmp_path, """
        import os

        import numpy as np
        from distributed import Client, LocalCluster

        import gbrank


        def ndcg_of(y, scores, group):
            return os.getpid(), gbrank.metrics.ndcg(np.asarray(y), np.asarray(scores), group, k=3)


        if __name__ == "__main__":
            y, scores, group = [2.0, 0.0, 1.0, 1.0, 0.0], [0.1, 0.9, 0.5, 0.3, 0.2], [3, 2]
            with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \\
                    Client(cluster) as client:
                pid, value = client.submit(ndcg_of, y, scores, group).result()
            assert pid != os.getpid()
            assert value == gbrank.metrics.ndcg(np.asarray(y), np.asarray(scores), group, k=3)
            print("ndcg", value)
    """)
    assert 0 < float(out.split("ndcg", 1)[1]) <= 1
