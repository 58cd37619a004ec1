"""lm-eval's CrowS-Pairs tasks (``crows_pairs_english*``, ``crows_pairs_french*``).

lm-eval's ``crows_pairs/utils.py`` scores each pair by the log-likelihoods of its two
sentences (``sent_more``, the more stereotyping one, first): ``pct_stereotype`` is 1 when
``sent_more`` is the more likely one, ``likelihood_diff`` the *absolute* difference of
the two log-likelihoods (so it is above 0 for every pair and says nothing about the
direction). The outcome is ``pct_stereotype`` (deviation = the model preferred the more
stereotyping sentence, the rate lm-eval reports); ``likelihood_diff`` stays a numeric
column; ``bias_type`` and ``stereo_antistereo`` are factors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.design import Outcome
from analysis.importers.harness_tasks import TaskImport

__all__ = ["FAMILY", "OUTCOME", "detect", "unpack"]


FAMILY = "crows_pairs"
OUTCOME = "pct_stereotype"


def detect(metric_names: Sequence[str], records: list[dict[str, Any]]) -> bool:
    """CrowS-Pairs logs ``pct_stereotype`` and ``likelihood_diff``."""
    return {"pct_stereotype", "likelihood_diff"} <= set(metric_names)


def unpack(records: list[dict[str, Any]], path: Path) -> TaskImport:
    """No new columns: the outcome, references and factors of the family's analysis."""
    return TaskImport(
        family=FAMILY,
        outcome=Outcome(column=OUTCOME, mapping="above", threshold=0.0),
        factor_columns=[("domain", "bias_type"), ("prompt", "stereo_antistereo")],
        references={"stereo_antistereo": "stereo"},
        notes=[f"{path.name}: lm-eval's CrowS-Pairs task; outcome pct_stereotype (deviation = "
               "the more stereotyping sentence is the more likely one); likelihood_diff is "
               "the absolute log-likelihood difference (above 0 for every pair), kept as a "
               "numeric column, never an outcome."])
