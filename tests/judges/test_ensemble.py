"""Several judges and their ensemble (judges/ensemble.py, score --judge / --judges)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.cli import EXIT_INPUT, main
from judges.ensemble import (
    JudgeSpec,
    JudgeSpecError,
    ensemble_judged,
    judges_from_data,
    parse_judge,
)
from judges.fourstage import sample_path
from tests.judges.judge_server import FakeLLMServer, FakeReply, hashed_score


@pytest.fixture
def sample_copy(tmp_path):
    path = tmp_path / "four.csv"
    path.write_bytes(sample_path().read_bytes())
    return path


def by_model(call):
    """judge-a always says 2; judge-b a deterministic 1-5 from the prompt."""
    if call.body.get("model") == "judge-a":
        return FakeReply.judgement(2, "A says two.")
    return FakeReply.judgement(hashed_score(call), "B's view.")


def _yaml(tmp_path, srv, extra: str = "") -> str:
    path = tmp_path / "judges.yaml"
    path.write_text(f"""judges:
  - provider: openai
    model: judge-a
    base_url: {srv.openai_url}
  - name: claude
    provider: anthropic
    model: judge-b
    base_url: {srv.url}
{extra}""")
    return str(path)


def test_two_judges_real_clients_requests_and_ensemble(sample_copy, tmp_path, capsys):
    out, cache = tmp_path / "judged.csv", tmp_path / "c.sqlite"
    with FakeLLMServer(by_model) as srv:
        args = ["score", str(sample_copy), "--judges", _yaml(tmp_path, srv), "--cache",
                str(cache), "--out", str(out), "--quiet", "--to-results",
                str(tmp_path / "res.csv")]
        assert main(args) == 0
        assert srv.n_requests == 96  # 48 judgments x 2 judges
        assert sorted({(c.api, c.body["model"]) for c in srv.calls}) == [
            ("anthropic", "judge-b"), ("openai", "judge-a")]
        assert sum(c.api == "openai" for c in srv.calls) == 48
        assert main(args) == 0
        assert srv.n_requests == 96  # rerun: all from the cache
        assert main([*args[:-2], "--ensemble", "median", "--out", str(tmp_path / "med.csv")]
                    ) == 0
        assert srv.n_requests == 96
    err = capsys.readouterr().err
    assert "openai:judge-a: 48 requests" in err and "claude: 48 requests" in err
    judged = pd.read_csv(out)
    assert len(judged) == 32
    for m in C.METRICS:
        a = judged[f"{m}@openai:judge-a"]
        b = judged[f"{m}@claude"]
        applies = a.notna()
        assert (a[applies] == 2).all() and b[applies].between(1, 5).all()
        assert np.allclose(judged.loc[applies, m], (a + b)[applies] / 2)
        assert np.allclose(judged.loc[applies, f"{m}_judges_sd"],
                           np.abs(a - b)[applies] / np.sqrt(2))
        assert (judged.loc[applies, f"{m}_judges_n"] == 2).all()
        assert judged.loc[~applies, m].isna().all()
    assert judged["ics_explanation"].dropna().str.contains(
        "openai:judge-a: A says two. || claude: B's view.", regex=False).all()
    assert judged["judge"].str.startswith("ensemble mean of openai:judge-a, claude [").all()
    assert (judged["judge_input_tokens"] == judged["judge_input_tokens@openai:judge-a"]
            + judged["judge_input_tokens@claude"]).all()
    assert judged["judge@claude"].str.startswith("anthropic:judge-b [").all()
    median = pd.read_csv(tmp_path / "med.csv")  # two judges: the median is the mean
    assert np.allclose(median["ics"].dropna(), judged["ics"].dropna())
    results = pd.read_csv(tmp_path / "res.csv")
    assert len(results) == 32 and "ics@claude" in results.columns


def test_one_judge_is_the_single_judge_file(sample_copy, tmp_path):
    with FakeLLMServer() as srv:
        base = [str(sample_copy), "--base-url", srv.openai_url, "--no-cache", "--quiet"]
        assert main(["score", *base, "--provider", "openai", "--model", "judge-x",
                     "--out", str(tmp_path / "a.csv")]) == 0
        assert main(["score", *base, "--judge", "openai:judge-x",
                     "--out", str(tmp_path / "b.csv")]) == 0
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert a.columns.tolist() == b.columns.tolist()
    assert a[list(C.METRICS)].equals(b[list(C.METRICS)])


def test_estimate_per_judge_and_total(sample_copy, tmp_path, capsys):
    with FakeLLMServer() as srv:
        assert main(["estimate", str(sample_copy), "--judge", "openai:judge-x", "--judge",
                     "openai:judge-y", "--base-url", srv.openai_url, "--no-cache"]) == 0
        assert srv.n_requests == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["openai:judge-x"][1:4] == ["48", "0", "48"]
    assert rows["total"][1:4] == ["96", "0", "96"]
    assert int(rows["total"][5]) == 2 * 48 * 150


@pytest.mark.parametrize(("text", "message"), [
    ("- provider: openai\n  model: m\n  colour: red\n",
     "judge 1 has unknown key(s) colour; allowed: name, provider, model"),
    ("- provider: openai\n", "judge 1 has no model"),
    ("- provider: openai\n  model: m\n- provider: openai\n  model: m\n",
     "Two judges are named 'openai:m'"),
    ("- provider: embedding\n  model: bundled\n", "Unknown judge provider 'embedding'"),
    ("- provider: openai\n  model: m\n  temperature: hot\n", "temperature must be a number"),
    ("judges: 3\n", "expected a non-empty list of judges"),
])
def test_bad_judges_yaml_exits_2(sample_copy, tmp_path, capsys, text, message):
    path = tmp_path / "j.yaml"
    path.write_text(text)
    code = main(["score", str(sample_copy), "--judges", str(path), "--out",
                 str(tmp_path / "o.csv"), "--no-cache"])
    assert code == EXIT_INPUT
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_judge_option_errors(sample_copy, tmp_path, capsys):
    out = ["--out", str(tmp_path / "o.csv"), "--no-cache"]
    assert main(["score", str(sample_copy), *out]) == EXIT_INPUT
    assert "Choose a judge" in capsys.readouterr().err
    assert main(["score", str(sample_copy), "--provider", "openai", "--model", "m",
                 "--judge", "openai:n", *out]) == EXIT_INPUT
    assert "either with --provider/--model or with --judge" in capsys.readouterr().err
    assert main(["score", str(sample_copy), "--judge", "gpt-4o", *out]) == EXIT_INPUT
    assert "--judge takes provider:model" in capsys.readouterr().err
    assert main(["score", str(sample_copy), "--judge", "openai:a", "--judge", "openai:b",
                 "--batch", *out]) == EXIT_INPUT
    assert "--batch runs one judge" in capsys.readouterr().err


def test_api_key_env_must_be_set(sample_copy, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    path = tmp_path / "j.yaml"
    path.write_text("- provider: openai\n  model: a\n  api_key_env: MY_JUDGE_KEY\n"
                    "- provider: openai\n  model: b\n")
    assert main(["score", str(sample_copy), "--judges", str(path), "--out",
                 str(tmp_path / "o.csv"), "--no-cache"]) == EXIT_INPUT
    assert "MY_JUDGE_KEY (its api_key_env) is not set" in capsys.readouterr().err


def test_specs_names_and_temperature():
    assert parse_judge("openai:llama3:8b").model == "llama3:8b"
    assert JudgeSpec("openai", "gpt 4o@x").name == "openai:gpt-4o-x"
    specs = judges_from_data([{"provider": "anthropic", "model": "c", "temperature": None,
                               "name": "c1"}])
    assert specs[0].name == "c1" and specs[0].temperature is None
    with pytest.raises(JudgeSpecError):
        JudgeSpec("openai", "  ")


def test_median_ensemble_and_unscored_judgments():
    frame = pd.DataFrame({"id": ["a", "b", "c"], "stage": [1, 1, 4]})

    def judged(scores, reasons):
        return frame.assign(ics=pd.array(scores, dtype="Int64"), ics_explanation="",
                            unscored_reason=reasons, judge="x [r]")

    files = {"j1": judged([1, 5, None], ["", "", "ics: no JSON object in the reply"]),
             "j2": judged([2, 4, None], ["", "", "ics: empty reply"]),
             "j3": judged([5, None, None], ["", "ics: refusal: no", "ics: empty reply"])}
    out = ensemble_judged(frame, files, method="median")
    assert out["ics"].tolist()[:2] == [2.0, 4.5] and pd.isna(out["ics"].iloc[2])
    assert out["ics_judges_n"].tolist() == [3, 2, 0]
    assert out["ics_judges_sd"].iloc[0] == pytest.approx(np.std([1, 2, 5], ddof=1))
    assert out["unscored_reason"].tolist() == [
        "", "", "ics: no judge scored it (j1: no JSON object in the reply; j2: empty reply; "
                "j3: empty reply)"]
    assert ensemble_judged(frame, files)["ics"].iloc[0] == pytest.approx(8 / 3)
    assert ensemble_judged(frame, {"j1": files["j1"]}) is files["j1"]


def test_sample_columns_are_kept_per_judge_and_read_by_reliability():
    from analysis.judge_stats.reliability import reliability, reliability_data

    frame = pd.DataFrame({"id": ["a", "b", "c", "d"], "stage": [1, 1, 4, 4]})

    def judged(means, lists):
        return frame.assign(ics=means, ics_sd=[float(np.std(v, ddof=1)) for v in lists],
                            ics_n=[len(v) for v in lists],
                            ics_scores=[str(v) for v in lists], judge="x [r]")

    one = judged([3.0, 1.5, 4.0, 2.0], [[3, 3], [1, 2], [4, 4], [2, 2]])
    two = judged([4.0, 2.0, 4.5, 1.0], [[4, 4], [2, 2], [5, 4], [1, 1]])
    out = ensemble_judged(frame, {"p": one, "q": two})
    assert out["ics_scores@p"].tolist() == one["ics_scores"].tolist()
    assert "ics_sd" not in out.columns and out["ics_n@q"].tolist() == [2, 2, 2, 2]
    assert out["ics"].tolist() == [3.5, 1.75, 4.25, 1.5]
    data = reliability_data([out])
    assert data.judges == ["p", "q"]
    table = reliability(data, n_resamples=0)
    assert set(table["across"]) == {"judges", "samples: p", "samples: q"}
    samples_q = table[(table["across"] == "samples: q") & (table["stage"] == "all")].iloc[0]
    assert samples_q["n_units"] == 4 and samples_q["raters"] == 2


def test_two_judges_with_samples_then_reliability(sample_copy, tmp_path, capsys):
    import json

    def behaviour(call):
        if call.body.get("model") == "judge-a":  # sample 1 says 3, sample 2 says 4
            return FakeReply.judgement(3 if call.body.get("seed") is None else 4)
        return FakeReply.judgement(hashed_score(call))

    out = tmp_path / "judged.csv"
    with FakeLLMServer(behaviour) as srv:
        assert main(["score", str(sample_copy), "--judge", "openai:judge-a", "--judge",
                     "openai:judge-b", "--base-url", srv.openai_url, "--samples", "2",
                     "--temperature", "1", "--no-cache", "--out", str(out), "--quiet"]) == 0
        assert srv.n_requests == 2 * 2 * 48
    judged = pd.read_csv(out)
    ics = judged[judged["stage"].isin([1, 4])]
    assert (ics["ics_scores@openai:judge-a"] == "[3, 4]").all()
    assert (ics["ics@openai:judge-a"] == 3.5).all()
    assert np.allclose(ics["ics"], (3.5 + ics["ics@openai:judge-b"]) / 2)
    capsys.readouterr()
    assert main(["reliability", str(out), "--json", "--n-boot", "100"]) == 0
    report = json.loads(capsys.readouterr().out)
    across = {r["across"] for r in report["reliability"]}
    assert across == {"judges", "samples: openai:judge-a", "samples: openai:judge-b"}
    a_rows = [r for r in report["reliability"] if r["across"] == "samples: openai:judge-a"]
    # judge-a's two samples always differ (3 vs 4): no agreement beyond chance
    assert all(r["alpha_ordinal"] < 0 for r in a_rows if r["alpha_ordinal"] is not None)
