"""Data page: choose the bundled sample or upload a results table; preview and validate."""

import streamlit as st

from analysis.design import Design, describe_columns
from ui.active import active_meta
from ui.common import active_frame, ensure_data, page_link, warm_applied
from ui.coverage import start_count_unit
from ui.data import (
    SAMPLES,
    active_source,
    missing_values_note,
    on_sample_change,
    on_upload,
    sample_caption,
)
from ui.data_help import import_hint, table_downloads
from ui.design import structure_section
from ui.importing import import_section
from ui.large_file import folder_note, on_server_path
from ui.navigation import route_first_visit
from ui.widgets import encoding_choice, md

route_first_visit()


st.title("Data")
st.caption("One row per benchmark response, with factor columns and at least one outcome.")

ensure_data()  # the app opens on the bundled BBQ sample (or says why a link's data is gone)

if "data_source" not in st.session_state:  # the radio names where the active table came from
    st.session_state["data_source"] = active_source()
source = st.radio("Source", ["Bundled sample", "Upload a file", "Import from ...",
                           "Large file on this machine"],
                  horizontal=True, key="data_source",
                  help="Import: raw benchmark files and evaluation logs (BBQ predictions, "
                       "lm-eval samples, Inspect logs, wide tables) -> a results table. "
                       "Large file: a path or glob under the server's data folder, read by "
                       "DuckDB without an upload")
if source == "Bundled sample":
    if "data_sample" not in st.session_state and st.session_state.get("results_name") in SAMPLES:
        st.session_state["data_sample"] = st.session_state["results_name"]  # show the active one
    choice = st.selectbox("Sample", list(SAMPLES), format_func=lambda k: SAMPLES[k]["title"],
                          key="data_sample", on_change=on_sample_change)
    st.caption(sample_caption(choice))
    if st.session_state.get("results_name") != choice:
        st.button("Load this sample", on_click=on_sample_change, key="data_load_sample")
elif source == "Import from ...":
    if import_section():  # an import not yet used: the old table is not previewed below it
        st.caption(md(f"The active table is still {st.session_state.get('results_name', '')}"
                      ": **Use this table** makes the import the active one."))
        st.stop()
elif source == "Large file on this machine":
    folder, note = folder_note()
    st.text_input("Path or glob under the data folder (e.g. runs/*.parquet or a folder)",
                  key="data_server_path", on_change=on_server_path, disabled=folder is None)
    st.caption(md(note))
else:
    st.file_uploader(
        "Results file (CSV, TSV, Parquet, JSON Lines; .gz accepted)",
        type=["csv", "tsv", "txt", "parquet", "pq", "jsonl", "ndjson", "json", "gz"],
        key="data_upload", on_change=on_upload,
        help=f"Up to {st.get_option('server.maxUploadSize')} MB (the browser refuses larger "
             "files). Larger tables: 'Large file on this machine' (DuckDB, no upload) or the CLI",
    )
    if st.session_state.get("data_upload") is not None:  # a harness log read as a table?
        upload = st.session_state["data_upload"]
        import_hint(upload.getvalue(), upload.name)
    encoding_choice("data_encoding", on_change=on_upload)

if "data_error" in st.session_state:
    st.error(md(st.session_state["data_error"]))
frame = active_frame()
if frame is None:
    st.stop()

name = st.session_state["results_name"]
c1, c2, c3 = st.columns([1, 1, 3])
c1.metric("Rows", f"{len(frame):,}")
c2.metric("Columns", frame.shape[1])
c3.markdown(f"**Active table**  \n{md(name)}")
table_downloads(frame, name)
if "data_error" in st.session_state:
    st.caption("The table above is still the previous one: nothing was replaced.")
loaded = active_meta()  # what the loader decided (analysis.table_meta.TableMeta)
if loaded.decimal_comma_columns:
    st.caption(md("Read as numbers written with a decimal comma (0,5 = 0.5): "
                  + ", ".join(loaded.decimal_comma_columns)))
if loaded.dropped_columns:
    st.caption("Left out (free text): " + md(", ".join(loaded.dropped_columns)))

missing_values_note(frame)

st.subheader("Preview")
st.dataframe(frame.head(200), width="stretch", height=280)
st.subheader("Columns")
st.caption("Suggested roles: *factor* columns are offered on the Design page; *outcome* "
           "columns are 0/1 candidates for the deviation.")
st.dataframe(describe_columns(frame), width="stretch", hide_index=True)
st.subheader("Structure read from the table")
structure_section(frame, st.session_state.get("design") or Design(), key="data_structure")
warm_applied()  # the analysis pages find the design applied (part of loading)
start_count_unit()  # a large table: Coverage's count unit read in the background now
page_link("pages/prepare.py", label="Next: prepare the table (optional)", icon="🧪")
page_link("pages/design.py", label="Or declare the design", icon="🧩")
