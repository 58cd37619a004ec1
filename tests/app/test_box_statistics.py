"""The Disparity box plot carries each box's five statistics instead of every value:
they must be the boxes plotly.js itself computes from the values (its ``box/calc.js``),
checked in chromium against the plotly.js bundled with the installed plotly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import plotly
import pytest

from analysis.columns import GROUP, VALUE
from analysis.figures.disparity import box_figure, box_statistics
from tests.app.browsertools import CHROMIUM, FLAGS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
FIELDS = {"q1": "q1", "median": "med", "q3": "q3", "lowerfence": "lf", "upperfence": "uf"}


def samples() -> list[list[float]]:
    rng = np.random.default_rng(7)
    return [
        rng.normal(0, 1, 1001).tolist(),  # odd n
        rng.normal(5, 2, 1000).tolist(),  # even n
        (rng.integers(0, 2, 500)).astype(float).tolist(),  # 0/1 with ties
        rng.integers(1, 6, 37).astype(float).tolist(),  # a 1-5 score
        [3.0], [1.0, 2.0], [1.0, 2.0, 100.0], [0.0, 0.0, 0.0, 0.0],
        [*rng.normal(0, 1, 50).tolist(), 40.0, -35.0],  # outliers beyond the fences
        np.round(rng.lognormal(0, 1, 333), 3).tolist(),  # skewed, rounded (ties)
    ]


def test_box_statistics_are_plotly_js_boxes():
    from playwright.sync_api import sync_playwright

    data = samples()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.set_content("<div id='g'></div>")
        page.add_script_tag(path=str(PLOTLY_JS))
        got = page.evaluate("""(data) => {
            const gd = document.getElementById('g');
            return Plotly.newPlot(gd, data.map((y, i) => ({type: 'box', y: y,
                name: 'g' + i, boxpoints: false}))).then(() => gd.calcdata.map(
                cd => ({q1: cd[0].q1, med: cd[0].med, q3: cd[0].q3, lf: cd[0].lf,
                        uf: cd[0].uf})));
        }""", data)
        browser.close()
    for values, js in zip(data, got, strict=True):
        ours = box_statistics(np.array(values))
        for field, key in FIELDS.items():
            assert ours[field] == pytest.approx(js[key], rel=1e-12, abs=1e-12), (field, values[:5])


def test_the_figure_carries_the_statistics_not_the_values():
    rng = np.random.default_rng(3)
    groups = np.array(["b", "a"])[rng.integers(0, 2, 20_000)]
    values = pd.DataFrame({GROUP: pd.Categorical(groups, categories=["a", "b"], ordered=True),
                           VALUE: rng.normal(0, 1, 20_000)})
    fig = box_figure(values, feature="score")
    assert [t.name for t in fig.data] == ["a", "b"]
    for trace, name in zip(fig.data, ["a", "b"], strict=True):
        want = box_statistics(values.loc[groups == name, VALUE].to_numpy())
        assert trace.y is None and list(trace.x) == [name]
        assert {f: getattr(trace, f)[0] for f in FIELDS} == want
    assert len(json.dumps(fig.to_plotly_json(), default=str)) < 20_000  # five numbers a box
