"""A server-wide budget for uploads being decoded at once (no Streamlit here).

Each visitor's upload is decoded in that visitor's script thread; ten visitors uploading
195 MB at once took the server to 18 GB (issue 43). The budget counts the bytes of the
uploads being decoded right now, across every session of the process; an upload that
would pass it is refused at once with a "busy, retry" message (:class:`UploadBusy`, a
``LoadError``, so pages show it like any other load error) instead of queueing a thread.
An upload larger than the whole budget is still decoded when nothing else is (otherwise
it could never be). ``BIAS_WORKBENCH_UPLOAD_BUDGET_MB`` (default 400), read at each use.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from analysis.errors import LoadError
from analysis.limits import MB, Limit

__all__ = ["UPLOAD_BUDGET", "UploadBusy", "decoding", "in_use"]

#: Bytes of uploads decoded at once, all sessions of the server together, in MB.
UPLOAD_BUDGET = Limit("BIAS_WORKBENCH_UPLOAD_BUDGET_MB", 400, "MB",
                      "the uploads the server decodes at once, all visitors together")

_lock = threading.Lock()
_used = 0


class UploadBusy(LoadError):
    """The server is decoding other uploads: retry in a moment."""


def in_use() -> int:
    """Bytes of the uploads being decoded now."""
    return _used


@contextlib.contextmanager
def decoding(nbytes: int, label: str) -> Iterator[None]:
    """Hold ``nbytes`` of the budget while an upload is decoded.

    Raises
    ------
    UploadBusy
        Other uploads being decoded leave less than ``nbytes`` of the budget.
    """
    global _used
    budget = UPLOAD_BUDGET.value() * MB
    with _lock:
        if _used and _used + nbytes > budget:
            raise UploadBusy(
                f"{label}: the server is busy reading other uploads right now "
                f"({_used / MB:,.0f} MB of the {UPLOAD_BUDGET.value():,.0f} MB it reads at "
                f"once, {UPLOAD_BUDGET.env}); retry in a moment. Nothing was changed.")
        _used += nbytes
    try:
        yield
    finally:
        with _lock:
            _used -= nbytes
