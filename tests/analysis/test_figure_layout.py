"""Issue 42: no text of an exported figure is drawn over another (legend, reference-line
labels, the context line, tick labels, titles, colour bar) and no reference-line label sits
in the plot area, for every figure kind of the report with long labels and 1, 3 and 8
series. The boxes are plotly.js's own, read in Debian's chromium (tests/analysis/
figure_boxes.py) at the size the export uses (analysis.export.export_size)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.analysis.figure_boxes import collisions, figure_boxes, overlaps
from tests.app.browsertools import CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]

SECTIONS = ("coverage", "subgroups", "ecdf", "importance", "disparity", "index", "compare")
CONTEXT_FILE = "a_results_file_with_a_rather_long_name_2026_12_01.csv"


def _table(n_models: int) -> pd.DataFrame:
    rng = np.random.default_rng(n_models)
    models = [f"a-very-long-model-name-{i}-instruct-v0.3" for i in range(n_models)]
    rows = [{"model": m, "template": f"template number {t}", "race": r, "gender": g,
             "biased": int(rng.random() < 0.3)}
            for m, t, r, g in itertools.product(models, range(4),
                                                ["white", "black", "asian", "hispanic"],
                                                ["female", "male"]) for _ in range(3)]
    return pd.DataFrame(rows)


def test_no_text_of_an_exported_figure_is_drawn_over_another():
    from analysis.context import AnalysisContext, stamp_figure
    from analysis.design import apply_design, suggest_design
    from analysis.export import export_size
    from analysis.report import build_section

    context = AnalysisContext(CONTEXT_FILE, "biased = 1", {"race": ["white", "black"]})
    figures, names = [], []
    for n in (1, 3, 8):
        frame = _table(n)
        design = suggest_design(frame)
        results = apply_design(frame, design)
        for name in SECTIONS:
            sec = build_section(name, results, design)
            for stem, fig in sec.figures:
                figures.append(stamp_figure(fig, context))
                names.append(f"{n} series, {stem}")
    kinds = {name.split(", ")[1].split("_")[0] for name in names}
    assert {"coverage", "subgroups", "ecdf", "factor", "disparity", "bias"} <= kinds, kinds
    assert sum("ecdf" in n for n in names) == 2  # 3 and 8 curves (one model: no eCDF)
    boxes = figure_boxes(figures, [export_size(f) for f in figures])
    problems = []
    for name, box in zip(names, boxes, strict=True):
        problems += [f"{name}: {p}" for p in collisions(box)]
        texts = [a["text"] for a in box["annotations"]]
        stamped = any(CONTEXT_FILE in t for t in texts) or CONTEXT_FILE in box["xtitle_text"]
        if not stamped:
            problems.append(f"{name}: no context line")
        for a in box["annotations"]:  # reference-line labels outside the plot area
            if ("cutoff" in a["text"] or "rule" in a["text"] or "all rows" in a["text"]) \
                    and overlaps(a["box"], box["plot"]):
                problems.append(f"{name}: {a['text']!r} in the plot area")
    assert problems == [], "\n".join(problems)
