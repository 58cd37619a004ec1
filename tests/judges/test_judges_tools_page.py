"""The Answers & agreement page (pages/judges_tools.py) with AppTest and loopback servers."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from judges.batch import BatchConfig, BatchStore
from judges.cache import ReplyCache, default_cache_path
from judges.providers import make_provider
from tests.app.apptools import shown
from tests.judges.batch_server import FakeBatchServer
from tests.judges.helpers import ROOT
from tests.judges.test_answer import echo
from tests.judges.test_categorise import classifier

PAGE = str(ROOT / "pages" / "judges_tools.py")


def wait_for(at: AppTest, key: str, timeout: float = 60) -> AppTest:
    """Rerun the page until ``key`` is in the session state (a job has finished)."""
    error_key = key.replace("_out", "_error")
    deadline = time.monotonic() + timeout
    while key not in at.session_state and time.monotonic() < deadline:
        assert error_key not in at.session_state, at.session_state[error_key]
        time.sleep(0.2)
        at.run()
    assert key in at.session_state, [e.value for e in at.error]
    return at


def test_page_renders_the_four_sections_and_an_estimate():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Answers & agreement"
    assert [t.label for t in at.tabs] == ["Answers", "Agreement", "Reliability", "Categories",
                                         "Batches"]
    estimate = at.dataframe[0].value
    assert estimate.iloc[0].tolist() == ["requests", "24"]
    assert estimate.iloc[2].tolist() == ["calls to make", "24"]
    at.text_input(key="tools_at").input("0, 1").run()
    assert at.dataframe[0].value.iloc[0].tolist() == ["requests", "48"]
    at.text_input(key="tools_at").input("warm").run()
    assert "could not convert string to float: 'warm'" in at.error[0].value
    assert at.button(key="tools_answers_run").disabled


def test_answers_categories_agreement_and_batches_end_to_end():
    with FakeBatchServer(behaviour=echo) as srv:
        at = AppTest.from_file(PAGE, default_timeout=60).run()
        at.text_input(key="tools_answers_url").input(srv.openai_url)
        at.text_input(key="tools_answers_model_openai").input("mut-1").run()
        at.button(key="tools_answers_run").click().run()
        wait_for(at, "tools_answers_out")
        answers = at.session_state["tools_answers_out"]
        assert len(answers) == 16 and srv.n_requests == 24
        assert answers["answer"].iloc[0].startswith("ANSWER<Boys are naturally better")
        assert set(answers["answer_model"]) == {"openai:mut-1"}

        # Categories of the generated answers, through the batch API.
        srv.behaviour = srv.item_behaviour = classifier
        srv.polls_before_done = 0  # the page polls every 10 s: end at the first poll
        at.radio(key="tools_cat_source").set_value("Generated answers").run()
        at.selectbox(key="tools_cat_text").set_value("answer")
        at.text_input(key="tools_cat_url").input(srv.openai_url)
        at.text_input(key="tools_cat_model_openai").input("judge-x")
        at.checkbox(key="tools_cat_batch").check().run()
        at.button(key="tools_cat_run").click().run()
        wait_for(at, "tools_cat_out")
        out = at.session_state["tools_cat_out"]
        assert srv.counts["create"] == 1
        assert out["category"].notna().sum() == 8  # stages 1 and 4 rows have an answer
        assert set(out["category"].dropna()) == {"unclassified"}
        counts = [d.value for d in at.dataframe if "share" in d.value.columns][0]
        assert counts.set_index("category").loc["unclassified", "n"] == 8

        # The batch shows up as collected on the Batches tab.
        at.checkbox(key="tools_batches_all").check().run()
        table = [d.value for d in at.dataframe if "batch_id" in d.value.columns][0]
        assert table["purpose"].tolist() == ["categorise"]
        assert table["collected"].tolist() == [True]


def test_agreement_of_the_judged_file_with_human_labels():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, 40)
    judged = pd.DataFrame({"id": range(40), "stage": np.tile([1, 2, 3, 4], 10),
                           "ics": np.clip(human + rng.integers(-1, 2, 40), 1, 5),
                           "human_ics": human, "judge": "openai:x"})
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["judges_judged"] = judged
    at.run()
    table = [d.value for d in at.dataframe if "kappa_qw" in d.value.columns][0]
    assert table["stage"].tolist() == ["1", "2", "3", "4", "all"]
    assert table["n"].tolist() == [10, 10, 10, 10, 40]
    at.radio(key="tools_agree_ci").set_value("analytic").run()
    table = [d.value for d in at.dataframe if "kappa_qw" in d.value.columns][0]
    assert set(table["ci_method"]) == {"analytic"}
    at.checkbox(key="tools_agree_every").uncheck().run()
    assert not [d for d in at.dataframe if "kappa_qw" in d.value.columns]  # nothing guessed
    at.selectbox(key="tools_agree_judge").set_value("ics")
    at.selectbox(key="tools_agree_human").set_value("ics").run()
    assert not [d for d in at.dataframe if "kappa_qw" in d.value.columns]
    assert "Choose two different columns: `ics` compared with itself" in shown(at.info[0].value)
    at.selectbox(key="tools_agree_human").set_value("human_ics").run()
    table = [d.value for d in at.dataframe if "kappa_qw" in d.value.columns][0]
    assert table["n"].tolist() == [10, 10, 10, 10, 40]


def test_agreement_without_human_labels_asks_for_an_explicit_choice():
    judged = pd.DataFrame({"id": range(8), "stage": np.tile([1, 2, 3, 4], 2),
                           "ics": [1, 2, 3, 4, 5, 4, 3, 2], "ics_b": [1, 2, 3, 4, 5, 5, 3, 1],
                           "judge": "openai:x"})
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["judges_judged"] = judged
    at.run()
    assert not at.exception
    assert not [d for d in at.dataframe if "kappa_qw" in d.value.columns]  # not stage vs stage
    assert any("No human labels found" in i.value for i in at.info)
    assert at.selectbox(key="tools_agree_judge").value is None
    at.selectbox(key="tools_agree_judge").set_value("ics")
    at.selectbox(key="tools_agree_human").set_value("ics_b").run()
    table = [d.value for d in at.dataframe if "kappa_qw" in d.value.columns][0]
    assert table["judge_column"].iloc[0] == "ics" and table["human_column"].iloc[0] == "ics_b"
    assert table["n"].iloc[-1] == 8


def test_batches_tab_collects_a_batch_left_by_a_closed_session(tmp_path):
    import asyncio

    from judges.answer import answer_frame_async, questions_sample_path

    with FakeBatchServer(behaviour=echo) as srv:
        mut = make_provider("openai", model="mut-1", base_url=srv.openai_url)
        questions = pd.read_csv(questions_sample_path()).iloc[:2]
        with ReplyCache(default_cache_path()) as cache:
            run = asyncio.run(answer_frame_async(questions, mut, cache=cache,
                                                 batch=BatchConfig(poll_interval=0.01,
                                                                   max_wait=0)))
        assert run.monitor.pending == 3
        at = AppTest.from_file(PAGE, default_timeout=60).run()
        table = [d.value for d in at.dataframe if "batch_id" in d.value.columns][0]
        assert table["collected"].tolist() == [False]
        at.button(key="tools_batches_refresh").click().run()
        assert "1 of 1 open batch(es) ended" in at.success[0].value
    with BatchStore(default_cache_path()) as store:
        assert store.batches(open_only=True) == []
    with ReplyCache(default_cache_path()) as cache:
        assert len(cache) == 3


def test_judges_page_batch_switch_judges_through_the_batch_api():
    with FakeBatchServer(polls_before_done=0) as srv:
        at = AppTest.from_file(str(ROOT / "pages" / "judges.py"), default_timeout=60).run()
        at.text_input(key="judges_model_openai").input("judge-x")
        at.text_input(key="judges_base_url").input(srv.openai_url)
        at.checkbox(key="judges_batch").check().run()
        at.button(key="judges_run").click().run()
        deadline = time.monotonic() + 60
        while "judges_judged" not in at.session_state and time.monotonic() < deadline:
            assert "judges_error" not in at.session_state, at.session_state["judges_error"]
            time.sleep(0.2)
            at.run()
        judged = at.session_state["judges_judged"]
        assert srv.counts["create"] == 1 and len(srv.batch_requests["batch_000002"]) == 48
    assert judged["judge"].iloc[0] == "openai:judge-x (batch) [fourstage-ics@2.0]"
    assert judged["unscored_reason"].eq("").all()
    with BatchStore(default_cache_path()) as store:
        (stored,) = store.batches()
    assert (stored.purpose, stored.collected, stored.n_requests) == ("judge", True, 48)


def test_judges_page_shows_agreement_when_the_file_has_human_labels():
    from judges.fourstage import sample_path

    frame = pd.read_csv(sample_path())
    rng = np.random.default_rng(1)
    ics = rng.integers(1, 6, len(frame)).astype(float)
    ics[frame["stage"].isin([2, 3]).to_numpy()] = np.nan
    judged = frame.assign(ics=ics, human_ics=ics, judge="openai:x [fourstage-ics@1.0]",
                          tcs=np.nan, pcs=np.nan, etcs=np.nan, sbas=np.nan)
    at = AppTest.from_file(str(ROOT / "pages" / "judges.py"), default_timeout=60)
    at.session_state["judges_judged"] = judged
    at.run()
    assert "Agreement with human labels" in [h.value for h in at.subheader]
    table = [d.value for d in at.dataframe if "kappa_qw" in d.value.columns][0]
    assert table["stage"].tolist() == ["1", "4", "all"]
    assert table["n"].tolist() == [8, 8, 16]
    assert table["kappa_qw"].tolist() == [1.0, 1.0, 1.0]
