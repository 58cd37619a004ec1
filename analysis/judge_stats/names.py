"""Which columns of a judged file are what: human labels and judges' score columns.

Name parsing only, no statistics: the front-ends use it to offer choices (the human label
pairs of the Agreement tab, whether a judged result has several judges) without computing
anything. Re-exported by :mod:`analysis.judge_stats.agreement` and
:mod:`analysis.judge_stats.reliability`, where these names were first defined.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.judge_stats import columns as C

__all__ = ["HUMAN_PATTERNS", "JUDGE_COLUMN_RE", "JUDGE_SEP", "human_pairs", "judge_names_in"]

#: How human label columns are recognised: ``human_<metric>`` or ``<metric>_human``.
HUMAN_PATTERNS: tuple[str, ...] = ("human_{}", "{}_human")
#: Separator between a judge-specific column and the judge's name (``ics@openai:gpt-4o``).
JUDGE_SEP = "@"
#: ``<metric><suffix>@<judge>``: groups metric, suffix (``""``, ``_scores``, ``_sd`` ...), judge.
JUDGE_COLUMN_RE = re.compile(rf"^({'|'.join(C.METRICS)})((?:_[a-z]+)?){JUDGE_SEP}(.+)$")


def human_pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """``(judge column, human column)`` for every metric with a human label column.

    A human column is ``human_<metric>`` or ``<metric>_human`` (e.g. ``human_ics``) next
    to the judge's ``<metric>`` column.
    """
    pairs = []
    for metric in (*C.METRICS, C.SIMILARITY):
        if metric not in frame.columns:
            continue
        for pattern in HUMAN_PATTERNS:
            if pattern.format(metric) in frame.columns:
                pairs.append((metric, pattern.format(metric)))
                break
    return pairs


def judge_names_in(frame: pd.DataFrame) -> list[str]:
    """Judge names of the ``<metric>@<name>`` score columns of a multi-judge file."""
    names: list[str] = []
    for col in frame.columns:
        match = JUDGE_COLUMN_RE.match(str(col))
        if match and not match.group(2) and match.group(3) not in names:
            names.append(match.group(3))
    return names
