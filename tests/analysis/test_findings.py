"""Top findings and the rows behind a subgroup (analysis/findings.py, issue 29 item 6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.columns import DEVIATION, LOG_DISPARITY, SUBGROUP, N
from analysis.errors import AnalysisError
from analysis.findings import rows_behind, subgroup_where, top_findings
from analysis.subgroups import subgroups


@pytest.fixture
def table():
    # model a deviates 30/40, model b 10/40; style plain 20/40, polite 20/40 (no effect)
    rows = []
    for model, k in (("a", 30), ("b", 10)):
        for i in range(40):
            rows.append({"model": model, "style": "plain" if i % 2 else "polite",
                         "prompt": f"q{i}", "answer": f"{model}{i}",
                         DEVIATION: int(i < k)})
    frame = pd.DataFrame(rows)
    for c in ("model", "style"):
        frame[c] = frame[c].astype("category")
    return frame


def test_findings_pass_every_threshold_and_come_strongest_first(table):
    full = subgroups(cell_table(table, ["model", "style"]), ["model", "style"], max_level=1)
    found = top_findings(full, min_abs_ld=0.5, max_p_adjusted=0.05, min_n=30)
    # by hand: LD(model=a) = logit(30/40) - logit(10/40) = 2 ln 3 = 2.197; style: LD 0
    assert list(found[SUBGROUP]) == ["model = a", "model = b"]
    assert found[LOG_DISPARITY].iloc[0] == pytest.approx(2 * np.log(3))
    assert top_findings(full, min_abs_ld=0.5, min_n=41).empty  # n = 40 each
    by_rate = top_findings(full, max_p_adjusted=1.0, measure="rate")
    assert by_rate[SUBGROUP].iloc[0] == "model = a" and by_rate[SUBGROUP].iloc[-1] == \
        "model = b"
    with pytest.raises(AnalysisError, match="Sort findings"):
        top_findings(full, measure="size")


def test_rows_behind_a_subgroup_are_its_responses_prompt_first(table):
    full = subgroups(cell_table(table, ["model", "style"]), ["model", "style"], max_level=2)
    row = full[full[SUBGROUP] == "model = a, style = plain"].iloc[0]
    fixed = subgroup_where(row, ["model", "style"])
    assert fixed == {"model": ["a"], "style": ["plain"]}
    rows = rows_behind(table, None, fixed)
    assert len(rows) == int(row[N]) == 20
    assert list(rows.columns[:3]) == ["prompt", "answer", DEVIATION]
    assert set(rows["model"]) == {"a"} and set(rows["style"]) == {"plain"}
    # within a subset: the subset's other values are kept out
    inside = rows_behind(table, {"style": ["polite"]}, {"model": ["a"]})
    assert len(inside) == 20 and set(inside["style"]) == {"polite"}


def test_the_report_leads_its_subgroups_section_with_the_top_findings(table):
    from analysis import report as R
    from analysis.design import Design

    design = Design.from_dict({
        "factors": [{"name": "model", "kind": "model", "values": ["a", "b"]},
                    {"name": "style", "kind": "prompt", "values": ["plain", "polite"]}],
        "outcome": {"column": DEVIATION, "mapping": "binary"}})
    sec = R.build_section("subgroups", table, design,
                          {"factors": ["model", "style"], "level": 1, "min_n": 30})
    (note,) = [n for n in sec.notes if n.startswith("Top findings")]
    assert note.startswith("Top findings (|LD| >= 0.1, BH-adjusted p <= 0.05, n >= 30), "
                           "strongest first: model = a: rate 0.750 (n 40)")
    found = dict(sec.tables)["subgroups_top_findings"]
    assert list(found[SUBGROUP]) == ["model = a", "model = b"]
