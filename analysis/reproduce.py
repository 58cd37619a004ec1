"""The CLI command and the Python snippet that reproduce an app view ("Copy as CLI/Python").

Plain Python (no Streamlit): the pages pass what they computed with, this module writes
it out. The command reads the same file with the same design file, so it prints the
same numbers as the page (``tests/app/test_reproduce.py`` runs it).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Where = Mapping[str, Sequence[str]]


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def cli_command(command: str, file: str, design_path: str,
                options: Iterable[tuple[str, Any]] = (), *, where: Where | None = None,
                module: str = "analysis") -> str:
    """``python -m analysis COMMAND FILE --design D [--opt value ...] --json``, shell-quoted.

    Parameters
    ----------
    command
        The subcommand (``subgroups``, ``coverage`` ...).
    file, design_path
        The results file and the design file as the user has them.
    options
        ``(name, value)`` pairs without the leading ``--``; None, False and empty values
        are left out, True is a bare flag, lists are comma-joined, a name given twice
        repeats the option.
    where
        The subset, as ``--where factor=v1,v2`` options.
    """
    parts = ["python", "-m", module, command, file]
    if design_path:
        parts += ["--design", design_path]
    for name, value in options:
        if value is None or value is False or (isinstance(value, (list, tuple, str, dict))
                                               and len(value) == 0):
            continue
        if value is True:
            parts.append(f"--{name}")
        else:
            parts += [f"--{name}", _text(value)]
    for factor, values in (where or {}).items():
        if values:
            parts += ["--where", f"{factor}={_text(list(values))}"]
    parts.append("--json")
    return shlex.join(parts)


def python_snippet(file: str, design_path: str, body: Sequence[str], *,
                   imports: Sequence[str] = (), where: Where | None = None) -> str:
    """A runnable script: load, apply the design, keep the subset, then ``body``.

    ``results`` (the design applied, the subset kept), ``design`` and ``where`` are
    defined before ``body`` runs.
    """
    where = {k: list(v) for k, v in (where or {}).items() if v}
    lines = [
        "from analysis import apply_design, load_results",
        "from analysis.cells import cell_table, filter_rows",
        "from analysis.design import Design",
        *imports,
        "",
        f"design = Design.load({design_path!r})",
        f"where = {where!r}",
        f"results = filter_rows(apply_design(load_results({file!r}), design), where or None)",
        *body,
    ]
    return "\n".join(lines) + "\n"
