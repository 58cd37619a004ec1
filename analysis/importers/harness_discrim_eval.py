"""lm-eval's DiscrimEval tasks (``discrim_eval_explicit``, ``discrim_eval_implicit``).

lm-eval's ``discrim_eval/utils.py`` logs, per document and for each of its seven bias
metrics, the same tuple ``((race, gender, age, decision_question_id), bias_name,
logit_yes)`` with ``logit_yes`` the log-odds of "yes" against "no" (upper and lower case
pooled) and race and gender lower-cased. Its aggregation fits one mixed-effects linear
model ``logit_yes ~ age_c + race (ref white) + gender (ref male)`` with a random
intercept and random slopes of every term per decision question (``age_c``: age
standardised with the sample standard deviation) and reports the coefficients.

This module gives one row per document with ``logit_yes`` (the continuous outcome;
its 0/1 deviation for the other analyses is ``logit_yes < 0``, the model leans to
"no"), ``race`` and ``gender`` as factors (references ``white`` and ``male``),
``age`` as a numeric covariate and ``decision_question_id`` as the design's cluster.
``python -m analysis importance ... --mixed`` fits lm-eval's model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.design import Outcome
from analysis.importers import ImportFormatError
from analysis.importers.harness_tasks import TaskImport, record_where

__all__ = [
    "BIAS_METRICS", "CLUSTER", "DEMOGRAPHICS", "FAMILY", "OUTCOME", "REFERENCES", "detect",
    "unpack",
]


FAMILY = "discrim_eval"
#: lm-eval's ``BIAS_PARAM_MAP`` keys (the seven metrics, one regression each).
BIAS_METRICS = ("black_bias", "asian_bias", "hispanic_bias", "native_american_bias",
                "female_bias", "non_binary_bias", "age_bias")
OUTCOME, CLUSTER = "logit_yes", "decision_question_id"
DEMOGRAPHICS = ("race", "gender", "age", CLUSTER)
REFERENCES = {"race": "white", "gender": "male"}


def detect(metric_names: Sequence[str], records: list[dict[str, Any]]) -> bool:
    """DiscrimEval logs the bias metrics as ``(demographics, name, logit_yes)`` tuples."""
    names = [m for m in metric_names if m in BIAS_METRICS]
    return bool(names) and isinstance(records[0].get(names[0]), list)


def unpack(records: list[dict[str, Any]], path: Path) -> TaskImport:
    """Columns ``logit_yes``, ``p_yes``, ``race``, ``gender``, ``age``,
    ``decision_question_id`` (replacing the doc's own race and gender by lm-eval's
    lower-cased values)."""
    metric = next(m for m in BIAS_METRICS if m in (records[0].get("metrics") or BIAS_METRICS)
                  and m in records[0])
    cols: dict[str, list[Any]] = {OUTCOME: [], "p_yes": [], **{d: [] for d in DEMOGRAPHICS}}
    for number, record in enumerate(records, start=1):
        where = record_where(path, number)
        value = record.get(metric)
        if (not isinstance(value, list) or len(value) != 3 or not isinstance(value[0], list)
                or len(value[0]) != 4):
            raise ImportFormatError(f"{where}: field {metric!r} is not lm-eval's DiscrimEval "
                                    "tuple [[race, gender, age, decision_question_id], "
                                    "bias_name, logit_yes].")
        demographics, _, logit = value
        for name, item in zip(DEMOGRAPHICS, demographics, strict=True):
            if item is None or (isinstance(item, str) and not item.strip()):
                raise ImportFormatError(
                    f"{where}: the doc has no {name} (field 'doc.{name}' is missing or empty; "
                    f"{metric!r} logs it as null). DiscrimEval's analysis needs race, "
                    "gender, age and decision_question_id for every document; lm-eval "
                    "silently leaves such documents out of its regression.")
        try:
            logit = float(logit)
            age = float(demographics[2])
        except (TypeError, ValueError):
            raise ImportFormatError(f"{where}: field {metric!r}: logit_yes ({logit!r}) and age "
                                    f"({demographics[2]!r}) must be numbers.") from None
        if not math.isfinite(logit):
            raise ImportFormatError(f"{where}: field {metric!r}: logit_yes is {logit}, not a "
                                    "finite number (p_yes was 0 or 1).")
        cols[OUTCOME].append(logit)
        cols["p_yes"].append(1.0 / (1.0 + math.exp(-logit)))
        cols["race"].append(str(demographics[0]))
        cols["gender"].append(str(demographics[1]))
        cols["age"].append(age)
        cols[CLUSTER].append(str(demographics[3]))
    return TaskImport(
        family=FAMILY, columns=cols,
        unpacked=[m for m in BIAS_METRICS if m in records[0]],
        outcome=Outcome(column=OUTCOME, mapping="below", threshold=0.0, type="continuous"),
        references=dict(REFERENCES),
        factor_columns=[("domain", "race"), ("domain", "gender")],
        drop_factors=["age", CLUSTER, "fill_type"],
        cluster=CLUSTER, covariates=("age",),
        notes=[f"{path.name}: lm-eval's DiscrimEval task; one row per document, outcome "
               "logit_yes (continuous; 0/1 deviation logit_yes < 0), factors race (reference "
               "white) and gender (reference male), age a numeric covariate, cluster "
               "decision_question_id. `importance --mixed` fits lm-eval's mixed model."])
