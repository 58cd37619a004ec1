"""A browser reload keeps the table, the design and the page settings (ui/session.py)."""

from __future__ import annotations

import os

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from tests.app.apptools import ROOT, metric_values
from tests.bad_corpus import BAD, params


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_STATE_DIR", str(tmp_path))
    return tmp_path


def _harness(page: str) -> None:
    """What app.py does around a page (AppTest reruns a page without its entrypoint)."""
    import runpy

    from tests.app.apptools import ROOT
    from ui import session
    from ui.context import page_guard

    session.restore()
    with session.page_run(session.save), page_guard():
        runpy.run_path(str(ROOT / "pages" / page), run_name="__main__")


def _app(page: str = "data.py", sid: str | None = None) -> AppTest:
    at = AppTest.from_function(_harness, args=(page,), default_timeout=120)
    if sid is not None:
        at.query_params["sid"] = sid
    return at


def test_app_py_wraps_pages_with_restore_guard_and_save():
    text = (ROOT / "app.py").read_text()
    assert "session.restore()" in text and "session.save()" in text
    assert "with session.page_run(finish), page_guard():" in text


def _run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_reload_restores_table_design_and_settings(state_dir):
    frame = pd.DataFrame({"model": ["a", "b"] * 30, "topic": [f"t{i % 3}" for i in range(60)],
                          "biased": [i % 2 for i in range(60)]})
    from ui.common import token_of
    from ui.data import suggest_design

    design = suggest_design(frame)
    at = _app("subgroups.py")
    at.session_state["results_frame"] = frame  # what the Data page's set_data writes
    at.session_state["results_name"] = "mine.csv"
    at.session_state["results_token"] = token_of(frame)
    at.session_state["design"] = design
    _run(at)
    at.radio(key="subgroups_level").set_value(1)
    _run(at)
    before = metric_values(at)
    sid = at.query_params["sid"]
    sid = sid[0] if isinstance(sid, list) else sid
    saved = yaml.safe_load((state_dir / sid / "session.yaml").read_text())
    assert saved["name"] == "mine.csv" and saved["settings"]["subgroups_level"] == 1
    assert pd.read_parquet(state_dir / sid / saved["table"]).equals(frame)

    again = _app("subgroups.py", sid)  # a reload: a new session with only the URL
    _run(again)
    # AppTest sends no browser cookie, so the reload counts as another browser: it works on
    # a copy under a new id, and the original stays as it was
    assert _sid_of(again) != sid and (state_dir / _sid_of(again) / "session.yaml").is_file()
    assert yaml.safe_load((state_dir / sid / "session.yaml").read_text()) == saved
    assert again.session_state["results_name"] == "mine.csv"
    assert again.session_state["design"] == design
    assert again.radio(key="subgroups_level").value == 1
    assert metric_values(again) == before
    assert "mine.csv" in again.markdown[0].value  # the context bar names the restored data


def test_reload_keeps_what_the_loader_decided(state_dir):
    """The Data page's captions (decimal-comma and left-out columns) and the "Large file"
    source come from the loader's TableMeta (not the frame's attrs, which a Parquet
    round trip may or may not keep): the session saves it beside the table."""
    from analysis.table_meta import TableMeta
    from ui.common import token_of

    frame = pd.DataFrame({"model": ["a", "b"] * 30, "score": [i / 4 for i in range(60)],
                          "biased": [i % 2 for i in range(60)]})
    at = _app("data.py")
    at.session_state["results_frame"] = frame
    at.session_state["results_name"] = "eu.csv"
    at.session_state["results_token"] = token_of(frame)
    at.session_state["results_meta"] = TableMeta("eu.csv", decimal_comma_columns=("score",),
                                                 dropped_columns=("note",), compact=True)
    _run(at)
    sid = _sid_of(at)
    saved = yaml.safe_load((state_dir / sid / "session.yaml").read_text())
    assert saved["table_meta"] == {"decimal_comma_columns": ["score"],
                                   "dropped_columns": ["note"], "compact": True}
    again = _run(_app("data.py", sid))
    assert again.session_state["results_meta"] == TableMeta(
        "eu.csv", decimal_comma_columns=("score",), dropped_columns=("note",), compact=True)
    captions = [c.value for c in again.caption]
    assert any("decimal comma (0,5 = 0.5): score" in c for c in captions)
    assert any("Left out (free text): note" in c for c in captions)
    assert again.radio(key="data_source").value == "Large file on this machine"


def _sid_of(at: AppTest) -> str | None:
    sid = at.query_params.get("sid")
    return sid[0] if isinstance(sid, list) else sid


def test_a_link_whose_session_is_gone_says_so_and_loads_no_sample(state_dir):
    from ui.session import EXPIRED
    from ui.session_store import SessionStore

    gone = SessionStore(state_dir).new_id()  # issued by this server, never saved
    at = _app("subgroups.py", gone)
    _run(at)
    assert at.warning[0].value == EXPIRED
    assert "results_frame" not in at.session_state
    assert "Load a results table" in at.info[0].value
    assert _sid_of(at) is None  # the dead id left the URL


@pytest.mark.parametrize("case", params("session_link", "ui"))
def test_an_id_we_never_issued_starts_afresh_without_echo_or_disk(state_dir, case):
    """The bad-input corpus's session links (tests/data/bad/cases.yaml): path-like,
    oversized, Markdown, HTML, unsigned ids of the right shape, ..."""
    from ui.session import NOT_ISSUED

    sid = (BAD / case.file).read_text(encoding="utf-8")
    at = _app("data.py", sid)
    _run(at)
    assert at.warning[0].value == NOT_ISSUED and case.expect("ui") in NOT_ISSUED
    shown = " ".join(e.value for e in [*at.warning, *at.info, *at.markdown, *at.error,
                                       *at.caption])
    for fragment in ("evil", "javascript", "etc/passwd", "secret.key", "AAAAAAAAAA", "ид",
                     "Set-Cookie", sid[:12]):
        assert fragment not in shown, fragment
    assert _sid_of(at) is None
    assert at.radio(key="data_source").value == "Bundled sample"
    assert not [p for p in state_dir.iterdir() if p.is_dir()]  # nothing written for it


def test_one_id_per_session_across_page_switches(state_dir):
    """Streamlit drops the query string on a page switch: the same id comes back."""
    at = _app("subgroups.py")
    _run(at)
    at.radio(key="subgroups_level").set_value(1)
    _run(at)
    sid = _sid_of(at)
    assert sid
    del at.query_params["sid"]  # what a page switch does to the URL
    at.radio(key="subgroups_level").set_value(2)
    _run(at)
    assert _sid_of(at) == sid
    assert [p.name for p in state_dir.iterdir() if p.is_dir()] == [sid]


def test_a_fresh_visit_writes_nothing_and_a_sample_is_named_not_copied(state_dir):
    at = _app("data.py")
    _run(at)
    assert at.session_state["results_name"] == "bbq_unifiedqa.csv.gz"
    assert _sid_of(at) is None and not [p for p in state_dir.iterdir() if p.is_dir()]
    sub = _app("subgroups.py")
    _run(sub)
    sub.radio(key="subgroups_level").set_value(1)
    _run(sub)
    folder = state_dir / _sid_of(sub)
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "session.yaml"]  # no table.parquet: the unmodified sample is a reference
    meta = yaml.safe_load((folder / "session.yaml").read_text())
    assert meta["sample"] == "bbq_unifiedqa.csv.gz"
    again = _app("subgroups.py", _sid_of(sub))
    _run(again)
    assert again.session_state["results_name"] == "bbq_unifiedqa.csv.gz"
    assert again.radio(key="subgroups_level").value == 1


def test_only_plain_page_settings_are_kept():
    import pandas as pd

    from ui.session import is_setting

    assert is_setting("subgroups_level", 2) and is_setting("disparity_quantiles", (0.2, 0.8))
    assert is_setting("coverage_factors", ["a", "b"]) and is_setting("ecdf_ideal", 0.0)
    for key in ("subgroups_table_csv", "coverage_heatmap_png", "importance_fix_0",
                "subgroups_repro_design_yaml", "data_source", "design_factors_3", 7):
        assert not is_setting(key, False), key
    assert not is_setting("cohorts_frame", pd.DataFrame())


def test_judge_batches_and_replies_are_kept_per_signed_in_user(state_dir, monkeypatch,
                                                               tmp_path):
    """With sign-in, each user has their own reply cache and batch record: nobody lists,
    collects or cancels another's batches. Without it, the one file of the server."""
    from judges.batch import BatchStore
    from judges.batch_apis import BatchStatus
    from judges.providers import make_provider
    from ui import auth, session

    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setattr(auth, "user_id", lambda: None)
    assert session.user_cache_path() == tmp_path / "cache.sqlite"
    paths = {}
    for user in ("alice", "bob"):
        monkeypatch.setattr(auth, "user_id", lambda user=user: f"http://idp|{user}")
        paths[user] = session.user_cache_path()
    assert paths["alice"] != paths["bob"]
    assert {p.parent.parent for p in paths.values()} == {tmp_path / "users"}
    provider = make_provider("openai", model="m", base_url="http://127.0.0.1:9/v1",
                             api_key="k")
    with BatchStore(paths["alice"]) as store:
        store.record(BatchStatus("batch_a", "openai", "in_progress", False, 1),
                     provider, "score", [("c1", "k1")])
    with BatchStore(paths["bob"]) as store:
        assert store.batches() == [] and store.get("batch_a") is None
    with BatchStore(paths["alice"]) as store:
        assert [b.batch_id for b in store.batches()] == ["batch_a"]


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder of another user needs root")
def test_a_state_folder_of_another_user_is_refused_and_the_app_still_works(tmp_path,
                                                                          monkeypatch):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    monkeypatch.setenv("BIAS_WORKBENCH_STATE_DIR", str(theirs))
    at = _app("subgroups.py")
    _run(at)
    assert len(at.warning) == 1 and "belongs to another user (uid 65534" in at.warning[0].value
    assert at.session_state["results_name"] == "bbq_unifiedqa.csv.gz"  # the sample opens
    assert list(theirs.iterdir()) == []


def test_without_sign_in_a_server_beyond_loopback_says_once_it_is_single_user(monkeypatch):
    from streamlit import config

    from ui.auth import SINGLE_USER_NOTE

    def harness() -> None:
        from ui import auth

        auth.require_sign_in()

    before = config.get_option("server.address")
    try:
        for address, told in (("0.0.0.0", True), ("10.1.2.3", True), ("127.0.0.1", False),
                              ("localhost", False)):
            config.set_option("server.address", address)
            at = AppTest.from_function(harness)
            _run(at)
            assert [t.value for t in at.toast] == ([SINGLE_USER_NOTE] if told else []), address
            _run(at)
            assert not at.toast  # once per visit
    finally:
        config.set_option("server.address", before)


def _own_table(at: AppTest, frame: pd.DataFrame, name: str = "mine.csv") -> None:
    from ui.common import token_of
    from ui.data import suggest_design

    at.session_state["results_frame"] = frame  # what the Data page's set_data writes
    at.session_state["results_name"] = name
    at.session_state["results_token"] = token_of(frame)
    at.session_state["design"] = suggest_design(frame)


@pytest.mark.parametrize("page, says", [
    ("compare.py", None),  # a pairing error, then st.stop()
    ("report.py", "No sections yet"),  # an info, then st.stop()
])
def test_a_page_that_stops_saves_and_keeps_the_id_in_the_url(state_dir, page, says):
    """Issue 42: after st.stop() Streamlit raises StopException at the next session-state
    access, so a save behind the stop never ran and ?sid= was lost on these pages."""
    frame = pd.DataFrame({"model": ["a"] * 40, "topic": [f"t{i % 4}" for i in range(40)],
                          "biased": [i % 2 for i in range(40)]})
    at = _app(page)
    _own_table(at, frame, "one_model.csv")
    _run(at)
    shown = " ".join(e.value for e in [*at.error, *at.info, *at.warning])
    assert says in shown if says else at.error
    sid = _sid_of(at)
    assert sid, "the first save of a run that stopped names its id in the URL"
    assert yaml.safe_load((state_dir / sid / "session.yaml").read_text())["name"] == \
        "one_model.csv"
    del at.query_params["sid"]  # a page switch drops the query string
    _run(at)
    assert _sid_of(at) == sid  # put back although the page stops again


def test_a_stop_saves_once_and_a_page_without_stop_still_saves(state_dir):
    from ui import session

    calls = []
    # page_run outside Streamlit: finish runs once after the block (no stop was called)
    with session.page_run(lambda: calls.append("finish")):
        calls.append("page")
    assert calls == ["page", "finish"]


def test_a_link_without_id_reopens_this_browsers_last_session(state_dir, monkeypatch):
    """A URL without ?sid= in a browser that has a session reopens it, and says so,
    instead of silently replacing it with the bundled sample."""
    from ui import session

    monkeypatch.setattr(session, "owner_key", lambda: "browser:" + "ab" * 16)
    frame = pd.DataFrame({"model": ["a", "b"] * 30, "topic": [f"t{i % 3}" for i in range(60)],
                          "biased": [i % 2 for i in range(60)]})
    at = _app("subgroups.py")
    _own_table(at, frame)
    _run(at)
    sid = _sid_of(at)
    assert sid
    again = _app("subgroups.py")  # the same browser, a link without the id
    _run(again)
    assert again.session_state["results_name"] == "mine.csv"
    assert _sid_of(again) == sid  # its own session: no copy
    assert session.REOPENED.format(name="mine.csv") in [i.value for i in again.info]
    monkeypatch.setattr(session, "owner_key", lambda: "browser:" + "cd" * 16)
    other = _app("subgroups.py")  # another browser: nothing of the first one
    _run(other)
    assert other.session_state["results_name"] == "bbq_unifiedqa.csv.gz"
    assert _sid_of(other) != sid and not [i for i in other.info if "last session" in i.value]
