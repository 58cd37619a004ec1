"""The design of a benchmark: factors, their values and references, and the outcome.

A :class:`Design` says which columns of a results table are *factors* (domain, prompt
or model), the ordered values each may take, the *reference* (control) value of each,
and how an outcome column maps to the binary *deviation* (``docs/methods.md``,
vocabulary). It is a frozen dataclass that round-trips through YAML or JSON, so an
analyst can save it, share it and load it against another file; loading against a
file reports every mismatch at once.

Factor values are always strings: ``7``, ``7.0`` and ``"7"`` in a file all become the
value ``"7"``; a missing factor value becomes the explicit value ``"(missing)"``.

This module is the one place to import the design from; the code lives by concern:

==============================  ======================================================
:mod:`analysis.design_model`    :class:`Factor`, :class:`Outcome`, :class:`Design`
:mod:`analysis.design_files`    YAML / JSON text and files (safe loading, limits)
:mod:`analysis.values`          factor values as strings and codes (the NaN rule)
:mod:`analysis.design_guess`    suggesting roles, kinds, the outcome and a design
:mod:`analysis.design_check`    checking a design against a table
:mod:`analysis.design_outcome`  the outcome column -> ``deviation``
:mod:`analysis.design_apply`    applying a design to a table
:mod:`analysis.design_args`     CLI ``FACTOR=VALUE`` options
==============================  ======================================================
"""

from __future__ import annotations

from analysis.columns import DEVIATION
from analysis.design_apply import apply_design
from analysis.design_args import parse_assignments
from analysis.design_check import (
    Problem,
    check_design,
    check_frame,
    design_problems,
    too_many_values,
)
from analysis.design_files import DESIGN_FORMAT_VERSION
from analysis.design_guess import (
    SUGGEST_MAX_VALUES,
    describe_columns,
    design_from_structure,
    guess_kind,
    make_factor,
    outcome_meaning,
    suggest_design,
    suggest_outcome,
    suggest_role,
)
from analysis.design_model import (
    KINDS,
    MAPPINGS,
    MAX_FACTOR_VALUES,
    OUTCOME_TYPES,
    Design,
    Factor,
    FactorKind,
    Mapping_,
    Outcome,
    OutcomeType,
)
from analysis.design_outcome import deviation
from analysis.errors import AnalysisError, DesignError, DesignMismatchError, LimitError
from analysis.values import (
    MISSING_VALUE,
    REFERENCE_PATTERN,
    default_reference,
    factor_codes,
    factor_values,
    format_value,
    order_values,
)

__all__ = [
    "DESIGN_FORMAT_VERSION", "DEVIATION", "AnalysisError", "DesignError", "DesignMismatchError",
    "LimitError", "KINDS", "MAPPINGS", "MAX_FACTOR_VALUES", "MISSING_VALUE",
    "OUTCOME_TYPES", "REFERENCE_PATTERN", "SUGGEST_MAX_VALUES", "Design", "Factor",
    "FactorKind", "Mapping_", "Outcome", "OutcomeType", "Problem", "apply_design",
    "check_design", "check_frame", "default_reference", "describe_columns",
    "design_from_structure", "design_problems", "deviation", "factor_codes", "factor_values",
    "format_value", "guess_kind", "make_factor", "order_values", "outcome_meaning",
    "parse_assignments", "suggest_design", "suggest_outcome", "suggest_role",
    "too_many_values",
]
