"""Bias-benchmark analysis: results table -> design -> cell table -> statistics.

Plain Python (no Streamlit): usable from a notebook, the CLI (``python -m analysis``)
and the app's pages alike. Formulas follow ``docs/methods.md``.

The names below are imported on first use (PEP 562 module ``__getattr__``), so that
``import analysis`` and ``python -m analysis --help`` do not pay for importing pandas;
``from analysis import load_results`` works as before (docs/performance.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> the module that defines it.
_LAZY = {
    "cell_table": "analysis.cells",
    "filter_rows": "analysis.cells",
    "Design": "analysis.design",
    "Factor": "analysis.design",
    "Outcome": "analysis.design",
    "apply_design": "analysis.design",
    "check_design": "analysis.design",
    "deviation": "analysis.design",
    "suggest_design": "analysis.design",
    "AnalysisError": "analysis.errors",
    "DesignError": "analysis.errors",
    "DesignMismatchError": "analysis.errors",
    "LoadError": "analysis.errors",
    "load_results": "analysis.io",
    "find_nestings": "analysis.nesting",
}

__all__ = [
    "AnalysisError",
    "Design",
    "DesignError",
    "DesignMismatchError",
    "Factor",
    "LoadError",
    "Outcome",
    "apply_design",
    "cell_table",
    "check_design",
    "deviation",
    "filter_rows",
    "find_nestings",
    "load_results",
    "suggest_design",
]

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from analysis.cells import cell_table, filter_rows
    from analysis.design import (
        Design,
        Factor,
        Outcome,
        apply_design,
        check_design,
        deviation,
        suggest_design,
    )
    from analysis.errors import AnalysisError, DesignError, DesignMismatchError, LoadError
    from analysis.io import load_results
    from analysis.nesting import find_nestings


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:  # AttributeError lets ``from analysis import submodule`` go on
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
