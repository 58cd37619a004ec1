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

__all__ = ["file_of", "reproduce", "sources"]


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

