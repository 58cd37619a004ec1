"""The analysis context stamped on exported figures and tables (analysis/context.py)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis.context import (
    CONTEXT_COLUMNS,
    STAMP_HEIGHT,
    AnalysisContext,
    stamp_figure,
    stamp_table,
)
from analysis.export import browser_available, figure_bytes

CONTEXT = AnalysisContext("ssqa_simulated.csv.gz", "answer equals biased_answer",
                          {"model": ["model_a"], "cot": [], "gender": ["f", "m"]}, True)


def test_line_names_dataset_outcome_subset_and_flag():
    ctx = CONTEXT.with_subset(CONTEXT.subset)
    assert ctx.subset == {"model": ["model_a"], "gender": ["f", "m"]}  # empty choice dropped
    assert ctx.line() == ("SIMULATED outcomes | data: ssqa_simulated.csv.gz | deviation: "
                          "answer equals biased_answer | subset: model = model_a; "
                          "gender in {f, m}")
    plain = AnalysisContext("bbq.csv")
    assert plain.line() == "data: bbq.csv | no outcome | subset: all rows"


def test_figure_stamp_is_the_last_line_of_the_x_title_or_an_annotation_in_a_grown_margin():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    fig.update_layout(margin={"b": 50}, xaxis_title="Group")
    out = stamp_figure(fig, CONTEXT)  # cartesian: below the tick labels, room made by plotly
    assert out.layout.xaxis.title.text == (
        f"Group<br><span style='font-size:10px;color:#555'>{CONTEXT.line()}</span>")
    assert out.layout.xaxis.automargin is True and not out.layout.annotations
    assert fig.layout.xaxis.title.text == "Group"  # the page's figure is untouched
    sun = go.Figure(go.Sunburst(labels=["a", "b"], parents=["", "a"], values=[2, 1]))
    sun.update_layout(margin={"b": 50})
    out = stamp_figure(sun, CONTEXT)
    assert out.layout.margin.b == 50 + STAMP_HEIGHT
    (note,) = out.layout.annotations
    assert note.text == CONTEXT.line() and note.yshift == -50
    assert not sun.layout.annotations


def test_table_stamp_adds_constant_columns_and_keeps_user_columns():
    table = pd.DataFrame({"x": [1, 2], "workbench_dataset": ["mine", "mine"]})
    out = stamp_table(table, CONTEXT.with_subset({}))
    assert list(out.columns) == ["x", *CONTEXT_COLUMNS]
    assert out["workbench_dataset"].tolist() == ["mine", "mine"]  # never overwritten
    assert out["workbench_subset"].tolist() == ["all rows", "all rows"]
    assert out["workbench_simulated"].tolist() == [True, True]
    assert list(table.columns) == ["x", "workbench_dataset"]


@pytest.mark.browser
@pytest.mark.skipif(not browser_available(), reason="needs a Chrome/Chromium for kaleido")
def test_the_stamp_is_in_the_exported_svg():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    svg = figure_bytes(stamp_figure(fig, CONTEXT), "svg").decode("utf-8")
    assert "SIMULATED outcomes | data: ssqa_simulated.csv.gz" in svg
