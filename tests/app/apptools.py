"""Helpers for AppTest runs of single pages with data already loaded."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from analysis.design import Design

ROOT = Path(__file__).resolve().parents[2]


def page_test(page: str, *, frame: pd.DataFrame | None = None, design: Design | None = None,
              name: str = "test data", timeout: float = 120) -> AppTest:
    """An AppTest of ``pages/<page>`` with the session state the Data page would set."""
    from ui.common import token_of

    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=timeout)
    if frame is not None:
        at.session_state["results_frame"] = frame
        at.session_state["results_name"] = name
        at.session_state["results_token"] = token_of(frame)
    if design is not None:
        at.session_state["design"] = design
    return at


def plotly_specs(at: AppTest) -> list[dict]:
    """The figure JSON of every plotly chart on the page (AppTest cannot render them)."""
    import json

    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def metric_values(at: AppTest) -> dict[str, str]:
    """``{label: value}`` of every ``st.metric`` on the page (values as displayed)."""
    return {m.label: m.value for m in at.metric}


def sample_with_design(file_name: str) -> tuple[pd.DataFrame, Design]:
    """A bundled sample (``sample_data/<file_name>``) and its curated ``.design.yaml``."""
    stem = file_name.removesuffix(".gz").removesuffix(".csv")
    return (pd.read_csv(ROOT / "sample_data" / file_name),
            Design.load(ROOT / "sample_data" / f"{stem}.design.yaml"))


def shown(markdown: str) -> str:
    """What a user reads for Markdown written by ``ui.widgets.md``: backslash escapes
    removed and hard line breaks (two trailing spaces) back to plain newlines."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown.replace("  \n", "\n"))
