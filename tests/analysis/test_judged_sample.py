"""The SIMULATED judged sample (sample_data/judged_simulated.csv.gz: 40 templates x 5
judges x 2 samples per judgment, stated facet variances in judged_simulated_effects.yaml):
the G-study recovers the stated variances within their intervals, the total-error
interval names the judge as the dominant facet of a model's rate, and the design study
answers "one more judge or ten more templates?" with numbers checked by hand, in the API
and in ``plan --d-study --json``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from analysis import api as bw
from analysis.variance_components import RESIDUAL
from tests.analysis.cli_helpers import run_json

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"
FILES = (str(SAMPLES / "judged_simulated.csv.gz"),
         str(SAMPLES / "judged_simulated.design.yaml"))


@pytest.fixture(scope="module")
def effects() -> dict:
    return yaml.safe_load((SAMPLES / "judged_simulated_effects.yaml").read_text("utf-8"))


@pytest.fixture(scope="module")
def g_study():
    return bw.variance_components(*FILES, n_resamples=100)


def test_the_stated_variances_are_recovered_within_their_intervals(g_study, effects):
    """template 0.010, template x model 0.0025, judge 0.00365 (stated) and the residual
    (mean p (1 - p)) inside the 95 % bootstrap intervals (100 draws); the zero components
    (judge x model, sample, sample x model) at the boundary."""
    table = g_study.table.set_index("component")
    stated = {**effects["biased"]["random"], RESIDUAL: effects["realised"]["residual"]}
    for name, truth in stated.items():
        row = table.loc[name]
        assert row["ci_low"] <= truth <= row["ci_high"], (name, truth, row.to_dict())
    for name in ("judge x model", "sample", "sample x model"):
        assert table.loc[name, "boundary"], name
    assert g_study.settings["facets"] == ["template", "judge", "sample"]
    # estimates: template 0.0081 (realised 0.0081), judge 0.0028 (stated 0.00365, 5 levels)
    assert table.loc["template", "variance"] == pytest.approx(
        effects["realised"]["template"], rel=0.2)


def test_total_error_of_a_rate_is_dominated_by_the_judges(g_study):
    errors = g_study.tables["total_error"]
    rate = errors[errors["quantity"] == "rate"].iloc[0]
    assert rate["dominant"] == "judge"
    assert rate["share_judge"] > rate["share_template"] > 0
    assert rate["se_ratio"] > 2
    diff = errors[errors["quantity"] == "difference"].iloc[0]
    # the judges' leniency cancels in a difference between models (balanced crossing)
    assert diff["share_judge"] == pytest.approx(0.0, abs=1e-12)
    assert diff["cluster_floor"] == ""  # no floor from the 2-level sample facet
    assert diff["ci_low"] < diff["estimate"] < diff["ci_high"]
    assert diff["ci_high"] - diff["ci_low"] < 0.12


def test_one_more_judge_or_ten_more_templates_by_hand():
    """Balanced design, a cell per row: Var(difference) = sigma2_txm x 2 / 40 +
    sigma2_e x 2 / 1600 (judge and sample x model at zero); one more judge divides the
    residual part by 6 / 5, ten more templates both parts by 50 / 40. Costs (judge call
    1, answer 1): 320 answers x 10 calls each; one more judge: 320 x 2 calls = 640; ten
    more templates: 10 / 40 x (320 + 3,200) = 880."""
    r = bw.d_study(*FILES, judge_cost=1.0)
    comp = r.tables["components"].set_index("component")["variance"]
    txm, e = comp["template x model"], comp[RESIDUAL]
    now = (txm * 2 / 40 + e * 2 / 1600) ** 0.5
    judge = (txm * 2 / 40 + e * 2 / 1600 / (6 / 5)) ** 0.5
    ten = (txm * 2 / 50 + e * 2 / 1600 / (50 / 40)) ** 0.5
    changes = r.table.set_index("change")
    assert r.tables["current"]["se_difference"].iloc[0] == pytest.approx(now, rel=1e-9)
    assert changes.loc["+1 judge", "se_difference"] == pytest.approx(judge, rel=1e-9)
    assert changes.loc["+10 template", "se_difference"] == pytest.approx(ten, rel=1e-9)
    assert changes.loc["+1 judge", "extra_cost"] == pytest.approx(640)
    assert changes.loc["+10 template", "extra_cost"] == pytest.approx(880)
    sentence = r.meta["one_or_ten"]
    assert sentence.startswith(f"One more judge: SE of the difference {now:.4g} -> "
                               f"{judge:.4g} for 640 more; ten more templates: {now:.4g} "
                               f"-> {ten:.4g} for 880 more.")
    per_ten, per_judge = (now - ten) / 880, (now - judge) / 640
    assert per_ten > per_judge  # measured: 2.3e-6 vs 1.9e-6 per unit of cost
    assert sentence.endswith(f"Per unit of cost ten more templates are the better buy "
                             f"({per_ten / per_judge:.2g} x the SE gain of one more judge).")
    assert sentence in r.notes


def test_free_judge_calls_are_said_and_no_pair_gives_no_sentence():
    r = bw.d_study(*FILES)  # judge_cost 0: one more judge costs nothing
    assert "cost nothing at these prices" in r.meta["one_or_ten"]
    only = bw.d_study(*FILES, facets=["template"])
    assert "one_or_ten" not in only.meta


def test_plan_d_study_json_states_the_answer(capsys):
    api = bw.d_study(*FILES, judge_cost=1.0, target_se=0.015)
    out = run_json(capsys, "plan", FILES[0], "--design", FILES[1], "--d-study",
                   "--judge-cost", "1", "--target-se", "0.015")
    assert out["one_or_ten"] == api.meta["one_or_ten"]
    assert out["one_or_ten"].startswith("One more judge: SE of the difference 0.01929")
    assert out["cheapest"][0]["se_difference"] <= 0.015
    assert out["settings"]["facets"] == ["template", "judge", "sample"]


def test_the_report_section_leads_with_the_headline_sentences():
    """The report's variance section opens with each rate's and the difference's two
    intervals and the facets' shares ("judge dominates" for a model's rate)."""
    import pandas as pd

    from analysis.design import Design, apply_design
    from analysis.report import build_section

    design = Design.load(FILES[1])
    results = apply_design(pd.read_csv(FILES[0]), design)
    sec = build_section("variance", results, design, {"n_resamples": 0})
    api = bw.variance_components(results, design, applied=True, n_resamples=0)
    assert sec.notes[:3] == api.meta["headline"]
    assert "judge dominates" in sec.notes[0]
    assert "over the facets [" in sec.notes[2] and "template x model" in sec.notes[2]


def test_deviation_metric_row_is_the_ecdf_metric_of_the_subgroups():
    """The total-error table's deviation metric of each model equals analysis.ecdf's
    deviation_metric (ideal 0) of the rates of the subgroups of the domain factors
    jointly (SSQA: 374 unbalanced subgroups per model)."""
    import pandas as pd

    from analysis.design import Design, apply_design
    from analysis.ecdf import deviation_metric

    design = Design.load(SAMPLES / "ssqa_simulated.design.yaml")
    results = apply_design(pd.read_csv(SAMPLES / "ssqa_simulated.csv.gz"), design)
    r = bw.variance_components(results, design, applied=True, n_resamples=0)
    dm = r.tables["total_error"].query("quantity == 'deviation metric'")
    domain = [f for f in design.of_kind("domain") if f in r.settings["fixed"]]
    assert len(dm) == 2
    for row, (model, part) in zip(dm.itertuples(), results.groupby("model", sort=False),
                                  strict=True):
        rates = part.groupby(domain, observed=True)["deviation"].mean()
        assert row.label.startswith(f"model = {model}: {len(rates)} subgroups of ")
        assert row.estimate == pytest.approx(deviation_metric(rates.to_numpy()), rel=1e-12)
        assert row.ci_low < row.estimate < row.ci_high


def test_metric_factors_unknown_is_a_clear_error():
    from analysis.errors import AnalysisError

    with pytest.raises(AnalysisError, match="'atribute' is not a factor of the fit"):
        bw.variance_components(*FILES, n_resamples=0, metric_factors=["atribute"])
    r = bw.variance_components(*FILES, n_resamples=0, metric_factors=["attribute", "template"])
    dm = r.tables["total_error"].query("quantity == 'deviation metric'")
    assert dm["label"].str.endswith("160 subgroups of attribute x template").all()
    assert r.settings["metric_factors"] == ["attribute", "template"]
