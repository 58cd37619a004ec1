"""A sentinel API key reaches the provider and nothing else (issue 12 item 4): no output
file, results table, design, cache (SQLite and its WAL), log record, stdout or stderr
holds it, also when requests fail."""

from __future__ import annotations

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
