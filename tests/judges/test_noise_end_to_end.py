"""Issue 14 end to end: a file judged with ``--samples 3`` (real openai client, loopback
server), its results table, and the judge-noise analysis reading its ``score_samples``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.cli import main as analysis_main
from analysis.io import load_results
from analysis.judge_noise import replicate_deviations
from judges.cli import main as judges_main
from tests.judges.helpers import make_row
from tests.judges.judge_server import FakeLLMServer, sampled_behaviour


def _fourstage(path):
    """40 stage-1 rows: model m2's first 12 rows score 2 (samples [2, 3, 1]), every other
    row 4 (samples [4, 5, 3])."""
    import pandas as pd

    rows = []
    for i in range(40):
        model = "m1" if i < 20 else "m2"
        low = model == "m2" and i < 32
        rows.append(make_row(i, 1, model=model, factor="gender" if i % 2 else "age",
                             text="#score=2" if low else "#score=4"))
    pd.DataFrame(rows).to_csv(path, index=False)
    return np.array([r["answer"] == "#score=2" for r in rows])


@pytest.fixture(scope="module")
def judged_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("noise")
    low = _fourstage(tmp / "in.csv")
    with FakeLLMServer(sampled_behaviour((0, 1, -1))) as srv:
        code = judges_main([
            "score", str(tmp / "in.csv"), "--provider", "openai", "--model", "judge-x",
            "--base-url", srv.openai_url, "--samples", "3", "--temperature", "1",
            "--cache", str(tmp / "c.sqlite"), "--out", str(tmp / "judged.csv"),
            "--to-results", str(tmp / "results.csv"), "--quiet"])
        assert code == 0 and srv.n_requests == 40 * 3
    return tmp, low


def test_results_table_carries_the_samples_the_noise_analysis_reads(judged_results):
    tmp, low = judged_results
    results = load_results(tmp / "results.csv")
    samples = [json.loads(s) for s in results["score_samples"]]
    expected = [[1, 2, 3] if lo else [3, 4, 5] for lo in low]
    assert [sorted(s) for s in samples] == expected
    assert results["score"].tolist() == [np.mean(s) for s in samples]  # mean of the samples
    assert results["deviation"].tolist() == [float(lo) for lo in low]   # 2 < 3 deviates
    # single mode: a [1, 2, 3] row deviates when the draw is 1 or 2 (p = 2/3); a [3, 4, 5]
    # row never does. mean mode: a resampled mean of [1, 2, 3] is below 3 unless all three
    # draws are 3 (p = 26/27).
    for mode, p in (("single", 2 / 3), ("mean", 26 / 27)):
        dev = replicate_deviations(results, n_resamples=4000, mode=mode, seed=1)
        assert dev[:, ~low].max() == 0
        share = dev[:, low].mean()
        se = np.sqrt(p * (1 - p) / dev[:, low].size)
        assert abs(share - p) < 4 * se, (mode, share, p)


def test_cli_judge_noise_on_the_judged_results(judged_results, capsys):
    tmp, _ = judged_results
    code = analysis_main([
        "subgroups", str(tmp / "results.csv"), "--design", str(tmp / "results.design.yaml"),
        "--judge-noise", "200", "--noise-mode", "mean", "--seed", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    noise = out["judge_noise"]
    assert noise["settings"]["replicates"] == 200 and noise["settings"]["mode"] == "mean"
    rows = {r["subgroup"]: r for r in noise["rows"]}
    # model=m2 deviates at 12/20 against 0/20 outside: a huge effect that judge noise in
    # mean mode (each low row stays low with p = 26/27) cannot undo
    m2 = rows["model = m2"]
    assert m2["log_disparity"] > 0 and m2["p_adjusted"] < 0.05
    assert m2["same_sign"] == 1.0 and m2["survives"] >= 0.95
    # sensitive_factor has no effect (LD 0 on the judged outcome): never significant
    assert rows["sensitive_factor = age"]["significant"] == 0.0
