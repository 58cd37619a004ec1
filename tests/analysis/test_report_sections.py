"""The report's sections declared once (``analysis.report.REPORT_SECTIONS``, and a section
declared on an options class with ``REPORT = ReportSection(...)``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis import options as options_module
from analysis import report as R
from analysis.cells import filter_rows
from analysis.options import Options, ReportSection, option
from tests.app.apptools import sample_with_design


def _rates(results: pd.DataFrame, design, *, options, where=None, applied=False) -> bw.Result:
    rows = filter_rows(results, {k: v for k, v in (where or {}).items() if v} or None)
    table = (rows.groupby(options.factor, observed=True)["deviation"].mean()
             .rename("rate").reset_index())
    return bw.Result(table, notes=(f"rates by {options.factor}",))


@dataclass(frozen=True, kw_only=True)
class RatesOptions(Options):
    """Deviation rate per value (a section declared for this test only)."""

    NAME = "test_rates"
    COMMAND = "test-rates"
    FUNCTION = "tests.analysis.test_report_sections:_rates"
    REPORT = ReportSection("Rates per value", after="cohorts")

    factor: str = option("model", "the factor", metavar="COL")


def test_the_public_names_are_derived_from_the_records():
    assert R.SECTIONS == ("coverage", "subgroups", "ecdf", "importance", "disparity",
                          "index", "cohorts", "judges", "compare", "counterfactual",
                          "native", "checks", "variance")
    assert R.TITLES == {"coverage": "Coverage", "subgroups": "Subgroups", "ecdf": "eCDF",
                        "importance": "Factor importance", "disparity": "Disparity",
                        "index": "Bias index", "cohorts": "Cohorts", "judges": "Judges",
                        "compare": "Compare", "counterfactual": "Counterfactual pairs",
                        "native": "Native scores", "checks": "Checks",
                        "variance": "Measurement error"}
    assert list(R._BUILDERS) == list(R.SECTIONS)


def test_a_section_declared_on_an_options_class(monkeypatch):
    monkeypatch.setitem(options_module._REGISTRY, RatesOptions.NAME, RatesOptions)
    declared = [d for d in R._declared_sections() if d.name == "test_rates"]
    assert len(declared) == 1
    decl = declared[0]
    assert decl.options is RatesOptions and decl.builder is R._declared_builder
    names = [r.name for r in R._in_order(R.REPORT_SECTIONS, declared)]
    assert names == [*R.SECTIONS[:7], "test_rates", *R.SECTIONS[7:]]  # after cohorts
    last = R._in_order(R.REPORT_SECTIONS, [ReportSection("Z", "z", after="nowhere")])
    assert last[-1].name == "z"
    monkeypatch.setitem(R._BY_NAME, decl.name, decl)
    monkeypatch.setitem(R._BUILDERS, decl.name, decl.builder)
    monkeypatch.setitem(R.TITLES, decl.name, decl.title)

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    assert R.default_settings("test_rates", frame, design) == {"factor": "model",
                                                               "where": {}}
    sec = R.build_section("test_rates", frame, design,
                          {"factor": "cot", "where": {"model": ["sim-model-B"]}})
    assert sec.skipped is None and sec.title == "Rates per value"
    assert sec.notes == ["rates by cot"]
    ((stem, table),) = sec.tables
    subset = frame[frame["model"] == "sim-model-B"]
    expected = {str(v): (subset["cot"] == v).pipe(lambda m: subset.loc[m, "deviation"].mean())
                for v in subset["cot"].unique()}
    assert stem == "test_rates" and len(table) == len(expected) == 2
    for value, rate in zip(table["cot"].astype(str), table["rate"], strict=True):
        np.testing.assert_allclose(rate, expected[value], rtol=1e-12)
    with pytest.raises(R.SettingsError, match="'test_rates': bad settings"):
        R.build_or_skip("test_rates", frame, design, {"factor": "no_such_column"})
    with pytest.raises(R.SettingsError, match="unknown setting"):
        R.build_section("test_rates", frame, design, {"level": 2})
