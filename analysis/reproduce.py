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
    "View", "Where", "api_snippet", "api_view", "categories_text",
    "cli_command", "cohorts_view", "compare_view", "coverage_view",
    "importance_linear_options", "importance_linear_view", "importance_view",
    "index_options", "index_view",
    "prepare_command",
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


@dataclass(frozen=True)
class View:
    """What a page computed: the CLI subcommand and options, and the :mod:`analysis.api`
    function with its arguments after the file and the design (``call``, as Python
    source): the script is that one call, see :func:`api_view`."""

    command: str
    options: tuple[tuple[str, Any], ...]
    call: tuple[str, ...]
    function: str


def api_view(options: Any, *, function: str | None = None,
             flags: Mapping[str, str] | None = None, **inputs: Any) -> View:
    """The view of an analysis composed in :mod:`analysis.api`: its options (an
    :class:`analysis.options.Options`) and its inputs (``factors``, ``by`` ... as the
    function takes them; ``where`` is given to :func:`cli_command` / :func:`api_snippet`;
    ``function``: the :mod:`analysis.api` function, default the options' ``NAME``;
    ``flags``: the command's flag of an input named otherwise, e.g. compare's
    ``{"subgroups": "factors"}``). "Copy as CLI" is the command with ``--input value`` per
    input and the flags of the options that differ from the defaults; "Copy as Python"
    the function called with the same inputs and those options."""
    given = {k: v for k, v in inputs.items() if v not in (None, (), [], {})}
    call = (*(f"{k}={_plain(v)!r}" for k, v in given.items()), *_changed(options))
    cli = tuple(((flags or {}).get(k, k), v) for k, v in given.items())
    return View(options.COMMAND, (*cli, *options.cli_options()), call,
                function or options.NAME)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _changed(options: Any) -> tuple[str, ...]:
    """``name=value`` of every option (not only the call's) that differs from its default."""
    return tuple(f"{name}={_plain(value)!r}" for name, value in options.changed().items())


def api_snippet(function: str, file: str, design_path: str, call: Sequence[str], *,
                where: Where | None = None) -> str:
    """``result = bw.<function>(file, design, <call>, where=...)``: the script of an
    :func:`api_view`, printing the Result's table."""
    where = {k: list(v) for k, v in (where or {}).items() if v}
    args = [f"{file!r}, {design_path!r}", *call, *([f"where={where!r}"] if where else [])]
    one_line = f"result = bw.{function}({', '.join(args)})"
    return ("from analysis import api as bw\n\n"
            + (one_line if len(one_line) <= 88 else
               f"result = bw.{function}(\n    " + ",\n    ".join(args) + ",\n)")
            + "\n"
            "table = result.table\n"
            "print(table)\n")


def _default_seed() -> int:
    """The seed a page's settings omit: the options' default."""
    from analysis.options.common import BootstrapOptions

    return BootstrapOptions.default("seed")


def _boot_options(boot: Mapping[str, Any] | None, design_cluster: str | None
                  ) -> dict[str, Any]:
    """The bootstrap options of a page's intervals (``ui.uncertainty.bootstrap_options``:
    ``cluster``, ``n_resamples``, ``seed``; None when off)."""
    if not boot:
        return {}
    return {"ci": "bootstrap", "cluster": _as_cli_cluster(boot.get("cluster"), design_cluster),
            "n_resamples": int(boot.get("n_resamples", boot.get("n_boot"))),
            "seed": int(boot.get("seed", _default_seed()))}


def coverage_view(factors: list[str], unit: str = "prompts", *,
                  more: Mapping[str, Any] | None = None) -> View:
    """Coverage, composed in :func:`analysis.api.coverage`: the factors spanning the grid
    and what a cell counts (``unit``: distinct ``prompts``, the default, or
    ``responses``); ``more``: the page's other options (``limit``: the empty and thinnest
    cells listed). "Copy as Python" is ``bw.coverage(file, design, factors=[...], ...)``."""
    from analysis.options.coverage import CoverageOptions

    return api_view(CoverageOptions.coerce({**(more or {}), "count": unit}),
                    factors=list(factors))


def importance_view(options: Mapping[str, Any], cell_factors: list[str] | None = None, *,
                    design_cluster: str | None = None, covariates: Sequence[str] | None = None,
                    standardise: bool = True, noise: Mapping[str, Any] | None = None) -> View:
    """Factor importance, composed in :func:`analysis.api.importance`: the page's widgets
    (``factors``, ``references`` and the options of
    :class:`analysis.options.importance.ImportanceOptions`; the cluster as ``--cluster``,
    or ``--no-cluster`` when the page drops the design's), numeric ``covariates``
    (``--raw-covariates`` unless ``standardise``) and the judge-noise expander's ``noise``
    (``replicates``, ``mode``, ``seed``) as "Copy as CLI" flags and as the arguments of
    ``bw.importance`` (:func:`api_view`). ``cell_factors`` is not used (the API builds
    the cells)."""
    from analysis.options.importance import ImportanceOptions
    from analysis.options.importance_linear import LinearOptions

    fit = ImportanceOptions.from_settings(
        options, cluster=_as_cli_cluster(options.get("cluster"), design_cluster),
        **({"judge_noise": int(noise["replicates"]), "noise_mode": noise["mode"],
            "seed": int(noise.get("seed", _default_seed()))} if noise else {}))
    covariates = list(covariates or [])
    inputs = {"factors": list(options["factors"]),
              "references": dict(options.get("references") or {}), "covariates": covariates,
              **({"standardise": False} if covariates and not standardise else {})}
    view = api_view(fit, **inputs)
    cli = (("factors", inputs["factors"]),
           *[("reference", f"{k}={v}") for k, v in inputs["references"].items()],
           *LinearOptions.coerce(covariates=covariates,
                                 standardise=bool(standardise)).cli_options(),
           *fit.cli_options())
    return View(view.command, cli, view.call, view.function)


def _as_cli_cluster(cluster: str | None, design_cluster: str | None) -> str | None:
    """A page's cluster as the options' value: the design's own is the default."""
    from analysis.options import FROM_DESIGN

    return FROM_DESIGN if cluster == design_cluster else cluster


def importance_linear_view(options: Mapping[str, Any], linear: Mapping[str, Any], *,
                           design_cluster: str | None = None,
                           design_covariates: Sequence[str] = ()) -> View:
    """Factor importance of a continuous outcome, composed in
    :func:`analysis.api.importance_linear`: the page's ``options`` (factors, references,
    alpha, adjust, confidence, cluster) and ``linear`` (``covariates``, ``standardise``,
    ``mixed``, ``random_slopes``, ``accept_unconverged``) as ``importance
    --outcome-type continuous`` flags and as ``bw.importance_linear``'s arguments
    (:func:`importance_linear_options`)."""
    lin, fit = importance_linear_options(options, linear, design_cluster=design_cluster,
                                         design_covariates=design_covariates)
    inputs = {"factors": list(options["factors"]),
              "references": dict(options.get("references") or {})}
    call = (*(f"{k}={v!r}" for k, v in inputs.items() if v), *_changed(lin), *_changed(fit))
    cli = (("factors", inputs["factors"]),
           *[("reference", f"{k}={v}") for k, v in inputs["references"].items()],
           *lin.cli_options(), *fit.cli_options())
    return View("importance", cli, call, "importance_linear")


def importance_linear_options(options: Mapping[str, Any], linear: Mapping[str, Any], *,
                              design_cluster: str | None = None,
                              design_covariates: Sequence[str] = ()) -> tuple[Any, Any]:
    """The :class:`~analysis.options.importance_linear.LinearOptions` and the fit's
    :class:`~analysis.options.importance.ImportanceOptions` (``alpha``, ``adjust``,
    ``confidence``, ``small_sample``, ``cluster``) of the Importance page's linear view:
    what it passes to :func:`analysis.api.importance_linear` and what its copied command
    and script say.
    No covariate while the design names some: ``no_covariates`` (the design's otherwise)."""
    from analysis.options.importance import ImportanceOptions
    from analysis.options.importance_linear import LinearOptions

    covariates = list(linear.get("covariates") or [])
    mixed = bool(linear.get("mixed"))
    random_slopes = bool(linear.get("random_slopes", True))
    specs = LinearOptions.specs()
    lin = LinearOptions.coerce(  # the page's other options under their own names
        {k: v for k, v in linear.items() if k in specs}, outcome_type="continuous",
        covariates=covariates,
        no_covariates=not covariates and bool(design_covariates),
        standardise=not covariates or bool(linear.get("standardise", True)), mixed=mixed,
        random_effects="slopes" if random_slopes or not mixed else "intercept",
        accept_unconverged=mixed and bool(linear.get("accept_unconverged")))
    fit = ImportanceOptions.coerce(
        alpha=options["alpha"], adjust=options["adjust"],
        confidence=options.get("confidence", ImportanceOptions.default("confidence")),
        small_sample=options.get("small_sample", ImportanceOptions.default("small_sample")),
        cluster=_as_cli_cluster(options.get("cluster"), design_cluster))
    return lin, fit


def index_view(options: Mapping[str, Any], *, boot: Mapping[str, Any] | None = None,
               design_cluster: str | None = None,
               intervals: Mapping[str, Any] | None = None) -> View:
    """Bias index: the page's ``bias_index`` arguments (dimensions with their scores and
    weights, the penalty as a kind and a value, sentiment; any other option of
    :class:`~analysis.options.index.IndexOptions` under its own name) as options; the
    bootstrap intervals when on (``boot``; ``intervals``: their ``confidence`` and
    ``seed``). "Copy as Python" is ``bw.bias_index(file, design, factors=[...], ...)``."""
    opts, factors = index_options(options, boot=boot, design_cluster=design_cluster,
                                  intervals=intervals)
    return api_view(opts, function="bias_index", flags={"factors": "dimensions"},
                    factors=factors)


def index_options(options: Mapping[str, Any], *, boot: Mapping[str, Any] | None = None,
                  design_cluster: str | None = None,
                  intervals: Mapping[str, Any] | None = None) -> tuple[Any, list[str]]:
    """The :class:`~analysis.options.index.IndexOptions` and the dimension factors of the
    Bias index page's arguments (see :func:`index_view`): what the page passes to
    :func:`analysis.api.bias_index` and what its copied command and script say."""
    from analysis.options.index import IndexOptions

    dims = [d if hasattr(d, "factor") else _dimension(d) for d in
            options.get("dimensions") or []]
    scores = [d.score for d in dims]
    weights = [float(d.weight) for d in dims]
    values = {"scores": scores if len(set(scores)) > 1 else scores[:1] or "deviation_metric",
              "weights": weights if any(w != 1 for w in weights) else ""}
    values |= {k: v for k, v in options.items() if k not in ("dimensions", "where")}
    if not values.get("sentiment"):  # the sentiment's settings act only with a column
        for k in ("sentiment_by", "sentiment_score", "sentiment_scale"):
            values.pop(k, None)
    values |= dict(intervals or {})
    opts = IndexOptions.from_index_kwargs(values).replace(**_boot_options(boot, design_cluster))
    return opts, [d.factor for d in dims]


def _dimension(d: Mapping[str, Any]) -> Any:
    from analysis.index import Dimension

    return Dimension(**d)


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


def cohorts_view(opts: Mapping[str, Any], **capsules: Any) -> View:
    """Cohorts: category, cohort, facets, categories and the options
    (:class:`analysis.options.cohorts.CohortsOptions`: renormalise, the test's settings);
    ``--categories`` as :func:`categories_text` writes it; ``capsules``: the time
    capsules' inputs (``demographics``, ``demographic_col``)."""
    import dataclasses

    from analysis.options.cohorts import CohortsOptions

    view = api_view(CohortsOptions.from_settings(opts), category=opts["category"],
                    cohort=opts["cohort"], by=list(opts.get("by") or []),
                    categories=list(opts.get("categories") or []),
                    flags={"demographic_col": "demographic-col"}, **capsules)
    cli = tuple((k, categories_text(v) if k == "categories" else v) for k, v in view.options)
    return dataclasses.replace(view, options=cli)


def compare_view(settings: Mapping[str, Any], *, design_cluster: str | None = None) -> View:
    """Compare: the settings of the report section ``compare`` (``by``, ``reference``,
    ``factors``: the API's ``subgroups``, ``level``, ``unit``, ``score`` and the options
    of :class:`analysis.options.compare.CompareOptions`; ``cluster`` None with a design
    cluster: ``--no-cluster``). The bootstrap's options only with ``factors``."""
    from analysis.options import FROM_DESIGN
    from analysis.options.compare import CompareOptions

    s = dict(settings)
    factors = list(s.get("factors") or [])
    opts = CompareOptions.from_settings(s)
    if opts.cluster is None and design_cluster is None:
        opts = opts.replace(cluster=FROM_DESIGN)  # no cluster either way
    if not factors:  # no subgroups: no bootstrap
        opts = opts.replace(n_resamples=CompareOptions.default("n_resamples"),
                            seed=CompareOptions.default("seed"))
    return api_view(opts, flags={"subgroups": "factors"}, by=s["by"],
                    reference=s.get("reference"), subgroups=factors,
                    level=s.get("level") if factors else None, unit=s.get("unit"),
                    score=s.get("score"))
