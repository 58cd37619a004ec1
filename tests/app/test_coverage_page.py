"""AppTest runs of pages/coverage.py on the bundled samples (plotly figure JSON checked)."""

from __future__ import annotations

import base64

import numpy as np
import pandas as pd
import pytest

from analysis.design import Design, make_factor, suggest_design
from tests.app.apptools import page_test, plotly_specs
from tests.conftest import SAMPLE_DIR, needs_shared

GRID = ["template", "stigma", "prompt_style", "cot"]


@pytest.fixture(scope="module")
def ssqa() -> pd.DataFrame:
    return pd.read_csv(SAMPLE_DIR / "ssqa_simulated.csv.gz")


@pytest.fixture(scope="module")
def design(ssqa) -> Design:
    """SSQA grid factors plus the model and gender; no outcome (coverage needs none)."""
    return Design(factors=tuple(make_factor(ssqa, f) for f in [*GRID, "gender", "model"]))


def run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def array(value) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array ``{"dtype", "bdata", "shape"}``."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        if isinstance(shape, str):
            shape = [int(s) for s in shape.split(",")]
        return flat.reshape(shape) if shape else flat
    return np.array([[np.nan if v is None else v for v in r] if isinstance(r, list)
                     else (np.nan if r is None else r) for r in value], dtype=float)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_default_run_shows_hand_derived_numbers(ssqa, design):
    at = run(page_test("coverage.py", frame=ssqa, design=design))
    assert at.title[0].value == "Coverage"
    # default grid = domain and prompt factors: template, stigma, prompt_style, cot, gender
    assert at.multiselect(key="coverage_factors").value == [*GRID, "gender"]
    at.multiselect(key="coverage_factors").set_value(GRID)
    run(at)
    assert metrics(at) == {"Coverage": "74.5 %", "Gini index": "0.255",
                           "Combinations": "27,824", "Empty combinations": "7,104"}
    # the reading follows the figure's tabs (the answer first): the last markdown block
    reading = at.markdown[-1].value
    assert "25.5 % of the 27,824 combinations of template x stigma x prompt_style x cot " \
           "have no prompt (7,104 empty cells)" in reading
    assert "most unevenly represented factor is prompt_style (Gini 0.246)" in reading
    # the model tab: both simulated models answered every prompt
    assert any("Every model that has rows answered all 20,720 prompt combinations" in m.value
               for m in at.markdown)


def test_heatmap_traces_match_a_crosstab(ssqa, design):
    at = page_test("coverage.py", frame=ssqa, design=design)
    at.session_state["coverage_factors"] = GRID
    run(at)
    at.selectbox(key="coverage_row").set_value("stigma")
    run(at)
    at.selectbox(key="coverage_col").set_value("prompt_style")
    run(at)
    stigmas = list(design.factor("stigma").values)
    styles = list(design.factor("prompt_style").values)
    # cells count distinct prompts by default: each prompt once, whichever models answered
    prompts = ssqa.drop_duplicates([*GRID, "gender"])
    for frame, per_base in ((prompts, 37 * 2), (ssqa, 37 * 2 * 2)):
        if frame is ssqa:  # then count responses: every row
            at.radio(key="coverage_count").set_value("responses")
            run(at)
        heat = next(s for s in plotly_specs(at) if s["data"][0]["type"] == "heatmap")
        rows, empty = heat["data"]
        assert (rows["name"], empty["name"]) == ("rows", "empty")
        assert rows["y"] == stigmas and rows["x"] == styles
        counts = (pd.crosstab(frame["stigma"], frame["prompt_style"])
                  .reindex(index=stigmas, columns=styles, fill_value=0).to_numpy())
        z = array(rows["z"]).astype(float)
        assert np.array_equal(np.nan_to_num(z), counts)
        assert np.isnan(z).sum() == (counts == 0).sum() == 93 + 3  # base x real stigmas
        marks = array(empty["z"])
        assert np.array_equal(marks == 1, counts == 0) and np.isnan(marks[counts > 0]).all()
        assert counts[stigmas.index("no stigma"), styles.index("base")] == per_base
        assert "(96 of 376 combinations empty, in red)" in heat["layout"]["title"]["text"]


def test_nesting_warning_and_model_in_grid(ssqa, design):
    at = page_test("coverage.py", frame=ssqa, design=design)
    at.session_state["coverage_factors"] = ["template", "gender", "model"]
    run(at)
    assert any(w.value.startswith("gender is nested in template") for w in at.warning)
    # 37 x 4 x 2 cells; each template has the 'no gender' base rows and one gender
    assert metrics(at)["Combinations"] == "296"
    assert metrics(at)["Coverage"] == "50.0 %"


def test_subset_single_factor_and_paging(ssqa, design):
    at = page_test("coverage.py", frame=ssqa, design=design)
    at.session_state["coverage_factors"] = ["stigma", "prompt_style"]
    at.session_state["coverage_where_model"] = ["sim-model-A"]
    run(at)
    # the subset halves the rows, not the coverage
    assert metrics(at)["Coverage"] == "74.5 %"
    summary = at.dataframe[0].value
    assert summary["n_rows"].tolist() == [20720, 20720]
    empty_tab = at.dataframe[1].value
    assert len(empty_tab) == 96
    assert (empty_tab["stigma"].astype(str) == "no stigma").sum() == 3
    at.multiselect(key="coverage_factors").set_value(["template", "stigma", "prompt_style",
                                                     "cot"])
    run(at)
    first = at.dataframe[1].value
    at.number_input(key="coverage_empty_page").set_value(2)
    run(at)
    second = at.dataframe[1].value
    assert len(first) == len(second) == 100
    assert first.iloc[-1].tolist() != second.iloc[0].tolist()
    at.multiselect(key="coverage_factors").set_value(["cot"])
    run(at)
    assert any("two or more factors" in i.value for i in at.info)
    bar = plotly_specs(at)[0]
    assert bar["data"][0]["type"] == "bar" and array(bar["data"][0]["y"]).tolist() == [10360, 10360]
    at.multiselect(key="coverage_factors").set_value([])
    run(at)
    assert at.info[0].value == "Choose at least one factor."


def test_bbq_sample_with_suggested_design():
    frame = pd.read_csv(SAMPLE_DIR / "bbq_unifiedqa.csv.gz")
    design = suggest_design(frame).subset(["category", "question_polarity",
                                           "context_condition", "input_format"])
    at = run(page_test("coverage.py", frame=frame, design=design))
    m = metrics(at)
    assert m["Combinations"] == f"{6 * 2 * 2 * 3:,}"
    # BBQ crosses every factor: every combination is present
    assert m["Coverage"] == "100.0 %" and m["Empty combinations"] == "0"
    heat = plotly_specs(at)[0]
    assert np.isnan(array(heat["data"][1]["z"])).all()  # nothing marked empty


def test_without_data_the_page_opens_on_the_bundled_sample():
    at = run(page_test("coverage.py"))  # require_results loads the default BBQ sample
    assert set(metrics(at)) == {"Coverage", "Gini index", "Combinations",
                                "Empty combinations"}
    assert any(w.value.startswith("category is nested in subcategory") for w in at.warning)


def test_a_factor_dropped_from_the_design_is_dropped_from_the_choice(ssqa, design):
    at = page_test("coverage.py", frame=ssqa, design=design.subset(["stigma", "cot"]))
    at.session_state["coverage_factors"] = ["stigma", "template", "cot"]
    run(at)
    assert at.multiselect(key="coverage_factors").value == ["stigma", "cot"]
    assert metrics(at)["Combinations"] == f"{94 * 2:,}"


@needs_shared
def test_models_tab_reads_seeds_only_with_cot_as_complete(ssqa_table):
    # SSQA x 2 models; cot = no once (seed "none"), cot = yes with seeds 1-5
    parts = []
    for model in ("A", "B"):
        parts.append(ssqa_table[ssqa_table["cot"] == "no"].assign(model=model, seed="none"))
        for seed in "12345":
            parts.append(ssqa_table[ssqa_table["cot"] == "yes"].assign(model=model, seed=seed))
    frame = pd.concat(parts, ignore_index=True)
    names = ["cot", "stigma", "gender", "prompt_style", "biased_answer", "template", "model",
             "seed"]
    design = Design(factors=tuple(make_factor(frame, f) for f in names))
    at = page_test("coverage.py", frame=frame, design=design)
    at.session_state["coverage_factors"] = ["cot", "stigma", "gender", "prompt_style",
                                            "biased_answer"]
    run(at)
    assert metrics(at)["Gini index"] == "0.711"  # counted over the 20,720 prompts
    texts = [m.value for m in at.markdown]
    assert any("cot is nested in the model factors" in t for t in texts)
    assert any("Every model combination that has rows answered every prompt combination "
               "expected of it." in t for t in texts)
    at.radio(key="coverage_count").set_value("responses")
    run(at)
    assert metrics(at)["Gini index"] == "0.794"


def test_a_15_factor_1e20_cell_design_takes_the_sparse_path():
    """3.2e20 combinations (past int64 and JavaScript's 2^53): no overflow anywhere."""
    from ui.coverage import MAX_PAGE

    rng = np.random.default_rng(0)
    sizes = [90, 80, 60, 50, 40, 30, 25, 20, 18, 16, 15, 12, 10, 8, 6]
    frame = pd.DataFrame({f"f{i}": rng.integers(0, s, 3000).astype(str)
                          for i, s in enumerate(sizes)})
    big = suggest_design(frame)
    at = page_test("coverage.py", frame=frame, design=big)
    at.session_state["coverage_factors"] = big.names
    run(at)
    values = {m.label: m.value for m in at.metric}
    assert values["Combinations"] == f"{int(np.prod(sizes, dtype=object)):,}"
    assert values["Empty combinations"] == f"{int(np.prod(sizes, dtype=object)) - 3000:,}"
    pager = at.number_input(key="coverage_empty_page")
    assert pager.max == MAX_PAGE
    pager.set_value(MAX_PAGE)
    run(at)
    assert not at.error


def test_the_item_id_of_a_design_without_one_is_read_in_the_worker(monkeypatch):
    """Issue 43 item 1: a design that carries no inferred item id makes Coverage read the
    table's structure (analysis.coverage.count_unit); that runs in the background worker
    (ui/inference_pool.py), never on the visitor's thread: meanwhile the cells count the
    design's prompt unit, then the items."""
    import dataclasses

    import analysis.structure
    from ui import inference_pool
    from ui.common import token_of

    def on_this_thread(*args, **kwargs):
        raise AssertionError("the structure was read on the visitor's thread")

    n = 60
    frame = pd.DataFrame({"example_id": np.repeat(np.arange(n), 2), "model": ["m1", "m2"] * n,
                          "category": np.repeat(["a", "b", "c"], 2 * n // 3),
                          "biased": np.arange(2 * n) % 2})
    design = dataclasses.replace(suggest_design(frame), inferred=None)
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "0")
    monkeypatch.setattr(analysis.structure, "infer_structure", on_this_thread)
    at = page_test("coverage.py", frame=frame, design=design)
    at.session_state["coverage_factors"] = ["category"]
    at.run()
    assert not at.exception, at.exception
    job = inference_pool.job(f"{token_of(frame)}|coverage|{design.to_json()}")
    assert job is not None
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    at.run()
    assert not at.exception, at.exception
    labels = at.radio(key="coverage_count").options
    assert any("distinct items (example_id" in label for label in labels), labels
