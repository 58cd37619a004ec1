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
  (``{"model": ["a", "b"]}``);
- ``applied`` (where a function takes it): ``data`` already has the design applied (the
  CLI's, the app's, the report's tables): not applied again;
- ``cells`` (where a function takes it): the cell table of the rows analysed (after
  ``where`` and ``exclude``) over the factors it needs and the cluster, when the caller
  has it cached (the app): used instead of the rows, the same numbers.

Each analysis's function is its one composition: its CLI command, its report section,
its page and "Copy as Python" call it. Its docstring names its options class, whose
declarations (:func:`analysis.options.option`) describe each option (``python -m
analysis COMMAND --help`` lists them).

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
from analysis.options import OptionError, Options

if TYPE_CHECKING:
    import pandas as pd

    from analysis.clusters import ClusterChoice
    from analysis.design import Design

__all__ = ["Result", "bias_index", "check", "cohorts", "compare", "counterfactual", "coverage",
           "disparity", "ecdf", "extend_results", "features", "generate_prompts", "importance",
           "importance_linear", "index_published",
           "native_deltas", "native_scores", "plan", "power", "prepare_inputs",
           "resolve_cluster_option", "subgroups", "variance_components", "d_study",
           "judge_reliability", "judge_agreement", "judge_stage_metrics", "judge_noise_modes",
           "fractional_factorial", "nesting", "findings", "rows_behind", "is_bbq", "bbq_scores",
           "has_native_score", "available_features", "check_criteria",
           "time_capsules", "prompt_unit", "compare_pairing", "group_means", "scores_out",
           "count_unit", "coverage_cells", "coverage_empty_page",
           "importance_adjustment_sentence", "inferred_structure", "inferred_template"]

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
    meta
        What a view needs beyond the numbers and the settings (the function's docstring
        lists its keys: warnings, judge-noise counts ...); the tables carry no
        ``DataFrame.attrs``.
    """

    table: pd.DataFrame
    notes: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    raw: Any = None
    meta: Mapping[str, Any] = field(default_factory=dict)

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
                   where: Where | None = None, need_outcome: bool = True,
                   notes: list[str] | None = None, applied: bool = False
                   ) -> tuple[pd.DataFrame, Design, dict[str, list[str]]]:
    """The table (design applied unless a cell table), the design (restricted to
    ``factors``) and the subset as lists, from what a user passes.

    Without a design, the suggested one (:func:`analysis.design.suggest_design`): its
    factors, outcome and cluster are each said in ``notes`` (when a list is given), as
    the CLI says them (:func:`analysis.design_guess.suggestion_notes`). ``applied``: the
    table already has the design applied (the CLI's, the app's, the report's): not
    applied again.

    Raises
    ------
    AnalysisError
        An unreadable file or design, an unknown factor, a design without an outcome.
    """
    from analysis.design import apply_design

    data = _table(data, "a results table")
    the_design = _design_of(design, data)
    chosen = _as_list(factors, "factors")
    if chosen:
        the_design = the_design.subset(chosen)
    if need_outcome and the_design.outcome is None and not _is_cell_table(data):
        from analysis.design_guess import NO_OUTCOME

        raise AnalysisError(NO_OUTCOME)
    if design is None and notes is not None:
        from analysis.design_guess import suggestion_notes

        notes.extend(suggestion_notes(the_design, factors=not chosen, outcome=need_outcome))
    subset = {str(k): _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    if not applied and not _is_cell_table(data):  # factor order, references, deviation
        data = apply_design(data, the_design)
    return data, the_design, subset


def _options(cls: type[Options], options: Any, values: Mapping[str, Any]) -> Options:
    try:
        return cls.coerce(options, **values)
    except AnalysisError as exc:
        # an unknown option close to one of the calling function's own arguments
        # (reference= for references=): name that argument (issue 42)
        import inspect
        import sys

        from analysis.errors import did_you_mean

        caller = globals().get(sys._getframe(1).f_code.co_name)
        arguments = [p for p in inspect.signature(caller).parameters
                     if p not in ("data", "design", "options")] if callable(caller) else []
        hints = [did_you_mean(name, arguments) for name in values if name not in cls.specs()]
        hint = next((h for h in hints if h), "")
        if not hint:
            raise
        raise type(exc)(f"{exc}{hint.replace('did you mean ', 'did you mean the argument ')}"
                        ) from None


def importance(data: Any, design: Any = None, *, options: Any = None,
               factors: str | Sequence[str] | None = None, where: Where | None = None,
               references: Mapping[str, str] | None = None,
               exclude: Mapping[str, Sequence[str]] | None = None,
               covariates: Sequence[str] = (), standardise: bool = True,
               cells: pd.DataFrame | None = None, applied: bool = False,
               parts: Any = None, **option_values: Any) -> Result:
    """Factor importance: logistic regression of deviation on the factors (methods.md §4).

    Options: :class:`analysis.options.importance.ImportanceOptions`. ``references``
    overrides the design's reference values; ``exclude`` leaves out rows with the given
    values; ``covariates``: numeric columns added to the model (standardised unless
    ``standardise=False``; not with interactions, GEE, separation handling or judge
    noise); ``cells`` (over the factors, the subset's factors and the cluster) is fitted
    instead of the rows. ``parts``: an :class:`analysis.importance_parts.ImportanceParts`
    store, for a caller that calls again on the same table object (``applied=True`` or a
    cell table; not modified in place) with other options (the Factor importance page):
    the cells, the cluster's pairs and, while the fit is the same, the cluster-robust
    covariance are computed once; the numbers are the same with or without it.

    Returns
    -------
    Result
        ``table``: one row per term: ``term``, ``factor``, ``value``, ``n``,
        ``deviation_rate``, ``coef``, ``std_err``, ``z``, ``p_value``, ``p_adjusted``,
        ``odds_ratio``, ``ci_low``, ``ci_high``, ``effect`` (risk / protective / not
        significant), with a cluster ``design_effect``, ``df``, ``n_clusters``, with judge
        noise ``noise_same_sign``, ``noise_significant``, ``noise_survives``.
        ``tables["lr_tests"]``: the test per factor. ``raw``: the
        :class:`analysis.importance.ImportanceResult` (its ``terms`` without the noise
        columns). ``settings``: every option and the fit's summary
        (``ImportanceResult.summary``: the cluster used, ``covariance``, ``reference_df``,
        ``df_method``, counts), ``uncertainty``, ``where``, ``exclude``. ``meta``: with
        judge noise, ``judge_noise`` (its settings and counts) and
        ``judge_noise_summary``.

    Raises
    ------
    analysis.importance.ImportanceRefusal
        The model cannot be fitted as asked (aliased factors, separation ...); its
        ``fixes`` say which options would fix it.
    """
    from analysis.importance import factor_importance, uncertainty_label
    from analysis.options.importance import ImportanceOptions

    opts = _options(ImportanceOptions, options, option_values)
    suggested: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               notes=suggested, applied=applied)
    exclude = {k: _as_list(v, f"exclude[{k!r}]") or [] for k, v in (exclude or {}).items()}
    covariates = list(covariates)
    kw = {"references": references, "where": subset or None, "exclude": exclude or None}
    if covariates:
        from analysis.importance_linear import logistic_with_covariates

        if opts.interactions or opts.gee or opts.on_separation != "refuse" or opts.judge_noise:
            raise OptionError("covariates in the logistic model do not combine with "
                              "interactions, gee, on_separation or judge_noise yet.")
        fit = logistic_with_covariates(
            table, the_design, covariates=covariates, standardise=standardise,
            factors=[f for f in the_design.names if f not in covariates], cluster=opts.cluster,
            alpha=opts.alpha, adjust=opts.adjust, confidence=opts.confidence,
            likelihood_ratio=opts.likelihood_ratio, small_sample=opts.small_sample, **kw)
    else:
        fit = factor_importance(table if cells is None else cells, the_design,
                                factors=the_design.names, **kw, **opts.kwargs(), parts=parts)
    terms, meta = fit.terms, {}
    uncertainty = uncertainty_label(fit, the_design)
    notes = [*suggested, f"Standard errors: {uncertainty}.", *fit.notes]
    if opts.judge_noise:  # noise_same_sign, noise_significant, noise_survives per term
        from analysis.judge_noise import importance_noise, noise_arguments, survival_sentence

        _needs_rows(table, "Judge noise")
        refit = {**opts.kwargs(), "cluster": fit.cluster}
        refit.pop("likelihood_ratio")  # replicates are fitted without the LR tests
        terms, meta["judge_noise"] = importance_noise(
            table, the_design, fit=fit, factors=the_design.names, return_info=True, **kw,
            **refit, **noise_arguments(opts, the_design))
        meta["judge_noise_summary"] = survival_sentence(meta["judge_noise"], what="terms")
        notes.append(meta["judge_noise_summary"])
        terms.attrs.clear()
    summary = {k: v for k, v in fit.summary().items() if k != "notes"}
    settings = {**opts.settings(), **summary, "uncertainty": uncertainty, "where": subset,
                "exclude": exclude, "covariates": covariates,
                **({"standardise": standardise} if covariates else {})}
    return Result(terms, tuple(notes), settings, {"lr_tests": fit.factor_tests}, fit, meta)


def _rows_of(table: pd.DataFrame, subset: Mapping[str, list[str]],
             exclude: Mapping[str, Sequence[str]] | None) -> pd.DataFrame:
    from analysis.cells import exclude_rows, filter_rows

    rows = filter_rows(table, subset or None)
    return exclude_rows(rows, {k: _as_list(v, f"exclude[{k!r}]") or []
                               for k, v in (exclude or {}).items()}) if exclude else rows


def _cluster_of(value: str | None, design: Design) -> str | None:
    from analysis.options import FROM_DESIGN

    return design.cluster if value == FROM_DESIGN else value


def resolve_cluster_option(value: str | None, design: Design, data: pd.DataFrame, *,
                           factors: Sequence[str] = (), rows: pd.Series | None = None
                           ) -> ClusterChoice:
    """The cluster an analysis uses from its ``cluster`` option: the design's
    (:data:`analysis.options.FROM_DESIGN`), a column, or None (rows independent), checked
    against ``data`` (rows, or a cell table with ``n``) by
    :func:`analysis.clusters.resolve_cluster`: the one resolution of the API and the CLI.

    A declared cluster the table lacks, a constant one or one row per value is not used
    (a note says so); a named column the table lacks is a
    :class:`analysis.errors.ClusterError`. ``rows``: rows per line of ``data`` (default
    the ``n`` of a cell table, else one).
    """
    from analysis.clusters import resolve_cluster
    from analysis.options import FROM_DESIGN

    declared = value == FROM_DESIGN
    if rows is None:
        rows = data["n"] if _is_cell_table(data) else None
    return resolve_cluster(data, design.cluster if declared else value, declared=declared,
                           factors=factors, rows=rows)


def _needs_rows(table: pd.DataFrame, what: str) -> None:
    if _is_cell_table(table):
        raise AnalysisError(f"{what} resamples rows: pass the results table, not a cell table.")


def subgroups(data: Any, design: Any = None, *, options: Any = None,
              factors: str | Sequence[str] | None = None, where: Where | None = None,
              exclude: Mapping[str, Sequence[str]] | None = None,
              cells: pd.DataFrame | None = None, applied: bool = False,
              **option_values: Any) -> Result:
    """Log disparity of every subgroup up to a level (methods.md §2-3), with the options'
    cluster-robust CIs, bootstrap intervals (``ci="bootstrap"``), power columns
    (``power``, ``effect``) and judge-noise survival (``judge_noise=R``).

    Options: :class:`analysis.options.subgroups.SubgroupsOptions`. ``exclude`` leaves out
    rows with the given values.

    Returns
    -------
    Result
        ``table``: one row per distinct subgroup (subgroups with the same rows once):
        the factor columns (the value, or missing where the subgroup does not fix the
        factor), ``level``, ``subgroup``, ``n``, ``deviations``, ``deviation_rate``,
        ``rate_outside``, ``log_disparity``, ``ci_low``, ``ci_high``, ``p_value``,
        ``p_adjusted``, ``test``, ``small_n``, ``continuity_corrected``, ``ld_undefined``,
        ``same_rows_as``; with a cluster ``design_effect`` and ``n_clusters``; with
        ``ci="bootstrap"`` ``boot_se``, ``boot_ci_low``, ``boot_ci_high``; with ``power``
        ``mde_log_disparity`` (and ``detectable`` with ``effect``); with ``judge_noise``
        ``noise_same_sign``, ``noise_significant``, ``noise_survives``; with ``pooled``
        ``rate_pooled``, ``rate_pooled_low``, ``rate_pooled_high``, ``ld_pooled``,
        ``ld_pooled_low``, ``ld_pooled_high``, ``pooling_weight``
        (:func:`analysis.pooling.pool_subgroups`; the raw columns keep their values, and
        ``analysis.pooling.swap_pooled`` gives the table the figures read).
        ``tables["all"]``: every subgroup (duplicates too, ``duplicate_of``); with
        ``pooled`` ``tables["pooling"]``: the model's terms and variances; for a
        continuous outcome (the design declares it) and rows (not a cell table)
        ``tables["group_means"]``: the mean score per factor value and its difference
        from the reference (Welch, or CR2 with Satterthwaite df over the cluster used;
        :func:`analysis.continuous.group_means` at ``confidence``, ``p_adjusted`` by
        ``adjust``).
        ``settings``: every option (``level`` resolved), the cluster used, ``n_clusters``,
        ``reference_df``, ``uncertainty`` (how the CIs and p-values were computed),
        ``factors``, ``where``, ``n_subgroups``, ``n_distinct``. ``meta``:
        ``warnings`` (what was assumed: cluster, continuity, bootstrap),
        ``judge_noise`` (its settings and counts, with ``judge_noise``), ``n_rows``
        (rows behind the cells), with ``pooled`` ``pooling_notes``.
    """
    from analysis.cells import cell_table
    from analysis.columns import LEVEL
    from analysis.design_outcome import is_continuous
    from analysis.options.subgroups import SubgroupsOptions
    from analysis.subgroups import distinct_subgroups, uncertainty_label
    from analysis.subgroups import subgroups as subgroup_table

    opts = _options(SubgroupsOptions, options, option_values)
    notes: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               notes=notes, applied=applied)
    names = the_design.names
    rows = _rows_of(table, subset, exclude)
    coded = None  # the cluster column factorised once (judged and counted from its codes)
    if cells is None and not _is_cell_table(rows) and not opts.pooled:
        from analysis.subgroup_codes import cluster_grid, cluster_lines  # no cluster cells

        coded = cluster_lines(rows, _cluster_of(opts.cluster, the_design), names)
    checked = resolve_cluster_option(opts.cluster, the_design, rows if coded is None
                                     else coded.lines,
                                     rows=None if coded is None else coded.rows)
    cluster = checked.column
    grid = None
    if coded is not None and cluster:  # None: too large, or outcomes not 0/1
        grid = cluster_grid(rows, names, cluster, coded=coded, max_level=opts.level)
        if grid is not None:
            cells = grid.cell_table()  # = cell_table(rows, names)
    if cells is None:
        cells = rows if _is_cell_table(rows) else cell_table(
            rows, list(dict.fromkeys([*names, *([cluster] if cluster else [])])))
    fine = cells  # over the cluster too without a grid of the rows: what pooling reads
    if grid is None and cluster:  # cells over the cluster: summed once
        from analysis.subgroup_codes import cell_grid

        grid = cell_grid(cells, names, cluster, max_level=opts.level)
        cells = cells if grid is None else grid.cell_table()
    full, info = subgroup_table(cells, names, **{**opts.kwargs(), "cluster": cluster},
                                cluster_grid=grid, return_info=True)
    facts = {k: getattr(info, k) for k in ("cluster", "n_clusters", "reference_df",
                                            "df_method")}
    uncertainty = uncertainty_label(info, the_design)
    warnings = [*checked.notes, *info.notes]
    if opts.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_log_disparity

        _needs_rows(rows, "The bootstrap")
        full, boot = bootstrap_log_disparity(rows, names, max_level=opts.level, table=full,
                                             confidence=opts.confidence, return_info=True,
                                             **opts.bootstrap_kwargs(cluster))
        warnings += boot.notes
    n_rows = int(cells["n"].sum())
    tables: dict[str, Any] = {}
    if opts.pooled:  # rate_pooled, ld_pooled ... beside the raw columns (docs/pooling.md)
        from analysis.pooling import pool_subgroups

        full, pooling = pool_subgroups(fine, names, full, cluster=cluster,
                                       confidence=opts.confidence, return_info=True)
        tables["pooling"] = pooling.terms
        meta_pooling = list(pooling.notes)
        warnings += meta_pooling
    if opts.power is not None:
        from analysis.planning import add_power

        full = add_power(full, n_rows, power=opts.power, target_ld=opts.effect,
                         reference_df=facts["reference_df"])
    distinct = distinct_subgroups(full)
    meta: dict[str, Any] = {"warnings": warnings, "n_rows": n_rows}
    if opts.pooled:
        meta["pooling_notes"] = meta_pooling
    notes += [f"CIs and p-values: {uncertainty}.", *warnings]
    if opts.judge_noise:
        from analysis.judge_noise import noise_arguments, subgroup_noise, survival_sentence

        _needs_rows(rows, "Judge noise")
        distinct, meta["judge_noise"] = subgroup_noise(
            rows, names, max_level=opts.level, test=opts.test, confidence=opts.confidence,
            min_n=opts.min_n, min_expected=opts.min_expected, table=distinct,
            adjust=opts.adjust, return_info=True, **noise_arguments(opts, the_design))
        meta["judge_noise_summary"] = survival_sentence(meta["judge_noise"], what="subgroups")
        notes.append(meta["judge_noise_summary"])
    if is_continuous(the_design) and names and not _is_cell_table(rows):
        from analysis.continuous import group_means

        tables["group_means"] = group_means(rows, the_design, confidence=opts.confidence,
                                            cluster=cluster, adjust=opts.adjust)
    level = int(full[LEVEL].max()) if len(full) else opts.level
    settings = {**opts.settings(), "level": level, **facts, "uncertainty": uncertainty,
                "factors": names, "where": subset,
                "exclude": {k: _as_list(v, "exclude") for k, v in (exclude or {}).items()},
                "n_subgroups": len(full), "n_distinct": len(distinct)}
    for frame in (full, distinct):  # the metadata travels in the Result, not the frames
        frame.attrs.clear()
    return Result(distinct, tuple(dict.fromkeys(notes)), settings, {"all": full, **tables},
                  full, meta)


def ecdf(data: Any, design: Any = None, *, options: Any = None,
         factors: str | Sequence[str] | None = None, where: Where | None = None,
         by: str | None = None, cells: pd.DataFrame | None = None, applied: bool = False,
         **option_values: Any) -> Result:
    """eCDF of subgroup deviation rates: the deviation metric per curve (one curve per
    value of ``by``) and two-sample Kolmogorov-Smirnov tests (methods.md §5).

    ``by``: the comparison factor (default: the design's first model factor);
    ``factors``: those forming the subgroups (default: the design's others). Options:
    :class:`analysis.options.ecdf.EcdfOptions`. ``cells``: over ``by`` and the factors.

    Returns
    -------
    Result
        ``table``: one row per curve: the ``by`` column, ``n_subgroups``,
        ``deviation_metric`` (mean |rate - C|), ``mean_rate``, ``share_above_cutoff``.
        ``tables["ks"]``: one row per pair of curves (``group_a``, ``group_b``,
        ``statistic``, ``p_value``, ``p_adjusted``, ``method``, ``n_resamples``,
        ``note``); ``tables["rates"]``: the subgroup rates per curve; with
        ``ci="bootstrap"`` ``tables["bootstrap"]`` (``quantity``, ``group_a``,
        ``group_b``, ``estimate``, ``boot_se``, ``boot_ci_low``, ``boot_ci_high``,
        ``n_boot``). With ``pooled``: ``deviation_metric``, ``mean_rate`` and
        ``share_above_cutoff`` are those of the pooled rates, beside
        ``deviation_metric_raw``, ``mean_rate_raw``, ``share_above_cutoff_raw``;
        ``tables["rates"]`` gains ``rate_pooled``, ``rate_pooled_low``,
        ``rate_pooled_high``, ``pooling_weight`` (:func:`analysis.pooling.pool_rates`),
        ``tables["pooling"]`` the model's terms and variances; the KS tests and the
        bootstrap stay on the raw rates. ``settings``: every option, the cluster resampled, ``by``,
        ``factors``, ``where``. ``meta``: ``bootstrap`` (its settings and notes), with
        ``pooled`` ``pooling_notes``.
    """
    from analysis.cells import cell_table
    from analysis.ecdf import ecdf_summary, ks_tests, subgroup_rates
    from analysis.options.ecdf import EcdfOptions

    opts = _options(EcdfOptions, options, option_values)
    notes: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, where=where, notes=notes,
                                               applied=applied)
    if by is None:
        models = the_design.of_kind("model")
        if not models:
            raise AnalysisError("Name the factor to compare curves by: by='model'.")
        by = models[0]
    if by not in the_design.names:
        raise AnalysisError(f"by={by!r} is not a factor of the design: use one of "
                            f"{', '.join(the_design.names)}.")
    chosen = _as_list(factors, "factors") or [f for f in the_design.names if f != by]
    if by in chosen:
        raise AnalysisError(f"by={by!r} is also in factors; give it in one place.")
    unknown = [f for f in chosen if f not in the_design.names]
    if unknown:
        raise AnalysisError(f"Unknown factor(s) {', '.join(map(repr, unknown))}: the design "
                            f"has {', '.join(the_design.names)}.")
    rows = _rows_of(table, subset, None)
    pooled_cluster = None
    if opts.pooled:  # the pooling's sampling variances are cluster-robust: cells over it
        checked = resolve_cluster_option(opts.cluster, the_design, rows)
        pooled_cluster = checked.column
        notes += checked.notes
        if pooled_cluster and cells is not None and pooled_cluster not in cells.columns:
            cells = None
    if cells is None:
        cells = rows if _is_cell_table(rows) else cell_table(
            rows, [by, *chosen, *([pooled_cluster] if pooled_cluster else [])])
    rates = subgroup_rates(cells, chosen, by=by, level=opts.level)
    ks = ks_tests(rates, by=by, n_resamples=opts.ks_resamples, seed=opts.seed,
                  adjust=opts.adjust)
    tables = {"ks": ks, "rates": rates}
    if opts.pooled:
        from analysis.pooling import pool_rates, pooled_summary

        rates, pooling = pool_rates(cells, chosen, rates, by=by, cluster=pooled_cluster,
                                    confidence=opts.confidence, return_info=True)
        tables.update(rates=rates, pooling=pooling.terms)
        pooling_notes = [*pooling.notes, "The KS tests compare the raw rates."]
        notes += pooling_notes
        summary = pooled_summary(rates, by=by, ideal=opts.ideal, cutoff=opts.cutoff)
    else:
        summary = ecdf_summary(rates, by=by, ideal=opts.ideal, cutoff=opts.cutoff)
    cluster = _cluster_of(opts.cluster, the_design)
    meta: dict[str, Any] = {"pooling_notes": pooling_notes} if opts.pooled else {}
    if opts.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_ecdf

        _needs_rows(rows, "The bootstrap")
        boot, info = bootstrap_ecdf(rows, chosen, by=by, level=opts.level, ideal=opts.ideal,
                                    confidence=opts.confidence, return_info=True,
                                    **opts.bootstrap_kwargs(cluster))
        meta["bootstrap"] = info.as_dict()
        notes += meta["bootstrap"].get("notes", [])
        tables["bootstrap"] = boot
    settings = {**opts.settings(), "cluster": cluster, "by": by, "factors": chosen,
                "where": subset}
    return Result(summary, tuple(notes), settings, tables, rates, meta)


def coverage(data: Any, design: Any = None, *, options: Any = None,
             factors: str | Sequence[str] | None = None, where: Where | None = None,
             exclude: Mapping[str, Sequence[str]] | None = None, applied: bool = False,
             cells: pd.DataFrame | None = None, pair: Sequence[str] | None = None,
             models: Sequence[str] | None = None, model_cells: pd.DataFrame | None = None,
             counted: Any = None, **option_values: Any) -> Result:
    """Coverage percentage and Gini index of the design's factor grid (methods.md §1).

    ``factors``: the grid (default: the design's domain and prompt factors); ``exclude``
    leaves out rows with the given values and takes the values out of the grid. Options:
    :class:`analysis.options.coverage.CoverageOptions`. No outcome needed.

    Returns
    -------
    Result
        ``table``: the joint row and one row per factor: ``scope`` (``joint`` /
        ``marginal``), ``factors``, ``n_cells``, ``n_observed_cells``, ``n_empty_cells``,
        ``n_rows``, ``coverage_percentage`` (a fraction in [0, 1]), ``gini_index``,
        ``gini_index_observed``. ``tables``: ``marginals`` (count per value),
        ``empty_cells`` and ``thinnest_cells`` (the first ``limit``), ``nestings`` (the
        factors that determine another on the observed cells,
        :func:`analysis.coverage.coverage_nestings`). ``notes``: the plain-language
        reading. ``raw``: the coverage cells (an :class:`analysis.coverage.CountedCells`
        unless ``cells`` was a plain cell table; ``cells=``: these, from
        :func:`analysis.coverage.coverage_cells` over the factors, the subset and
        ``count``).

        Also in ``tables`` (the names the command, the report and the page share):
        ``per_factor`` (the table's ``marginal`` rows: one per factor, its Gini index
        and counts); ``pairs`` (the heatmap's counts of the two factors ``pair``, default
        the grid's first two, every declared combination: the factors' columns and ``n``,
        :func:`analysis.coverage.pair_counts`; absent for a one-factor grid); ``models``
        (when the grid has a factor that is not a model factor and there are model
        factors: those of the grid plus ``models``, default the design's model factors
        outside the grid present in the table, ``()`` for none; one row per model
        combination, :func:`analysis.coverage.model_coverage` over the response rows, the
        excluded values out of its grid too). ``meta``: ``count_unit`` (the
        :class:`analysis.coverage.CountUnit` of the cells, or None), ``counted`` (its
        plural noun: ``prompts``, ``items``, ``rows``), ``per_factor_gini``
        (``{factor: Gini index}``), ``nesting_reading`` (a sentence per
        row of ``nestings``) and, with ``models``: ``model_factors``,
        ``nested_prompt_factors`` and ``model_reading`` (sentences).

        For a caller that caches its steps (the Coverage page): ``pair=()`` leaves the
        heatmap's ``pairs`` out (a pair too large to draw); ``model_cells`` is the cell
        table (:func:`analysis.cells.cell_table`, no outcome) over the grid and the model
        factors, the subset applied, when cached (:func:`coverage_cells` and ``cells=``
        likewise for the coverage cells); ``counted``: the
        :class:`analysis.coverage.CountUnit` the cells count when they are computed here
        (:func:`count_unit`, read off the visitor's thread by the page).
    """
    from analysis import coverage as cov
    from analysis.cells import filter_rows
    from analysis.coverage import exclude_from_grid
    from analysis.nesting import describe_nesting
    from analysis.options.coverage import CoverageOptions

    opts = _options(CoverageOptions, options, option_values)
    suggested: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=False, notes=suggested,
                                               applied=applied)
    whole = the_design if design is None else _design_of(design, table)  # model factors
    names = the_design.names if factors else cov.default_factors(the_design)
    excluded = {k: _as_list(v, f"exclude[{k!r}]") or [] for k, v in (exclude or {}).items()}
    rows = table
    table, the_design = exclude_from_grid(rows, the_design, excluded)
    if cells is None:
        cells = cov.coverage_cells(table, the_design, names, unit=opts.count, where=subset,
                                   counted=counted, with_unit=True)
    counted_cells = cells  # CountedCells (its unit and rows), or a plain cell table
    unit = cov.counted_unit(cells)  # None for a plain cell table (its n counts rows)
    cells = cells.frame if isinstance(cells, cov.CountedCells) else cells
    kw = {"factors": names, "where": subset}
    summary, reasons = cov.coverage_summary(counted_cells, the_design, **kw,
                                            return_reasons=True)
    marginals = cov.marginal_counts(cells, the_design, **kw)
    tables = {"marginals": marginals,
              "empty_cells": cov.empty_cells(cells, the_design, limit=opts.limit, **kw),
              "thinnest_cells": cov.thinnest_cells(cells, the_design, limit=opts.limit, **kw),
              "nestings": cov.coverage_nestings(cells, the_design, **kw),
              "per_factor": summary[summary[cov.SCOPE] == cov.MARGINAL]}
    meta: dict[str, Any] = {
        "count_unit": unit, "counted": cov.counted_noun(counted_cells),
        "per_factor_gini": cov.per_factor_gini(summary),
        "nesting_reading": [describe_nesting(r) for r in
                            tables["nestings"].to_dict(orient="records")]}
    shown = list(pair) if pair is not None else names[:2]
    if len(shown) == 2:
        tables["pairs"] = cov.pair_counts(cells, the_design, *shown, where=subset)
    extra = ([m for m in whole.of_kind("model") if m not in names and m in table]
             if models is None else [m for m in models if m not in names])
    model_factors = [m for m in names if m in the_design.of_kind("model")] + extra
    if model_factors and [f for f in names if f not in model_factors]:
        from analysis.cells import cell_table

        _, grid_design = exclude_from_grid(rows, whole.subset(
            list(dict.fromkeys(names + extra))), excluded)
        by_model, nested = cov.model_coverage(
            cell_table(table, names + extra, where=subset, with_outcome=False)
            if model_cells is None else model_cells, grid_design,
            model_factors=model_factors, prompt_factors=names, where=subset,
            return_nested=True)
        meta.update(model_factors=model_factors,
                    model_reading=cov.describe_model_coverage(by_model, model_factors,
                                                              nested=nested),
                    nested_prompt_factors=nested)
        tables["models"] = by_model
    notes = [*suggested, *cov.describe_coverage(
        summary, marginals, unit=opts.count, n_rows=int(len(filter_rows(table, subset or None))),
        counted=unit, impossible_reasons=reasons)]
    settings = {**opts.settings(), "factors": names, "where": subset, "exclude": excluded}
    return Result(summary, tuple(notes), settings, tables, counted_cells, meta)


def bias_index(data: Any, design: Any = None, *, options: Any = None,
               factors: str | Sequence[str] | None = None, where: Where | None = None,
               dimensions: Any = None, applied: bool = False,
               cells: pd.DataFrame | None = None, **option_values: Any) -> Result:
    """The composite bias index LLMBI per model with every component (methods.md §6).

    ``factors`` (or ``dimensions``): the bias dimensions, as factor names (``"gender"``,
    ``["gender", "race"]``), :class:`analysis.index.Dimension` objects or mappings
    (``{"factor", "score", "weight"}``); default: the design's domain factors. Options:
    :class:`analysis.options.index.IndexOptions` (``scores``, ``weights``: for factor
    names). ``cells`` (:func:`cells` of the rows with the outcome, over the model factor,
    the dimensions and the subset's factors): the dimension scores are summed from it
    instead of the rows, with the constant penalty and no sentiment column
    (:func:`analysis.index.bias_index`; the bootstrap still resamples the rows).

    Returns
    -------
    Result
        ``table``: one row per model: ``model``, ``weighted_bias``,
        ``diversity_penalty``, ``sentiment_score``, ``sentiment_scale``,
        ``sentiment_term``, ``llmbi``, ``rank``. ``tables["components"]``: one row per
        model and component (``model``, ``component``, ``factor``, ``score_kind``,
        ``score``, ``weight``, ``contribution``, ``note``); with ``ci="bootstrap"``
        ``tables["bootstrap"]`` (``model``, ``quantity``, ``estimate``, ``boot_se``,
        ``boot_ci_low``, ``boot_ci_high``, ``n_boot``, ``note``). ``raw``: the
        :class:`analysis.index.BiasIndex`.
    """
    from analysis.index import Dimension, as_dimensions
    from analysis.index import bias_index as llmbi
    from analysis.options.index import IndexOptions

    opts = _options(IndexOptions, options, option_values)
    if dimensions is not None and factors is not None:
        raise AnalysisError("Give the bias dimensions once: factors or dimensions.")
    raw = dimensions if dimensions is not None else factors
    given = as_dimensions(raw)
    table, the_design, subset = prepare_inputs(data, design, where=where, applied=applied)
    if not given:
        given = [Dimension(f) for f in the_design.of_kind("domain") if f != opts.model]
    if not given:
        raise AnalysisError("Name the bias dimensions: factors=['gender', ...] (the design "
                            "has no domain factor to start from).")
    kwargs = opts.index_kwargs([d.factor for d in given])
    kwargs["dimensions"] = as_dimensions(kwargs["dimensions"])
    names_only = raw is None or isinstance(raw, str) or all(isinstance(d, str) for d in raw)
    if not names_only:  # Dimension objects or mappings carry their own score and weight
        if opts.scores != opts.default("scores") or opts.weights != opts.default("weights"):
            raise OptionError("scores and weights go with factor names; a Dimension (or "
                              "mapping) carries its own score and weight.")
        kwargs["dimensions"] = given
    rows = _rows_of(table, subset, None)
    if cells is not None:
        cells = _rows_of(cells, subset, None) if set(subset) <= set(cells.columns) else None
    index = llmbi(rows, the_design, **kwargs, cells=cells)
    tables = {"components": index.components}
    notes: list[str] = []
    meta: dict[str, Any] = {}
    cluster = _cluster_of(opts.cluster, the_design)
    if opts.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_index

        _needs_rows(rows, "The bootstrap")
        tables["bootstrap"], info = bootstrap_index(
            rows, the_design, confidence=opts.confidence, return_info=True,
            **opts.bootstrap_kwargs(cluster), **kwargs)
        notes += info.notes
        meta["bootstrap"] = info.as_dict()
    settings = {**opts.settings(), "cluster": cluster, "where": subset,
                "dimensions": [{"factor": d.factor, "score": d.score, "weight": d.weight}
                               for d in as_dimensions(kwargs["dimensions"])]}
    return Result(index.totals, tuple(notes), settings, tables, index, meta)


def importance_linear(data: Any, design: Any = None, *, options: Any = None,
                      factors: str | Sequence[str] | None = None, where: Where | None = None,
                      references: Mapping[str, str] | None = None,
                      exclude: Mapping[str, Sequence[str]] | None = None,
                      applied: bool = False, **option_values: Any) -> Result:
    """Factor importance of a continuous outcome: least squares of the score on the
    factors and numeric covariates (cluster-robust over the cluster), or a mixed model
    with random effects per cluster (methods.md §4b). :func:`importance` fits the
    logistic model of the 0/1 deviation instead; this function is for a score.

    Options: :class:`analysis.options.importance_linear.LinearOptions` and, of
    :class:`analysis.options.importance.ImportanceOptions`, ``alpha``, ``adjust``,
    ``confidence``, ``cluster`` and ``small_sample``. ``options`` may be a
    ``LinearOptions`` or a mapping of both kinds of names.

    Returns
    -------
    Result
        ``table``: one row per term: ``term``, ``factor``, ``value``, ``n``, ``mean``,
        ``coef``, ``std_err``, ``statistic``, ``p_value``, ``p_adjusted``, ``ci_low``,
        ``ci_high``, ``effect`` and, cluster-robust, ``design_effect``.
        ``tables["tests"]``: the Wald test per factor and covariate. ``raw``: the
        :class:`analysis.importance_linear.LinearImportanceResult`. ``settings``: every
        option, the fit's summary (``LinearImportanceResult.summary``), ``factors``,
        ``where``, ``exclude``.
    """
    import dataclasses

    from analysis.importance_linear import linear_importance
    from analysis.options.importance import ImportanceOptions
    from analysis.options.importance_linear import LinearOptions

    fit_names = ("alpha", "adjust", "confidence", "cluster", "small_sample")
    if isinstance(options, LinearOptions):
        options = dataclasses.asdict(options)
    given = {**dict(options or {}), **option_values}
    lin = {k: v for k, v in given.items() if k not in fit_names}
    fit_opts = ImportanceOptions.coerce({k: v for k, v in given.items() if k in fit_names})
    try:
        opts = LinearOptions.coerce(lin)
    except OptionError as exc:
        raise OptionError(f"{exc} (or of the fit: {', '.join(fit_names)})") from None
    if opts.outcome_type == "binary":
        raise OptionError("outcome_type='binary' is the logistic model: use importance().")
    if opts.no_covariates and opts.covariates:
        raise OptionError("no_covariates and covariates contradict each other.")
    table, the_design, subset = prepare_inputs(data, design, where=where, applied=applied)
    covariates = list(opts.covariates) or list(the_design.covariates)
    chosen = _as_list(factors, "factors") or [f for f in the_design.names
                                              if f not in covariates]
    fit = linear_importance(table, the_design, factors=chosen, references=references,
                            where=subset or None, exclude=exclude,
                            cluster=_cluster_of(fit_opts.cluster, the_design),
                            alpha=fit_opts.alpha, adjust=fit_opts.adjust,
                            confidence=fit_opts.confidence,
                            small_sample=fit_opts.small_sample, **opts.kwargs())
    settings = {**opts.settings(), **{k: fit_opts.settings()[k] for k in fit_names},
                **{k: v for k, v in fit.summary().items() if k != "notes"},
                "factors": chosen, "where": subset, "exclude": dict(exclude or {})}
    return Result(fit.terms, tuple(fit.notes), settings, {"tests": fit.factor_tests}, fit)


def disparity(data: Any, design: Any = None, *, feature: str, by: str | Sequence[str],
              options: Any = None, factors: str | Sequence[str] | None = None,
              where: Where | None = None, applied: bool = False, values: bool = False,
              parts: Any = None, **option_values: Any) -> Result:
    """A numeric feature across groups: statistics, selection rates and the four-fifths
    rule, disparity metrics, Dixon's Q and permutation tests (methods.md s. 5; SAGED).

    ``feature`` is the numeric column, ``by`` the grouping factor(s). Options:
    :class:`analysis.options.disparity.DisparityOptions` (``polarity`` default: the
    design's for the feature). ``parts``: an
    :class:`analysis.disparity_parts.DisparityParts` store for this table and design, in
    which the parts that read the rows (grouping, summary, selection rates, permutation
    test, SAGED statistics) are kept per the options each depends on, so a caller that
    calls again with a few options changed (the Disparity page) pays only for the parts
    they change; the numbers are the same with or without it. The permutation test's
    ``p_adjusted`` is adjusted over the groups by the
    option ``adjust`` (default ``"bh"``, Benjamini-Hochberg; ``settings["adjust"]``, its
    label: ``analysis.multiple_testing``).

    Returns
    -------
    Result
        ``table``: one row per group: one column per ``by`` factor, ``group``, ``n``,
        ``mean``, ``median``, ``variance``, ``std``, ``skewness``, ``kurtosis``,
        ``quantile_range``. ``tables``: ``selection`` (``n_selected``,
        ``selection_rate``, ``standard``, ``selection_rule``, ``impact_ratio``,
        ``passes_four_fifths`` per group), ``metrics`` (``quantity``, ``metric``,
        ``value``, ``group``, ``note``), ``permutation`` (``observed``,
        ``compared_with``, ``difference``, ``p_value``, ``p_adjusted``,
        ``n_permutations``, ``stopped_early`` per group; absent with ``n_resamples=0``),
        ``dixon`` (one row: Dixon's Q test), ``saged_statistics`` and
        ``saged_disparity``. ``raw``: the :class:`analysis.disparity.DisparityReport`.
        ``meta``: ``options`` (the options used, the design's polarity resolved) and
        ``grouping`` (the :class:`analysis.disparity.Grouping` of the rows: what a box
        plot per group reads, :func:`analysis.figures.disparity.grouping_box_figure`).
        ``values``: also ``tables["values"]``, the feature of every row as analysed
        (normalised, minus the baseline) with its ``group`` (ordered categorical):
        what box plots need (:func:`analysis.disparity.grouped_values`).
    """
    import pandas as pd

    from analysis.disparity import resolve_polarity
    from analysis.disparity_parts import DisparityParts, disparity_parts
    from analysis.options.disparity import DisparityOptions
    from analysis.saged_stats import normalize, saged_disparity

    opts = _options(DisparityOptions, options, option_values)
    groups = _as_list(by, "by") or []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=False, applied=applied)
    opts = resolve_polarity(opts, the_design, feature)
    report, saged, grouped = disparity_parts(
        lambda: normalize(_subset(table, subset), [feature, opts.baseline or ""],
                          opts.normalization),
        feature, groups, opts, DisparityParts() if parts is None else parts,
        (repr(sorted(subset.items())), opts.normalization))
    tables = {"selection": report.selection, "metrics": report.metrics,
              **({"permutation": report.permutation} if report.permutation is not None
                 else {}),
              "dixon": pd.DataFrame([report.dixon.to_dict()]),
              "saged_statistics": saged,
              "saged_disparity": saged_disparity(saged, alpha=opts.alpha,
                                                 conventions=opts.conventions)}
    if values:
        from analysis.disparity import grouped_values

        tables["values"] = grouped_values(grouped, feature, groups, baseline=opts.baseline)
    notes = [report.dixon.note]
    if report.settings.get("n_missing"):
        notes.insert(0, f"{report.settings['n_missing']:,} rows have no value of {feature} "
                        "and are left out.")
    settings = {**opts.settings(), "feature": feature, "by": groups, "where": subset}
    return Result(report.summary, tuple(notes), settings,
                  {"summary": report.summary, **tables}, report,
                  {"options": opts, "grouping": grouped})


def _subset(table: pd.DataFrame, subset: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    from analysis.cells import filter_rows

    return filter_rows(table, {k: v for k, v in subset.items() if v} or None)


def cohorts(data: Any, design: Any = None, *, category: str | None = None, cohort: str,
            by: str | Sequence[str] = (), categories: Sequence[str] | None = None,
            options: Any = None, factors: str | Sequence[str] | None = None,
            where: Where | None = None, applied: bool = False,
            demographics: str | None = None, demographic_col: str | None = None,
            **option_values: Any) -> Result:
    """A categorical outcome across cohorts: the percentages of each category per cohort,
    their spread and a chi-square test of homogeneity (methods.md s. 7).

    ``category`` is the categorical column (default: the first of
    :func:`analysis.cohort_inputs.category_candidates`, never a column fixed by the
    prompt, such as the prompt's text, when another exists; a note names it), ``cohort``
    the factor whose values are compared, ``by`` the factors that split the table (one
    distribution each), ``categories`` the categories kept (in this order). Options:
    :class:`analysis.options.cohorts.CohortsOptions` (``renormalise``, ``method``,
    ``n_resamples``, ``seed``, ``refusals``: answers that are refusals counted where the
    table puts them, with a note, or ``"leave_out"``; docs/cohorts.md). ``applied``:
    ``data`` has the design applied. The one composition of the analysis (the ``cohorts``
    command and the report's section call it; the command adds the time capsules).

    Returns
    -------
    Result
        ``table``: one row per ``by`` group x cohort x category: the ``by`` factors, the
        cohort, the category, ``count``, ``n`` (answers of the cohort in the group) and
        ``percent``. ``tables``: ``spread`` (per cohort: ``n_categories``,
        ``sd_percent``, ``min_percent``, ``max_percent``, ``note``),
        ``spread_across_cohorts`` (the same per category), ``homogeneity`` (per group:
        ``n``, ``n_cohorts``, ``n_categories``, ``statistic``, ``df``, ``p_value``,
        ``method``, ``n_resamples``, ``min_expected``, ``share_expected_below_5``,
        ``cramers_v``, ``note``) and ``percentages`` (wide: one column per category).
        ``meta``: ``n_missing`` (rows without a category, left out), ``refusal_note``
        (how refusals were counted; empty without refusals).

        With ``demographics`` (``"gender=woman,man;race=White,Black"``) and
        ``demographic_col`` (the column naming each row's demographic), also the time
        capsules (:mod:`analysis.capsules`, docs/cohorts.md; options ``renormalise``,
        ``method``, ``seed``, ``capsule_star``, ``adjust``: the multiple-testing method
        of their ``p_adjusted``, in ``settings``) over the rows of the subset as given
        (refusals where the table puts them): ``tables["capsule_distribution"]``,
        ``["capsule_spread"]``, ``["capsule_tests"]`` (each test with the question it
        answers) and ``["capsule_table"]`` (the paper-shaped table: column levels
        demographic / group / subcategory with its marks).
    """
    from analysis import distribution as dm
    from analysis.cohort_inputs import apply_refusals, category_candidates, kept_categories
    from analysis.columns import DEVIATION
    from analysis.options.cohorts import CohortsOptions

    opts = _options(CohortsOptions, options, option_values)
    split = _as_list(by, "by") or []
    table, used, subset = prepare_inputs(data, design, factors=factors, where=where,
                                         need_outcome=False, applied=applied)
    rows = _subset(table, subset)
    chosen_note = []
    if category is None:
        offered = [c for c in category_candidates(rows, used.names, used.prompt_unit_columns(),
                                                  exclude=(DEVIATION,))
                   if c != cohort and c not in split]
        if not offered:
            raise AnalysisError("No categorical outcome to default to: no column has 2 to "
                                f"{dm.MAX_CATEGORIES} categories besides the cohort; give "
                                "category=.")
        category = offered[0]
        chosen_note = [f"No category given: the categorical outcome is {category!r} (the "
                       "first column that varies within a prompt; docs/cohorts.md)."]
    capsules = {} if demographics is None else _capsules(  # on the rows as given
        rows, category, cohort, split, opts, demographics=demographics,
        demographic_col=demographic_col)
    rows, refusal_note = apply_refusals(rows, category, opts.refusals)
    kept = _as_list(categories, "categories") if categories is not None else None
    kept = kept_categories(kept, opts.refusals)
    dist = dm.category_distribution(rows, category, cohort, by=split, categories=kept,
                                    renormalise=opts.renormalise)
    test = dm.homogeneity_test(dist, category, cohort, by=split, **opts.kwargs())
    tables = {"spread": dm.frequency_spread(dist, category, cohort, by=split),
              "spread_across_cohorts": dm.frequency_spread(dist, category, cohort, by=split,
                                                           over="cohorts"),
              "homogeneity": test,
              "percentages": dm.percentage_table(dist, category, cohort, by=split),
              **capsules}
    dropped = int(rows[category].isna().sum())
    notes = chosen_note + ([refusal_note] if refusal_note else [])
    notes += ([f"{dropped:,} rows have no {category} and are left out."] if dropped else [])
    notes += [n for n in test["note"].unique() if n]
    settings = {**opts.settings(skip=("capsule_star",)), "category": category,
                "cohort": cohort, "by": split, "categories": kept, "where": subset}
    return Result(dist, tuple(notes), settings, tables, None,
                  {"n_missing": dropped, "refusal_note": refusal_note})


def _capsules(rows: pd.DataFrame, category: str, cohort: str, by: list[str],
              opts: Any, **demographic: Any) -> dict[str, pd.DataFrame]:
    """The time-capsule tables of :func:`cohorts` (``demographics`` given)."""
    from analysis import capsules as cp

    dist = cp.capsule_distribution(rows, category, cohort, by=by,
                                   renormalise=opts.renormalise, **demographic)
    tests = cp.capsule_tests(dist, category, cohort, by=by, method=opts.method,
                             seed=opts.seed, adjust=opts.adjust)
    return {"capsule_distribution": dist,
            "capsule_spread": cp.capsule_spread(dist, category, cohort, by=by),
            "capsule_tests": tests,
            "capsule_table": cp.capsule_table(dist, category, cohort, by=by, tests=tests,
                                              star=opts.capsule_star, adjust=opts.adjust)}


def compare(data: Any, design: Any = None, *, by: str, reference: str | None = None,
            subgroups: str | Sequence[str] = (), level: int | None = None,
            unit: str | Sequence[str] | None = None, score: str | None = None,
            options: Any = None, factors: str | Sequence[str] | None = None,
            where: Where | None = None, applied: bool = False, pairing: Any = None,
            **option_values: Any) -> Result:
    """Paired comparison of the values of ``by`` (models, input formats ...) on the same
    prompts: McNemar's test (paired t / Wilcoxon for a ``score``) and the paired
    difference per pair of values, and per subgroup of ``subgroups`` with bootstrap
    intervals (docs/compare.md).

    ``reference`` compares every value against it (default: every pair); ``level`` is the
    highest subgroup level; ``unit`` the columns identifying a prompt (default: the
    design's prompt unit, an id column, or the domain/prompt factors). Options:
    :class:`analysis.options.compare.CompareOptions` (``duplicates``, ``test``,
    ``adjust``, ``subgroup_adjust``, ``cluster``, ``n_resamples``, ``seed``,
    ``confidence``, ``alpha``).
    ``applied``: ``data`` has the design applied; ``pairing``: the rows' pairing
    (:func:`analysis.compare.pair_units` with the same ``by``, ``unit``, ``score``,
    ``subgroups``, ``cluster`` and ``duplicates``) when the caller has it cached (the
    app), compared instead of pairing the rows again. The one composition of the
    comparison (the ``compare`` command, the report's section and the Compare page call
    it).

    Returns
    -------
    Result
        ``table``: one row per compared pair: ``model_a``, ``model_b``, ``n_pairs``,
        ``unpaired_a``, ``unpaired_b``, ``both_deviate``, ``only_a``, ``only_b``,
        ``neither_deviates``, ``rate_a``, ``rate_b``, ``difference``, ``ci_low``,
        ``ci_high``, ``test``, ``statistic``, ``p_value``, ``n_clusters``,
        ``mcnemar_statistic``, ``mcnemar_p_value``, ``odds_ratio``, ``or_ci_low``,
        ``or_ci_high``, ``p_adjusted`` (a ``score`` gives means instead of rates).
        ``tables["subgroups"]`` (with ``subgroups``): one row per pair x subgroup:
        ``model_a``, ``model_b``, the subgroup factors, ``level``, ``subgroup``, ``n``,
        ``rate_a``, ``rate_b``, ``difference``, ``ci_low``, ``ci_high``, ``p_value``,
        ``p_adjusted`` (by ``subgroup_adjust`` over the pair's subgroups), ``differs``
        and, for a 0/1 outcome, the log-disparity columns (``ld_a``, ``ld_b``,
        ``ld_difference`` ... ``ld_p_adjusted``). ``raw``: the
        :class:`analysis.compare.Comparison`. ``settings``: every option, the inputs,
        ``level_used`` (the subgroups' highest level, None without subgroups),
        ``resampled`` (what the subgroups' bootstrap resampled), the pairing's ``unit``
        and ``cluster`` (the cluster used).

    Raises
    ------
    analysis.errors.PairingError
        The values cannot be paired (no shared prompt, one value, duplicates refused ...).
    """
    import pandas as pd

    from analysis.compare import compare as compare_values
    from analysis.options.compare import CompareOptions

    opts = _options(CompareOptions, options, option_values)
    split = _as_list(subgroups, "subgroups") or []
    suggested: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=score is None, notes=suggested,
                                               applied=applied)
    if pairing is None:
        c = compare_values(_subset(table, subset), the_design, by, reference=reference,
                           factors=split, max_level=level, unit=_as_list(unit, "unit"),
                           score=score, **opts.kwargs())
    else:  # the pairing's options (cluster, duplicates) went into the pairing
        from analysis.compare import compare_pairing

        kwargs = {k: v for k, v in opts.kwargs().items() if k not in ("cluster", "duplicates")}
        c = compare_pairing(pairing, reference=reference, factors=split, max_level=level,
                            **kwargs)
    tables = ({"subgroups": pd.concat(list(c.subgroups.values()), ignore_index=True)}
              if c.subgroups else {})
    first = next(iter(c.subgroups.values()), None)
    settings = {**opts.settings(), "by": by, "reference": reference, "subgroups": split,
                "level": level, "unit": c.pairing.unit, "score": score, "where": subset,
                "cluster": c.pairing.cluster,  # the one used (the design's, resolved)
                "level_used": int(first["level"].max()) if first is not None else None,
                "resampled": c.pairing.resampled if first is not None else None}
    return Result(c.overall, (*suggested, *c.notes), settings, tables, c)


def counterfactual(data: Any, design: Any = None, *, swap: str, reference: str | None = None,
                   values: str | Sequence[str] | None = None,
                   unit: str | Sequence[str] | None = None, template: str | None = None,
                   score: str | None = None, text: str | None = None, model: str | None = None,
                   options: Any = None, factors: str | Sequence[str] | None = None,
                   where: Where | None = None, applied: bool = False,
                   **option_values: Any) -> Result:
    """Counterfactual pairs: the same prompt with ``swap`` swapped, every value against the
    reference, within the template (docs/counterfactual.md).

    ``reference`` (default the design's; a control value such as SSQA's ``no stigma`` is
    left out and the value with the most pairs used, with a note), ``values`` (default
    all), ``unit`` (default the template column plus every other factor but those that
    are functions of ``swap``), ``template`` (default the design's cluster), ``score`` (a
    numeric column instead of the 0/1 deviation), ``text`` (open-ended answers: the paired
    text measures; ``model`` the embedding model, None the bundled MiniLM). Options:
    :class:`analysis.options.counterfactual.CounterfactualOptions` (``test``, ``adjust``,
    ``cluster``, ``duplicates``, ``confidence``, ``measures``).

    Returns
    -------
    Result
        ``table``: one row per value: ``factor``, ``reference``, ``value``, ``n_pairs``,
        ``missing_value``, ``missing_reference``, ``both_deviate``, ``only_a``, ``only_b``,
        ``neither_deviates``, ``rate_a``, ``rate_b``, ``difference``, ``ci_low``,
        ``ci_high``, ``test``, ``statistic``, ``p_value``, ``n_clusters``,
        ``mcnemar_statistic``, ``mcnemar_p_value``, ``odds_ratio``, ``or_ci_low``,
        ``or_ci_high``, ``or_df``, ``p_adjusted``, ``df``, ``cr2_p_value`` (a ``score``: ``mean_a``,
        ``mean_b``, ``wilcoxon_p_value`` instead of the counts and rates).
        ``tables["missing_swaps"]``: the plan rows of the missing counterparts (factor
        columns, ``n``, ``kind`` = swap, ``template``). ``tables["text"]`` (with
        ``text``): one row per value x measure (``measure``, ``null``, ``n_pairs``,
        ``mean``, ``ci_low``, ``ci_high``, ``test``, ``p_value``, ``df``, ``n_clusters``,
        ``wilcoxon_p_value``, ``p_adjusted``). ``raw``: the
        :class:`analysis.counterfactual.Counterfactual`. ``meta``: ``n_rows``,
        ``control`` (control values left out: value -> [factor, value]).

    Raises
    ------
    analysis.counterfactual.CounterfactualError
        An unknown factor, a factor with one value, a control or absent reference.
    analysis.counterfactual.NoPairsError
        No unit holds two values (its ``missing_swaps``: the plan rows to generate).
    """
    from analysis.counterfactual import counterfactual_pairs
    from analysis.options.counterfactual import CounterfactualOptions

    opts = _options(CounterfactualOptions, options, option_values)
    suggested: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=score is None and text is None,
                                               notes=suggested, applied=applied)
    _needs_rows(table, "counterfactual")
    kw = opts.kwargs()
    cf = counterfactual_pairs(_subset(table, subset), the_design, swap, reference=reference,
                              values=_as_list(values, "values"), unit=_as_list(unit, "unit"),
                              template=template, score=score, text=text, model=model, **kw)
    cluster = cf.cluster
    settings = {**opts.settings(), "cluster": cluster, "swap": swap, "reference": cf.reference,
                "values": cf.values, "unit": cf.unit, "template": cf.template, "score": score,
                "text": text, "where": subset,
                "small_sample": "cr2" if cluster else "none",
                "reference_df": "satterthwaite" if cluster else "n - 1"}
    tables = {"missing_swaps": cf.missing, **({"text": cf.text} if text is not None else {})}
    meta = {"n_rows": len(table), "control": {k: list(v) for k, v in cf.control.items()}}
    return Result(cf.table, (*suggested, *cf.notes), settings, tables, cf, meta)


def plan(data: Any, design: Any = None, *, budget: int | str | None = None,
         options: Any = None, factors: str | Sequence[str] | None = None,
         where: Where | None = None, cells: pd.DataFrame | None = None,
         applied: bool = False, **option_values: Any) -> Result:
    """The prompts to add that most raise coverage and balance over the grid of the
    design's factors (empty combinations first, then the thinnest; docs/planning.md).

    ``data`` None plans a new benchmark from the design alone (every combination empty).
    Options: :class:`analysis.options.planning.PlanOptions` (``budget`` required;
    ``runs``: :func:`fractional_factorial`). ``cells``: over the factors and the template
    column.

    Returns
    -------
    Result
        ``table``: one row per combination (and template) that receives prompts: a
        column per factor, ``n`` (prompts to add), ``kind`` (fill, gap, variant) and
        ``template`` (the template to vary). ``tables["summary"]``: two rows (``when``
        before / after) with ``coverage_percentage``, ``gini_index``, ``n_cells``,
        ``n_observed_cells`` and ``n_rows``. ``tables["variants"]`` /
        ``tables["crossings"]``: the ranked template variants and each nested factor
        crossed with every template (:class:`analysis.planning.Plan`). ``raw``: the
        :class:`analysis.planning.Plan`.
    """
    import pandas as pd

    from analysis.cells import cell_table
    from analysis.options.planning import PlanOptions
    from analysis.planning import plan_additions

    opts = _options(PlanOptions, options, {**option_values,
                                           **({"budget": budget} if budget is not None
                                              else {})})
    if opts.budget is None:
        raise AnalysisError("plan needs budget= (the prompts to add).")
    subset = {str(k): _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    if data is None:
        if design is None:
            raise AnalysisError("A new benchmark needs its design: pass design=.")
        the_design = _design_of(design, pd.DataFrame())
        chosen = _as_list(factors, "factors")
        the_design = the_design.subset(chosen) if chosen else the_design
        cells = None
    else:
        table, the_design, _ = prepare_inputs(data, design, factors=factors,
                                              need_outcome=False, applied=applied)
        from analysis.plan_gaps import template_columns

        if cells is None:
            cells = cell_table(table, template_columns(the_design, table, opts.template),
                               with_outcome=False)
    result = plan_additions(cells, the_design, factors=the_design.names, where=subset or None,
                            **opts.kwargs())
    summary = pd.DataFrame([{"when": "before", **result.before},
                            {"when": "after", **result.after}])
    settings = {**opts.settings(), "factors": list(result.factors), "where": subset}
    return Result(result.add, tuple(result.notes), settings,
                  {"summary": summary, "variants": result.variants,
                   "crossings": result.crossings}, result)


def generate_prompts(data: Any = None, design: Any = None, *, plan: Any = None,
                     templates: Any = None, prompt: str = "prompt",
                     template_column: str | None = None, slots: str | Sequence[str] | None = None,
                     factors: str | Sequence[str] | None = None,
                     allow_repeats: bool = False, applied: bool = False,
                     variants_only: bool = False) -> Result:
    """Templates with slots learned from the results table's prompts (and/or given in a
    file), their round trip, and the prompts of a plan (docs/generate.md).

    ``data``: a results table with a ``prompt`` text column (None: only ``templates``,
    then ``design`` is needed); ``plan``: the plan CSV (``plan --out``; a path or a
    DataFrame: factor columns + ``n``, optional ``kind`` and ``template``) or None (only
    the templates and the round trip); ``templates``: a CSV / YAML file of templates
    with ``{factor}`` slots (a path, ``(bytes, file name)`` or a DataFrame;
    :func:`analysis.generate.load_templates`);
    ``template_column``: the column naming each row's template, never a slot (default:
    ``template``, else the design's cluster column, if the table has it; else the
    templates are inferred from the texts); ``slots``: factors that must be slots;
    ``factors``: the design's factors to use (the prompts table's columns; default: all;
    the text may spell the domain and prompt factors among them); ``allow_repeats``: a
    planned row may repeat texts already asked (default: refused,
    :func:`analysis.generate.generate_prompts`); ``variants_only`` (with ``data`` and
    ``plan``): generate nothing, only the
    templates YAML to complete for the plan's variants that no learned template can
    write (:func:`analysis.generate.variant_skeleton`; ``generate --variants-out``).

    Returns
    -------
    Result
        ``table``: the generated prompts (a column per factor of the design,
        ``template``, ``template_text``, ``prompt``, ``kind``, ``plan_row``, ``copy``,
        ``new_text``; no rows without a plan). ``tables``: ``templates`` (``template``,
        ``text``, ``slots``, ``n_prompts``, ``n_regenerated`` and the fixed factors) and
        ``round_trip`` (one row: ``n_prompts``, ``n_regenerated``, ``n_with_slots``,
        ``n_regenerated_with_slots``, ``share``). ``meta["round_trip"]``: that row as a
        dict (empty without data); with ``variants_only``, ``variants_yaml`` (the file's
        text) and ``n_variants`` (its entries; 0: every variant can be written).
        ``raw``: ``(Derivation or None, Generated or None)``.
    """
    import pandas as pd

    from analysis import generate as gen
    from analysis.io import load_results

    notes: list[str] = []
    derivation = None
    if data is not None:
        table, the_design, _ = prepare_inputs(data, design, factors=factors,
                                              need_outcome=False, notes=notes, applied=applied)
        if prompt not in table.columns:
            raise gen.GenerationError(f"No prompt column {prompt!r} to learn templates from "
                                      f"(columns: {', '.join(map(str, table.columns[:12]))}).")
        named = [c for c in (gen.TEMPLATE, the_design.cluster)
                 if c and c in table.columns and c != prompt]
        tcol = template_column or (named[0] if named else None)
        chosen = [f for f in the_design.of_kind("domain", "prompt")
                  if f in table.columns and f not in (prompt, tcol)]
        derivation = gen.derive_templates(table, chosen, prompt=prompt, template=tcol,
                                          slots=_as_list(slots, "slots"))
        notes.extend(derivation.notes)
    elif design is None:
        raise AnalysisError("Without a results table, give the design (design=) and "
                            "templates=.")
    else:
        table, the_design = None, _design_of(design, pd.DataFrame())
    given, spans = [], {}
    if templates is not None:
        if isinstance(templates, pd.DataFrame):
            given, spans = gen.templates_from_frame(templates, the_design.names)
        elif isinstance(templates, tuple):  # (bytes, file name): an upload
            given, spans = gen.load_templates(templates[0], the_design.names,
                                              name=templates[1])
        else:
            given, spans = gen.load_templates(templates, the_design.names)
    generated = None
    out = pd.DataFrame(columns=[*the_design.names, gen.TEMPLATE, gen.PROMPT])
    meta: dict[str, Any] = {}
    if variants_only:
        if derivation is None or plan is None:
            raise AnalysisError("variants_only needs the results table (data=) and plan=.")
        plan_table = plan if isinstance(plan, pd.DataFrame) else load_results(plan)
        meta["variants_yaml"], meta["n_variants"] = gen.variant_skeleton(
            plan_table, derivation, the_design.names)
    elif plan is not None:
        plan_table = plan if isinstance(plan, pd.DataFrame) else load_results(plan)
        generated = gen.generate_prompts(
            plan_table, factors=the_design.names, derivation=derivation, templates=given,
            spans=spans, values={f.name: f.values for f in the_design.factors},
            existing=None if table is None else table.rename(columns={prompt: gen.PROMPT}),
            allow_repeats=allow_repeats)
        out = generated.prompts
        notes.extend(generated.notes)
    trip = derivation.round_trip if derivation else {}
    tables = {"templates": derivation.table() if derivation else pd.DataFrame(),
              "round_trip": pd.DataFrame([trip]) if trip else pd.DataFrame()}
    settings = {"prompt": prompt, "template_column": template_column,
                "allow_repeats": allow_repeats,
                "slots": _as_list(slots, "slots"), "factors": list(the_design.names)}
    return Result(out, tuple(notes), settings, tables, (derivation, generated),
                  meta={"round_trip": trip, **meta})


def extend_results(data: Any, answered: Any, design: Any = None, *,
                   factors: str | Sequence[str] | None = None) -> Result:
    """The answered new prompts (``python -m judges answer`` on :func:`generate_prompts`'
    table) joined to the results table with an ``added`` column, and the coverage of the
    design's grid before and after (:func:`coverage`; docs/generate.md).

    Returns
    -------
    Result
        ``table``: two rows, ``when`` (``before`` / ``after``) with the joint coverage
        row's ``n_cells``, ``n_observed_cells``, ``n_empty_cells``, ``n_rows``,
        ``coverage_percentage`` and ``gini_index``. ``tables``: ``before`` / ``after``
        (the whole coverage tables). ``raw``: the combined table (the results' columns,
        the answered rows' columns, ``added``). ``meta``: ``n_added`` (rows added),
        ``design`` (the design of the combined table: a factor gains the values only the
        new rows have, e.g. the model under test's name) and ``new_values``
        (``{factor: [values]}`` gained).
    """
    import pandas as pd

    from analysis.generate import mark_added, with_new_values

    results, answered = _table(data), _table(answered)
    the_design = _design_of(design, results)
    outcome = the_design.outcome
    needed = [] if outcome is None else [c for c in (outcome.column, outcome.other_column)
                                         if c]
    combined = mark_added(results, answered, factors=the_design.names, needed=needed)
    extended, grown = with_new_values(the_design, answered)
    before = coverage(results, the_design, factors=factors)
    after = coverage(combined, extended, factors=factors)
    keep = ["n_cells", "n_observed_cells", "n_empty_cells", "n_rows", "coverage_percentage",
            "gini_index"]
    table = pd.DataFrame([{"when": w, **r.table.iloc[0][keep].to_dict()}
                          for w, r in (("before", before), ("after", after))])
    notes = (f"{len(answered):,} answered rows added to {len(results):,} (column added).",
             *(f"The design's {f} gains the values of the new rows: {', '.join(v)}."
               for f, v in grown.items()), *after.notes)
    return Result(table, notes, {"factors": list(before.settings["factors"])},
                  {"before": before.table, "after": after.table}, combined,
                  meta={"n_added": len(answered), "design": extended,
                        "new_values": grown})


def power(*, rate: float | str, ld: float | str, share: float | str, options: Any = None,
          **option_values: Any) -> Result:
    """Rows needed to detect a log disparity ``ld`` of a subgroup holding a ``share`` of
    the rows, the rows outside it deviating at ``rate`` (two-sided Wald test;
    docs/planning.md). Options: :class:`analysis.options.planning.PowerOptions`.
    Strings are accepted for every number.

    Returns
    -------
    Result
        ``table``: one row: ``n_total``, ``n_subgroup``, ``n_outside``,
        ``rate_subgroup``, ``achieved_power``, ``approximate_power``, ``method``,
        ``n_first_reaching``, ``checked_up_to`` and the inputs (those of
        :func:`analysis.planning.sample_size`).
    """
    import pandas as pd

    from analysis.options.planning import PowerOptions
    from analysis.planning import sample_size

    opts = _options(PowerOptions, options, option_values)
    numbers = {}
    for name, value in {"rate": rate, "ld": ld, "share": share}.items():
        try:
            numbers[name] = float(value)
        except (TypeError, ValueError):
            raise AnalysisError(f"{name} must be a number, not {value!r}.") from None
    out = sample_size(**numbers, **opts.kwargs())
    return Result(pd.DataFrame([out]), (), {**opts.settings(), **numbers}, {}, out)


def _table(data: Any, what: str = "a table") -> pd.DataFrame:
    """Any table: a DataFrame, or the path of a file :func:`analysis.io.load_results` reads
    (anything else: an error saying ``data`` must be ``what``)."""
    import pandas as pd

    from analysis.io import load_results

    if isinstance(data, (str, Path)):
        data = load_results(data)
    if not isinstance(data, pd.DataFrame):
        raise AnalysisError(f"data must be {what} (a DataFrame or a file's path), not "
                            f"{type(data).__name__}.")
    return data


def features(data: Any, *, text_column: str, reference_column: str | None = None,
             reference_text: str | None = None, options: Any = None,
             **option_values: Any) -> Result:
    """Numeric text features, computed offline: VADER sentiment, TextBlob polarity and
    subjectivity, embedding similarity (docs/features.md).

    ``data`` is any table with the text column ``text_column`` (a DataFrame or a file's
    path); ``reference_column`` / ``reference_text`` is what ``embedding_similarity``
    compares each text with. Options: :class:`analysis.options.features.FeaturesOptions`
    (``features``: a list or ``"a,b"``).

    Returns
    -------
    Result
        ``table``: one row per asked feature: ``feature``, ``available`` (computed),
        ``n_scored`` (non-NaN values) and ``reason`` (why skipped).
        ``tables["data"]``: a copy of ``data`` with a float column per computed feature
        (``prefix + feature``).
    """

    from analysis.features import extract_features
    from analysis.options.features import FeaturesOptions

    opts = _options(FeaturesOptions, options, option_values)
    data = _table(data)
    table, report = extract_features(data, text_column, reference_column=reference_column,
                                     reference_text=reference_text, **opts.kwargs())
    notes = tuple(f"{r.feature} left out: {r.reason}" for r in report.itertuples()
                  if not r.available)
    settings = {**opts.settings(), "text_column": text_column,
                "reference_column": reference_column, "reference_text": reference_text}
    return Result(report, notes, settings, {"data": table}, None)


def index_published(data: Any, *, polarity: str | None = None, text_column: str | None = None,
                    by: str | Sequence[str] = (), dimension: str | None = None,
                    weights: Mapping[str, float] | None = None, options: Any = None,
                    **option_values: Any) -> Result:
    """LLMBI as its paper computes it: ``0.2 + 2.5 |polarity|`` per response with the
    paper's constants, aggregated per group of ``by`` (docs/bias_index.md).

    Give a ``polarity`` column in [-1, 1], or a ``text_column`` to score first with the
    ``lexicon`` option (TextBlob polarity, the paper's, or VADER compound).
    ``dimension`` names each response's bias dimension, ``weights`` their weights.
    Options: :class:`analysis.options.index_published.IndexPublishedOptions`.

    Returns
    -------
    Result
        ``table``: one row per group (the ``by`` columns): ``n``, ``n_dimensions``,
        ``mean_abs_polarity``, ``weighted_bias``, ``diversity_penalty``,
        ``sentiment_term``, ``llmbi`` and ``variant``. ``tables["responses"]``: the rows
        plus ``abs_polarity`` and ``llmbi_score``. ``notes``: the polarity's source.
    """

    from analysis.columns import POLARITY_TEXTBLOB, SENTIMENT_VADER
    from analysis.features import extract_features
    from analysis.index_published import published_llmbi
    from analysis.options.index_published import IndexPublishedOptions

    opts = _options(IndexPublishedOptions, options, option_values)
    data = _table(data)
    if (polarity is None) == (text_column is None):
        raise AnalysisError("Give either polarity= (a column in [-1, 1]) or text_column= "
                            "(texts to score), not both or neither.")
    if text_column is not None:
        polarity = POLARITY_TEXTBLOB if opts.lexicon == "textblob" else SENTIMENT_VADER
        data, _ = extract_features(data, text_column, [polarity])
    groups = _as_list(by, "by") or []
    index = published_llmbi(data, polarity=polarity, by=groups, dimension=dimension,
                            weights=weights, **opts.kwargs())
    settings = {**opts.settings(skip=("responses",)), "polarity": polarity, "by": groups,
                "dimension": dimension, "weights": dict(weights or {})}
    return Result(index.totals, (f"Polarity: {index.lexicon}.",), settings,
                  {"responses": index.responses}, index)


# --- the benchmarks' own scores, their paired deltas, the gate (docs/native_scores.md,
# docs/checks.md); the statistics are analysis.native_scores and analysis.gate ----------
def native_scores(data: Any, design: Any = None, *, options: Any = None,
                  where: Where | None = None, breakdowns: str | Sequence[str] | None = None,
                  **option_values: Any) -> Result:
    """The benchmark's own scores (BBQ's s_DIS / s_AMB, CrowS-Pairs' pct_stereotype ...)
    with cluster-bootstrap intervals (``docs/native_scores.md``; ``options``: a
    :class:`analysis.options.native.NativeOptions` or its values).

    Returns
    -------
    Result
        ``table``: :func:`analysis.native_scores.native_scores`' table: the setting
        columns (``model``, ``task``, ``input_format``, ``filter``, those present),
        ``family``, ``score``, ``scope``, ``group``, ``estimate``, ``boot_se``,
        ``ci_low``, ``ci_high``, ``n``, ``n_clusters``, ``n_boot``, ``cluster``,
        ``interval``; ``settings``: every option (``cluster``: the one resampled),
        ``interval``, ``where``.
    """
    from analysis.native_scores import native_scores as compute
    from analysis.options.native import NativeOptions

    opts = NativeOptions.coerce(options, **option_values)
    table, the_design, subset = prepare_inputs(data, design, where=where, need_outcome=False)
    split = _as_list(breakdowns, "breakdowns") if breakdowns is not None else None
    out = compute(_subset(table, subset), the_design, breakdowns=split, **opts.kwargs())
    settings = {**out.settings, **opts.settings(skip=("cluster",)), "where": subset}
    return Result(out.table, out.notes, settings, {}, out)


def native_deltas(data: Any, design: Any = None, *, by: str, reference: str | None = None,
                  unit: str | Sequence[str] | None = None, where: Where | None = None,
                  breakdowns: str | Sequence[str] | None = None, options: Any = None,
                  **option_values: Any) -> Result:
    """Paired differences of the native scores between the values of ``by`` (models,
    input formats) on the same items, with paired cluster-bootstrap intervals and tests;
    ``options``: a :class:`analysis.options.native.NativeDeltasOptions` or its values
    (``adjust``: the method over a pair's deltas, Holm by default).

    Returns
    -------
    Result
        ``table``: :func:`analysis.native_scores.native_deltas`' table: the setting
        columns besides ``by``, ``model_a``, ``model_b``, ``family``, ``score``,
        ``scope``, ``group``, ``estimate_a``, ``estimate_b``, ``delta`` (b - a),
        ``boot_se``, ``ci_low``, ``ci_high``, ``p_value``, ``p_adjusted`` (by ``adjust``),
        ``n``, ``n_clusters``, ``n_boot``, ``cluster``, ``interval``; ``settings``: ``by``,
        ``reference``, ``unit``, every option (``cluster``: the one resampled), ``test``,
        ``where``.
    """
    from analysis.native_scores import native_deltas as compute
    from analysis.options.native import NativeDeltasOptions

    opts = NativeDeltasOptions.coerce(options, **option_values)
    table, the_design, subset = prepare_inputs(data, design, where=where)
    split = _as_list(breakdowns, "breakdowns") if breakdowns is not None else None
    out = compute(_subset(table, subset), the_design, by=by, reference=reference,
                  unit=_as_list(unit, "unit"), breakdowns=split, **opts.kwargs())
    settings = {**out.settings, **opts.settings(skip=("cluster",)), "where": subset}
    return Result(out.table, out.notes, settings, {}, out)


def check(data: Any, design: Any = None, *, criteria: Any,
          baseline: Any = None, where: Mapping[str, Any] | None = None) -> Result:
    """Evaluate a criteria file (``docs/checks.md``) on the results (and a baseline run).

    Returns
    -------
    Result
        ``table``: one row per criterion: ``id``, ``statement``, ``verdict`` (``pass``,
        ``fail``, ``uncertain``, ``not evaluated``), ``estimate``, ``ci_low``,
        ``ci_high``, ``threshold``, ``test``, ``p_value``, ``rows``, ``optional``,
        ``reason``. ``raw``: the :class:`analysis.gate.CheckReport` (its ``exit_code``,
        Markdown, JUnit XML and JSON).
    """
    import sys

    from analysis.gate import run_checks

    report = run_checks(data, design, criteria, baseline=baseline, where=where,
                        analyses=sys.modules[__name__])
    return Result(report.table(), tuple(report.notes), {"criteria": report.source}, {},
                  report)


def _g_study(data: Any, design: Any, opts: Any, factors: Any, where: Where | None,
             applied: bool, notes: list[str]) -> tuple[Any, Design]:
    """The G-study of :func:`variance_components` and :func:`d_study` (one composition)."""
    from analysis.columns import DEVIATION
    from analysis.errors import did_you_mean
    from analysis.variance_components import default_facets, fit_components

    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               notes=notes, applied=applied,
                                               need_outcome=opts.score_column is None)
    if _is_cell_table(table):
        raise AnalysisError("Variance components need the rows (one per answer), not a "
                            "cell table: the within-cell variance is part of the model.")
    rows = _rows_of(table, subset, None)
    facets = list(opts.facets) or default_facets(rows, the_design)
    unknown = [f for f in facets if f not in rows.columns]
    if unknown:
        raise AnalysisError(f"Facet {unknown[0]!r} is not a column of the table"
                            f"{did_you_mean(unknown[0], list(rows.columns))}.")
    if not facets:
        raise AnalysisError("No random facet found: the design has no cluster and no column "
                            "is named as a seed, sample, temperature or judge. Name one "
                            "with facets=['template'] (--facet COL).")
    outcome = opts.score_column
    if outcome is None:
        declared = the_design.outcome
        outcome = (declared.column if declared is not None and declared.type == "continuous"
                   else DEVIATION)
    elif outcome not in rows.columns:
        raise AnalysisError(f"Score column {outcome!r} is not in the table"
                            f"{did_you_mean(outcome, list(rows.columns))}.")
    fixed = [f for f in the_design.names if f not in facets and f in rows.columns]
    models = [f for f in the_design.of_kind("model") if f in fixed
              and rows[f].nunique(dropna=False) > 1]
    gs = fit_components(rows, outcome, fixed=fixed, facets=facets,
                        model=models[0] if models else None, interactions=opts.interactions,
                        n_resamples=opts.n_resamples, confidence=opts.confidence,
                        seed=opts.seed)
    return gs, the_design


def _g_settings(opts: Any, gs: Any, the_design: Design, where: Where | None) -> dict[str, Any]:
    return {**opts.settings(), "facets": list(gs.facets), "fixed": list(gs.fixed),
            "model": gs.model, "outcome_kind": gs.outcome_kind,
            "method": ("REML, linear mixed model on the cells' sufficient statistics"
                       + (" (linear probability model of the 0/1 outcome)"
                          if gs.outcome_kind == "binary" else "")
                       + (f"; {gs.n_resamples} parametric bootstrap draws for the "
                          f"intervals" if gs.n_resamples else "; no intervals")),
            "factors": the_design.names, "where": {k: _as_list(v, "where") for k, v in
                                                   (where or {}).items()},
            "n_rows": gs.n_rows, "n_cells": gs.n_cells, "converged": gs.converged}


def variance_components(data: Any, design: Any = None, *, options: Any = None,
                        factors: str | Sequence[str] | None = None,
                        where: Where | None = None, applied: bool = False,
                        metric_factors: Sequence[str] | None = None,
                        **option_values: Any) -> Result:
    """Variance components of the random facets (a G-study) and the total-error
    intervals of the headline numbers (docs/measurement_error.md).

    Options: :class:`analysis.options.variance.VarianceOptions`. The fixed part: the
    design's factors that are not facets (main effects); the model factor's interaction
    with each facet is a component. ``metric_factors``: the factors whose joint subgroups
    the deviation metric is taken over (default: the domain factors; the eCDF page
    passes its own).

    Returns
    -------
    Result
        ``table``: one row per component (``component``, ``facet``, ``interaction``,
        ``levels``, ``variance``, ``sd``, ``share``, ``ci_low``, ``ci_high``,
        ``share_ci_low``, ``share_ci_high``, ``boundary``, ``note``; the facets not
        estimated with their note and missing numbers). ``tables["total_error"]``: each
        model's rate, the differences between models, each model's deviation metric
        over the subgroups of the domain factors jointly (a 0/1 outcome), each domain
        value's rate and log disparity with the sampling and the total-error interval
        (:func:`analysis.variance_components.total_error`, its columns).
        ``settings``: the options, ``facets``, ``fixed``, ``model``, ``outcome_kind``,
        ``method``, ``n_rows``, ``n_cells``, ``converged``. ``meta``: ``dominant`` (the
        component adding most variance to the first model's rate), ``se_ratio`` (its
        total / sampling SE), ``headline`` (one sentence per rate and difference: both
        intervals and the components' shares, :func:`analysis.variance_components.headline`).
    """
    from analysis.options.variance import VarianceOptions
    from analysis.variance_components import headline, total_error

    opts = _options(VarianceOptions, options, option_values)
    notes: list[str] = []
    gs, the_design = _g_study(data, design, opts, factors, where, applied, notes)
    domain = [f for f in the_design.of_kind("domain") if f in gs.fixed]
    metric = domain if metric_factors is None else list(metric_factors)
    unknown = [f for f in metric if f not in gs.cells.columns]
    if unknown:
        raise AnalysisError(f"metric_factors: {unknown[0]!r} is not a factor of the fit "
                            f"(fixed: {', '.join(gs.fixed)}; facets: {', '.join(gs.facets)}).")
    errors = total_error(gs, subgroup_factors=domain, metric_factors=metric)
    notes += gs.notes
    first = errors.iloc[0] if len(errors) else None
    meta: dict[str, Any] = {}
    if first is not None:
        meta = {"dominant": first["dominant"], "se_ratio": float(first["se_ratio"]),
                "headline": headline(errors)}
        notes.append(f"{first['label']}: the total-error SE is {first['se_ratio']:.2g} times "
                     f"the sampling SE; {first['dominant']} adds the most variance.")
    settings = {**_g_settings(opts, gs, the_design, where), "metric_factors": metric}
    return Result(gs.components, tuple(dict.fromkeys(notes)), settings,
                  {"total_error": errors}, gs, meta)


def d_study(data: Any, design: Any = None, *, options: Any = None,
            factors: str | Sequence[str] | None = None, where: Where | None = None,
            levels: Mapping[str, int] | None = None, max_cost: float | None = None,
            applied: bool = False, **option_values: Any) -> Result:
    """Design study: projected SE, generalizability coefficient and cost of other designs
    (more templates, seeds, judges, samples), the cheapest reaching ``target_se``
    (docs/measurement_error.md).

    Options: :class:`analysis.options.variance.DStudyOptions` (the G-study's and the
    design search's). ``levels``: one more design to project (``{"template": 60}``);
    ``max_cost``: designs costing more are left out.

    Returns
    -------
    Result
        ``table``: the single changes, one row each (+1, +10, x2 levels of each facet;
        columns of :class:`analysis.d_study.DStudy`'s ``changes``). ``tables``:
        ``current`` (the observed design), ``designs`` (every design searched),
        ``cheapest`` (the cheapest reaching ``target_se``), ``best_at_cost`` (the smallest
        SE at the current cost), ``components`` (the G-study). ``settings``: the options,
        ``target`` resolved, and the G-study's. ``meta``: ``answer`` (one sentence: the
        change that lowers the target SE most per unit of cost), ``changes`` (one
        sentence: the SE and extra cost of one more and ten more levels of each facet),
        ``one_or_ten`` (when the fit has a judge / sample / seed facet and a template
        facet: "one more judge or ten more templates?" answered in one sentence,
        :func:`analysis.d_study.one_or_ten`).
    """
    from analysis.d_study import d_study as project_designs
    from analysis.d_study import one_or_ten
    from analysis.options.variance import DStudyOptions

    opts = _options(DStudyOptions, options, option_values)
    notes: list[str] = []
    gs, the_design = _g_study(data, design, opts, factors, where, applied, notes)
    ds = project_designs(gs, levels=levels, target_se=opts.target_se,
                         target=None if opts.target == "auto" else opts.target,
                         answer_cost=opts.answer_cost, judge_cost=opts.judge_cost,
                         max_cost=max_cost)
    notes += [*gs.notes, *ds.notes]
    key = "se_difference" if ds.target == "difference" else "se_rate"
    meta: dict[str, Any] = {}
    gains = ds.changes.dropna(subset=["se_gain_per_cost"])
    if len(gains):
        best = gains.sort_values("se_gain_per_cost", ascending=False).iloc[0]
        now = float(ds.current[key].iloc[0])
        meta["answer"] = (f"Per unit of cost, '{best['change']}' lowers the SE of the "
                          f"{ds.target} most: {now:.4g} -> {best[key]:.4g} for "
                          f"{best['extra_cost']:,.4g} more.")
        notes.append(meta["answer"])
        singles = ds.changes[ds.changes["change"].str.match(r"^\+(1|10) ")]
        meta["changes"] = (f"SE of the {ds.target} now {now:.4g}; " + "; ".join(
            f"{r['change']}: {r[key]:.4g} for {r['extra_cost']:+,.4g}"
            for _, r in singles.iterrows()) + ".")
        notes.append(meta["changes"])
    if sentence := one_or_ten(ds, list(gs.facets)):
        meta["one_or_ten"] = sentence
        notes.append(sentence)
    if len(ds.cheapest):
        c = ds.cheapest.iloc[0]
        notes.append(f"Cheapest design reaching SE {opts.target_se:g}: {c['change']} "
                     f"(cost {c['cost']:,.4g}, SE {c[key]:.4g}).")
    settings = {**_g_settings(opts, gs, the_design, where), "target": ds.target,
                "levels": dict(levels or {}), "max_cost": max_cost}
    return Result(ds.changes, tuple(dict.fromkeys(notes)), settings,
                  {"current": ds.current, "designs": ds.designs, "cheapest": ds.cheapest,
                   "best_at_cost": ds.best_at_cost, "components": gs.components}, ds, meta)


# --- what views ask beside an analysis: the strongest subgroups, a judged file's stage
# metrics, whether a table has native scores, the native scores an import writes ---------
def scores_out(extras: Mapping[str, pd.DataFrame]) -> Result:
    """The native scores of an import (:class:`analysis.importers.ImportResult`'s
    ``extras``) as ``import --scores-out`` writes them: BBQ's score table with the
    interval columns, else the native scores (long;
    :func:`analysis.native_scores.scores_out_table`).

    Raises
    ------
    AnalysisError
        The import has no native score.
    """
    from analysis.native_scores import scores_out_table

    table = scores_out_table(dict(extras))
    if table is None:
        raise AnalysisError(NO_NATIVE_SCORE)
    return Result(table)


#: The message of :func:`scores_out` without a native score.
NO_NATIVE_SCORE = ("These results have no native score (BBQ's s_DIS / s_AMB, or a bias "
                   "task's metric such as pct_stereotype).")


# --- the pages' remaining compositions (issue 37: ui/ and pages/ call these, never a
# statistics module) ------------------------------------------------------------------------
def fractional_factorial(factors: Mapping[str, Sequence[str]] | Sequence[str] | str | None = None,
                         *, runs: int | str, max_search: int = 5000,
                         design: Any = None) -> Result:
    """A regular fractional factorial for a new benchmark: ``factors`` maps each factor
    to its values (no design needed), or names the ``design``'s factors whose declared
    values to use (default with a design: all of them); ``runs`` is a budget (the full
    factorial when it fits, else the largest power of the number of values within it;
    docs/planning.md, :func:`analysis.planning.fractional_factorial`).

    Returns
    -------
    Result
        ``table``: one row per run, a column per factor. ``notes``: what the budget
        became when it is not the number of runs used. ``settings``: ``runs`` (the
        budget), ``factors``. ``meta``: ``resolution`` (``inf`` for the full factorial),
        ``generators`` (factor -> generator word), ``aliases`` (sentences),
        ``budget_note``. ``raw``: the :class:`analysis.planning.FractionalDesign`.
    """
    from analysis.planning import budget_note
    from analysis.planning import fractional_factorial as build

    try:
        budget = int(runs)
    except (TypeError, ValueError):
        raise AnalysisError(f"runs must be a whole number, not {runs!r}.") from None
    if isinstance(factors, Mapping):
        values = {str(k): [str(v) for v in vs] for k, vs in factors.items()}
    elif design is not None:
        import pandas as pd

        the_design = _design_of(design, pd.DataFrame())
        names = _as_list(factors, "factors") or the_design.names
        values = {f: list(the_design.factor(f).values) for f in names}
    else:
        raise AnalysisError("A new benchmark needs its factors: factors={name: values} or "
                            "design=.")
    frac = build(values, budget, max_search=max_search)
    note = budget_note(budget, frac)
    meta = {"resolution": frac.resolution, "generators": dict(frac.generators),
            "aliases": list(frac.aliases), "budget_note": note, "note": note}
    settings = {"runs": budget, "factors": values}
    return Result(frac.runs, (note,) if note else (), settings, {}, frac, meta)


def nesting(data: Any, design: Any = None, *, factors: str | Sequence[str] | None = None,
            with_cluster: bool = True, applied: bool = False,
            columns: Sequence[str] | None = None) -> Result:
    """Pairs of factors where one determines the other in the rows (a template fixing
    the gender; docs/architecture.md, "Nesting outside reference"): the design's factors
    at their reference values, and its cluster column when the table has it and it is no
    factor (``with_cluster``: a factor fixed by the cluster is said too).

    ``applied``: ``data`` is read as it is (the Design page's rows, before the design
    under edit is applied; only which value pairs occur matters).

    Returns
    -------
    Result
        ``table``: one row per pair (:func:`analysis.nesting.find_nestings`):
        ``determinant``, ``dependent``, ``kind`` (``nested``, ``nested outside
        reference``, ``equivalent``, ``constant``) and its counts. ``notes``: one
        plain-language sentence per row (:func:`analysis.nesting.describe_nesting`).
        ``settings``: ``factors``, ``columns`` (the columns examined).
    """
    from analysis.nesting import describe_nesting, find_nestings

    table, the_design, _ = prepare_inputs(data, design, factors=factors, need_outcome=False,
                                          applied=applied)
    cluster = the_design.cluster
    extra = [cluster] if with_cluster and cluster in table.columns \
        and cluster not in the_design.names else []
    columns = list(columns) if columns is not None else [*the_design.names, *extra]
    found = find_nestings(table, columns,
                          references={f.name: f.reference for f in the_design.factors})
    notes = tuple(describe_nesting(row) for row in found.to_dict(orient="records"))
    return Result(found, notes, {"factors": list(the_design.names), "columns": columns}, {},
                  None, {"messages": list(notes)})


def findings(table: Any, *, factors: str | Sequence[str] = (), min_abs_ld: float | str = 0.1,
             max_p_adjusted: float | str = 0.05, min_n: int | str = 1, measure: str = "ld",
             limit: int | None = None, adjust: str = "bh") -> Result:
    """The top findings of a subgroups table (``bw.subgroups(...).table``): the distinct
    subgroups whose |log disparity|, adjusted p-value and size pass the thresholds, the
    strongest by ``measure`` first (``"ld"`` or ``"rate"``; docs/subgroups.md).

    The default thresholds are the report's (``analysis.findings.FINDING_MIN_LD``,
    ``FINDING_MAX_P``). ``factors``: the table's factor columns (each finding's values,
    ``meta["where"]``);
    ``adjust``: the method of the table's ``p_adjusted`` (named in the settings, for the
    views' labels).

    Returns
    -------
    Result
        ``table``: the passing rows of ``table``, its columns, in order. ``meta``:
        ``described`` (subgroup -> one line: rate, n, LD, adjusted p, level),
        ``where`` (subgroup -> the factor values it fixes, ``{factor: [value]}``).
        ``settings``: the thresholds, ``measure``, ``adjust``.
    """
    from analysis.findings import describe_finding, subgroup_where, top_findings

    split = _as_list(factors, "factors") or []
    try:
        thresholds = {"min_abs_ld": float(min_abs_ld), "max_p_adjusted": float(max_p_adjusted),
                      "min_n": int(min_n)}
    except (TypeError, ValueError):
        raise AnalysisError("Thresholds of findings are numbers (|LD|, adjusted p, n).") \
            from None
    found = top_findings(_table(table), **thresholds, measure=measure, limit=limit)
    rows = found.to_dict(orient="records")
    meta = {"described": {str(r["subgroup"]): describe_finding(r) for r in rows},
            "where": {str(r["subgroup"]): subgroup_where(r, split) for r in rows},
            "readings": [describe_finding(r) for r in rows]}
    settings = {**thresholds, "measure": measure, "limit": limit, "adjust": adjust,
                "factors": split}
    return Result(found, (), settings, {}, None, meta)


def rows_behind(data: Any, *, fixed: Mapping[str, Sequence[str]],
                where: Where | None = None) -> Result:
    """The responses behind one subgroup (``fixed``: ``{factor: [value]}``) within the
    subset ``where``: every column, prompt- and answer-like columns first, then
    ``deviation`` (:func:`analysis.findings.rows_behind`).

    Returns
    -------
    Result
        ``table``: the rows of ``data`` (the index: their positions), ``settings``:
        ``fixed``, ``where``.
    """
    from analysis.findings import rows_behind as behind

    subset = {str(k): _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    kept = {str(k): _as_list(v, f"fixed[{k!r}]") or [] for k, v in fixed.items()}
    return Result(behind(_table(data), subset, kept), (), {"fixed": kept, "where": subset},
                  {}, None)


def is_bbq(data: Any) -> bool:
    """Whether the table has BBQ's columns and context conditions (then
    :func:`bbq_scores` applies)."""
    from analysis.bbq_scores import is_bbq as check

    return check(_table(data))


def bbq_scores(data: Any, *, by: str | Sequence[str] = (), where: Where | None = None
               ) -> Result:
    """BBQ's own bias scores (Parrish et al. 2022): s_DIS and s_AMB per group of ``by``
    (or over all rows) within the subset ``where`` (:func:`analysis.bbq_scores.bias_scores`).

    Returns
    -------
    Result
        ``table``: one row per group (the ``by`` columns) with the columns of
        :func:`analysis.bbq_scores.bias_scores`. ``settings``: ``by``, ``where``.
    """
    from analysis.bbq_scores import BBQ_COLUMNS, bias_scores
    from analysis.cells import filter_rows

    rows = _table(data)
    split = _as_list(by, "by") or []
    subset = {str(k): _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    columns = [*BBQ_COLUMNS, "stereotyped_option", *split, *subset]
    narrow = rows[[c for c in dict.fromkeys(columns) if c in rows.columns]]
    table = bias_scores(filter_rows(narrow, {k: v for k, v in subset.items() if v} or None),
                        by=split)
    return Result(table, (), {"by": split, "where": subset}, {}, None)


def has_native_score(data: Any) -> bool:
    """Whether the table has a benchmark's own score (BBQ's columns, or a metric of
    :data:`analysis.native_scores.MEAN_METRICS`): then :func:`native_scores` applies."""
    from analysis.native_scores import has_native_score as check

    return check(_table(data))


def judge_noise_modes(data: Any) -> list[str]:
    """The judge-noise modes the table supports (``mean`` and ``single`` with judge
    samples, ``confusion`` with labelled rows; :func:`analysis.judge_noise.available_modes`)."""
    from analysis.judge_noise import available_modes

    return available_modes(_table(data))


def available_features() -> pd.DataFrame:
    """Which text features (:func:`features`) can be computed here: one row per feature,
    ``feature``, ``available`` (bool), ``reason`` (what to install, empty when
    available)."""
    from analysis.features import available_features as listing

    return listing()


def check_criteria(content: bytes, name: str) -> dict[str, Any]:
    """A criteria file's bytes (``docs/checks.md``; an upload) validated with its own line
    numbers, as the plain data :func:`check` takes as ``criteria``.

    Raises
    ------
    analysis.gate.CriteriaError
        Too large, not UTF-8, or not a valid criteria file.
    """
    from analysis.gate import criteria_from_upload

    return criteria_from_upload(content, name)


def time_capsules(data: Any, *, category: str, cohort: str,
                  demographics: str | Mapping[str, Sequence[str]],
                  demographic_col: str | None = None, by: str | Sequence[str] = (),
                  options: Any = None, where: Where | None = None, tests: bool = True,
                  distribution: pd.DataFrame | None = None, **option_values: Any) -> Result:
    """Time capsules per demographic (docs/cohorts.md, ``analysis/capsules.py``): the
    share of the answers in each subcategory per demographic, ``by`` group and cohort;
    Kruskal-Wallis per subcategory across cohorts and among a prompt's subcategories
    beside the chi-square; the spreads; the paper-shaped table.

    ``demographics``: ``"gender=woman,man;race=White,Asian"`` or a mapping;
    ``demographic_col``: which demographic each row probes (needed with several).
    Options: :class:`analysis.options.cohorts.CohortsOptions` (``renormalise``,
    ``method``, ``seed``, ``capsule_star``, ``adjust``: the multiple-testing method of
    ``p_adjusted`` and the table's ``†``). ``tests=False``: the distribution only
    (the app caches it apart, so the test's options do not count the rows again);
    ``distribution``: that distribution, computed before.

    Returns
    -------
    Result
        ``table``: the distribution, one row per demographic x ``by`` group x cohort x
        subcategory (:func:`analysis.capsules.capsule_distribution`'s columns). With
        ``tests``, ``tables``: ``tests`` (``test``, ``question``, ``demographic``, the
        ``by`` factors, the category, ``n``, ``count``, ``statistic``, ``df``,
        ``p_value``, ``p_adjusted`` (by ``adjust``, default Benjamini-Hochberg, over
        the rows of one test), ``note``), ``spread``
        (:func:`analysis.capsules.capsule_spread`) and ``table`` (the paper's: cohorts x
        (demographic, ``by`` group, subcategory), percentages, marked ``*`` / ``*†`` by
        ``capsule_star``). ``settings``: the options (``adjust`` among them) and inputs.
    """
    from analysis import capsules as cp
    from analysis.cells import filter_rows
    from analysis.options.cohorts import CohortsOptions

    opts = _options(CohortsOptions, options, option_values)
    split = _as_list(by, "by") or []
    subset = {str(k): _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    dist = distribution if distribution is not None else cp.capsule_distribution(
        filter_rows(_table(data), {k: v for k, v in subset.items() if v} or None), category,
        cohort, demographics=demographics, demographic_col=demographic_col, by=split,
        renormalise=opts.renormalise)
    settings = {**opts.settings(), "category": category, "cohort": cohort,
                "demographics": demographics if isinstance(demographics, str)
                else {k: list(v) for k, v in demographics.items()},
                "demographic_col": demographic_col, "by": split, "where": subset}
    if not tests:
        return Result(dist, (), settings, {}, None)
    found = cp.capsule_tests(dist, category, cohort, by=split, method=opts.method,
                             seed=opts.seed, adjust=opts.adjust)
    tables = {"tests": found, "spread": cp.capsule_spread(dist, category, cohort, by=split),
              "table": cp.capsule_table(dist, category, cohort, by=split, tests=found,
                                        star=opts.capsule_star, adjust=opts.adjust)}
    return Result(dist, (), settings, tables, None)


def prompt_unit(data: Any, design: Any = None, *, by: str, where: Where | None = None,
                applied: bool = False) -> Result:
    """The prompt unit on which :func:`compare` pairs the values of ``by``: the design's
    ``prompt_unit``, else an id column shared across the values, else the domain and
    prompt factors (:func:`analysis.compare.infer_unit`).

    Returns
    -------
    Result
        ``table``: empty; ``settings``: ``unit`` (the columns), ``source`` (``design``,
        ``id column``, ``factors``), ``by``, ``where``; ``notes``: the sentence saying
        which was used. ``raw``: the ``(columns, source, note)`` tuple
        :func:`compare_pairing` takes as ``inferred``.

    Raises
    ------
    analysis.errors.PairingError
        Nothing identifies a prompt.
    """
    import pandas as pd

    from analysis.compare import infer_unit

    table, the_design, subset = prepare_inputs(data, design, need_outcome=False, where=where,
                                               applied=applied)
    unit, source, note = infer_unit(_subset(table, subset), the_design, by)
    return Result(pd.DataFrame(), (note,), {"unit": list(unit), "source": source, "by": by,
                                            "where": subset}, {}, (unit, source, note))


def compare_pairing(data: Any, design: Any = None, *, by: str,
                    unit: str | Sequence[str] | None = None, score: str | None = None,
                    subgroups: str | Sequence[str] = (), options: Any = None,
                    where: Where | None = None, applied: bool = False,
                    inferred: Any = None, **option_values: Any) -> Result:
    """The rows of each value of ``by`` paired on the prompt unit, the step of
    :func:`compare` that reads the rows (the app caches it and passes it to
    ``compare(..., pairing=)``). Options: :class:`analysis.options.compare.CompareOptions`
    (``cluster``, ``duplicates`` are the pairing's); ``inferred``: :func:`prompt_unit`'s
    ``raw`` when ``unit`` is None and the caller has it cached.

    Returns
    -------
    Result
        ``table``: the pairing's counts per value (rows, rows without outcome,
        duplicates); ``notes``: how the rows were paired and what was left out;
        ``settings``: ``by``, ``unit`` (used), ``score``, ``subgroups``, ``cluster``
        (used), ``duplicates``, ``where``. ``raw``: the :class:`analysis.compare.Pairing`.
    """
    from analysis.compare import pair_units
    from analysis.options.compare import CompareOptions

    opts = _options(CompareOptions, options, option_values)
    table, the_design, subset = prepare_inputs(data, design, need_outcome=score is None,
                                               where=where, applied=applied)
    pairing = pair_units(_subset(table, subset), the_design, by, unit=_as_list(unit, "unit"),
                         score=score, factors=_as_list(subgroups, "subgroups") or [],
                         cluster=opts.cluster, duplicates=opts.duplicates, inferred=inferred)
    settings = {"by": by, "unit": list(pairing.unit), "score": score,
                "subgroups": _as_list(subgroups, "subgroups") or [],
                "cluster": pairing.cluster, "duplicates": opts.duplicates, "where": subset}
    return Result(pairing.counts, (pairing.note, *pairing.notes), settings, {}, pairing)


def group_means(data: Any, design: Any = None, *, cluster: str | None = None,
                confidence: float | str = 0.95, factors: str | Sequence[str] | None = None,
                where: Where | None = None, applied: bool = False,
                adjust: str = "bh") -> Result:
    """For a continuous outcome: the mean score per factor value and its difference from
    the reference value, Welch, or with ``cluster`` CR2 on Satterthwaite df
    (:func:`analysis.continuous.group_means`; a cluster named here is checked as the
    design's, :func:`analysis.clusters.resolve_cluster`); ``adjust``: the multiple-testing
    method of ``p_adjusted`` (any of :data:`analysis.multiple_testing.METHODS`; the
    Subgroups page and ``bw.subgroups`` pass theirs).

    Returns
    -------
    Result
        ``table``: one row per (factor, observed value): ``factor``, ``value``,
        ``reference``, ``n``, ``mean``, ``sd``, ``difference``, ``ci_low``, ``ci_high``,
        ``p_value``, ``p_adjusted`` (by ``adjust`` over the non-reference rows); with a
        cluster also ``std_err``, ``df``, ``n_clusters``, ``note``.
        ``settings``: ``cluster`` (used), ``confidence``, ``adjust``,
        ``factors``, ``where``.
    """
    from analysis.clusters import resolve_cluster
    from analysis.continuous import group_means as means

    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=True, applied=applied)
    rows = _subset(table, subset)
    used = (resolve_cluster(rows, cluster, declared=True, factors=the_design.names).column
            if cluster else None)
    level = float(confidence)
    out = means(rows, the_design, cluster=used, confidence=level, adjust=adjust)
    settings = {"cluster": used, "confidence": level, "adjust": adjust,
                "factors": list(the_design.names), "where": subset}
    return Result(out, (), settings, {}, None)


# --- judges: reliability, agreement with human labels, stage metrics (judge_stats) -----------
def judge_reliability(data: Any, names: Sequence[str] | None = None, *, n_resamples: int = 1000,
                      seed: int | None = 0, confidence: float = 0.95,
                      min_range: float = 2.0) -> Result:
    """How far judges agree with each other and with themselves (``docs/judges.md`` §12).

    Parameters
    ----------
    data
        A judged table (or its path) with several judges' ``<metric>@<judge>`` columns or
        repeated samples, several judged tables of the same rows (one judge each), or an
        already aligned :class:`analysis.judge_stats.reliability.ReliabilityData`.
    names
        The judges' names of several tables (default: read from their ``judge`` column).
    n_resamples, seed, confidence
        Alpha's percentile bootstrap over rows (0 resamples: no interval).
    min_range
        A (row, metric) is listed as a disagreement when the scores span this much.

    Returns
    -------
    Result
        ``table``: :func:`analysis.judge_stats.reliability.reliability` (``metric``,
        ``stage``, ``across``, ``raters``, ``n_units``, ``n_complete``, ``n_pairable``,
        ``alpha_ordinal``, ``icc2_1``, ``icc3_1``, ``icc1_1`` each with ``_low`` /
        ``_high``); ``tables``: ``disagreements`` (``row``, ``id``, ``stage``, ``metric``,
        ``range`` and the scores) and ``spread`` (per-row ``sd``, ``source``, ``metric``);
        ``settings``: the four options; ``meta``: ``judges`` (names), ``n_rows``.

    Raises
    ------
    ReliabilityError
        Fewer than two judges or samples, tables of different rows.
    """
    from analysis.judge_stats import reliability as rel

    if isinstance(data, rel.ReliabilityData):
        aligned = data
    else:
        frames = [data] if not isinstance(data, (list, tuple)) else list(data)
        aligned = rel.reliability_data([_table(f) for f in frames],
                                       None if names is None else list(names))
    table = rel.reliability(aligned, n_resamples=n_resamples, seed=seed, confidence=confidence)
    settings = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence,
                "min_range": min_range}
    return Result(table, (), settings,
                  {"disagreements": rel.disagreements(aligned, min_range=min_range),
                   "spread": rel.score_spread(aligned)}, aligned,
                  {"judges": list(aligned.judges), "n_rows": len(aligned.rows)})


def judge_agreement(data: Any, pairs: Sequence[tuple[str, str]] | None = None, *,
                    by_stage: bool = True, ci: str = "bootstrap", n_resamples: int = 1000,
                    confidence: float = 0.95, seed: int | None = 0) -> Result:
    """Agreement of judge scores with human labels (or a second judge), per metric and stage.

    Parameters
    ----------
    data
        A judged table (or its path) with both score columns on each row.
    pairs
        ``(judge column, human column)`` pairs; ``None``: every ``human_<metric>`` found
        (:func:`analysis.judge_stats.names.human_pairs`).
    by_stage, ci, n_resamples, confidence, seed
        As :func:`analysis.judge_stats.agreement.agreement` (``ci``: ``bootstrap``,
        ``analytic`` or ``none``).

    Returns
    -------
    Result
        ``table``: :func:`analysis.judge_stats.agreement.agreement`, columns
        :data:`analysis.judge_stats.agreement.AGREEMENT_COLUMNS` (one row per pair and
        stage, then each pair over all stages, then every pair pooled); ``settings``: the
        options and the pairs used.
    """
    from analysis.judge_stats.agreement import agreement
    from analysis.judge_stats.names import human_pairs

    frame = _table(data)
    used = list(pairs) if pairs is not None else human_pairs(frame)
    table = agreement(frame, pairs, by_stage=by_stage, ci=ci,  # type: ignore[arg-type]
                      n_resamples=n_resamples, confidence=confidence, seed=seed)
    return Result(table, (), {"pairs": used, "by_stage": by_stage, "ci": ci,
                              "n_resamples": n_resamples, "confidence": confidence,
                              "seed": seed})


def judge_stage_metrics(data: Any, *, by: Sequence[str] | None = None,
                        figures: bool = False) -> Result:
    """FairMonitor's stage metrics of a judged file, its unscored judgments and figures.

    Parameters
    ----------
    data
        A judged table (or its path).
    by
        The grouping columns (default stage x sensitive factor x model,
        :data:`analysis.judge_stats.metrics.DEFAULT_BY`).
    figures
        Also draw FairMonitor's Figures 4 and 5 (``meta["figures"]``).

    Returns
    -------
    Result
        ``table``: :func:`analysis.judge_stats.metrics.stage_metrics` (the ``by`` columns,
        ``metric``, ``n``, ``n_scored``, ``n_unscored``, ``mean_score``, ``threshold``,
        ``share_fair``); ``tables``:
        ``unscored_reasons`` (``metric``, ``unscored_reason``, ``n``); ``settings``: ``by``;
        ``meta``: ``figures`` (``{"judge_scores_box", "judge_stage_bars"}``, empty without
        a ``model`` column) when asked.
    """
    from analysis.judge_stats import metrics

    judged = _table(data)
    groups = list(metrics.DEFAULT_BY if by is None else by)
    meta = {"figures": metrics.stage_figures(judged)} if figures else {}
    return Result(metrics.stage_metrics(judged, by=groups), (), {"by": groups},
                  {"unscored_reasons": metrics.unscored_reasons(judged)}, None, meta)


def count_unit(data: Any, design: Any = None, *, count: str = "prompts",
               applied: bool = False, structure: object = None) -> Any:
    """What the coverage cells count on ``data`` with ``design``
    (:func:`analysis.coverage.count_unit`: the item id of the table's structure, else
    the design's prompt unit; rows with ``count="responses"``). ``structure``: one
    already read (an object with ``item_id`` and ``columns``); without it and without
    an item id in the design, reading the structure scans the rows (the Coverage page
    runs this off the visitor's thread). Returns an :class:`analysis.coverage.CountUnit`
    (``columns``, ``noun``, ``label``, ``reason``)."""
    from analysis.coverage import count_unit as unit_of

    table, the_design = _whole_design(data, design, applied)
    return unit_of(table, the_design, unit=count, structure=structure)


def _whole_design(data: Any, design: Any, applied: bool) -> tuple[pd.DataFrame, Design]:
    """The table and the design, every factor kept (its prompt unit, its inferred
    structure), the design applied unless ``applied``."""
    import pandas as pd

    if applied and isinstance(data, pd.DataFrame):
        return data, _design_of(design, data)
    table, the_design, _ = prepare_inputs(data, design, need_outcome=False)
    return table, the_design


def coverage_cells(data: Any, design: Any = None, *, factors: str | Sequence[str],
                   where: Where | None = None, count: str = "prompts", counted: Any = None,
                   applied: bool = False, with_unit: bool = True) -> Any:
    """The coverage cells :func:`coverage` counts (its ``raw``; give them back as
    ``cells=`` to a later call): one row per observed combination of ``factors`` in the
    subset, the factors' columns and ``n`` (distinct items or prompts, or rows with
    ``count="responses"``; ``counted``: the :func:`count_unit` to count, e.g. one read in
    the background), :func:`analysis.coverage.coverage_cells`. For a caller that caches
    the step that reads the rows (the Coverage page). An
    :class:`analysis.coverage.CountedCells` (``frame``: the table; its ``unit`` and the
    rows counted, ``n_rows``), which ``cells=`` takes with its unit; ``with_unit=False``:
    the plain table (given as ``cells=``, its ``n`` counts rows)."""
    from analysis.coverage import coverage_cells as cells_of

    table, the_design = _whole_design(data, design, applied)
    subset = {k: _as_list(v, f"where[{k!r}]") or [] for k, v in (where or {}).items()}
    return cells_of(table, the_design, _as_list(factors, "factors") or [], unit=count,
                    where={k: v for k, v in subset.items() if v} or None, counted=counted,
                    with_unit=with_unit)


def coverage_empty_page(result: Result, design: Any, *, page: int,
                        page_size: int) -> pd.DataFrame:
    """Page ``page`` (1-based, ``page_size`` rows) of the empty combinations of a
    :func:`coverage` Result: sliced from its ``empty_cells`` when they hold the page,
    else found from its cells (``raw``) with ``design`` (the one the Result was computed
    with), :func:`analysis.coverage.empty_cells_page`. Columns: the grid's factors."""
    from analysis.coverage import empty_cells_page

    s = result.settings
    from analysis.coverage import CountedCells

    raw = result.raw.frame if isinstance(result.raw, CountedCells) else result.raw
    return empty_cells_page(result.raw, _design_of(design, raw), page=page,
                            page_size=page_size, first=result.tables["empty_cells"],
                            factors=s["factors"], where=s["where"] or None)


def importance_adjustment_sentence(adjust: str, alpha: float) -> str:
    """The sentence under an importance table: ``p_value`` unadjusted, ``p_adjusted`` by
    the method of ``adjust`` (``"none"``: Benjamini-Hochberg) and which p the labels use
    at ``alpha`` (:func:`analysis.importance_adjust.adjustment_sentence`)."""
    from analysis.importance_adjust import adjustment_sentence

    return adjustment_sentence(adjust, alpha)


# --- the rows and cells a view shows beside an analysis -----------------------------------
def cells(data: Any, design: Any = None, *, factors: str | Sequence[str] | None = None,
          where: Where | None = None, with_outcome: bool = True) -> Result:
    """The cell table of a results table with the design applied (the CLI's
    ``load_with_design``, the app's active results; an engine's fine cell table too):
    one row per observed combination of ``factors`` (default: the design's) in the subset
    ``where`` (:func:`analysis.cells.cell_table`).

    Returns
    -------
    Result
        ``table``: the factors' columns, ``n`` and, with an outcome and ``with_outcome``,
        ``deviations``. ``settings``: ``factors``, ``where``, ``with_outcome``.
    """
    from analysis.cells import cell_table

    table = _table(data)
    names = _as_list(factors, "factors") or _design_of(design, table).names
    subset = {str(k): list(v) for k, v in (where or {}).items()}
    out = cell_table(table, names, where=subset or None, with_outcome=with_outcome)
    return Result(out, (), {"factors": names, "where": subset, "with_outcome": with_outcome})


def subset_rows(data: Any, *, where: Where | None = None,
                exclude: Where | None = None) -> pd.DataFrame:
    """The rows an analysis reads: those in the subset ``where`` (every listed value of
    each factor kept), then without those of ``exclude`` (:func:`analysis.cells.filter_rows`,
    :func:`analysis.cells.exclude_rows`). Every column of ``data``, its index."""
    from analysis.cells import exclude_rows, filter_rows

    rows = filter_rows(_table(data), dict(where) if where else None)
    return exclude_rows(rows, dict(exclude)) if exclude else rows


# --- what the table's rows say about its structure ----------------------------------------
def inferred_structure(data: Any, *, progress: Any = None) -> tuple[Any, Any]:
    """The structure of a results table and the design suggested from it (what the app's
    inference worker computes for a new table, ``ui/inference_pool.py``): the
    :func:`analysis.structure.infer_structure` of the rows, and
    :func:`analysis.design.suggest_design` read from the structure inferred with the
    suggested outcome (:func:`analysis.design.suggest_outcome`) when there is one.
    ``progress``: called with the share done, in percent."""
    from analysis.design import suggest_design, suggest_outcome
    from analysis.structure import infer_structure

    frame = _table(data)
    structure = infer_structure(frame, progress=progress)
    outcome = suggest_outcome(frame)
    if outcome is None:  # the same inference suggest_design would make
        return structure, suggest_design(frame, structure=structure)
    with_outcome = infer_structure(frame, outcome=outcome.column, progress=progress)
    return structure, suggest_design(frame, structure=with_outcome)


def inferred_template(data: Any, *, outcome: str | None = None) -> tuple[str | None, str]:
    """The template column the table's structure implies (its inferred cluster,
    :func:`analysis.structure.inferred_cluster`) and the reason, or ``(None, reason)``."""
    from analysis.structure import inferred_cluster

    return inferred_cluster(_table(data), outcome=outcome)
