"""AppTest: importing the real BBQ file through the Data page, then Subgroups; Prepare."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest

from analysis.design import Design
from analysis.importers import import_results
from analysis.prepare import Step
from tests.app.apptools import page_test, plotly_specs
from tests.conftest import SHARED_DATA, needs_shared

RELIGION_GZ = SHARED_DATA / "bbq" / "preds_Religion.jsonl.gz"  # tests/data ships gzip copies


def _import(at, source: str, files: list[tuple[str, bytes]], **options):
    at.radio(key="data_source").set_value("Import from ...").run()
    at.selectbox(key="import_source").set_value(source).run()
    uploader = f"import_files_{at.session_state['import_round']}" \
        if "import_round" in at.session_state else "import_files_0"  # a new one per attempt
    at.file_uploader(key=uploader).set_value(
        [(name, data, "application/octet-stream") for name, data in files]).run()
    for name, value in options.items():
        at.text_input(key=f"import_opt_{source}_{name}").set_value(value).run()
    at.button(key="import_run").click().run()
    assert not at.exception, at.exception
    return at


@needs_shared
def test_bbq_file_from_upload_to_sunburst():
    at = page_test("data.py").run()
    _import(at, "bbq", [("preds_Religion.jsonl", gzip.decompress(RELIGION_GZ.read_bytes()))])
    assert not at.error
    expected = import_results("bbq", [RELIGION_GZ])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Imported rows"] == f"{3 * 1200:,}"
    counts = dict(at.dataframe[0].value.values.tolist())
    assert counts == expected.counts
    at.button(key="import_use").click().run()
    assert not at.exception
    frame, design = at.session_state["results_frame"], at.session_state["design"]
    pd.testing.assert_frame_equal(frame, expected.frame)
    assert design == expected.design and design.outcome.column == "biased_answer"
    assert at.session_state["results_name"] == "preds_Religion.jsonl (bbq import)"
    # ... then the Subgroups page draws the sunburst on the imported table
    sub = page_test("subgroups.py", frame=frame, design=design).run()
    assert not sub.exception and not sub.error
    specs = plotly_specs(sub)
    assert specs and specs[0]["data"][0]["type"] == "sunburst"


def test_bad_import_shows_a_specific_error_and_keeps_the_table():
    at = page_test("data.py").run()
    before = at.session_state["results_name"]
    _import(at, "bbq", [("preds.jsonl", b'{"example_id": 1}\n')])
    assert [e.value for e in at.error] == [
        "preds.jsonl, line 1: field 'category' is missing (also question_index, "
        "question_polarity, context_condition, context, question, ans0, ans1, ans2, label, "
        "answer_info); this is not a BBQ-format file."]
    assert at.session_state["results_name"] == before


def test_wide_import_with_an_option():
    data = b"q,gold,out_a,out_b\n1,yes,yes,no\n2,no,no,no\n"
    at = page_test("data.py").run()
    _import(at, "wide", [("w.csv", data)], pattern="^out_")
    at.button(key="import_use").click().run()
    frame = at.session_state["results_frame"]
    assert frame["model"].tolist() == ["a", "a", "b", "b"]
    assert at.session_state["design"].factor("model").kind == "model"


def test_prepare_steps_counts_table_and_recipe_in_the_design():
    raw = pd.DataFrame({"q": ["q1", "q2", "q3"], "gold": ["Paris", "Rome", "Oslo"],
                        "pred_a": ["paris", "Milan", "oslo."],
                        "pred_b": ["The Paris", None, "Bergen"]})
    at = page_test("prepare.py", frame=raw, design=None).run()
    assert not at.exception
    at.multiselect(key="prepare_melt_cols").set_value(["pred_a", "pred_b"]).run()
    at.text_input(key="prepare_melt_strip").set_value("pred_").run()
    at.button(key="prepare_add").click().run()
    assert not at.exception and not at.error
    at.selectbox(key="prepare_kind").set_value("match").run()
    at.selectbox(key="prepare_match_text").set_value("answer").run()
    at.radio(key="prepare_match_how").set_value("another column").run()
    at.selectbox(key="prepare_match_other").set_value("gold").run()
    at.button(key="prepare_add").click().run()
    assert not at.exception and not at.error
    report = at.dataframe[0].value
    assert report[["rows_in", "rows_out", "rows_changed", "rows_not_handled"]].values.tolist() \
        == [[3, 6, 6, 1], [6, 6, 5, 1]]
    at.button(key="prepare_use").click().run()
    table = at.session_state["results_frame"]
    assert table["correct"].tolist()[:3] == [1, 0, 1]
    design: Design = at.session_state["design"]
    assert design.recipe == (
        Step.make("melt", columns=["pred_a", "pred_b"], factor="model", value="answer",
                  strip="pred_"),
        Step.make("match", text="answer", other="gold", output="correct"))
    assert Design.from_text(design.to_yaml()).recipe == design.recipe
    # the Design page keeps the recipe while the factors are edited
    page = page_test("design.py", frame=table, design=design).run()
    assert not page.exception
    assert page.session_state["design"].recipe == design.recipe
    assert any("Recipe: 2 Prepare step(s)" in c.value for c in page.caption)


def test_prepare_bad_step_is_refused_with_a_message():
    raw = pd.DataFrame({"a0": ["x", "y"], "a1": ["y", "x"], "label": [0, 5], "pred": ["x", "y"]})
    at = page_test("prepare.py", frame=raw).run()
    at.selectbox(key="prepare_kind").set_value("match").run()
    at.selectbox(key="prepare_match_text").set_value("pred").run()
    at.multiselect(key="prepare_match_options").set_value(["a0", "a1"]).run()
    at.selectbox(key="prepare_match_label").set_value("label").run()
    at.button(key="prepare_add").click().run()
    assert not at.exception
    assert len(at.error) == 1 and "label column 'label' has 1 rows outside the options (5)" \
        in at.error[0].value
    assert at.session_state["prepare_steps"] == []


@pytest.mark.parametrize("source", ["lm-eval", "inspect"])
def test_every_source_is_offered(source):
    at = page_test("data.py").run()
    at.radio(key="data_source").set_value("Import from ...").run()
    at.selectbox(key="import_source").set_value(source).run()
    assert not at.exception
    # either the importer's upload widget, or a clear message that it is not available
    assert len(at.get("file_uploader")) == 1 or "importer" in at.error[0].value


def _prepared(at) -> None:
    """Melt pred_a/pred_b into a model factor, match the answers with gold, use the table."""
    at.multiselect(key="prepare_melt_cols").set_value(["pred_a", "pred_b"]).run()
    at.text_input(key="prepare_melt_strip").set_value("pred_").run()
    at.button(key="prepare_add").click().run()
    at.selectbox(key="prepare_kind").set_value("match").run()
    at.selectbox(key="prepare_match_text").set_value("answer").run()
    at.radio(key="prepare_match_how").set_value("another column").run()
    at.selectbox(key="prepare_match_other").set_value("gold").run()
    at.button(key="prepare_add").click().run()
    at.button(key="prepare_use").click().run()
    assert not at.exception and not at.error


def test_copy_as_cli_of_a_prepared_table_starts_with_the_prepare_command(tmp_path):
    """Coverage's Copy as CLI on a prepared table: its first line is ``prepare RAW --recipe
    recipe.yaml``; run on the raw file with the recipe the expander offers, it rebuilds the
    page's table row for row."""
    import os
    import shlex
    import subprocess
    import sys

    from analysis.io import load_results
    from analysis.prepare import recipe_yaml
    from tests.app.apptools import ROOT

    raw = pd.DataFrame({"q": ["q1", "q2", "q3"], "gold": ["Paris", "Rome", "Oslo"],
                        "pred_a": ["paris", "Milan", "oslo."],
                        "pred_b": ["The Paris", "rome", "Bergen"]})
    at = page_test("prepare.py", frame=raw, design=None, name="raw.csv")
    _prepared(at.run())
    table, design = at.session_state["results_frame"], at.session_state["design"]
    cov = page_test("coverage.py", frame=table, design=design, name="raw.csv (prepared)")
    cov.session_state["results_prepare"] = at.session_state["results_prepare"]
    cov.run()
    assert not cov.exception
    (cli,) = [c.value for c in cov.code if c.language == "bash"]
    first, analysis = cli.splitlines()
    assert first == ("python -m analysis prepare raw.csv --recipe recipe.yaml "
                     "--out results.parquet")
    assert analysis.startswith("python -m analysis coverage results.parquet --design "
                               "design.yaml")
    assert "recipe.yaml" in [b.proto.label for b in cov.get("download_button")]
    raw.to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "recipe.yaml").write_text(recipe_yaml(design.recipe), encoding="utf-8")
    argv = shlex.split(first)
    done = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    rebuilt = load_results((tmp_path / "results.parquet").read_bytes(), name="results.parquet")
    pd.testing.assert_frame_equal(rebuilt[table.columns].reset_index(drop=True),
                                  table.reset_index(drop=True), check_dtype=False)
    # by hand: paris, Milan, oslo. | The Paris, rome, Bergen against Paris, Rome, Oslo
    assert rebuilt["correct"].tolist() == [1, 0, 1, 1, 1, 0]


def test_prepared_import_rebuilds_the_import_then_the_recipe():
    raw = pd.DataFrame({"q": ["q1", "q2"], "gold": ["a", "b"], "pred_a": ["a", "c"],
                        "pred_b": ["b", "b"]})
    at = page_test("prepare.py", frame=raw, design=None, name="w.csv (wide import)")
    at.session_state["results_rebuild"] = ("python -m analysis import wide w.csv "
                                           "--out results.parquet")
    _prepared(at.run())
    assert at.session_state["results_prepare"] == (
        "python -m analysis import wide w.csv --out raw.parquet\n"
        "python -m analysis prepare raw.parquet --recipe recipe.yaml --out results.parquet")
    assert "results_rebuild" not in at.session_state  # the prepared table is not an import


def test_a_prepared_table_gets_its_suggested_design_from_the_worker(monkeypatch):
    """Issue 43 item 1: "Use the prepared table" without a fitting design suggests one off
    the visitor's thread (ui/inference_pool.py): the run returns with a provisional
    design that keeps the recipe, and a later run adopts the suggestion, recipe kept."""
    from ui import inference_pool
    from ui.common import token_of

    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "0")
    raw = pd.DataFrame({"model": ["m1", "m2"] * 60, "race": ["a", "b", "c"] * 40,
                        "pred": ["yes", "no", "no", "yes", "no"] * 24, "gold": "yes"})
    at = page_test("prepare.py", frame=raw, design=None).run()
    at.selectbox(key="prepare_kind").set_value("match").run()
    at.selectbox(key="prepare_match_text").set_value("pred").run()
    at.radio(key="prepare_match_how").set_value("another column").run()
    at.selectbox(key="prepare_match_other").set_value("gold").run()
    at.button(key="prepare_add").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.button(key="prepare_use").click().run()
    assert not at.exception
    table = at.session_state["results_frame"]
    job = inference_pool.job(token_of(table))
    assert job is not None  # the suggestion was asked of the worker
    job.wait(120)
    assert job.done
    at.run()  # the next run adopts it
    design: Design = at.session_state["design"]
    assert design.names, "the suggested design was not adopted"
    assert [s.kind for s in design.recipe] == ["match"]
