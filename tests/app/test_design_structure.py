"""AppTest of the Design page's structure table and its one-click overrides (issue #24)."""

from __future__ import annotations

from analysis.design import suggest_design
from analysis.importers import import_results
from tests.analysis.importers.harness_runs import LM_EVAL_FIXTURE
from tests.app.apptools import page_test


def _run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def _click(at, label: str):
    next(b for b in at.button if b.label == label).click()
    return _run(at)


def test_structure_table_and_overrides_on_an_lm_eval_import():
    frame = import_results("lm-eval", [LM_EVAL_FIXTURE]).frame
    design = suggest_design(frame)
    # no answer option, answer text or gold index is suggested as a factor
    assert not {"question", "ans0", "ans1", "ans2", "label", "context"} & set(design.names)
    at = _run(page_test("design.py", frame=frame, design=design, name="lm-eval"))
    table = at.dataframe[-1].value.set_index("column")
    assert table.loc["label", "role"] == "answer key"
    assert table.loc["ans0", "role"] == "item text"
    assert table.loc["doc_id", "role"] == "item id"
    assert "answer options" in table.loc["ans1", "reason"]
    # one click: question_index is the inferred cluster; take it away, then make it a factor
    assert at.session_state["design"].cluster == "question_index"
    at.selectbox(key="design_structure_column").set_value("question_index")
    _click(at, "No cluster (independent rows)")
    assert at.session_state["design"].cluster is None
    _click(at, "Make it a factor")
    assert "question_index" in at.session_state["design"].names
    assert "question_index" in at.multiselect[0].value
    rev = at.session_state["design_rev"]
    # the item id alone mixes prompts: filter (a prompt factor) varies within it; refused
    at.multiselect(key=f"design_structure_{rev}_unit").set_value(["doc_id"])
    _run(at)
    assert [e.value for e in at.error] == [
        "The prompt unit doc_id does not identify prompts: the prompt factor 'filter' takes "
        "several values within one of them (doc_id = 0: flexible-extract, strict-match), so "
        "different prompts would count as one. Add 'filter' to the unit."]
    assert next(b for b in at.button if b.label == "Use this prompt unit").disabled
    unit = ["doc_id", *at.session_state["design"].of_kind("domain", "prompt")]
    at.multiselect(key=f"design_structure_{rev}_unit").set_value(unit)
    _run(at)
    assert not at.error
    missing = int(at.session_state["results_frame"][unit].isna().any(axis=1).sum())
    assert missing == 32  # a gen_kwargs column is empty for one task's rows: said
    assert (f"{', '.join(unit)}: 64 prompts in 96 rows (1.0 rows each); 32 rows have no "
            "value in the unit (no prompt).") in [c.value for c in at.caption]
    _click(at, "Use this prompt unit")
    assert at.session_state["design"].prompt_unit == tuple(unit)


def test_every_analysis_page_opens_on_meaningful_factors_after_an_lm_eval_import():
    """Issue #24: no page opens on answer texts or the gold index, nor fails on them."""
    result = import_results("lm-eval", [LM_EVAL_FIXTURE])
    junk = {"question", "context", "ans0", "ans1", "ans2", "label", "answer_info.ans0",
            "answer_info.ans1", "answer_info.ans2", "doc_id", "example_id", "prompt"}
    assert not junk & set(result.design.names)
    for page in ("subgroups.py", "ecdf.py", "importance.py", "coverage.py", "disparity.py"):
        at = _run(page_test(page, frame=result.frame, design=result.design, name="lm-eval"))
        chosen = {v for w in at.multiselect for v in (w.value or [])} | {
            w.value for w in at.selectbox if isinstance(w.value, str)}
        assert not junk & chosen, (page, junk & chosen)
        # 32 items answered by a dummy model: a real factor may separate (importance
        # says so and offers fixes), but no message is about an answer text or the key
        for e in at.error:
            assert not any(f"{j} =" in e.value or f"'{j}'" in e.value for j in junk), e.value


def test_the_structure_buttons_wrap_as_wide_as_their_labels():
    """Issue 42: in four fixed columns the labels were cut ("Use it as the cl..."); now
    one horizontal container that wraps holds the four buttons."""
    from streamlit.proto.Block_pb2 import Block

    frame = import_results("lm-eval", [LM_EVAL_FIXTURE]).frame
    at = _run(page_test("design.py", frame=frame, design=suggest_design(frame), name="x"))
    labels = ["Make it a factor", "Not a factor", "Use it as the cluster",
              "No cluster (independent rows)"]
    found = []

    def walk(node) -> None:
        kids = list(getattr(node, "children", {}).values())
        if [getattr(k, "label", None) for k in kids] == labels:
            found.append(node.proto.flex_container)
        for k in kids:
            walk(k)

    walk(at._tree)
    (row,) = found
    assert row.direction == Block.FlexContainer.Direction.HORIZONTAL and row.wrap
