"""AppTest of the Text features section on the Prepare page (ui/features.py)."""

from __future__ import annotations

import pandas as pd

from analysis.design import Design, Factor
from tests.app.apptools import page_test


def test_features_become_columns_of_the_active_table():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    frame = pd.DataFrame({"group": ["a", "b", "a"],
                          "response": ["I love it.", "This is awful.", None]})
    design = Design(factors=(Factor("group", "domain", ("a", "b"), "a"),))
    at = page_test("prepare.py", frame=frame, design=design)
    at.run()
    assert not at.exception
    assert at.selectbox(key="features_text").value == "response"
    assert at.multiselect(key="features_names").value == ["sentiment_vader",
                                                          "polarity_textblob"]
    at.button(key="features_add").click()
    at.run()
    assert not at.exception
    active = at.session_state["results_frame"]
    vader = SentimentIntensityAnalyzer()
    assert active["sentiment_vader"].tolist()[:2] == [
        vader.polarity_scores(t)["compound"] for t in ("I love it.", "This is awful.")]
    assert pd.isna(active["polarity_textblob"].iloc[2])
    assert at.session_state["design"] == design  # the design still fits
    assert at.session_state["results_name"].endswith("(+ text features)")
