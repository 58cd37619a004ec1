"""Helpers for AppTest runs of single pages with data already loaded."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from analysis.design import Design

ROOT = Path(__file__).resolve().parents[2]


def page_test(page: str, *, frame: pd.DataFrame | None = None, design: Design | None = None,
              name: str = "test data", timeout: float = 120, meta=None) -> AppTest:  # noqa: ANN001
    """An AppTest of ``pages/<page>`` with the session state the Data page would set
    (``meta``: the loader's :class:`~analysis.table_meta.TableMeta`, ``results_meta``)."""
    from ui.common import token_of

    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=timeout)
    if frame is not None:
        at.session_state["results_frame"] = frame
        at.session_state["results_name"] = name
        at.session_state["results_token"] = token_of(frame)
    if meta is not None:
        at.session_state["results_meta"] = meta
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


def answer_generated(planner: AppTest, reply, model: str) -> tuple[AppTest, int]:  # noqa: ANN001
    """The Answers page (``pages/judges_tools.py``) given the Planner's generated prompts
    (its session state), answering them with ``model`` through a loopback server whose
    ``reply(request)`` answers each call; the page and the number of requests the server
    got, once the answers are in (at most 60 s)."""
    import time

    from tests.judges.judge_server import FakeLLMServer

    answers = AppTest.from_file(str(ROOT / "pages" / "judges_tools.py"), default_timeout=60)
    for key in ("generate_prompts", "generate_design", "results_frame", "results_name",
                "results_token", "design"):
        answers.session_state[key] = planner.session_state[key]
    answers.run()
    assert answers.radio(key="tools_answers_source").value == "Generated prompts (Planner)"
    with FakeLLMServer(reply) as srv:
        answers.text_input(key="tools_answers_url").input(srv.openai_url)
        answers.text_input(key="tools_answers_model_openai").input(model).run()
        answers.button(key="tools_answers_run").click().run()
        deadline = time.monotonic() + 60
        while "tools_answers_out" not in answers.session_state and \
                time.monotonic() < deadline:
            time.sleep(0.2)
            answers.run()
        return answers, srv.n_requests
