"""Issue 37: the multiple-testing adjustment travels with its numbers. ``adjust`` changes
``p_adjusted`` the same way in the API, the CLI, the report section, and every report
header names the method (Compare's Holm was headed "p (BH)")."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis import report as R
from analysis.design import Design, apply_design
from analysis.io import load_results
from analysis.multiple_testing import adjust_p
from tests.analysis.cli_helpers import run_json

SAMPLE = "sample_data/ssqa_simulated.csv.gz"
DESIGN = "sample_data/ssqa_simulated.design.yaml"


@pytest.fixture(scope="module")
def ssqa():
    design = Design.load(DESIGN)
    return apply_design(load_results(SAMPLE), design), design


def _headers(html: str) -> list[str]:
    return re.findall(r"<th>([^<]*)</th>", html)


@pytest.mark.parametrize("method", ["holm", "by", "bonferroni", "hommel"])
def test_subgroups_adjust_everywhere(ssqa, method, capsys):
    rows, design = ssqa
    args = {"factors": ["model", "cot"], "level": 2}
    api = bw.subgroups(rows, design, adjust=method, **args)
    bh = bw.subgroups(rows, design, **args)
    distinct = api.table
    np.testing.assert_allclose(distinct["p_adjusted"],
                               adjust_p(distinct["p_value"].to_numpy(), method), rtol=1e-12)
    assert not np.allclose(distinct["p_adjusted"], bh.table["p_adjusted"])
    assert api.settings["adjust"] == method
    out = run_json(capsys, "subgroups", SAMPLE, "--design", DESIGN, "--factors", "model,cot",
                  "--adjust", method)
    cli = pd.DataFrame(out["subgroups"])
    assert out["settings"]["adjust"] == method
    np.testing.assert_allclose(cli["p_adjusted"], distinct["p_adjusted"], rtol=1e-12)
    sec = R.build_section("subgroups", rows, design, {**args, "adjust": method})
    got = dict(sec.tables)["subgroups"]
    np.testing.assert_allclose(got["p_adjusted"], distinct["p_adjusted"], rtol=1e-12)
    html = R._section_html(0, sec)
    label = {"holm": "Holm", "by": "BY", "bonferroni": "Bonferroni", "hommel": "Hommel"}[method]
    assert f"p ({label})" in _headers(html) and "p (BH)" not in _headers(html)
    assert f"{label}-adjusted p" in html


def test_ecdf_adjust_everywhere(ssqa, capsys):
    rows, design = ssqa
    api = bw.ecdf(rows, design, by="model", factors=["cot", "gender"], level=2,
                  adjust="bonferroni")
    ks = api.tables["ks"]
    np.testing.assert_allclose(ks["p_adjusted"],
                               adjust_p(ks["p_value"].to_numpy(), "bonferroni"), rtol=1e-12)
    out = run_json(capsys, "ecdf", SAMPLE, "--design", DESIGN, "--by", "model",
                  "--factors", "cot,gender", "--level", "2", "--adjust", "bonferroni",
                  )
    assert out["settings"]["adjust"] == "bonferroni"
    sec = R.build_section("ecdf", rows, design, {"by": "model", "factors": ["cot", "gender"],
                                                 "level": 2, "adjust": "bonferroni"})
    got = dict(sec.tables)["ecdf_ks"]
    np.testing.assert_allclose(got["p_adjusted"], ks["p_adjusted"], rtol=1e-12)
    assert "p (Bonferroni)" in _headers(R._section_html(0, sec))


def test_compare_report_names_holm(ssqa):
    """Compare's overall p-values are Holm-adjusted by default, its subgroup tables BH."""
    rows, design = ssqa
    sec = R.build_section("compare", rows, design, {"by": "model", "factors": ["cot"]})
    assert sec.adjustments == {"compare_overall": "holm", "compare_subgroups": "bh"}
    html = R._section_html(0, sec)
    tables = html.split("<h3>Paired comparison: overall</h3>", 1)[1]
    overall, subgroups = tables.rsplit("<h3>Paired comparison per subgroup</h3>", 1)
    assert "p (Holm)" in _headers(overall) and "p (BH)" not in _headers(overall)
    assert "p (BH)" in _headers(subgroups)
    by = R.build_section("compare", rows, design, {"by": "model", "adjust": "bonferroni"})
    assert "p (Bonferroni)" in _headers(R._section_html(0, by))
    api = bw.compare(rows, design, by="model", adjust="bonferroni").table
    np.testing.assert_allclose(dict(by.tables)["compare_overall"]["p_adjusted"],
                               api["p_adjusted"], rtol=1e-12)


def test_report_interval_headers_name_the_level(ssqa):
    """A section computed at confidence 0.9 heads its intervals "90 % CI low / high" (the
    bootstrap's "90 % bootstrap CI ..."), at the default "95 % ..."; the numbers are the
    API's at that level."""
    rows, design = ssqa
    args = {"factors": ["model", "cot"], "level": 1}
    sec = R.build_section("subgroups", rows, design, {**args, "confidence": 0.9,
                                                      "ci": "bootstrap", "n_resamples": 50})
    heads = _headers(R._section_html(0, sec))
    assert {"90 % CI low", "90 % CI high", "90 % bootstrap CI low",
            "90 % bootstrap CI high"} <= set(heads)
    assert not any(h.startswith("95 %") for h in heads)
    api = bw.subgroups(rows, design, confidence=0.9, **args).table
    got = dict(sec.tables)["subgroups"]
    np.testing.assert_allclose(got["ci_low"], api["ci_low"], rtol=1e-12)
    plain = _headers(R._section_html(0, R.build_section("subgroups", rows, design, args)))
    assert {"95 % CI low", "95 % CI high"} <= set(plain)
    imp = R.build_section("importance", rows, design, {"factors": ["model", "cot"],
                                                       "confidence": 0.8})
    assert "80 % CI low" in _headers(R._section_html(0, imp))


def test_label_helpers_read_the_settings():
    from analysis.formatting import adjusted_header, interval_header

    assert interval_header({"confidence": 0.99}, "high") == "99 % CI high"
    assert interval_header({"confidence": "0.5"}, "low", "") == "50 % low"
    assert adjusted_header({"adjust": "hommel"}) == "p (Hommel)"
    assert adjusted_header({}, default="holm") == "p (Holm)"
