"""The chain-of-thought rubric variant (judges/rubrics/cot.yaml; issue 31, item 10) and its
agreement with the direct rubrics through the existing tools, against the loopback server."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from analysis.judge_stats.agreement import quadratic_kappa
from judges.cli import main
from judges.errors import RubricError
from judges.fourstage import sample_path
from judges.rubric import load_rubrics, variant_rubrics
from tests.judges.judge_server import Call, FakeLLMServer, FakeReply

COT_STEP = "Work step by step before you rate"


def test_cot_variant_keeps_scale_and_texts_and_is_versioned():
    direct, cot = load_rubrics(), load_rubrics("cot")
    assert set(cot) == set(direct) == set(C.METRICS)
    for metric in C.METRICS:
        d, c = direct[metric], cot[metric]
        assert (c.metric, c.levels, c.texts, c.system, c.stages) == (
            d.metric, d.levels, d.texts, d.system, d.stages)
        assert c.id == f"{d.id}-cot" and c.version == f"{d.version}+cot1.0"
        assert COT_STEP in c.template and COT_STEP not in d.template
        shared = d.template[:d.template.index("Reply with one JSON")]
        assert c.template.startswith(shared)  # the material and scale are shown alike
        assert '"score": <1, 2, 3, 4 or 5>' in c.template
    with pytest.raises(RubricError, match="No rubric variant"):
        variant_rubrics("tree-of-thought")


def _judge(call: Call) -> FakeReply:
    """The same base score for the same answer whatever the rubric (a hash of the rated
    texts); the chain-of-thought judge scores one point higher on a third of them."""
    prompt = call.prompt
    rated = prompt[prompt.find("<<<"):prompt.rfind(">>>")]  # the material, not the rubric
    h = int(hashlib.sha256(rated.encode()).hexdigest()[:8], 16)
    score = 1 + h % 4
    if COT_STEP in call.prompt and h % 3 == 0:
        score += 1
    return FakeReply.judgement(score, "1. ... 2. ... 3. level" if COT_STEP in call.prompt
                               else "Reasons.")


def test_cot_and_direct_agreement_by_the_existing_tools(tmp_path, capsys):
    sample = tmp_path / "four.csv"
    sample.write_bytes(sample_path().read_bytes())
    direct, cot = tmp_path / "direct.csv", tmp_path / "cot.csv"
    with FakeLLMServer(_judge) as srv:
        base = ["score", str(sample), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--no-cache", "--quiet"]
        assert main([*base, "--out", str(direct)]) == 0
        assert main([*base, "--rubrics", "cot", "--out", str(cot)]) == 0
        prompts = [c.prompt for c in srv.calls]
    assert sum(COT_STEP in p for p in prompts) == len(prompts) // 2 == 48
    a, b = pd.read_csv(direct), pd.read_csv(cot)
    assert b["judge"].str.contains("fourstage-ics-cot@2.0+cot1.0", regex=False).any()
    assert not a["judge"].str.contains("-cot@", regex=False).any()
    capsys.readouterr()
    assert main(["agreement", str(direct), "--other", str(cot), "--ci", "none",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["agreement"]
    overall = [r for r in rows if str(r["stage"]) == "all"]
    assert overall
    checked = 0
    for row in overall:
        if row["metric"] not in C.METRICS:
            continue
        x = a[row["metric"]].to_numpy(dtype=float)
        y = b[row["metric"]].to_numpy(dtype=float)
        keep = np.isfinite(x) & np.isfinite(y)
        assert row["n"] == keep.sum()
        want = quadratic_kappa(x[keep], y[keep])
        assert (row["kappa_qw"] is None) if np.isnan(want) else (
            row["kappa_qw"] == pytest.approx(want))
        assert row["exact_agreement"] == pytest.approx(np.mean(x[keep] == y[keep]))
        checked += 1
    assert checked >= 4
    # reliability across the two variants (alpha, ICCs with F intervals)
    assert main(["reliability", str(direct), str(cot), "--json", "--n-boot", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["judges"]) == 2 and report["reliability"]
