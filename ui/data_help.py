"""No dead ends on the Data page (issue 29 item 5): which importers can run here, a hint when
an upload looks like a harness log or BBQ predictions, messages without server paths, and
"Download this table" for the active table with the command that rebuilds it."""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import streamlit as st

from analysis.errors import AnalysisError
from ui.widgets import md

__all__ = [
    "INSTALL", "TITLES", "import_hint", "importer_problem", "looks_like", "source_label",
    "table_downloads", "without_paths",
]


#: Display names of the importers' sources.
TITLES = {"bbq": "BBQ predictions (JSON Lines)",
          "lm-eval": "lm-evaluation-harness samples (--log_samples)",
          "inspect": "Inspect AI eval logs",
          "wide": "Wide table (one column per model or setting)"}

#: Importer source -> what a user installs when it is missing.
INSTALL = 'pip install -e ".[harnesses]"'


@st.cache_resource(show_spinner=False)
def importer_problem(source: str) -> str | None:
    """Why the importer ``source`` cannot run in this installation (None: it can)."""
    from analysis.importers import load_importer

    try:
        load_importer(source)
    except AnalysisError as exc:
        return str(exc)
    return None


def source_label(source: str, title: str) -> str:
    """The importer's title, marked when its extra is missing."""
    return f"{title} (not installed: {INSTALL})" if importer_problem(source) else title


def without_paths(message: str, folder: str) -> str:
    """A message with the server's temporary folder left out (the user sees file names)."""
    text = message.replace(folder.rstrip("/") + "/", "").replace(folder, "the uploaded files")
    text = re.sub(r"/tmp/bias-workbench-import-[^/\s]+/?", "", text)
    return text.replace("--model", "the model box above")


def looks_like(data: bytes, name: str) -> str | None:
    """The importer an upload looks like it needs (``bbq``, ``lm-eval``, ``inspect``), or None.

    Reads the first JSON record of a JSON Lines file (lm-eval samples have ``doc`` and
    ``resps``; BBQ predictions have ``context_condition`` and ``answer_info``) and the name
    (Inspect logs end in ``.eval``; ``results_*.json`` is lm-eval's results file).
    """
    lower = name.lower()
    if lower.endswith(".eval"):
        return "inspect"
    head = data[:200_000].lstrip()
    if not head.startswith(b"{"):
        return None
    first = head.split(b"\n", 1)[0]
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):  # a hostile nesting: the loader says what it is
        record = None
    if isinstance(record, dict):
        if {"doc", "resps"} <= record.keys() or {"doc", "filtered_resps"} <= record.keys():
            return "lm-eval"
        if {"context_condition", "answer_info"} <= record.keys():
            return "bbq"
        if {"eval", "samples"} & record.keys() and "status" in record:
            return "inspect"
    if lower.startswith("results_") and lower.endswith(".json"):
        return "lm-eval"
    return None


def import_hint(data: bytes, name: str) -> None:
    """Under the uploader: point an upload that looks like a harness file to its importer."""
    source = looks_like(data, name)
    if source:
        st.info(md(f"{name} looks like a file for the importer "
                   f"\"{TITLES.get(source, source)}\": choose **Import from ...** above and "
                   "that importer, which turns it into one row per response with its "
                   "factors and outcome (read as a plain table, its JSON fields become "
                   "columns)."), icon="💡")


def table_downloads(frame: pd.DataFrame, name: str) -> None:
    """"Download this table" as CSV or Parquet (rendered when clicked)."""
    from analysis.export import table_bytes

    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name.split(" (")[0]).strip("._") or "results"
    stem = re.sub(r"\.(csv|tsv|txt|parquet|pq|jsonl|ndjson|json|gz)$", "", stem)
    stem = re.sub(r"\.(csv|tsv|jsonl|json)$", "", stem)

    def parquet() -> bytes:
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        return buf.getvalue()

    c1, c2, _ = st.columns([2, 1, 3])
    c1.download_button("Download this table (CSV)", lambda: table_bytes(frame),
                       file_name=f"{stem}.csv", mime="text/csv", key="data_download_csv",
                       on_click="ignore", icon="⬇️")
    c2.download_button("Parquet", parquet, file_name=f"{stem}.parquet",
                       mime="application/vnd.apache.parquet", key="data_download_parquet",
                       on_click="ignore", icon="⬇️",
                       help="The same table; keeps the column types")
