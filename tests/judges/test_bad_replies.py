"""The judge replies of the bad-input corpus (``tests/data/bad/cases.yaml``, kind
``judge_reply``): through the parser (API), and all in one end-to-end run of
``python -m judges score`` (a subprocess, the real openai client) against the loopback
server, which answers each row with its corpus reply. A bad reply leaves its row unscored
with the parser's reason; nothing is lost (every input row is in the judged file) and the
run completes with exit code 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.parse import parse_judgement
from judges.request import Reply
from tests.bad_corpus import BAD, params
from tests.judges.helpers import ROOT, make_row
from tests.judges.judge_server import Call, FakeLLMServer, FakeReply

CASES = [p.values[0] for p in params("judge_reply", "cli")]
CONTROL = "CASE-control"  # a well-formed reply, so the run is not all failures


def _reply(case) -> Reply:
    """The reply as the provider layer hands it to the parser."""
    text = (BAD / case.file).read_text(encoding="utf-8")
    if case.get("as") == "refusal":
        return Reply(text=None, refusal=text.strip(), finish_reason="stop")
    return Reply(text=text, finish_reason=case.get("finish", "stop"), output_tokens=20)


def _check(case, score, reason) -> None:
    if case.get("score") is not None:
        assert (score, reason) == (case.get("score"), None)
    else:
        assert score is None and case.expect("api") in reason, reason


@pytest.mark.parametrize("case", params("judge_reply", "api"))
def test_reply_through_the_parser(case):
    judgement = parse_judgement(_reply(case))
    _check(case, judgement.score, judgement.reason)
    if case.get("score") is None:
        assert judgement.explanation == ""  # nothing of an unparseable reply is kept as one


def _behaviour(call: Call) -> FakeReply:
    marker = re.search(r"CASE-[a-z_]+", call.prompt)
    case = next((c for c in CASES if marker and marker.group() == f"CASE-{c.id}"), None)
    if case is None:
        return FakeReply.judgement(4, "A fair answer.")
    reply = _reply(case)
    return FakeReply(text=reply.text, refusal=reply.refusal,
                     finish=reply.finish_reason if reply.finish_reason != "stop" else None)


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """One ``python -m judges score`` run over a stage-1 row per reply case (+ a control)."""
    folder = tmp_path_factory.mktemp("bad_replies")
    markers = [f"CASE-{c.id}" for c in CASES] + [CONTROL]
    rows = pd.DataFrame([make_row(i, 1, text=f"Answer {m}.") for i, m in enumerate(markers)])
    rows.to_csv(folder / "four.csv", index=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-loopback-test"}
    env.pop("OPENAI_BASE_URL", None)
    with FakeLLMServer(_behaviour) as srv:
        run = subprocess.run(
            [sys.executable, "-m", "judges", "score", str(folder / "four.csv"),
             "--provider", "openai", "--model", "judge-x", "--base-url", srv.openai_url,
             "--no-cache", "--max-retries", "0", "--concurrency", "4",
             "--out", str(folder / "judged.csv"), "--quiet"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        calls = srv.n_requests
    judged = pd.read_csv(folder / "judged.csv") if (folder / "judged.csv").exists() else None
    return run, calls, markers, judged


def test_the_run_completes_and_loses_nothing(judged):
    run, calls, markers, table = judged
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert table is not None and len(table) == len(markers)  # every row written
    assert table[C.ID].tolist() == [f"q{i}" for i in range(len(markers))]
    assert calls == len(markers)  # one request per row: a bad reply is not re-bought
    control = table[table[C.ANSWER].str.contains(CONTROL)].iloc[0]
    assert control[C.ICS] == 4 and pd.isna(control[C.UNSCORED_REASON])


@pytest.mark.parametrize("case", params("judge_reply", "cli"))
def test_reply_end_to_end(case, judged):
    _, _, _, table = judged
    row = table[table[C.ANSWER] == f"Answer CASE-{case.id}."].iloc[0]
    if case.get("score") is not None:
        assert row[C.ICS] == case.get("score") and pd.isna(row[C.UNSCORED_REASON])
        return
    assert pd.isna(row[C.ICS])
    assert row[C.UNSCORED_REASON].startswith("ics: ")  # the metric, then the parser's reason
    assert case.expect("cli") in row[C.UNSCORED_REASON], row[C.UNSCORED_REASON]
