"""A sentinel API key reaches the provider and nothing else (issue 12 item 4): no output
file, results table, design, cache (SQLite and its WAL), log record, stdout or stderr
holds it, also when requests fail."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from judges.cli import main
from tests.conftest import REPO
from tests.judges.judge_server import FakeLLMServer, FakeReply, default_behaviour

FOURSTAGE = REPO / "judges" / "data" / "fourstage_illustrative.csv"
QUESTIONS = REPO / "judges" / "data" / "fourstage_questions.csv"
OPENAI_KEY = "sk-SENTINEL-openai-7f3a9c1e5b"
ANTHROPIC_KEY = "sk-ant-SENTINEL-anthropic-2d8e4f"


def _flaky(call):
    # every third request fails: error paths (messages, unscored reasons) are covered too
    return FakeReply.error(500) if call.n % 3 == 0 else default_behaviour(call)


def run(*argv) -> int:
    return main([str(a) for a in argv])


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_sentinel_key_is_sent_but_never_written(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    caplog.set_level(logging.DEBUG)  # SDK and httpx debug logs included
    out = tmp_path / "out"
    out.mkdir()
    cache = out / "cache.sqlite"
    with FakeLLMServer(_flaky) as srv:
        common = ["--cache", cache, "--quiet", "--max-retries", "0"]
        codes = [
            run(*["score", FOURSTAGE, "--provider", "openai", "--model", "j",
                  "--base-url", srv.openai_url, "--out", out / "judged.csv",
                  "--to-results", out / "results.csv", *common]),
            run(*["score", FOURSTAGE, "--provider", "anthropic", "--model", "j",
                  "--base-url", srv.url, "--out", out / "judged_a.jsonl", *common]),
            run(*["answer", QUESTIONS, "--provider", "openai", "--model", "m",
                  "--base-url", srv.openai_url, "--out", out / "answers.parquet", *common]),
            run(*["metrics", out / "judged.csv", "--out", out / "metrics.tsv"]),
        ]
        calls = list(srv.calls)
    assert codes[:3] == [3, 3, 3] and codes[3] == 0  # some requests failed, files written
    sent = [" ".join(c.headers.values()) for c in calls]
    assert any(OPENAI_KEY in h for h in sent) and any(ANTHROPIC_KEY in h for h in sent)
    written = _files(out)
    assert {p.name for p in written} >= {"judged.csv", "results.csv", "results.design.yaml",
                                         "judged_a.jsonl", "answers.parquet", "metrics.tsv",
                                         "cache.sqlite"}
    for path in written:
        data = path.read_bytes()
        for key in (OPENAI_KEY, ANTHROPIC_KEY):
            assert key.encode() not in data, path
            assert key.encode("utf-16-le") not in data, path
    captured = capsys.readouterr()
    logs = "\n".join(r.getMessage() + repr(r.args) for r in caplog.records)
    assert caplog.records  # debug logging was on, so this checks something
    for key in (OPENAI_KEY, ANTHROPIC_KEY):
        assert key not in captured.out and key not in captured.err
        assert key not in logs


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_not_in_error_messages(tmp_path, monkeypatch, capsys, provider):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with FakeLLMServer(lambda c: FakeReply.error(401)) as srv:
        url = srv.openai_url if provider == "openai" else srv.url
        code = run(*["score", FOURSTAGE, "--provider", provider, "--model", "j", "--base-url",
                     url, "--no-cache", "--out", tmp_path / "o.csv", "--quiet"])
    err = capsys.readouterr().err
    assert code in (2, 3)
    text = err + (tmp_path / "o.csv").read_text() if (tmp_path / "o.csv").exists() else err
    assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text


def _app_harness() -> None:
    """What app.py does around a page (session restore / save), for the page named in
    the session state, so one AppTest visits several pages."""
    import runpy

    import streamlit as st

    from tests.app.apptools import ROOT
    from ui import session
    from ui.context import page_guard

    session.restore()
    try:
        with page_guard():
            runpy.run_path(str(ROOT / "pages" / st.session_state["_page"]),
                           run_name="__main__")
    finally:
        session.save()


def test_key_typed_in_the_app_reaches_no_session_file_report_or_cli_text(tmp_path,
                                                                          monkeypatch):
    """The app: a key typed into the Judges page's password field (and the judge tools'
    key field) is sent to the judge but is in no session file (ui/session.py: the table
    and session.yaml), no report (HTML, ZIP, stored sections), no Copy-as-CLI / Python
    text, no download and no reply cache."""
    import json
    import time
    import zipfile

    from streamlit.testing.v1 import AppTest

    from analysis import report as R

    state = tmp_path / "state"
    monkeypatch.setenv("BIAS_WORKBENCH_STATE_DIR", str(state))
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)  # in the environment too
    at = AppTest.from_function(_app_harness, default_timeout=120)
    texts: list[str] = []

    def visit(page: str) -> None:
        at.session_state["_page"] = page
        at.run()
        assert not at.exception, page
        texts.extend(c.value for c in at.code)  # the Copy as CLI / Python blocks
        texts.extend(m.value for m in [*at.markdown, *at.caption, *at.info, *at.warning])

    with FakeLLMServer() as srv:
        visit("judges.py")
        at.selectbox(key="judges_provider").set_value("openai").run()
        at.text_input(key="judges_model_openai").input("judge-x").run()
        at.text_input(key="judges_base_url").input(srv.openai_url).run()
        at.text_input(key="judges_api_key").input(OPENAI_KEY).run()
        at.button(key="judges_run").click().run()
        deadline = time.monotonic() + 60
        while "judges_job" in at.session_state or "judges_judged" not in at.session_state:
            assert time.monotonic() < deadline, "the judge run did not finish"
            time.sleep(0.2)
            at.run()
        sent = " ".join(" ".join(c.headers.values()) for c in srv.calls)
    assert OPENAI_KEY in sent  # the typed key did reach the judge
    downloads = [at.session_state["judges_judged"].to_csv()]
    at.button(key="judges_send").click().run()  # a table: the session is now saved
    at.run()  # saved again with the password field's key in the session state
    visit("judges_tools.py")
    at.text_input(key="tools_key_openai").input(OPENAI_KEY).run()
    for page, section in (("subgroups.py", "subgroups"), ("coverage.py", "coverage")):
        visit(page)
        at.button(key=f"report_add_{section}").click().run()
    visit("report.py")
    at.button(key="report_build").click().run()
    assert not at.exception and not at.error
    report, html_text = at.session_state["report_built"]
    with zipfile.ZipFile(io.BytesIO(R.report_zip(report, html_text))) as zf:
        zipped = [zf.read(n) for n in zf.namelist()]
    assert any("python -m analysis" in t for t in texts)  # the CLI text was collected
    files = _files(state) + _files(tmp_path.parent / tmp_path.name)
    assert any(p.name == "session.yaml" for p in files) and any(
        p.name.startswith("table") and p.suffix == ".parquet" for p in files) and any(
        p.name == "cache.sqlite" for p in files)
    blobs = [p.read_bytes() for p in files] + zipped + [
        html_text.encode(), json.dumps(at.session_state["report_sections"]).encode(),
        "\n".join(texts).encode(), *(d.encode() for d in downloads)]
    for key in (OPENAI_KEY, ANTHROPIC_KEY):
        for blob in blobs:
            assert key.encode() not in blob and key.encode("utf-16-le") not in blob
