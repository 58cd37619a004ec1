"""The whole-analysis report: sections built from the functions the pages and CLI call.

A report is a list of sections (``coverage``, ``subgroups``, ``ecdf``, ``importance``,
``disparity``, ``index``, ``cohorts``, ``judges``), each with *settings*: a small,
JSON-serialisable dict (what the app's "Add to report" button stores). Settings left out
take the defaults the pages start from (:func:`default_settings`). A section whose
inputs the design or table lacks (no model factor for the eCDF, no numeric column for
disparity ...) is *skipped with a stated reason*, never an error.

Outputs: :func:`report_html` (one self-contained file, plotly.js inlined once, every
label escaped), :func:`report_zip` (each figure as PNG/SVG/PDF when a Chrome is
available, each table as CSV, the HTML and a README) and :func:`report_pdf` (the HTML
printed by headless Chromium). See ``docs/report.md``.
"""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re
import shutil
import subprocess
import tempfile
import unicodedata
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError, SectionSkipped
from analysis.labels import adjusted_method
from analysis.options import OptionError, ReportSection, all_options, options_for
from analysis.options.common import BOOTSTRAP_FIELDS, NOISE_FIELDS
from analysis.options.common import CI_CHOICES as _CI_CHOICES

__all__ = [
    "CI_CHOICES", "CI_KEYS", "CI_SECTIONS", "COHORT_MAX_GROUPS", "HTML_MAX_ROWS",
    "NOISE_SECTIONS", "PDF_UNAVAILABLE", "PRINT_COLUMNS", "Report", "SECTIONS",
    "Section", "SettingsError", "TITLES", "ZIP_NAME_MAX",
    "build_or_skip", "build_report", "build_section", "chromium_path", "ci_defaults",
    "data_summary", "default_settings", "describe_bootstrap", "design_table", "noise_arguments",
    "noise_defaults", "package_version", "plain", "report_html", "report_pdf", "report_zip",
    "suspect_labels", "zip_entry_name",
]


#: The cohorts section's default 'by' factor has at most this many values (one facet each).
COHORT_MAX_GROUPS = 12
#: Rows of a table shown in the HTML (the CSV in the ZIP holds every row).
HTML_MAX_ROWS = 200
#: Sections with bootstrap intervals (setting ``ci``: the analyses whose options have
#: it) and their default replicates (the ``n_resamples`` option of each: the pages' and
#: the subcommands' ``--n-boot``).
CI_SECTIONS: dict[str, int] = {name: cls.default("n_resamples")
                               for name, cls in all_options().items() if "ci" in cls.specs()}
#: The values of the ``ci`` setting.
CI_CHOICES: tuple[str, ...] = _CI_CHOICES
#: The settings that control the intervals (besides ``ci``: ``cluster``, replicates ...).
CI_KEYS: tuple[str, ...] = BOOTSTRAP_FIELDS
#: The keys of a section's ``judge_noise`` setting -> the options they set.
_NOISE_OPTIONS = {"replicates": "judge_noise", "mode": "noise_mode", "seed": "seed",
                  "alpha": "noise_alpha"}
#: Sections with the ``judge_noise`` setting (:mod:`analysis.judge_noise`: the analyses
#: whose options have it) and the keys of that setting (``replicates`` 0: off); importance
#: has no ``noise_alpha``: it tests at its own ``alpha``.
NOISE_SECTIONS: dict[str, tuple[str, ...]] = {
    name: tuple(k for k, o in _NOISE_OPTIONS.items() if o in cls.specs())
    for name, cls in all_options().items() if "judge_noise" in cls.specs()}
PDF_UNAVAILABLE = ("A PDF of the report needs Chromium (on Debian/Ubuntu `apt-get install "
                   "chromium`); the HTML report works without it.")


class SettingsError(AnalysisError):
    """A report asks for an unknown section or names an unknown setting (a typo: the whole
    report stops, the CLI exits 2); other failures only skip their section."""


@dataclass
class Section:
    """One built section of the report.

    Attributes
    ----------
    name
        One of :data:`SECTIONS`.
    settings
        The settings used (defaults filled in), JSON-serialisable.
    figures
        ``(file stem, plotly Figure)`` pairs.
    tables
        ``(file stem, DataFrame)`` pairs.
    notes
        Plain-language readings (shown as a list).
    warnings
        Warnings as the analysis functions report them (nesting, small n, refusals ...).
    skipped
        Why the section was skipped (then it holds nothing else), or None.
    adjustments
        The multiple-testing method (``analysis.multiple_testing.METHODS``) of each
        table's ``p_adjusted``, by table stem: its header names it ("p (Holm)").
    defaults
        The default settings for this table and design (what ``settings`` is compared
        with to list the choices made, :func:`analysis.report_text.settings_lines`).
    """

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    figures: list[tuple[str, Any]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: str | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    adjustments: dict[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The section's heading."""
        return TITLES[self.name]


@dataclass
class Report:
    """A built report: the design, a data summary and the sections."""

    source: str
    design: Any
    summary: dict[str, Any]
    sections: list[Section]
    version: str
    created: str


def plain(obj: Any) -> Any:
    """``obj`` made JSON-serialisable (dataclasses, tuples, numpy scalars, NaN -> None)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return plain(dataclasses.asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(float(obj)) else float(obj)
    return obj


def package_version() -> str:
    """The installed bias-workbench version (pyproject's when not installed)."""
    try:
        from importlib.metadata import version

        return version("bias-workbench")
    except Exception:  # noqa: BLE001 - not installed: read pyproject.toml
        import tomllib

        path = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            return tomllib.loads(path.read_text())["project"]["version"]
        except (OSError, KeyError, ValueError):
            return "unknown"


# ---------------------------------------------------------------- default settings

def ci_defaults(section: str, design) -> dict[str, Any]:
    """The interval settings of a section in :data:`CI_SECTIONS` (off by default), the
    defaults of the section's options (:class:`analysis.options.common.BootstrapOptions`).

    ``ci`` (``none`` | ``bootstrap``), ``cluster`` (resampled as units; default the
    design's cluster, None: rows), ``n_resamples`` (replicates; saved settings may call it
    ``n_boot``), ``seed``, ``confidence``.
    """
    out = {k: v for k, v in options_for(section)().settings().items() if k in CI_KEYS}
    return {**out, "cluster": design.cluster}


def describe_bootstrap(options: Mapping[str, Any]) -> str:
    """One sentence naming the interval settings used (a Result's ``settings``: the
    cluster resampled, ``n_resamples``, ``seed``, ``confidence``)."""
    unit = (f"whole clusters of {options['cluster']}" if options.get("cluster")
            else "rows (independent)")
    return (f"Bootstrap percentile intervals at {100 * options['confidence']:g} %: "
            f"{options['n_resamples']:,} replicates resampling {unit}, seed {options['seed']}.")


def noise_defaults(section: str) -> dict[str, Any]:
    """The ``judge_noise`` setting of a section in :data:`NOISE_SECTIONS` (off:
    ``replicates`` 0), the other keys the defaults of the section's options
    (:class:`analysis.options.common.NoiseOptions`: ``mode``, ``seed``, subgroups'
    ``alpha``)."""
    cls = options_for(section)
    out = {"replicates": 0, "mode": cls.default("noise_mode"), "seed": cls.default("seed")}
    if "alpha" in NOISE_SECTIONS[section]:
        out["alpha"] = cls.default("noise_alpha")
    return out


def noise_arguments(section: str, settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge-noise options (``judge_noise``, ``noise_mode``, ``seed``, subgroups'
    ``noise_alpha``) of a section's ``judge_noise`` setting (missing keys take
    :func:`noise_defaults`; :data:`_NOISE_OPTIONS`), checked by the section's options;
    None when ``replicates`` is 0.

    Raises
    ------
    SettingsError
        ``judge_noise`` is not a mapping or has an unknown key.
    OptionError
        A value the options refuse (the API's message).
    """
    given = settings.get("judge_noise") or {}
    if not isinstance(given, Mapping):
        raise SettingsError(f"judge_noise must map replicates, mode, seed"
                            f"{', alpha' if section == 'subgroups' else ''} to values, got "
                            f"{given!r}.")
    unknown = sorted(set(given) - set(NOISE_SECTIONS[section]))
    if unknown:
        raise SettingsError(f"judge_noise: unknown key(s) {', '.join(map(str, unknown))} "
                            f"(known: {', '.join(NOISE_SECTIONS[section])}).")
    noise = {_NOISE_OPTIONS[k]: v for k, v in {**noise_defaults(section), **given}.items()}
    opts = options_for(section).coerce(noise, judge_noise=noise["judge_noise"] or None)
    if opts.judge_noise is None:
        return None
    return {name: getattr(opts, name) for name in noise}


def _noise_rows(results: pd.DataFrame) -> None:
    """Refuse judge noise on an engine's fine cell table (``n_all`` counts, no row-level
    ``deviation``: :func:`analysis.engines.base.fine_cell_table`)."""
    from analysis.cell_counts import N_ALL
    from analysis.columns import DEVIATION
    from analysis.judge_noise import JudgeNoiseError

    if N_ALL in results.columns and DEVIATION not in results.columns:
        raise JudgeNoiseError("judge noise redraws the judge's score of every row, so it "
                              "needs the rows: load the table with the pandas engine.")


def _category_default(results: pd.DataFrame, design) -> str | None:
    """The cohorts section's categorical outcome: the first non-factor candidate of
    :func:`analysis.cohort_inputs.category_candidates` (never a prompt's own text when
    another column varies within the prompts)."""
    from analysis.cohort_inputs import category_candidates
    from analysis.columns import DEVIATION
    from analysis.distribution import MAX_CATEGORIES

    out = category_candidates(results, design.names, design.prompt_unit_columns(),
                              exclude=(DEVIATION, *design.names),
                              max_categories=MAX_CATEGORIES)
    return out[0] if out else None


def default_settings(section: str, results: pd.DataFrame, design) -> dict[str, Any]:
    """The settings a page starts from, for this table and design.

    Raises
    ------
    SectionSkipped
        The design or table lacks what the section needs (the message says what).
    AnalysisError
        An unknown section name.
    """
    from analysis import disparity as dsp
    from analysis.factor_defaults import default_factors as start_with
    from analysis.factor_defaults import grid_factors as default_factors
    from analysis.factor_defaults import useful_factors

    decl = _BY_NAME.get(section)
    if decl is not None and decl.defaults is not None:  # declared with its defaults
        return decl.defaults(results, design)
    if decl is not None and decl.options is not None:  # declared on its options class
        return {**decl.options().settings(), "where": {}}
    # no constant, text-like, id or nested-duplicate factor (analysis/factor_defaults.py)
    models = useful_factors(results, design, ("model",)) or design.of_kind("model")
    has_outcome = design.outcome is not None
    if section in ("subgroups", "ecdf", "importance", "index") and not has_outcome:
        raise SectionSkipped("the design has no outcome (how a row counts as a deviation).")
    if section == "coverage":
        useful = useful_factors(results, design, ("domain", "prompt"))
        return {"factors": [f for f in default_factors(design) if f in useful]
                or default_factors(design), **options_for(section)().settings(),
                "where": {}}
    if section == "subgroups":
        order = start_with(results, design, 2)
        from analysis.options.common import BOOTSTRAP_FIELDS, NOISE_FIELDS

        # every option of subgroups(); the intervals' and the noise's from their defaults
        opts = options_for(section)().settings(skip=(*BOOTSTRAP_FIELDS, *NOISE_FIELDS))
        return {"factors": order, **opts,
                "level": max(1, min(2, len(order))),  # the option's None, resolved
                "where": {},
                **ci_defaults(section, design),
                "judge_noise": noise_defaults(section)}
    if section == "ecdf":
        if not models:
            raise SectionSkipped("the design has no model factor to compare curves by.")
        return _ecdf_defaults(results, design, models[0])
    if section == "importance":
        from analysis.factor_defaults import importance_factors
        from analysis.options.common import NOISE_FIELDS
        from analysis.options.importance import ImportanceOptions

        factors = importance_factors(results, design)
        return {"factors": factors,
                "references": {f: design.factor(f).reference for f in factors},
                **ImportanceOptions().settings(skip=NOISE_FIELDS), "cluster": design.cluster,
                "where": {}, "judge_noise": noise_defaults(section), "covariates": [],
                "standardise": True, **_linear_defaults(results, design)}
    if section == "disparity":
        numeric = dsp.numeric_columns(results, design)
        if not numeric:
            raise SectionSkipped("the table has no numeric column besides the factors "
                                 "(e.g. a sentiment or judge score).")
        # polarity "design": the feature's polarity the design declares (resolved when
        # the section is built, for whichever feature the settings name)
        from analysis.options.disparity import SAGED_FIELDS, DisparityOptions

        by = start_with(results, design, 1) or dsp.default_group(design)
        return {"feature": numeric[0], "by": by,
                **DisparityOptions().settings(skip=SAGED_FIELDS), "where": {}}
    if section == "index":
        model = models[0] if models else None
        exclude = [model] if model else []
        dims = (start_with(results, design, 2, ("domain",), exclude=exclude)
                or start_with(results, design, 2, exclude=exclude))
        if not dims:
            raise SectionSkipped("the design has no domain factor to serve as a bias "
                                 "dimension.")
        from analysis.options.index import IndexOptions

        opts = IndexOptions()
        kw = opts.index_kwargs(dims)  # the bias_index arguments the options give
        return {"dimensions": kw["dimensions"],
                "model": model, "sentiment_by": dims[0],  # the options' None, resolved
                **{k: kw[k] for k in ("ideal", "normalize_weights", "printed_equation",
                                      "penalty_kind", "penalty_value", "penalty_factors",
                                      "sentiment", "sentiment_score", "sentiment_scale")},
                "where": {}, **ci_defaults(section, design)}
    if section == "cohorts":
        category = _category_default(results, design)
        if category is None:
            raise SectionSkipped("the table has no categorical outcome column (2 to 50 "
                                 "categories) besides the factors.")
        cohorts = [f for f in design.names if f != category]
        named = [f for f in cohorts if any(w in f.lower() for w in (
            "model", "decade", "cohort", "era", "format", "checkpoint", "version"))]
        cohort = (named or [m for m in models if m != category] or cohorts)[0]
        domain = [f for f in useful_factors(results, design, ("domain",))
                  if f not in (category, cohort)
                  and len(design.factor(f).values) <= COHORT_MAX_GROUPS]
        from analysis.options.cohorts import CohortsOptions

        # renormalise False: answers outside `categories` stay in the denominator
        return {"category": category, "cohort": cohort, "by": domain[:1], "categories": None,
                **CohortsOptions().settings(skip=_CAPSULE_ONLY), "where": {}}
    if section == "variance":  # analysis/variance_components.py
        from analysis.options.variance import VarianceOptions
        from analysis.variance_components import default_facets

        if not has_outcome:
            raise SectionSkipped("the design has no outcome (how a row counts as a "
                                 "deviation).")
        if not default_facets(results, design):
            raise SectionSkipped("no random facet: the design has no cluster and no column "
                                 "is named as a seed, sample, temperature or judge.")
        return {**VarianceOptions().settings(), "where": {}}
    if section == "judges":
        from analysis.judge_stats import columns as JC

        needed = [JC.STAGE, JC.JUDGE, JC.SENSITIVE_FACTOR, JC.MODEL]
        missing = [c for c in needed if c not in results.columns]
        if missing or not any(c in results.columns for c in (*JC.METRICS, JC.SIMILARITY)):
            raise SectionSkipped("the table is not a judged four-stage file (columns "
                                 f"{', '.join(missing) or 'with scores'} missing).")
        return {"by": [JC.STAGE, JC.SENSITIVE_FACTOR, JC.MODEL]}
    raise AnalysisError(f"Unknown report section {section!r}: use one of "
                        f"{', '.join(SECTIONS)}.")


def _ecdf_defaults(results: pd.DataFrame, design, by: str) -> dict[str, Any]:
    """The eCDF section's defaults for curves compared by ``by`` (the model by default;
    the page lets the user compare by any factor)."""
    from analysis.factor_defaults import default_factors as start_with

    factors = start_with(results, design, 2, exclude=[by])
    if not factors:
        raise SectionSkipped(f"the design has no factor besides {by} to form subgroups.")
    from analysis.options.common import BOOTSTRAP_FIELDS

    opts = options_for("ecdf")().settings(skip=BOOTSTRAP_FIELDS)  # the intervals': below
    return {"by": by, "factors": factors, **opts,
            "level": len(factors),  # the option's None, resolved
            "where": {}, **ci_defaults("ecdf", design)}


# ---------------------------------------------------------------- section builders

def _where(settings: Mapping[str, Any]) -> dict[str, list[str]]:
    return {k: [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
            for k, v in (settings.get("where") or {}).items() if v}


def _coverage(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.figures.coverage import coverage_heatmap, marginal_bar

    factors = list(s["factors"])
    # distinct prompts (default) or responses, as the page and ``coverage --count``
    result = bw.coverage(results, design, options=options_for("coverage").from_settings(s),
                         factors=factors, where=_where(s), applied=True, models=())
    marginals, counted = result.tables["marginals"], result.meta["counted"]
    sec.notes += list(result.notes)
    sec.warnings += result.meta["nesting_reading"]
    sec.tables += [("coverage_summary", result.table), ("coverage_marginals", marginals),
                   ("coverage_thinnest_cells", result.tables["thinnest_cells"])]
    if "pairs" in result.tables:
        sec.figures.append((f"coverage_{factors[0]}_{factors[1]}",
                            coverage_heatmap(result.tables["pairs"], factors[0], factors[1],
                                             counted=counted)))
    sec.figures.append((f"coverage_{factors[0]}", marginal_bar(marginals, factors[0],
                                                               counted=counted)))


def _subgroups(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.columns import DUPLICATE_OF, LD_UNDEFINED, SMALL_N, SUBGROUP
    from analysis.figures.subgroups import sunburst_figure
    from analysis.options import FROM_DESIGN

    factors = list(s["factors"])
    noise = noise_arguments("subgroups", s)
    cluster = s.get("cluster") or None  # the section's cluster (default: the design's)
    opts = options_for("subgroups").from_settings(  # the bootstrap's seed: the section's
        s, skip=[f for f in NOISE_FIELDS if f != "seed"],
        cluster=FROM_DESIGN if cluster == design.cluster else cluster)
    result = bw.subgroups(results, design, options=opts, factors=factors, where=_where(s),
                          applied=True)
    table = result.tables["all"]
    sec.notes.append(f"CIs and p-values: {result.settings['uncertainty']}.")
    sec.warnings += [n for n in result.meta["warnings"]
                     if not n.startswith("CIs and p-values are cluster-robust")]
    if opts.ci == "bootstrap":  # boot_se, boot_ci_low, boot_ci_high beside the Woolf interval
        sec.notes.append(describe_bootstrap(result.settings)
                         + " Columns boot_ci_low and boot_ci_high of the subgroups table: "
                         "the interval of the log disparity.")
    if table[SMALL_N].any():
        sec.warnings.append(f"{int(table[SMALL_N].sum())} subgroups have fewer than "
                            f"{int(s['min_n'])} rows (small n).")
    if table[LD_UNDEFINED].any():
        sec.warnings.append(f"{int(table[LD_UNDEFINED].sum())} subgroups have no log "
                            "disparity: they hold every row of the subset, or the outcome "
                            "never/always deviates in it.")
    if opts.pooled:  # the sunburst and the top findings read the pooled values
        from analysis.pooling import POOLED_COLOUR_TITLE, POOLED_LABEL

        sec.notes.append(f"Sunburst and top findings: {POOLED_LABEL}; the raw rate and LD "
                         "are beside them in the subgroups table.")
        sec.notes += result.meta["pooling_notes"]
        sec.tables.append(("subgroups_pooling", result.tables["pooling"]))
    sec.figures.append(("subgroups_sunburst", sunburst_figure(
        _shown(table, opts.pooled), factors,
        colour_title=POOLED_COLOUR_TITLE if opts.pooled else None)))
    if noise:  # noise_same_sign, noise_significant, noise_survives (its own seed)
        from analysis.judge_noise import MODE_LABELS, NOISE_COLUMNS
        from analysis.multiple_testing import LABELS

        _noise_rows(results)
        shares = bw.subgroups(results, design, options=opts, factors=factors,
                              where=_where(s), applied=True, ci="none", power=None,
                              **noise)
        sec.notes.append(f"Judge noise: {noise['judge_noise']:,} replicates of the judge's "
                         f"scores ({MODE_LABELS[noise['noise_mode']]}), seed {noise['seed']}, "
                         f"significant at {LABELS[opts.adjust]}-adjusted p < "
                         f"{noise['noise_alpha']:g}. {shares.meta['judge_noise_summary']}")
        label = table[DUPLICATE_OF].where(table[DUPLICATE_OF].notna(), table[SUBGROUP])
        by_label = shares.table.set_index(SUBGROUP)
        table = table.copy()
        for col in NOISE_COLUMNS:  # a duplicate takes its representative's shares
            table[col] = label.map(by_label[col]).to_numpy(dtype=float)
    sec.tables.append(("subgroups", table[[SUBGROUP, *[c for c in table.columns
                                                        if c != SUBGROUP]]]))
    sec.adjustments["subgroups"] = opts.adjust
    _top_findings(sec, _shown(table, opts.pooled), int(s["min_n"]), opts.adjust)


def _shown(table: pd.DataFrame, pooled: bool) -> pd.DataFrame:
    """The table the figures and the top findings read: the pooled values with
    ``pooled`` (:func:`analysis.pooling.swap_pooled`)."""
    from analysis.pooling import swap_pooled

    return swap_pooled(table) if pooled else table


def _top_findings(sec: Section, table: pd.DataFrame, min_n: int, adjust: str = "bh") -> None:
    """The answer first: the strongest subgroups as readings, and their table (``adjust``:
    the method of its adjusted p-values)."""
    from analysis import api as bw
    from analysis.multiple_testing import LABELS

    result = bw.findings(table, min_n=min_n, limit=10)
    found, used = result.table, result.settings
    rule = (f"|LD| >= {used['min_abs_ld']:g}, {LABELS[adjust]}-adjusted p <= "
            f"{used['max_p_adjusted']:g}, n >= {min_n:,}")
    if found.empty:
        sec.notes.append(f"Top findings ({rule}): no subgroup passes.")
        return
    lines = result.meta["readings"][:5]
    sec.notes.append(f"Top findings ({rule}), strongest first: " + "; ".join(lines)
                     + ("." if len(found) <= 5 else f"; and {len(found) - 5} more."))
    sec.tables.append(("subgroups_top_findings", found))
    sec.adjustments["subgroups_top_findings"] = adjust


def _ecdf(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.columns import N_SUBGROUPS
    from analysis.figures.ecdf import ecdf_figure
    from analysis.options import FROM_DESIGN

    by, factors = s["by"], list(s["factors"])
    cluster = s.get("cluster") or None
    opts = options_for("ecdf").from_settings(
        s, cluster=FROM_DESIGN if cluster == design.cluster else cluster)
    result = bw.ecdf(results, design, options=opts, by=by, factors=factors,
                     where=_where(s), applied=True)
    summary, ks, rates = result.table, result.tables["ks"], result.tables["rates"]
    few = summary[summary[N_SUBGROUPS] < 5]
    if len(few):
        sec.warnings.append("Few subgroups on " + ", ".join(
            f"{r[by]} ({r[N_SUBGROUPS]})" for r in few.to_dict(orient="records"))
            + ": the eCDF is coarse and the KS test has little power.")
    title = None
    if opts.pooled:
        from analysis.pooling import POOLED_LABEL, pooled_ecdf_title

        title = pooled_ecdf_title(by)
        sec.notes.append(f"Curves and deviation metric: {POOLED_LABEL}; the raw metric is "
                         "beside it (deviation_metric_raw); the KS tests compare the raw "
                         "rates.")
        sec.notes += result.meta["pooling_notes"]
        sec.tables.append(("ecdf_pooling", result.tables["pooling"]))
    sec.figures.append(("ecdf", ecdf_figure(_shown(rates, opts.pooled), summary, by=by,
                                            ideal=opts.ideal, cutoff=opts.cutoff, ks=ks,
                                            title=title)))
    sec.tables += [("ecdf_summary", summary), ("ecdf_ks", ks)]
    sec.adjustments["ecdf_ks"] = opts.adjust
    if opts.ci == "bootstrap":
        intervals = result.tables["bootstrap"]
        sec.notes.append(describe_bootstrap(result.settings)
                         + " The KS statistic is a supremum: its interval is biased "
                         "upwards (read it as a spread, not a test).")
        sec.notes += _interval_readings(intervals, opts.confidence)
        sec.tables.append(("ecdf_bootstrap", intervals))
    sec.tables.append(("ecdf_subgroup_rates", rates))


def _interval_readings(intervals: pd.DataFrame, confidence: float, limit: int = 12
                       ) -> list[str]:
    """'Deviation metric of A: 0.29 (95 % CI 0.28 to 0.30)' per curve and difference, at
    the intervals' ``confidence``."""
    from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW, ESTIMATE, GROUP_A, GROUP_B, QUANTITY
    from analysis.formatting import level_text

    level = level_text(confidence)
    out = []
    for r in intervals.to_dict(orient="records"):
        if r[QUANTITY] == "deviation_metric":
            what = f"Deviation metric of {r[GROUP_A]}"
        elif r[QUANTITY] == "difference":
            what = f"Difference in deviation metric, {r[GROUP_A]} - {r[GROUP_B]}"
        else:
            continue
        out.append(f"{what}: {r[ESTIMATE]:.4f} ({level} CI {r[BOOT_CI_LOW]:.4f} to "
                   f"{r[BOOT_CI_HIGH]:.4f}).")
    return out[:limit]


def _linear_defaults(results: pd.DataFrame, design) -> dict:
    """The importance section's settings of a continuous outcome (the linear model,
    ``analysis.importance_linear``): the design's covariates the table has, standardised,
    no mixed model. Empty for a 0/1 outcome."""
    from analysis.design_outcome import is_continuous
    from analysis.options.importance_linear import LinearOptions as Lin

    if not is_continuous(design):
        return {}
    return {"covariates": [c for c in design.covariates if c in results.columns],
            "standardise": Lin.default("standardise"), "mixed": Lin.default("mixed"),
            "random_slopes": Lin.default("random_effects") == "slopes",
            "accept_unconverged": Lin.default("accept_unconverged")}


def _importance_linear(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    """A continuous outcome: the linear (cluster-robust) or mixed fit of the score, as the
    Factor importance page shows it, instead of the logistic fit of its 0/1 deviation."""
    from analysis import api as bw
    from analysis.figures.importance_linear import linear_importance_figure
    from analysis.importance import ImportanceRefusal

    factors = list(s["factors"])
    ignored = [k.replace("_", " ") for k in ("interactions", "gee") if s.get(k)] + (
        ["judge noise"] if noise_arguments("importance", s) else [])
    if ignored:
        sec.warnings.append(f"{', '.join(ignored)}: these apply to the logistic model of a 0/1 "
                            "outcome; the linear model of this continuous outcome ignores "
                            "them.")
    try:
        covariates = list(s["covariates"])
        fit = bw.importance_linear(
            results, design, factors=factors, where=_where(s),
            references={f: v for f, v in (s.get("references") or {}).items() if f in factors}
            or None, covariates=covariates, no_covariates=not covariates,
            standardise=bool(s["standardise"]), cluster=s.get("cluster") or None,
            mixed=bool(s["mixed"]),
            random_effects="slopes" if s["random_slopes"] else "intercept",
            accept_unconverged=bool(s["accept_unconverged"]), alpha=float(s["alpha"]),
            adjust=s["adjust"], confidence=float(s.get("confidence", 0.95)),
            small_sample=s.get("small_sample", "cr2"), applied=True).raw
    except ImportanceRefusal as exc:
        sec.warnings.append("The model was not fitted: " + str(exc))
        return
    sec.warnings += list(fit.notes)
    model = {"ols": "linear model (least squares), independent rows",
             "cluster": f"linear model (least squares), cluster-robust over the "
                        f"{fit.n_clusters:,} values of {fit.cluster}",
             "mixed": f"mixed model, random effects per {fit.cluster}"}[fit.covariance]
    sec.notes.append(f"The outcome {fit.outcome} is continuous: {model}; {fit.n_rows:,} rows, "
                     f"R2 {fit.r2:.3f}. A coefficient is the difference in mean "
                     f"{fit.outcome} against the reference, the other terms fixed.")
    sec.figures.append(("factor_importance_linear",
                        linear_importance_figure(fit.terms, outcome=fit.outcome)))
    sec.tables += [("factor_importance_linear", fit.terms),
                   ("factor_importance_linear_tests", fit.factor_tests)]
    # p_adjusted: by the method of ``adjust`` (``none``: Benjamini-Hochberg, raw-p labels)
    sec.adjustments.update(dict.fromkeys(("factor_importance_linear",
                                          "factor_importance_linear_tests"),
                                         adjusted_method({"adjust": s["adjust"]})))
    sec.notes.append(bw.importance_adjustment_sentence(s["adjust"], float(s["alpha"])))


def _importance(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    if "mixed" in s:  # the settings of a continuous outcome (_linear_defaults)
        _importance_linear(sec, results, design, s)
        return
    from analysis import api as bw
    from analysis.columns import P_ADJUSTED, P_VALUE
    from analysis.figures.importance import importance_figure
    from analysis.importance import ImportanceRefusal
    from analysis.judge_noise import MODE_LABELS
    from analysis.options import FROM_DESIGN
    from analysis.options.common import NOISE_FIELDS
    from analysis.options.importance import ImportanceOptions

    factors = list(s["factors"])
    # references of factors not in the model (e.g. defaults for other factors) are left out
    references = {f: v for f, v in (s.get("references") or {}).items() if f in factors}
    cluster = s.get("cluster") or None  # None: no cluster (the page's "none")
    if cluster and cluster not in results.columns and cluster != design.cluster:
        cluster = None
    noise = noise_arguments("importance", s)
    if noise:
        _noise_rows(results)
    options = ImportanceOptions.from_settings(
        s, skip=NOISE_FIELDS, cluster=FROM_DESIGN if cluster == design.cluster else cluster,
        **(noise or {}))
    try:
        result = bw.importance(results, design, options=options, factors=factors,
                               where=_where(s), references=references or None,
                               covariates=list(s.get("covariates") or []),
                               standardise=bool(s.get("standardise", True)), applied=True)
    except ImportanceRefusal as exc:
        sec.warnings.append("The model was not fitted: " + str(exc))
        return
    fit = result.raw
    sec.warnings += list(fit.notes)
    # how the standard errors were computed, stated with the table
    sec.notes.append("Standard errors: " + result.settings["uncertainty"] + (
        "; std_err, z, p_value and the intervals are the robust ones, with each "
        "coefficient's df and n_clusters; the factor tests' p_value is the robust Wald test "
        "(p_value_lr: likelihood ratio, independent rows)." if fit.cluster
        else "."))
    p_column = P_VALUE if options.adjust == "none" else P_ADJUSTED
    sec.notes.append(bw.importance_adjustment_sentence(options.adjust, options.alpha))
    if noise:  # noise_same_sign, _significant, _survives per term
        sec.notes.append(f"Judge noise: {noise['judge_noise']:,} refits on redrawn judge "
                         f"scores ({MODE_LABELS[noise['noise_mode']]}), seed {noise['seed']}, "
                         f"significant at {p_column} < {options.alpha:g}. "
                         + result.meta["judge_noise_summary"])
    sec.figures.append(("factor_importance", importance_figure(
        fit.terms, scale=options.scale, max_p=options.max_p, p_column=p_column,
        references=fit.references)))
    sec.tables += [("factor_importance", result.table),
                   ("factor_importance_lr_tests", fit.factor_tests)]
    # p_adjusted: by the method of ``adjust`` (``none``: Benjamini-Hochberg, raw-p labels)
    sec.adjustments.update(dict.fromkeys(("factor_importance", "factor_importance_lr_tests"),
                                         adjusted_method(result.settings)))


def _disparity(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.figures.disparity import selection_figure, statistic_figure
    from analysis.options.disparity import SAGED_FIELDS, DisparityOptions

    result = bw.disparity(results, design, feature=s["feature"], by=s["by"],
                          options=DisparityOptions.from_settings(s, skip=SAGED_FIELDS),
                          where=_where(s), applied=True)
    report = result.raw
    s["polarity"] = result.meta["options"].polarity  # the design's, resolved
    feature = s["feature"] + (f" - {s['baseline']}" if s.get("baseline") else "")
    if report.settings.get("n_missing"):
        sec.warnings.append(f"{report.settings['n_missing']:,} rows have no value of "
                            f"{feature} and are left out.")
    sec.notes.append(report.dixon.note)
    sec.figures += [(f"disparity_{s['statistic']}",
                     statistic_figure(report.summary, s["statistic"], feature=feature)),
                    ("disparity_selection", selection_figure(report.selection,
                                                             feature=feature))]
    sec.tables += [("disparity_summary", report.summary),
                   ("disparity_selection", report.selection),
                   ("disparity_metrics", report.metrics)]
    if report.permutation is not None:
        sec.tables.append(("disparity_permutation", report.permutation))
        sec.adjustments["disparity_permutation"] = result.settings["adjust"]


def _index(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.columns import LLMBI
    from analysis.figures.index import index_figure
    from analysis.options.index import IndexOptions

    opts = IndexOptions.from_index_kwargs({**s, "cluster": s.get("cluster") or None})
    result = bw.bias_index(results, design, options=opts, dimensions=s["dimensions"],
                           where=_where(s), applied=True)
    totals, components = result.table, result.tables["components"]
    if totals[LLMBI].isna().any():
        sec.warnings.append("The index is undefined for some rows: a component could not be "
                            "computed (see the notes in the components table).")
    sec.figures.append(("bias_index", index_figure(components, totals)))
    sec.tables += [("bias_index_totals", totals), ("bias_index_components", components)]
    if opts.ci == "bootstrap":  # the index and each of its components, per model
        sec.notes.append(describe_bootstrap(result.settings))
        sec.tables.append(("bias_index_bootstrap", result.tables["bootstrap"]))


#: The cohorts options of the time capsules only (the section has none: no demographics).
_CAPSULE_ONLY = ("capsule_star", "adjust")


def _cohorts(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.figures.distribution import distribution_figure, spread_figure
    from analysis.options.cohorts import CohortsOptions

    options = CohortsOptions.from_settings(s, skip=_CAPSULE_ONLY)
    category, cohort, by = s["category"], s["cohort"], list(s.get("by") or [])
    result = bw.cohorts(results, design, category=category, cohort=cohort, by=by,
                        categories=s.get("categories") or None, options=options,
                        where=_where(s), applied=True)
    dist, spread, test = result.table, result.tables["spread"], result.tables["homogeneity"]
    sec.warnings += list(result.notes)  # rows without a category, the tests' notes
    try:
        sec.figures += [("cohorts_stacked", distribution_figure(dist, category, cohort,
                                                                by=by, kind="bar")),
                        ("cohorts_spread", spread_figure(spread, cohort, by=by))]
    except ValueError as exc:  # plotly refuses too many facet rows (one per group of by)
        sec.warnings.append(f"The figures could not be drawn ({str(exc).splitlines()[0]}); "
                            "choose fewer or coarser 'by' factors. The tables are complete.")
    sec.tables += [("cohorts_percentages", result.tables["percentages"]),
                   ("cohorts_spread", spread), ("cohorts_chi_square", test)]


def _judges(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.judge_stats import columns as JC
    from analysis.judge_stats.errors import JudgesError

    try:
        result = bw.judge_stage_metrics(results, by=list(s["by"]), figures=True)
    except JudgesError as exc:
        raise SectionSkipped(str(exc)) from None
    table = result.table
    unscored = int(table[JC.N_UNSCORED].sum())
    if unscored:
        sec.warnings.append(f"{unscored:,} judgments are unscored (the judge's reply could "
                            "not be parsed or was refused; see unscored_reason).")
    sec.tables.append(("judge_stage_metrics", table))
    sec.figures += list(result.meta["figures"].items())  # FairMonitor's Figures 4 and 5


def _imported(path: str) -> Callable[..., Any]:
    """The function ``module:name``, its module imported on the first call (a section
    built or declared in its own module loads it only when the section is built)."""
    import importlib

    module, _, name = path.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


def _variance(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    from analysis import api as bw
    from analysis.options.variance import VarianceOptions

    result = bw.variance_components(results, design, options=VarianceOptions.from_settings(s),
                                    where=_where(s), applied=True)
    sec.notes += [*result.meta.get("headline", []),
                  f"Method: {result.settings['method']}. Total-error intervals: the facets' "
                  f"variance added to the sampling variance (docs/measurement_error.md).",
                  *result.notes]
    sec.tables += [("variance_components", result.table),
                   ("total_error", result.tables["total_error"])]


def _declared_builder(sec: Section, results: pd.DataFrame, design, s: dict) -> None:
    """The builder of a section declared on an options class without its own: the
    options' ``FUNCTION`` at the section's settings; its table and notes."""
    cls = _BY_NAME[sec.name].options
    result = _imported(cls.FUNCTION)(results, design, options=cls.from_settings(s),
                                     where=_where(s), applied=True)
    sec.notes += list(result.notes)
    sec.tables.append((sec.name, result.table))


def _declared_sections() -> list[ReportSection]:
    """The sections analyses declare on their options class (``REPORT``), completed."""
    out = []
    for cls in all_options().values():
        if cls.REPORT is not None:
            decl = cls.REPORT
            out.append(dataclasses.replace(
                decl, name=decl.name or cls.NAME, options=cls,
                builder=decl.builder or _declared_builder))
    return out


def _in_order(builtin: Sequence[ReportSection],
              declared: Sequence[ReportSection]) -> tuple[ReportSection, ...]:
    """``builtin`` with each declared section placed after its ``after`` (or last)."""
    out = list(builtin)
    for decl in declared:
        names = [r.name for r in out]
        out.insert(names.index(decl.after) + 1 if decl.after in names else len(out), decl)
    return tuple(out)


#: Every section, once: name, title and builder (its default settings: a branch of
#: :func:`default_settings`), in the order a full report lists them; then the sections
#: analyses declare on their options class (``Options.REPORT``, docs/architecture.md).
REPORT_SECTIONS: tuple[ReportSection, ...] = _in_order((
    ReportSection("Coverage", "coverage", builder=_coverage),
    ReportSection("Subgroups", "subgroups", builder=_subgroups),
    ReportSection("eCDF", "ecdf", builder=_ecdf),
    ReportSection("Factor importance", "importance", builder=_importance),
    ReportSection("Disparity", "disparity", builder=_disparity),
    ReportSection("Bias index", "index", builder=_index),
    ReportSection("Cohorts", "cohorts", builder=_cohorts),
    ReportSection("Judges", "judges", builder=_judges),
    ReportSection("Compare", "compare", builder=_imported("analysis.compare_report:build"),
                  defaults=_imported("analysis.compare_report:default_settings")),
    ReportSection("Counterfactual pairs", "counterfactual",
                  builder=_imported("analysis.counterfactual_report:build"),
                  defaults=_imported("analysis.counterfactual_report:default_settings")),
    ReportSection("Native scores", "native",
                  builder=_imported("analysis.report_native:build_native"),
                  defaults=_imported("analysis.report_native:native_defaults")),
    ReportSection("Checks", "checks", builder=_imported("analysis.report_native:build_checks"),
                  defaults=_imported("analysis.report_native:checks_defaults")),
    ReportSection("Measurement error", "variance", builder=_variance),
), _declared_sections())
#: Section name -> its record (a declared section's defaults: the options' unless the
#: record gives them).
_BY_NAME: dict[str, ReportSection] = {r.name: r for r in REPORT_SECTIONS}
#: Section names, in the order a full report lists them.
SECTIONS: tuple[str, ...] = tuple(r.name for r in REPORT_SECTIONS)
#: Section name -> title.
TITLES: dict[str, str] = {r.name: r.title for r in REPORT_SECTIONS}
_BUILDERS: dict[str, Callable[[Section, pd.DataFrame, Any, dict], None]] = {
    r.name: r.builder for r in REPORT_SECTIONS}


def build_section(name: str, results: pd.DataFrame, design,
                  settings: Mapping[str, Any] | None = None) -> Section:
    """One section from the results table (design applied) and its settings.

    Settings given override :func:`default_settings`; an unknown key raises
    :class:`~analysis.errors.AnalysisError`. A section the table or design cannot
    support comes back with ``skipped`` set (and nothing else).
    """
    if name not in _BUILDERS:
        raise SettingsError(f"Unknown report section {name!r}: use one of "
                            f"{', '.join(SECTIONS)}.")
    try:
        defaults = _section_defaults(name, results, design, settings)
    except SectionSkipped as exc:
        return Section(name, settings=plain(dict(settings or {})), skipped=str(exc))
    from analysis.options import current_names

    # settings saved under a name an option had before (random_state ...) still load
    merged = _merged_settings(name, defaults, current_names(settings or {}, defaults))
    sec = Section(name, settings=merged, defaults=plain(defaults))
    try:
        _run_builder(sec, results, design)
    except SectionSkipped as exc:
        return Section(name, settings=merged, skipped=str(exc), defaults=plain(defaults))
    return sec


def _section_defaults(name: str, results: pd.DataFrame, design,
                      settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """:func:`default_settings`, or :class:`SectionSkipped`; an eCDF compared by a
    factor of the settings needs no model factor."""
    try:
        return default_settings(name, results, design)
    except SectionSkipped:
        if name != "ecdf" or not (settings or {}).get("by"):
            raise
        # no model factor, but the eCDF page compared the curves by another factor
        return _ecdf_defaults(results, design, str(settings["by"]))


def _merged_settings(name: str, defaults: Mapping[str, Any],
                     settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The defaults overridden by ``settings``; an unknown key is a :class:`SettingsError`."""
    unknown = sorted(set(settings or {}) - set(defaults))
    if unknown:
        raise SettingsError(f"Report section {name!r}: unknown setting(s) "
                            f"{', '.join(unknown)} (known: {', '.join(sorted(defaults))}).")
    merged = plain({**defaults, **dict(settings or {})})
    if name in NOISE_SECTIONS and isinstance(merged.get("judge_noise") or {}, Mapping):
        # a partial judge_noise setting (e.g. {replicates: 200}) keeps the other defaults
        merged["judge_noise"] = {**noise_defaults(name), **(merged.get("judge_noise") or {})}
    return merged


def _run_builder(sec: Section, results: pd.DataFrame, design) -> None:
    """Fill ``sec`` with its builder; every error names the section (a bad setting is a
    :class:`SettingsError`), :class:`SectionSkipped` passes through."""
    from analysis.judge_noise import JudgeNoiseError

    try:
        _BUILDERS[sec.name](sec, results, design, sec.settings)
    except SectionSkipped:
        raise
    except OptionError as exc:  # a value the section's options refuse (type, choice)
        raise SettingsError(f"Report section {sec.name!r}: bad settings ({exc})") from None
    except (SettingsError, JudgeNoiseError) as exc:  # a bad value of a setting, or judge
        # noise (off by default) asked for on a table without the judge's scores: stop
        raise SettingsError(f"Report section {sec.name!r}: {exc}") from exc
    except AnalysisError as exc:  # e.g. a factor the design no longer has
        raise AnalysisError(f"Report section {sec.name!r}: {exc}") from exc
    except (TypeError, ValueError, KeyError) as exc:  # a setting of the wrong type
        raise SettingsError(f"Report section {sec.name!r}: bad settings ({exc}).") from None


def build_or_skip(name: str, results: pd.DataFrame, design,
                  settings: Mapping[str, Any] | None = None) -> Section:
    """:func:`build_section`, with a section that cannot be computed coming back skipped
    with its reason (so the rest of the report is still built).

    Raises
    ------
    SettingsError
        An unknown section or setting name (a typo stops the whole report).
    """
    try:
        return build_section(name, results, design, settings)
    except SettingsError:
        raise
    except AnalysisError as exc:
        reason = str(exc).removeprefix(f"Report section {name!r}: ")
    except Exception as exc:  # noqa: BLE001 - one section's failure must not lose the rest
        reason = f"it could not be computed ({type(exc).__name__}: {exc})"
    return Section(name, settings=plain(dict(settings or {})), skipped=reason)


def data_summary(results: pd.DataFrame, design) -> dict[str, Any]:
    """Rows, columns of the user's table (the ``deviation`` column the design adds is not
    one of them, issue 42), deviations, factor value counts and nestings."""
    from analysis import api as bw
    from analysis.columns import DEVIATION

    added = int(DEVIATION in results.columns and design.outcome is not None)
    out: dict[str, Any] = {"rows": len(results), "columns": int(results.shape[1]) - added}
    if DEVIATION in results.columns:
        dev = results[DEVIATION]
        out["rows with an outcome"] = int(dev.notna().sum())
        out["deviations"] = int(dev.sum())
        out["deviation rate"] = round(float(dev.mean()), 6) if dev.notna().any() else None
    nested = bw.nesting(results, design, columns=design.names, applied=True)
    out["nestings"] = list(nested.meta["messages"])
    return out


def build_report(results: pd.DataFrame, design,
                 sections: Sequence[str | tuple[str, Mapping[str, Any] | None]] = SECTIONS,
                 *, source: str = "results") -> Report:
    """Build every requested section (a name, or ``(name, settings)``).

    Parameters
    ----------
    results
        The results table from :func:`analysis.design.apply_design`.
    design
        The :class:`~analysis.design.Design` applied.
    sections
        Section names or ``(name, settings)`` pairs, in report order.
    source
        The data's name, shown in the header.
    """
    built = []
    for item in sections:
        name, settings = (item, None) if isinstance(item, str) else item
        built.append(build_or_skip(name, results, design, settings))
    return Report(source=source, design=design, summary=data_summary(results, design),
                  sections=built, version=package_version(),
                  created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))


# ---------------------------------------------------------------- HTML

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;
padding:2px 6px;text-align:right;vertical-align:top}th{background:#f3f3f3;text-align:center}
td:first-child{text-align:left}.warn{background:#fff4e0;
border-left:4px solid #f0a000;padding:.4em .8em;margin:.3em 0}.skip{background:#eef2f7;
border-left:4px solid #7a8ca5;padding:.4em .8em;margin:.3em 0}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.85em}
.scroll{overflow-x:auto;max-width:100%}.print{display:none}
.caption{color:#555;font-size:.9em;margin:.2em 0 .4em}
.empty{color:#555;font-style:italic}h3{margin-bottom:.1em}ul.settings{color:#333}
section{page-break-before:always}section.skipped{page-break-before:auto}
@media print{body{max-width:none;margin:0 1em;font-size:10pt}details{display:none}
.scroll{overflow:visible}table{font-size:7pt;width:100%;table-layout:auto}
td,th{word-break:normal;overflow-wrap:normal;hyphens:none;padding:1px 3px}
.screen{display:none}.print{display:block}
.figure{page-break-inside:avoid}.modebar-container{display:none}
h2,h3{page-break-after:avoid}section.skipped,ul.settings{page-break-inside:avoid}}"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _figure_div(fig, div_id: str) -> str:
    # JSON inside <script>: escape <, > and & so no label can close the tag
    spec = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&",
                                                                                  "\\u0026")
    return (f'<div id="{div_id}" style="height:520px"></div><script>(function(){{'
            f'var f={spec};Plotly.newPlot("{div_id}",f.data,f.layout,'
            '{"responsive":true,"displaylogo":false});})();</script>')


#: Data columns per printed part of a wide table (the first column is repeated in each):
#: at 7 pt on a Letter or A4 page that many fit without squeezing a cell (issue 42: the
#: PDF broke "374" as "37 / 4" in a 20-column table). On screen the table scrolls.
PRINT_COLUMNS = 8


def _table_html(table: pd.DataFrame, stem: str = "", adjust: str | None = None,
                confidence: float | None = None) -> str:
    """The first :data:`HTML_MAX_ROWS` rows, rounded as on the pages, in a box that scrolls
    sideways on screen and wraps in print (one sentence for an empty table; ``adjust``:
    the method of its ``p_adjusted``, ``confidence`` the level of its intervals, named in
    the headers)."""
    from analysis.report_text import display_table

    if table.empty:
        return '<p class="empty">No rows: nothing to show for these settings.</p>'
    shown = display_table(table.head(HTML_MAX_ROWS), stem, adjust=adjust,
                          confidence=confidence)
    body = '<div class="scroll">' + shown.to_html(index=False, escape=True) + "</div>"
    if shown.shape[1] > PRINT_COLUMNS + 1:  # printed in parts: no cell squeezed mid-word
        body = body.replace('<div class="scroll">', '<div class="scroll screen">', 1)
        rest = list(shown.columns[1:])
        parts = [rest[i:i + PRINT_COLUMNS] for i in range(0, len(rest), PRINT_COLUMNS)]
        body += '<div class="print">' + "".join(
            f'<p class="caption">Columns {i * PRINT_COLUMNS + 2}-'
            f'{i * PRINT_COLUMNS + 1 + len(part)} of {shown.shape[1]} (the first repeated)'
            "</p>" + shown[[shown.columns[0], *part]].to_html(index=False, escape=True)
            for i, part in enumerate(parts)) + "</div>"
    if len(table) > HTML_MAX_ROWS:
        body += (f"<p>First {HTML_MAX_ROWS} of {len(table):,} rows; the ZIP holds the full "
                 "table as CSV.</p>")
    return body


def design_table(design) -> pd.DataFrame:
    """One row per factor: name, kind, reference, number of values, the values."""
    return pd.DataFrame([{"factor": f.name, "kind": f.kind, "reference": f.reference,
                          "n_values": len(f.values), "values": ", ".join(map(str, f.values))}
                         for f in design.factors])


def _summary_items(summary: Mapping[str, Any]) -> list[str]:
    """The data summary as list items, numbers rounded (counts with separators)."""
    out = []
    for key, value in summary.items():
        if key == "nestings":
            continue
        if isinstance(value, float):
            text = f"{value:.3f}"
        elif isinstance(value, int) and not isinstance(value, bool):
            text = f"{value:,}"
        else:
            text = "none" if value is None else str(value)
        out.append(f"<li>{_e(key)}: {_e(text)}</li>")
    return out


def _section_html(i: int, sec: Section) -> str:
    """One section: heading, skipped reason or warnings, readings, titled figures and
    tables with captions, and the settings that differ from the defaults."""
    from analysis.report_text import figure_title, main_choices, settings_lines, table_title

    if sec.skipped:  # one line, no page of its own in print
        return (f'<section id="sec-{i}" class="skipped"><h2>{_e(sec.title)}</h2>'
                f'<p class="skip">Skipped: {_e(sec.skipped)}</p></section>')
    parts = [f'<section id="sec-{i}"><h2>{_e(sec.title)}</h2>']
    choice = main_choices(sec.name, sec.settings)
    if choice:
        parts.append(f'<p class="caption">{_e(choice)}</p>')
    parts += [f'<div class="warn">{_e(w)}</div>' for w in sec.warnings]
    if sec.notes:
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in sec.notes) + "</ul>")
    for j, (stem, fig) in enumerate(sec.figures):
        title, caption = figure_title(stem, fig)
        parts.append(f'<div class="figure"><h3>{_e(title)}</h3>'
                     f'<p class="caption">{_e(caption)}</p>'
                     f'{_figure_div(fig, f"fig-{i}-{j}")}</div>')
    for stem, table in sec.tables:
        title, caption = table_title(stem)
        parts.append(f"<h3>{_e(title)}</h3>"
                     + (f'<p class="caption">{_e(caption)}</p>' if caption else "")
                     + _table_html(table, stem, sec.adjustments.get(stem),
                                   sec.settings.get("confidence")))
    lines = settings_lines(sec.settings, sec.defaults)
    parts.append("<h3>Settings</h3>" + (
        '<ul class="settings">' + "".join(f"<li>{_e(x)}</li>" for x in lines) + "</ul>"
        if lines else "<p>The defaults of the page (no setting changed).</p>"))
    parts.append("</section>")
    return "".join(parts)


def report_html(report: Report) -> str:
    """The report as one self-contained HTML page (plotly.js inlined once)."""
    from plotly.offline import get_plotlyjs

    outcome = report.design.outcome.describe() if report.design.outcome else "none"
    parts = [f"<h1>Bias workbench report: {_e(report.source)}</h1>",
             f"<p>Created {_e(report.created)} with bias workbench {_e(report.version)}.</p>",
             "<h2>Design</h2>", _table_html(design_table(report.design)),
             f"<p>Outcome: {_e(outcome)}</p>",
             "<details><summary>Design file (JSON)</summary><pre>"
             f"{_e(json.dumps(report.design.to_dict(), indent=2, ensure_ascii=False))}"
             "</pre></details>", "<h2>Data summary</h2><ul>"]
    parts += _summary_items(report.summary)
    parts.append("</ul>")
    parts += [f'<div class="warn">Nesting: {_e(n)}</div>' for n in report.summary["nestings"]]
    parts.append("<h2>Contents</h2><ol>" + "".join(
        f'<li><a href="#sec-{i}">{_e(s.title)}</a>{" (skipped)" if s.skipped else ""}</li>'
        for i, s in enumerate(report.sections)) + "</ol>")
    parts += [_section_html(i, sec) for i, sec in enumerate(report.sections)]
    # no "</script" inside the inlined library can end its tag early
    plotly_js = get_plotlyjs().replace("</script", "<\\/script")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            f"<title>Bias workbench report: {_e(report.source)}</title>"
            f"<style>{_CSS}</style><script>{plotly_js}</script></head><body>"
            + "\n".join(parts) + "</body></html>")


# ---------------------------------------------------------------- ZIP and PDF

def report_zip(report: Report, html_text: str | None = None, *,
               progress: Callable[[float, str], None] | None = None) -> bytes:
    """A ZIP with each figure as PNG/SVG/PDF, each table as CSV, the HTML and a README.

    Without a Chrome for kaleido the images are left out and the README says so. A figure
    that cannot be exported is named in the README (section, figure, suspect labels) and
    the rest is written. Entry names are :func:`zip_entry_name` slugs: one folder level,
    a safe alphabet, at most :data:`ZIP_NAME_MAX` characters, unique.
    ``progress(fraction, text)`` is called before each section (the app's progress bar).
    """
    from analysis.export import ExportUnavailable, table_bytes, warm_up

    if any(sec.figures for sec in report.sections):
        warm_up()  # Chrome starts while the HTML and the tables are written
    buf = io.BytesIO()
    readme = [f"Bias workbench report: {report.source}", f"Created {report.created}, "
              f"version {report.version}.", "", "report.html: the whole report (opens offline).",
              "figures/: each figure as PNG, SVG and PDF.", "tables/: each table as CSV.", ""]
    used: set[str] = set()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("report.html", html_text or report_html(report))
        images_ok = True
        for i, sec in enumerate(report.sections, start=1):
            if progress is not None:
                progress((i - 1) / max(len(report.sections), 1), sec.title)
            prefix = f"{i:02d}_{sec.name}"
            for name, table in sec.tables:
                zf.writestr(zip_entry_name("tables", f"{prefix}_{name}", "csv", used),
                            table_bytes(table))
            if images_ok and sec.figures:
                try:
                    _zip_section_figures(zf, sec, prefix, used, readme)
                except ExportUnavailable as exc:
                    images_ok = False
                    readme.append(f"Figures are not included as images: {exc}")
        zf.writestr("README.txt", "\n".join(readme) + "\n")
    return buf.getvalue()


#: Longest ZIP entry name (folder, slug and extension): well under file systems' 255.
ZIP_NAME_MAX = 120
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def zip_entry_name(folder: str, stem: str, ext: str, used: set[str]) -> str:
    """``folder/slug.ext``: ``stem`` with every run of characters outside
    ``[A-Za-z0-9._-]`` as ``_``, no run of dots (``..``), no leading dot or dash, cut to
    fit :data:`ZIP_NAME_MAX`, and made unique against ``used`` (``-2``, ``-3``...), which
    it joins. ``ext=""`` gives ``folder/slug.`` (a stem for several formats)."""
    slug = re.sub(r"\.{2,}", "_", _UNSAFE_NAME.sub("_", stem)).lstrip("._-") or "item"
    room = ZIP_NAME_MAX - len(folder) - len(ext) - 8  # "/", ".", "-NNNNN"
    slug, candidate, n = slug[:room], "", 1
    while not candidate or candidate in used:
        tail = "" if n == 1 else f"-{n}"
        candidate = f"{folder}/{slug}{tail}.{ext}"
        n += 1
    used.add(candidate)
    return candidate


def _zip_section_figures(zf: zipfile.ZipFile, sec: Section, prefix: str, used: set[str],
                         readme: list[str]) -> None:
    """Every figure of ``sec`` in every image format, rendered in one
    :func:`analysis.export.figures_bytes` batch; when the batch fails, one figure and
    format at a time, so that only what fails is left out (and named in ``readme``)."""
    from analysis.export import IMAGE_FORMATS, ExportUnavailable, figures_bytes

    stems = [(zip_entry_name("figures", f"{prefix}_{name}", "", used)[:-1], name, fig)
             for name, fig in sec.figures]
    wanted = [(f"{stem}.{fmt}", fig, fmt) for stem, _, fig in stems for fmt in IMAGE_FORMATS]
    try:
        images = figures_bytes([(fig, fmt) for _, fig, fmt in wanted])
    except ExportUnavailable:
        raise
    except Exception:  # noqa: BLE001 - find the figure that fails, keep the others
        for stem, name, fig in stems:
            _zip_figure(zf, stem, fig, IMAGE_FORMATS, sec, name, readme)
        return
    for (entry, _, _), data in zip(wanted, images, strict=True):
        zf.writestr(entry, data)


def _zip_figure(zf: zipfile.ZipFile, stem: str, fig, formats, sec: Section, name: str,
                readme: list[str]) -> None:
    """Write ``fig`` in each format; a format that fails is named in ``readme``
    (:class:`analysis.export.ExportUnavailable` is raised on: no browser at all)."""
    from analysis.export import ExportUnavailable, figure_bytes

    for fmt in formats:
        try:
            zf.writestr(f"{stem}.{fmt}", figure_bytes(fig, fmt))
        except ExportUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - one figure must not sink the report
            suspects = suspect_labels(fig)
            readme.append(f"Section {sec.title!r}, figure {name!r}: not exported as {fmt} "
                          f"({exc})" + (f"; labels with unusual characters: "
                                        f"{', '.join(suspects)}" if suspects else "") + ".")


def suspect_labels(fig, limit: int = 5) -> list[str]:
    """Up to ``limit`` labels of ``fig`` (trace data, as :func:`repr`) holding characters
    of Unicode category C other than tab and line breaks: the usual cause of an export
    failure."""
    from analysis.safe_text import TRACE_TEXT_KEYS, trace_field

    found: list[str] = []
    for trace in fig.data:
        for key in TRACE_TEXT_KEYS:
            values = trace_field(trace, key)
            for v in ([values] if isinstance(values, str) else list(values or ())):
                if isinstance(v, str) and repr(v) not in found and any(
                        unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"
                        for ch in v):
                    found.append(repr(v)[:60])
                    if len(found) >= limit:
                        return found
    return found


def chromium_path() -> str | None:
    """A Chromium/Chrome executable for printing the PDF, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def report_pdf(html_text: str, *, timeout: float = 120.0) -> bytes:
    """The HTML printed to PDF by headless Chromium.

    Raises
    ------
    analysis.export.ExportUnavailable
        No Chromium on this machine (the message says what to install).
    AnalysisError
        Chromium failed or produced no PDF.
    """
    from analysis.export import ExportUnavailable

    browser = chromium_path()
    if browser is None:
        raise ExportUnavailable(PDF_UNAVAILABLE)
    with tempfile.TemporaryDirectory(prefix="report-pdf-") as tmp:
        src, out = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        src.write_text(html_text, encoding="utf-8")
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--no-pdf-header-footer",
               "--virtual-time-budget=20000", f"--user-data-dir={tmp}/profile",
               f"--print-to-pdf={out}", src.as_uri()]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise AnalysisError(f"Chromium did not print the report within {timeout:g} s."
                                ) from None
        if not out.is_file() or out.stat().st_size == 0:
            raise AnalysisError("Chromium could not print the report to PDF: "
                                + proc.stderr.decode(errors="replace")[-500:])
        return out.read_bytes()
