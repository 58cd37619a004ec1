"""Structure inference off the visitors' script threads (issue 43 item 1, ``ui/inference_pool.py``,
``ui/pending_design.py``).

A job runs in a worker process; the upload's script run returns while it runs (the page
says "still working" with its progress), another session's pages run meanwhile, and the
suggested design is adopted on a later run. Deterministic: the slow job of these tests
waits for a gate file the test creates, so "still running while the other session ran"
is a fact, not a timing. The wide tables of the bad corpus (1,000 columns: inferred with
its note; 100,000 columns: refused by the column limit) finish with their message.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.app.apptools import page_test, shown
from tests.bad_corpus import CASES, case_path
from tests.conftest import BBQ_SAMPLE
from ui import inference_pool
from ui.import_jobs import import_work as REAL_IMPORT
from ui.pending_design import PENDING

needs_sample = pytest.mark.skipif(not BBQ_SAMPLE.is_file(),
                                  reason=f"bundled sample missing: {BBQ_SAMPLE}")
GATES = Path(tempfile.gettempdir())


def gated(frame: pd.DataFrame, progress):
    """A worker's job that waits for the file named by the table's ``gate_*`` column
    (created by the test), then infers as the app does."""
    gate = next(c for c in frame.columns if str(c).startswith("gate_"))
    deadline = time.monotonic() + 120
    while not (GATES / gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return inference_pool.infer_all(frame, progress)


def sleeper(frame: pd.DataFrame, progress):
    """A job that never returns by itself (killed by the pool's timeout)."""
    time.sleep(600)


def _gated_csv(tag: str) -> bytes:
    rng = np.random.default_rng(3)
    n = 240
    frame = pd.DataFrame({"model": np.repeat(["m1", "m2"], n // 2),
                          "race": np.tile(["a", "b", "c"], n // 3),
                          "gender": np.tile(["f", "m"], n // 2),
                          f"gate_{tag}": 1, "biased": rng.integers(0, 2, n)})
    return frame.to_csv(index=False).encode()


def _upload(at, name: str, data: bytes):
    at.radio(key="data_source").set_value("Upload a file")
    at.run()
    at.file_uploader(key="data_upload").upload(name, data, "text/csv")
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at) -> list[str]:
    return [shown(e.value) for e in [*at.info, *at.warning, *at.error]]


def _working(at) -> bool:
    """The page says the structure is being read (or waits for a worker: the bundled
    sample's own structure may be read first)."""
    return any("structure in the background" in t or "Waiting to read the table's structure"
               in t for t in _texts(at))


def _same_session(at, page: str):
    """An AppTest of ``page`` with the session state of ``at`` (the same visitor)."""
    other = page_test(page)
    for key in ("results_frame", "results_name", "results_token", "design", PENDING,
                "_design_provisional"):
        other.session_state[key] = at.session_state[key]
    return other


@pytest.fixture
def no_wait(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "0")


@needs_sample
def test_a_slow_inference_holds_no_script_thread(no_wait, monkeypatch):
    tag = f"{os.getpid()}_{time.monotonic_ns()}"
    monkeypatch.setattr(inference_pool, "WORK", gated)
    a = page_test("data.py")
    a.run()
    _upload(a, "slow.csv", _gated_csv(tag))
    token = a.session_state[PENDING]
    job = inference_pool.job(token)
    assert job is not None and not job.done  # the upload's run returned while it works
    assert a.session_state["results_name"] == "slow.csv"  # the table is loaded already
    assert not a.session_state["design"].factors  # provisional: the outcome only
    assert a.session_state["design"].outcome.column == "biased"
    assert _working(a), _texts(a)

    a_sub = _same_session(a, "subgroups.py")  # this session's analysis pages say so too
    a_sub.run()
    assert [t.value for t in a_sub.title] == ["Subgroups"] and _working(a_sub), _texts(a_sub)
    assert not a_sub.get("plotly_chart")  # nothing drawn on the provisional design

    b = page_test("subgroups.py")  # another visitor, on the bundled sample
    b.run()
    assert not b.exception and [t.value for t in b.title] == ["Subgroups"]
    assert len(b.get("plotly_chart")) > 0 or len(b.dataframe) > 0
    assert not job.done  # b's whole run happened while a's job was still waiting

    (GATES / f"gate_{tag}").touch()
    try:
        assert job.wait(120) and job.result.error is None
    finally:
        (GATES / f"gate_{tag}").unlink()
    a_sub.run()  # the next run (the fragment's refresh) adopts the suggestion
    assert PENDING not in a_sub.session_state
    assert set(a_sub.session_state["design"].names) >= {"race", "gender"}
    assert not _working(a_sub) and not a_sub.exception
    assert a_sub.get("plotly_chart") or a_sub.dataframe  # the page's analysis is drawn
    a.run()  # and the Data page of the same visitor, on its own next run
    assert PENDING not in a.session_state and not _working(a)


def test_a_job_past_its_timeout_is_stopped_with_a_message(no_wait, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_TIMEOUT", "1")
    frame = pd.DataFrame({"a": [1, 2], "b": [0, 1]})
    job = inference_pool.submit(f"timeout-{time.monotonic_ns()}", frame, work=sleeper)
    assert job.wait(60)
    assert job.result.design is None and job.result.structure is None
    assert "did not finish within 1 s (BIAS_WORKBENCH_INFERENCE_TIMEOUT)" in job.result.error
    assert job.result.seconds < 30  # killed at its timeout, not after the 600 s sleep


def test_the_data_page_says_why_a_stopped_inference_gave_no_design(no_wait, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_TIMEOUT", "1")
    monkeypatch.setattr(inference_pool, "WORK", sleeper)
    at = page_test("data.py")
    at.run()
    data = pd.DataFrame({"x": ["p", "q"] * 5, "y": range(10),
                         "biased": [0, 1] * 5}).to_csv(index=False).encode()
    _upload(at, "stuck.csv", data)
    job = inference_pool.job(at.session_state["results_token"])
    assert job.wait(60)
    at.run()
    assert PENDING not in at.session_state
    assert any("did not finish within 1 s" in t and "Declare the factors" in t
               for t in _texts(at)), _texts(at)
    assert at.session_state["results_name"] == "stuck.csv"
    assert at.session_state["design"].outcome.column == "biased"


@pytest.mark.parametrize("case_id", ["columns_1000", "columns_100000"])
def test_wide_tables_on_the_data_page_finish_with_their_message(case_id, no_wait, tmp_path):
    case = next(c for c in CASES if c.id == case_id)
    path, _ = case_path(case, tmp_path)
    at = page_test("data.py")
    at.run()
    _upload(at, case.name, path.read_bytes())
    if case.error("ui") is not None:  # refused by the column limit before any inference
        assert any(case.expect("ui") in t for t in _texts(at)), _texts(at)
        assert inference_pool.job(at.session_state["results_token"]) is None \
            or at.session_state["results_name"] != case.name
        return
    job = inference_pool.job(at.session_state["results_token"])
    assert job is not None and job.wait(120) and job.result.error is None
    at.run()
    assert PENDING not in at.session_state
    assert any(case.expect("ui") in t for t in _texts(at)), _texts(at)
    assert len(at.session_state["design"].factors) == 40


def test_a_table_over_the_column_limit_gives_its_message_from_the_pool():
    frame = pd.DataFrame(np.zeros((2, 100_000), dtype=np.int8),
                         columns=[f"c{i}" for i in range(100_000)])
    job = inference_pool.submit(f"wide-{time.monotonic_ns()}", frame)
    assert job.wait(120)
    assert "100,000 columns, more than the 2,000 columns allowed" in job.result.error


def test_sessions_with_the_same_table_share_one_job():
    frame = pd.DataFrame({"a": list("xyzxyz"), "biased": [0, 1, 0, 1, 1, 0]})
    token = f"shared-{time.monotonic_ns()}"
    first = inference_pool.submit(token, frame)
    assert inference_pool.submit(token, frame) is first
    assert first.wait(120) and first.result.error is None
    assert first.result.design.outcome.column == "biased"


def row_count(frame: pd.DataFrame, progress):
    """A job that only counts the rows (to start many workers quickly)."""
    return len(frame)


def test_a_script_run_starting_while_a_worker_starts_is_not_run_in_the_worker(
        tmp_path, monkeypatch):
    """Streamlit installs a new ``__main__`` (the page script) at the start of every
    script run, on its own thread; a worker started at that moment must not run that
    script (it once did now and then: the worker ran ``app.py`` and its table got no
    design). Here a script run starts exactly as the worker's process is started."""
    import multiprocessing.process
    import sys
    import types

    marker = tmp_path / "ran"
    script = tmp_path / "page_script.py"
    script.write_text(f"open({str(marker)!r}, 'a').write('x')\n")
    page = types.ModuleType("__main__")
    page.__file__ = str(script)
    start = multiprocessing.process.BaseProcess.start

    def start_as_a_script_run_starts(self) -> None:
        sys.modules["__main__"] = page  # Streamlit's script runner, on another thread
        start(self)

    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start",
                        start_as_a_script_run_starts)
    job = inference_pool.submit(f"main-race-{time.monotonic_ns()}", pd.DataFrame({"a": [1, 2]}),
                                work=row_count)
    assert job.wait(120) and job.result.error is None and job.result.value == 2
    assert not marker.exists()


def gated_import(payload, progress=None):
    """An import job that waits for ``<its folder>.go`` (created by the test)."""
    gate = Path(payload[3] + ".go")
    deadline = time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return REAL_IMPORT(payload, progress)


@needs_sample
def test_an_import_runs_in_the_worker_while_other_sessions_go_on(no_wait, monkeypatch):
    from tests.analysis.importers.harness_runs import LM_EVAL_FIXTURE
    from ui import import_jobs
    from ui.importing import IMPORT_JOB

    monkeypatch.setattr(import_jobs, "import_work", gated_import)
    files = sorted((LM_EVAL_FIXTURE / "dummy-bbq").iterdir())
    at = page_test("data.py").run()
    at.radio(key="data_source").set_value("Import from ...").run()
    at.selectbox(key="import_source").set_value("lm-eval").run()
    at.file_uploader(key="import_files_0").set_value(
        [(p.name, p.read_bytes(), "application/octet-stream") for p in files]).run()
    at.button(key="import_run").click().run()
    assert not at.exception
    pending = at.session_state[IMPORT_JOB]
    job = inference_pool.job(pending["token"])
    assert job is not None and not job.done
    assert any("Importing in the background" in t for t in _texts(at)), _texts(at)
    other = page_test("subgroups.py").run()  # another visitor meanwhile
    assert not other.exception and [t.value for t in other.title] == ["Subgroups"]
    assert not job.done
    gate = Path(pending["folder"] + ".go")
    gate.touch()
    try:
        assert job.wait(120)
    finally:
        gate.unlink()
    at.run()
    assert IMPORT_JOB not in at.session_state and not at.error
    assert {m.label: m.value for m in at.metric}["Imported rows"] == "96"
    assert not Path(pending["folder"]).exists()  # the uploaded files are removed


def test_a_table_travels_to_the_worker_as_codes_and_comes_back_the_same():
    """The worker gets the Arrow-backed text columns as codes and distinct texts
    (issue 44: copying 1M rows of long texts held the GIL for seconds): the table it
    rebuilds is the caller's, values, dtypes, duplicate names, index and attrs."""
    import pickle

    from ui.inference_pool import _Packed, _packed

    texts = ["a long context " * 40, None, "another one " * 40]
    frame = pd.DataFrame({
        "text": pd.array([texts[i % 3] for i in range(3_000)], dtype="str"),
        "n": np.arange(3_000),
        "cat": pd.Categorical(["p", "q", "r"] * 1_000),
        "nullable": pd.array(["u", None, "v"] * 1_000, dtype="string[pyarrow]"),
        "mixed": ["o", 1, None] * 1_000,
    }, index=np.arange(3_000) + 7)
    frame.columns = ["text", "n", "text", "nullable", 3]  # duplicate and non-text names
    frame.attrs["source_name"] = "upload.csv"
    packed = _packed(frame)
    assert isinstance(packed, _Packed) and sorted(packed.encoded) == [0, 3]
    travelled = pickle.loads(pickle.dumps(packed, protocol=5))
    back = travelled.frame()
    pd.testing.assert_frame_equal(back, frame)
    assert back.attrs == {"source_name": "upload.csv"}
    # each distinct text once: a fraction of the whole column's bytes
    assert len(pickle.dumps(packed, protocol=5)) < len(pickle.dumps(frame, protocol=5)) / 10
    assert _packed(("an", "import")) == ("an", "import")
    assert _packed(frame[["n"]]) is not None and not isinstance(_packed(frame[["n"]]), _Packed)


@needs_sample
def test_the_count_unit_read_from_text_codes_is_the_one_read_from_the_texts():
    """The Coverage page's job gets the text columns as categoricals of their dictionary
    codes (``design_work(text_codes=True)``; issue 44 item 3: rebuilding 1M rows of
    texts cost seconds of wall time in the worker): the same values row by row, and the
    structure inference and the count unit on them are those of the texts, on the BBQ
    sample with its design and on a table with missing texts, answer options and text
    split over several Arrow chunks."""
    import pickle
    from functools import partial

    import pyarrow as pa

    from analysis import api as bw
    from analysis.design import Design, apply_design
    from analysis.structure import infer_structure
    from ui.inference_pool import _packed, _text_codes

    sample = pd.read_csv(BBQ_SAMPLE)
    design = Design.load(BBQ_SAMPLE.parent / "bbq_unifiedqa.design.yaml")
    rng = np.random.default_rng(3)
    n = 4_000
    item = rng.integers(0, 400, n)
    chunked = pa.chunked_array([pa.array([f"ctx {i % 7}" if i % 11 else None
                                          for i in item[:1_500]]),
                                pa.array([f"ctx {i % 7}" for i in item[1_500:]])])
    other = pd.DataFrame({
        "item": pd.array([f"q{i}" for i in item], dtype="str"),
        "context": pd.Series(pd.array(chunked, dtype="str")),
        "ans0": pd.array([f"x{i % 5}" for i in item], dtype="str"),
        "ans1": pd.array([f"x{(i + 1) % 5}" for i in item], dtype="str"),
        "label": pd.array([str(i % 2) for i in item], dtype="str"),
        "model": pd.array(rng.choice(["m1", "m2", None], n).tolist(), dtype="str"),
        "group": pd.array([f"g{i % 4}" for i in item], dtype="str"),
        "correct": rng.integers(0, 2, n),
    })
    for frame, the_design in ((apply_design(sample, design), design), (other, None)):
        coded = pickle.loads(pickle.dumps(_packed(frame))).frame(text_codes=True)
        assert list(coded.columns) == list(frame.columns) and coded.index.equals(frame.index)
        for name in frame.columns:
            assert coded[name].astype(object).fillna("<NA>").tolist() == \
                frame[name].astype(object).fillna("<NA>").tolist(), name
        a, b = infer_structure(frame), infer_structure(coded)
        assert a.to_dict() == b.to_dict()
        pd.testing.assert_frame_equal(a.table, b.table)
        if the_design is not None:
            assert bw.count_unit(coded, the_design, applied=True) == \
                bw.count_unit(frame, the_design, applied=True)
            assert bw.count_unit(frame, the_design, applied=True).noun == "items"
    assert _text_codes(partial(inference_pool.design_work, function=len, design_json="",
                               text_codes=True))
    assert not _text_codes(partial(inference_pool.design_work, function=len, design_json=""))
    assert not _text_codes(inference_pool.infer_all)
