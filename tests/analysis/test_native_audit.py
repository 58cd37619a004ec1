"""Audit of the native scores' intervals, their paired deltas and the gate's verdicts
(``analysis/native_scores.py``, ``analysis/gate.py``; ``docs/native_scores.md``): edge cases
of the stratified resampling, and small seeded simulations of the coverage / size with few
templates per category (Monte-Carlo tolerances in each docstring)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.native_scores import CI_HIGH, CI_LOW, native_deltas, native_scores


def bbq_frame(rng: np.random.Generator, categories: int, templates: int, rows: int,
              mu: np.ndarray, conc: float = 20.0) -> pd.DataFrame:
    """A BBQ-like table: ``categories`` x ``templates`` templates, each with ``rows``
    ambiguous and ``rows`` disambiguated rows. A template's chance of a biased answer
    (when it names a group) is Beta(mu_h conc, (1 - mu_h) conc) around its category's
    ``mu_h``; its chance of "unknown" is Beta(0.3 conc, 0.7 conc), independent of it. The
    population scores are then s_DIS = 2 mu - 1 and s_AMB = 0.7 (2 mu - 1) per category
    (their means over the categories overall: equal sizes)."""
    cat = np.repeat(np.arange(categories), templates)
    b = rng.beta(mu[cat] * conc, (1 - mu[cat]) * conc)
    u = rng.beta(0.3 * conc, 0.7 * conc, size=len(cat))
    t = np.repeat(np.arange(len(cat)), 2 * rows)
    cond = np.tile(np.repeat(["ambig", "disambig"], rows), len(cat))
    unknown = rng.random(len(t)) < u[t]
    biased = (rng.random(len(t)) < b[t]).astype(int)
    return pd.DataFrame({
        "template_id": t, "category": [f"c{h}" for h in cat[t]], "context_condition": cond,
        "answer_type": np.where(unknown, "unknown", np.where(biased == 1, "target", "other")),
        "biased_answer": np.where(unknown, 0, biased),
        "correct": np.where(cond == "ambig", unknown.astype(int), 1)})


def test_a_category_of_one_template_does_not_stratify_the_overall_interval():
    """One template per category: resampling within each category would redraw the same
    template every time, so the overall score's interval had zero width (boot SE ~1e-15)
    and the gate could pass a bound at the estimate itself. The overall interval must
    reflect the variation between the templates: the clusters are resampled together."""
    rng = np.random.default_rng(1)
    frame = bbq_frame(rng, 4, 1, 30, np.array([0.5, 0.6, 0.7, 0.8]))
    table = native_scores(frame, n_resamples=200).table
    overall = table[table["scope"] == "overall"].set_index("score").loc[
        ["s_DIS", "s_AMB", "accuracy_amb"]]  # accuracy_dis is 1 on every row here
    assert (overall[CI_HIGH] - overall[CI_LOW] > 0.05).all(), overall
    assert (overall["boot_se"] > 0.01).all()
    assert "within each" not in overall["interval"].iloc[0]
    # one category with two templates and three with one: that one category's templates
    # alone would make the overall interval; not stratified either
    frame = bbq_frame(rng, 4, 2, 30, np.array([0.5, 0.6, 0.7, 0.8]))
    frame = frame[~((frame["category"] != "c0") & (frame["template_id"] % 2 == 1))]
    table = native_scores(frame, n_resamples=200).table
    assert "within each" not in table["interval"].iloc[0]
    # two templates in every category: stratified, as documented
    frame = bbq_frame(rng, 4, 2, 30, np.array([0.5, 0.6, 0.7, 0.8]))
    table = native_scores(frame, n_resamples=200).table
    assert "within each category" in table["interval"].iloc[0]
