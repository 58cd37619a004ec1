"""Agreement with human labels (judges/agreement.py): numbers checked against hand
computations, scipy and statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa

from judges import columns as C
from judges.agreement import (
    AGREEMENT_COLUMNS,
    ALL,
    _kendalls,
    _tables,
    agreement,
    confusion_matrix,
    human_pairs,
    merge_judged,
    pair_agreement,
    quadratic_kappa,
    weighted_kappa,
    weighted_kappa_se,
)
from judges.cli import EXIT_INPUT
from judges.cli import main as scale_main
from judges.errors import JudgesError


def labelled(n: int = 80, seed: int = 3) -> pd.DataFrame:
    """Judge scores and human labels that mostly agree (within one point)."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n)
    judge = np.clip(human + rng.choice([-1, 0, 0, 1], n), 1, 5)
    stage = np.tile([1, 2, 3, 4], n // 4)
    return pd.DataFrame({"id": [f"q{i}" for i in range(n)], "stage": stage, "ics": judge,
                         "human_ics": human, "sbas": human, "sbas_human": judge})


def test_kappa_by_hand():
    # O = [[1,1,0],[0,1,0],[0,1,1]]; margins rows (2,1,2), cols (1,3,1); W = ((i-j)/2)^2.
    # sum W*O = 0.25 + 0.25 = 0.5; sum W*E = (6*.25 + 2 + .25 + .25 + 2 + 6*.25) / 5 = 1.5.
    a, b = [1, 2, 3, 1, 3], [1, 2, 3, 2, 2]
    table = confusion_matrix(a, b, (1, 2, 3))
    assert table.tolist() == [[1, 1, 0], [0, 1, 0], [0, 1, 1]]
    assert weighted_kappa(table) == pytest.approx(1 - 0.5 / 1.5)
    assert quadratic_kappa(a, b) == pytest.approx(2 / 3)
    assert quadratic_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    assert quadratic_kappa([1, 5], [5, 1]) == pytest.approx(-1.0)
    assert math.isnan(quadratic_kappa([3, 3], [3, 3]))       # no expected disagreement
    assert math.isnan(quadratic_kappa([0.2, 0.9], [0.1, 0.8]))  # not whole numbers
    with pytest.raises(ValueError, match="score 7.0 is not one of the categories"):
        confusion_matrix([7], [1], (1, 2, 3))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kappa_and_its_standard_error_match_statsmodels(seed):
    frame = labelled(60, seed)
    table = confusion_matrix(frame["ics"], frame["human_ics"], (1, 2, 3, 4, 5))
    reference = cohens_kappa(table, wt="quadratic")
    assert weighted_kappa(table) == pytest.approx(reference.kappa, abs=1e-12)
    assert weighted_kappa_se(table) == pytest.approx(reference.std_kappa, abs=1e-12)


def test_unused_categories_do_not_change_kappa():
    a, b = [2, 3, 4, 4, 2], [2, 4, 4, 3, 3]
    assert quadratic_kappa(a, b, (1, 2, 3, 4, 5)) == pytest.approx(
        quadratic_kappa(a, b, (2, 3, 4)))


def test_correlations_match_scipy_and_analytic_intervals():
    frame = labelled()
    x, y = frame["ics"].to_numpy(float), frame["human_ics"].to_numpy(float)
    row = pair_agreement(x, y, ci="analytic")
    assert row["n"] == 80 and row["n_missing"] == 0
    assert row["pearson_r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert row["pearson_r_p"] == pytest.approx(stats.pearsonr(x, y).pvalue)
    assert row["spearman_rho"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert row["kendall_tau"] == pytest.approx(stats.kendalltau(x, y).statistic)
    assert row["kendall_tau_p"] == pytest.approx(stats.kendalltau(x, y).pvalue)
    assert row["exact_agreement"] == pytest.approx(np.mean(x == y))
    z = stats.norm.ppf(0.975)
    centre, half = math.atanh(row["pearson_r"]), z / math.sqrt(77)
    assert (row["pearson_r_low"], row["pearson_r_high"]) == pytest.approx(
        (math.tanh(centre - half), math.tanh(centre + half)))
    rho = row["spearman_rho"]
    se = math.sqrt((1 + rho ** 2 / 2) / 77)
    assert row["spearman_rho_low"] == pytest.approx(math.tanh(math.atanh(rho) - z * se))
    tau = row["kendall_tau"]
    assert row["kendall_tau_high"] == pytest.approx(
        math.tanh(math.atanh(tau) + z * math.sqrt(0.437 / 76)))
    reference = cohens_kappa(confusion_matrix(x, y, (1, 2, 3, 4, 5)), wt="quadratic")
    assert (row["kappa_qw_low"], row["kappa_qw_high"]) == pytest.approx(
        (reference.kappa - z * reference.std_kappa, reference.kappa + z * reference.std_kappa))


def test_bootstrap_intervals_are_seeded_and_cover_the_estimate():
    frame = labelled()
    x, y = frame["ics"], frame["human_ics"]
    one = pair_agreement(x, y, n_boot=500, random_state=7)
    two = pair_agreement(x, y, n_boot=500, random_state=7)
    other = pair_agreement(x, y, n_boot=500, random_state=8)
    assert one == two
    assert one["kappa_qw_low"] != other["kappa_qw_low"]
    for name in ("pearson_r", "spearman_rho", "kendall_tau", "kappa_qw"):
        assert one[f"{name}_low"] < one[name] < one[f"{name}_high"]
        assert one[f"{name}_high"] - one[f"{name}_low"] < 0.2
    # The vectorised resample statistics equal scipy's and the kappa above.
    idx = np.random.default_rng(0).integers(0, 80, (30, 80))
    xs, ys = x.to_numpy(float), y.to_numpy(float)
    tables = _tables(xs, ys, idx, (1, 2, 3, 4, 5))
    taus = _kendalls(tables)
    for i in range(30):
        assert taus[i] == pytest.approx(stats.kendalltau(xs[idx[i]], ys[idx[i]]).statistic)
        assert weighted_kappa(tables[i]) == pytest.approx(quadratic_kappa(xs[idx[i]],
                                                                          ys[idx[i]]))


def test_missing_labels_small_groups_and_continuous_scores():
    row = pair_agreement([1, 2, np.nan, 4, "x"], [1, 2, 3, np.nan, 5], ci="none")
    assert (row["n"], row["n_missing"]) == (2, 3)
    assert row["exact_agreement"] == 1.0 and math.isnan(row["pearson_r"])
    sims = pair_agreement([0.1, 0.5, 0.7, 0.9, 0.3], [1, 3, 4, 5, 2], n_boot=200)
    assert sims["spearman_rho"] == pytest.approx(1.0)
    assert math.isnan(sims["kappa_qw"]) and math.isnan(sims["kappa_qw_low"])
    assert sims["kendall_tau_low"] <= 1.0
    with pytest.raises(ValueError, match="must be 'bootstrap', 'analytic' or 'none'"):
        pair_agreement([1, 2, 3], [1, 2, 3], ci="exact")


def test_table_per_metric_stage_and_overall():
    frame = labelled()
    frame.loc[0, "human_ics"] = np.nan
    assert human_pairs(frame) == [("ics", "human_ics"), ("sbas", "sbas_human")]
    table = agreement(frame, n_boot=200)
    assert list(table.columns) == list(AGREEMENT_COLUMNS)
    assert table[[C.METRIC, C.STAGE]].to_numpy().tolist() == [
        *[["ics", s] for s in ("1", "2", "3", "4", ALL)],
        *[["sbas", s] for s in ("1", "2", "3", "4", ALL)],
        *[[ALL, s] for s in ("1", "2", "3", "4", ALL)]]
    ics_all = table.iloc[4]
    assert (ics_all["n"], ics_all["n_missing"]) == (79, 1)
    assert table.iloc[0]["n"] == 19 and table.iloc[1]["n"] == 20
    keep = frame["human_ics"].notna()
    assert ics_all["kappa_qw"] == pytest.approx(
        quadratic_kappa(frame.loc[keep, "ics"], frame.loc[keep, "human_ics"]))
    stage3 = frame[frame["stage"] == 3]
    assert table.iloc[2]["pearson_r"] == pytest.approx(
        stats.pearsonr(stage3["ics"], stage3["human_ics"]).statistic)
    pooled = table.iloc[-1]
    assert pooled["n"] == 159 and pooled[C.METRIC] == ALL and pooled["judge_column"] == ALL
    assert pooled["kappa_qw"] == pytest.approx(quadratic_kappa(
        np.r_[frame.loc[keep, "ics"], frame["sbas"]],
        np.r_[frame.loc[keep, "human_ics"], frame["sbas_human"]]))
    # Deterministic, and a metric's intervals do not depend on the others.
    again = agreement(frame, n_boot=200)
    pd.testing.assert_frame_equal(table, again)
    alone = agreement(frame, [("ics", "human_ics")], n_boot=200)
    assert alone.iloc[4]["kappa_qw_low"] == ics_all["kappa_qw_low"]
    flat = agreement(frame, [("ics", "human_ics")], by_stage=False, ci="none")
    assert flat[C.STAGE].tolist() == [ALL] and math.isnan(flat["pearson_r_low"].iloc[0])


def test_errors_name_the_problem():
    frame = labelled()
    with pytest.raises(JudgesError, match="No human label columns found"):
        agreement(frame.drop(columns=["human_ics", "sbas_human"]))
    with pytest.raises(JudgesError, match="Column.s. nope not in the file"):
        agreement(frame, [("ics", "nope")])
    with pytest.raises(JudgesError, match="confidence"):
        agreement(frame, confidence=95)


def test_two_judges_are_merged_on_the_row_keys():
    frame = labelled(40)
    first = frame.assign(model="m", sensitive_factor="g", scenario="s")
    second = first.sample(frac=1, random_state=1).assign(ics=first["human_ics"])
    merged, pairs = merge_judged(first[["id", "stage", "model", "sensitive_factor",
                                        "scenario", "ics", "sbas"]],
                                 second.drop(columns=["sbas"]).iloc[:30])
    assert pairs == [("ics", "ics_other")]
    assert len(merged) == 30
    table = agreement(merged, pairs, ci="none")
    by_id = frame.set_index("id")
    kept = by_id.loc[merged["id"]]
    assert table.iloc[-1]["kappa_qw"] == pytest.approx(
        quadratic_kappa(kept["ics"], kept["human_ics"]))
    with pytest.raises(JudgesError, match="several rows with the same"):
        merge_judged(pd.concat([first, first]), second)


def test_cli_agreement(tmp_path, capsys):
    path = tmp_path / "judged.csv"
    labelled().to_csv(path, index=False)
    out = tmp_path / "agreement.csv"
    assert scale_main(["agreement", str(path), "--judge-col", "ics", "--human-col", "human_ics",
                       "--n-boot", "200", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["stage"].astype(str).tolist() == ["1", "2", "3", "4", "all"]
    assert table["n"].tolist() == [20, 20, 20, 20, 80]
    assert scale_main(["agreement", str(path), "--ci", "analytic"]) == 0
    printed = capsys.readouterr().out
    assert "kappa_qw" in printed and "pearson_r_p" not in printed
    assert scale_main(["agreement", str(path), "--judge-col", "ics"]) == EXIT_INPUT
