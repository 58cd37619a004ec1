"""AppTest runs of the Design page: nesting warning, cell-table metrics, design upload."""

from __future__ import annotations

import pandas as pd
import yaml

from analysis.design import Design, Factor, Outcome, make_factor
from tests.app.apptools import ROOT, metric_values, page_test, shown
from tests.conftest import needs_shared


def _run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def test_without_data_the_page_opens_on_the_bundled_sample():
    """Like every other page (issue 12): the BBQ sample with its curated design."""
    at = _run(page_test("design.py"))
    assert at.session_state["results_name"] == "bbq_unifiedqa.csv.gz"
    assert not at.info
    curated = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    assert at.multiselect[0].value == curated.names
    assert at.session_state["design"] == curated
    assert metric_values(at)["Observed cells"] != "0"


def test_when_a_link_cannot_be_restored_the_page_says_so_and_loads_nothing():
    at = page_test("design.py")
    at.session_state["restore_error"] = "The session in this link (x) could not be restored."
    _run(at)
    assert at.warning[0].value.startswith("The session in this link (x)")
    assert "results_frame" not in at.session_state
    assert [i.value for i in at.info] == ["Load a results table on the **Data** page first."]
    # outside app.py's navigation the page link degrades to a caption instead of raising
    assert [c.value for c in at.caption] == ["Go to Data (see the sidebar)"]


@needs_shared
def test_ssqa_nesting_warning_and_cell_metrics(ssqa_table):
    design = Design(factors=(make_factor(ssqa_table, "template"),
                             make_factor(ssqa_table, "gender")))
    at = _run(page_test("design.py", frame=ssqa_table, design=design, name="ssqa"))
    assert len(at.error) == 0
    (warning,) = at.warning
    assert warning.value.startswith("gender is nested in template: each of the 37 values of "
                                    "template fixes one of the 4 values of gender (apart from "
                                    "the rows at a control value such as the reference")
    observed = ssqa_table.groupby(["template", "gender"]).size()
    assert len(observed) == 74  # every template: its gender, and "no gender" for the base
    assert metric_values(at) == {"Possible cells": "148", "Observed cells": f"{len(observed)}",
                            "Rows per observed cell": f"{len(ssqa_table) / len(observed):,.1f}"}
    cells = at.dataframe[0].value
    assert cells["n"].sum() == len(ssqa_table)
    assert at.session_state["design"] == design  # it fits: the page keeps it


@needs_shared
def test_outcome_caption_and_crossed_factors(ssqa_table):
    design = Design(factors=(make_factor(ssqa_table, "cot"),
                             make_factor(ssqa_table, "prompt_style")),
                    outcome=Outcome("biased_answer", "values", values=("yes",)))
    at = _run(page_test("design.py", frame=ssqa_table, design=design))
    assert [s.value for s in at.success] == [
        "No factor is a function of another among the chosen ones."]
    k = int((ssqa_table["biased_answer"] == "yes").sum())
    n = len(ssqa_table)
    assert any(c.value == f"Deviation (biased_answer in {{yes}}): {k:,} of {n:,} rows "
                          f"({k / n:.1%}); 0 rows without an outcome." for c in at.caption)
    assert metric_values(at)["Possible cells"] == "8"
    assert metric_values(at)["Observed cells"] == "8"
    cells = at.dataframe[0].value
    expected = ssqa_table.assign(d=ssqa_table["biased_answer"] == "yes").groupby(
        ["cot", "prompt_style"])["d"].agg(["size", "sum"]).reset_index()
    assert cells["n"].tolist() == expected["size"].tolist()
    assert cells["deviations"].tolist() == expected["sum"].tolist()
    assert at.session_state["design"] == design


@needs_shared
def test_choosing_factors_in_the_page(ssqa_table):
    design = Design(factors=(make_factor(ssqa_table, "cot"),))
    at = _run(page_test("design.py", frame=ssqa_table, design=design))
    at.multiselect(key="design_factors_0").set_value(["stigma", "pachankis_cluster",
                                                     "row_in_ssqa"])
    _run(at)
    # the row id is refused as a factor; the other two are nested
    assert any("'row_in_ssqa' has 10,360 distinct values" in e.value for e in at.error)
    assert any(w.value.startswith("pachankis_cluster is nested in stigma") for w in at.warning)
    assert at.session_state["design"] == design  # an invalid choice is not stored
    at.multiselect(key="design_factors_0").set_value(["stigma", "pachankis_cluster"])
    _run(at)
    assert at.session_state["design"].names == ["stigma", "pachankis_cluster"]
    at.selectbox(key="design_0_stigma_ref").set_value("Autism Or Autism Spectrum Disorder")
    _run(at)
    assert at.session_state["design"].factor("stigma").reference == \
        "Autism Or Autism Spectrum Disorder"


def _upload_design(at, text: str, name: str = "design.yaml"):
    at.file_uploader(key="design_upload").upload(name, text.encode(), "application/yaml")
    return _run(at)


@needs_shared
def test_design_upload_lists_every_mismatch(ssqa_table):
    start = Design(factors=(make_factor(ssqa_table, "cot"),))
    at = _run(page_test("design.py", frame=ssqa_table, design=start))
    bad = {
        "factors": [
            {"name": "cot", "kind": "prompt", "values": ["no"], "reference": "no"},
            {"name": "gender", "values": ["no gender", "female", "male", "other"],
             "reference": "other"},
            {"name": "model", "values": ["a", "b"]},
        ],
        "outcome": {"column": "prompt_style", "mapping": "binary"},
    }
    _upload_design(at, yaml.safe_dump(bad), "other.yaml")
    (error,) = at.error
    lines = shown(error.value).splitlines()  # the message as the user reads it
    assert lines[0] == "other.yaml: The design does not fit this results table:"
    assert lines[1:] == [
        "- Factor 'cot': values in the data that the design does not declare: "
        "'yes' (10,360 rows).",
        "- Factor 'gender': values in the data that the design does not declare: "
        "'gender neutral' (14,508 rows).",
        "- Factor 'gender': the reference value 'other' does not occur in the data.",
        "- Factor column 'model' is not in the table.",
        "- Outcome 'prompt_style' should be 0/1 or true/false, but 20,720 rows hold other "
        "values ('base', 'original', 'positive', 'doubt'). Map it with a set of deviating "
        "values, a comparison column or a threshold instead.",
    ]
    assert int((ssqa_table["gender"] == "gender neutral").sum()) == 14508
    assert at.session_state["design"] == start  # nothing replaced

    _upload_design(at, "factors: [oops", "broken.yaml")
    assert at.error[0].value.startswith("broken.yaml: The design file is not valid YAML")


@needs_shared
def test_design_upload_that_fits(ssqa_table):
    at = _run(page_test("design.py", frame=ssqa_table,
                        design=Design(factors=(make_factor(ssqa_table, "cot"),))))
    good = Design(
        factors=(Factor("prompt_style", "prompt",
                        ("base", "original", "positive", "doubt", "shouting"), "original"),
                 Factor("cot", "prompt", ("yes", "no"), "no")),
        outcome=Outcome("biased_answer", "values", values=("yes",)),
    )
    _upload_design(at, good.to_json(), "good.json")
    assert len(at.error) == 0
    unseen = ("Factor 'prompt_style': declared values never seen in the data (empty cells): "
              "'shouting'.")
    assert [w.value for w in at.warning] == [unseen]  # once, not twice
    # the page rebuilt its widgets from the file and kept it, value order included
    assert at.session_state["design"] == good
    assert at.session_state["design_rev"] == 1
    assert metric_values(at)["Possible cells"] == "10"
    assert metric_values(at)["Observed cells"] == "8"
    _run(at)  # a rerun keeps the design and its warning
    assert at.session_state["design"] == good
    assert [w.value for w in at.warning] == [unseen]


def test_small_table_with_threshold_outcome():
    frame = pd.DataFrame({"g": ["a", "b", "a", "b", "a"], "h": ["x", "x", "y", "y", "x"],
                          "score": [1.0, 4.0, None, 2.0, 5.0]})
    design = Design(factors=(Factor("g", "domain", ("a", "b"), "a"),
                             Factor("h", "prompt", ("x", "y"), "x")),
                    outcome=Outcome("score", "below", threshold=3))
    at = _run(page_test("design.py", frame=frame, design=design))
    assert any(shown(c.value) == "Deviation (score < 3): 2 of 4 rows (50.0%); 1 rows without an "
                          "outcome." for c in at.caption)
    assert metric_values(at) == {"Possible cells": "4", "Observed cells": "3",
                            "Rows per observed cell": "1.3"}
    assert at.number_input(key="design_outcome_0_thr").value == 3.0


def test_a_continuous_outcome_and_covariates_survive_the_design_page():
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    at = page_test("design.py", frame=imported.frame, design=imported.design).run()
    assert not at.exception
    saved = at.session_state["design"]
    assert saved.outcome.type == "continuous" and saved.covariates == ("age",)
    (box,) = [c for c in at.checkbox if c.label.startswith("Continuous score")]
    assert box.value
    box.uncheck().run()
    assert at.session_state["design"].outcome.type == "binary"
