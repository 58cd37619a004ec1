"""Real-browser journey, part two: every analysis page draws its main figure as the analysis
API says, reacts to one widget, and exports an image and the report.

For each page the test reads the page's settings from the DOM (each widget's ``key=`` gives
its container the class ``st-key-<key>``), recomputes the figure in this process with
``analysis`` on the same bundled sample and design, and compares what plotly drew in the
browser (``el._fullData`` of the ``.js-plotly-plot`` div: one entry per trace, arrays
decoded) with the recomputed figure: the number of traces and each trace's number of
points. Then it changes one widget and compares again. ``UPDATE_SCREENSHOT=1`` also saves
``docs/screenshot.png`` (the Subgroups sunburst on the SocialStigmaQA sample).
"""

from __future__ import annotations

import html
import os
import re
import time
from pathlib import Path

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, load_sample, open_select, settle, visit

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "screenshot.png"
VIEWPORT = {"width": 1440, "height": 1000}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]

#: Per trace, how many points plotly drew (labels for a sunburst, else x, else y).
DRAWN = """el => (el._fullData || []).map(t => {
    const v = t.labels || t.x || t.y; return v ? v.length : 0; })"""

YTITLE = "el => el._fullLayout && el._fullLayout.yaxis.title.text"

#: The answer first (docs/architecture.md): on these pages the main figure starts above
#: the fold of a 1440 x 1000 window, every scrolled element back at its top.
ANSWER_FIRST = ("Coverage", "Subgroups", "eCDF", "Factor importance", "Cohorts")
FIRST_PLOT_TOP = """() => {
    for (const e of document.querySelectorAll('*')) if (e.scrollTop) e.scrollTop = 0;
    const plot = document.querySelector('.js-plotly-plot');
    return plot ? plot.getBoundingClientRect().top : null; }"""


def _points(fig) -> list[int]:
    """:data:`DRAWN` for a figure built in this process."""
    out = []
    for t in fig.data:
        v = next((getattr(t, a, None) for a in ("labels", "x", "y")
                  if getattr(t, a, None) is not None), None)
        out.append(0 if v is None else len(v))
    return out


def _drawn(page, chart_key: str, expected=None, timeout: float = 30, js: str = DRAWN):
    """What plotly drew in the chart ``chart_key`` (``js`` of its div); waits (up to
    ``timeout`` s) until it matches ``expected`` (a rerun may still be redrawing), then
    returns the last reading."""
    plots = page.locator(f".st-key-{chart_key} .js-plotly-plot")
    plots.last.wait_for(timeout=60_000)
    deadline = time.monotonic() + timeout
    while True:  # while plotly redraws, the old div may still be there: wait for one
        one = plots.count() == 1
        seen = plots.last.evaluate(js)
        if one and ((seen and expected is None) or seen == expected):
            return seen
        if time.monotonic() > deadline:
            return seen
        page.wait_for_timeout(200)


def _value(page, key: str) -> str:
    return page.locator(f'.st-key-{key} input[role="combobox"]').input_value()


def _tags(page, key: str) -> list[str]:
    """The values chosen in the multiselect ``key`` (every page starts with one or more)."""
    page.locator(f".st-key-{key} [data-tag]").first.wait_for(timeout=30_000)
    return [t.get_attribute("aria-label") or "" for t in
            page.locator(f".st-key-{key} [data-tag]").all()]


def _choose(page, key: str, option: str) -> None:
    """Pick ``option`` in the selectbox ``key`` and wait for the rerun."""
    open_select(page, key, option).click()
    settle(page)
    assert _value(page, key) == option


def _click(page, key: str, text: str | None = None) -> None:
    """Click the widget ``key`` (a button, a checkbox, or a radio option ``text``)."""
    box = page.locator(f".st-key-{key}")
    (box.get_by_text(text, exact=True) if text else box.locator("button, label")).first.click()
    settle(page)


def _no_exception(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"{where}: exception box"
    assert page.get_by_text("stopped on an unexpected error").count() == 0, where


# ------------------------------------------------------------ expected, from analysis/

class Expected:
    """The bundled BBQ sample with its design applied, and each page's figure from the
    analysis API for the settings read off the page."""

    def __init__(self) -> None:
        from analysis.design import Design, apply_design
        from analysis.io import load_results

        path = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"
        self.design = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
        self.results = apply_design(load_results(path.read_bytes(), name=path.name),
                                    self.design)

    def coverage(self, factors, row, col):
        from analysis import coverage as cov
        from analysis.figures.coverage import coverage_heatmap

        cells = cov.coverage_cells(self.results, self.design, factors, unit=cov.PROMPTS)
        pairs = cov.pair_counts(cells, self.design, row, col, where={}, within=factors)
        return coverage_heatmap(pairs, row, col)

    def subgroups(self, factors, level):
        from analysis.cells import cell_table
        from analysis.figures.subgroups import sunburst_figure
        from analysis.subgroups import subgroups

        table = subgroups(cell_table(self.results, factors), factors, max_level=level)
        return sunburst_figure(table, factors)

    def ecdf(self, by, factors):
        from analysis.cells import cell_table
        from analysis.ecdf import CUTOFF, ecdf_summary, ks_tests, subgroup_rates
        from analysis.figures.ecdf import ecdf_figure

        rates = subgroup_rates(cell_table(self.results, [by, *factors]), factors, by=by,
                               level=len(factors))
        summary = ecdf_summary(rates, by=by, ideal=0.0, cutoff=CUTOFF)
        fig = ecdf_figure(rates, summary, by=by, ideal=0.0, cutoff=CUTOFF,
                          ks=ks_tests(rates, by=by))
        return fig, int(rates[by].nunique())  # one curve per value of `by`

    def importance(self, factors, intercept):
        from analysis.cells import cell_table
        from analysis.figures.importance import importance_figure
        from analysis.importance import factor_importance

        cluster = self.design.cluster  # the page's default: the design's cluster
        keys = [*factors, *([cluster] if cluster in self.results.columns
                            and cluster not in factors else [])]
        fit = factor_importance(cell_table(self.results, keys), self.design,
                                factors=factors,
                                references={f: self.design.factor(f).reference
                                            for f in factors})
        return importance_figure(fit.terms, include_intercept=intercept)

    def disparity(self, feature, by, statistic):
        from analysis.disparity import disparity_report
        from analysis.figures.disparity import statistic_figure

        report = disparity_report(self.results, feature, by, statistic=statistic,
                                  n_resamples=0)
        return statistic_figure(report.summary, statistic, feature=feature)

    def index(self, dimensions, model):
        from analysis.figures.index import index_figure
        from analysis.index import Dimension, bias_index

        index = bias_index(self.results, self.design, model=model,
                           dimensions=[Dimension(f) for f in dimensions])
        return index_figure(index.components, index.totals)

    def cohorts(self, category, cohort, by):
        from analysis.distribution import category_distribution
        from analysis.figures.distribution import distribution_figure

        dist = category_distribution(self.results, category, cohort, by=by)
        return distribution_figure(dist, category, cohort, by=by, kind="bar")


# ------------------------------------------------------------ one check per page

def _coverage(page, exp: Expected) -> str:
    factors = _tags(page, "coverage_factors")
    row, col = _value(page, "coverage_row"), _value(page, "coverage_col")
    assert _drawn(page, "coverage_heatmap_chart", want := _points(
        exp.coverage(factors, row, col))) == want
    new = next(f for f in ("input_format", *factors) if f not in (row, col))
    _choose(page, "coverage_col", new)
    want = _points(exp.coverage(factors, row, new))
    assert _drawn(page, "coverage_heatmap_chart", want) == want
    return f"columns {col} -> {new}"


def _subgroups(page, exp: Expected) -> str:
    factors = _tags(page, "subgroups_factors")
    want = _points(exp.subgroups(factors, 2))
    assert _drawn(page, "subgroups_sunburst_chart", want) == want
    _click(page, "subgroups_level", "1")
    one = _points(exp.subgroups(factors, 1))
    assert one != want and _drawn(page, "subgroups_sunburst_chart", one) == one
    # a click on a sector is a selection (st.plotly_chart on_select): its responses open
    page.locator(".st-key-subgroups_sunburst_chart path.surface").nth(1).click(force=True)
    settle(page)
    shown = page.get_by_text(re.compile(r"^\S+ = .+: [\d,]+ responses$"))
    shown.first.wait_for(timeout=30_000)
    factor, value, n = re.match(r"^(\S+) = (.+): ([\d,]+) responses$",
                                shown.first.inner_text().strip()).groups()
    assert factor == factors[0]
    assert int(n.replace(",", "")) == int((exp.results[factor].astype(str) == value).sum()) > 0
    return f"level 2 -> 1: {want} -> {one} sectors; sector {value}: {n} responses"


def _ecdf(page, exp: Expected) -> str:
    by, factors = _value(page, "ecdf_by"), _tags(page, "ecdf_factors")
    fig, curves = exp.ecdf(by, factors)
    assert len(fig.data) == curves  # one trace per curve, nothing else
    assert _drawn(page, "ecdf_chart", _points(fig)) == _points(fig)
    _choose(page, "ecdf_by", "input_format")
    fig, curves = exp.ecdf("input_format", _tags(page, "ecdf_factors"))
    assert curves == 3 and _drawn(page, "ecdf_chart", _points(fig)) == _points(fig)
    return f"curves by {by} -> input_format: {curves} traces"


def _importance(page, exp: Expected) -> str:
    factors = _tags(page, "importance_factors")
    want = _points(exp.importance(factors, False))
    assert _drawn(page, "importance_chart", want) == want
    _click(page, "importance_intercept")
    with_intercept = _points(exp.importance(factors, True))
    assert with_intercept != want
    assert _drawn(page, "importance_chart", with_intercept) == with_intercept
    return f"intercept on: {want} -> {with_intercept}"


def _disparity(page, exp: Expected) -> str:
    feature, by = _value(page, "disparity_feature"), _tags(page, "disparity_by")
    fig = exp.disparity(feature, by, "mean")
    assert _drawn(page, "disparity_stat_chart", _points(fig)) == _points(fig)
    _choose(page, "disparity_statistic", "median")
    fig = exp.disparity(feature, by, "median")
    assert _drawn(page, "disparity_stat_chart", _points(fig)) == _points(fig)
    title = fig.layout.yaxis.title.text
    assert "median" in title and _drawn(page, "disparity_stat_chart", title,
                                        js=YTITLE) == title
    return f"statistic mean -> median (y axis {title!r})"


def _index(page, exp: Expected) -> str:
    dims = _tags(page, "index_dimensions")
    want = _points(exp.index(dims, None))
    assert _drawn(page, "index_chart", want) == want
    _choose(page, "index_model", "input_format")
    per_format = _points(exp.index(dims, "input_format"))
    assert per_format != want and _drawn(page, "index_chart", per_format) == per_format
    return f"model (all rows) -> input_format: bars {want} -> {per_format}"


def _cohorts(page, exp: Expected) -> str:
    category, cohort = _value(page, "cohorts_category"), _value(page, "cohorts_cohort")
    by = _tags(page, "cohorts_by")
    want = _points(exp.cohorts(category, cohort, by))
    assert _drawn(page, "cohorts_bar_chart", want) == want
    _choose(page, "cohorts_cohort", "context_condition")
    new = _points(exp.cohorts(category, "context_condition", by))
    assert new != want and _drawn(page, "cohorts_bar_chart", new) == new
    return f"cohort {cohort} -> context_condition"


PAGES = {"Coverage": _coverage, "Subgroups": _subgroups, "eCDF": _ecdf,
         "Factor importance": _importance, "Disparity": _disparity, "Bias index": _index,
         "Cohorts": _cohorts}
#: Sections added to the report from their pages, after the widget change.
REPORTED = {"Subgroups": "subgroups", "eCDF": "ecdf", "Cohorts": "cohorts"}


def test_figures_widgets_image_and_report_downloads(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    exp = Expected()
    changes: dict[str, str] = {}
    tops: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport=VIEWPORT, accept_downloads=True)
            page.goto(app_url, wait_until="domcontentloaded")
            page.get_by_text("35,868").first.wait_for(timeout=60_000)  # the BBQ sample
            for title, check in PAGES.items():
                assert visit(page, title) == []
                changes[title] = check(page, exp)
                _no_exception(page, title)
                if title in ANSWER_FIRST:
                    tops[title] = page.evaluate(FIRST_PLOT_TOP)
                if title in REPORTED:
                    _click(page, f"report_add_{REPORTED[title]}")
                if title == "eCDF":  # one image: the eCDF as PNG, rendered by kaleido
                    with page.expect_download(timeout=120_000) as download:
                        page.locator(".st-key-ecdf_figure_png button").first.click()
                        # kaleido takes seconds: the button spins meanwhile
                        page.locator(".st-key-ecdf_figure_png [data-testid=stSpinnerIcon]"
                                     ).first.wait_for(timeout=10_000)
                    png = Path(download.value.path()).read_bytes()
                    assert download.value.suggested_filename == "ecdf.png"
                    assert png[:8] == b"\x89PNG\r\n\x1a\n" and 20_000 < len(png) < 5_000_000
                    width, height = (int.from_bytes(png[i:i + 4], "big") for i in (16, 20))
                    assert width >= 600 and height >= 400

            assert visit(page, "Report") == []
            _click(page, "report_build")
            with page.expect_download(timeout=120_000) as download:
                page.locator(".st-key-report_html button").first.click()
            report = tmp_path / "report.html"
            download.value.save_as(report)
            _check_report(browser, report)
            _no_exception(page, "Report")

            if os.environ.get("UPDATE_SCREENSHOT") == "1":
                _screenshot(page)
        finally:
            browser.close()
    assert set(changes) == set(PAGES), changes
    assert all(top is not None and top < VIEWPORT["height"] for top in tops.values()), tops


def _check_report(browser, report: Path) -> None:
    """Sections added on the pages, their settings after the widget change, plotly.js
    inlined; opened with every http(s) request refused, it draws each figure."""
    from plotly.offline import get_plotlyjs

    text = report.read_text(encoding="utf-8")
    for title in REPORTED:
        assert f"<h2>{title}</h2>" in text, title
    settings = html.unescape(text)  # each section's main choice and changed settings
    assert "by: input_format" in settings  # the eCDF section keeps the changed widget
    assert "cohort: context_condition" in settings
    assert get_plotlyjs()[:2000] in text
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", text, re.I)
    context = browser.new_context()
    refused: list[str] = []

    def refuse(route):
        refused.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(https?|wss?)://"), refuse)
    offline = context.new_page()
    offline.goto(report.as_uri(), wait_until="load")
    n_figures = text.count("Plotly.newPlot(")
    assert n_figures >= len(REPORTED)
    offline.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length == "
                              f"{n_figures}", timeout=30_000)
    assert refused == []
    context.close()


def _screenshot(page) -> None:
    """docs/screenshot.png: the Subgroups sunburst on the SocialStigmaQA sample."""
    from ui.data import SAMPLES

    load_sample(page, SAMPLES["ssqa_simulated.csv.gz"]["title"])
    assert visit(page, "Subgroups") == []
    _drawn(page, "subgroups_sunburst_chart")
    page.locator(".st-key-subgroups_sunburst_chart").evaluate(
        "el => el.scrollIntoView({block: 'end'})")  # the whole sunburst in the viewport
    page.wait_for_timeout(500)  # the sunburst's transition
    page.screenshot(path=str(SCREENSHOT))
