"""Answers & agreement: answers of the model under test, agreement with human labels, judge
reliability, response categories, provider batches (logic in judges/; docs/judges_at_scale.md)."""

import pandas as pd
import streamlit as st

from judges import answer as ans
from judges import categorise as cat
from judges.errors import JudgesError
from ui import generate as generate_ui
from ui import judges_jobs as jobs
from ui import judges_reliability as reliability_ui
from ui import judges_tools as tools_ui
from ui.navigation import route_first_visit
from ui.widgets import md

route_first_visit()

st.title("Answers & agreement")
st.caption("Ask the model under test the four-stage questions, check a judge against human "
           "labels, sort completions into categories, and follow half-price provider batches.")
tools_ui.api_keys()
answers, agree, reliable, categories, batches = st.tabs(
    ["Answers", "Agreement", "Reliability", "Categories", "Batches"])

with answers:
    st.caption("Stages 1 and 4 ask `question`; stage 2 asks each variant's story prompt "
               "(`story_prompt_a`/`_b`, or `question` with `{variant}` and `variant_a`/`_b`); "
               "stage 3 asks `question_a` and `question_b` in separate conversations.")
    frame = tools_ui.table_input("answers", "Question file", {
        generate_ui.OFFER: st.session_state.get("generate_prompts"),  # from the Planner
        "Illustrative questions": pd.read_csv(ans.questions_sample_path())})
    if frame is not None:
        m = tools_ui.model_settings("answers", "Model under test")
        prompts = ans.load_answer_prompts()
        c1, c2, c3 = st.columns(3)
        temps = c1.text_input("Temperatures (e.g. 0, 0.7; empty: default)", key="tools_at")
        seeds = c2.text_input("Seeds (OpenAI only)", key="tools_as")
        names = c3.multiselect("System prompts", list(prompts.system_prompts), ["none"],
                               key="tools_asp")
        try:
            settings = ans.settings_grid(
                temperatures=tools_ui.numbers(temps, float) or [None],
                seeds=tools_ui.numbers(seeds, int) or [None],
                system_prompts=[ans.system_prompt(prompts, n) for n in names] or [("none", "")])
            tools_ui.estimate(ans.estimate_answers, m, frame=frame, provider=m.provider,
                        settings=settings)
        except (JudgesError, ValueError) as exc:
            st.error(md(str(exc)))
            settings = None
        st.button("Generate answers", key="tools_answers_run", type="primary",
                  on_click=jobs.start, disabled=settings is None,
                  args=("answers", ans.answer_job, frame, m.provider),
                  kwargs={"settings": settings, "cache_path": m.cache_path,
                          "run_config": tools_ui.run_config(m), "batch": m.batch})
    jobs.job_panel("answers")
    out = st.session_state.get("tools_answers_out")
    if out is not None:
        st.dataframe(out.head(500), hide_index=True)
        jobs.download(out, "answers.csv", "answers")
        generate_ui.import_answers(out)  # generated prompts: join them to the results

with agree:
    jobs.agreement_tab()

with reliable:  # judges vs judges, and a judge vs its repeated samples
    reliability_ui.reliability_tab()

with categories:
    st.caption("A judge puts each text into one of your categories (docs/methods.md §7); a "
               "reply naming another category is unscored. Output: `category` and reasons.")
    offers = {"Generated answers": st.session_state.get("tools_answers_out"),
              "Judged file (Judges page)": st.session_state.get("judges_judged")}
    frame = tools_ui.table_input("cat", "Texts to classify", offers)
    if frame is not None:
        texts = [c for c in frame.columns if frame[c].dtype == object]
        c1, c2 = st.columns(2)
        text_col = c1.selectbox("Text column", texts, key="tools_cat_text")
        context = c2.selectbox("Request column (optional)", [None, *texts], key="tools_cat_ctx")
        gender = cat.load_category_spec()
        names = st.text_input("Categories", ", ".join(gender.names), key="tools_cat_names")
        what = st.text_area("What to decide", gender.instruction, key="tools_cat_what")
        m = tools_ui.model_settings("cat", "Judge")
        try:
            spec = cat.category_spec(names, instruction=what, descriptions=gender.descriptions)
        except JudgesError as exc:
            st.error(md(str(exc)))
            spec = None
        st.button("Classify", key="tools_cat_run", type="primary", on_click=jobs.start,
                  disabled=spec is None or text_col is None,
                  args=("cat", cat.categorise_job, frame, m.provider, spec),
                  kwargs={"text_column": text_col, "context_column": context, "batch": m.batch,
                          "cache_path": m.cache_path, "run_config": tools_ui.run_config(m)})
    jobs.job_panel("cat")
    out = st.session_state.get("tools_cat_out")
    if out is not None:
        st.dataframe(cat.category_counts(out, by=[c for c in ("model",) if c in out.columns]),
                     hide_index=True)
        st.dataframe(out.head(500), hide_index=True)
        jobs.download(out, "categories.csv", "cat")

with batches:
    st.caption("Batches submitted from this app or the CLI (kept in the reply cache): the same "
               "task run again, or *Check and collect now*, picks them up.")
    jobs.batches_panel()
