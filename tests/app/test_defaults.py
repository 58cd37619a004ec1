"""Pages never open on a nested pair of factors (ui/defaults.py)."""

from __future__ import annotations

from analysis.nesting import find_nestings
from tests.app.apptools import page_test, sample_with_design


def _nested_pairs(frame, design) -> set[frozenset]:
    found = find_nestings(frame, design.names,
                          references={f.name: f.reference for f in design.factors})
    return {frozenset(p) for p in zip(found["determinant"], found["dependent"], strict=True)}


def test_bbq_defaults_avoid_subcategory_within_category():
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    assert frozenset({"subcategory", "category"}) in _nested_pairs(frame, design)
    at = page_test("subgroups.py", frame=frame, design=design)
    at.run()
    assert not at.exception
    # before: category x subcategory, a sunburst ring of "none"
    assert at.multiselect(key="subgroups_factors").value == ["category", "question_polarity"]
    at = page_test("coverage.py", frame=frame, design=design)
    at.run()
    pair = (at.selectbox(key="coverage_row").value, at.selectbox(key="coverage_col").value)
    assert pair == ("category", "question_polarity")


def test_ssqa_defaults_hold_no_nested_pair():
    frame, design = sample_with_design("ssqa_design.csv.gz")
    nested = _nested_pairs(frame, design)
    at = page_test("coverage.py", frame=frame, design=design)
    at.run()
    pair = frozenset((at.selectbox(key="coverage_row").value,
                      at.selectbox(key="coverage_col").value))
    assert len(pair) == 2 and pair not in nested
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("ecdf.py", frame=frame, design=design)
    at.run()
    chosen = at.multiselect(key="ecdf_factors").value
    assert len(chosen) == 2 and frozenset(chosen) not in _nested_pairs(frame, design)


def test_bias_index_dimensions_avoid_a_nested_pair():
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    at = page_test("bias_index.py", frame=frame, design=design)
    at.run()
    assert not at.exception
    # the domain factors are category and subcategory, nested: only one is chosen
    assert at.multiselect(key="index_dimensions").value == ["category"]


def test_p_values_in_page_tables_read_as_numbers_not_mantissas():
    """Issue 42: p-values showed as "5.36e-1"; %.3g gives 0.536 and 2.1e-11."""
    from ui import compare, importance, importance_linear, subgroups

    configs = [compare.column_config({}), compare.column_config({}, subgroups=True),
               importance.column_config({}), importance_linear.column_config({}),
               subgroups.COLUMN_CONFIG]
    formats = {}
    for i, config in enumerate(configs):
        for key, column in config.items():
            spec = column if isinstance(column, dict) else dict(column)
            label = spec.get("label") or ""
            if label.startswith(("p", "LD p")) and "type_config" in spec:
                formats[(i, label, str(key))] = spec["type_config"].get("format")
    assert len(formats) >= 9
    assert set(formats.values()) == {"%.3g"}, formats
    assert f"{0.536:.3g}" == "0.536" and f"{2.1e-11:.3g}" == "2.1e-11"  # printf %.3g alike


def test_kept_settings_raise_no_session_state_warning():
    """Issue 42: every Coverage / Subgroups visit logged "created with a default value but
    also had its value set via the Session State API" with a stack trace: kept settings
    are set on purpose before the widgets, so the repository's Streamlit config turns the
    warning off (Streamlit reads it from the app's folder, as app_main and serve run it)."""
    import tomllib

    from streamlit import config

    from tests.app.apptools import ROOT

    toml = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert toml["global"]["disableWidgetStateDuplicationWarning"] is True
    assert config.get_option("global.disableWidgetStateDuplicationWarning") is True
