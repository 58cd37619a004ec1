"""Labels from data shown as text: Markdown escaping and plotly figure labels."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.coverage import marginal_counts
from analysis.design import apply_design, suggest_design
from analysis.figures.coverage import marginal_bar
from analysis.figures.subgroups import sunburst_figure
from analysis.safe_text import escape_figure, escape_markdown, sanitise_markup
from analysis.subgroups import subgroups

IMAGE = "![px](http://127.0.0.1:9/x.png)"
LINK = '<a href="http://127.0.0.1:9/">click</a>'


def render(markdown: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").render(markdown)


@pytest.mark.parametrize("text", [IMAGE, "[click me](http://127.0.0.1:9/)", "<img src=x>",
                                  "**bold** _it_ `code` # h", "line\n- item\n> quote",
                                  "$x^2$ :red[red]", "1. one\n2) two", "a@b.org www.x.org"])
def test_escaped_markdown_renders_as_the_text(text):
    out = render(escape_markdown(text))
    assert "<img" not in out and "<a " not in out and "<strong>" not in out
    assert "<h1>" not in out and "<li>" not in out and "<code>" not in out and "<ol" not in out
    # what is shown is the text itself (entities aside)
    shown = out.replace("<p>", "").replace("</p>", "").replace("<br />", "").strip()
    import html
    assert html.unescape(shown).replace("\n", "") == text.replace("\n", "")


def test_sanitise_markup_keeps_our_tags_only():
    assert sanitise_markup(f"Rate of {LINK}<br><sup>n = 3</sup>") == (
        'Rate of &lt;a href="http://127.0.0.1:9/">click&lt;/a><br><sup>n = 3</sup>')
    assert sanitise_markup("a > b & c") == "a > b & c"


def test_figure_labels_are_escaped_once():
    frame = pd.DataFrame({LINK: ["<b>x</b>", "=1", "<img src=y>", "=1"] * 5,
                          "biased": [0, 1] * 10})
    design = suggest_design(frame)
    results = apply_design(frame, design)
    cells = cell_table(results, design.names)
    fig = sunburst_figure(subgroups(cells, design.names, max_level=1),
                          design.names)
    trace = fig.data[0]
    assert all("<" not in str(v) for key in ("labels", "ids", "parents")
               for v in trace[key]), trace
    assert "&lt;img src=y&gt;" in trace.labels
    assert "<a " not in fig.layout.title.text
    again = escape_figure(fig)
    assert "&lt;img src=y&gt;" in again.data[0].labels  # not &amp;lt; (idempotent)
    bar = marginal_bar(marginal_counts(cells, design), LINK)
    spec = bar.to_plotly_json()
    assert "<a " not in str(spec["data"]) and "<img" not in str(spec["data"])
    assert "<a " not in bar.layout.xaxis.title.text
    assert "<a " not in bar.data[0].hovertemplate and "<extra></extra>" in bar.data[0].hovertemplate
