"""The active table in the session state, and the bundled samples.

The lowest module of the app's shared state: :mod:`ui.common`, :mod:`ui.data` and
:mod:`ui.context` import it, it imports none of them (``docs/architecture.md``).
"""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.install import app_dir
from analysis.table_meta import TableMeta

__all__ = ["ROOT", "SAMPLES", "SAMPLE_DIR", "active_frame", "set_data", "token_of",
           "active_meta"]

ROOT = app_dir()  # the source tree, or the app's files in an installed wheel
SAMPLE_DIR = ROOT / "sample_data"

#: Bundled samples: file name -> title, provenance caption and design file.
SAMPLES: dict[str, dict[str, str]] = {
    "bbq_unifiedqa.csv.gz": {
        "title": "BBQ with real UnifiedQA-T5-11B answers (6 categories, 3 input formats)",
        "caption": "Real data: BBQ (Parrish et al. 2022, CC-BY-4.0) with the published "
                   "UnifiedQA-T5-11B predictions. Outcome: the answer is the biased one.",
        "design": "bbq_unifiedqa.design.yaml",
    },
    "ssqa_simulated.csv.gz": {
        "title": "SocialStigmaQA design with SIMULATED answers of two fictional models",
        "caption": "SIMULATED outcomes: the SocialStigmaQA prompts (Nagireddy et al. 2024, "
                   "CDLA-Permissive-2.0) answered by two fictional models drawn from stated "
                   "effects (sample_data/ssqa_simulated_effects.yaml). Not real model output.",
        "design": "ssqa_simulated.design.yaml",
    },
    "judged_simulated.csv.gz": {
        "title": "SIMULATED judged benchmark: 40 templates x 5 judges x 2 samples per judgment",
        "caption": "SIMULATED outcomes: two fictional models answer 40 fictional templates x 4 "
                   "attribute values, five fictional judges score each answer twice, drawn "
                   "from stated facet variances (sample_data/judged_simulated_effects.yaml). "
                   "Not real model or judge output. For the Planner's design study.",
        "design": "judged_simulated.design.yaml",
    },
    "ssqa_design.csv.gz": {
        "title": "SocialStigmaQA design only (no outcomes; for coverage)",
        "caption": "Real design: the SocialStigmaQA factor table, each prompt with and "
                   "without chain-of-thought. No model answers: use it on the Coverage page.",
        "design": "ssqa_design.design.yaml",
    },
}


def token_of(data: bytes | pd.DataFrame) -> str:
    """A short content hash for cache keys."""
    if isinstance(data, pd.DataFrame):
        data = pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes()
    return hashlib.sha1(data).hexdigest()[:16]


def set_data(frame: pd.DataFrame, name: str, token: str, design: Design | None = None, *,
             meta: TableMeta | None = None) -> None:
    """Make ``frame`` the active results table (and optionally ``design`` the design);
    ``meta``, what its loader decided (:class:`~analysis.table_meta.TableMeta`), goes to
    ``results_meta`` (see :func:`active_meta`)."""
    st.session_state["results_frame"] = frame
    st.session_state["results_meta"] = meta if meta is not None else TableMeta(name)
    st.session_state["results_name"] = name
    st.session_state["results_token"] = token
    st.session_state.pop("restore_error", None)  # a table is loaded: the note is obsolete
    st.session_state.pop("results_rebuild", None)  # set again by an import (ui/importing.py)
    st.session_state.pop("results_prepare", None)  # ... or by the Prepare page (ui/prepare.py)
    if design is not None:
        st.session_state["design"] = design


def active_frame() -> pd.DataFrame | None:
    """The loaded table, or None."""
    return st.session_state.get("results_frame")


def active_meta() -> TableMeta:
    """What the active table's loader decided (decimal-comma and left-out columns, the
    compact reader); a table set without it (a restored session, a test) has none."""
    meta = st.session_state.get("results_meta")
    return meta if isinstance(meta, TableMeta) else TableMeta(st.session_state.get(
        "results_name"))
