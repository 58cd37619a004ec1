"""Several judges on the Judges page and the Reliability sections (AppTest, loopback server)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from analysis.judge_stats import columns as C
from analysis.judge_stats.reliability import krippendorff_alpha
from tests.judges.helpers import ROOT
from tests.judges.judge_server import FakeLLMServer, FakeReply, hashed_score
from tests.judges.test_page import choose_local_openai, table_with, wait_for_result


def by_model(call):
    if call.body.get("model") == "judge-x":
        return FakeReply.judgement(hashed_score(call))
    return FakeReply.judgement(min(5, hashed_score(call) + 2))


def test_two_judges_from_the_page_with_estimate_run_and_reliability():
    with FakeLLMServer(by_model) as srv:
        at = AppTest.from_file(str(ROOT / "pages" / "judges.py"), default_timeout=60).run()
        choose_local_openai(at, srv.openai_url)
        at.text_area(key="judges_more").input(f"anthropic:judge-b {srv.url}").run()
        assert not at.exception and not at.error
        estimate = table_with(at, "calls").set_index("judge")
        assert estimate.loc["openai:judge-x", "calls"] == 48
        assert estimate.loc["anthropic:judge-b", "calls"] == 48
        assert estimate.loc["total", "calls"] == 96
        at.selectbox(key="judges_ensemble").set_value("median").run()
        at.button(key="judges_run_several").click().run()
        wait_for_result(at)
        assert srv.n_requests == 96
        assert {c.api for c in srv.calls} == {"openai", "anthropic"}
    assert not at.exception and not at.error
    judged = at.session_state["judges_judged"]
    a, b = judged["ics@openai:judge-x"].astype(float), judged["ics@anthropic:judge-b"]
    assert np.allclose(judged["ics"].dropna(), ((a + b.astype(float)) / 2).dropna())
    assert judged["judge"].str.startswith("ensemble median of openai:judge-x, "
                                          "anthropic:judge-b").all()
    assert "Reliability of the judges" in [s.value for s in at.subheader]
    table = table_with(at, "alpha_ordinal")
    overall = table[(table["metric"] == "ics") & (table["stage"] == "all")].iloc[0]
    x = np.column_stack([a, b.astype(float)])[judged["stage"].isin([1, 4]).to_numpy()]
    assert overall["alpha_ordinal"].startswith(f"{krippendorff_alpha(x):.3f} [")
    summary = table_with(at, "quantity").set_index("quantity")["value"]
    assert summary["requests sent"].startswith("96 ")
    assert at.get("plotly_chart")


def test_reliability_tab_on_the_judged_result():
    rows = 12
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({C.ID: [f"q{i}" for i in range(rows)], C.STAGE: [1, 4] * (rows // 2)})
    base = rng.integers(1, 6, rows)
    frame["ics@a"] = base
    frame["ics@b"] = np.clip(base + rng.integers(-1, 2, rows), 1, 5)
    frame.loc[0, "ics@b"] = 5 if base[0] <= 2 else 1  # one wide disagreement at least
    frame["ics_scores@a"] = [json.dumps([int(v), int(v)]) for v in base]
    frame["ics_sd@a"] = 0.0
    at = AppTest.from_file(str(ROOT / "pages" / "judges_tools.py"), default_timeout=60)
    at.session_state["judges_judged"] = frame
    at.session_state["judges_judged_name"] = "two judges.csv"
    at.run()
    assert not at.exception
    at.number_input(key="rel_tab_boot").set_value(200).run()
    table = table_with(at, "alpha_ordinal")
    assert set(table["across"]) == {"judges", "samples: a"}
    disagree = table_with(at, "range")
    assert 1 in disagree["row"].tolist() and (disagree["range"] >= 2).all()
    assert any("Judges: a, b; 12 rows." in c.value for c in at.caption)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "repeated samples" in spec["layout"]["title"]["text"]
