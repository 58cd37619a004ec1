"""``python -m analysis importance`` with the design's cluster imports only what it uses
(issue 44, the CLI's start-up; docs/performance.md "CLI importance, session 11").

Checked on what a fresh process loads (``sys.modules`` and the lazy modules' state,
printed by a small runner), never on times: the times are in
``benchmarks/bench_clustered_importance.py``. A top-level import of statsmodels, plotly,
DuckDB, scipy.stats ... added to a module the command loads makes these tests fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.design import Design, Factor, Outcome

ROOT = Path(__file__).resolve().parents[2]

#: Runs ``analysis.cli.main`` in a fresh process (``sys.argv[1]`` "eager": with nothing
#: deferred), then uses numpy.testing and prints on stderr what was loaded and whether
#: numpy's deferred submodules ran.
RUNNER = r"""
import json, sys
import analysis.lazy_numpy
if sys.argv[1] == "eager":
    analysis.lazy_numpy.DEFERRED = ()
from analysis.cli import main
code = main(sys.argv[2:])
sys.stdout.flush()
lazy = {m: type(sys.modules[m]).__name__ for m in ("numpy.testing", "numpy.f2py")
        if m in sys.modules}
loaded = sorted(sys.modules)
from numpy.testing import assert_allclose  # still usable: runs its code now
assert_allclose(1.0, 1.0)
import numpy
numpy.testing.assert_array_equal([1], [1])
sys.stderr.write("\nSTATE " + json.dumps({"modules": loaded, "lazy": lazy})
                 + "\n")
sys.exit(code)
"""

#: Packages (and modules) the importance command never needs.
NOT_NEEDED = ("statsmodels", "plotly", "duckdb", "pyspark", "kaleido", "streamlit",
              "matplotlib", "sklearn", "torch", "scipy.stats", "scipy.optimize",
              "scipy.sparse", "unittest", "numpy.f2py.crackfortran", "analysis.figures",
              "analysis.export", "analysis.safe_write", "statistics")


def run(*argv: str, mode: str = "lazy") -> tuple[int, str, str, dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", RUNNER, mode, *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    err, _, state = done.stderr.rpartition("\nSTATE ")
    return done.returncode, done.stdout, err, json.loads(state)


@pytest.fixture(scope="module")
def clustered(tmp_path_factory):
    """A Parquet table of two factors and a template cluster, with its design file."""
    rng = np.random.default_rng(44)
    n = 600
    template = rng.integers(0, 12, n)
    model = rng.integers(0, 2, n)
    style = rng.integers(0, 3, n)
    logit = -0.5 + 0.4 * model - 0.3 * style + rng.normal(0, 0.5, 12)[template]
    frame = pd.DataFrame({
        "model": np.array(["m0", "m1"])[model], "style": np.array(["s0", "s1", "s2"])[style],
        "template": [f"t{t:02d}" for t in template],
        "deviation": (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)})
    folder = tmp_path_factory.mktemp("clustered")
    path, design_path = folder / "rows.parquet", folder / "design.yaml"
    frame.to_parquet(path)
    Design((Factor("model", "model", ("m0", "m1"), "m0"),
            Factor("style", "prompt", ("s0", "s1", "s2"), "s0")),
           Outcome("deviation"), cluster="template").save(design_path)
    return str(path), str(design_path)


def test_importance_with_the_designs_cluster_loads_only_what_it_uses(clustered):
    path, design = clustered
    code, out, err, state = run("importance", path, "--design", design, "--json")
    assert code == 0, err
    payload = json.loads(out)
    terms = {t["term"]: t for t in payload["terms"]}
    assert set(terms) == {"(intercept)", "model[m1]", "style[s1]", "style[s2]"}
    # the clustered default ran: CR2 with Satterthwaite df (SciPy's t tail) over 12 values
    assert payload["settings"]["cluster"] == "template"
    assert all(0 < terms[t]["df"] < 12 for t in terms)
    modules = set(state["modules"])
    assert "scipy.special" in modules and "pandas" in modules
    loaded = {m for m in NOT_NEEDED if m in modules or any(
        x.startswith(m + ".") for x in modules)}
    assert not loaded, sorted(loaded)
    # numpy's test helpers and Fortran wrapper generator were found but never ran
    assert state["lazy"] == {"numpy.testing": "_LazyModule", "numpy.f2py": "_LazyModule"}


def test_the_deferred_modules_change_no_output(clustered):
    """The JSON is byte-identical with numpy.testing and numpy.f2py imported eagerly (as
    SciPy's import does without the deferral)."""
    path, design = clustered
    lazy = run("importance", path, "--design", design, "--json")
    eager = run("importance", path, "--design", design, "--json", mode="eager")
    assert lazy[0] == eager[0] == 0, (lazy[2], eager[2])
    assert lazy[1] == eager[1]
    assert "unittest" in eager[3]["modules"] and eager[3]["lazy"] == {
        "numpy.testing": "module", "numpy.f2py": "module"}


def test_defer_leaves_an_imported_module_alone():
    """In a process that already imported numpy.testing (this test process), nothing is
    replaced: the same module objects stay in sys.modules and on numpy."""
    import numpy.testing

    from analysis.lazy_numpy import defer_unused_numpy_modules

    before = sys.modules["numpy.testing"]
    defer_unused_numpy_modules()
    assert sys.modules["numpy.testing"] is before is numpy.testing
    assert type(before).__name__ == "module"


def test_the_one_shot_process_collects_cycles_less_often():
    """``analysis.cli.run`` (``python -m analysis``) raises the young generation's
    threshold before the command; ``main`` (in-process callers) leaves it alone."""
    script = ("import gc, sys\nfrom analysis import cli\nbefore = gc.get_threshold()[0]\n"
              "cli.main = lambda argv: print(before, gc.get_threshold()[0]) or 0\n"
              "cli.run([])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120, check=True)
    from analysis.cli import GC_THRESHOLD

    before, during = map(int, done.stdout.split())
    assert during == GC_THRESHOLD > before


def test_the_one_shot_process_lets_blas_threads_sleep():
    """``analysis.cli.run`` sets ``OPENBLAS_THREAD_TIMEOUT`` before numpy (and OpenBLAS)
    load, unless the environment sets it; ``main`` leaves the environment alone."""
    script = ("import os, sys\nfrom analysis import cli\n"
              "cli.main = lambda argv: print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'),"
              " 'numpy' in sys.modules) or 0\ncli.run([])\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120, check=True)
    from analysis.cli import BLAS_SPIN

    assert done.stdout.split() == [BLAS_SPIN, "False"]  # set before numpy is imported
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**env, "OPENBLAS_THREAD_TIMEOUT": "26"}, cwd=ROOT,
                          timeout=120, check=True)
    assert done.stdout.split() == ["26", "False"]  # the user's value wins
