"""The ``--trace`` pieces of ``benchmarks/bench_browser_journey.py``: the main thread's own
time per trace event (hand-computed nesting) and the bundle names of the frontend's files."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_browser_journey import bundle, main_thread_self_times


def _x(name: str, ts: float, dur: float, tid: int = 2) -> dict:
    return {"ph": "X", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_self_times_take_the_nested_events_off():
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
         "args": {"name": "CrRendererMain"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3,
         "args": {"name": "Compositor"}},
        _x("RunTask", 0, 1000), _x("FunctionCall", 100, 500), _x("Layout", 200, 100),
        _x("Paint", 700, 200),
        _x("RunTask", 2000, 300),  # a task with nothing inside: all its own
        _x("FunctionCall", 2400, 50),  # a second top-level call adds up
        _x("Other", 700, 200, tid=3),  # another thread: left out
        {"ph": "B", "name": "Begin", "pid": 1, "tid": 2, "ts": 0},  # not a complete event
    ]
    got = main_thread_self_times(json.dumps({"traceEvents": events}).encode())
    # RunTask 1000 - 500 - 200 + 300; FunctionCall 500 - 100 + 50; microseconds -> s
    assert got == pytest.approx({"RunTask": 600e-6, "FunctionCall": 450e-6,
                                 "Paint": 200e-6, "Layout": 100e-6})
    assert list(got) == ["RunTask", "FunctionCall", "Paint", "Layout"]  # largest first
    # the list form of a trace file, and a trace without the main thread
    assert main_thread_self_times(json.dumps(events).encode()) == got
    assert main_thread_self_times(json.dumps(events[1:]).encode()) == {}


def test_bundle_names_drop_the_build_hash():
    assert bundle("http://127.0.0.1:8501/static/js/PlotlyChart.D9Z0_fxz.js") == "PlotlyChart"
    assert bundle("http://h/static/js/react-dom.Ab1.js") == "react-dom"
    assert bundle("") == "(native)"
