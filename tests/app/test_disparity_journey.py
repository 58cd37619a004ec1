"""The browser journey's Disparity changes (``benchmarks/bench_browser_journey.py``
``JOURNEY``) each change the page, and the journey reports a change that ran no script.

Session 12's journey chose the feature ``correct`` on the Disparity page, the feature the
page already shows (the first numeric column of the BBQ table): the browser sends no rerun
for the option already chosen, so the step timed nothing and counted as a 0 s change. Here
the journey's steps are replayed under AppTest on the journey's baseline table (10,000 rows
spread over the sample's example ids) with the design the upload keeps (the sample's, which
fits it: ``ui.data.starting_design``): each option is offered, is not the one shown, and
changes what the page shows.
"""

from __future__ import annotations

import json

import pytest

from tests.app.apptools import page_test, plotly_specs, sample_with_design


def shown(at) -> dict:  # noqa: ANN001
    """What a visitor reads on the page: tables, metrics, captions, messages, figures."""
    return {"tables": [el.value.to_json() for el in at.dataframe],
            "metrics": [(m.label, m.value, str(m.proto.delta)) for m in at.metric],
            "text": [el.value for kind in ("caption", "markdown", "warning", "info", "error",
                                           "subheader") for el in getattr(at, kind)],
            "figures": [json.dumps(s, sort_keys=True) for s in plotly_specs(at)]}


@pytest.fixture(scope="module")
def journey_table():
    from benchmarks.bench_app_pages import SAMPLE, spread

    frame, design = sample_with_design(SAMPLE)
    return spread(frame, 10_000), design


def test_each_disparity_change_of_the_journey_changes_the_page(journey_table):
    from benchmarks.bench_browser_journey import JOURNEY

    frame, design = journey_table
    at = page_test("disparity.py", frame=frame, design=design, name="bbq.parquet").run()
    assert not at.exception and not at.error
    for key, kind, option in JOURNEY["Disparity"]:
        assert kind == "select"
        box = at.selectbox(key=key)
        assert option in box.options, (key, option, box.options)
        assert box.options[box.index] != option, f"{key}: {option!r} is already chosen"
        before = shown(at)
        box.set_value(option).run()
        assert not at.exception and not at.error
        assert at.selectbox(key=key).value == option
        assert shown(at) != before, f"{key} -> {option}: the page did not change"


class _Page:
    """Just enough of a Playwright page for ``timed``: idle at once, a quiet DOM, no
    exception box."""

    def wait_for_timeout(self, ms: float) -> None:
        pass

    def wait_for_function(self, script: str, timeout: float) -> None:
        pass

    def evaluate(self, script: str):  # noqa: ANN201
        import time

        if "Date.now() - " in script:
            return 10_000  # quiet for 10 s
        if "script-state" in script:
            return True
        return time.time() * 1000

    def locator(self, selector: str):  # noqa: ANN201
        return self

    def get_by_text(self, text: str):  # noqa: ANN201
        return self

    def count(self) -> int:
        return 0


def test_a_change_that_ran_no_script_is_a_problem_of_the_journey(tmp_path):
    from benchmarks.bench_browser_journey import ServerLog, timed

    path = tmp_path / "runs.jsonl"
    path.write_text("")
    log = ServerLog(path)
    quiet = timed(_Page(), log, "Disparity", "select disparity_feature -> correct", "change",
                  lambda: None)
    assert quiet.runs == 0 and quiet.server is None
    assert any("no script run" in p for p in quiet.problems), quiet.problems

    def rerun() -> None:  # the record run_timing/sitecustomize.py writes for one run
        import time

        t = time.time()
        record = {"kind": "run", "call": 1, "t0": t, "t1": t + 0.2, "ended": t + 0.1,
                  "cpu": 0.1, "fragment": False}
        path.write_text(json.dumps(record) + "\n")

    ran = timed(_Page(), log, "Disparity", "select disparity_feature -> biased_answer",
                "change", rerun)
    assert ran.runs == 1 and ran.server == pytest.approx(0.1)
    assert ran.problems == []
