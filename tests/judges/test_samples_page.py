"""The Judges page's samples (K) and both-orders options (ui/judges_samples.py), AppTest
against the loopback server."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.judge_stats import columns as C
from judges.fourstage import load_fourstage, sample_path
from tests.judges.judge_server import FakeLLMServer, sampled_behaviour
from tests.judges.test_page import choose_local_openai, page, table_with, wait_for_result


def estimate_values(at) -> dict[str, str]:
    table = table_with(at, "quantity")
    return dict(zip(table["quantity"], table["value"], strict=True))


def test_samples_and_both_orders_update_the_estimate_and_the_results():
    frame = load_fourstage(sample_path())
    n2 = int((frame[C.STAGE] == 2).sum())  # stage-2 pairs of the bundled sample
    # sample 1 scores 3, sample 2 scores 4, in either order (no position bias)
    story_a = set(frame.loc[frame[C.STAGE] == 2, C.STORY_A].str.strip())
    with FakeLLMServer(sampled_behaviour((0, 1))) as srv:
        at = page()
        choose_local_openai(at, srv.openai_url)
        assert estimate_values(at)["judgments"] == "48"
        at.number_input(key="judges_samples").set_value(3).run()
        assert estimate_values(at)["judgments"] == "144"
        assert any("3 samples at temperature 0" in w.value for w in at.warning)
        at.checkbox(key="judges_both_orders").check().run()
        assert estimate_values(at)["judgments"] == f"{3 * (48 + 3 * n2):,}"
        at.number_input(key="judges_samples").set_value(2).run()
        at.text_input(key="judges_temperature").input("1").run()
        assert not any("samples at temperature" in w.value for w in at.warning)
        values = estimate_values(at)
        assert values["calls to make"] == values["judgments"] == f"{2 * (48 + 3 * n2):,}"
        at.button(key="judges_run").click().run()
        wait_for_result(at)
        assert srv.n_requests == 2 * (48 + 3 * n2)
        seeds = {c.body.get("seed") for c in srv.calls}
        assert seeds == {None, 1}
        assert {c.body["temperature"] for c in srv.calls} == {1.0}
        # the swapped order shows story_b first
        firsts = {c.block("STORY A") for c in srv.calls if "(TCS)" in c.prompt}
        assert story_a < firsts
    assert not at.exception and not at.error
    judged = at.session_state["judges_judged"]
    ics = judged.loc[judged[C.STAGE].isin([1, 4])]
    assert (ics["ics"] == 3.5).all() and (ics["ics_scores"] == "[3, 4]").all()
    assert np.allclose(ics["ics_sd"], np.std([3, 4], ddof=1))
    pairs = judged.loc[judged[C.STAGE] == 2]
    assert (pairs["tcs_ab"] == 3.5).all() and (pairs["tcs_ba"] == 3.5).all()
    assert (pairs["tcs_scores"] == "[3, 4, 3, 4]").all()
    subheaders = [s.value for s in at.subheader]
    assert subheaders == ["Judge", "Run summary", "Stage metrics", "Position bias",
                          "Judged rows", "Reliability of the judge"]
    reliability = table_with(at, "alpha_ordinal")  # across the samples (ui/judges_reliability)
    assert set(reliability["across"]) == {"samples: openai:judge-x"}
    bias = table_with(at, "position_bias_rate")
    assert bias["n_pairs"].tolist() == [n2] * 3 and bias["position_bias_rate"].eq(0).all()
    browse = table_with(at, "ics_explanation")
    assert {"ics_sd", "ics_n", "ics_scores", "tcs_ab", "tcs_ba"} <= set(browse.columns)
    at.button(key="judges_send").click().run()
    results: pd.DataFrame = at.session_state["results_frame"]
    assert {C.SCORE_SD, C.SCORE_N, C.SCORE_SAMPLES} <= set(results.columns)
    assert set(results[C.SCORE_N]) == {2, 4}
