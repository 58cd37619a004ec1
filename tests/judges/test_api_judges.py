"""The judges' statistics through analysis.api, and the run context (judges/context.py).

The API functions are compositions: their tables must be exactly those of the statistics
functions the pages and the CLI called before (numbers identical, no tolerance), with the
options in ``Result.settings``; the hand-made judged table's stage metrics are checked by
hand in test_metrics.py.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest

from analysis import api
from analysis.judge_noise import available_modes
from analysis.judge_stats import columns as C
from analysis.judge_stats import names
from analysis.judge_stats.agreement import agreement, human_pairs
from analysis.judge_stats.metrics import stage_metrics, unscored_reasons
from analysis.judge_stats.reliability import (
    disagreements,
    judge_names_in,
    reliability,
    reliability_data,
    score_spread,
)
from judges.batch import BatchConfig, BatchMonitor
from judges.context import RunContext
from judges.runner import RunConfig, RunStats
from tests.judges.test_metrics import judged_table


def _three_judges(seed: int = 3, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    frame = pd.DataFrame({C.ID: [f"q{i}" for i in range(n)],
                          C.STAGE: [1 if i % 2 else 4 for i in range(n)]})
    for k in range(3):
        frame[f"ics@j{k}"] = np.clip(truth + rng.integers(-1, 2, n), 1, 5).astype(float)
    frame.loc[:3, "ics@j2"] = np.nan
    return frame


def test_judge_reliability_is_the_statistics_functions_with_its_options():
    frame = _three_judges()
    data = reliability_data([frame])
    result = api.judge_reliability(frame, n_resamples=200, seed=4, min_range=1.0)
    pd.testing.assert_frame_equal(result.table, reliability(data, n_resamples=200, seed=4))
    pd.testing.assert_frame_equal(result.tables["disagreements"],
                                  disagreements(data, min_range=1.0))
    pd.testing.assert_frame_equal(result.tables["spread"], score_spread(data))
    assert result.meta == {"judges": ["j0", "j1", "j2"], "n_rows": 40}
    assert result.settings == {"n_resamples": 200, "seed": 4, "confidence": 0.95,
                               "min_range": 1.0}
    # Aligned data, a list of one table and the table itself give the same numbers.
    for same in (data, [frame]):
        pd.testing.assert_frame_equal(
            api.judge_reliability(same, n_resamples=200, seed=4).table, result.table)


def test_judge_agreement_and_its_pairs():
    rng = np.random.default_rng(8)
    human = rng.integers(1, 6, 50).astype(float)
    frame = pd.DataFrame({C.STAGE: [1, 4] * 25, "ics": np.clip(human + rng.integers(-1, 2, 50),
                                                               1, 5), "human_ics": human})
    result = api.judge_agreement(frame, ci="analytic")
    pd.testing.assert_frame_equal(result.table, agreement(frame, None, ci="analytic"))
    assert result.settings["pairs"] == [("ics", "human_ics")]
    assert result.settings["ci"] == "analytic" and result.settings["by_stage"] is True
    given = api.judge_agreement(frame, [("ics", "human_ics")], by_stage=False, ci="none")
    pd.testing.assert_frame_equal(given.table, agreement(frame, [("ics", "human_ics")],
                                                         by_stage=False, ci="none"))


def test_judge_stage_metrics_unscored_reasons_and_figures():
    judged = judged_table()
    result = api.judge_stage_metrics(judged)
    pd.testing.assert_frame_equal(result.table, stage_metrics(judged))
    pd.testing.assert_frame_equal(result.tables["unscored_reasons"], unscored_reasons(judged))
    assert result.settings == {"by": [C.STAGE, C.SENSITIVE_FACTOR, C.MODEL]}
    assert "figures" not in result.meta
    drawn = api.judge_stage_metrics(judged, by=[C.MODEL], figures=True)
    pd.testing.assert_frame_equal(drawn.table, stage_metrics(judged, by=[C.MODEL]))
    assert set(drawn.meta["figures"]) == {"judge_scores_box", "judge_stage_bars"}
    # Two unscored judgments, one reason each, as the hand-made table says.
    reasons = result.tables["unscored_reasons"]
    assert int(reasons[C.N_ROWS].sum()) == 2


def test_judge_noise_modes_and_the_name_predicates():
    frame = _three_judges()
    assert api.judge_noise_modes(frame) == available_modes(frame) == []
    labelled = judged_table().assign(human_ics=3.0)
    assert names.human_pairs(labelled) == human_pairs(labelled) == [("ics", "human_ics")]
    assert names.judge_names_in(frame) == judge_names_in(frame) == ["j0", "j1", "j2"]
    assert names.judge_names_in(frame.assign(**{"ics_sd@j3": 1.0})) == ["j0", "j1", "j2"]


def test_run_context_from_the_old_keywords():
    stats, cancel = RunStats(), threading.Event()
    ctx = RunContext.of(None, stats=stats, cancel=cancel, run_config=RunConfig(concurrency=2),
                        batch=None, cache=None)
    assert ctx.stats is stats and ctx.cancel is cancel and ctx.batch is None
    assert ctx.run_config == RunConfig(concurrency=2) and isinstance(ctx.monitor, BatchMonitor)
    assert not ctx.cancelled
    cancel.set()
    assert ctx.cancelled
    # None keeps the context's value; a given one wins; the counters are shared, not copied.
    again = RunContext.of(ctx, stats=None, batch=BatchConfig(poll_interval=1))
    assert again.stats is stats and again.batch == BatchConfig(poll_interval=1)
    assert again.priced().prices is not None and ctx.prices is None
    with pytest.raises(TypeError, match="unexpected keyword argument.*cahce"):
        RunContext.of(cahce=None)
    with pytest.raises(AttributeError):  # frozen
        ctx.cache = None  # type: ignore[misc]
