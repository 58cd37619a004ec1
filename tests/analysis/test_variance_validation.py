"""Validation of the G-study and the D-study on simulated benchmarks with known facet
variances (issue 39, item 6): REML recovers the components within their intervals at
about the nominal rate; the total-error intervals cover at about 95 % where the sampling
intervals under-cover; the D-study's projected SE matches the SE simulated under the
projected design within 10 %.

Every simulation is seeded and small (tens to a few hundred replications); the
Monte-Carlo tolerance of each assertion is stated beside it (binomial standard error
``sqrt(0.95 * 0.05 / R)`` for a coverage over R replications).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.d_study import project
from analysis.variance_components import RESIDUAL, fit_components, total_error


def simulate(rng, *, n_t, n_items, sd_t, sd_tm, sd_e=1.0, n_s=1, sd_s=0.0, n_j=1, sd_j=0.0,
             binary=False, drop=0.0, base=(0.3, 0.4)):
    """Rows: templates x seeds x judges x models x items; y = base[model] + template +
    template x model + seed + judge + noise (on the probability scale when ``binary``:
    y ~ Bernoulli of that, clipped to [0.02, 0.98])."""
    grid = np.array(np.meshgrid(np.arange(n_t), np.arange(n_s), np.arange(n_j),
                                np.arange(len(base)), np.arange(n_items), indexing="ij")
                    ).reshape(5, -1)
    t, s, j, m, _ = grid
    mean = (np.asarray(base)[m] + rng.normal(0, sd_t, n_t)[t]
            + rng.normal(0, sd_tm, (n_t, len(base)))[t, m] + rng.normal(0, sd_s, n_s)[s]
            + rng.normal(0, sd_j, n_j)[j])
    if binary:
        y = (rng.random(len(t)) < np.clip(mean, 0.02, 0.98)).astype(float)
    else:
        y = mean + rng.normal(0, sd_e, len(t))
    frame = pd.DataFrame({"template": t, "seed": s, "judge": j,
                          "model": np.array(["A", "B", "C"])[m], "y": y})
    if drop:
        frame = frame[rng.random(len(frame)) > drop]
    return frame


def _coverage(rng, reps, facets, *, exact=False, **design):
    """Coverage of model A's universe rate and of B - A by the sampling and the total-error
    intervals over ``reps`` simulated benchmarks; ``exact``: also the classic t interval
    over the templates' means (balanced, template the only facet: ``G - 1`` df)."""
    from scipy import stats

    base = design.get("base", (0.3, 0.4))
    hits = {"sampling rate": 0, "total rate": 0, "sampling difference": 0,
            "total difference": 0, "exact rate": 0, "exact difference": 0}
    for _ in range(reps):
        d = simulate(rng, **design)
        if exact:
            means = d.groupby(["template", "model"])["y"].mean().unstack()
            q = stats.t.ppf(0.975, len(means) - 1)
            for kind, values, truth in (("rate", means["A"], base[0]),
                                        ("difference", means["B"] - means["A"],
                                         base[1] - base[0])):
                se = values.std(ddof=1) / np.sqrt(len(values))
                hits[f"exact {kind}"] += abs(values.mean() - truth) <= q * se
        gs = fit_components(d, "y", fixed=["model"], facets=facets, model="model",
                            n_resamples=0)
        te = total_error(gs).set_index("label")
        for kind, label, truth in (("rate", "model = A", base[0]),
                                   ("difference", "B - A", base[1] - base[0])):
            row = te.loc[label]
            hits[f"sampling {kind}"] += row["ci_low_sampling"] <= truth <= row[
                "ci_high_sampling"]
            hits[f"total {kind}"] += row["ci_low"] <= truth <= row["ci_high"]
    out = {k: v / reps for k, v in hits.items()}
    print(f"coverage over {reps} reps: {out}")  # pytest -s shows the measured numbers
    return out


def test_total_error_covers_where_the_sampling_interval_under_covers_continuous_8_templates():
    """Continuous, balanced, 8 templates (t with Satterthwaite df matters here), 200 reps:
    Monte-Carlo SE of a 95 % coverage 0.015 (band asserted: 0.91-0.99). Measured on this
    seed: total-error 0.975 (rate) and 0.965 (difference), sampling 0.61 and 0.70; the
    classic t interval over the templates' means 0.965 and 0.965 on the same draws (in
    this balanced one-facet design the total-error interval is that interval, or wider
    when the cluster-robust floor is larger)."""
    rng = np.random.default_rng(1)
    cov = _coverage(rng, 200, ["template"], exact=True, n_t=8, n_items=40, sd_t=0.3,
                    sd_tm=0.3)
    assert 0.91 <= cov["total rate"] <= 0.99, cov
    assert 0.91 <= cov["total difference"] <= 0.99, cov
    assert cov["sampling rate"] < 0.7 and cov["sampling difference"] < 0.82, cov
    assert abs(cov["total rate"] - cov["exact rate"]) <= 0.03, cov
    assert cov["total difference"] == pytest.approx(cov["exact difference"], abs=0.02), cov


def test_total_error_covers_binary_unbalanced_templates_and_judges():
    """0/1 outcome (linear-probability REML), 30 templates, 3 judges, 25 % of rows
    dropped at random, 120 reps (MC SE 0.02; band asserted 0.89-0.995): measured
    total-error 0.967 (rate) and 0.975 (difference), sampling 0.64 and 0.86."""
    rng = np.random.default_rng(7)
    cov = _coverage(rng, 120, ["template", "judge"], n_t=30, n_items=12, sd_t=0.15,
                    sd_tm=0.08, n_j=3, sd_j=0.02, binary=True, drop=0.25)
    assert 0.89 <= cov["total rate"] <= 0.995, cov
    assert 0.89 <= cov["total difference"] <= 0.995, cov
    assert cov["sampling rate"] < 0.75 and cov["sampling difference"] < 0.9, cov


def test_reml_recovers_the_components_within_their_bootstrap_intervals():
    """8 templates (the fewest the issue asks for), 40 reps x 39 bootstrap draws: the
    template interval covers the truth at about the nominal rate (MC SE 0.035; asserted
    >= 0.85; measured 1.00: the percentile intervals from 8 levels are wide) and the
    estimates average to the truth (MC SE of the mean about 8 %; asserted within 25 %;
    measured +22 %: REML truncated at zero leans up with few levels)."""
    rng = np.random.default_rng(11)
    truth = {"template": 0.25 ** 2, RESIDUAL: 1.0}
    hits, estimates = 0, []
    for _ in range(40):
        d = simulate(rng, n_t=8, n_items=10, sd_t=0.25, sd_tm=0.0, base=(0.3,))
        gs = fit_components(d, "y", fixed=[], facets=["template"], n_resamples=39,
                            seed=int(rng.integers(1 << 30)))
        row = gs.components.set_index("component").loc["template"]
        hits += row["ci_low"] <= truth["template"] <= row["ci_high"]
        estimates.append(row["variance"])
    print(f"template interval coverage {hits / 40:.3f}, mean estimate "
          f"{np.mean(estimates):.4f} (truth {truth['template']:.4f})")
    assert hits / 40 >= 0.85
    assert np.mean(estimates) == pytest.approx(truth["template"], rel=0.25)


@pytest.mark.parametrize("n_t", [30, 100])
def test_reml_recovers_template_seed_judge_at_30_and_100_templates(n_t):
    """One benchmark per size (30 templates x 6 seeds x 6 judges; 100 templates x 5 seeds),
    every facet at once: the true variances inside their 95 % bootstrap intervals (40
    draws), at most one missing (with five intervals, two misses have probability about
    2 %)."""
    rng = np.random.default_rng(n_t)
    small = n_t == 30
    d = simulate(rng, n_t=n_t, n_items=4 if small else 3, sd_t=0.3, sd_tm=0.15,
                 n_s=6 if small else 5, sd_s=0.2, n_j=6 if small else 1,
                 sd_j=0.25 if small else 0.0)
    facets = ["template", "seed", "judge"] if small else ["template", "seed"]
    gs = fit_components(d, "y", fixed=["model"], facets=facets, model="model",
                        n_resamples=40, seed=1)
    c = gs.components.set_index("component")
    truth = {"template": 0.3, "template x model": 0.15, "seed": 0.2, RESIDUAL: 1.0,
             **({"judge": 0.25} if small else {})}
    misses = [name for name, sd in truth.items()
              if not c.loc[name, "ci_low"] <= sd ** 2 <= c.loc[name, "ci_high"]]
    assert len(misses) <= 1, (misses, c)


def _simulated_se(rng, reps, **design):
    rates, diffs = [], []
    for _ in range(reps):
        d = simulate(rng, **design)
        a = d.loc[d["model"] == "A", "y"].mean()
        rates.append(a)
        diffs.append(d.loc[d["model"] == "B", "y"].mean() - a)
    return np.std(rates, ddof=1), np.std(diffs, ddof=1)


def test_d_study_projected_se_matches_the_simulated_se():
    """Pilot: 200 templates x 10 seeds x 2 items. Projected design: 120 templates x 5
    seeds (0.6 x the templates, half the seeds). Simulated SE of A's rate and of B - A
    over 1500 benchmarks of that design (MC error of an SD about 2 %): measured 0.0471
    and 0.0444. The projection from the true components (0.0477, 0.0452) is within 5 %;
    from the pilot's REML estimates (0.0460, 0.0413) within 10 %."""
    design = dict(n_items=2, sd_t=0.3, sd_tm=0.15, n_s=10, sd_s=0.05)
    rng = np.random.default_rng(2026)
    pilot = simulate(rng, n_t=200, **design)
    gs = fit_components(pilot, "y", fixed=["model"], facets=["template", "seed"],
                        model="model", n_resamples=0)
    new = {"template": 0.6, "seed": 0.5}
    sim_rate, sim_diff = _simulated_se(rng, 1500, **{**design, "n_t": 120, "n_s": 5})
    print(f"simulated SE: rate {sim_rate:.4f}, difference {sim_diff:.4f}")
    true = {"template": 0.09, "template x model": 0.0225, "seed": 0.0025,
            "seed x model": 0.0, RESIDUAL: 1.0}
    exact = dataclasses.replace(gs, components=gs.components.assign(
        variance=gs.components["component"].map(true)))
    for fitted, tolerance in ((exact, 0.05), (gs, 0.10)):
        p = project(fitted, new)
        print(f"projected SE: rate {np.sqrt(p['var_rate']):.4f}, difference "
              f"{np.sqrt(p['var_difference']):.4f}")
        assert np.sqrt(p["var_rate"]) == pytest.approx(sim_rate, rel=tolerance)
        assert np.sqrt(p["var_difference"]) == pytest.approx(sim_diff, rel=tolerance)
