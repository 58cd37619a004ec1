"""The command line (python -m judges score | estimate | metrics)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.design import Design
from analysis.judge_stats import columns as C
from judges.cli import EXIT_INPUT, main
from judges.fourstage import sample_path
from tests.judges.judge_server import FakeLLMServer


@pytest.fixture
def sample_copy(tmp_path):
    path = tmp_path / "four.csv"
    path.write_bytes(sample_path().read_bytes())
    return path


def test_score_writes_the_judged_file_and_results(sample_copy, tmp_path, capsys):
    out, results, cache = tmp_path / "judged.csv", tmp_path / "res.csv", tmp_path / "c.sqlite"
    with FakeLLMServer() as srv:
        args = ["score", str(sample_copy), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--concurrency", "8", "--cache", str(cache),
                "--out", str(out), "--to-results", str(results), "--quiet"]
        assert main(args) == 0
        assert srv.n_requests == 48
        assert main(args) == 0
        assert srv.n_requests == 48  # rerun: all from the cache
        assert main([*args, "--no-cache"]) == 0
        assert srv.n_requests == 96
    err = capsys.readouterr().err
    assert "0 requests (0 retries), 48 from the cache" in err
    judged = pd.read_csv(out)
    assert len(judged) == 32 and int(judged[list(C.METRICS)].notna().sum().sum()) == 48
    assert judged["source"].notna().all()  # extra columns pass through
    table = pd.read_csv(results)
    assert len(table) == 32 and set(table["deviation"].dropna()) <= {0.0, 1.0}  # pairs
    assert table["pair_id"].is_unique
    design = Design.load(tmp_path / "res.design.yaml")
    assert design.names == ["stage", "sensitive_factor", "scenario", "model"]


def test_score_with_anthropic_and_parquet(sample_copy, tmp_path):
    out = tmp_path / "judged.parquet"
    with FakeLLMServer() as srv:
        code = main(["score", str(sample_copy), "--provider", "anthropic", "--model", "c",
                     "--base-url", srv.url, "--no-cache", "--out", str(out), "--quiet"])
        assert {c.api for c in srv.calls} == {"anthropic"}
    assert code == 0
    assert pd.read_parquet(out)["judge"].str.startswith("anthropic:c [").all()


def test_estimate_makes_no_request(sample_copy, tmp_path, capsys):
    with FakeLLMServer() as srv:
        assert main(["estimate", str(sample_copy), "--provider", "openai", "--model", "m",
                     "--base-url", srv.openai_url, "--cache", str(tmp_path / "c.sqlite")]) == 0
        assert srv.n_requests == 0
    out = capsys.readouterr().out
    lines = dict(line.split(":", 1) for line in out.splitlines())
    assert {k: v.strip() for k, v in lines.items()} == {
        "judgments": "48", "already cached": "0", "calls to make": "48",
        "input tokens (est.)": lines["input tokens (est.)"].strip(),
        "output tokens (est.)": "7,200",  # 48 calls x 150 assumed reply tokens
        "cost (est.)": "$0.0000",  # a local server is free in the bundled table
    }
    assert int(lines["input tokens (est.)"].replace(",", "")) > 48 * 400
    assert main(["estimate", str(sample_copy), "--provider", "openai", "--model", "mystery",
                 "--base-url", "https://llm.example.org/v1", "--no-cache"]) == 0
    captured = capsys.readouterr()
    assert "no price for this model" in captured.out
    assert "No price for 'mystery' in section 'openai-compatible'" in captured.err


def test_metrics_command(sample_copy, tmp_path, capsys):
    out = tmp_path / "judged.csv"
    with FakeLLMServer() as srv:
        main(["score", str(sample_copy), "--provider", "openai", "--model", "judge-x",
              "--base-url", srv.openai_url, "--no-cache", "--out", str(out), "--quiet"])
    capsys.readouterr()
    assert main(["metrics", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "share_fair" in printed and "socioeconomic status" in printed
    table_path = tmp_path / "metrics.csv"
    assert main(["metrics", str(out), "--by", "stage,model", "--out", str(table_path),
                 "--to-results", str(tmp_path / "r.parquet")]) == 0
    table = pd.read_csv(table_path)
    assert len(table) == 2 * 6  # 2 models x (ics, tcs, pcs, etcs, sbas, ics)
    assert table["n"].sum() == 48
    assert (tmp_path / "r.design.yaml").exists()


def test_errors_exit_2_with_a_message(sample_copy, tmp_path, capsys):
    assert main(["score", str(sample_copy), "--provider", "openai", "--model", "gpt-4o-mini",
                 "--out", str(tmp_path / "o.csv"), "--no-cache"]) == EXIT_INPUT
    assert "No API key for openai: set OPENAI_API_KEY" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("id,stage,sensitive_factor,scenario,model,question\n1,1,g,s,m,q\n")
    assert main(["estimate", str(bad), "--provider", "openai", "--model", "m"]) == EXIT_INPUT
    assert ("Missing column 'expected_output', needed by stage 1 rows (1: rows 1)"
            in capsys.readouterr().err)
    assert main(["metrics", str(sample_copy)]) == EXIT_INPUT
    assert "not a judged four-stage file" in capsys.readouterr().err
    assert main(["score", str(sample_copy), "--provider", "openai",
                 "--out", str(tmp_path / "o.csv")]) == EXIT_INPUT
    assert "--model is required" in capsys.readouterr().err


def test_exit_3_when_requests_fail(sample_copy, tmp_path):
    from tests.judges.judge_server import FakeReply
    with FakeLLMServer(lambda c: FakeReply.error(400)) as srv:
        code = main(["score", str(sample_copy), "--provider", "openai", "--model", "m",
                     "--base-url", srv.openai_url, "--no-cache", "--out",
                     str(tmp_path / "o.csv"), "--quiet"])
    assert code == 3
    judged = pd.read_csv(tmp_path / "o.csv")
    assert judged[C.UNSCORED_REASON].str.contains("request failed").all()
