"""The flat public API: every analysis as one function of one shape.

    from analysis import api as bw

    result = bw.importance("sample_data/ssqa_simulated.csv.gz",
                           "sample_data/ssqa_simulated.design.yaml",
                           factors=["model", "cot"], alpha=0.01)
    result.table      # tidy: one row per term (columns documented per function)
    result.notes      # what the analyst must know to read it (clusters, refusals fixed...)
    result.settings   # every option the numbers were computed with

Each function is ``analysis(data, design=None, *, options=None, factors=None, where=None,
**option_values)``:

- ``data``: a results table (a DataFrame, or the path of a file :func:`analysis.io.load_results`
  reads) or a cell table (``n``, ``deviations`` per factor combination);
- ``design``: an :class:`analysis.design.Design`, the path of a design file, a mapping
  (``Design.from_dict``) or None (the design suggested from the table, with its inferred
  structure: ``analysis.structure``);
- ``options``: the analysis's options object (``analysis.options``), a mapping, or None;
  single options may also be given as keyword arguments (they win); strings are accepted
  where a user would type them (``alpha="0.01"``);
- ``factors``: the design's factors to use (default: all); ``where``: the subset of rows
  (``{"model": ["a", "b"]}``).

Every function returns a :class:`Result`. Bad input raises an
:class:`analysis.errors.AnalysisError` subclass with a message that says what to change.
The analyses' own modules (``analysis.importance`` ...) stay available for finer control.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.errors import AnalysisError
from analysis.options import Options

if TYPE_CHECKING:
    import pandas as pd

    from analysis.design import Design

__all__ = ["Result", "importance", "prepare_inputs"]

Where = Mapping[str, str | Sequence[str]]


@dataclass(frozen=True)
class Result:
    """What an analysis returns.

    Attributes
    ----------
    table
        The main tidy table (one row per subgroup, term, group ...; the function's
        docstring lists its columns).
    notes
        Sentences the reader needs (how the uncertainty was computed, what was left out).
    settings
        The options the numbers were computed with (``Options.settings``), plus the
        factors and the subset.
    tables
        Further tables by name (e.g. ``lr_tests``).
    raw
        The analysis module's own result object, for what the tidy table leaves out.
    """

    table: pd.DataFrame
    notes: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    raw: Any = None

    def __repr__(self) -> str:
        return (f"Result({len(self.table):,} rows x {self.table.shape[1]} columns; "
                f"{len(self.notes)} notes; tables: {', '.join(self.tables) or 'none'})")


def _is_cell_table(frame: pd.DataFrame) -> bool:
    return {"n", "deviations"} <= set(frame.columns) and "deviation" not in frame.columns


def _design_of(design: Any, frame: pd.DataFrame) -> Design:
    from analysis.design import Design, suggest_design

    if design is None:
        if _is_cell_table(frame):
            raise AnalysisError("A cell table needs its design: pass design=Design.load(...) "
                                "or the design file's path.")
        return suggest_design(frame)
    if isinstance(design, Design):
        return design
    if isinstance(design, (str, Path)):
        return Design.load(design)
    if isinstance(design, Mapping):
        return Design.from_dict(design)
    raise AnalysisError(f"design must be a Design, a design file's path, a mapping or None, "
                        f"not {type(design).__name__}.")


def _as_list(value: str | Sequence[str] | None, what: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, Sequence):
        raise AnalysisError(f"{what} must be a list of names (or a comma-separated string), "
                            f"not {type(value).__name__}.")
    return [str(v) for v in value]


def prepare_inputs(data: Any, design: Any = None, *, factors: str | Sequence[str] | None = None,
                   where: Where | None = None, need_outcome: bool = True
                   ) -> tuple[pd.DataFrame, Design, dict[str, list[str]]]:
    """The table (design applied unless a cell table), the design (restricted to
    ``factors``) and the subset as lists, from what a user passes.

    Raises
    ------
    AnalysisError
        An unreadable file or design, an unknown factor, a design without an outcome.
    """
    import pandas as pd

    from analysis.design import apply_design
    from analysis.io import load_results

    if isinstance(data, (str, Path)):
        data = load_results(data)
    if not isinstance(data, pd.DataFrame):
        raise AnalysisError(f"data must be a results table (a DataFrame or a file's path), "
                            f"not {type(data).__name__}.")
    the_design = _design_of(design, data)
    chosen = _as_list(factors, "factors")
    if chosen:
        the_design = the_design.subset(chosen)
    if need_outcome and the_design.outcome is None and not _is_cell_table(data):
        raise AnalysisError("The design has no outcome (how a row counts as a deviation): "
                            "give a design with an outcome.")
    subset = {str(k): _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    if not _is_cell_table(data) and "deviation" not in data.columns:
        data = apply_design(data, the_design)
    return data, the_design, subset


def _options(cls: type[Options], options: Any, values: Mapping[str, Any]) -> Options:
    return cls.coerce(options, **values)


def importance(data: Any, design: Any = None, *, options: Any = None,
               factors: str | Sequence[str] | None = None, where: Where | None = None,
               references: Mapping[str, str] | None = None,
               exclude: Mapping[str, Sequence[str]] | None = None, **option_values: Any
               ) -> Result:
    """Factor importance: logistic regression of deviation on the factors (methods.md §4).

    Options: :class:`analysis.options.importance.ImportanceOptions` (``interactions``,
    ``on_separation``, ``alpha``, ``adjust``, ``confidence``, ``likelihood_ratio``,
    ``cluster``, ``small_sample``, ``gee``). ``references`` overrides the design's
    reference values; ``exclude`` leaves out rows with the given values.

    Returns
    -------
    Result
        ``table``: one row per term: ``term``, ``factor``, ``value``, ``n``,
        ``deviation_rate``, ``coef``, ``std_err``, ``z``, ``p_value``, ``p_adjusted``,
        ``odds_ratio``, ``ci_low``, ``ci_high``, ``effect`` (risk / protective / not
        significant) and, with a cluster, ``design_effect``. ``tables["lr_tests"]``: the
        likelihood-ratio test per factor. ``raw``: the
        :class:`analysis.importance.ImportanceResult`.

    Raises
    ------
    analysis.importance.ImportanceRefusal
        The model cannot be fitted as asked (aliased factors, separation ...); its
        ``fixes`` say which options would fix it.
    """
    from analysis.importance import factor_importance, uncertainty_label
    from analysis.options.importance import ImportanceOptions

    opts = _options(ImportanceOptions, options, option_values)
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where)
    fit = factor_importance(table, the_design, factors=the_design.names,
                            references=references, where=subset or None, exclude=exclude,
                            **opts.kwargs())
    settings = {**opts.settings(), "factors": list(fit.references), "where": subset,
                "references": dict(fit.references)}
    notes = (f"Standard errors: {uncertainty_label(fit, the_design)}.", *fit.notes)
    return Result(fit.terms, notes, settings, {"lr_tests": fit.factor_tests}, fit)
