"""Per-subgroup small-sample inference with a cluster (issue 38 items 1, 2, 7).

Each cluster-robust subgroup contrast gets its CR2 standard error with its own
Satterthwaite (Bell-McCaffrey) df instead of t on G - 1, a ``df`` and ``n_clusters``
column, and no p-value when it rests on fewer than 2 clusters. Checked against
clubSandwich 0.5.8 (``tests/reference/subgroup_df_clubsandwich.R``, numbers stored in
``subgroup_df_clubsandwich.csv``; CI needs no R), against the shared kernel
``analysis.clusters.SmallSampleCR2`` on the two-column logit, on the bundled BBQ sample
(issue 38's numbers) and by seeded simulation (size and coverage at G = 8, 12, 40).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.clusters import DF_FLOOR, MIN_SUPPORTING_CLUSTERS, SmallSampleCR2
from analysis.subgroups import ld_cluster_variance, ld_satterthwaite_df, subgroups

REF = Path(__file__).resolve().parents[1] / "reference"
ROOT = REF.parents[1]


def _cells(case: str) -> pd.DataFrame:
    cells = pd.read_csv(REF / "subgroup_df_cells.csv", dtype={"cluster": str, "value": str})
    return cells[cells["case"] == case].drop(columns="case").reset_index(drop=True)


def _reference() -> pd.DataFrame:
    return pd.read_csv(REF / "subgroup_df_clubsandwich.csv", dtype={"value": str})


def test_reference_names_its_versions():
    ref = _reference()
    assert set(ref["clubsandwich_version"].astype(str)) == {"0.5.8"}
    assert all(v.startswith("R version 4.2.2") for v in ref["r_version"])


@pytest.mark.parametrize("case", ["bbq", "sim"])
def test_subgroup_se_and_df_equal_clubsandwich(case):
    """SE, Satterthwaite df and p of every subgroup on >= 2 clusters equal clubSandwich's
    ``coef_test(vcov = "CR2", test = "Satterthwaite")`` on the rows (glm through its
    working regression) to 1e-6; n_clusters counts the clusters holding its rows."""
    ref = _reference().query("case == @case").set_index("value")
    table = subgroups(_cells(case), ["value"], max_level=1, cluster="cluster")
    ours = table.set_index("value").loc[ref.index]
    np.testing.assert_allclose(ours["log_disparity"], ref["estimate"], rtol=1e-7)
    se = (ours["ci_high"] - ours["log_disparity"]) / stats.t.ppf(0.975, ours["df"])
    np.testing.assert_allclose(se, ref["std_err"], rtol=1e-6)
    np.testing.assert_allclose(ours["df"], ref["df"], rtol=1e-6)
    np.testing.assert_allclose(ours["p_value"], ref["p_value"], rtol=1e-6)
    assert (ours["n_clusters"] == ref["n_clusters"]).all()


def test_collapsed_reference_equals_the_rows_one_by_one():
    """The R script collapses identical working-regression rows (prior weights); on the
    simulated case it also fits the rows one by one: the same SE and df to 1e-8. There
    clubSandwich's own vcovCR.glm agrees too (to 1e-6: in this two-group model its other
    square root of the CR2 adjustment gives the same matrix)."""
    ref = _reference().query("case == 'sim'")
    np.testing.assert_allclose(ref["rows_std_err"], ref["std_err"], rtol=1e-8)
    np.testing.assert_allclose(ref["rows_df"], ref["df"], rtol=1e-8)
    np.testing.assert_allclose(ref["glm_std_err"], ref["std_err"], rtol=1e-6)
    np.testing.assert_allclose(ref["glm_df"], ref["df"], rtol=1e-6)


def _kernel_df(a, n, d, t) -> tuple[float, float]:
    """SE and df of the indicator's coefficient from the shared kernel (a p = 2 logit
    rebuilt from the per-cluster counts): an independent route to the closed form."""
    big_a, big_n = a.sum(), n.sum()
    p1, p0 = big_a / big_n, (d.sum() - big_a) / (t.sum() - big_n)
    e1, e0 = a - p1 * n, (d - a) - p0 * (t - n)
    w1, w0 = n * p1 * (1 - p1), (t - n) * p0 * (1 - p0)
    scores = np.column_stack([e1 + e0, e1])
    infos = np.stack([np.array([[x + y, x], [x, x]]) for x, y in zip(w1, w0, strict=True)])
    kernel = SmallSampleCR2(scores, np.linalg.inv(infos.sum(axis=0)), infos)
    row = kernel.t_tests(np.zeros(2), np.array([[0.0, 1.0]])).iloc[0]
    return float(row["std_err"]), float(row["df"])


def test_closed_form_equals_the_shared_kernel():
    """On 30 random unbalanced benchmarks (4-15 clusters, subgroups on 2..G clusters) the
    O(G) closed form of ld_satterthwaite_df and the CR2 variance equal SmallSampleCR2 on
    the two-column logit to 1e-9."""
    rng = np.random.default_rng(38)
    for _ in range(30):
        g = int(rng.integers(4, 16))
        t = rng.integers(20, 200, g).astype(float)
        n = np.where(rng.random(g) < 0.5, rng.integers(1, 20, g), 0).astype(float)
        n[:2] = np.maximum(n[:2], 3)
        n = np.minimum(n, t - 1)
        p = rng.uniform(0.2, 0.7, g)
        a = rng.binomial(n.astype(int), p).astype(float)
        d = a + rng.binomial((t - n).astype(int), p)
        _, var, *_ = ld_cluster_variance(a, n, d, t)
        se, df = _kernel_df(a, n, d, t)
        assert np.sqrt(var) == pytest.approx(se, rel=1e-9)
        assert ld_satterthwaite_df(a, n, d, t) == pytest.approx(df, rel=1e-9)


def test_df_bounds():
    """df >= 1 always (a ratio (sum l)^2 / sum l^2 of non-negative eigenvalues) and
    G - 1 for a subgroup holding the same share of every one of G equal clusters."""
    g = 9
    t = np.full(g, 40.0)
    n = np.full(g, 10.0)
    a = np.array([3, 4, 2, 5, 3, 4, 6, 2, 3], float)
    d = a + np.array([10, 12, 9, 14, 11, 8, 13, 10, 12], float)
    assert ld_satterthwaite_df(a, n, d, t) == pytest.approx(g - 1, rel=1e-12)
    n2 = np.zeros(g)
    n2[:2] = [30, 2]
    a2 = np.minimum(a, n2)
    assert 1 <= ld_satterthwaite_df(a2, n2, d, t) < 1.2
    assert DF_FLOOR == 1.0 and MIN_SUPPORTING_CLUSTERS == 2


# --- the bundled BBQ sample (issue 38's numbers) -------------------------------------------
def _bbq(**options):
    from analysis import api

    return api.subgroups(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz",
                         ROOT / "sample_data" / "bbq_unifiedqa.design.yaml",
                         factors=["subcategory"], level=1, **options)


def test_bbq_dwarfism_rests_on_two_templates():
    """Issue 38: Dwarfism (2 of 150 templates) had p 5.1e-26 with t on 149 df; with its
    own Satterthwaite df (1.007) p is 0.048. No subcategory on 1-2 templates is below
    0.01; the 1-template ones (SkinAppearance, Strabismus) have no p-value and a note
    naming value and clusters."""
    table = _bbq().table.set_index("subcategory")
    dwarf = table.loc["Dwarfism"]
    assert dwarf["n_clusters"] == 2
    assert dwarf["df"] == pytest.approx(1.00717, abs=1e-4)
    assert dwarf["p_value"] == pytest.approx(0.048455, rel=1e-3)
    se = (dwarf["ci_high"] - dwarf["log_disparity"]) / stats.t.ppf(0.975, dwarf["df"])
    z = dwarf["log_disparity"] / se
    assert 2 * stats.t.sf(abs(z), 149) == pytest.approx(5.124e-26, rel=1e-3)  # the old p
    few = table[table["n_clusters"] <= 2]
    assert (few["p_value"].dropna() > 0.01).all()
    for value in ("SkinAppearance", "Strabismus"):
        row = table.loc[value]
        assert row["n_clusters"] == 1 and np.isnan(row["p_value"]) and np.isnan(row["df"])
        assert np.isnan(row["ci_low"]) and np.isnan(row["p_adjusted"])
    notes = " ".join(_bbq().notes)
    assert "subcategory = SkinAppearance occurs in 1 of 150 values of template_id" in notes
    assert "subcategory = Strabismus occurs in 1 of 150 values of template_id" in notes
    # the interval and p still agree: p < 0.05 exactly when the 95 % CI excludes 0
    tested = table[table["p_value"].notna()]
    assert ((tested["p_value"] < 0.05)
            == ((tested["ci_low"] > 0) | (tested["ci_high"] < 0))).all()


def test_bbq_cli_json_has_df_and_method(capsys):
    from tests.analysis.cli_helpers import run_json

    out = run_json(capsys, "subgroups", ROOT / "sample_data" / "bbq_unifiedqa.csv.gz",
                   "--design", ROOT / "sample_data" / "bbq_unifiedqa.design.yaml",
                   "--factors", "subcategory", "--level", "1")
    settings = out["settings"]
    assert settings["df_method"] == "satterthwaite" and settings["reference_df"] is None
    assert "Satterthwaite df" in settings["uncertainty"]
    rows = {r["subcategory"]: r for r in out["subgroups"]}
    assert rows["Obesity"]["df"] == pytest.approx(4.327, abs=1e-3)
    assert rows["Strabismus"]["df"] is None and rows["Strabismus"]["p_value"] is None
    cr1 = run_json(capsys, "subgroups", ROOT / "sample_data" / "bbq_unifiedqa.csv.gz",
                   "--design", ROOT / "sample_data" / "bbq_unifiedqa.design.yaml",
                   "--factors", "subcategory", "--level", "1", "--small-sample", "cr1")
    assert cr1["settings"]["df_method"] == "G - 1" and cr1["settings"]["reference_df"] == 149
    assert {r["df"] for r in cr1["subgroups"] if r["df"] is not None} == {149}


def test_mde_uses_the_subgroups_own_df_and_design_effect_at_least_one():
    """Issue 38 item 5: Dwarfism's design effect is 0.46 (a robust SE below the
    independent-rows one, from 2 templates): planning uses 1, and its df (1.007), so its
    MDE is the independent-rows MDE times (t_{1.007, .975} + t_{1.007, .8}) /
    (z_.975 + z_.8); Physical (design effect 3.8, df 6.9) keeps its design effect."""
    from analysis.planning import minimum_detectable_ld

    table = _bbq(power=0.8).table.set_index("subcategory")
    n_total = int(_bbq().table.query("level == 1")["n"].sum())
    for value in ("Dwarfism", "Physical"):
        row = table.loc[value]
        deff = max(row["design_effect"], 1.0)
        base = minimum_detectable_ld(np.array([row["n"] / deff**2]),
                                     np.array([(n_total - row["n"]) / deff**2]),
                                     np.array([row["rate_outside"]]))[0]
        factor = ((stats.t.ppf(0.975, row["df"]) + stats.t.ppf(0.8, row["df"]))
                  / (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)))
        assert row["mde_log_disparity"] == pytest.approx(base * factor, rel=1e-9)
    assert table.loc["Dwarfism", "design_effect"] < 1 < table.loc["Physical", "design_effect"]
    assert np.isnan(table.loc["Strabismus", "mde_log_disparity"])


def test_fisher_rows_get_the_exact_conditional_interval():
    """Issue 38 item 5: without a cluster, a subgroup tested with Fisher's exact test gets
    the Cornfield interval (scipy's conditional odds ratio interval, log scale) instead
    of Woolf's; over 3,000 random small tables the interval never excludes 0 while
    Fisher's p is >= 0.05 (Woolf's does, in some)."""
    from scipy.stats.contingency import odds_ratio

    from analysis.subgroups import disparity_stats, fisher_exact_pvalues

    rng = np.random.default_rng(38)
    n = rng.integers(3, 25, 150)
    a = rng.binomial(n, 0.5)
    out_n, out_d = 400, 120
    st = disparity_stats(a, n, total_deviations=int(a.sum()) + out_d,
                         total_n=int(n.sum()) + out_n, exact_ci=True)
    assert (st["test"] == "fisher").all()  # every one small
    # the totals are of the whole table: recompute one row by hand
    total_d, total_n = int(a.sum()) + out_d, int(n.sum()) + out_n
    i = 0
    table = [[a[i], n[i] - a[i]], [total_d - a[i], total_n - n[i] - (total_d - a[i])]]
    iv = odds_ratio(table, kind="conditional").confidence_interval(0.95)
    assert st["ci_low"][i] == pytest.approx(np.log(iv.low), rel=1e-9)
    assert st["ci_high"][i] == pytest.approx(np.log(iv.high), rel=1e-9)
    # many small tables of their own: CI excluding 0 implies Fisher's p < 0.05
    b = rng.integers(0, 15, 150)
    c = rng.integers(1, 15, 150)
    d = rng.integers(1, 15, 150)
    from analysis.subgroups import conditional_ld_interval

    lo, hi = conditional_ld_interval(a, b, c, d)
    p = fisher_exact_pvalues(a, b, c, d)
    excludes = (lo > 0) | (hi < 0)
    assert excludes.sum() > 5
    assert (p[excludes] < 0.05).all()
    # subgroups() without a cluster shows it on its Fisher rows
    cells = pd.DataFrame({"f": ["x", "y", "z"], "n": [12, 300, 280], "deviations": [9, 90, 80]})
    table = subgroups(cells, ["f"], max_level=1).set_index("f")
    assert table.loc["x", "test"] == "fisher"
    x_lo, x_hi = conditional_ld_interval(np.array([9]), np.array([3]), np.array([170]),
                                         np.array([410]))
    assert table.loc["x", "ci_low"] == pytest.approx(x_lo[0], rel=1e-9)
    assert table.loc["x", "ci_high"] == pytest.approx(x_hi[0], rel=1e-9)
