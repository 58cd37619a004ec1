"""Audit of the design study's coefficients (``analysis/d_study.py``) against Brennan's
formulas (Generalizability Theory, 2001, ch. 4: the random p x t x s design with the models
as the objects of measurement p, templates t and seeds s the facets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.d_study import d_study
from analysis.variance_components import RESIDUAL, fit_components

N_P, N_T, N_S, N_I = 5, 10, 4, 3


def _p_t_s(seed: int = 11) -> pd.DataFrame:
    """Balanced: every model x template x seed cell with N_I rows; model, template, seed,
    model x template and model x seed effects."""
    rng = np.random.default_rng(seed)
    p, t, s, _ = (a.ravel() for a in np.meshgrid(np.arange(N_P), np.arange(N_T),
                                                 np.arange(N_S), np.arange(N_I),
                                                 indexing="ij"))
    y = (rng.normal(0, 0.4, N_P)[p] + rng.normal(0, 0.5, N_T)[t] + rng.normal(0, 0.3, N_S)[s]
         + rng.normal(0, 0.3, (N_P, N_T))[p, t] + rng.normal(0, 0.2, (N_P, N_S))[p, s]
         + rng.normal(0, 1.0, len(p)))
    return pd.DataFrame({"model": [f"m{i}" for i in p], "template": t, "seed": s, "y": y})


def test_generalizability_and_dependability_are_brennans_coefficients():
    """E rho^2 = s2(p) / (s2(p) + s2(delta)) with the relative error s2(delta) =
    s2(pt)/n't + s2(ps)/n's + s2(e)/(n't n's n_i), and Phi = s2(p) / (s2(p) + s2(Delta))
    with the absolute error s2(Delta) = s2(delta) + s2(t)/n't + s2(s)/n's (Brennan 2001,
    eqs. 4.12-4.21; the t x s interaction is not fitted: it is in the residual). s2(p) is
    the models' rates' variance less the relative error of the observed design (the
    moment estimator Brennan's EMS solution gives in a balanced design). Checked for the
    observed design and for doubled templates (n't = 20) and one more seed (n's = 5)."""
    d = _p_t_s()
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "seed"], model="model",
                        n_resamples=0)
    v = gs.variance
    assert min(v("template"), v("seed"), v("template x model"), v("seed x model")) > 0

    def relative(nt: float, ns: float) -> float:
        return (v("template x model") / nt + v("seed x model") / ns
                + v(RESIDUAL) / (nt * ns * N_I))

    def absolute(nt: float, ns: float) -> float:
        return relative(nt, ns) + v("template") / nt + v("seed") / ns

    tau2 = float(np.var(d.groupby("model")["y"].mean(), ddof=1)) - relative(N_T, N_S)
    assert tau2 > 0
    ds = d_study(gs, target="rate")
    rows = {"current": ds.current.iloc[0],
            "x2 template": ds.changes.set_index("change").loc["x2 template"],
            "+1 seed": ds.changes.set_index("change").loc["+1 seed"]}
    for label, (nt, ns) in {"current": (N_T, N_S), "x2 template": (2 * N_T, N_S),
                            "+1 seed": (N_T, N_S + 1)}.items():
        row = rows[label]
        assert row["g_coefficient"] == pytest.approx(tau2 / (tau2 + relative(nt, ns)),
                                                     rel=1e-9), label
        assert row["phi"] == pytest.approx(tau2 / (tau2 + absolute(nt, ns)), rel=1e-9), label
        assert row["se_rate"] == pytest.approx(np.sqrt(absolute(nt, ns)), rel=1e-9), label
    # the difference of two models: the facets' main effects cancel
    ds = d_study(gs, target="difference")
    assert ds.current["se_difference"].iloc[0] == pytest.approx(
        np.sqrt(2 * relative(N_T, N_S)), rel=1e-9)


def test_nested_seeds_follow_brennans_p_x_s_in_t_design():
    """Seeds nested in templates (each template its own N_S seeds), the p x (s:t) design:
    s2(delta) = s2(pt)/n't + s2(ps:t)/(n't n's) + s2(e)/(n't n's n_i) and s2(Delta) adds
    s2(t)/n't + s2(s:t)/(n't n's) (Brennan 2001, table 4.4): doubling the seeds per template
    halves only the seed terms and the residual; doubling the templates halves every term."""
    rng = np.random.default_rng(12)
    p, t, s, _ = (a.ravel() for a in np.meshgrid(np.arange(N_P), np.arange(N_T),
                                                 np.arange(N_S), np.arange(N_I),
                                                 indexing="ij"))
    seed = t * N_S + s  # seed ids unique within templates
    y = (rng.normal(0, 0.4, N_P)[p] + rng.normal(0, 0.5, N_T)[t]
         + rng.normal(0, 0.4, N_T * N_S)[seed] + rng.normal(0, 0.3, (N_P, N_T))[p, t]
         + rng.normal(0, 0.3, (N_P, N_T * N_S))[p, seed] + rng.normal(0, 1.0, len(p)))
    d = pd.DataFrame({"model": [f"m{i}" for i in p], "template": t, "seed": seed, "y": y})
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "seed"], model="model",
                        n_resamples=0)
    assert gs.nested_in.get("seed") == ["template"]
    v = gs.variance
    assert min(v("template"), v("seed"), v("template x model"), v("seed x model")) > 0

    def relative(nt: float, ns: float) -> float:
        return (v("template x model") / nt + v("seed x model") / (nt * ns)
                + v(RESIDUAL) / (nt * ns * N_I))

    def absolute(nt: float, ns: float) -> float:
        return relative(nt, ns) + v("template") / nt + v("seed") / (nt * ns)

    tau2 = float(np.var(d.groupby("model")["y"].mean(), ddof=1)) - relative(N_T, N_S)
    ds = d_study(gs, target="rate")
    changes = ds.changes.set_index("change")
    assert changes.loc["x2 seed", "levels_seed"] == 2 * N_S * N_T  # seeds counted overall
    # twice the templates, each with its N_S seeds: twice the seeds too (the projection's
    # design; the table showed N_S * N_T seeds beside the SE of 2 N_S N_T)
    assert changes.loc["x2 template", "levels_seed"] == 2 * N_S * N_T
    assert changes.loc["x2 template", "rows"] == 2 * len(d)
    grid = ds.designs.set_index("change")
    assert grid.loc[f"{2 * N_T} template, {2 * N_S * N_T} seed", "se_rate"] == pytest.approx(
        changes.loc["x2 template", "se_rate"], rel=1e-12)
    for label, row, (nt, ns) in (("current", ds.current.iloc[0], (N_T, N_S)),
                                 ("x2 seed", changes.loc["x2 seed"], (N_T, 2 * N_S)),
                                 ("x2 template", changes.loc["x2 template"], (2 * N_T, N_S))):
        assert row["se_rate"] == pytest.approx(np.sqrt(absolute(nt, ns)), rel=1e-9), label
        assert row["g_coefficient"] == pytest.approx(tau2 / (tau2 + relative(nt, ns)),
                                                     rel=1e-9), label
        assert row["phi"] == pytest.approx(tau2 / (tau2 + absolute(nt, ns)), rel=1e-9), label
