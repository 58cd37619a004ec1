"""Bias-benchmark analysis: results table -> design -> cell table -> statistics.

Plain Python (no Streamlit): usable from a notebook, the CLI (``python -m analysis``)
and the app's pages alike. Formulas follow ``docs/methods.md``.
"""

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
