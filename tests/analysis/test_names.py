"""Factors named like output columns: renamed once, numbers unchanged, CLI exits cleanly."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.cli import main
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.names import ColumnClashError, clash_free, rename_note
from analysis.subgroups import subgroups
from tests.analysis.cli_helpers import deviation_rows, run_json, write_csv

#: factor names that are output column names
CLASHING = ["subgroup", "level", "n", "deviations", "deviation"]


def clashing_rows() -> list[dict]:
    """subgroup x level cells: (s1,l1) 2/10, (s1,l2) 10/20, (s2,l1) 3/30, (s2,l2) 20/40,
    plus constant factors n, deviations and deviation (one value each)."""
    cells = [("s1", "l1", 10, 2), ("s1", "l2", 20, 10), ("s2", "l1", 30, 3),
             ("s2", "l2", 40, 20)]
    return deviation_rows(cells, ["subgroup", "level"], "biased", n="k1", deviations="d1",
                          deviation="x1")


def test_clash_free_renames_factors_outcome_and_polarity():
    frame = pd.DataFrame(clashing_rows())
    design = Design(tuple(make_factor(frame, f) for f in CLASHING), Outcome("biased"),
                    polarity={"n": "harmful"})
    renamed_frame, renamed, mapping = clash_free(frame, design)
    assert mapping == {f: f + "_factor" for f in CLASHING}
    assert renamed.names == [f + "_factor" for f in CLASHING]
    assert renamed.polarity == (("n_factor", "harmful"),)
    assert list(renamed_frame.columns) == [*mapping.values(), "biased"]
    assert "'subgroup' as 'subgroup_factor'" in rename_note(mapping)
    # a name already taken gets another underscore; nothing to rename: inputs returned
    taken = frame.assign(n_factor=1)
    _, _, m2 = clash_free(taken, Design((make_factor(taken, "n"),)))
    assert m2 == {"n": "n_factor_"}
    same_frame, same_design, none = clash_free(frame, Design((make_factor(frame, "level"),
                                                              )).subset([]))
    assert none == {} and same_frame is frame


def test_subgroup_numbers_unchanged_after_the_rename():
    frame = pd.DataFrame(clashing_rows())
    design = Design(tuple(make_factor(frame, f) for f in ["subgroup", "level"]),
                    Outcome("biased"))
    frame2, design2, _ = clash_free(frame, design)
    results = apply_design(frame2, design2)
    table = subgroups(cell_table(results, design2.names), design2.names).set_index("subgroup")
    s1 = table.loc["subgroup_factor = s1"]
    assert (s1["n"], s1["deviations"]) == (30, 12)
    assert s1["log_disparity"] == pytest.approx(math.log(12 * 47 / (18 * 23)))
    # without the rename the API refuses with a clear, typed error (no wrong table)
    plain = apply_design(frame, design)
    with pytest.raises(ColumnClashError, match="'level'"):
        subgroups(cell_table(plain, ["level"]), ["level"])
    with pytest.raises(ColumnClashError, match="'n'"):
        cell_table(plain.assign(n="a"), ["n"])


@pytest.fixture
def clash_csv(tmp_path):
    return write_csv(tmp_path, clashing_rows())


def test_cli_subgroups_with_clashing_factor_names(clash_csv, capsys):
    assert main(["subgroups", str(clash_csv), "--outcome", "biased", "--factors",
                 "subgroup,level,n,deviations,deviation", "--level", "1", "--where",
                 "n=k1", "--json"]) == 0
    captured = capsys.readouterr()
    assert "note: Renamed" in captured.err and "'deviation' as 'deviation_factor'" in (
        captured.err)
    import json

    payload = json.loads(captured.out)
    rows = {(r["subgroup_factor"], r["level_factor"]): r for r in payload["subgroups"]}
    assert rows[("s1", None)]["n"] == 30 and rows[("s1", None)]["deviations"] == 12
    assert rows[(None, "l2")]["n"] == 60
    assert payload["settings"]["renamed"]["level"] == "level_factor"
    # the constant factors hold every row: one distinct subgroup, the others named
    whole = [r for r in payload["subgroups"] if r["n"] == 100]
    assert len(whole) == 1 and whole[0]["same_rows_as"]


def test_cli_ecdf_importance_coverage_with_clashing_names(clash_csv, capsys):
    ecdf = run_json(capsys, "ecdf", clash_csv, "--outcome", "biased", "--factors", "level",
                    "--by", "subgroup")
    assert ecdf["by"] == "subgroup_factor"
    # s1: rates 0.2, 0.5; s2: 0.1, 0.5
    assert ecdf["groups"]["s1"]["deviation_metric"] == pytest.approx(0.35)
    assert ecdf["groups"]["s2"]["deviation_metric"] == pytest.approx(0.3)
    imp = run_json(capsys, "importance", clash_csv, "--outcome", "biased", "--factors",
                   "subgroup,level", "--reference", "subgroup=s1", "--reference", "level=l1")
    terms = {t["term"]: t for t in imp["terms"]}
    assert set(terms) == {"(intercept)", "subgroup_factor[s2]", "level_factor[l2]"}
    assert imp["settings"]["n_rows"] == 100
    cov = run_json(capsys, "coverage", clash_csv, "--factors", "subgroup,level,n",
                   "--where", "level=l1,l2")
    assert cov["factors"] == ["subgroup_factor", "level_factor", "n_factor"]
    assert cov["coverage_percentage"] == pytest.approx(1.0)
    assert {c["subgroup_factor"] for c in cov["thinnest_cells"]} == {"s1", "s2"}
