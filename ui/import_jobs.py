"""The Data page's imports in the background worker (``ui/inference_pool.py``; no
Streamlit here): an importer reads the uploaded files and infers the design of what it
read (``analysis.importers.harness_design`` runs the structure inference), which, like an
upload's inference, must not run in a visitor's script thread (issue 43 item 1).

:func:`import_work` runs in the worker process: it imports the files of a temporary
folder, and when several files fail together tries each alone so that every file's
error is reported; the folder is removed when it is done. Its result is
``{"result": ImportResult}`` or ``{"errors": [messages]}`` (the messages still name the
folder: the page leaves it out, ``ui.data_help.without_paths``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["import_work"]


def import_work(payload: tuple[str, list[str], dict[str, Any], str],
                progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Import ``(source, paths, options, folder)``; see the module docstring."""
    from analysis.errors import AnalysisError
    from analysis.importers import import_results

    source, paths, options, folder = payload
    try:
        try:
            return {"result": import_results(source, paths, **options)}
        except AnalysisError as exc:
            errors = [str(exc)]
            if len(paths) > 1:
                for path in paths:
                    try:
                        import_results(source, [path], **options)
                    except AnalysisError as one:
                        errors.append(f"{Path(path).name}: {one}")
            return {"errors": errors}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
