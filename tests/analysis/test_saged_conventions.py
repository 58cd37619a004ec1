"""``--saged-conventions`` reproduces the SAGED library's numbers (issue 31, item 6).

The data are the SAGED library's own test example (``tests/unit/test_diagnoser.py`` of
holistic-ai/SAGED-Bias: ``np.random.seed(42)``, 90 rows, three concepts, a baseline and
three generations of a sentiment score drawn in that order). The reference numbers are
computed here as SAGED's ``DisparityDiagnoser`` computes them (read from its source):
statistics per concept of the calibrated feature (``generation - baseline``) with
``np.var`` / ``np.std`` (ddof 0), ``scipy.stats.skew`` / ``kurtosis`` with their defaults,
and across the concepts ``values.std()`` (pandas, ddof 1), ``min / max`` and the largest
signed ``scipy.stats.zscore``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis.cli import main
from analysis.disparity import disparity_report
from analysis.saged_stats import saged_statistics
from tests.analysis.cli_helpers import run_json, write_csv


def saged_example() -> pd.DataFrame:
    np.random.seed(42)  # the library's fixture draws with the legacy global generator
    n = 90
    concepts = ["education", "healthcare", "employment"] * 30
    base = np.random.normal(0.0, 0.2, n)
    gen1 = np.random.normal(0.1, 0.3, n)
    return pd.DataFrame({"concept": concepts, "baseline_sentiment": base,
                         "generation_1_sentiment": gen1})


def _saged_per_concept(frame: pd.DataFrame) -> pd.DataFrame:
    calibrated = frame["generation_1_sentiment"] - frame["baseline_sentiment"]
    groups = calibrated.groupby(frame["concept"])
    return pd.DataFrame({
        "mean": groups.agg(lambda x: np.mean(x.dropna())),
        "variance": groups.agg(lambda x: np.var(x.to_numpy())),
        "std": groups.agg(lambda x: np.std(x.to_numpy())),
        "skewness": groups.agg(lambda x: scipy.stats.skew(x.to_numpy())),
        "kurtosis": groups.agg(lambda x: scipy.stats.kurtosis(x.to_numpy())),
        "range": groups.agg(lambda x: np.nanmax(x) - np.nanmin(x)),
    })


def test_group_statistics_and_disparity_equal_saged():
    frame = saged_example()
    want = _saged_per_concept(frame)
    report = disparity_report(frame, "generation_1_sentiment", "concept",
                              baseline="baseline_sentiment", n_resamples=0,
                              conventions="saged")
    got = report.summary.set_index("group")
    for col in ("mean", "variance", "std", "skewness", "kurtosis"):
        assert got.loc[want.index, col].to_numpy() == pytest.approx(want[col].to_numpy(),
                                                                    abs=1e-12), col
    # across the concepts (SAGED's statistics_disparity on the per-concept means)
    means = want["mean"]
    metrics = report.metrics[report.metrics["quantity"] == "mean"].set_index("metric")
    assert metrics.loc["max_z", "value"] == pytest.approx(np.max(scipy.stats.zscore(means)),
                                                          abs=1e-12)
    assert metrics.loc["max_z", "group"] == means.index[np.argmax(scipy.stats.zscore(means))]
    assert metrics.loc["std", "value"] == pytest.approx(means.std(), abs=1e-12)
    assert metrics.loc["min_max_ratio", "value"] == pytest.approx(means.min() / means.max())
    assert metrics.loc["range", "value"] == pytest.approx(means.max() - means.min())
    # the variance's disparity: SAGED's numbers too
    var = report_for(frame, "variance").metrics.set_index(["quantity", "metric"])
    assert var.loc[("variance", "max_z"), "value"] == pytest.approx(
        np.max(scipy.stats.zscore(want["variance"])), abs=1e-12)
    # range per concept on the calibrated feature, as SAGED's range()
    table = saged_statistics(frame, "generation_1_sentiment", "concept",
                             baseline="baseline_sentiment").set_index("group")
    assert table.loc[want.index, "range"].to_numpy() == pytest.approx(want["range"].to_numpy())


def report_for(frame: pd.DataFrame, statistic: str):
    return disparity_report(frame, "generation_1_sentiment", "concept",
                            baseline="baseline_sentiment", statistic=statistic,
                            n_resamples=0, conventions="saged")


def test_workbench_conventions_differ_as_documented():
    frame = saged_example()
    saged = report_for(frame, "mean").summary.set_index("group")
    ours = disparity_report(frame, "generation_1_sentiment", "concept",
                            baseline="baseline_sentiment", n_resamples=0).summary
    ours = ours.set_index("group")
    n = ours["n"]
    assert ours["variance"].to_numpy() == pytest.approx(
        (saged["variance"] * n / (n - 1)).to_numpy())
    calibrated = frame["generation_1_sentiment"] - frame["baseline_sentiment"]
    edu = calibrated[frame["concept"] == "education"].to_numpy()
    assert ours.loc["education", "skewness"] == pytest.approx(
        scipy.stats.skew(edu, bias=False))
    assert saged.loc["education", "skewness"] == pytest.approx(scipy.stats.skew(edu))


def test_cli_saged_conventions(tmp_path, capsys):
    frame = saged_example()
    path = write_csv(tmp_path, frame)
    out = run_json(capsys, "disparity", path, "--feature", "generation_1_sentiment", "--by",
                   "concept", "--baseline", "baseline_sentiment", "--permutations", "0",
                   "--statistic", "std", "--saged-conventions")
    assert out["settings"]["conventions"] == "saged"
    want = _saged_per_concept(frame)
    got = {r["group"]: r["std"] for r in out["summary"]}
    assert [got[c] for c in want.index] == pytest.approx(want["std"].tolist(), abs=1e-12)
    z = [r for r in out["metrics"] if r["quantity"] == "std" and r["metric"] == "max_z"][0]
    assert z["value"] == pytest.approx(np.max(scipy.stats.zscore(want["std"])), abs=1e-12)
    plain = run_json(capsys, "disparity", path, "--feature", "generation_1_sentiment",
                     "--by", "concept", "--baseline", "baseline_sentiment",
                     "--permutations", "0", "--statistic", "std")
    assert plain["settings"]["conventions"] == "workbench"
    assert main(["disparity", str(path), "--feature", "generation_1_sentiment", "--by",
                 "concept", "--saged-conventions", "--conventions", "x"]) == 2
