"""The Counterfactual page (pages/counterfactual.py): the page's table equals
``analysis.api.counterfactual`` with the same inputs and options, a swap without pairs
shows its message and the missing swaps, and "Copy as CLI / Python" carries the inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import api as bw
from tests.app.apptools import page_test, sample_with_design

SSQA = "ssqa_simulated.csv.gz"


def _run(swap: str, **state):
    frame, design = sample_with_design(SSQA)
    at = page_test("counterfactual.py", frame=frame, design=design, name=SSQA)
    at.session_state["counterfactual_swap"] = swap
    for k, v in state.items():
        at.session_state[k] = v
    return at.run(), frame, design


def test_the_page_shows_the_apis_numbers_and_the_copied_call():
    at, frame, design = _run("prompt_style", counterfactual_option_adjust="bh")
    assert not at.exception and not at.error
    want = bw.counterfactual(frame, design, swap="prompt_style", adjust="bh").table
    shown = next(d.value for d in at.dataframe if "n_pairs" in d.value.columns)
    assert shown["value"].tolist() == want["value"].tolist() == ["doubt", "positive"]
    for c in ("n_pairs", "only_a", "only_b", "difference", "ci_low", "p_adjusted", "df"):
        np.testing.assert_allclose(pd.to_numeric(shown[c]).to_numpy(float),
                                   want[c].to_numpy(float), rtol=1e-10, err_msg=c)
    (cli,) = [c.value for c in at.code if c.language == "bash"]
    (py,) = [c.value for c in at.code if c.language == "python"]
    assert "counterfactual" in cli and "--swap prompt_style" in cli and "--adjust bh" in cli
    assert "bw.counterfactual(" in py and "swap='prompt_style'" in py and "adjust='bh'" in py


def test_a_swap_fixed_by_the_template_shows_the_missing_swaps():
    at, _, _ = _run("gender")
    assert not at.exception
    assert any("'gender' is fixed by the template" in e.value for e in at.error)
    plan = next(d.value for d in at.dataframe if "kind" in d.value.columns)
    assert set(plan["kind"]) == {"swap"} and len(plan) == 1000  # the first 1,000 shown
    assert any(s.value.startswith("Missing swaps (35,154 prompts)") for s in at.subheader)


def test_add_to_report_builds_the_same_table():
    from analysis.design import apply_design
    from analysis.report import build_section

    at, frame, design = _run("prompt_style", counterfactual_option_adjust="bonferroni")
    at.button(key="report_add_counterfactual").click().run()
    item = at.session_state["report_sections"][-1]
    assert item["section"] == "counterfactual" and item["settings"]["swap"] == "prompt_style"
    sec = build_section("counterfactual", apply_design(frame, design), design,
                        item["settings"])
    assert sec.skipped is None and sec.adjustments["counterfactual_pairs"] == "bonferroni"
    shown = next(d.value for d in at.dataframe if "n_pairs" in d.value.columns)
    np.testing.assert_allclose(dict(sec.tables)["counterfactual_pairs"]["p_adjusted"],
                               pd.to_numeric(shown["p_adjusted"]), rtol=1e-12)
