"""The "Copy as CLI / Copy as Python" expander of every analysis page."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import streamlit as st

from analysis.design import Design
from analysis.reproduce import cli_command, python_snippet
from ui.common import SAMPLE_DIR


def sources(design: Design) -> tuple[str, str, bool]:
    """(file, design file, whether the design file must be downloaded first)."""
    name = st.session_state.get("results_name", "results.csv")
    if (SAMPLE_DIR / name).is_file():
        stem = name.removesuffix(".gz").rsplit(".", 1)[0]
        curated = SAMPLE_DIR / f"{stem}.design.yaml"
        if curated.is_file() and Design.load(curated) == design:
            return f"sample_data/{name}", f"sample_data/{curated.name}", False
        return f"sample_data/{name}", "design.yaml", True
    file = name if "." in name and " " not in name else "results.csv"
    return file, "design.yaml", True


def reproduce(command: str, design: Design, options: Iterable[tuple[str, Any]], *,
              where: dict[str, list[str]] | None = None, body: Sequence[str] = (),
              imports: Sequence[str] = (), key: str) -> tuple[str, str]:
    """Show the CLI command and the Python snippet of the current view; return both."""
    file, design_path, needs_file = sources(design)
    cli = cli_command(command, file, design_path, list(options), where=where)
    code = python_snippet(file, design_path, body, imports=imports, where=where)
    with st.expander("Copy as CLI / Copy as Python", icon=":material/terminal:"):
        st.caption("The command and the script reproduce this view's numbers (copy with the "
                   "icon at the top right of each block). Run them from the repository root"
                   + (", with the design saved as `design.yaml`:" if needs_file else "."))
        if needs_file:
            st.download_button("design.yaml", design.to_yaml(), "design.yaml",
                               "application/yaml", key=f"{key}_design_yaml")
        st.code(cli, language="bash")
        st.code(code, language="python")
    return cli, code


def reproduce_importance(design: Design, options: dict, where: dict,
                         cell_factors: list[str]) -> tuple[str, str]:
    """Factor importance: the fit's options as CLI flags and as keyword arguments."""
    cli = [("factors", options["factors"]),
           *[("reference", f"{k}={v}") for k, v in options["references"].items()],
           *[("interaction", i) for i in options["interactions"]],
           ("on-separation", options["on_separation"]), ("alpha", options["alpha"]),
           ("adjust", options["adjust"])]
    return reproduce("importance", design, cli, where=where, key="importance_repro",
                     imports=["from analysis.importance import factor_importance"],
                     body=[f"options = {options!r}",
                           f"cells = cell_table(results, {cell_factors!r})",
                           "fit = factor_importance(cells, design, where=where, **options)",
                           "print(fit.terms)"])


#: Page option -> CLI option of `disparity` where the names differ.
_DISPARITY_FLAGS = {"n_permutations": "permutations", "random_state": "seed"}


def reproduce_disparity(design: Design, options: dict, where: dict) -> tuple[str, str]:
    """Disparity: each option of ``disparity_report`` as the CLI flag of the same name."""
    cli = [(_DISPARITY_FLAGS.get(k, k).replace("_", "-"), v) for k, v in options.items()]
    return reproduce("disparity", design, cli, where=where, key="disparity_repro",
                     imports=["from analysis.disparity import disparity_report"],
                     body=[f"options = {options!r}",
                           "report = disparity_report(results, **options)",
                           "print(report.metrics)"])


def reproduce_index(design: Design, options: dict, where: dict) -> tuple[str, str]:
    """Bias index: ``bias_index`` options as CLI flags."""
    o = options
    penalty = ("penalty-gini" if o.get("penalty_kind") == "coverage_gini" else "penalty",
               o.get("penalty_value"))
    dims = o.get("dimensions") or []
    cli = [("dimensions", [d.factor for d in dims]), ("scores", [d.score for d in dims]),
           ("weights", [d.weight for d in dims]), ("model", o.get("model")),
           ("no-normalize", o.get("normalize_weights") is False), penalty,
           ("sentiment", o.get("sentiment")),
           ("sentiment-by", o.get("sentiment_by") if o.get("sentiment") else None),
           ("sentiment-score", o.get("sentiment_score") if o.get("sentiment") else None),
           ("lambda", o.get("sentiment_scale") if o.get("sentiment") else None)]
    return reproduce("index", design, cli, where=where, key="index_repro",
                     imports=["from analysis.index import Dimension, bias_index"],
                     body=[f"options = {options!r}",
                           "index = bias_index(results, design, **options)",
                           "print(index.totals)"])


def reproduce_cohorts(design: Design, opts: dict, where: dict) -> tuple[str, str]:
    """Cohorts: category, cohort, facets, categories and the test's settings."""
    o = opts
    cli = [("category", o["category"]), ("cohort", o["cohort"]), ("by", o.get("by")),
           ("categories", o.get("categories")), ("method", o.get("method")),
           ("seed", o.get("random_state"))]
    call = (f"category_distribution(results, {o['category']!r}, {o['cohort']!r}, "
            f"by={o.get('by')!r}, categories={o.get('categories')!r})")
    return reproduce("cohorts", design, cli, where=where, key="cohorts_repro",
                     imports=["from analysis.distribution import category_distribution, "
                              "homogeneity_test"],
                     body=[f"dist = {call}",
                           f"print(homogeneity_test(dist, {o['category']!r}, {o['cohort']!r}, "
                           f"by={o.get('by')!r}, method={o.get('method')!r}, "
                           f"random_state={o.get('random_state')!r}))"])
