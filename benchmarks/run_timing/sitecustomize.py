"""Server-side timing for ``benchmarks/bench_browser_journey.py`` (loaded by no app code).

The benchmark starts ``streamlit run app.py`` with this folder first on ``PYTHONPATH`` and
``BIAS_BENCH_RUN_LOG`` set to a file; Python imports ``sitecustomize`` at start-up, and this
module then wraps two of Streamlit's methods to append one JSON line per call to that file:

- ``ScriptRunner._run_script`` (``kind: "run"``): one script run of a session, including
  the widget callbacks (they run at its start), the reruns that supersede it (Streamlit
  loops inside this method) and the post-run garbage collection: Streamlit's own work for
  one rerun, without the websocket transfer or the browser's drawing. ``fragment`` tells a
  fragment-only rerun (``st.fragment``) from a whole-page one.
- ``MediaFileManager.execute_deferred`` (``kind: "export"``): a download button's deferred
  data callable (the figure exports: kaleido renders the image here, outside a script run).

Each line has ``t0`` / ``t1`` (``time.time()``, seconds: the same clock as the benchmark
process and the browser's ``Date.now()``), ``cpu`` (the server process's CPU seconds during
the call, all threads) and ``ok`` (False when the call raised). Without the variable the
module does nothing. If Streamlit renamed either method the module writes a
``kind: "missing"`` line, so the benchmark fails loudly instead of timing nothing.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time

__all__: list[str] = []

_LOG = os.environ.get("BIAS_BENCH_RUN_LOG")
_LOCK = threading.Lock()


def _write(record: dict) -> None:
    line = json.dumps(record) + "\n"
    with _LOCK, open(_LOG, "a", encoding="utf-8") as out:
        out.write(line)


def _timed(kind: str, method, describe=None):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        t0, cpu0, ok = time.time(), time.process_time(), False
        try:
            result = method(*args, **kwargs)
            ok = True
            return result
        finally:
            record = {"kind": kind, "t0": t0, "t1": time.time(),
                      "cpu": time.process_time() - cpu0, "ok": ok}
            if describe is not None:
                record.update(describe(*args, **kwargs))
            _write(record)
    return wrapper


def _describe_run(runner, rerun_data, *args, **kwargs) -> dict:
    return {"fragment": bool(getattr(rerun_data, "fragment_id_queue", None))}


def _install() -> None:
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    for cls, name, kind, describe in (
            (ScriptRunner, "_run_script", "run", _describe_run),
            (MediaFileManager, "execute_deferred", "export", None)):
        method = getattr(cls, name, None)
        if method is None:
            _write({"kind": "missing", "what": f"{cls.__name__}.{name}"})
            continue
        setattr(cls, name, _timed(kind, method, describe))


if _LOG:
    _install()
