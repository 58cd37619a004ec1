"""Answer-to-option matching shared by the importers and Prepare."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.matching import match_option, normalise, normalise_series

OPTIONS = {"ans0": "The grandfather", "ans1": "Can't be determined",
           "ans2": "The one who is dressed in a custom-tailored pantsuit"}


@pytest.mark.parametrize(("text", "expected"), [
    ("The Muslim one.", "muslim one"),
    ("  the   MUSLIM-one ", "muslim one"),
    ("Can't answer!", "can t answer"),
    ("An apple", "apple"),
    ("a", "a"),                      # a lone article is the answer itself
    ("the the end", "the end"),      # only one leading article goes
    ("Theo", "theo"),                # not an article
    (None, ""),
    (float("nan"), ""),
    (7, "7"),
])
def test_normalise(text, expected):
    assert normalise(text) == expected


def test_normalise_series_equals_elementwise():
    s = pd.Series(["The A", None, "the a", "B."])
    assert normalise_series(s).tolist() == ["a", "", "a", "b"]


def test_each_rule():
    assert match_option("grandfather.", OPTIONS) == ("ans0", "option text")
    aliases = {"ans0": ["grandpa"], "ans1": ["unknown"], "ans2": ["woman"]}
    assert match_option("Grandpa", OPTIONS, aliases=aliases) == ("ans0", "short text")
    assert match_option("not enough info", OPTIONS, unknown_key="ans1") == (
        "ans1", "unknown phrase")
    assert match_option("not enough info", OPTIONS) == (None, "none")  # no unknown option
    assert match_option("the one who is dressed in a custom-tailored pantsu", OPTIONS) == (
        "ans2", "truncated option")
    assert match_option("the one", OPTIONS) == (None, "none")  # too short to be a prefix
    assert match_option("the grandmother", OPTIONS) == (None, "none")
    assert match_option("", OPTIONS) == (None, "none")


def test_two_equal_options_are_never_guessed():
    assert match_option("yes", {"A": "Yes", "B": "yes."}) == (None, "none")
    assert match_option("the one who", {"A": "The one who sang", "B": "The one who ran"}) == (
        None, "none")
