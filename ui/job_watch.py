"""Background jobs started from a page stop when the page's session ends.

A judge job runs in a thread of the server: without a watch it keeps calling (and paying
for) the API after its browser tab is closed. :func:`stop_with_session` cancels it once the
session has been disconnected (or removed) for ``BIAS_WORKBENCH_JOB_GRACE`` seconds
(default 30: a reconnecting tab keeps its job); what was done stays in the cache.
"""

from __future__ import annotations

import os

from judges.tasks import FrameJob

__all__ = ["DEFAULT_GRACE", "GRACE_ENV", "grace_seconds", "stop_with_session"]


#: Environment variable: seconds a session may stay disconnected before its jobs stop.
GRACE_ENV = "BIAS_WORKBENCH_JOB_GRACE"
DEFAULT_GRACE = 30.0


def grace_seconds() -> float:
    """:data:`GRACE_ENV` as seconds (the default when unset or not a number >= 0)."""
    try:
        value = float(os.environ.get(GRACE_ENV, DEFAULT_GRACE))
    except ValueError:
        return DEFAULT_GRACE
    return value if value >= 0 else DEFAULT_GRACE


def stop_with_session(job: FrameJob) -> FrameJob:
    """``job`` set to stop when the current Streamlit session ends (unchanged outside a
    running server, e.g. in ``AppTest``)."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return job
    runtime, session_id = Runtime.instance(), ctx.session_id
    return job.stop_when_gone(lambda: runtime.is_active_session(session_id),
                              grace=grace_seconds())
