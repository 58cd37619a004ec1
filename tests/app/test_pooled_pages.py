"""The pooled switch of the Subgroups and eCDF pages (``ui/pooling.py``,
``docs/pooling.md``): labelled, and when on the page says which values its figure uses,
shows the pooled columns beside the raw ones and the pooling model."""

from __future__ import annotations

import pytest

from analysis.options.subgroups import SubgroupsOptions
from tests.app.apptools import page_test, sample_with_design, shown


@pytest.mark.parametrize("page, prefix, what", [
    ("subgroups.py", "subgroups", "Sunburst and top findings"),
    ("ecdf.py", "ecdf", "Curves and deviation metric")])
def test_the_pooled_switch_says_what_it_changed(page, prefix, what):
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test(page, frame=frame, design=design, name="ssqa_simulated.csv.gz").run()
    box = at.checkbox(key=f"{prefix}_option_pooled")
    assert box.label == SubgroupsOptions.label("pooled") or "Pooled" in box.label
    assert not any("pooled estimates (partial pooling" in shown(c.value) for c in at.caption)
    box.set_value(True).run()
    assert not at.exception and not at.error
    captions = [shown(c.value) for c in at.caption]
    assert any(c.startswith(f"{what}: pooled estimates (partial pooling") for c in captions)
    tables = [d.value for d in at.dataframe]
    column = "rate_pooled" if page == "subgroups.py" else "deviation_metric_raw"
    assert any(column in t.columns for t in tables)
    assert any("term" in t.columns and "variance" in t.columns for t in tables)
