"""Judges page: score a four-stage open-ended test with an LLM judge or embeddings."""

import streamlit as st

from judges.judge import is_judged
from ui import judges as judges_ui
from ui import judges_ensemble as ensemble_ui
from ui import judges_reliability as reliability_ui
from ui import judges_results as results_ui
from ui import judges_run as run_ui
from ui.navigation import route_first_visit
from ui.widgets import md

route_first_visit()

st.title("Judges")
st.caption("LLM-as-judge scores for four-stage open-ended bias tests (docs/methods.md, "
           "section 8): ICS for stages 1 and 4, TCS/PCS/ETCS for stage 2, SBAS for stage 3, "
           "or an offline embedding similarity. Unparseable replies stay unscored.")

loaded = judges_ui.load_input()
if loaded is None:
    st.stop()
frame, name = loaded
st.caption(f"**{md(name)}**: {len(frame):,} rows.")

if is_judged(frame):
    st.info("This file is already judged: its scores are shown below.")
    results_ui.show_results(frame, name)
    reliability_ui.show_for_judged(frame, name)
    st.stop()

st.subheader("Judge")
settings = judges_ui.settings()
several = ensemble_ui.choose(settings)  # more judges: per-judge columns and an ensemble
job = st.session_state.get("judges_job")
if job is None and several is not None:
    try:
        ensemble_ui.show_estimate(frame, settings, several)
    except ValueError as exc:
        st.error(md(str(exc)))
    st.button(f"Run the {len(several.specs)} judges", key="judges_run_several", type="primary",
              on_click=ensemble_ui.start, args=(frame, settings, several, name),
              disabled=not settings.model)
elif job is None:
    try:
        run_ui.show_estimate(frame, settings)
    except ValueError as exc:
        st.error(md(str(exc)))
    st.button("Run the judge", key="judges_run", type="primary", on_click=run_ui.start_job,
              args=(frame, settings, name), disabled=not settings.model)
if "judges_error" in st.session_state:
    st.error(md(st.session_state["judges_error"]))
if job is not None:
    run_ui.progress_panel()  # refreshes itself every 0.5 s until the job ends

judged = st.session_state.get("judges_judged")
if judged is not None and job is None:
    if st.session_state.get("judges_cancelled"):
        st.info("The run was cancelled: judgments made so far are kept (and cached); the "
                "rest are unscored with reason 'run cancelled'. Run again to finish them.")
    judged_name = st.session_state.get("judges_judged_name", name)
    st.caption(f"Results of the last run, on **{md(judged_name)}**.")
    results_ui.show_results(judged, judged_name, st.session_state.get("judges_summary"))
    reliability_ui.show_for_judged(judged, judged_name)
