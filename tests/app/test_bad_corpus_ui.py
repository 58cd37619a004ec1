"""The bad-input corpus (``tests/data/bad/cases.yaml``) through the app: every upload case
on the Data page and every design case on the Design page, one AppTest per page shared by
the cases. A refused input shows its message with ``st.error`` and leaves the active table
(name, row and column counts) and design exactly as they were; an accepted one becomes the
active table with the expected size."""

from __future__ import annotations

import tomllib

import pytest

from analysis.design import suggest_design
from analysis.io import load_results
from tests.app.apptools import ROOT, metric_values, page_test, shown
from tests.bad_corpus import BAD, GOOD_RESULTS, case_path, params
from tests.conftest import BBQ_SAMPLE

needs_sample = pytest.mark.skipif(not BBQ_SAMPLE.is_file(),
                                  reason=f"bundled sample missing: {BBQ_SAMPLE}")
MIME = {".yaml": "application/yaml", ".json": "application/json"}


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bad_corpus_ui")


def _run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at) -> list[str]:
    """Every message, caption and Markdown text on the page, as the user reads it."""
    elements = [*at.error, *at.warning, *at.info, *at.caption, *at.markdown]
    return [shown(e.value).replace("**", "") for e in elements]


@pytest.fixture(scope="module")
def data_page():
    """The Data page on the bundled sample, switched to "Upload a file"."""
    at = _run(page_test("data.py"))
    at.radio(key="data_source").set_value("Upload a file")
    return _run(at)


def _active(at) -> tuple[str, dict]:
    return at.session_state["results_name"], metric_values(at)


@needs_sample
@pytest.mark.parametrize("case", [p for p in params("upload", "ui")
                                  if p.values[0].id != "big_300mb"])  # its own test below
def test_upload_on_the_data_page(case, data_page, corpus_dir):
    at = data_page
    path, facts = case_path(case, corpus_dir)
    before = _active(at)
    encoding = case.get("options", {}).get("encoding", "utf-8")
    at.selectbox(key="data_encoding").set_value(encoding)
    at.file_uploader(key="data_upload").upload(case.name, path.read_bytes(), "text/csv")
    _run(at)
    try:
        if case.error("ui") is not None:
            errors = [shown(e.value) for e in at.error]
            assert len(errors) == 1 and case.expect("ui") in errors[0], errors
            assert errors[0].startswith(case.name)
            assert _active(at) == before  # the previous table is still active
            assert any("still the previous one" in c.value for c in at.caption)
            return
        assert len(at.error) == 0, [e.value for e in at.error]
        loads = case.get("loads")
        assert _active(at) == (case.name, {"Rows": f"{loads['rows']:,}",
                                           "Columns": str(loads["columns"])})
        frame = at.session_state["results_frame"]
        for column, values in loads.get("values", {}).items():
            assert frame[column].tolist() == values
        if case.get("factor"):  # an id column: shown, never suggested, refused as a factor
            _refused_as_factor(case, at)
        elif case.expect("ui"):
            assert any(case.expect("ui") in t for t in _texts(at)), _texts(at)
    finally:
        if encoding != "utf-8":
            at.selectbox(key="data_encoding").set_value("utf-8")
            _run(at)


def _refused_as_factor(case, data_at) -> None:
    column = case.get("factor")
    roles = data_at.dataframe[1].value.set_index("column")["suggested_role"]
    assert roles[column] == "text or id"
    frame = data_at.session_state["results_frame"]
    at = _run(page_test("design.py", frame=frame, design=data_at.session_state["design"],
                        name=case.name))
    assert column not in at.session_state["design"].names
    chosen = at.multiselect(key="design_factors_0")
    chosen.set_value([*chosen.value, column])
    _run(at)
    errors = [shown(e.value) for e in at.error]
    assert any(case.expect("ui") in e for e in errors), errors
    assert column not in at.session_state["design"].names  # the working design is kept


@needs_sample
def test_big_file_is_refused_by_the_uploader_with_a_route(data_page, corpus_dir):
    """300 MB is above the app's upload limit: the uploader tells the browser the limit,
    which refuses the file before Python sees it ("File must be 200.0MB or smaller"), and
    its help names the route for big tables ("Large file on this machine": DuckDB reads
    the file where it lies; the same DuckDB read is checked on the 300 MB file by
    tests/analysis/test_bad_corpus.py::test_upload_cli[big_300mb]; the page itself by
    tests/app/test_large_file.py)."""
    (case,) = [c.values[0] for c in params("upload", "ui") if c.id == "big_300mb"]
    limit = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    limit_mb = limit["server"]["maxUploadSize"]
    path, _ = case_path(case, corpus_dir)
    uploader = data_page.file_uploader(key="data_upload")
    assert uploader.proto.max_upload_size_mb == limit_mb
    assert path.stat().st_size > limit_mb * 1024 * 1024
    assert f"Up to {limit_mb} MB" in uploader.help
    assert "'Large file on this machine' (DuckDB, no upload)" in uploader.help
    assert "Large file on this machine" in data_page.radio(key="data_source").options


@pytest.fixture(scope="module")
def design_page():
    frame = load_results(GOOD_RESULTS)
    at = _run(page_test("design.py", frame=frame, design=suggest_design(frame),
                        name=GOOD_RESULTS.name))
    return at, frame


@pytest.mark.parametrize("case", params("design", "ui"))
def test_design_upload_on_the_design_page(case, design_page):
    at, frame = design_page
    design = at.session_state["design"]
    assert design.names  # a working design is in place before each upload
    data = (BAD / case.file).read_bytes()
    at.file_uploader(key="design_upload").upload(case.file, data, MIME.get(
        (BAD / case.file).suffix, "application/yaml"))
    _run(at)
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(f"{case.file}: "), errors
    assert case.expect("ui") in errors[0], errors
    assert at.session_state["design"] == design  # nothing replaced
    assert at.session_state["results_frame"] is frame
    assert metric_values(at)["Possible cells"] == "4"  # the page still works on it
