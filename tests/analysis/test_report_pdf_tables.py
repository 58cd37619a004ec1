"""Issue 42: the PDF report prints wide tables in parts of at most PRINT_COLUMNS columns
(the first repeated) and breaks cells only between words, so no number or word of a table
is split: the text pypdf extracts from the printed PDF holds every single-word value of
every table as often as the table does (on the code before, the 20-column Subgroups table
of the BBQ sample lost 116 of its 191 distinct values: "11,037", "Physical_appearance"...)."""

from __future__ import annotations

import collections
import io

import pandas as pd
import pytest

from analysis.report import HTML_MAX_ROWS, PRINT_COLUMNS, chromium_path
from tests.app.apptools import ROOT

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(chromium_path() is None, reason="needs a Chromium")]


def test_every_table_value_of_the_pdf_is_whole():
    from pypdf import PdfReader

    from analysis.design import Design, apply_design
    from analysis.report import build_report, report_html, report_pdf
    from analysis.report_text import display_table

    frame = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    design = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    report = build_report(apply_design(frame, design), design, ["subgroups"], source="bbq")
    html = report_html(report)
    pdf = report_pdf(html)
    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    tokens = collections.Counter(text.split())
    checked = 0
    for sec in report.sections:
        for stem, table in sec.tables:
            shown = display_table(table.head(HTML_MAX_ROWS), stem)
            if stem == "subgroups":
                assert shown.shape[1] > 2 * PRINT_COLUMNS + 1  # printed in three parts
            want = collections.Counter(v for col in shown.columns for v in shown[col]
                                       if v and " " not in v)
            # the first column is repeated in every part: at least as often as the table
            broken = {v: (n, tokens[v]) for v, n in want.items() if tokens[v] < n}
            assert broken == {}, (stem, list(broken.items())[:10])
            checked += len(want)
    assert checked > 250
    assert html.count('<div class="print">') == 2  # both wide tables, screen copy kept
