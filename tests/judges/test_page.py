"""AppTest runs of pages/judges.py against the loopback server (no internet)."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis.design import Design
from analysis.judge_stats import columns as C
from judges.fourstage import sample_path
from tests.judges.helpers import ROOT
from tests.judges.judge_server import FakeLLMServer, FakeReply

PAGE = str(ROOT / "pages" / "judges.py")


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    return at


def wait_for_result(at: AppTest, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        at.run()
        if "judges_job" not in at.session_state and "judges_judged" in at.session_state:
            return
        time.sleep(0.2)
    raise AssertionError("the judge run did not finish")


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    """The first dataframe on the page that has ``column``."""
    for el in at.dataframe:
        if column in el.value.columns:
            return el.value
    raise AssertionError(f"no table with a {column!r} column")


def choose_local_openai(at: AppTest, url: str) -> None:
    at.selectbox(key="judges_provider").set_value("openai").run()
    at.text_input(key="judges_model_openai").input("judge-x").run()
    at.text_input(key="judges_base_url").input(url).run()


def test_sample_run_results_download_and_send_to_analysis():
    with FakeLLMServer() as srv:
        at = page()
        assert not at.exception
        assert "Illustrative texts written for bias-workbench" in " ".join(
            c.value for c in at.caption)
        choose_local_openai(at, srv.openai_url)
        estimate = table_with(at, "quantity")
        values = dict(zip(estimate["quantity"], estimate["value"], strict=True))
        assert (values["judgments"], values["calls to make"]) == ("48", "48")
        at.button(key="judges_run").click().run()
        wait_for_result(at)
        assert srv.n_requests == 48
    assert not at.exception and not at.error
    judged = at.session_state["judges_judged"]
    assert len(judged) == 32 and int(judged[list(C.METRICS)].notna().sum().sum()) == 48
    assert [s.value for s in at.subheader] == ["Judge", "Run summary", "Stage metrics",
                                               "Judged rows"]
    metrics = table_with(at, "share_fair")
    assert set(metrics.columns) >= {"stage", "metric", "share_fair", "n_unscored"}
    assert metrics["n"].sum() == 48
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]  # Figures 4 and 5
    titles = [c["layout"]["title"]["text"] for c in charts]
    assert {"Judge scores per model and stage", "Stages compared across models"} <= set(titles)
    assert table_with(at, "quantity").set_index("quantity").loc["already cached", "value"] == "48"
    browse = table_with(at, "ics_explanation")
    assert "ics_explanation" in browse.columns and len(browse) == 32
    assert at.get("download_button")
    at.button(key="judges_send").click().run()
    results = at.session_state["results_frame"]
    design = at.session_state["design"]
    assert isinstance(design, Design) and design.outcome.column == "deviation"
    assert len(results) == 32 and set(results["deviation"].dropna()) <= {0.0, 1.0}  # pairs
    assert at.session_state["results_name"] == "fourstage_illustrative.csv (judge scores)"
    assert any("now the active results table" in s.value for s in at.success)


def test_progress_and_cancel_keep_what_is_done():
    with FakeLLMServer(latency=0.25) as srv:
        at = page()
        choose_local_openai(at, srv.openai_url)
        at.number_input(key="judges_concurrency").set_value(1).run()
        at.button(key="judges_run").click().run()
        time.sleep(0.8)
        at.run()
        bar = at.get("progress")
        assert bar and "/ 48 judged" in bar[0].proto.text
        at.button(key="judges_cancel").click().run()
        wait_for_result(at)
        sent = srv.n_requests
    judged = at.session_state["judges_judged"]
    scored = int(judged[list(C.METRICS)].notna().sum().sum())
    assert 0 < scored == sent < 48
    assert judged[C.UNSCORED_REASON].str.contains("not judged: run cancelled").any()
    assert any("cancelled" in i.value for i in at.info)


@pytest.mark.parametrize("where", ["secrets", "password"])
def test_api_key_from_secrets_or_password_field(where, monkeypatch):
    """The typed key goes to a typed Base URL; the server's (secrets) key only to the
    operator's endpoint (OPENAI_BASE_URL here), with a cost cap (tests/judges/
    test_endpoints.py has the refusals)."""
    with FakeLLMServer(lambda c: FakeReply.judgement(4)) as srv:
        if where == "secrets":
            monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        at = AppTest.from_file(PAGE, default_timeout=60)
        at.secrets["OPENAI_API_KEY"] = "sk-from-secrets"
        at.run()
        if where == "password":
            choose_local_openai(at, srv.openai_url)
            at.text_input(key="judges_api_key").input("sk-typed").run()
        else:
            at.selectbox(key="judges_provider").set_value("openai").run()
            at.text_input(key="judges_model_openai").input("judge-x").run()
            at.number_input(key="judges_max_cost").set_value(1.0).run()
        at.button(key="judges_run").click().run()
        wait_for_result(at)
        auth = {c.headers["authorization"] for c in srv.calls}
    assert auth == {"Bearer sk-typed" if where == "password" else "Bearer sk-from-secrets"}
    judged = at.session_state["judges_judged"]
    assert not judged.astype(str).apply(lambda col: col.str.contains("sk-")).any(axis=None)


def test_missing_key_is_reported_before_any_request():
    at = page()
    at.selectbox(key="judges_provider").set_value("anthropic").run()
    at.button(key="judges_run").click().run()
    assert any("No API key for anthropic" in e.value for e in at.error)
    assert "judges_job" not in at.session_state


def test_embedding_scorer_on_the_page():
    at = page()
    at.selectbox(key="judges_provider").set_value("embedding").run()
    assert any("cosine similarity" in c.value for c in at.caption)
    at.button(key="judges_run").click().run()
    wait_for_result(at, 120)
    judged = at.session_state["judges_judged"]
    assert judged[C.SIMILARITY].between(-1, 1).all() and len(judged) == 32
    assert set(table_with(at, "share_fair")["metric"]) == {"similarity"}


@pytest.mark.parametrize("typed", ["/etc/shadow", "/etc", "/nonexistent/dir",
                                   "sentence-transformers/paraphrase-MiniLM-L3-v2",
                                   "../../../tmp"])
def test_embedding_model_field_is_no_path_oracle_and_no_download(typed, tmp_path,
                                                                 monkeypatch):
    """Issue 43 item 3: a typed path or hub name is neither looked up nor loaded; every
    such value gets the same message (no hint whether the path exists)."""
    from analysis.embedding import page_model

    monkeypatch.setenv("BIAS_WORKBENCH_EMBEDDING_MODELS", f"mine={tmp_path}")
    looked_up: list[str] = []
    monkeypatch.setattr("analysis.embedding.resolve_model",
                        lambda *a, **k: looked_up.append(a) or ("x", True))
    at = page()
    at.selectbox(key="judges_provider").set_value("embedding").run()
    at.text_input(key="judges_model_embedding").input(typed).run()
    at.button(key="judges_run").click().run()
    assert "judges_job" not in at.session_state and not looked_up
    [error] = [e.value for e in at.error]
    assert error.startswith("This server's pages use the embedding models its operator "
                            "lists: bundled, mine.")
    assert typed not in error and "not found" not in error and "is a file" not in error
    assert page_model("mine") == str(tmp_path) and page_model("bundled") is None
    monkeypatch.setenv("BIAS_WORKBENCH_EMBEDDING_MODELS", f"gone={tmp_path / 'x'}")
    with pytest.raises(ValueError, match="'gone' the operator lists is not available"):
        page_model("gone")


def test_uploads_invalid_and_already_judged_files():
    at = page()
    at.radio(key="judges_source").set_value("Upload a file").run()
    bad = pd.DataFrame({"id": ["a"], "stage": [3], "sensitive_factor": ["g"],
                        "scenario": ["s"], "model": ["m"], "question_a": ["q"],
                        "question_b": ["q"], "answer_a": [""], "answer_b": ["b"]})
    at.file_uploader(key="judges_upload").upload("bad.csv", bad.to_csv(index=False).encode(),
                                                 "text/csv").run()
    assert not at.error  # a partial file (an answer still missing) is judged where it can be
    assert any("1 of 1 rows have an empty answer or story" in i.value for i in at.info)
    at.file_uploader(key="judges_upload").upload(
        "bad.csv", bad.assign(stage=7).to_csv(index=False).encode(), "text/csv").run()
    assert any("row 1 (id a): stage is 7" in e.value for e in at.error)
    frame = pd.read_csv(sample_path())
    judged = frame.assign(ics=3, judge="openai:x [fourstage-ics@1.0]")
    judged.loc[judged["stage"].isin([2, 3]), "ics"] = None
    at.file_uploader(key="judges_upload").upload(
        "judged.csv", judged.to_csv(index=False).encode(), "text/csv").run()
    assert not at.exception
    assert any("already judged" in i.value for i in at.info)
    metrics = table_with(at, "share_fair")
    ics = metrics[metrics["metric"] == "ics"]
    assert ics["share_fair"].eq(1.0).all() and ics["n"].sum() == 16
    # the file has no tcs/pcs/etcs/sbas columns: those judgments count as unscored
    assert metrics.loc[metrics["metric"] == "tcs", "n_unscored"].sum() == 8


def test_run_summary_unscored_filter_raw_replies_and_reasoning_settings():
    def behaviour(call):
        if "Research is mixed" in call.prompt:  # one answer of the sample: prose, no JSON
            return FakeReply(text="Hard to say, maybe a two.")
        return FakeReply.judgement(4)

    with FakeLLMServer(behaviour) as srv:
        at = page()
        choose_local_openai(at, srv.openai_url)
        at.text_input(key="judges_model_openai").input("gpt-5-mini").run()
        assert any("temperature = 0.0 is not sent to openai:gpt-5-mini" in w.value
                   for w in at.warning)
        at.selectbox(key="judges_effort").set_value("low").run()
        at.button(key="judges_run").click().run()
        wait_for_result(at)
        assert srv.n_requests == 48
        assert {c.body["max_tokens"] for c in srv.calls} == {4000}
        assert {c.body["reasoning_effort"] for c in srv.calls} == {"low"}
        assert not any("temperature" in c.body for c in srv.calls)
    assert not at.exception
    summary = summary_table(at)
    values = dict(zip(summary["quantity"], summary["value"], strict=True))
    assert values["judgments"] == "48" and values["requests sent"] == "48 (0 retries)"
    assert values["unscored"] == "1" and values["scored"] == "47"
    assert values["parameters sent"] == (
        '{"json_schema": true, "max_tokens": 4000, "reasoning_effort": "low"}')
    assert values["model snapshot"] == "gpt-5-mini"
    assert values["warning"].startswith("temperature = 0.0 is not sent")
    assert len(table_with(at, "ics_raw")) == 32
    at.checkbox(key="judges_unscored_only").check().run()
    rows = table_with(at, "ics_raw")
    assert len(rows) == 1 and rows["ics_raw"].iloc[0] == "Hard to say, maybe a two."
    assert rows[C.UNSCORED_REASON].iloc[0] == "ics: no JSON object in the reply"


def summary_table(at: AppTest) -> pd.DataFrame:
    """The run summary (the estimate is a quantity/value table too)."""
    for el in at.dataframe:
        if "quantity" in el.value.columns and "requests sent" in set(el.value["quantity"]):
            return el.value
    raise AssertionError("no run summary")


def test_cost_cap_and_similarity_threshold_fields(tmp_path, monkeypatch):
    prices = tmp_path / "prices.yaml"  # the $BIAS_WORKBENCH_PRICES override of prices.yaml
    prices.write_text("sections:\n  local:\n    judge-x: {input: 1000, output: 1000}\n")
    monkeypatch.setenv("BIAS_WORKBENCH_PRICES", str(prices))
    with FakeLLMServer(latency=0.05) as srv:
        at = page()
        choose_local_openai(at, srv.openai_url)
        cost = table_with(at, "quantity").set_index("quantity").loc["cost (est.)", "value"]
        assert cost != "$0.0000"  # priced by the override
        at.number_input(key="judges_max_cost").set_value(1.0).run()
        at.button(key="judges_run").click().run()
        wait_for_result(at)
        assert srv.n_requests == 0
    summary = summary_table(at)
    stopped = summary.set_index("quantity").loc["stopped early", "value"]
    assert stopped.startswith("cost cap")
    at = page()
    at.selectbox(key="judges_provider").set_value("embedding").run()
    at.number_input(key="judges_similarity_threshold").set_value(0.99).run()
    at.button(key="judges_run").click().run()
    wait_for_result(at, 120)
    at.button(key="judges_send").click().run()
    results = at.session_state["results_frame"]
    assert (results["threshold"] == 0.99).all() and results["deviation"].eq(1.0).all()


def test_corrupt_cache_gets_a_message_and_a_move_aside_button(tmp_path):
    import os

    from tests.judges.test_judges_tools_page import PAGE as TOOLS

    path = tmp_path / "judge-cache.sqlite"
    assert os.environ["BIAS_WORKBENCH_JUDGE_CACHE"] == str(path)
    path.write_bytes(b"not a database at all" * 50)
    at = page()
    choose_local_openai(at, "http://127.0.0.1:9/v1")
    assert not at.exception
    assert any("judge-cache.sqlite cannot be used" in e.value for e in at.error)
    tools = AppTest.from_file(TOOLS, default_timeout=60).run()
    assert not tools.exception  # no red exception box in any tab
    assert sum("cannot be used" in e.value for e in tools.error) >= 2  # estimate, batches
    at.button(key="judges_reset_cache").click().run()
    assert not at.error and len(list(tmp_path.glob("judge-cache.sqlite.unusable-*"))) == 1
    estimate = table_with(at, "quantity").set_index("quantity")
    assert estimate.loc["calls to make", "value"] == "48"
