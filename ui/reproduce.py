"""The "Copy as CLI / Copy as Python" expander of every analysis page.

The views (what each page computed with) are built in ``analysis/reproduce.py``; this
module finds the file names and draws the expander.
"""

from __future__ import annotations

import streamlit as st

from analysis import reproduce as rp
from analysis.design import Design
from analysis.prepare import recipe_yaml
from ui.active import SAMPLE_DIR
from ui.judge_noise import page_noise_settings

__all__ = [
    "file_of", "reproduce", "reproduce_cohorts", "reproduce_compare", "reproduce_coverage",
    "reproduce_disparity", "reproduce_ecdf", "reproduce_importance",
    "reproduce_importance_linear", "reproduce_index", "reproduce_subgroups", "sources",
]


def file_of(name: str) -> str:
    """The file the user has for the table called ``name``: a bundled sample's path, the
    upload's name, or ``results.csv``."""
    if (SAMPLE_DIR / name).is_file():
        return f"sample_data/{name}"
    return name if "." in name and " " not in name else "results.csv"


def sources(design: Design) -> tuple[str, str, bool]:
    """(file, design file, whether the design file must be downloaded first)."""
    name = st.session_state.get("results_name", "results.csv")
    if st.session_state.get("results_rebuild") or st.session_state.get("results_prepare"):
        return "results.parquet", "design.yaml", True  # written by the commands shown first
    if (SAMPLE_DIR / name).is_file():
        stem = name.removesuffix(".gz").rsplit(".", 1)[0]
        curated = SAMPLE_DIR / f"{stem}.design.yaml"
        if curated.is_file() and Design.load(curated) == design:
            return f"sample_data/{name}", f"sample_data/{curated.name}", False
        return f"sample_data/{name}", "design.yaml", True
    return file_of(name), "design.yaml", True


def reproduce(view: rp.View, design: Design, where: dict | None, key: str) -> tuple[str, str]:
    """Show the CLI command and the Python snippet of ``view``; return both."""
    file, design_path, needs_file = sources(design)
    cli = rp.cli_command(view.command, file, design_path, view.options, where=where)
    # the import (ui/importing.py) or the Prepare recipe (ui/prepare.py) that made the table
    rebuild = st.session_state.get("results_rebuild") or st.session_state.get("results_prepare")
    if rebuild:
        cli = f"{rebuild}\n{cli}"
    code = rp.api_snippet(view.function, file, design_path, view.call, where=where)
    with st.expander("Copy as CLI / Copy as Python", icon=":material/terminal:"):
        st.caption("The command and the script reproduce this view's numbers (copy with the "
                   "icon at the top right of each block). Run them from the repository root"
                   + (", with the design saved as `design.yaml`:" if needs_file else "."))
        c1, c2, _ = st.columns([1, 1, 3])
        if needs_file:
            c1.download_button("design.yaml", design.to_yaml(), "design.yaml",
                               "application/yaml", key=f"{key}_design_yaml")
        if st.session_state.get("results_prepare"):  # its `prepare --recipe recipe.yaml`
            c2.download_button("recipe.yaml", recipe_yaml(design.recipe), "recipe.yaml",
                               "application/yaml", key=f"{key}_recipe_yaml")
        st.code(cli, language="bash")
        st.code(code, language="python")
    return cli, code


def reproduce_subgroups(design: Design, options, factors: list[str], where: dict) -> None:  # noqa: ANN001
    """The expander of the subgroups page: the options it computed with
    (:class:`analysis.options.subgroups.SubgroupsOptions`) and its factors."""
    reproduce(rp.api_view(options, factors=factors), design, where, "subgroups")


def reproduce_coverage(design: Design, factors: list[str], where: dict,
                       unit: str = "prompts", *, more: dict | None = None) -> None:
    """The expander of the coverage page (``unit``: what a cell counts; ``more``: its
    "Other options")."""
    reproduce(rp.coverage_view(factors, unit, more=more), design, where, "coverage_repro")


def reproduce_ecdf(design: Design, options, factors: list[str], by: str,  # noqa: ANN001
                   where: dict) -> None:
    """The expander of the ecdf page: the options it computed with
    (:class:`analysis.options.ecdf.EcdfOptions`), its factors and comparison factor."""
    reproduce(rp.api_view(options, factors=factors, by=by), design, where, "ecdf_repro")


def reproduce_importance(design: Design, options: dict, where: dict,
                         cell_factors: list[str], covariates: list[str] | None = None,
                         standardise: bool = True) -> None:
    """The expander of the importance page (``covariates``: the logistic fit's numeric
    covariates, no judge noise then)."""
    view = rp.importance_view(options, cell_factors, design_cluster=design.cluster,
                              covariates=covariates, standardise=standardise,
                              noise=None if covariates else page_noise_settings("importance"))
    reproduce(view, design, where, "importance_repro")


def reproduce_importance_linear(design: Design, options: dict, linear: dict,
                                where: dict) -> None:
    """The expander of the importance page for a continuous outcome (``linear``: the
    covariate and mixed-model widgets, ``analysis.reproduce.importance_linear_view``)."""
    reproduce(rp.importance_linear_view(options, linear, design_cluster=design.cluster,
                                        design_covariates=design.covariates),
              design, where, "importance_repro")


def reproduce_disparity(design: Design, options: dict, where: dict) -> None:
    """The expander of the disparity page: ``bw.disparity`` with the page's feature, groups
    and every option that differs from its default (the SAGED statistics' too: the
    normalisation rescales every number)."""
    from ui.disparity import to_options

    view = rp.api_view(to_options(options), feature=options["feature"],
                       by=list(options["by"]))
    reproduce(view, design, where, "disparity_repro")


def reproduce_index(design: Design, options: dict, where: dict, *,
                    boot: dict | None = None, intervals: dict | None = None) -> None:
    """The expander of the index page (``boot``: its bootstrap settings when on;
    ``intervals``: their confidence and seed)."""
    reproduce(rp.index_view(options, boot=boot, design_cluster=design.cluster,
                            intervals=intervals), design, where, "index_repro")


def reproduce_cohorts(design: Design, opts: dict, where: dict) -> None:
    """The expander of the cohorts page."""
    reproduce(rp.cohorts_view(opts), design, where, "cohorts_repro")


def reproduce_compare(design: Design, settings: dict, where: dict) -> None:
    """The expander of the Compare page (``settings``: those of the report section)."""
    reproduce(rp.compare_view(settings, design_cluster=design.cluster), design, where,
              "compare_repro")
