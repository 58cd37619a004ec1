"""Bootstrap CIs (issue 13, items 1 and 2): estimates equal the existing statistics, the
replicates equal an explicit resampling, and the cluster bootstrap covers a simulated
truth at close to the nominal rate where a row bootstrap does not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.bootstrap import (
    bootstrap_ecdf,
    bootstrap_index,
    bootstrap_log_disparity,
    replicate_cells,
)
from analysis.cells import cell_table
from analysis.columns import (
    BOOT_CI_HIGH,
    BOOT_CI_LOW,
    BOOT_SE,
    DEVIATION_METRIC,
    DEVIATIONS,
    ESTIMATE,
    LLMBI,
    LOG_DISPARITY,
    QUANTITY,
    STATISTIC,
    N,
)
from analysis.design import Design, apply_design
from analysis.ecdf import ecdf_summary, ks_tests, subgroup_rates
from analysis.errors import AnalysisError
from analysis.index import Dimension, bias_index
from analysis.subgroups import subgroups
from tests.app.apptools import ROOT


@pytest.fixture(scope="module")
def ssqa():
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design.load(ROOT / "sample_data" / "ssqa_simulated.design.yaml")
    return apply_design(frame, design), design


def simulate(seed: int, clusters: int = 50, per_cell: int = 4) -> tuple[pd.DataFrame, dict]:
    """Templates x 2 models x 6 groups; a template shifts every rate by u ~ U(-.25, .25),
    shared by both models. Truth: DM(model) = mean of its six base rates (C = 0)."""
    rng = np.random.default_rng(seed)
    base = {"A": np.linspace(0.3, 0.5, 6), "B": np.linspace(0.35, 0.6, 6)}
    u = rng.uniform(-0.25, 0.25, clusters)
    template = np.repeat(np.arange(clusters), 12 * per_cell)
    model = np.tile(np.repeat(["A", "B"], 6 * per_cell), clusters)
    group = np.tile(np.repeat(np.arange(6), per_cell), 2 * clusters)
    p = np.where(model == "A", base["A"][group], base["B"][group]) + u[template]
    frame = pd.DataFrame({"template": template, "model": model, "group": group.astype(str),
                          "deviation": (rng.random(len(p)) < p).astype(float)})
    return frame, {m: float(b.mean()) for m, b in base.items()}


def test_cluster_replicates_equal_an_explicit_resampling_of_clusters():
    frame, _ = simulate(0, clusters=8)
    cells, n, k = replicate_cells(frame, ["model", "group"], cluster="template", n_resamples=50,
                                  seed=4)
    # the same draws, by hand: multinomial counts of clusters, then rows of drawn clusters
    rng = np.random.default_rng(4)
    weights = rng.multinomial(8, np.full(8, 1 / 8), size=50)
    for b in (0, 17, 49):
        rows = pd.concat([frame[frame["template"] == g] for g in range(8)
                          for _ in range(weights[b, g])])
        by_hand = rows.groupby(["model", "group"])["deviation"].agg(["size", "sum"])
        keys = list(zip(cells["model"].astype(str), cells["group"].astype(str), strict=True))
        expected = by_hand.reindex(keys).fillna(0)
        np.testing.assert_array_equal(n[b], expected["size"].to_numpy())
        np.testing.assert_array_equal(k[b], expected["sum"].to_numpy())
    assert (n.sum(axis=1) % 48 == 0).all()  # whole templates of 48 rows


def test_row_replicates_keep_the_total():
    frame, _ = simulate(1, clusters=10)
    _, n, k = replicate_cells(frame, ["model", "group"], n_resamples=200, seed=2)
    assert (n.sum(axis=1) == len(frame)).all() and (k <= n).all()
    assert abs(k.sum(axis=1).mean() - frame["deviation"].sum()) < 0.02 * len(frame)


def test_estimates_equal_the_statistics(ssqa):
    results, design = ssqa
    factors = ["cot", "gender"]
    table = bootstrap_log_disparity(results, factors, cluster="template", n_resamples=200, seed=1)
    plain = subgroups(cell_table(results, factors), factors)
    np.testing.assert_allclose(table[LOG_DISPARITY], plain[LOG_DISPARITY], atol=1e-12)
    assert (table[BOOT_CI_LOW] < table[LOG_DISPARITY]).all()
    assert (table[LOG_DISPARITY] < table[BOOT_CI_HIGH]).all()
    again = bootstrap_log_disparity(results, factors, cluster="template", n_resamples=200, seed=1)
    np.testing.assert_array_equal(again[BOOT_CI_LOW], table[BOOT_CI_LOW])  # seeded

    out = bootstrap_ecdf(results, ["stigma", "gender"], by="model", cluster="template",
                         n_resamples=200, seed=3)
    cells = cell_table(results, ["model", "stigma", "gender"])
    rates = subgroup_rates(cells, ["stigma", "gender"], by="model")
    summary = ecdf_summary(rates, by="model")
    dm = out[out[QUANTITY] == "deviation_metric"]
    np.testing.assert_allclose(dm[ESTIMATE], summary[DEVIATION_METRIC], atol=1e-12)
    diff = out[out[QUANTITY] == "difference"][ESTIMATE].iloc[0]
    assert diff == pytest.approx(summary[DEVIATION_METRIC].iloc[0]
                                 - summary[DEVIATION_METRIC].iloc[1])
    ks = out[out[QUANTITY] == "ks_statistic"][ESTIMATE].iloc[0]
    assert ks == pytest.approx(ks_tests(rates, by="model")[STATISTIC].iloc[0])
    assert (out[BOOT_CI_LOW] <= out[BOOT_CI_HIGH]).all() and (out[BOOT_SE] > 0).all()


def test_index_bootstrap_estimates_and_intervals(ssqa):
    results, design = ssqa
    options = {"dimensions": [Dimension("gender"), Dimension("pachankis_cluster")],
               "model": "model"}
    out = bootstrap_index(results, design, cluster="template", n_resamples=25, seed=0, **options)
    totals = bias_index(results, design, **options).totals.set_index("model")[LLMBI]
    got = out[out[QUANTITY] == LLMBI].set_index("model")[ESTIMATE]
    np.testing.assert_allclose(got[totals.index], totals, atol=1e-12)
    assert (out[BOOT_CI_LOW] <= out[ESTIMATE] + 1e-12).all()
    assert set(out[QUANTITY]) >= {"score[gender]", "weighted_bias", "diversity_penalty"}


def test_cluster_bootstrap_covers_the_truth_and_row_bootstrap_does_not():
    """80 simulated benchmarks, 200 replicates each: the 90 % cluster-bootstrap interval of
    the deviation metric covers the truth at about 90 %; the row bootstrap, blind to the
    template effect, clearly less."""
    covered = {"template": 0, None: 0}
    for seed in range(80):
        frame, truth = simulate(seed)
        for cluster in covered:
            out = bootstrap_ecdf(frame, ["group"], by="model", cluster=cluster, n_resamples=200,
                                 confidence=0.9, seed=seed)
            row = out.iloc[0]
            covered[cluster] += row[BOOT_CI_LOW] <= truth["A"] <= row[BOOT_CI_HIGH]
    assert 0.82 <= covered["template"] / 80 <= 0.97
    assert covered[None] / 80 < covered["template"] / 80 - 0.1


def test_bad_bootstrap_requests(ssqa):
    results, _ = ssqa
    with pytest.raises(AnalysisError, match="at least 20 replicates"):
        bootstrap_log_disparity(results, ["cot"], n_resamples=5)
    with pytest.raises(AnalysisError, match="'prompt_id' is not in the table"):
        bootstrap_log_disparity(results, ["cot"], cluster="prompt_id", n_resamples=50)
    with pytest.raises(AnalysisError, match="also one of the factors"):
        bootstrap_log_disparity(results, ["cot", "template"], cluster="template", n_resamples=50)
    one = results[results["template"] == results["template"].iloc[0]]
    with pytest.raises(AnalysisError, match="at least two clusters"):
        bootstrap_log_disparity(one, ["cot"], cluster="template", n_resamples=50)
    assert DEVIATIONS and N  # column names used above


def test_cli_bootstrap_options(ssqa, capsys):
    from tests.analysis.cli_helpers import run_json

    results, design = ssqa
    file = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
    dfile = ROOT / "sample_data" / "ssqa_simulated.design.yaml"
    rows = run_json(capsys, "subgroups", file, "--design", dfile, "--factors", "cot,gender",
                    "--ci", "bootstrap", "--cluster", "template", "--n-boot", "200")
    rows = rows["subgroups"] if isinstance(rows, dict) else rows
    expected = bootstrap_log_disparity(results, ["cot", "gender"], cluster="template",
                                       n_resamples=200, seed=0)
    np.testing.assert_allclose([r["boot_ci_low"] for r in rows], expected[BOOT_CI_LOW])
    out = run_json(capsys, "ecdf", file, "--design", dfile, "--factors", "gender", "--by",
                   "model", "--ci", "bootstrap", "--n-boot", "100", "--seed", "5")
    # the bundled design declares its cluster (template): resampled by default
    assert out["bootstrap"]["settings"] == {"cluster": "template", "n_boot": 100, "seed": 5}
    boot = bootstrap_ecdf(results, ["gender"], by="model", n_resamples=100, seed=5,
                          cluster="template")
    assert [r["boot_ci_high"] for r in out["bootstrap"]["intervals"]] == pytest.approx(
        boot[BOOT_CI_HIGH].tolist())
    out = run_json(capsys, "index", file, "--design", dfile, "--dimensions", "gender",
                   "--model", "model", "--ci", "bootstrap", "--n-boot", "20")
    assert {r["quantity"] for r in out["bootstrap"]["intervals"]} >= {"llmbi", "score[gender]"}


def _balanced(seed: int, per_cell: int = 25) -> tuple[pd.DataFrame, Design]:
    """4 groups x 3 styles, equally many rows each; one deviation rate 0.3 everywhere."""
    from analysis.design import Outcome, make_factor

    rng = np.random.default_rng(seed)
    group = np.repeat(list("abcd"), 3 * per_cell)
    style = np.tile(np.repeat(["s1", "s2", "s3"], per_cell), 4)
    frame = pd.DataFrame({"group": group, "style": style,
                          "deviation": (rng.random(len(group)) < 0.3).astype(float)})
    design = Design(tuple(make_factor(frame, f) for f in ["group", "style"]), Outcome("deviation"))
    return apply_design(frame, design), design


def test_index_penalty_is_design_fixed_and_maxima_are_flagged():
    """The coverage-Gini penalty describes which prompts were asked: on a balanced design it is
    0 and its interval is [0, 0] (resampling rows used to give it 0.03-0.09). The largest
    |log disparity| with no true disparity sits below most of its replicates: flagged."""
    results, design = _balanced(3)
    options = {"dimensions": [Dimension("group", "max_abs_log_disparity")],
               "penalty_kind": "coverage_gini", "penalty_value": 1.0,
               "penalty_factors": ["group", "style"]}
    out = bootstrap_index(results, design, n_resamples=200, seed=1, **options).set_index(QUANTITY)
    pen = out.loc["diversity_penalty"]
    assert pen[ESTIMATE] == 0.0 and pen[BOOT_CI_LOW] == pen[BOOT_CI_HIGH] == 0.0
    assert pen[BOOT_SE] == 0.0 and "design-fixed" in pen["note"]
    total = bias_index(results, design, **options).totals.iloc[0]
    assert out.loc[LLMBI, ESTIMATE] == pytest.approx(total[LLMBI])
    # without the penalty, the index's replicates are the weighted bias's: same interval
    assert out.loc[LLMBI, BOOT_CI_LOW] == pytest.approx(out.loc["weighted_bias", BOOT_CI_LOW])
    score = out.loc["score[group]"]
    share = float(score["note"].split("%")[0]) / 100
    assert share > 0.5 and "maximum is biased upwards" in score["note"]
    assert "maximum" in out.loc[LLMBI, "note"]
    # a deviation-metric dimension on the same rows gets no maximum note
    plain = bootstrap_index(results, design, n_resamples=50, seed=1,
                            dimensions=[Dimension("group")]).set_index(QUANTITY)
    assert "maximum" not in plain.loc["score[group]", "note"]


def test_constant_outcome_gives_undefined_intervals_without_numpy_warnings(tmp_path):
    """Issue 26: a constant outcome left every LD undefined and numpy printed "All-NaN
    slice" and "Degrees of freedom <= 0" warnings on the CLI's stderr."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rng = np.random.default_rng(0)
    path = tmp_path / "const.csv"
    pd.DataFrame({"model": rng.choice(["m1", "m2"], 200), "g": rng.choice(["a", "b"], 200),
                  "dev": 0}).to_csv(path, index=False)
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-m", "analysis", "subgroups", str(path),
         "--factors", "model,g", "--outcome", "dev", "--ci", "bootstrap", "--n-boot", "40",
         "--json"], capture_output=True, text=True, cwd=root, timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and "numpy" not in proc.stderr, proc.stderr
    rows = json.loads(proc.stdout)["subgroups"]
    assert rows and all(r["boot_ci_low"] is None and r["boot_ci_high"] is None for r in rows)
