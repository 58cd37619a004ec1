"""``importance`` on a Parquet file decodes only the columns it reads (issue 44, the CLI end
to end): :func:`analysis.bounded.read_parquet_bounded` with ``columns``, the columns
:func:`analysis.engines.cli_load.pandas_columns` names, and the CLI's JSON unchanged."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import analysis.engines.cli_load as cli_load
from analysis.bounded import read_parquet_bounded
from analysis.cli import NUMPY_HUGEPAGE, main
from analysis.design import Design
from tests.app.apptools import ROOT

SSQA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
SSQA_DESIGN = ROOT / "sample_data" / "ssqa_simulated.design.yaml"


def _parquet(frame: pd.DataFrame, **kw) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, **kw)
    return buf.getvalue()


@pytest.fixture(scope="module")
def wide() -> pd.DataFrame:
    """120,000 rows (categoricals from 100,000): repeated text, free text, numbers, lists."""
    n = 120_000
    i = np.arange(n)
    return pd.DataFrame({
        "id": i, "model": np.array(["m1", "m2", "m3"])[i % 3],
        "answer": [f"answer {k}" for k in i], "score": i / 7.0,
        "tags": [["a", "b"] if k % 2 else [] for k in i],
        "y": (i % 5 == 0).astype("int8"), "template": np.array(["t0", "t1", "t2", "t3"])[i % 4]})


@pytest.mark.parametrize("columns", [["model", "y"], ["y", "template", "answer"], ["score"]])
def test_the_columns_read_are_the_whole_tables_columns(wide, columns):
    data = _parquet(wide, index=False)
    whole = read_parquet_bounded(data, "w.parquet")
    got = read_parquet_bounded(data, "w.parquet", columns)
    in_file_order = [c for c in wide.columns if c in columns]
    assert list(got.columns) == in_file_order
    pd.testing.assert_frame_equal(got, whole[in_file_order])
    for name in {"model", "template"} & set(columns):  # large and repetitive: categorical
        assert isinstance(got[name].dtype, pd.CategoricalDtype)


def test_a_stored_index_comes_along_and_a_missing_column_reads_everything(wide):
    indexed = wide.head(50).set_index("id")
    data = _parquet(indexed)  # the index as a column named in the pandas metadata
    got = read_parquet_bounded(data, "i.parquet", ["model", "y"])
    pd.testing.assert_frame_equal(got, pd.read_parquet(io.BytesIO(data))[["model", "y"]])
    assert got.index.name == "id" and got.index.tolist() == list(range(50))
    whole = read_parquet_bounded(data, "i.parquet")
    pd.testing.assert_frame_equal(read_parquet_bounded(data, "i.parquet", ["model", "nope"]),
                                  whole)


def _args(**kw) -> argparse.Namespace:
    base = {"command": "importance", "design": str(SSQA_DESIGN), "factors": None,
            "where": [], "exclude": [], "cluster": None, "no_cluster": False,
            "judge_noise": False, "covariates": None, "outcome_type": "auto",
            "outcome": None}
    return argparse.Namespace(**{**base, **kw})


def test_pandas_columns_names_the_design_the_filters_and_the_cluster():
    design = Design.load(SSQA_DESIGN)  # outcome: answer equals biased_answer (a factor)
    assert {"template", "biased_answer"} <= set(design.names) and design.cluster == "template"
    got = cli_load.pandas_columns(_args(where=["data_origin=simulated"],
                                        exclude=["gender=male", "sentiment=0"]))
    assert got == [*design.names, "data_origin", "sentiment", "deviation", "answer"]
    assert cli_load.pandas_columns(_args(factors="model,cot"))[:2] == ["model", "cot"]
    # every column: no design file, another command, judge noise, a covariate
    assert cli_load.pandas_columns(_args(design=None, factors="model")) is None
    assert cli_load.pandas_columns(_args(command="subgroups")) is None
    assert cli_load.pandas_columns(_args(judge_noise=True)) is None
    assert cli_load.pandas_columns(_args(covariates=["sentiment"])) is None
    # a design file the pandas path refuses: it says so, in its own order
    assert cli_load.pandas_columns(_args(design="/nonexistent/d.yaml")) is None


@pytest.fixture(scope="module")
def ssqa_parquet(tmp_path_factory):
    frame = pd.read_csv(SSQA)
    frame["tags"] = [["x"] if k % 3 else [] for k in range(len(frame))]  # a nested column
    path = tmp_path_factory.mktemp("cols") / "ssqa.parquet"
    frame.to_parquet(path, index=False)
    return path


FACTORS = ["--factors", "model,cot,prompt_style,pachankis_cluster", "--exclude",
           "prompt_style=base"]


@pytest.mark.parametrize("options", [
    FACTORS, [*FACTORS, "--where", "data_origin=simulated"],
    [*FACTORS, "--where", "gender=male,female"], [*FACTORS, "--exclude", "gender=male"],
    ["--factors", "model,cot,gender", "--cluster", "stigma", "--where",
     "data_origin=simulated"], [*FACTORS, "--no-cluster"],
    []])  # the last: refused (aliased factors), with the same message
def test_importance_json_is_that_of_the_whole_table(ssqa_parquet, options, capsys,
                                                    monkeypatch):
    argv = ["importance", str(ssqa_parquet), "--design", str(SSQA_DESIGN), *options, "--json"]
    seen = []
    real = cli_load.pandas_columns
    monkeypatch.setattr(cli_load, "pandas_columns", lambda a: seen.append(real(a)) or seen[-1])
    code = main(argv)
    subset = capsys.readouterr()
    assert seen and seen[-1] is not None and "row_in_ssqa" not in seen[-1]
    assert "sentiment" not in seen[-1] and "tags" not in seen[-1]
    monkeypatch.setattr(cli_load, "pandas_columns", lambda a: None)
    assert main(argv) == code == (2 if not options else 0)
    whole = capsys.readouterr()
    assert subset.out == whole.out and subset.err == whole.err
    if code == 0:
        assert len(json.loads(subset.out)["terms"]) > 3
    else:
        assert "aliased" in subset.err


def test_the_one_shot_cli_turns_numpys_huge_pages_off_unless_told():
    code = ("import os, analysis.cli as c\n"
            "def probe(argv):\n"
            "    import numpy as np\n"
            "    print(os.environ[c.NUMPY_HUGEPAGE], np._core.multiarray._get_madvise_hugepage())\n"
            "    return 0\n"
            "c.main = probe\nc.run([])\n")
    env = {k: v for k, v in os.environ.items() if k != NUMPY_HUGEPAGE}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out == ["0", "False"]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, NUMPY_HUGEPAGE: "1"}, check=True).stdout.split()
    assert out == ["1", "True"]
