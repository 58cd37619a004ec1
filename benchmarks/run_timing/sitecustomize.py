"""Server-side timing for ``benchmarks/bench_browser_journey.py`` (loaded by no app code).

The benchmark starts ``streamlit run app.py`` with this folder first on ``PYTHONPATH`` and
``BIAS_BENCH_RUN_LOG`` set to a file; Python imports ``sitecustomize`` at start-up, and this
module then wraps three of Streamlit's methods and appends one JSON line per call to that
file:

- ``ScriptRunner._run_script`` (``kind: "run"``): one script run of a session, including
  the widget callbacks (they run at its start) and the reruns that supersede it (Streamlit
  loops inside this method): Streamlit's own work for one rerun, without the websocket
  transfer or the browser's drawing. ``fragment`` tells a fragment-only rerun
  (``st.fragment``) from a whole-page one. ``ended`` is when the run last entered
  ``ScriptRunner._on_script_finished``, which tells the browser that the run is over;
  between ``ended`` and ``t1`` come the orphaned-file cleanup and ``gc.collect(2)``
  (``runner.postScriptGC``), which the browser does not wait for (they delay only a rerun
  asked for meanwhile).
- ``MediaFileManager.execute_deferred`` (``kind: "export"``): a download button's deferred
  data callable (the figure exports: kaleido renders the image here, outside a script run).
- ``ui.inference_pool.Job._run`` (``kind: "job"``): a background job of the app from its
  submission's thread start until its result is there (the worker process's work; its
  ``what``: the job key's middle part, ``coverage`` for the load-time job of a large table,
  ``ui/table_job.py``; ``inference`` for a structure inference). Wrapped when the app
  first imports ``ui.inference_pool`` (a post-import hook: nothing of the app is imported
  here), so the benchmark can wait for the load-time job before timing the pages.

With ``BIAS_BENCH_PROFILE`` set to a folder, every script run is also profiled
(``cProfile``, in its own thread) and its statistics written there as ``run_<call>.pstats``
(the journey's ``--profile``: where a first render's time goes; the times then include the
profiler's overhead).

Each line has ``t0`` / ``t1`` (``time.time()``, seconds: the same clock as the benchmark
process and the browser's ``Date.now()``), ``cpu`` (the server process's CPU seconds during
the call, all threads), ``ok`` (False when the call raised) and ``call`` (a number); a
``kind: "start"`` line with the same ``call`` is written when the call begins, so the
benchmark can wait for the calls still under way (the browser sees a run end before its
line is written). Without the variable the
module does nothing. If Streamlit renamed a method the module writes a ``kind: "missing"``
line, so the benchmark fails loudly instead of timing nothing.
"""

from __future__ import annotations

import functools
import importlib.abc
import itertools
import json
import os
import sys
import threading
import time

__all__: list[str] = []

_LOG = os.environ.get("BIAS_BENCH_RUN_LOG")
_PROFILE = os.environ.get("BIAS_BENCH_PROFILE")
_LOCK = threading.Lock()
_ENDED = threading.local()  # per script thread: when its current run signalled its end
_CALLS = itertools.count()


def _write(record: dict) -> None:
    line = json.dumps(record) + "\n"
    with _LOCK, open(_LOG, "a", encoding="utf-8") as out:
        out.write(line)


def _job_what(job) -> str:
    parts = str(getattr(job, "token", "")).split("|")
    return parts[1] if len(parts) > 2 else "inference"


def _timed(kind: str, method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        _ENDED.t = None
        call = next(_CALLS)
        t0, cpu0, ok = time.time(), time.process_time(), False
        start = {"kind": "start", "of": kind, "call": call, "t0": t0}
        if kind == "job":  # (job, frame, work)
            start["what"] = _job_what(args[0])
        _write(start)
        profile = None
        if kind == "run" and _PROFILE:
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        try:
            result = method(*args, **kwargs)
            ok = True
            return result
        finally:
            if profile is not None:
                profile.disable()
                profile.dump_stats(os.path.join(_PROFILE, f"run_{call}.pstats"))
            record = {"kind": kind, "call": call, "t0": t0, "t1": time.time(),
                      "cpu": time.process_time() - cpu0, "ok": ok}
            if kind == "run":  # (runner, rerun_data)
                record.update(fragment=bool(getattr(args[1], "fragment_id_queue", None)),
                              ended=_ENDED.t)
            if kind == "job":
                record["what"] = start["what"]
            _write(record)
    return wrapper


class _AfterImport(importlib.abc.MetaPathFinder):
    """Wraps ``ui.inference_pool.Job._run`` once the app imports that module."""

    NAME = "ui.inference_pool"

    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201 - importlib's
        if name != self.NAME:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                exec_module = spec.loader.exec_module

                def wrapped(module, _exec=exec_module):
                    _exec(module)
                    module.Job._run = _timed("job", module.Job._run)

                spec.loader.exec_module = wrapped
                return spec
        return None


def _marking(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        _ENDED.t = time.time()
        return method(*args, **kwargs)
    return wrapper


def _install() -> None:
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    for cls, name, wrap in (
            (ScriptRunner, "_on_script_finished", _marking),
            (ScriptRunner, "_run_script", functools.partial(_timed, "run")),
            (MediaFileManager, "execute_deferred", functools.partial(_timed, "export"))):
        method = getattr(cls, name, None)
        if method is None:
            _write({"kind": "missing", "what": f"{cls.__name__}.{name}"})
            continue
        setattr(cls, name, wrap(method))
    sys.meta_path.insert(0, _AfterImport())


if _LOG:
    _install()
