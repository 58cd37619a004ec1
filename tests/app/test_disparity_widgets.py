"""Every widget of the Disparity page, set to a value other than its default where it is
read, changes what the page shows (a missed rerun, a value the page drops or a widget it
redraws under a new key would leave the page as it was); and the settings that cannot
change anything are the ones the methods say are not read.

On every fourth row of the SocialStigmaQA sample (sentiment by Pachankis cluster) under
AppTest; each case starts from a fresh page, sets its prerequisites (e.g. the standard
``quantile`` before the standard's quantile), then the widget, and compares the tables,
metrics, texts and figure specs before and after. The class of bug the browser journey's
Disparity step looked like (tests/app/test_disparity_journey.py); none was found here.
"""

from __future__ import annotations

import pytest

from tests.app.apptools import page_test, sample_with_design
from tests.app.test_disparity_journey import shown

SSQA = "ssqa_simulated.csv.gz"
NO_PERMUTATIONS = ("disparity_permutations", 0)

#: (widget key, value, prerequisites): every widget of the page and of its "More options".
CASES = [
    ("disparity_feature", "row_in_ssqa", []),
    ("disparity_by", ["model", "cot"], []),
    ("disparity_baseline", "row_in_ssqa", []),
    ("disparity_statistic", "median", []),
    ("disparity_statistic", "kurtosis", []),
    ("disparity_standard", "median", []),
    ("disparity_standard", "value", []),
    ("disparity_polarity_sentiment", "harmful", []),
    ("disparity_direction", "below", []),
    ("disparity_direction", "within", []),
    ("disparity_alpha", 0.01, [("disparity_permutations", 99)]),
    ("disparity_quantile", 0.75, [("disparity_standard", "quantile")]),
    ("disparity_value", 0.2, [("disparity_standard", "value")]),
    ("disparity_tolerance", 0.3, [("disparity_direction", "within")]),
    ("disparity_quantiles", (0.1, 0.9), [("disparity_statistic", "quantile_range")]),
    ("disparity_permutations", 99, []),
    ("disparity_adaptive", False, [("disparity_permutations", 99)]),
    ("disparity_seed", 3, [("disparity_permutations", 99)]),
    ("disparity_compare", "overall", [("disparity_permutations", 99)]),
    ("disparity_comparison", "strict", [("disparity_standard", "median")]),
    ("disparity_saged_conventions", True, []),
    ("saged_normalize", "minmax", []),
    ("saged_bins", 20, [("disparity_baseline", "row_in_ssqa")]),
    ("saged_tolerance", 0.5, [("disparity_baseline", "row_in_ssqa")]),
    ("saged_percentile", 90.0, []),
    ("saged_mode_width", 0.1, []),
    ("disparity_option_adjust", "bonferroni", [("disparity_permutations", 99)]),
    ("disparity_where_model", ["sim-model-A"], []),
]


@pytest.fixture(scope="module")
def ssqa():
    frame, design = sample_with_design(SSQA)
    return frame.iloc[::4].reset_index(drop=True), design  # every group, a quarter the rows


def _widget(at, key: str):  # noqa: ANN001, ANN202
    for kind in ("selectbox", "multiselect", "number_input", "checkbox", "slider"):
        found = [w for w in getattr(at, kind) if w.key == key]
        if found:
            return found[0]
    raise AssertionError(f"no widget {key!r} on the page")


def _page(ssqa, prerequisites):  # noqa: ANN001, ANN202
    frame, design = ssqa
    at = page_test("disparity.py", frame=frame, design=design, name=SSQA)
    for key, value in [NO_PERMUTATIONS, *prerequisites]:
        at.session_state[key] = value  # as the page's kept settings come back
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    return at


@pytest.mark.parametrize(("key", "value", "prerequisites"), CASES,
                         ids=[f"{k}={v}" for k, v, _ in CASES])
def test_each_widget_changes_what_the_page_shows(ssqa, key, value, prerequisites):
    at = _page(ssqa, prerequisites)
    widget = _widget(at, key)
    assert widget.value != value
    before = shown(at)
    widget.set_value(value).run()
    assert not at.exception and not at.error, (at.exception, at.error)
    assert _widget(at, key).value == value  # kept, not reset
    assert shown(at) != before, f"{key} -> {value!r}: the page did not change"


@pytest.mark.parametrize(("key", "value", "prerequisites"), [
    # above the standard: the favourable side of a feature of unknown polarity
    ("disparity_direction", "above", []),
    # the standard's quantile, read only by the standard "quantile"
    ("disparity_quantile", 0.75, []),
    # the number, read only by the standard "value"; the half-width only by "within"
    ("disparity_value", 0.2, []),
    ("disparity_tolerance", 0.3, []),
], ids=["direction=above", "quantile-unread", "value-unread", "tolerance-unread"])
def test_the_settings_not_read_change_nothing(ssqa, key, value, prerequisites):
    at = _page(ssqa, prerequisites)
    before = shown(at)
    _widget(at, key).set_value(value).run()
    assert not at.exception and shown(at) == before
