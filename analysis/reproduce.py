"""The CLI command and the Python snippet that reproduce an app view ("Copy as CLI/Python").

Plain Python (no Streamlit): the pages pass what they computed with, this module writes
it out. The command reads the same file with the same design file, so it prints the
same numbers as the page (``tests/app/test_reproduce.py`` runs it).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "View", "Where", "bootstrap_flags", "categories_text", "cli_command", "cohorts_view",
    "compare_view", "coverage_view", "disparity_view", "ecdf_view", "importance_linear_view",
    "importance_view", "index_view", "prepare_command", "python_snippet", "subgroups_view",
    "with_importance_noise", "with_subgroup_noise",
]


Where = Mapping[str, Sequence[str]]


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def prepare_command(file: str, recipe: str = "recipe.yaml", out: str = "results.parquet",
                    module: str = "analysis") -> str:
    """``python -m analysis prepare FILE --recipe RECIPE --out OUT``, shell-quoted: the
    command that rebuilds a table made on the Prepare page from its raw file."""
    return " ".join(shlex.quote(p) for p in ["python", "-m", module, "prepare", file,
                                               "--recipe", recipe, "--out", out])


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


@dataclass(frozen=True)
class View:
    """What a page computed: the CLI subcommand and options, the Python imports and body."""

    command: str
    options: tuple[tuple[str, Any], ...]
    imports: tuple[str, ...]
    body: tuple[str, ...]


def bootstrap_flags(boot: Mapping[str, Any] | None, design_cluster: str | None = None
                    ) -> tuple[tuple[str, Any], ...]:
    """The CLI options of a page's bootstrap intervals (``ui.uncertainty.bootstrap_options``:
    ``cluster``, ``n_boot``, ``seed``; None when off): ``--ci bootstrap``, ``--cluster COL``
    (``--no-cluster`` when the page resamples rows although the design names a cluster, which
    the CLI would use otherwise), ``--n-boot`` and ``--seed``."""
    if not boot:
        return ()
    cluster = boot.get("cluster")
    return (("ci", "bootstrap"), ("cluster", cluster),
            ("no-cluster", cluster is None and design_cluster is not None),
            ("n-boot", int(boot["n_boot"])), ("seed", int(boot.get("seed", 0))))


def _boot_args(boot: Mapping[str, Any]) -> str:
    return (f"cluster={boot.get('cluster')!r}, n_boot={int(boot['n_boot'])}, "
            f"seed={int(boot.get('seed', 0))}")


def subgroups_view(factors: list[str], level: int, test: str, min_n: int, *,
                   boot: Mapping[str, Any] | None = None,
                   power: Mapping[str, float] | None = None,
                   design_cluster: str | None = None, cluster: str | None = None) -> View:
    """Subgroups: factors, highest level, test and small-n threshold; the cluster of the
    CIs and p-values (``cluster``; None: independent rows, ``--no-cluster`` when the
    design names one); the bootstrap intervals of LD when on (``boot``, whose cluster
    flags take precedence: the CLI has one ``--cluster``) and the power columns
    (``power``: ``power`` and ``target_ld``, the page's "Power" widgets)."""
    power = dict(power or {})
    flags = bootstrap_flags(boot, design_cluster) if boot else (
        ("cluster", cluster if cluster != design_cluster else None),
        ("no-cluster", cluster is None and design_cluster is not None))
    cli = (("factors", factors), ("level", level), ("test", test), ("min-n", min_n),
           *flags, ("power", power.get("power")), ("effect", power.get("target_ld")))
    imports = ["from analysis.subgroups import distinct_subgroups, subgroups"]
    keys = "factors" if not cluster or cluster in factors else f"[*factors, {cluster!r}]"
    body = [f"factors = {factors!r}", f"cells = cell_table(results, {keys})",
            f"full = subgroups(cells, factors, max_level={level}, test={test!r}, "
            f"min_n={min_n}, cluster={cluster!r})"]
    if power:
        imports.append("from analysis.planning import add_power")
        body.append(f"full = add_power(full, int(cells['n'].sum()), power={power['power']!r}, "
                    f"target_ld={power.get('target_ld')!r})")
    if boot:
        imports.append("from analysis.bootstrap import bootstrap_log_disparity")
        body.append(f"full = bootstrap_log_disparity(results, factors, max_level={level}, "
                    f"table=full, {_boot_args(boot)})")
    body += ["table = distinct_subgroups(full)  # identical subgroups listed once",
             "print(table)"]
    return View("subgroups", cli, tuple(imports), tuple(body))


def coverage_view(factors: list[str], unit: str = "prompts") -> View:
    """Coverage: the factors spanning the grid and what a cell counts (``unit``: distinct
    ``prompts``, the default, or ``responses``)."""
    return View("coverage", (("factors", factors), ("count", unit)),
                ("from analysis.coverage import coverage_cells, coverage_summary",),
                (f"factors = {factors!r}",
                 f"cells = coverage_cells(results, design, factors, unit={unit!r})",
                 "print(coverage_summary(cells, design, factors=factors, where=where))"))


def ecdf_view(factors: list[str], by: str, level: int, ideal: float, cutoff: float, *,
              boot: Mapping[str, Any] | None = None, design_cluster: str | None = None
              ) -> View:
    """eCDF: subgroup factors, comparison factor, level, ideal value and cutoff; the
    bootstrap intervals when on (``boot``)."""
    body = [f"factors, by = {factors!r}, {by!r}",
            "cells = cell_table(results, [by, *factors])",
            f"rates = subgroup_rates(cells, factors, by=by, level={level})",
            f"print(ecdf_summary(rates, by=by, ideal={ideal!r}, cutoff={cutoff!r}))",
            "print(ks_tests(rates, by=by))"]
    imports = ["from analysis.ecdf import ecdf_summary, ks_tests, subgroup_rates"]
    if boot:
        imports.append("from analysis.bootstrap import bootstrap_ecdf")
        body.append(f"print(bootstrap_ecdf(results, factors, by=by, level={level}, "
                    f"ideal={ideal!r}, {_boot_args(boot)}))")
    return View("ecdf", (("factors", factors), ("by", by), ("level", level), ("ideal", ideal),
                         ("cutoff", cutoff), *bootstrap_flags(boot, design_cluster)),
                tuple(imports), tuple(body))


def importance_view(options: Mapping[str, Any], cell_factors: list[str], *,
                    design_cluster: str | None = None, covariates: Sequence[str] | None = None,
                    standardise: bool = True) -> View:
    """Factor importance: the options of ``factor_importance`` as flags and as arguments
    (the cluster as ``--cluster``, or ``--no-cluster`` when the page drops the design's);
    with numeric ``covariates``, ``--covariate`` (``--raw-covariates`` unless
    ``standardise``) and ``logistic_with_covariates``."""
    cluster = options.get("cluster")
    if covariates:
        o = dict(options)
        cli = (("factors", o["factors"]),
               *[("reference", f"{k}={v}") for k, v in o["references"].items()],
               *[("covariate", c) for c in covariates], ("raw-covariates", not standardise),
               ("alpha", o["alpha"]), ("adjust", o["adjust"]), ("cluster", cluster),
               ("no-cluster", cluster is None and design_cluster is not None))
        args = {"covariates": list(covariates), "standardise": bool(standardise),
                "factors": list(o["factors"]), "references": dict(o["references"]),
                "cluster": cluster, "alpha": o["alpha"], "adjust": o["adjust"]}
        return View("importance", cli,
                    ("from analysis.importance_linear import logistic_with_covariates",),
                    (f"options = {args!r}",
                     "fit = logistic_with_covariates(results, design, **options)",
                     "print(fit.terms)"))
    cli = (("factors", options["factors"]),
           *[("reference", f"{k}={v}") for k, v in options["references"].items()],
           *[("interaction", i) for i in options["interactions"]],
           ("on-separation", options["on_separation"]), ("alpha", options["alpha"]),
           ("adjust", options["adjust"]), ("cluster", cluster),
           ("no-cluster", cluster is None and design_cluster is not None),
           ("gee", bool(options.get("gee"))))
    return View("importance", cli, ("from analysis.importance import factor_importance",),
                (f"options = {dict(options)!r}", f"cells = cell_table(results, {cell_factors!r})",
                 "fit = factor_importance(cells, design, where=where, **options)",
                 "print(fit.terms)"))


def importance_linear_view(options: Mapping[str, Any], linear: Mapping[str, Any], *,
                           design_cluster: str | None = None,
                           design_covariates: Sequence[str] = ()) -> View:
    """Factor importance of a continuous outcome (``analysis.importance_linear``): the
    page's ``options`` (factors, references, alpha, adjust, cluster) and ``linear``
    (``covariates``, ``standardise``, ``mixed``, ``random_slopes``,
    ``accept_unconverged``) as ``importance --outcome-type continuous`` flags and as the
    arguments of ``linear_importance``. No covariate while the design names some:
    ``--no-covariates`` (the CLI would take the design's)."""
    cluster = options.get("cluster")
    covariates = list(linear.get("covariates") or [])
    mixed = bool(linear.get("mixed"))
    random_slopes = bool(linear.get("random_slopes", True))
    cli = (("outcome-type", "continuous"), ("factors", options["factors"]),
           *[("reference", f"{k}={v}") for k, v in options["references"].items()],
           *[("covariate", c) for c in covariates],
           ("no-covariates", not covariates and bool(design_covariates)),
           ("raw-covariates", bool(covariates) and not linear.get("standardise", True)),
           ("alpha", options["alpha"]), ("adjust", options["adjust"]), ("cluster", cluster),
           ("no-cluster", cluster is None and design_cluster is not None),
           ("mixed", mixed), ("random-effects", None if random_slopes or not mixed
                              else "intercept"),
           ("accept-unconverged", mixed and bool(linear.get("accept_unconverged"))))
    args = {"factors": list(options["factors"]), "references": dict(options["references"]),
            "covariates": covariates, "standardise": bool(linear.get("standardise", True)),
            "cluster": cluster, "mixed": mixed, "random_slopes": random_slopes,
            "accept_unconverged": bool(linear.get("accept_unconverged")),
            "alpha": options["alpha"], "adjust": options["adjust"]}
    return View("importance", cli,
                ("from analysis.importance_linear import linear_importance",),
                (f"options = {args!r}", "fit = linear_importance(results, design, **options)",
                 "print(fit.terms)", "print(fit.factor_tests)"))


#: Option of ``disparity_report`` -> flag of ``disparity`` where the names differ.
_DISPARITY_FLAGS = {"n_permutations": "permutations", "random_state": "seed"}


def disparity_view(options: Mapping[str, Any]) -> View:
    """Disparity: each option of ``disparity_report`` as the flag of the same name."""
    cli = tuple(("no-adaptive", v is False) if k == "adaptive"  # the CLI's flag is negative
                else ("saged-conventions", v == "saged") if k == "conventions"
                else (_DISPARITY_FLAGS.get(k, k).replace("_", "-"), v)
                for k, v in options.items())
    return View("disparity", cli, ("from analysis.disparity import disparity_report",),
                (f"options = {dict(options)!r}",
                 "report = disparity_report(results, **options)", "print(report.metrics)"))


def index_view(options: Mapping[str, Any], *, boot: Mapping[str, Any] | None = None,
               design_cluster: str | None = None) -> View:
    """Bias index: ``bias_index`` options (dimensions, penalty, sentiment) as flags; the
    bootstrap intervals when on (``boot``)."""
    o, dims = options, options.get("dimensions") or []
    sentiment = o.get("sentiment")
    cli = (("dimensions", [d.factor for d in dims]), ("scores", [d.score for d in dims]),
           ("weights", [d.weight for d in dims]), ("model", o.get("model")),
           ("no-normalize", o.get("normalize_weights") is False),
           ("printed-equation", o.get("printed_equation") is True),
           ("penalty-gini" if o.get("penalty_kind") == "coverage_gini" else "penalty",
            o.get("penalty_value")),
           ("sentiment", sentiment), ("sentiment-by", o.get("sentiment_by") if sentiment
                                      else None),
           ("sentiment-score", o.get("sentiment_score") if sentiment else None),
           ("lambda", o.get("sentiment_scale") if sentiment else None),
           *bootstrap_flags(boot, design_cluster))
    imports = ["from analysis.index import Dimension, bias_index"]
    body = [f"options = {dict(options)!r}", "index = bias_index(results, design, **options)",
            "print(index.totals)"]
    if boot:
        imports.append("from analysis.bootstrap import bootstrap_index")
        body.append(f"print(bootstrap_index(results, design, {_boot_args(boot)}, **options))")
    return View("index", cli, tuple(imports), tuple(body))


def categories_text(categories: Sequence[str] | None) -> str | list | None:
    """``--categories`` of the cohorts command: the comma list, or a JSON list when a
    value has a comma, leading / trailing spaces, is empty or starts with ``[``."""
    if not categories:
        return None
    values = [str(c) for c in categories]
    if any("," in v or v != v.strip() or not v or v.startswith("[") for v in values):
        import json

        return json.dumps(values, ensure_ascii=False)
    return values


def cohorts_view(opts: Mapping[str, Any]) -> View:
    """Cohorts: category, cohort, facets, categories, renormalise and the test's settings."""
    cat, coh, by = opts["category"], opts["cohort"], opts.get("by")
    renormalise = bool(opts.get("renormalise"))
    cli = (("category", cat), ("cohort", coh), ("by", by),
           ("categories", categories_text(opts.get("categories"))),
           ("renormalise", renormalise),
           ("method", opts.get("method")), ("seed", opts.get("random_state")))
    return View("cohorts", cli, ("from analysis.distribution import category_distribution, "
                                 "homogeneity_test",),
                (f"dist = category_distribution(results, {cat!r}, {coh!r}, by={by!r}, "
                 f"categories={opts.get('categories')!r}, renormalise={renormalise!r})",
                 f"print(homogeneity_test(dist, {cat!r}, {coh!r}, by={by!r}, "
                 f"method={opts.get('method')!r}, random_state={opts.get('random_state')!r}))"))


_NOISE_IMPORT = "from analysis.judge_noise import {}, survival_sentence, threshold_of"


def _noise_options(noise: Mapping[str, Any], *, alpha: bool) -> tuple[tuple[str, Any], ...]:
    """``--judge-noise R --noise-mode M [--noise-alpha A]`` (``--seed`` only when not the
    default 0, so it never repeats the bootstrap's)."""
    return (("judge-noise", noise["replicates"]), ("noise-mode", noise["mode"]),
            *((("noise-alpha", noise["alpha"]),) if alpha and "alpha" in noise else ()),
            *((("seed", noise["seed"]),) if noise.get("seed") else ()))


def _noise_arguments(noise: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in noise.items())


def with_subgroup_noise(view: View, noise: Mapping[str, Any] | None, level: int, test: str,
                        min_n: int) -> View:
    """``view`` (:func:`subgroups_view`) plus the judge-noise options of the page
    (``replicates``, ``mode``, ``seed``, ``alpha``; None: unchanged)."""
    if not noise:
        return view
    return View(view.command, (*view.options, *_noise_options(noise, alpha=True)),
                (*view.imports, _NOISE_IMPORT.format("subgroup_noise")),
                (*view.body,
                 f"noise = subgroup_noise(results, factors, max_level={level}, test={test!r}, "
                 f"min_n={min_n}, threshold=threshold_of(design), {_noise_arguments(noise)})",
                 "print(survival_sentence(noise, what='subgroups'))",
                 "print(noise[['subgroup', 'noise_same_sign', 'noise_significant', "
                 "'noise_survives']])"))


def with_importance_noise(view: View, noise: Mapping[str, Any] | None) -> View:
    """``view`` (:func:`importance_view`) plus the judge-noise options of the page
    (``replicates``, ``mode``, ``seed``; None: unchanged)."""
    if not noise:
        return view
    return View(view.command, (*view.options, *_noise_options(noise, alpha=False)),
                (*view.imports, _NOISE_IMPORT.format("importance_noise")),
                (*view.body,
                 "terms = importance_noise(results, design, fit=fit, where=where, "
                 f"threshold=threshold_of(design), **options, {_noise_arguments(noise)})",
                 "print(survival_sentence(terms, what='terms'))",
                 "print(terms[['term', 'noise_same_sign', 'noise_significant', "
                 "'noise_survives']])"))


def compare_view(settings: Mapping[str, Any], *, design_cluster: str | None = None) -> View:
    """Compare (``analysis/compare.py``): the settings of the report section ``compare``
    (``by``, ``reference``, ``factors``, ``level``, ``unit``, ``score``, ``duplicates``,
    ``test``, ``adjust``, ``n_boot``, ``seed``, ``alpha``; ``cluster`` None with a design
    cluster: ``--no-cluster``)."""
    s = dict(settings)
    factors = list(s.get("factors") or [])
    no_cluster = "cluster" in s and s["cluster"] is None and design_cluster is not None
    cli = (("by", s["by"]), ("reference", s.get("reference")), ("factors", factors),
           ("level", s.get("level") if factors else None), ("unit", s.get("unit")),
           ("score", s.get("score")), ("duplicates", s.get("duplicates", "mean")),
           ("test", s.get("test", "auto")), ("adjust", s.get("adjust", "holm")),
           ("n-boot", int(s.get("n_boot", 1000)) if factors else None),
           ("seed", int(s.get("seed", 0)) if factors else None),
           ("alpha", s.get("alpha", 0.05)), ("no-cluster", no_cluster),
           ("cluster", s.get("cluster") if s.get("cluster") not in (None, "design") else None))
    args = [f"{s['by']!r}", f"reference={s.get('reference')!r}", f"factors={factors!r}",
            f"max_level={s.get('level')!r}", f"unit={s.get('unit')!r}",
            f"score={s.get('score')!r}", f"duplicates={s.get('duplicates', 'mean')!r}",
            f"test={s.get('test', 'auto')!r}", f"adjust={s.get('adjust', 'holm')!r}",
            f"n_boot={int(s.get('n_boot', 1000))}", f"seed={int(s.get('seed', 0))}",
            f"alpha={s.get('alpha', 0.05)!r}"]
    if no_cluster or s.get("cluster") not in (None, "design"):
        args.append(f"cluster={s.get('cluster')!r}")
    body = [f"comparison = compare(results, design, {', '.join(args)})",
            "print(comparison.overall)",
            "for pair, table in comparison.subgroups.items():  # per subgroup, per pair",
            "    print(pair, table, sep='\\n')",
            "print('\\n'.join(comparison.notes))"]
    return View("compare", cli, ("from analysis.compare import compare",), tuple(body))
