"""Agreement with human labels (analysis/judge_stats/agreement.py): numbers checked against hand
computations, scipy and statsmodels."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa

from analysis.judge_stats import columns as C
from analysis.judge_stats.agreement import (
    AGREEMENT_COLUMNS,
    ALL,
    _kendalls,
    _tables,
    agreement,
    alpha_interval,
    confusion_matrix,
    human_pairs,
    icc_a1,
    merge_judged,
    pair_agreement,
    quadratic_kappa,
    round_half_up,
    weighted_kappa,
    weighted_kappa_se,
)
from analysis.judge_stats.category_agreement import category_agreement
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
    one = pair_agreement(x, y, n_resamples=500, seed=7)
    two = pair_agreement(x, y, n_resamples=500, seed=7)
    other = pair_agreement(x, y, n_resamples=500, seed=8)
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
    sims = pair_agreement([0.1, 0.5, 0.7, 0.9, 0.3], [1, 3, 4, 5, 2], n_resamples=200)
    assert sims["spearman_rho"] == pytest.approx(1.0)
    assert math.isnan(sims["kappa_qw"]) and math.isnan(sims["kappa_qw_low"])
    assert sims["kendall_tau_low"] <= 1.0
    with pytest.raises(ValueError, match="must be 'bootstrap', 'analytic' or 'none'"):
        pair_agreement([1, 2, 3], [1, 2, 3], ci="exact")


def test_table_per_metric_stage_and_overall():
    frame = labelled()
    frame.loc[0, "human_ics"] = np.nan
    assert human_pairs(frame) == [("ics", "human_ics"), ("sbas", "sbas_human")]
    table = agreement(frame, n_resamples=200)
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
    again = agreement(frame, n_resamples=200)
    pd.testing.assert_frame_equal(table, again)
    alone = agreement(frame, [("ics", "human_ics")], n_resamples=200)
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
    capsys.readouterr()
    assert scale_main(["agreement", str(path), "--judge-col", "ics", "--human-col", "human_ics",
                       "--ci", "analytic", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["agreement"]
    want = agreement(labelled(), [("ics", "human_ics")], ci="analytic")
    assert [str(r["stage"]) for r in rows] == want["stage"].astype(str).tolist()
    assert [r["kappa_qw"] for r in rows] == pytest.approx(want["kappa_qw"].tolist())
    assert [r["n"] for r in rows] == [20, 20, 20, 20, 80]


# --- averaged human labels (issue 17) -------------------------------------------------------
def averaged(n: int = 60, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Judge scores 1-5 and the mean of three annotators' labels (multiples of 1/3)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    raters = np.clip(truth[:, None] + rng.choice([-1, 0, 0, 1], (n, 3)), 1, 5)
    judge = np.clip(truth + rng.choice([-1, 0, 0, 0, 1], n), 1, 5)
    return judge.astype(float), raters.mean(1)


def icc_by_hand(x, y):
    """ICC(A,1) from an ANOVA written out cell by cell (Shrout & Fleiss ICC(2,1))."""
    data = np.column_stack([x, y])
    n, k = data.shape
    grand = data.mean()
    ss_rows = sum(k * (data[i].mean() - grand) ** 2 for i in range(n))
    ss_cols = sum(n * (data[:, j].mean() - grand) ** 2 for j in range(k))
    ss_total = sum((data[i, j] - grand) ** 2 for i in range(n) for j in range(k))
    msr, msc = ss_rows / (n - 1), ss_cols / (k - 1)
    mse = (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
    return (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n), msr, msc, mse


def test_icc_and_alpha_by_hand_and_against_krippendorff():
    krippendorff = pytest.importorskip("krippendorff")
    x, y = np.array([1, 2, 3, 4, 5.0]), np.array([1, 3, 3, 5, 5.0])
    # Hand: grand mean 3.2, row means 1, 2.5, 3, 4.5, 5: SSR = 2 * 10.3, MSR = 5.15;
    # column means 3 and 3.4: MSC = 0.4; SST = 10.2 + 11.4 = 21.6, SSE = 0.6, MSE = 0.15.
    # ICC(A,1) = (5.15 - 0.15) / (5.15 + 0.15 + 2 * (0.4 - 0.15) / 5) = 5 / 5.4
    icc, msr, msc, mse = icc_by_hand(x, y)
    assert (msr, msc, mse) == pytest.approx((5.15, 0.4, 0.15))
    assert float(icc_a1(x, y)) == pytest.approx(5 / 5.4) == pytest.approx(icc)
    # Hand: sum (x-y)^2 = 2; 10 values, SS about their mean 3.2 = 21.6 -> 1 - 9*2/(10*21.6)
    assert float(alpha_interval(x, y)) == pytest.approx(1 - 18 / 216)
    for seed in range(5):
        a, b = averaged(40, seed)
        assert float(icc_a1(a, b)) == pytest.approx(icc_by_hand(a, b)[0], abs=1e-12)
        ref = krippendorff.alpha(reliability_data=[a, b], level_of_measurement="interval")
        assert float(alpha_interval(a, b)) == pytest.approx(ref, abs=1e-12)


def test_icc_analytic_interval_matches_mcgraw_and_wong():
    x, y = averaged(50, 2)
    icc, msr, msc, mse = icc_by_hand(x, y)
    n, k = 50, 2
    # McGraw & Wong (1996) case 2A, written with their a, b and Satterthwaite's v.
    a = k * icc / (n * (1 - icc))
    b = 1 + k * icc * (n - 1) / (n * (1 - icc))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    fu, fl = stats.f.ppf(0.975, n - 1, v), stats.f.ppf(0.975, v, n - 1)
    lower = n * (msr - fu * mse) / (fu * (k * msc + (k * n - k - n) * mse) + n * msr)
    upper = n * (fl * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fl * msr)
    row = pair_agreement(x, y, ci="analytic")
    assert (row["icc_a1_low"], row["icc_a1_high"]) == pytest.approx((lower, upper), rel=1e-9)
    assert lower < row["icc_a1"] < upper
    assert math.isnan(row["alpha_interval_low"])          # alpha: bootstrap intervals only


def test_averaged_labels_get_kappa_on_rounded_labels_and_named():
    judge, human = averaged()
    assert not np.all(human == np.round(human))
    row = pair_agreement(judge, human, n_resamples=300)
    rounded = np.floor(human + 0.5)
    assert row["kappa_labels"] == "rounded half up"
    reference = cohens_kappa(confusion_matrix(judge, rounded, (1, 2, 3, 4, 5)), wt="quadratic")
    assert row["kappa_qw"] == pytest.approx(reference.kappa, abs=1e-12)
    assert row["exact_agreement"] == pytest.approx(np.mean(judge == rounded))
    assert row["icc_a1"] == pytest.approx(icc_by_hand(judge, human)[0])
    for name in ("kappa_qw", "icc_a1", "alpha_interval", "kendall_tau"):
        assert row[f"{name}_low"] < row[name] < row[f"{name}_high"], name
    assert row["kendall_tau"] == pytest.approx(stats.kendalltau(judge, human).statistic)
    assert round_half_up(np.array([2.5, 3.5, 3.33, 3.67])).tolist() == [3, 4, 3, 4]
    # Whole labels are used as given; similarities have no kappa but do have ICC / alpha.
    assert pair_agreement([1, 2, 3, 4], [1, 2, 4, 4], ci="none")["kappa_labels"] == "as given"
    sims = pair_agreement([0.1, 0.5, 0.7, 0.9], [0.2, 0.4, 0.8, 0.9], ci="none")
    assert sims["kappa_labels"] == "" and math.isnan(sims["kappa_qw"])
    assert sims["icc_a1"] == pytest.approx(icc_by_hand([0.1, 0.5, 0.7, 0.9],
                                                       [0.2, 0.4, 0.8, 0.9])[0])
    # Through the table: the human_<metric> column of averages gives a number, not NaN.
    frame = pd.DataFrame({"stage": 1, "ics": judge, "human_ics": human})
    table = agreement(frame, n_resamples=200)
    assert table["kappa_labels"].tolist() == ["rounded half up"] * 2
    assert np.isfinite(table["kappa_qw"]).all()


# --- categories (issue 17) ------------------------------------------------------------------
GENDER = ["woman", "man", "non-binary", "unclassified"]


def categorised(n: int = 120, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    human = rng.choice(GENDER, n, p=[0.4, 0.4, 0.05, 0.15])
    judge = np.where(rng.random(n) < 0.8, human, rng.choice(GENDER, n))
    return pd.DataFrame({"category": judge, "human_category": human})


def test_category_agreement_matches_sklearn():
    metrics = pytest.importorskip("sklearn.metrics")
    cohen_kappa_score = metrics.cohen_kappa_score
    precision_recall_fscore_support = metrics.precision_recall_fscore_support
    sk_confusion = metrics.confusion_matrix
    frame = categorised()
    # Human labels in another spelling still match (case, spaces, - and _).
    frame["human_category"] = frame["human_category"].str.upper().str.replace("-", " ")
    frame.loc[3, "category"] = None                       # an unscored row
    result = category_agreement(frame, categories=GENDER, n_resamples=300)
    kept = frame.drop(index=3)
    human = kept["human_category"].str.lower().str.replace("non binary", "non-binary")
    judge = kept["category"]
    overall = result.table.iloc[0]
    assert overall["category"] == "all" and (overall["n"], overall["n_missing"]) == (119, 1)
    assert overall["kappa"] == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert overall["kappa_low"] < overall["kappa"] < overall["kappa_high"]
    assert overall["exact_agreement"] == pytest.approx(np.mean(human == judge))
    expected = sk_confusion(human, judge, labels=GENDER)
    assert result.confusion.to_numpy().tolist() == expected.tolist()
    assert list(result.confusion.index) == GENDER
    p, r, f, support = precision_recall_fscore_support(human, judge, labels=GENDER,
                                                       zero_division=np.nan)
    per = result.table.iloc[1:].set_index("category").loc[GENDER]
    np.testing.assert_allclose(per["precision"], p)
    np.testing.assert_allclose(per["recall"], r)
    np.testing.assert_allclose(per["f1"], f)
    assert per["n_human"].tolist() == support.tolist()
    # Analytic interval: the Fleiss-Cohen-Everitt standard error, as statsmodels computes it.
    analytic = category_agreement(frame, categories=GENDER, ci="analytic").table.iloc[0]
    ref = cohens_kappa(expected)
    z = stats.norm.ppf(0.975)
    assert (analytic["kappa_low"], analytic["kappa_high"]) == pytest.approx(
        (ref.kappa - z * ref.std_kappa, ref.kappa + z * ref.std_kappa), abs=1e-12)


def test_category_labels_that_do_not_match_are_named():
    frame = categorised(40)
    frame.loc[:4, "human_category"] = "female"
    with pytest.raises(JudgesError, match=r"human labels in 'human_category' that are not "
                                          r"categories: 'female' \(5 rows\)"):
        category_agreement(frame, categories=GENDER)
    dropped = category_agreement(frame, categories=GENDER, unknown="drop", ci="none")
    assert (dropped.table.iloc[0]["n"], dropped.table.iloc[0]["n_unknown"]) == (35, 5)
    # Nothing in common (e.g. human labels coded 0/1): an error, never n = 0 and NaN.
    coded = frame.assign(human_category=np.where(frame["category"] == "woman", "1", "0"))
    with pytest.raises(JudgesError, match="do not match the categories"):
        category_agreement(coded, unknown="drop")
    with pytest.raises(JudgesError, match="No human label column for 'category'"):
        category_agreement(frame.drop(columns=["human_category"]))
    with pytest.raises(JudgesError, match="at least two categories"):
        category_agreement(frame, categories=["woman"])


def test_cli_categorical_agreement(tmp_path, capsys):
    path = tmp_path / "categorised.csv"
    categorised().to_csv(path, index=False)
    out = tmp_path / "cat_agreement.csv"
    assert scale_main(["agreement", str(path), "--categorical", "--categories",
                       ",".join(GENDER), "--n-boot", "200", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["category"].tolist() == ["all", *GENDER]
    confusion = pd.read_csv(tmp_path / "cat_agreement.confusion.csv", index_col=0)
    assert confusion.to_numpy().sum() == 120
    assert scale_main(["agreement", str(path), "--categorical", "--ci", "none"]) == 0
    assert "precision" in capsys.readouterr().out
    assert scale_main(["agreement", str(path), "--categorical", "--ci", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert np.array(report["confusion"]["counts"]).sum() == 120
    assert set(report["confusion"]["labels"]) == set(confusion.index.astype(str))
    assert report["agreement"][0]["category"] == "all"
    bad = categorised().assign(human_category="x")
    bad.to_csv(path, index=False)
    assert scale_main(["agreement", str(path), "--categorical"]) == EXIT_INPUT
    assert "do not match the categories" in capsys.readouterr().err
