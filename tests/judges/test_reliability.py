"""Reliability between judges and repeated samples (analysis/judge_stats/reliability.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from analysis.judge_stats.agreement import alpha_interval, icc_a1
from analysis.judge_stats.reliability import (
    ALPHA_ORDINAL,
    ICC1,
    ICC2,
    ICC3,
    RELIABILITY_COLUMNS,
    ReliabilityError,
    disagreements,
    icc,
    icc_f_intervals,
    krippendorff_alpha,
    reliability,
    reliability_data,
    score_spread,
)
from judges.cli import EXIT_INPUT, main

krippendorff = pytest.importorskip("krippendorff")

NAN = np.nan
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section on nominal
#: data with missing values: 4 observers x 12 units (rows are observers here).
K2011 = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                  [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                  [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                  [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]])
#: Shrout & Fleiss (1979), table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6],
                          [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float)


def test_krippendorff_2011_worked_example():
    units = K2011.T
    assert krippendorff_alpha(units, level="nominal") == pytest.approx(0.743, abs=5e-4)
    # The paper's other values for the same data: ordinal .815, interval .849.
    assert krippendorff_alpha(units, level="ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(units, level="interval") == pytest.approx(0.849, abs=5e-4)
    # Unit 12 has a single value (not pairable): dropping it changes nothing.
    assert krippendorff_alpha(units[:11], level="ordinal") == krippendorff_alpha(
        units, level="ordinal")


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_alpha_equals_the_krippendorff_package_with_missing_values(level, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=40)
    data = np.clip(truth[:, None] + rng.integers(-1, 2, size=(40, 3)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    ours = krippendorff_alpha(data, level=level)
    theirs = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_two_raters_match_the_agreement_module():
    rng = np.random.default_rng(7)
    x = rng.integers(1, 6, 30).astype(float)
    y = np.clip(x + rng.integers(-1, 2, 30), 1, 5)
    both = np.column_stack([x, y])
    assert icc(both)[ICC2] == pytest.approx(float(icc_a1(x, y)), abs=1e-12)
    assert krippendorff_alpha(both, level="interval") == pytest.approx(
        float(alpha_interval(x, y)), abs=1e-12)


def test_icc_on_shrout_and_fleiss_table():
    out = icc(SHROUT_FLEISS)
    assert round(out[ICC2], 2) == 0.29
    assert round(out[ICC3], 2) == 0.71
    assert round(out[ICC1], 2) == 0.17
    assert out[ICC1] == pytest.approx(0.1657, abs=1e-4)
    assert out[ICC2] == pytest.approx(0.2898, abs=1e-4)
    assert out[ICC3] == pytest.approx(0.7148, abs=1e-4)
    # A row with a missing value is left out (complete rows only).
    with_gap = np.vstack([SHROUT_FLEISS, [1, np.nan, 3, 4]])
    assert icc(with_gap)[ICC2] == pytest.approx(out[ICC2]) and icc(with_gap)["n_complete"] == 6


def _judged(scores: dict[str, list], stages: list[int], ids: list[str] | None = None
            ) -> pd.DataFrame:
    frame = pd.DataFrame({C.ID: ids or [f"q{i}" for i in range(len(stages))], C.STAGE: stages})
    for col, values in scores.items():
        frame[col] = values
    return frame


def test_disagreement_list_hand_made():
    frame = _judged({"ics@a": [1, 3, 5, 2, NAN], "ics@b": [3, 3, 2, 2, 4],
                     "ics@c": [2, 4, NAN, NAN, 1], "sbas@a": [NAN] * 5,
                     "sbas@b": [NAN] * 5, "sbas@c": [NAN] * 5}, [1, 1, 4, 1, 4])
    data = reliability_data([frame])
    assert data.judges == ["a", "b", "c"]
    table = disagreements(data)
    # row 3: 5 vs 2 (range 3); row 5: 4 vs 1 (3); row 1: 1, 3, 2 (2); rows 2 and 4 agree.
    assert table["row"].tolist() == [3, 5, 1]
    assert table["range"].tolist() == [3.0, 3.0, 2.0]
    assert table["id"].tolist() == ["q2", "q4", "q0"]
    assert table.columns.tolist() == ["row", "id", "stage", "metric", "range", "a", "b", "c"]
    assert table.iloc[0][["a", "b"]].tolist() == [5.0, 2.0] and np.isnan(table.iloc[0]["c"])
    assert disagreements(data, min_range=3)["row"].tolist() == [3, 5]


def test_reliability_table_per_stage_with_bootstrap():
    rng = np.random.default_rng(11)
    n = 60
    truth = rng.integers(1, 6, n)
    stages = [1 if i % 2 else 4 for i in range(n)]
    cols = {f"ics@j{k}": np.clip(truth + rng.integers(-1, 2, n), 1, 5).astype(float)
            for k in range(3)}
    cols["ics@j0"][:5] = np.nan  # missing scores: pairable values only
    data = reliability_data([_judged(cols, stages)])
    table = reliability(data, n_resamples=300, seed=5)
    assert table.columns.tolist() == list(RELIABILITY_COLUMNS)
    assert table[["metric", "stage", "across"]].values.tolist() == [
        ["ics", "1", "judges"], ["ics", "4", "judges"], ["ics", "all", "judges"]]
    x = data.scores["ics"]
    overall = table.iloc[2]
    assert overall[ALPHA_ORDINAL] == pytest.approx(krippendorff.alpha(
        reliability_data=x.T, level_of_measurement="ordinal"), abs=1e-12)
    stage1 = np.array(stages) == 1
    assert table.iloc[0][ALPHA_ORDINAL] == pytest.approx(
        krippendorff_alpha(x[stage1], level="ordinal"), abs=1e-12)
    complete = x[np.isfinite(x).all(1)]
    assert overall["n_complete"] == len(complete) == n - 5
    assert overall[ICC2] == pytest.approx(icc(complete)[ICC2])
    for s in (ALPHA_ORDINAL, ICC2, ICC3, ICC1):
        assert overall[f"{s}_low"] < overall[s] < overall[f"{s}_high"]
    assert reliability(data, n_resamples=300, seed=5).equals(table)  # seeded
    assert not reliability(data, n_resamples=300, seed=6).equals(table)


def test_samples_rows_use_icc1_only_and_the_sd_histogram():
    scores = ["[3, 3, 4]", "[1, 2, 1]", "[5, 5, 5]", "[2, 3]", "[4, 4, 5]", ""]
    sd = [0.577, 0.577, 0.0, 0.707, 0.577, NAN]
    frame = _judged({"ics": [3.33, 1.33, 5, 2.5, 4.33, NAN], "ics_scores": scores,
                     "ics_sd": sd, "judge": ["openai:x [r]"] * 6}, [1, 1, 4, 4, 1, 1])
    data = reliability_data([frame])
    assert data.judges == ["openai:x"]
    table = reliability(data, n_resamples=0)
    row = table[(table["stage"] == "all")].iloc[0]
    assert row["across"] == "samples: openai:x" and row["raters"] == 3
    matrix = np.array([[3, 3, 4], [1, 2, 1], [5, 5, 5], [2, 3, NAN], [4, 4, 5]])
    assert row[ALPHA_ORDINAL] == pytest.approx(krippendorff.alpha(
        reliability_data=matrix.T, level_of_measurement="ordinal"), abs=1e-12)
    assert row[ICC1] == pytest.approx(icc(matrix)[ICC1])
    assert np.isnan(row[ICC2]) and np.isnan(row[ICC3])
    # F interval without resampling (n_resamples=0), on the complete rows; alpha has none
    assert (row[f"{ICC1}_low"], row[f"{ICC1}_high"]) == pytest.approx(
        icc_f_intervals(matrix)[ICC1])
    assert np.isnan(row[f"{ALPHA_ORDINAL}_low"]) and np.isnan(row[f"{ICC2}_low"])
    spread = score_spread(data)
    assert spread["sd"].tolist() == sd[:5] and set(spread["source"]) == {"samples: openai:x"}


def test_one_judge_without_samples_is_refused():
    data = reliability_data([_judged({"ics": [1, 2]}, [1, 1])])
    with pytest.raises(ReliabilityError, match="nothing to compare"):
        reliability(data)


def test_several_files_align_or_refuse(tmp_path, capsys):
    a = _judged({"ics": [1, 2, 5, 4], "judge": ["openai:a [x]"] * 4}, [1, 1, 4, 4])
    b = _judged({"ics": [2, 2, 3, 4], "judge": ["anthropic:b [x]"] * 4}, [1, 1, 4, 4])
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    assert main(["reliability", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--json",
                 "--n-boot", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judges"] == ["openai:a", "anthropic:b"]
    overall = [r for r in report["reliability"] if r["stage"] == "all"][0]
    assert overall[ALPHA_ORDINAL] == pytest.approx(krippendorff.alpha(
        reliability_data=[[1, 2, 5, 4], [2, 2, 3, 4]], level_of_measurement="ordinal"))
    assert [d["row"] for d in report["disagreements"]] == [3]

    b.iloc[[1, 0, 2, 3]].reset_index(drop=True).assign(stage=[1, 1, 4, 4]).to_csv(
        tmp_path / "swapped.csv", index=False)
    assert main(["reliability", str(tmp_path / "a.csv"), str(tmp_path / "swapped.csv")]) == (
        EXIT_INPUT)
    assert "differ in 'id' at 2 row(s), first at row 1 ('q0' vs 'q1')" in capsys.readouterr().err
    b.iloc[:3].to_csv(tmp_path / "short.csv", index=False)
    assert main(["reliability", str(tmp_path / "a.csv"), str(tmp_path / "short.csv")]) == (
        EXIT_INPUT)
    assert "short.csv has 3 rows and a.csv 4" in capsys.readouterr().err
    assert main(["reliability", str(tmp_path / "a.csv")]) == EXIT_INPUT
    assert "nothing to compare" in capsys.readouterr().err


def test_bootstrap_weights_equal_explicit_resamples():
    """A resample as counts per row gives the statistics of the repeated rows themselves."""
    from analysis.judge_stats.reliability import _alpha_from, _coincidences, _icc_from_sums

    rng = np.random.default_rng(4)
    x = np.clip(rng.integers(1, 6, 25)[:, None] + rng.integers(-1, 2, (25, 3)), 1, 5).astype(
        float)
    x[rng.random(x.shape) < 0.1] = np.nan
    idx = rng.integers(0, 25, 25)
    w = np.bincount(idx, minlength=25).astype(float)[None]
    domain = np.unique(x[np.isfinite(x)])
    o = (w @ _coincidences(x, domain).reshape(25, -1)).reshape(1, len(domain), len(domain))
    assert float(_alpha_from(o, domain, "ordinal")[0]) == pytest.approx(
        krippendorff_alpha(x[idx], level="ordinal"), abs=1e-12)
    complete = np.isfinite(x).all(1)
    weighted = _icc_from_sums(w[:, complete], x[complete])
    explicit = icc(x[idx])
    for s in (ICC1, ICC2, ICC3):
        assert float(weighted[s][0]) == pytest.approx(explicit[s], abs=1e-12)


def test_icc_f_intervals_are_r_psych_documented_bounds():
    # R psych::ICC(sf) (its help page): ICC1 -0.133..0.72, ICC2 0.019..0.76, ICC3 0.342..0.95
    ci = icc_f_intervals(SHROUT_FLEISS)
    assert ci[ICC1][0] == pytest.approx(-0.133, abs=5e-4)
    assert ci[ICC1][1] == pytest.approx(0.72, abs=5e-3)
    assert ci[ICC2][0] == pytest.approx(0.019, abs=5e-4)
    assert ci[ICC2][1] == pytest.approx(0.76, abs=5e-3)
    assert ci[ICC3][0] == pytest.approx(0.342, abs=5e-4)
    assert ci[ICC3][1] == pytest.approx(0.95, abs=5e-3)


@pytest.mark.parametrize("seed", [1, 2])
def test_icc_f_intervals_equal_pingouin(seed, monkeypatch):
    pg = pytest.importorskip("pingouin")
    monkeypatch.setitem(pg.options, "round.column.CI95", None)  # it rounds to 2 decimals
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(44, 1)) + rng.normal(size=(44, 3)) + np.array([0.0, 0.4, 1.0])
    long = pd.DataFrame(x).reset_index().melt(id_vars="index")
    ref = pg.intraclass_corr(long, targets="index", raters="variable", ratings="value")
    ref = ref.set_index("Type")
    ours = icc_f_intervals(x)
    for name, kind in ((ICC1, "ICC(1,1)"), (ICC2, "ICC(A,1)"), (ICC3, "ICC(C,1)")):
        assert ours[name] == pytest.approx(tuple(ref.loc[kind, "CI95"]), abs=1e-10)
    table = reliability(reliability_data([_judged({f"ics@j{j}": x[:, j] for j in range(3)},
                                                  [1] * 44)]), n_resamples=0).iloc[0]
    for name in (ICC1, ICC2, ICC3):
        assert (table[f"{name}_low"], table[f"{name}_high"]) == pytest.approx(ours[name])


def test_icc_f_intervals_cover_by_simulation():
    """44 rows x 3 judges, normal random effects: the F intervals keep 95 % (the row
    bootstrap gave 93 / 85 / 94 % here, docs/judges.md section 12)."""
    rng = np.random.default_rng(7)
    n, reps = 44, 600
    truth = {ICC1: 0.5, ICC2: 1 / 2.5, ICC3: 0.5}
    hits = dict.fromkeys(truth, 0)
    for _ in range(reps):
        rows, e = rng.normal(size=(n, 1)), rng.normal(size=(n, 3))
        tables = {ICC1: rows + e, ICC2: rows + rng.normal(0, 0.5 ** 0.5, (1, 3)) + e,
                  ICC3: rows + np.array([0.0, 0.5, -1.0]) + e}
        for name, x in tables.items():
            lo, hi = icc_f_intervals(x)[name]
            hits[name] += lo <= truth[name] <= hi
    for name in truth:  # binomial SD at 600 reps: 0.9 %
        assert 0.925 <= hits[name] / reps <= 0.975, (name, hits[name] / reps)
