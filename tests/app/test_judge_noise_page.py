"""The judge-noise option on the Subgroups and Factor importance pages.

The results table is the bundled illustrative four-stage sample, judged here with
synthetic scores (model-b scores low, model-a high, K = 5 samples per row) and turned into
the results table by ``judges.to_results`` (the samples helper's code is not merged yet,
so ``score_samples`` is added the way its contract describes: a JSON list per row, score
= their mean).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis.cells import filter_rows
from analysis.design import apply_design
from analysis.judge_noise import NOISE_COLUMNS, SURVIVES, subgroup_noise
from analysis.judge_stats import columns as C
from judges.to_results import to_results
from tests.app.apptools import ROOT, page_test, shown


def judged_results(k: int = 5, seed: int = 0):
    frame = pd.read_csv(ROOT / "sample_data" / "fourstage_illustrative.csv")
    rng = np.random.default_rng(seed)
    for m in C.METRICS:
        frame[m] = np.nan
    for stage, metrics in C.STAGE_METRICS.items():
        for m in metrics:
            rows = frame["stage"] == stage
            frame.loc[rows, m] = np.where(frame.loc[rows, "model"] == "model-b", 2.0, 4.0)
    frame[C.JUDGE] = "synthetic:judge"
    frame[C.UNSCORED_REASON] = ""
    results, design = to_results(frame)
    centre = np.where(results["model"] == "model-b", 2.2, 3.8)
    samples = [np.clip(np.rint(c + rng.normal(0, 1.0, k)), 1, 5).astype(int).tolist()
               for c in centre]
    results["score_samples"] = [json.dumps(s) for s in samples]
    results["score"] = [float(np.mean(s)) for s in samples]
    results["deviation"] = (results["score"] < results["threshold"]).astype(float)
    return results, design


def test_subgroups_page_shows_survival_columns():
    results, design = judged_results()
    at = page_test("subgroups.py", frame=results, design=design).run()
    assert not at.exception and not at.error
    at.multiselect(key="subgroups_factors").set_value(["model", "stage"]).run()
    at.radio(key="subgroups_level").set_value(1).run()
    at.checkbox(key="subgroups_noise").check()
    at.select_slider(key="subgroups_noise_r").set_value(100).run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert set(NOISE_COLUMNS) <= set(table.columns)
    expected, info = subgroup_noise(apply_design(results, design), ["model", "stage"],
                                    max_level=1, n_resamples=100, mode="mean", seed=0,
                                    return_info=True)
    got = table.set_index("subgroup")[SURVIVES]
    np.testing.assert_allclose(got[expected["subgroup"]], expected[SURVIVES], atol=1e-12)
    model_b = expected.set_index("subgroup").loc["model = model-b"]
    assert model_b["p_adjusted"] < 0.05 and model_b[SURVIVES] > 0.5
    sentence = shown(at.info[0].value)
    assert (f"{info['n_robust']} of {info['n_significant']} significant subgroups keep their "
            "sign and significance in >= 95 % of 100 replicates") in sentence
    # the single-sample mode is offered and changes the numbers; a rerun is cached
    at.radio(key="subgroups_noise_mode").set_value("single").run()
    assert not at.exception and not at.error
    single = subgroup_noise(filter_rows(apply_design(results, design), None),
                            ["model", "stage"], max_level=1, n_resamples=100, mode="single")
    got = at.dataframe[0].value.set_index("subgroup")[SURVIVES]
    np.testing.assert_allclose(got[single["subgroup"]], single[SURVIVES], atol=1e-12)


def test_pages_without_samples_offer_no_judge_noise():
    results, design = judged_results()
    at = page_test("subgroups.py", frame=results.drop(columns="score_samples"),
                   design=design).run()
    assert not at.exception
    assert not [c for c in at.checkbox if c.key == "subgroups_noise"]


def test_importance_page_shows_survival_columns():
    results, design = judged_results()
    at = page_test("importance.py", frame=results, design=design).run()
    at.multiselect(key="importance_factors").set_value(["model"]).run()
    assert not at.exception and not at.error
    at.checkbox(key="importance_noise").check()
    at.select_slider(key="importance_noise_r").set_value(50).run()
    assert not at.exception and not at.error
    terms = at.dataframe[0].value.set_index("term")
    assert set(NOISE_COLUMNS) <= set(terms.columns)
    (term,) = [t for t in terms.index if t.startswith("model[")]
    assert terms.loc[term, SURVIVES] > 0.5
    assert "significant terms keep their sign and significance" in shown(at.info[0].value)


def test_judge_noise_is_cached_across_other_widgets(monkeypatch):
    import analysis.judge_noise

    calls = []
    real = analysis.judge_noise.subgroup_noise

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    # the page's one cached call of analysis.api.subgroups runs it
    monkeypatch.setattr(analysis.judge_noise, "subgroup_noise", counting)
    results, design = judged_results(seed=7)  # data of its own: nothing cached yet
    at = page_test("subgroups.py", frame=results, design=design).run()
    at.checkbox(key="subgroups_noise").check().run()
    assert not at.exception and not at.error and len(calls) == 1
    at.radio(key="subgroups_sizes").set_value("equal").run()
    at.checkbox(key="subgroups_show_hide_small").check().run()
    assert not at.exception and len(calls) == 1
    assert SURVIVES in at.dataframe[0].value.columns
    at.select_slider(key="subgroups_noise_r").set_value(50).run()
    assert len(calls) == 2
