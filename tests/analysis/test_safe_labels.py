"""Labels from uploaded data never render as HTML or Markdown (issue 12 item 4): every
figure builder of analysis/figures (titles, axis titles, tick labels, legend entries,
hover text, facet titles) and the report HTML, with factor names, values, a numeric
column and answer categories that are HTML and Markdown."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis import report as R
from analysis.design import Design, apply_design
from analysis.safe_text import escape_html_label

EVIL = "<b>x</b><img src=x onerror=alert(1)>"
BOLD = "**bold**"
CATEGORY = "<i>y</i><img src=y>"
FEATURE = "score " + EVIL


@pytest.fixture(scope="module")
def evil():
    rng = np.random.default_rng(0)
    rows = []
    for model in ("m1", EVIL):
        for g in ("alpha", EVIL, BOLD):
            for style in ("plain", BOLD):
                for i in range(20):
                    rows.append({"model": model, EVIL: g, BOLD: style,
                                 "item_id": f"{g}|{style}|{i}",
                                 "dev": int(rng.random() < 0.3 + 0.2 * (g == EVIL)),
                                 FEATURE: float(rng.normal()),
                                 "answer_type": [CATEGORY, "anti", "**b2**"][i % 3]})
    design = Design.from_dict({"version": 1, "name": "evil", "factors": [
        {"name": EVIL, "kind": "domain", "reference": "alpha", "values": ["alpha", EVIL, BOLD]},
        {"name": BOLD, "kind": "prompt", "reference": "plain", "values": ["plain", BOLD]},
        {"name": "model", "kind": "model", "reference": "m1", "values": ["m1", EVIL]}],
        "outcome": {"column": "dev", "mapping": "binary"}})
    results = apply_design(pd.DataFrame(rows), design)
    report = R.build_report(results, design, [
        "coverage", ("subgroups", {"factors": [EVIL, BOLD], "level": 2}),
        ("ecdf", {"ci": "bootstrap", "n_boot": 20}),
        ("importance", {"factors": [EVIL, BOLD, "model"]}),
        ("disparity", {"feature": FEATURE, "by": [EVIL], "n_resamples": 99}),
        ("index", {"ci": "bootstrap", "n_boot": 20}),
        ("cohorts", {"category": "answer_type", "cohort": "model", "by": [EVIL]}),
        ("compare", {"by": "model", "factors": [EVIL, BOLD], "n_resamples": 50})],
        source=EVIL)
    return results, design, report


def _strings(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{path}[{i}]")
    elif isinstance(obj, str):
        yield path, obj


def test_every_figure_builder_keeps_labels_as_text(evil):
    from analysis.disparity import grouped_values
    from analysis.figures.disparity import box_figure
    from analysis.figures.distribution import distribution_figure

    results, design, report = evil
    assert not [s.name for s in report.sections if s.skipped]
    figures = [(f"{s.name}:{n}", f) for s in report.sections for n, f in s.figures]
    figures.append(("box", box_figure(grouped_values(results, FEATURE, [EVIL]),
                                      feature=FEATURE)))
    from analysis import distribution as dm

    dist = dm.category_distribution(results, "answer_type", "model", by=[EVIL])
    figures.append(("lines", distribution_figure(dist, "answer_type", "model", by=[EVIL],
                                                 kind="line")))
    # every builder of analysis/figures is exercised
    built = {name.split(":")[0] for name, _ in figures}
    assert {"coverage", "subgroups", "ecdf", "importance", "disparity", "index", "cohorts",
            "compare", "box", "lines"} <= built
    assert len(figures) >= 11
    for name, fig in figures:
        strings = list(_strings(json.loads(fig.to_json())))
        leaks = [(p, s) for p, s in strings if "<b>x" in s or "<img" in s or "<i>y" in s]
        assert not leaks, (name, leaks[:3])
        # what plotly shows is the label itself: &lt; is displayed as <
        text = " ".join(s for _, s in strings)
        assert "**bold**" in text or name.startswith(("box", "disparity", "ecdf", "index")), name
    texts = {name: " ".join(s for _, s in _strings(json.loads(f.to_json())))
             for name, f in figures}
    escaped = escape_html_label(EVIL)
    # titles, axis titles, hover text, legend entries, tick labels, facet titles
    cov = next(f for n, f in figures if n.startswith("coverage:coverage_") and "_**bold**" in n)
    # the title names what the cells count (items here: the table has an item id)
    assert cov.layout.title.text.startswith(f"Items per {escaped} x **bold**")
    assert cov.layout.yaxis.title.text == escaped
    assert cov.data[0].hovertemplate.startswith(f"{escaped}=%{{y}}<br>**bold**=%{{x}}<br>")
    ecdf = next(f for n, f in figures if n == "ecdf:ecdf")
    assert any(t.name.startswith(escaped) for t in ecdf.data)  # legend entry
    sun = next(f for n, f in figures if n.startswith("subgroups"))
    assert f"{escaped} = {escaped}<br>n = " in sun.data[0].hovertemplate[1]
    assert escaped in texts["cohorts:cohorts_stacked"]  # facet title (annotation)
    assert escape_html_label(CATEGORY) in texts["cohorts:cohorts_stacked"]  # legend entry
    dumbbell = next(f for n, f in figures if n.startswith("compare:compare_m1_"))
    assert f"{escaped} = {escaped}" in " ".join(map(str, dumbbell.data[-1].y))  # ticks
    assert dumbbell.layout.title.text.startswith(f"m1 vs {escaped}: ")
    imp = next(f for n, f in figures if n.startswith("importance"))
    assert any(f"{escaped} = {escaped}" in str(y) for t in imp.data for y in t.y)  # ticks


def test_report_html_shows_labels_as_text(evil):
    _, _, report = evil
    html_text = R.report_html(report)
    for raw in (EVIL, CATEGORY, "<b>x</b>", "<img src=x", "<i>y</i>"):
        assert raw not in html_text
    assert "<strong>" not in html_text and "<em>" not in html_text
    assert "**bold**" in html_text  # Markdown is not rendered: the text is shown as it is
    assert "&lt;b&gt;x&lt;/b&gt;&lt;img src=x onerror=alert(1)&gt;" in html_text
    # in the figures' JSON the entities are written with \u0026 (no '<' at all)
    assert "\\u0026lt;b\\u0026gt;x" in html_text


def test_exported_figures_stamp_their_context_as_text(evil):
    """The context line under every exported figure quotes the file name and the subset
    values; it was written as plotly markup (a file named <a href=...> became a link)."""
    from analysis.context import AnalysisContext, stamp_figure

    _, _, report = evil
    fig = report.sections[0].figures[0][1]
    context = AnalysisContext(f'<a href="http://127.0.0.1:9/">{EVIL}</a>.csv', "dev = 1",
                              {EVIL: [BOLD, EVIL]})
    stamped = stamp_figure(fig, context)
    line = escape_html_label(context.line())
    note = (stamped.layout.annotations[-1].text if stamped.layout.annotations and
            stamped.layout.annotations[-1].text == line else
            stamped.layout.xaxis.title.text.rsplit("'>", 1)[-1].removesuffix("</span>"))
    assert "<" not in note and note == line
    assert "&lt;a href=" in note and "**bold**" in note
