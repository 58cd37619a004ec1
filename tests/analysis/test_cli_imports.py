"""The CLI imports only what a command uses (issue #32 item 1; docs/performance.md).

Checked on the modules a fresh process loads (``sys.modules`` printed by a small runner),
never on times: the times are in ``benchmarks/bench_cli.py``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import analysis
from analysis.cli import build_parser, command_in, jsonable, write_json
from analysis.commands import MODULES, SUMMARIES
from tests.blocked_imports import BLOCK

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "scipy", "streamlit", "plotly", "pyarrow", "statsmodels")

#: Runs the CLI in a fresh process, optionally refusing to import some packages (an extra
#: that is not installed), then prints the top-level packages it loaded as JSON on stderr.
RUNNER = BLOCK + r"""
from analysis.cli import main
try:
    code = main(sys.argv[2:])
finally:
    sys.stderr.write("\nMODULES " + json.dumps(sorted(sys.modules)) + "\n")
sys.exit(code)
"""


def run_cli(*argv: str, block: str = "") -> tuple[int, str, str, set[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", RUNNER, block, *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    err, _, mods = done.stderr.rpartition("\nMODULES ")
    return done.returncode, done.stdout, err, set(json.loads(mods))


def top_level(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_no_heavy_package():
    code, out, _, modules = run_cli("--help")
    assert code == 0
    assert top_level(modules).isdisjoint(HEAVY), sorted(top_level(modules) & set(HEAVY))
    for command, summary in SUMMARIES.values():  # every command listed with its help
        assert command in out
        assert summary.split()[0] in out


def test_import_analysis_is_lazy_in_a_fresh_process():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = ("import sys, analysis; print(sorted({m.split('.')[0] for m in sys.modules}));"
              "print(analysis.load_results.__module__, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True, timeout=120).stdout.splitlines()
    assert "pandas" not in out[0] and "numpy" not in out[0]
    assert out[1] == "analysis.io True"  # the attribute imports its module on first use


def test_lazy_attributes_are_the_modules_objects():
    from analysis import Design, coverage  # a lazy name and a submodule, as notebooks do
    from analysis.design import Design as DesignDirect
    from analysis.io import load_results

    assert Design is DesignDirect and analysis.load_results is load_results
    assert coverage.__name__ == "analysis.coverage"
    assert set(analysis.__all__) <= set(dir(analysis))
    for name in analysis.__all__:
        assert getattr(analysis, name) is getattr(
            importlib.import_module(analysis._LAZY[name]), name)
    with pytest.raises(AttributeError, match="no_such_name"):
        analysis.no_such_name  # noqa: B018


def test_summaries_match_each_commands_register():
    """The table --help is made from says what each command's own parser says."""
    import pkgutil

    import analysis.commands as commands

    on_disk = {m.name for m in pkgutil.iter_modules(commands.__path__)  # its register
               if "\ndef register(" in (ROOT / "analysis/commands" / f"{m.name}.py").read_text()}
    assert set(SUMMARIES) == set(MODULES) == on_disk  # every command module has its row
    full = build_parser()  # every module registered in full
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert helps == dict(SUMMARIES.values())
    assert list(sub.choices) == [SUMMARIES[m][0] for m in MODULES]  # same order


def test_command_in():
    assert command_in(["--help"]) == ""
    assert command_in(["subgroups", "f.csv", "--level", "2"]) == "subgroups"
    assert command_in(["-h", "cells"]) == "cells"
    assert command_in(["--", "cells"]) == ""


def test_a_command_imports_only_what_it_uses(tmp_path):
    """``subgroups`` with Wald p-values: pandas and scipy.special, not scipy.stats
    (~2 s to import), statsmodels, plotly or streamlit."""
    rng = np.random.default_rng(1)
    path = tmp_path / "r.csv"
    pd.DataFrame({"model": rng.choice(["a", "b"], 400), "prompt": rng.choice(["x", "y"], 400),
                  "y": rng.integers(0, 2, 400)}).to_csv(path, index=False)
    code, out, err, modules = run_cli("subgroups", str(path), "--factors", "model,prompt",
                                      "--outcome", "y", "--test", "wald", "--json")
    assert code == 0, err
    assert len(json.loads(out)["subgroups"]) == 4 + 4  # levels 1 and 2
    assert "scipy.stats" not in modules and "pandas" in modules
    assert top_level(modules).isdisjoint({"statsmodels", "plotly", "streamlit"})
    # a bad option of the chosen command: usage and exit 2, as before
    code, _, err, _ = run_cli("subgroups", str(path), "--level", "0")
    assert code == 2 and "must be at least 1" in err
    code, _, err, _ = run_cli("no-such-command")
    assert code == 2 and "invalid choice" in err and "subgroups" in err


def test_missing_extra_gives_the_install_message(tmp_path):
    path = tmp_path / "r.csv"
    pd.DataFrame({"model": ["a", "b"] * 5, "y": [0, 1] * 5}).to_csv(path, index=False)
    code, _, err, _ = run_cli("cells", str(path), "--factors", "model", "--outcome", "y",
                              "--engine", "spark", block="pyspark")
    assert code == 2
    assert "pip install 'bias-workbench[spark]'" in err and "Traceback" not in err


@pytest.mark.parametrize("payload", [
    {"rows": pd.DataFrame({
        "f": [1.5, np.nan, np.inf, -0.0, 1e-300, 0.1 + 0.2],
        "i": np.arange(6, dtype=np.int64) - 3,
        "u": np.arange(6, dtype=np.uint8),
        "b": [True, False] * 3,
        "s": ["é", None, "a\"b", "\n", "x", "ü"],
        "cat": pd.Categorical(["l1", "l2", None, "l1", "l2", "l1"]),
        "nullable": pd.array([1, None, 3, 4, None, 6], dtype="Int64"),
        "lists": [["a", "b"], [], None, [1, [2.5, np.nan]], {"k": np.float32(0.5)}, "z"],
        "mixed": [np.int64(3), np.float64(np.nan), np.bool_(True), "t", None, 2.0],
    }), "settings": {"factors": ["a", "b"], "level": np.int64(3), "nan": float("nan"),
                     "nested": {"empty": {}, "list": [], "t": (1, 2)}, "x": None}},
    {"empty": pd.DataFrame({"a": []}), "no_columns": pd.DataFrame(index=range(2))},
    [pd.DataFrame({"a": [1.0]}), 3, "text"],
    pd.DataFrame({"a": [math.pi, -1e20]}),
    "plain",
])
def test_write_json_writes_what_json_dumps_wrote(payload):
    """The one-pass writer prints the same characters as json.dumps(jsonable(...))."""
    import io

    stream = io.StringIO()
    write_json(payload, stream)
    assert stream.getvalue() == json.dumps(jsonable(payload), indent=2, ensure_ascii=False)


def test_no_export_browser_for_a_command_that_fails_on_its_input(tmp_path):
    """``--figure x.png`` warms the exporter only once the input has loaded: a bad input
    exits 2 at once, without starting Chrome (kaleido not even imported)."""
    code, _, err, modules = run_cli("subgroups", str(tmp_path / "missing.csv"), "--factors",
                                    "a", "--outcome", "y", "--figure", str(tmp_path / "f.png"))
    assert code == 2 and "no such file" in err
    assert "kaleido" not in top_level(modules) and "plotly" not in top_level(modules)
