"""``--engine`` for every ``python -m analysis`` subcommand.

:func:`analysis.cli.load_with_design` hands over here when the engine is not pandas.
Count-based subcommands (cells, coverage, subgroups, ecdf, importance) get the *fine
cell table* (one row per observed combination of the design's factors and the filter
columns, with ``n``, ``deviations`` and ``n_all``) instead of the rows: every statistic
they compute is a function of it, and :func:`analysis.cells.cell_table` sums it over any
subset of factors. Subcommands whose statistics need rows of a numeric or categorical
column (disparity, cohorts, index) get only the columns they use, read by the engine.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pandas as pd

from analysis.columns import DEVIATION
from analysis.design import Design, parse_assignments
from analysis.engines import fine_cells_from_table, open_table, resolve_engine
from analysis.engines.base import fine_cell_meta
from analysis.errors import AnalysisError
from analysis.table_meta import TableMeta

__all__ = ["ALL_COLUMN_COMMANDS", "ROW_COMMANDS", "ROW_OPTIONS", "load_with_engine",
           "pandas_columns"]


#: Subcommands whose statistics need rows, and the options naming the columns they read.
ROW_COMMANDS = ("disparity", "cohorts", "index", "compare", "counterfactual", "variance")
#: ... of which these read every column (compare: the prompt unit may be an id column
#: found in the data, analysis.compare.infer_unit; counterfactual: the template, the
#: answer texts; variance: facets such as a judge or seed column outside the factors).
ALL_COLUMN_COMMANDS = ("compare", "counterfactual", "variance")
ROW_OPTIONS = ("feature", "baseline", "category", "cohort", "by", "sentiment", "sentiment_by",
               "model", "dimensions", "penalty_factors")
#: What :func:`load_with_engine` returns: ``(results, design)``, with ``with_meta`` also
#: the table's :class:`~analysis.table_meta.TableMeta`.
Loaded = tuple[pd.DataFrame, Design] | tuple[pd.DataFrame, Design, TableMeta]


def _design_and_outcome(args: argparse.Namespace, need_outcome: bool) -> tuple[Design, list[str]]:
    """The design from ``--design`` (restricted to ``--factors``) and the outcome options;
    an empty factor list means "build the factors from the data"."""
    from analysis.cli_args import outcome_from_args, split_list

    factors = split_list(getattr(args, "factors", None))
    if getattr(args, "design", None):
        design = Design.load(args.design)
        if factors:
            design = design.subset(factors)
    else:
        if not factors:
            raise AnalysisError("Say which factors to use: --factors a,b,c or --design FILE.")
        design = Design()
    outcome = outcome_from_args(args)
    if outcome is not None:
        design = design.with_outcome(outcome)
    if need_outcome and design.outcome is None:
        from analysis.design_guess import NO_OUTCOME

        raise AnalysisError(NO_OUTCOME)
    return design, factors


def _assignments(args: argparse.Namespace, option: str) -> dict[str, list[str]]:
    from analysis.cli_args import split_list
    from analysis.design import parse_assignments

    items = getattr(args, option, []) or []
    return {k: split_list(v) for k, v in parse_assignments(items, f"--{option}").items()}


def _row_columns(args: argparse.Namespace, design: Design, factors: Sequence[str],
                 extra: Sequence[str]) -> list[str]:
    from analysis.cli_args import split_list

    cols = [*design.names, *factors, *extra, *design.covariates,
            *(getattr(args, "covariates", None) or ())]
    if design.outcome is not None:
        cols += [design.outcome.column, design.outcome.other_column or ""]
    for option in ROW_OPTIONS:
        value = getattr(args, option, None)
        if isinstance(value, str):
            cols += split_list(value)
    return [c for c in dict.fromkeys(cols) if c]


def load_with_engine(args: argparse.Namespace, *, need_outcome: bool = True,
                     with_meta: bool = False) -> Loaded | None:
    """What :func:`analysis.cli.load_with_design` returns, computed by DuckDB or Spark
    (with ``with_meta``, the table's :class:`~analysis.table_meta.TableMeta` third: a cell
    table's ``engine`` and ``n_rows``).

    Returns None when ``--engine auto`` picks pandas (a small single file).
    """
    from analysis.cli_args import (
        counts_prompts,
        infer_cluster,
        infers_cluster,
        note_decimal_commas,
    )

    engine = resolve_engine(args.file, getattr(args, "engine", "auto"))
    if engine == "pandas":
        return None
    design, factors = _design_and_outcome(args, need_outcome)
    where = _assignments(args, "where")
    exclude = list(_assignments(args, "exclude"))
    references = parse_assignments(getattr(args, "reference", []) or [])
    table = open_table(args.file, engine, sep=getattr(args, "sep", None),
                       encoding=getattr(args, "encoding", "utf-8") or "utf-8")
    note_decimal_commas(table.decimal_comma_columns)
    sample = None
    if infers_cluster(args):  # no design file: the cluster read as `describe` reads it
        from analysis.engines.describe import ENGINE_SAMPLE_ROWS

        sample = table.query(f"SELECT * FROM {{table}} LIMIT {ENGINE_SAMPLE_ROWS}")
    design = infer_cluster(args, sample, design, factors)
    # the cluster column (named, or the design's) stays a key: robust SEs and bootstraps
    cluster = None if getattr(args, "no_cluster", False) else (
        getattr(args, "cluster", None) or design.cluster)
    named = None if getattr(args, "no_cluster", False) else getattr(args, "cluster", None)
    if named and named not in table.kinds:  # the same words as the pandas path
        from analysis.clusters import missing_cluster_message
        from analysis.errors import ClusterError

        raise ClusterError(missing_cluster_message(named, table.kinds))
    if cluster and cluster in table.kinds and cluster not in (factors or design.names):
        exclude = [*exclude, cluster]
    try:
        if _needs_rows(args, design):
            frame, design = _rows(args, table, design, factors, where, exclude, references)
            return (frame, design, table.meta()) if with_meta else (frame, design)
        base = design if design.factors else Design(outcome=design.outcome)
        unit: list[str] = []
        if counts_prompts(args) and factors:  # the prompt unit, read from the first rows
            from analysis.engines.describe import ENGINE_SAMPLE_ROWS
            from analysis.structure import infer_prompt_unit

            sample = table.query(f"SELECT * FROM {{table}} LIMIT {ENGINE_SAMPLE_ROWS}")
            unit, args.unit_reason = infer_prompt_unit(sample, factors)
        cells, full = fine_cells_from_table(
            table, base, factors=factors or design.names, where=where,
            extra_keys=[*exclude, *(c for c in unit if c not in factors)],
            references=references)
        meta = fine_cell_meta(table, cells)
    finally:
        table.close()
    full = full.subset(factors or design.names).with_cluster(design.cluster)
    full = full.with_prompt_unit(unit) if unit else full
    return (cells, full, meta) if with_meta else (cells, full)


#: Subcommands whose pandas path may read only the columns :func:`pandas_columns` names.
COLUMN_COMMANDS = ("importance",)


def pandas_columns(args: argparse.Namespace) -> list[str] | None:
    """The columns the pandas path reads for ``args`` (a Parquet file decodes only
    these: :func:`analysis.io.read_results`), or None for every column.

    Only ``importance`` of a binary outcome with a ``--design`` file, without covariates
    or ``--judge-noise``: the design's factors (``--factors``), its outcome, the cluster,
    the ``--where`` / ``--exclude`` columns and a ``deviation`` column (as the engines
    read them, :func:`_row_columns`). Whatever the rest of the table holds changes no
    number or message of that command; without a design file the factors, outcome and
    cluster are suggested from the whole table.
    """
    if getattr(args, "command", None) not in COLUMN_COMMANDS or not getattr(
            args, "design", None) or getattr(args, "judge_noise", False):
        return None
    try:
        design, factors = _design_and_outcome(args, need_outcome=False)
        where, exclude = _assignments(args, "where"), _assignments(args, "exclude")
    except (AnalysisError, OSError, ValueError):  # said by the pandas path, in its order
        return None
    if design.outcome is None or _needs_rows(args, design):
        return None
    cluster = None if getattr(args, "no_cluster", False) else (
        getattr(args, "cluster", None) or design.cluster)
    extra = [*where, *exclude, DEVIATION,
             *([cluster] if cluster else [])]
    return _row_columns(args, design, factors, extra)


def _needs_rows(args: argparse.Namespace, design: Design) -> bool:
    """A subcommand that reads rows, or ``importance`` of a continuous outcome or with a
    covariate (the linear / mixed model and the covariate logit fit the rows, not cells)."""
    command = getattr(args, "command", None)
    if command in ROW_COMMANDS:
        return True
    if command != "importance":
        return False
    kind = getattr(args, "outcome_type", "auto")
    declared = design.outcome is not None and design.outcome.type == "continuous"
    return (kind == "continuous" or (kind == "auto" and declared)
            or bool(getattr(args, "covariates", None) or design.covariates))


def _rows(args, table, design: Design, factors: Sequence[str], where, exclude, references):
    """Only the columns the subcommand reads, then the pandas path on them."""
    from analysis.cell_counts import filter_rows
    from analysis.design import apply_design, make_factor

    # a ``deviation`` column of the data comes along as on the pandas path, which keeps
    # every column: without an outcome it is the rows' outcome (``n_missing_outcome``)
    has_deviation = DEVIATION.lower() in {k.lower() for k in table.kinds}  # Spark: any case
    extra = [*where, *exclude, *([DEVIATION] if has_deviation else [])]
    frame = table.collect(list(table.kinds) if getattr(args, "command", None)
                          in ALL_COLUMN_COMMANDS else _row_columns(args, design, factors, extra))
    if not design.factors:
        design = Design(factors=tuple(make_factor(frame, f) for f in factors),
                        outcome=design.outcome, cluster=design.cluster)
    for name, ref in references.items():
        design = design.with_reference(name, ref)
    return filter_rows(apply_design(frame, design), where), design
