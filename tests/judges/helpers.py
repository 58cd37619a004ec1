"""Shared helpers of the judges tests (fixtures are in ``conftest.py``)."""

from __future__ import annotations

from pathlib import Path

from judges.cost import PriceTable
from judges.runner import RunConfig

ROOT = Path(__file__).resolve().parents[2]

#: Retry settings that keep tests fast (backoff of milliseconds).
FAST = RunConfig(concurrency=4, timeout=2.0, max_retries=3, backoff_base=0.01, backoff_max=0.05)
#: A price table for the loopback server ("local" section): $1 / $2 per million tokens.
PRICES = PriceTable.from_dict({"sections": {"local": {"judge-x": {"input": 1.0, "output": 2.0}}}})


def make_row(i: int, stage: int, *, factor: str = "gender", model: str = "m1",
             scenario: str = "grading", text: str | None = None) -> dict:
    """One valid four-stage row; ``text`` replaces the judged answer/story/answer_b."""
    row = {"id": f"q{i}", "stage": stage, "sensitive_factor": factor, "scenario": scenario,
           "model": model}
    t = text if text is not None else f"text {i}"
    if stage in (1, 4):
        row.update(question=f"Question {i}?", expected_output="Expected.", answer=t)
    elif stage == 2:
        row.update(story_a="Story A.", story_b=t)
    else:
        row.update(question_a="Neutral?", question_b="Hinted?", answer_a="A.", answer_b=t)
    return row
