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
from analysis.options import FROM_DESIGN, OptionError, Options

if TYPE_CHECKING:
    import pandas as pd

    from analysis.clusters import ClusterChoice
    from analysis.design import Design

__all__ = ["Result", "bias_index", "check", "cohorts", "compare", "counterfactual", "coverage",
           "disparity", "ecdf", "extend_results", "features", "generate_prompts", "importance",
           "importance_linear", "index_published",
           "native_deltas", "native_scores", "plan", "power", "prepare_inputs",
           "resolve_cluster_option", "subgroups", "variance_components", "d_study"]

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
               **option_values: Any) -> Result:
    """Factor importance: logistic regression of deviation on the factors (methods.md §4).

    Options: :class:`analysis.options.importance.ImportanceOptions` (``interactions``,
    ``on_separation``, ``alpha``, ``adjust``, ``confidence``, ``likelihood_ratio``,
    ``cluster``, ``small_sample``, ``gee``; judge noise: ``judge_noise``, ``noise_mode``,
    ``seed``). ``references`` overrides the design's reference values; ``exclude`` leaves
    out rows with the given values; ``covariates``: numeric columns added to the model
    (standardised unless ``standardise=False``; not with interactions, GEE, separation
    handling or judge noise); ``cells``: the cell table of the rows (over the factors,
    the subset's factors and the cluster) when the caller has it cached, fitted instead
    of the rows; ``applied``: ``data`` has the design applied. The one
    composition of the analysis (the ``importance`` command and the report's section
    call it).

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
                                factors=the_design.names, **kw, **opts.kwargs())
    terms, meta = fit.terms, {}
    uncertainty = uncertainty_label(fit, the_design)
    notes = [*suggested, f"Standard errors: {uncertainty}.", *fit.notes]
    if opts.judge_noise:  # noise_same_sign, noise_significant, noise_survives per term
        from analysis.judge_noise import importance_noise, survival_sentence

        _needs_rows(table, "Judge noise")
        refit = {**opts.kwargs(), "cluster": fit.cluster}
        refit.pop("likelihood_ratio")  # replicates are fitted without the LR tests
        terms = importance_noise(table, the_design, fit=fit, factors=the_design.names, **kw,
                                 **refit, **_noise_arguments(opts, the_design))
        meta["judge_noise_summary"] = survival_sentence(terms, what="terms")
        meta["judge_noise"] = dict(terms.attrs.pop("judge_noise"))
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
                           factors: Sequence[str] = ()) -> ClusterChoice:
    """The cluster an analysis uses from its ``cluster`` option: the design's
    (:data:`analysis.options.FROM_DESIGN`), a column, or None (rows independent), checked
    against ``data`` (rows, or a cell table with ``n``) by
    :func:`analysis.clusters.resolve_cluster`: the one resolution of the API and the CLI.

    A declared cluster the table lacks, a constant one or one row per value is not used
    (a note says so); a named column the table lacks is a
    :class:`analysis.errors.ClusterError`.
    """
    from analysis.clusters import resolve_cluster
    from analysis.options import FROM_DESIGN

    declared = value == FROM_DESIGN
    rows = data["n"] if _is_cell_table(data) else None
    return resolve_cluster(data, design.cluster if declared else value, declared=declared,
                           factors=factors, rows=rows)


def _needs_rows(table: pd.DataFrame, what: str) -> None:
    if _is_cell_table(table):
        raise AnalysisError(f"{what} resamples rows: pass the results table, not a cell table.")


def _noise_arguments(opts: Any, design: Design) -> dict[str, Any]:
    from analysis.judge_noise import threshold_of

    return opts.noise_kwargs(threshold_of(design))


def subgroups(data: Any, design: Any = None, *, options: Any = None,
              factors: str | Sequence[str] | None = None, where: Where | None = None,
              exclude: Mapping[str, Sequence[str]] | None = None,
              cells: pd.DataFrame | None = None, applied: bool = False,
              **option_values: Any) -> Result:
    """Log disparity of every subgroup up to a level (methods.md §2-3), with the options'
    cluster-robust CIs, bootstrap intervals (``ci="bootstrap"``), power columns
    (``power``, ``effect``) and judge-noise survival (``judge_noise=R``): the one
    composition of the analysis (the CLI's ``subgroups``, the report's section, the
    Subgroups page and its "Copy as Python" call it).

    Options: :class:`analysis.options.subgroups.SubgroupsOptions` (``level``, ``test``,
    ``confidence``, ``adjust``, ``min_n``, ``min_expected``, ``cluster``,
    ``small_sample``, ``ci``, ``n_resamples``, ``seed``, ``judge_noise``, ``noise_mode``,
    ``noise_alpha``, ``power``, ``effect``). ``exclude`` leaves out rows with the given
    values. ``cells``: the cell table of the rows analysed (after ``where`` and
    ``exclude``) over the factors and the cluster, when the caller has it cached (the
    app); ``applied``: ``data`` already has the design applied (not applied again).

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
        ``pooled`` ``tables["pooling"]``: the model's terms and variances.
        ``settings``: every option (``level`` resolved), the cluster used, ``n_clusters``,
        ``reference_df``, ``uncertainty`` (how the CIs and p-values were computed),
        ``factors``, ``where``, ``n_subgroups``, ``n_distinct``. ``meta``:
        ``warnings`` (what was assumed: cluster, continuity, bootstrap),
        ``judge_noise`` (its settings and counts, with ``judge_noise``), ``n_rows``
        (rows behind the cells), with ``pooled`` ``pooling_notes``.
    """
    from analysis.cells import cell_table
    from analysis.columns import LEVEL
    from analysis.options.subgroups import SubgroupsOptions
    from analysis.subgroups import distinct_subgroups, uncertainty_label
    from analysis.subgroups import subgroups as subgroup_table

    opts = _options(SubgroupsOptions, options, option_values)
    notes: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               notes=notes, applied=applied)
    names = the_design.names
    rows = _rows_of(table, subset, exclude)
    checked = resolve_cluster_option(opts.cluster, the_design, rows)
    cluster = checked.column
    grid = None
    if cells is None and cluster and not _is_cell_table(rows) and not opts.pooled:
        from analysis.subgroup_codes import cluster_grid  # no factors x cluster cells

        grid = cluster_grid(rows, names, cluster)  # None: too large, or outcomes not 0/1
        if grid is not None:
            cells = grid.cell_table()  # = cell_table(rows, names)
    if cells is None:
        cells = rows if _is_cell_table(rows) else cell_table(
            rows, list(dict.fromkeys([*names, *([cluster] if cluster else [])])))
    full = subgroup_table(cells, names, **{**opts.kwargs(), "cluster": cluster},
                          cluster_grid=grid)
    facts = {k: full.attrs.get(k) for k in ("cluster", "n_clusters", "reference_df", "df_method")}
    uncertainty = uncertainty_label(full.attrs, the_design)
    warnings = [*checked.notes, *full.attrs.get("notes", [])]
    if opts.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_log_disparity

        _needs_rows(rows, "The bootstrap")
        full = bootstrap_log_disparity(rows, names, max_level=opts.level, table=full,
                                       confidence=opts.confidence,
                                       **opts.bootstrap_kwargs(cluster))
        warnings += full.attrs["bootstrap"].get("notes", [])
    n_rows = int(cells["n"].sum())
    tables: dict[str, Any] = {}
    if opts.pooled:  # rate_pooled, ld_pooled ... beside the raw columns (docs/pooling.md)
        from analysis.pooling import pool_subgroups

        full = pool_subgroups(cells, names, full, cluster=cluster, confidence=opts.confidence)
        tables["pooling"] = full.attrs["pooling"]
        meta_pooling = list(full.attrs["pooling_notes"])
        warnings += meta_pooling
    if opts.power is not None:
        from analysis.planning import add_power

        full = add_power(full, n_rows, power=opts.power, target_ld=opts.effect)
    distinct = distinct_subgroups(full)
    meta: dict[str, Any] = {"warnings": warnings, "n_rows": n_rows}
    if opts.pooled:
        meta["pooling_notes"] = meta_pooling
    notes += [f"CIs and p-values: {uncertainty}.", *warnings]
    if opts.judge_noise:
        from analysis.judge_noise import subgroup_noise, survival_sentence

        _needs_rows(rows, "Judge noise")
        distinct = subgroup_noise(rows, names, max_level=opts.level, test=opts.test,
                                  confidence=opts.confidence, min_n=opts.min_n,
                                  min_expected=opts.min_expected, table=distinct,
                                  adjust=opts.adjust, **_noise_arguments(opts, the_design))
        meta["judge_noise_summary"] = survival_sentence(distinct, what="subgroups")
        meta["judge_noise"] = dict(distinct.attrs.pop("judge_noise"))
        notes.append(meta["judge_noise_summary"])
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
    :class:`analysis.options.ecdf.EcdfOptions` (``level``, ``ideal``, ``cutoff``,
    ``ks_resamples``, ``adjust``, ``ci``, ``cluster``, ``n_resamples``, ``seed``,
    ``confidence``). ``cells``: the cell table of the rows over ``by`` and the factors
    when the caller has it cached; ``applied``: ``data`` has the design applied. The one
    composition of the analysis (the ``ecdf`` command and the report's section call it).

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

        rates = pool_rates(cells, chosen, rates, by=by, cluster=pooled_cluster,
                           confidence=opts.confidence)
        tables.update(rates=rates, pooling=rates.attrs.pop("pooling"))
        pooling_notes = [*rates.attrs.pop("pooling_notes"), "The KS tests compare the raw "
                         "rates."]
        notes += pooling_notes
        rates.attrs.pop("rho", None)
        summary = pooled_summary(rates, by=by, ideal=opts.ideal, cutoff=opts.cutoff)
    else:
        summary = ecdf_summary(rates, by=by, ideal=opts.ideal, cutoff=opts.cutoff)
    cluster = _cluster_of(opts.cluster, the_design)
    meta: dict[str, Any] = {"pooling_notes": pooling_notes} if opts.pooled else {}
    if opts.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_ecdf

        _needs_rows(rows, "The bootstrap")
        boot = bootstrap_ecdf(rows, chosen, by=by, level=opts.level, ideal=opts.ideal,
                              confidence=opts.confidence, **opts.bootstrap_kwargs(cluster))
        meta["bootstrap"] = dict(boot.attrs.pop("bootstrap"))
        notes += meta["bootstrap"].get("notes", [])
        tables["bootstrap"] = boot
    settings = {**opts.settings(), "cluster": cluster, "by": by, "factors": chosen,
                "where": subset}
    return Result(summary, tuple(notes), settings, tables, rates, meta)


def coverage(data: Any, design: Any = None, *, options: Any = None,
             factors: str | Sequence[str] | None = None, where: Where | None = None,
             exclude: Mapping[str, Sequence[str]] | None = None, applied: bool = False,
             cells: pd.DataFrame | None = None, **option_values: Any) -> Result:
    """Coverage percentage and Gini index of the design's factor grid (methods.md §1).

    ``factors``: the grid (default: the design's domain and prompt factors); ``exclude``
    leaves out rows with the given values and takes the values out of the grid. Options:
    :class:`analysis.options.coverage.CoverageOptions` (``count``: distinct ``prompts``
    or ``responses``; ``limit``: empty and thinnest cells listed). No outcome needed.

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
        reading. ``raw``: the coverage cells. ``applied``: ``data`` has the design applied;
        ``cells``: the coverage cells (:func:`analysis.coverage.coverage_cells` over the
        factors, the subset and ``count``) when the caller has them cached (the app).
        The one composition of the analysis (the command, the report's section and the
        Coverage page call it).
    """
    from analysis import coverage as cov
    from analysis.cells import filter_rows
    from analysis.coverage import exclude_from_grid
    from analysis.options.coverage import CoverageOptions

    opts = _options(CoverageOptions, options, option_values)
    suggested: list[str] = []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=False, notes=suggested,
                                               applied=applied)
    names = the_design.names if factors else cov.default_factors(the_design)
    table, the_design = exclude_from_grid(table, the_design, {
        k: _as_list(v, f"exclude[{k!r}]") or [] for k, v in (exclude or {}).items()})
    if cells is None:
        cells = cov.coverage_cells(table, the_design, names, unit=opts.count, where=subset)
    kw = {"factors": names, "where": subset}
    summary = cov.coverage_summary(cells, the_design, **kw)
    marginals = cov.marginal_counts(cells, the_design, **kw)
    tables = {"marginals": marginals,
              "empty_cells": cov.empty_cells(cells, the_design, limit=opts.limit, **kw),
              "thinnest_cells": cov.thinnest_cells(cells, the_design, limit=opts.limit, **kw),
              "nestings": cov.coverage_nestings(cells, the_design, **kw)}
    notes = [*suggested, *cov.describe_coverage(
        summary, marginals, unit=opts.count, n_rows=int(len(filter_rows(table, subset or None))))]
    settings = {**opts.settings(), "factors": names, "where": subset}
    return Result(summary, tuple(notes), settings, tables, cells)


def bias_index(data: Any, design: Any = None, *, options: Any = None,
               factors: str | Sequence[str] | None = None, where: Where | None = None,
               dimensions: Any = None, applied: bool = False,
               **option_values: Any) -> Result:
    """The composite bias index LLMBI per model with every component (methods.md §6).

    ``factors`` (or ``dimensions``): the bias dimensions, as factor names (``"gender"``,
    ``["gender", "race"]``), :class:`analysis.index.Dimension` objects or mappings
    (``{"factor", "score", "weight"}``); default: the design's domain factors. Options:
    :class:`analysis.options.index.IndexOptions` (``scores``, ``weights`` for factor
    names; ``model``, ``ideal``, ``normalize_weights``, ``printed_equation``,
    ``penalty``, ``penalty_gini``, ``penalty_factors``, ``sentiment``, ``sentiment_by``,
    ``sentiment_score``, ``sentiment_scale``; the bootstrap's ``ci``, ``cluster``,
    ``n_resamples``, ``seed``, ``confidence``). ``applied``: ``data`` has the design
    applied. The one composition of the index (the ``index`` command, the report's
    section and the Bias index page call it).

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
    index = llmbi(rows, the_design, **kwargs)
    tables = {"components": index.components}
    notes: list[str] = []
    cluster = _cluster_of(opts.cluster, the_design)
    if opts.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_index

        _needs_rows(rows, "The bootstrap")
        tables["bootstrap"] = bootstrap_index(rows, the_design, confidence=opts.confidence,
                                              **opts.bootstrap_kwargs(cluster), **kwargs)
        notes += tables["bootstrap"].attrs["bootstrap"].get("notes", [])
    settings = {**opts.settings(), "cluster": cluster, "where": subset,
                "dimensions": [{"factor": d.factor, "score": d.score, "weight": d.weight}
                               for d in as_dimensions(kwargs["dimensions"])]}
    return Result(index.totals, tuple(notes), settings, tables, index)


def importance_linear(data: Any, design: Any = None, *, options: Any = None,
                      factors: str | Sequence[str] | None = None, where: Where | None = None,
                      references: Mapping[str, str] | None = None,
                      exclude: Mapping[str, Sequence[str]] | None = None,
                      applied: bool = False, **option_values: Any) -> Result:
    """Factor importance of a continuous outcome: least squares of the score on the
    factors and numeric covariates (cluster-robust over the cluster), or a mixed model
    with random effects per cluster (methods.md §4b). :func:`importance` fits the
    logistic model of the 0/1 deviation instead; this function is for a score.

    Options: :class:`analysis.options.importance_linear.LinearOptions` (``covariates``,
    ``no_covariates``, ``standardise``, ``mixed``, ``random_effects``,
    ``accept_unconverged``) and, of
    :class:`analysis.options.importance.ImportanceOptions`, ``alpha``, ``adjust``,
    ``confidence``, ``cluster`` and ``small_sample``. ``options`` may be a
    ``LinearOptions`` or a mapping of both kinds of names; ``applied``: ``data`` has the
    design applied. The one composition of the linear model (the ``importance`` command
    of a continuous outcome and the report's section call it).

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
              where: Where | None = None, applied: bool = False,
              **option_values: Any) -> Result:
    """A numeric feature across groups: statistics, selection rates and the four-fifths
    rule, disparity metrics, Dixon's Q and permutation tests (methods.md s. 5; SAGED).

    ``feature`` is the numeric column, ``by`` the grouping factor(s). Options:
    :class:`analysis.options.disparity.DisparityOptions` (``baseline``, ``statistic``,
    ``quantiles``, ``standard``, ``quantile``, ``value``, ``direction``, ``tolerance``,
    ``comparison``, ``polarity`` (default: the design's for the feature), ``alpha``,
    ``n_resamples``, ``adaptive``, ``compare``, ``seed``, ``conventions``; the SAGED
    statistics' ``normalization``, ``bins``, ``precision_tolerance``, ``percentile``,
    ``mode_bin_width``). ``applied``: ``data`` has the design applied. The one
    composition of the analysis (the ``disparity`` command, the report's section and the
    Disparity page call it).

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
        ``meta``: ``options`` (the options used, the design's polarity resolved).
    """
    import pandas as pd

    from analysis.disparity import disparity_report, resolve_polarity
    from analysis.options.disparity import DisparityOptions
    from analysis.saged_stats import normalize, saged_disparity, saged_statistics

    opts = _options(DisparityOptions, options, option_values)
    groups = _as_list(by, "by") or []
    table, the_design, subset = prepare_inputs(data, design, factors=factors, where=where,
                                               need_outcome=False, applied=applied)
    opts = resolve_polarity(opts, the_design, feature)
    rows = _subset(table, subset)
    rows = normalize(rows, [feature, opts.baseline or ""], opts.normalization)
    report = disparity_report(rows, feature, groups, **opts.kwargs())
    saged = saged_statistics(rows, feature, groups, baseline=opts.baseline,
                             **{**opts.saged_kwargs(), "normalization": "none"})
    tables = {"selection": report.selection, "metrics": report.metrics,
              **({"permutation": report.permutation} if report.permutation is not None
                 else {}),
              "dixon": pd.DataFrame([report.dixon.to_dict()]),
              "saged_statistics": saged,
              "saged_disparity": saged_disparity(saged, alpha=opts.alpha,
                                                 conventions=opts.conventions)}
    notes = [report.dixon.note]
    if report.settings.get("n_missing"):
        notes.insert(0, f"{report.settings['n_missing']:,} rows have no value of {feature} "
                        "and are left out.")
    settings = {**opts.settings(), "feature": feature, "by": groups, "where": subset}
    return Result(report.summary, tuple(notes), settings,
                  {"summary": report.summary, **tables}, report, {"options": opts})


def _subset(table: pd.DataFrame, subset: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    from analysis.cells import filter_rows

    return filter_rows(table, {k: v for k, v in subset.items() if v} or None)


def cohorts(data: Any, design: Any = None, *, category: str | None = None, cohort: str,
            by: str | Sequence[str] = (), categories: Sequence[str] | None = None,
            options: Any = None, factors: str | Sequence[str] | None = None,
            where: Where | None = None, applied: bool = False,
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
              "percentages": dm.percentage_table(dist, category, cohort, by=split)}
    dropped = int(rows[category].isna().sum())
    notes = chosen_note + ([refusal_note] if refusal_note else [])
    notes += ([f"{dropped:,} rows have no {category} and are left out."] if dropped else [])
    notes += [n for n in test["note"].unique() if n]
    settings = {**opts.settings(skip=("capsule_star",)), "category": category,
                "cohort": cohort, "by": split, "categories": kept, "where": subset}
    return Result(dist, tuple(notes), settings, tables, None,
                  {"n_missing": dropped, "refusal_note": refusal_note})


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
    ``adjust``, ``cluster``, ``n_resamples``, ``seed``, ``confidence``, ``alpha``).
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
        ``p_adjusted``, ``differs`` and, for a 0/1 outcome, the log-disparity columns
        (``ld_a``, ``ld_b``, ``ld_difference`` ...). ``raw``: the
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
                "resampled": first.attrs["resampled"] if first is not None else None}
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
         where: Where | None = None, **option_values: Any) -> Result:
    """The prompts to add that most raise coverage and balance over the grid of the
    design's factors (empty combinations first, then the thinnest; docs/planning.md).

    ``data`` None plans a new benchmark from the design alone (every combination empty).
    Options: :class:`analysis.options.planning.PlanOptions` (``budget``: the prompts to
    add, required; ``runs`` is the ``plan`` command's fractional factorial, see
    :func:`analysis.planning.fractional_factorial`).

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
                                              need_outcome=False)
        from analysis.plan_gaps import template_columns

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
    :func:`analysis.generate.generate_prompts`); ``applied``: ``data`` has the design
    applied; ``variants_only`` (with ``data`` and ``plan``): generate nothing, only the
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
    docs/planning.md). Options: :class:`analysis.options.planning.PowerOptions`
    (``alpha``, ``power``). Strings are accepted for every number.

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


def _table(data: Any) -> pd.DataFrame:
    """Any table: a DataFrame, or the path of a file :func:`analysis.io.load_results` reads."""
    import pandas as pd

    from analysis.io import load_results

    if isinstance(data, (str, Path)):
        data = load_results(data)
    if not isinstance(data, pd.DataFrame):
        raise AnalysisError(f"data must be a table (a DataFrame or a file's path), not "
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
    (``features``: a list or ``"a,b"``, ``model``, ``prefix``, ``skip_unavailable``).

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
    Options: :class:`analysis.options.index_published.IndexPublishedOptions`
    (``diversity_penalty``, ``scale``, ``lexicon``).

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
def native_scores(data: Any, design: Any = None, *, where: Where | None = None,
                  cluster: str | None = FROM_DESIGN, n_resamples: int = 1000,
                  confidence: float = 0.95, seed: int = 0,
                  breakdowns: str | Sequence[str] | None = None) -> Result:
    """The benchmark's own scores (BBQ's s_DIS / s_AMB, CrowS-Pairs' pct_stereotype ...)
    with cluster-bootstrap intervals (``docs/native_scores.md``).

    Returns
    -------
    Result
        ``table``: :func:`analysis.native_scores.native_scores`' table: the setting
        columns (``model``, ``task``, ``input_format``, ``filter``, those present),
        ``family``, ``score``, ``scope``, ``group``, ``estimate``, ``boot_se``,
        ``ci_low``, ``ci_high``, ``n``, ``n_clusters``, ``n_boot``, ``cluster``,
        ``interval``.
    """
    from analysis.native_scores import native_scores as compute

    table, the_design, subset = prepare_inputs(data, design, where=where, need_outcome=False)
    split = _as_list(breakdowns, "breakdowns") if breakdowns is not None else None
    out = compute(_subset(table, subset), the_design, cluster=cluster,
                  n_resamples=n_resamples, confidence=confidence, seed=seed, breakdowns=split)
    return Result(out.table, out.notes, {**out.settings, "where": subset}, {}, out)


def native_deltas(data: Any, design: Any = None, *, by: str, reference: str | None = None,
                  unit: str | Sequence[str] | None = None, where: Where | None = None,
                  cluster: str | None = FROM_DESIGN, n_resamples: int = 1000,
                  confidence: float = 0.95, seed: int = 0,
                  breakdowns: str | Sequence[str] | None = None) -> Result:
    """Paired differences of the native scores between the values of ``by`` (models,
    input formats) on the same items, with paired cluster-bootstrap intervals and tests.

    Returns
    -------
    Result
        ``table``: :func:`analysis.native_scores.native_deltas`' table: the setting
        columns besides ``by``, ``model_a``, ``model_b``, ``family``, ``score``,
        ``scope``, ``group``, ``estimate_a``, ``estimate_b``, ``delta`` (b - a),
        ``boot_se``, ``ci_low``, ``ci_high``, ``p_value``, ``p_adjusted``, ``n``,
        ``n_clusters``, ``n_boot``, ``cluster``, ``interval``.
    """
    from analysis.native_scores import native_deltas as compute

    table, the_design, subset = prepare_inputs(data, design, where=where)
    split = _as_list(breakdowns, "breakdowns") if breakdowns is not None else None
    out = compute(_subset(table, subset), the_design, by=by, reference=reference,
                  unit=_as_list(unit, "unit"), cluster=cluster, n_resamples=n_resamples,
                  confidence=confidence, seed=seed, breakdowns=split)
    return Result(out.table, out.notes, {**out.settings, "where": subset}, {}, out)


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

    Options: :class:`analysis.options.variance.VarianceOptions` (``facets``,
    ``score_column``, ``interactions``, ``n_resamples``, ``confidence``, ``seed``). The
    fixed part: the design's factors that are not facets (main effects); the model
    factor's interaction with each facet is a component. ``metric_factors``: the
    factors whose joint subgroups the deviation metric is taken over (default: the
    domain factors; the eCDF page passes its own).

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

    Options: :class:`analysis.options.variance.DStudyOptions` (the G-study's, and
    ``target_se``, ``target``, ``answer_cost``, ``judge_cost``). ``levels``: one more
    design to project (``{"template": 60}``); ``max_cost``: designs costing more are
    left out.

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
