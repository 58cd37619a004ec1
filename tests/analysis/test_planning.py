"""Planning (issue 13, items 3 and 4): power and MDE of a log disparity checked by
simulation, the water-filling planner recomputed independently through coverage_summary,
fractional factorials checked for balance and aliasing from their runs."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.cli import main
from analysis.columns import (
    COVERAGE_PERCENTAGE,
    DETECTABLE,
    GINI_INDEX,
    MDE_LOG_DISPARITY,
    RATE_OUTSIDE,
    N,
)
from analysis.coverage import coverage_summary
from analysis.design import Design, apply_design
from analysis.errors import AnalysisError
from analysis.planning import (
    add_power,
    exact_ld_power,
    fractional_factorial,
    ld_power,
    minimum_detectable_ld,
    plan_additions,
    sample_size,
    water_fill,
)
from analysis.subgroups import subgroups
from tests.app.apptools import ROOT

SSQA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
SSQA_DESIGN = ROOT / "sample_data" / "ssqa_simulated.design.yaml"


def _wald_rejections(n1: int, n0: int, p1: float, p0: float, reps: int, seed: int,
                     alpha: float = 0.05) -> float:
    """Share of simulated 2x2 tables whose Woolf/Wald test rejects LD = 0."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    a = rng.binomial(n1, p1, reps) + 0.0
    c = rng.binomial(n0, p0, reps) + 0.0
    b, d = n1 - a, n0 - c
    zero = np.minimum.reduce([a, b, c, d]) == 0
    a, b, c, d = (x + 0.5 * zero for x in (a, b, c, d))
    z = np.log(a * d / (b * c)) / np.sqrt(1 / a + 1 / b + 1 / c + 1 / d)
    return float((np.abs(z) > norm.ppf(1 - alpha / 2)).mean())


@pytest.mark.parametrize(("rate", "ld", "share", "power"),
                         [(0.3, 0.4, 0.1, 0.8), (0.1, -0.6, 0.25, 0.9), (0.5, 0.25, 0.5, 0.8)])
def test_sample_size_reaches_nominal_power_in_simulation(rate, ld, share, power):
    out = sample_size(rate=rate, ld=ld, share=share, power=power)
    p1 = 1 / (1 + np.exp(-(np.log(rate / (1 - rate)) + ld)))
    assert out["rate_subgroup"] == pytest.approx(p1)
    assert out["achieved_power"] >= power
    assert out["method"] == "exact"
    fewer = exact_ld_power(ld, rate, int(out["n_subgroup"] * 0.95), int(out["n_outside"] * 0.95))
    assert fewer < power  # the n is (close to) the smallest
    simulated = _wald_rejections(out["n_subgroup"], out["n_outside"], p1, rate, 6000, seed=7)
    assert abs(simulated - power) < 0.02


def test_power_at_zero_is_alpha_and_matches_simulation_at_mde():
    assert float(ld_power(0.0, 0.3, 100, 900)) == pytest.approx(0.05)
    assert _wald_rejections(200, 1800, 0.3, 0.3, 6000, seed=1) == pytest.approx(0.05, abs=0.012)
    # the MDE is a normal approximation: at large expected counts (here >= 600) the
    # simulated power of the harder direction is the nominal one within 2 points
    n1, n0, p0 = 1500.0, 13500.0, 0.4
    mde = minimum_detectable_ld(np.array([n1]), np.array([n0]), np.array([p0]))[0]
    for sign in (1, -1):  # both directions reach the power; the harder one exactly
        assert float(ld_power(sign * mde, p0, n1, n0)) >= 0.8 - 1e-9
    powers = {s: float(ld_power(s * mde, p0, n1, n0)) for s in (1, -1)}
    harder = min(powers, key=powers.get)
    assert powers[harder] == pytest.approx(0.8, abs=1e-6)
    p1 = 1 / (1 + np.exp(-(np.log(p0 / (1 - p0)) + harder * mde)))
    assert abs(_wald_rejections(int(n1), int(n0), p1, p0, 6000, seed=3) - 0.8) < 0.02
    edge = minimum_detectable_ld(np.array([0.0, 5, 300]), np.array([10.0, 10, 2700]),
                                 np.array([0.2, 0.0, 0.2]))
    assert np.isnan(edge[:2]).all() and np.isfinite(edge[2])


def test_add_power_columns_on_subgroups():
    frame = pd.read_csv(SSQA)
    design = Design.load(SSQA_DESIGN)
    cells = cell_table(apply_design(frame, design), ["model", "gender"])
    table = subgroups(cells, ["model", "gender"], max_level=2)
    out = add_power(table, int(cells[N].sum()), target_ld=0.2)
    row = out.iloc[5]
    expected = minimum_detectable_ld(np.array([row[N]]), np.array([cells[N].sum() - row[N]]),
                                     np.array([row[RATE_OUTSIDE]]))[0]
    assert row[MDE_LOG_DISPARITY] == pytest.approx(expected)
    assert (out[DETECTABLE] == (out[MDE_LOG_DISPARITY] <= 0.2)).all()
    assert out.loc[out[N].idxmin(), MDE_LOG_DISPARITY] > 5 * out.loc[out[N].idxmax(),
                                                                     MDE_LOG_DISPARITY]


def test_bad_power_inputs():
    with pytest.raises(AnalysisError, match="--rate"):
        sample_size(rate=1.2, ld=0.3, share=0.1)
    with pytest.raises(AnalysisError, match="non-zero"):
        sample_size(rate=0.2, ld=0.0, share=0.1)
    with pytest.raises(AnalysisError, match="--share"):
        sample_size(rate=0.2, ld=0.3, share=0)


def test_power_cli_json(capsys):
    assert main(["power", "--rate", "0.3", "--ld", "0.4", "--share", "0.1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == pytest.approx(sample_size(rate=0.3, ld=0.4, share=0.1))
    assert main(["power", "--rate", "2", "--ld", "0.4", "--share", "0.1"]) == 2
    assert "--rate" in capsys.readouterr().err


# --- the planner -------------------------------------------------------------------------------
def test_water_fill_levels_the_lowest():
    counts = np.array([5, 0, 2, 0, 7, 2])
    extra = water_fill(counts, 6)
    assert extra.sum() == 6
    np.testing.assert_array_equal(counts + extra, [5, 3, 2, 3, 7, 2])  # ties: lowest first
    assert water_fill(counts, 1).tolist() == [0, 1, 0, 0, 0, 0]  # an empty cell, the first
    # brute force over every way to add 3 prompts to 4 cells: none has a lower Gini
    from analysis.coverage import gini_index

    small = np.array([4, 0, 1, 2])
    best = min(gini_index(small + np.bincount(c, minlength=4))
               for c in itertools.combinations_with_replacement(range(4), 3))
    assert gini_index(small + water_fill(small, 3)) == pytest.approx(best)


@pytest.mark.parametrize("budget", [40, 700, 5000])
def test_plan_after_equals_recomputed_coverage(budget):
    frame = pd.read_csv(SSQA)
    design = Design.load(SSQA_DESIGN)
    factors = ["stigma", "gender", "prompt_style"]
    results = apply_design(frame, design)
    cells = cell_table(results, factors, with_outcome=False)
    plan = plan_additions(cells, design, factors=factors, budget=budget)
    assert plan.add[N].sum() == budget
    before = coverage_summary(cells, design, factors=factors).iloc[0]
    assert plan.before[COVERAGE_PERCENTAGE] == before[COVERAGE_PERCENTAGE]
    assert plan.before[GINI_INDEX] == pytest.approx(before[GINI_INDEX], abs=1e-12)
    # independent route: append the proposed rows to the results and recompute
    added = plan.add.loc[plan.add.index.repeat(plan.add[N]), factors].astype(str)
    grown = pd.concat([frame[factors], added], ignore_index=True)
    grown_cells = cell_table(apply_design(grown, design.subset(factors).with_outcome(None)),
                             factors, with_outcome=False)
    after = coverage_summary(grown_cells, design, factors=factors).iloc[0]
    assert plan.after[COVERAGE_PERCENTAGE] == pytest.approx(after[COVERAGE_PERCENTAGE])
    assert plan.after[GINI_INDEX] == pytest.approx(after[GINI_INDEX], abs=1e-12)
    # only the combinations the structure allows are filled (analysis.structure)
    n_empty = int(before["n_empty_cells"]) - plan.n_excluded
    assert plan.after["n_observed_cells"] == before["n_observed_cells"] + min(budget, n_empty)


def test_plan_cli_json_and_csv(tmp_path, capsys):
    out_csv = tmp_path / "add.csv"
    assert main(["plan", str(SSQA), "--design", str(SSQA_DESIGN), "--factors",
                 "stigma,gender,prompt_style", "--budget", "300", "--json",
                 "--out", str(out_csv)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"before", "after", "add"}
    assert set(out["before"]) >= {"coverage_percentage", "gini_index"}
    assert sum(a["n"] for a in out["add"]) == 300
    assert set(out["add"][0]) == {"stigma", "gender", "prompt_style", "n", "kind", "template"}
    # every combination the structure allows is already observed: the prompts go to the
    # thinnest ones, none to a combination the benchmark rules out (issue #24)
    assert out["n_excluded"] == 1504 - 838
    assert out["after"]["coverage_percentage"] == out["before"]["coverage_percentage"]
    assert out["after"]["gini_index"] < out["before"]["gini_index"]
    assert pd.read_csv(out_csv)["n"].sum() == 300
    assert main(["plan", str(SSQA), "--design", str(SSQA_DESIGN), "--factors", "stigma",
                 "--budget", "0"]) == 2
    assert "positive whole number" in capsys.readouterr().err


# --- fractional factorials ---------------------------------------------------------------------
def _pairs_balanced(runs: pd.DataFrame) -> bool:
    for a, b in itertools.combinations(runs.columns, 2):
        counts = runs.groupby([a, b]).size()
        if counts.nunique() != 1 or len(counts) != runs[a].nunique() * runs[b].nunique():
            return False
    return True


def _contrast(runs: pd.DataFrame, names) -> np.ndarray:
    out = np.ones(len(runs))
    for f in names:
        out = out * np.where(runs[f].astype(int) == 1, 1, -1)
    return out


def test_resolution_iv_fraction_is_balanced_and_aliases_as_stated():
    factors = {f: ["0", "1"] for f in "abcdef"}
    frac = fractional_factorial(factors, 16)
    assert len(frac.runs) == 16 and frac.resolution == 4
    assert _pairs_balanced(frac.runs)
    assert len(frac.runs.drop_duplicates()) == 16
    # recompute the aliasing from the runs: main effects are orthogonal to every
    # two-factor interaction; a 2fi equals another exactly when the word says so
    mains = {f: _contrast(frac.runs, [f]) for f in factors}
    twofi = {p: _contrast(frac.runs, p) for p in itertools.combinations(factors, 2)}
    assert all(abs(m @ t) < 1e-9 for m in mains.values() for t in twofi.values())
    aliased = {frozenset((p, q)) for p, q in itertools.combinations(twofi, 2)
               if abs(twofi[p] @ twofi[q]) == 16}
    from_words = set()
    for w in (w for w in frac.defining_words if len(w) == 4):
        for pair in itertools.combinations(w, 2):
            rest = tuple(x for x in w if x not in pair)
            from_words.add(frozenset((pair, rest)))
    assert aliased == from_words and len(aliased) > 0


def test_three_level_and_full_and_refusals():
    frac = fractional_factorial({f: ["x", "y", "z"] for f in "ABCD"}, 9)
    assert len(frac.runs) == 9 and frac.resolution == 3 and _pairs_balanced(frac.runs)
    full = fractional_factorial({f: ["x", "y"] for f in "ABC"}, 10)
    assert len(full.runs) == 8 and full.resolution == float("inf")
    mixed = fractional_factorial({"a": ["0", "1"], "b": ["0", "1", "2"]}, 6)
    assert len(mixed.runs) == 6 and _pairs_balanced(mixed.runs) and mixed.levels == 0
    with pytest.raises(AnalysisError, match="same number of values"):
        fractional_factorial({"a": ["0", "1"], "b": ["0", "1", "2"]}, 5)
    with pytest.raises(AnalysisError, match="prime"):
        fractional_factorial({f: list("wxyz") for f in "abc"}, 16)
    with pytest.raises(AnalysisError, match="at least 16 runs"):
        fractional_factorial({f: ["0", "1"] for f in "abcdefghi"}, 8)


def test_plan_cli_new_benchmark(capsys, tmp_path):
    args = ["plan", *itertools.chain.from_iterable(("--new", f"{f}=lo,hi") for f in "abcde"),
            "--runs", "16", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_runs"] == 16 and out["resolution"] == 5
    assert _pairs_balanced(pd.DataFrame(out["runs"]))


def test_sunburst_greys_out_undetectable_subgroups():
    from analysis.figures.subgroups import GREY_OUT, sunburst_figure

    frame = pd.read_csv(SSQA)
    design = Design.load(SSQA_DESIGN)
    cells = cell_table(apply_design(frame, design), ["model", "gender"])
    table = add_power(subgroups(cells, ["model", "gender"], max_level=2),
                      int(cells[N].sum()), target_ld=0.2)
    fig = sunburst_figure(table, ["model", "gender"], grey_undetectable=True)
    colours = list(fig.data[0].marker.colors)
    ids = list(fig.data[0].ids)
    by_id = {}
    for _, r in table.iterrows():
        path = [f"{f}={r[f]}" for f in ["model", "gender"] if pd.notna(r[f])]
        if pd.notna(r["model"]):
            by_id["/".join(path)] = bool(r[DETECTABLE])
    assert len(ids) == len(colours) and any(c == GREY_OUT for c in colours)
    for i, c in zip(ids, colours, strict=True):
        assert (c == GREY_OUT) == (not by_id[i])
    plain = sunburst_figure(table, ["model", "gender"])
    assert GREY_OUT not in list(plain.data[0].marker.colors)
    with pytest.raises(AnalysisError, match="detectable"):
        sunburst_figure(table.drop(columns=DETECTABLE), ["model", "gender"],
                        grey_undetectable=True)


def test_plan_names_nested_factors():
    frame = pd.read_csv(SSQA)
    design = Design.load(SSQA_DESIGN)
    cells = cell_table(apply_design(frame, design), ["stigma", "pachankis_cluster"],
                       with_outcome=False)
    plan = plan_additions(cells, design, factors=["stigma", "pachankis_cluster"], budget=10)
    assert any("stigma" in n and "pachankis_cluster" in n and "impossible" in n
               for n in plan.notes)
    assert plan.to_dict()["notes"] == list(plan.notes)


def test_subgroups_cli_power_columns(capsys):
    from tests.analysis.cli_helpers import run_json

    rows = run_json(capsys, "subgroups", SSQA, "--design", SSQA_DESIGN, "--factors",
                    "model,gender", "--power", "0.9", "--effect", "0.25", "--no-cluster")
    rows = rows["subgroups"] if isinstance(rows, dict) else rows
    results = apply_design(pd.read_csv(SSQA), Design.load(SSQA_DESIGN))
    cells = cell_table(results, ["model", "gender"])
    expected = add_power(subgroups(cells, ["model", "gender"]), int(cells[N].sum()),
                         power=0.9, target_ld=0.25)
    key = ("model", "gender")
    got = {tuple(r[f] for f in key): r["mde_log_disparity"] for r in rows}
    for r in expected.to_dict(orient="records"):
        k = tuple(None if pd.isna(r[f]) else str(r[f]) for f in key)
        if k in got:  # (identical subgroups may be reported once)
            assert got[k] == pytest.approx(r[MDE_LOG_DISPARITY])
    assert len(got) >= 8
    assert all(r["detectable"] == (r["mde_log_disparity"] <= 0.25) for r in rows)
    assert main(["subgroups", str(SSQA), "--design", str(SSQA_DESIGN), "--factors", "model",
                 "--power", "1.5"]) == 2
    assert "power" in capsys.readouterr().err


def test_plan_from_the_design_alone(capsys):
    from tests.analysis.cli_helpers import run_json

    out = run_json(capsys, "plan", "--design", SSQA_DESIGN, "--factors", "cot,gender,model",
                   "--budget", "20")
    assert out["before"]["coverage_percentage"] == 0 and out["before"]["n_rows"] == 0
    assert out["before"]["gini_index"] is None and out["after"]["gini_index"] > 0
    assert out["after"]["coverage_percentage"] == 1 and sum(a["n"] for a in out["add"]) == 20
    counts = sorted(a["n"] for a in out["add"])
    assert counts == [1] * 12 + [2] * 4 and len(out["add"]) == 16  # 2 x 4 x 2 cells


def test_sample_size_is_the_n_after_which_power_stays_above_the_target():
    """Exact power is a sawtooth in N: for p0 0.5, LD 0.2, share 0.5 the even totals from
    3,130 reach 0.80 while the odd ones fall short (3,145: 0.7985) up to 3,176. The answer is
    the N from which every total checked reaches it, found here by brute force."""
    out = sample_size(rate=0.5, ld=0.2, share=0.5)

    def power_at(total: int) -> float:
        n1 = int(np.ceil(0.5 * total))
        return exact_ld_power(0.2, 0.5, n1, total - n1)

    assert out["n_total"] == 3177 and out["n_first_reaching"] == 3130
    assert power_at(3145) == pytest.approx(0.7985, abs=5e-5) and power_at(3144) >= 0.8
    assert power_at(3176) < 0.8
    assert all(power_at(t) >= 0.8 for t in range(3177, out["checked_up_to"] + 1))
    assert out["checked_up_to"] >= 3177 + 100
    assert power_at(3130) >= 0.8 and not any(power_at(t) >= 0.8 for t in range(3000, 3130))
    assert out["achieved_power"] == pytest.approx(power_at(3177))


def test_plan_runs_budget_not_a_power_says_what_it_used(capsys):
    args = ["plan", *itertools.chain.from_iterable(("--new", f"{f}=lo,hi") for f in "abcde"),
            "--runs", "20", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["budget"] == 20 and out["n_runs"] == 16 and len(out["runs"]) == 16
    assert "16 runs are used" in out["note"] and "--runs 20 is a budget" in captured.err
    assert main(args[:-3] + ["--runs", "16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["note"] == ""


def test_add_power_reference_df_scales_the_mde_by_t_quantiles():
    """Without a ``df`` column the MDE uses the ``reference_df`` given (cr1: G - 1):
    ``(t_{.975} + t_{.8}) / (z_{.975} + z_{.8})`` times the normal one (scipy)."""
    from scipy import stats

    table = pd.DataFrame({N: [40, 60], RATE_OUTSIDE: [0.3, 0.25]})
    normal = add_power(table, 200)[MDE_LOG_DISPARITY].to_numpy()
    t5 = add_power(table, 200, reference_df=5)[MDE_LOG_DISPARITY].to_numpy()
    ratio = ((stats.t.ppf(0.975, 5) + stats.t.ppf(0.8, 5))
             / (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)))
    np.testing.assert_allclose(t5, normal * ratio, rtol=1e-10)
