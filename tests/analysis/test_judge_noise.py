"""Judge noise in the subgroup and importance conclusions (analysis/judge_noise.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import judge_noise as jn
from analysis.cells import cell_table
from analysis.columns import LOG_DISPARITY, P_ADJUSTED, SUBGROUP
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.importance import factor_importance
from analysis.subgroups import distinct_subgroups, subgroups
from tests.analysis.cli_helpers import run_json

ROOT = Path(__file__).resolve().parents[2]


def results_table(frame: pd.DataFrame, samples: list[list[int]], *, threshold: float = 3
                  ) -> pd.DataFrame:
    """``frame`` (factor columns) as a judged results table: score = mean of the samples,
    deviation = score < threshold, score_samples as JSON lists."""
    out = frame.reset_index(drop=True).copy()
    out["metric"] = "ics"
    out["score"] = [float(np.mean(s)) for s in samples]
    out["threshold"] = float(threshold)
    out["deviation"] = (out["score"] < out["threshold"]).astype(float)
    out["score_samples"] = [json.dumps([int(v) for v in s]) for s in samples]
    return out


def design_of(frame: pd.DataFrame, factors: list[str]) -> Design:
    return Design(factors=tuple(make_factor(frame, f) for f in factors),
                  outcome=Outcome("deviation", "binary"))


#: Per arm, two sample lists with the same share below 3 (arm a: 3 of 5, arm b: 1 of 5)
#: but different means, used on 3 of 4 and 1 of 4 rows: the original outcome (mean < 3)
#: deviates on 75 % (a) and 25 % (b) of the rows, while one drawn sample deviates with
#: probability 0.6 (a) or 0.2 (b) on every row of the arm.
LISTS = {"a": ([1, 2, 2, 4, 5], [2, 2, 2, 5, 5]), "b": ([1, 3, 4, 4, 5], [1, 3, 3, 3, 3])}


def simulated(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """``n`` rows: ``arm`` a/b alternating, ``null`` x/y at random, samples from
    :data:`LISTS` (so 'single' mode draws iid outcomes within an arm)."""
    arm = np.where(np.arange(n) % 2 == 0, "a", "b")
    frame = pd.DataFrame({"arm": arm, "null": rng.choice(["x", "y"], n)})
    samples = [LISTS[a][int((i // 2) % 4 == 3)] for i, a in enumerate(arm)]
    return results_table(frame, samples)


# --- reading samples ----------------------------------------------------------------------------
def test_parse_samples_accepts_json_lists_and_lists():
    samples, counts = jn.parse_samples(["[3, 4, 3]", [5], None, "", float("nan"), 2, "[1, null]"])
    assert counts.tolist() == [3, 1, 0, 0, 0, 1, 1]
    np.testing.assert_array_equal(samples[0], [3, 4, 3])
    assert samples[6, 0] == 1 and np.isnan(samples[6, 1])
    with pytest.raises(jn.JudgeNoiseError, match="row 2 is not a JSON list"):
        jn.parse_samples(["[1]", "three"])


# --- identities ---------------------------------------------------------------------------------
def test_identical_samples_every_conclusion_survives_exactly():
    """K identical samples: every replicate is the original table, so every subgroup keeps
    its sign in all replicates and exactly the significant ones survive (share 1)."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"arm": rng.choice(["a", "b", "c"], 600),
                          "model": rng.choice(["m1", "m2"], 600)})
    base = np.where(frame["arm"] == "a", rng.integers(1, 4, 600), rng.integers(2, 6, 600))
    res = results_table(frame, [[int(v)] * 4 for v in base])
    design = design_of(res, ["arm", "model"])
    applied = apply_design(res, design)
    for mode in ("mean", "single"):
        np.testing.assert_array_equal(
            jn.replicate_deviations(applied, n_resamples=5, mode=mode),
            np.tile(applied["deviation"].to_numpy(), (5, 1)))
        table, info = jn.subgroup_noise(applied, ["arm", "model"], max_level=2,
                                        n_resamples=50, mode=mode, return_info=True)
        expected = distinct_subgroups(subgroups(cell_table(applied, ["arm", "model"]),
                                                ["arm", "model"], max_level=2))
        pd.testing.assert_frame_equal(table.drop(columns=list(jn.NOISE_COLUMNS)), expected)
        significant = (table[P_ADJUSTED] < 0.05).to_numpy()
        assert significant.sum() >= 2 and (~significant).sum() >= 2
        assert (table[jn.SAME_SIGN] == 1.0).all()
        np.testing.assert_array_equal(table[jn.SIGNIFICANT], significant.astype(float))
        np.testing.assert_array_equal(table[jn.SURVIVES], significant.astype(float))
        assert info["n_robust"] == significant.sum() and "judge_noise" not in table.attrs
    terms = jn.importance_noise(applied, design, n_resamples=30, factors=["arm", "model"])
    fit = factor_importance(applied, design, factors=["arm", "model"])
    sig = (fit.terms["p_adjusted"] < 0.05).to_numpy()  # the p the labels use (BH, default)
    assert (terms[jn.SAME_SIGN] == 1.0).all()
    np.testing.assert_array_equal(terms[jn.SURVIVES], sig.astype(float))


# --- recovery on simulated data -----------------------------------------------------------------
def test_strong_effect_survives_and_null_is_significant_at_rate_alpha():
    """Arm a deviates with probability 0.6, arm b 0.2 in 'single' mode (:data:`LISTS`);
    the factor 'null' is independent of the outcome. In 'single' mode every
    replicate is a fresh iid draw, so the null subgroups' significance share is the size of
    the Wald test (alpha), within the 99.9 % binomial interval of R replicates."""
    rng = np.random.default_rng(11)
    res = simulated(rng, 2000)
    applied = apply_design(res, design_of(res, ["arm", "null"]))
    r = 400
    table = jn.subgroup_noise(applied, ["arm", "null"], max_level=1, test="wald",
                              n_resamples=r, mode="single", seed=5).set_index(SUBGROUP)
    assert table.loc["arm = a", jn.SURVIVES] >= 0.99
    assert table.loc["arm = a", LOG_DISPARITY] == pytest.approx(np.log(9))  # 0.75 vs 0.25
    low, high = stats.binom.interval(0.999, r, 0.05)
    share = table.loc["null = x", jn.SIGNIFICANT]
    assert low / r <= share <= high / r, share
    assert table.loc["null = y", jn.SIGNIFICANT] == share  # the complement: same test
    # the resampled mean of 5 samples is noisier than a fixed score but keeps the effect
    mean = jn.subgroup_noise(applied, ["arm", "null"], max_level=1, test="wald",
                             n_resamples=100, mode="mean").set_index(SUBGROUP)
    assert mean.loc["arm = a", jn.SURVIVES] == 1.0


def test_importance_strong_term_survives_null_term_near_alpha():
    rng = np.random.default_rng(12)
    res = simulated(rng, 2000)
    design = design_of(res, ["arm", "null"])
    applied = apply_design(res, design)
    r = 300
    terms, info = jn.importance_noise(applied, design, factors=["arm", "null"], n_resamples=r,
                                      mode="single", seed=2, return_info=True)
    terms = terms.set_index("term")
    (arm,) = [t for t in terms.index if t.startswith("arm[")]
    (null,) = [t for t in terms.index if t.startswith("null[")]
    assert terms.loc[arm, jn.SURVIVES] == 1.0
    low, high = stats.binom.interval(0.999, r, 0.05)
    assert low / r <= terms.loc[null, jn.SIGNIFICANT] <= high / r
    assert info["n_refused"] == 0


# --- hand computations --------------------------------------------------------------------------
def test_single_mode_rates_equal_hand_computation():
    """Two rows per cell; the draw rule U = rng.random((R, rows)), sample floor(U * K_i),
    redone by hand row by row."""
    samples = [[1, 5], [2, 2], [4, 4], [1, 3, 5]]  # cells p: rows 0, 1; q: rows 2, 3
    res = results_table(pd.DataFrame({"f": ["p", "p", "q", "q"]}), samples)
    r, seed = 40, 9
    dev = jn.replicate_deviations(res, n_resamples=r, mode="single", seed=seed)
    u = np.random.default_rng(seed).random((r, 4))
    hand = np.array([[float(samples[i][int(u[j, i] * len(samples[i]))] < 3) for i in range(4)]
                     for j in range(r)])
    np.testing.assert_array_equal(dev, hand)
    rate_p, rate_q = dev[:, :2].mean(axis=1), dev[:, 2:].mean(axis=1)
    np.testing.assert_array_equal(rate_p, (hand[:, 0] + 1) / 2)  # row 1 always deviates
    np.testing.assert_array_equal(rate_q, hand[:, 3] / 2)  # row 2 never does
    # row 3 deviates when it draws its first sample (1): U < 1/3
    np.testing.assert_array_equal(hand[:, 3], (u[:, 3] < 1 / 3).astype(float))


def test_mean_mode_is_the_mean_of_k_draws_with_replacement():
    samples = [[1, 5], [2, 4, 4]]
    res = results_table(pd.DataFrame({"f": ["p", "q"]}), samples, threshold=3)
    dev = jn.replicate_deviations(res, n_resamples=20000, mode="mean", seed=1)
    # row 0: mean of 2 draws from {1, 5} < 3 only when both are 1: 1/4
    # row 1: mean of 3 draws from {2, 4, 4} < 3 when at least two are 2 (sum 6 or 8):
    # 3 (1/3)^2 (2/3) + (1/3)^3 = 7/27
    p = np.array([0.25, 7 / 27])
    se = np.sqrt(p * (1 - p) / 20000)
    assert np.all(np.abs(dev.mean(axis=0) - p) < 4 * se)


def test_confusion_draws_reproduce_the_matrix():
    """P(human | judge) of a hand-made matrix, 200,000 draws per judge score (the
    replicates' draw, ``_draw_into``, on every row): every frequency within 4 standard
    errors (about 0.004)."""
    confusion = pd.DataFrame([[2, 6, 2, 0], [0, 1, 3, 4]], index=[2.0, 4.0],
                             columns=[1.0, 2.0, 3.0, 5.0])
    judge = np.array([2, 4, 4.4, 3, np.nan])  # 4.4 rounds to 4; 3 has no row: kept
    draws = np.tile(judge, (200_000, 1))
    u = np.random.default_rng(4).random(draws.shape)
    jn._draw_into(draws, u, jn._round_half_up(judge), jn.conditional(confusion),
                  np.ones(len(judge), dtype=bool))
    expected = {0: [0.2, 0.6, 0.2, 0.0], 1: [0, 0.125, 0.375, 0.5], 2: [0, 0.125, 0.375, 0.5]}
    for col, probs in expected.items():
        freq = [(draws[:, col] == v).mean() for v in (1, 2, 3, 5)]
        se = np.sqrt(np.array(probs) * (1 - np.array(probs)) / 200_000)
        assert np.all(np.abs(np.array(freq) - probs) <= 4 * se + 1e-12), (col, freq)
    assert (draws[:, 3] == 3).all() and np.isnan(draws[:, 4]).all()


def test_confusion_tables_and_mode_from_human_labels():
    frame = pd.DataFrame({"f": ["p", "q"] * 6})
    res = results_table(frame, [[s] for s in [2, 2, 4, 4, 2, 4, 5, 1, 2, 4, 4, 4]])
    res["human_ics"] = [1, 2, 4, 5, np.nan, 3.67, np.nan, np.nan, 2, 4, np.nan, np.nan]
    tables = jn.confusion_tables(res)
    expected = pd.DataFrame([[1, 2, 0, 0], [0, 0, 3, 1]], index=[2.0, 4.0],
                            columns=[1.0, 2.0, 4.0, 5.0])
    np.testing.assert_array_equal(tables["ics"].to_numpy(), expected.to_numpy())
    assert list(tables["ics"].index) == [2.0, 4.0]
    assert list(tables["ics"].columns) == [1.0, 2.0, 4.0, 5.0]
    dev = jn.replicate_deviations(res, n_resamples=3000, mode="confusion", seed=0)
    # judge 2 -> human 1 or 2 (both < 3): always deviates; judge 4 -> 4 or 5: never;
    # judge 5 and 1 have no labelled rows: their outcome is kept
    np.testing.assert_array_equal(dev.mean(axis=0), res["deviation"].to_numpy())
    assert jn.available_modes(res) == ["mean", "single", "confusion"]


# --- bad input ----------------------------------------------------------------------------------
def test_refusals_name_the_problem():
    frame = pd.DataFrame({"f": ["p", "q"] * 4})
    res = results_table(frame, [[1], [4]] * 4)
    with pytest.raises(jn.JudgeNoiseError, match="no 'score_samples' column"):
        jn.replicate_deviations(res.drop(columns="score_samples"))
    with pytest.raises(jn.JudgeNoiseError, match="needs human labels"):
        jn.replicate_deviations(res, mode="confusion")
    bad = res.assign(deviation=1.0 - res["deviation"])
    with pytest.raises(jn.JudgeNoiseError, match="not score < threshold on 8 rows"):
        jn.replicate_deviations(bad)
    with pytest.raises(jn.JudgeNoiseError, match="Unknown judge-noise mode"):
        jn.replicate_deviations(res, mode="median")


# --- CLI ----------------------------------------------------------------------------------------
def _cli_table(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(5)
    res = simulated(rng, 400)
    path = tmp_path / "results.csv"
    res.to_csv(path, index=False)
    design = design_of(res, ["arm", "null"])
    design_path = tmp_path / "results.design.yaml"
    design.save(design_path)
    return path, design_path


def test_cli_subgroups_and_importance_json_have_judge_noise(tmp_path, capsys):
    path, design = _cli_table(tmp_path)
    out = run_json(capsys, "subgroups", path, "--design", design, "--level", "1",
                   "--judge-noise", 60, "--noise-mode", "single", "--seed", 3)
    noise = out["judge_noise"]
    assert noise["settings"]["replicates"] == 60 and noise["settings"]["mode"] == "single"
    assert noise["settings"]["n_rows_resampled"] == 400
    assert len(noise["rows"]) == out["settings"]["n_distinct"] == 4
    row = next(r for r in noise["rows"] if r["subgroup"] == "arm = a")
    assert row["survives"] == 1.0 and row["log_disparity"] > 1
    assert "of 60 replicates" in noise["summary"] and noise["settings"]["alpha"] == 0.05
    strict = run_json(capsys, "subgroups", path, "--design", design, "--level", "1",
                      "--judge-noise", 60, "--noise-mode", "single", "--seed", 3,
                      "--noise-alpha", 1e-300)
    assert strict["judge_noise"]["settings"]["alpha"] == 1e-300
    assert all(r["significant"] == 0 for r in strict["judge_noise"]["rows"])
    assert {"noise_same_sign", "noise_survives"} <= set(out["subgroups"][0])
    imp = run_json(capsys, "importance", path, "--design", design, "--judge-noise", 40)
    terms = {r["term"]: r for r in imp["judge_noise"]["rows"]}
    (arm,) = [t for t in terms if t.startswith("arm[")]
    assert terms[arm]["survives"] >= 0.9 and imp["judge_noise"]["settings"]["mode"] == "mean"


def test_cli_without_samples_exits_2(tmp_path, capsys):
    from analysis.cli import main

    path, design = _cli_table(tmp_path)
    pd.read_csv(path).drop(columns="score_samples").to_csv(path, index=False)
    for command in ("subgroups", "importance"):
        assert main([command, str(path), "--design", str(design), "--judge-noise", "10"]) == 2
        assert "no 'score_samples' column" in capsys.readouterr().err
    assert main(["subgroups", str(path), "--design", str(design), "--judge-noise", "10",
                 "--noise-mode", "confusion"]) == 2
    assert "needs human labels" in capsys.readouterr().err


def test_cli_confusion_mode_reports_the_matrix(tmp_path, capsys):
    """Whole judge scores and human labels that always agree with them: every replicate is
    the original table."""
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"arm": np.repeat(["a", "b"], 200), "null": rng.choice(["x", "y"], 400)})
    low = rng.random(400) < np.where(frame["arm"] == "a", 0.7, 0.2)
    table = results_table(frame, [[2] if x else [4] for x in low])
    table["human_ics"] = np.where(np.arange(len(table)) % 3 == 0, table["score"], np.nan)
    path, design = tmp_path / "results.csv", tmp_path / "results.design.yaml"
    table.to_csv(path, index=False)
    design_of(table, ["arm", "null"]).save(design)
    out = run_json(capsys, "subgroups", path, "--design", design, "--level", "1",
                   "--judge-noise", 20, "--noise-mode", "confusion")
    settings = out["judge_noise"]["settings"]
    assert settings["confusion"]["ics"]["n_labelled"] == len(range(0, 400, 3))
    counts = np.array(settings["confusion"]["ics"]["counts"])
    assert (counts == np.diag(np.diag(counts))).all()  # only agreement was labelled
    rows = {r["subgroup"]: r for r in out["judge_noise"]["rows"]}
    assert all(r["same_sign"] == 1.0 for r in rows.values())
    assert all(r["survives"] == float(r["p_adjusted"] < 0.05) for r in rows.values())
    assert rows["arm = a"]["survives"] == 1.0
