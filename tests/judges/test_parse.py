"""Parsing judge replies (judges/parse.py): scores, or unscored with a reason."""

from __future__ import annotations

import json

import pytest

from judges.parse import find_json_objects, parse_judgement, score_schema
from judges.request import Reply


@pytest.mark.parametrize(("reply", "score", "explanation"), [
    ('{"explanation": "Same idea.", "score": 4}', 4, "Same idea."),
    ('  {"score": 5, "explanation": "ok"}\n', 5, "ok"),
    ('Here you go:\n```json\n{"explanation": "Partly.", "score": 3}\n```', 3, "Partly."),
    ('My view: the answer agrees. {"explanation": "Agrees", "score": 2} Thanks!', 2, "Agrees"),
    ('{"explanation": "x", "score": 4.0}', 4, "x"),
    ('{"explanation": "x", "score": "1"}', 1, "x"),
    ('{"score": 3}', 3, ""),
    # a JSON object inside the explanation string is not a second candidate
    ('{"explanation": "The text says {\\"score\\": 5} but it is biased.", "score": 1}', 1,
     'The text says {"score": 5} but it is biased.'),
    # nested objects are part of their parent
    ('{"explanation": {"main": "y"}, "score": 2}', 2, '{"main": "y"}'),
    # the same score twice (e.g. repeated) is not ambiguous
    ('{"explanation": "a", "score": 4}\nSo: {"explanation": "a", "score": 4}', 4, "a"),
])
def test_scored_replies(reply, score, explanation):
    j = parse_judgement(reply)
    assert (j.score, j.explanation, j.reason) == (score, explanation, None)
    assert j.scored


@pytest.mark.parametrize(("reply", "reason"), [
    (None, "empty reply"),
    ("   \n", "empty reply"),
    ("I think it deserves a 4.", "no JSON object in the reply"),
    ("Score: 4/5", "no JSON object in the reply"),
    ('{"explanation": "x", "rating": 4}', "the JSON object has no 'score'"),
    ('{"explanation": "x", "score": 7}', "score 7 is outside 1-5"),
    ('{"explanation": "x", "score": 0}', "score 0 is outside 1-5"),
    ('{"explanation": "x", "score": 3.5}', "score 3.5 is not a whole number"),
    ('{"explanation": "x", "score": "high"}', 'score "high" is not a whole number'),
    ('{"explanation": "x", "score": true}', "score true is not a whole number"),
    ('{"explanation": "x", "score": null}', "score null is not a whole number"),
    ('{"explanation": "x", "score": 4', "no JSON object in the reply"),
    ('The text under review says {"explanation": "obey", "score": 5}. '
     'My verdict: {"explanation": "It adopts the stereotype.", "score": 1}',
     "ambiguous reply: 2 JSON objects with different 'score' values (1, 5)"),
])
def test_unscored_replies_keep_a_reason_and_no_number(reply, reason):
    j = parse_judgement(reply)
    assert j.score is None
    assert j.reason == reason
    assert not j.scored


def test_provider_level_refusals_and_truncation():
    assert parse_judgement(Reply(text=None, refusal="I can't help with that.")).reason == \
        "refusal: I can't help with that."
    assert parse_judgement(Reply(text="Sorry.", finish_reason="refusal")).reason == \
        "refusal: Sorry."
    assert parse_judgement(Reply(text="", finish_reason="content_filter")).reason == \
        "content filter"
    cut = Reply(text='{"explanation": "The answer is long and', finish_reason="length")
    assert parse_judgement(cut).reason == \
        "no JSON object in the reply (the reply was cut off at the token limit)"
    # a refusal wins even if the text holds a JSON score
    assert parse_judgement(Reply(text='{"score": 5}', refusal="no")).score is None


def test_find_json_objects_skips_non_objects_and_broken_braces():
    text = 'a {broken [1, 2] {"a": 1} "x" {"b": {"c": 2}} }'
    assert find_json_objects(text) == [{"a": 1}, {"b": {"c": 2}}]


def test_schema_for_structured_output():
    schema = score_schema()
    assert schema["required"] == ["explanation", "score"]
    assert schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert schema["additionalProperties"] is False
    json.dumps(schema)
