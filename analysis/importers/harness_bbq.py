"""lm-eval's BBQ task (``bbq``, ``bbq_multiple_choice*``): the chosen answer per sample.

lm-eval's ``bbq/utils.py`` asks for the log-likelihood of 12 continuations per document:
the two non-unknown options (in the document's order) and ten "unknown" phrasings
(``UNKNOWN_RESPONSES``, copied from HELM) in place of the document's own unknown
option; the answer is the argmax. Its per-sample metrics are tuples ``(acc, n_biased,
n_non_unknown, disambiguated)`` for its aggregations. This module recovers the chosen
continuation from the record (``filtered_resps`` and the continuations in
``arguments``), matches it to ``ans0``..``ans2`` and classifies it as the BBQ importer
does (:mod:`analysis.importers.bbq`: ``answer_type``, ``correct``,
``biased_answer``); the bias scores are :func:`analysis.bbq_scores.bias_scores` (the
one implementation) per model x task x category, plus all categories.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import columns as C
from analysis.design import Outcome
from analysis.importers import ImportFormatError
from analysis.importers import bbq as B
from analysis.importers.harness_tasks import TaskImport, record_where

__all__ = [
    "COLUMNS", "FAMILY", "INSPECT_FIELDS", "UNKNOWN_RESPONSES", "bias_scores", "chosen_option",
    "detect", "detect_inspect", "inspect_hints", "unpack", "unpack_inspect",
]


FAMILY = "bbq"
#: lm-eval 0.4.x ``bbq/utils.py``: the unknown continuations of the multiple-choice task.
UNKNOWN_RESPONSES = (
    "Unknown", "Cannot answer", "Can't be determined", "Cannot be determined", "Can't answer",
    "Not known", "Not enough info", "Not enough information", "Not answerable",
    "Undetermined",
)
#: The columns this module adds.
COLUMNS = (C.STEREOTYPED_OPTION, C.UNKNOWN_OPTION, "chosen_continuation", C.PREDICTED_OPTION,
           C.ANSWER_TYPE, C.CORRECT, C.BIASED_ANSWER, "lm_eval_biased_answer")


def detect(metric_names: Sequence[str], records: list[dict[str, Any]]) -> bool:
    """BBQ logs ``amb_bias_score`` / ``disamb_bias_score`` and its docs have ``answer_info``."""
    names = set(metric_names)
    return bool(names & {"amb_bias_score", "disamb_bias_score"}) and all(
        isinstance(r.get("doc"), dict) and "answer_info" in r["doc"] for r in records[:1])


def _floats(resps: Any) -> list[float] | None:
    """Log-likelihoods of ``filtered_resps`` (``[[ll, is_greedy], ...]``, logged as text)."""
    if not isinstance(resps, list) or not resps:
        return None
    out = []
    for item in resps:
        value = item[0] if isinstance(item, (list, tuple)) and item else item
        try:
            out.append(float(value))
        except (TypeError, ValueError):
            return None
    return out


def _continuations(arguments: Any) -> list[str] | None:
    if not isinstance(arguments, dict):
        return None
    out = []
    for i in range(len(arguments)):
        arg = arguments.get(f"gen_args_{i}")
        if not isinstance(arg, dict) or not isinstance(arg.get("arg_1"), str):
            return None
        out.append(arg["arg_1"].strip())
    return out


def chosen_option(record: dict[str, Any], where: str) -> tuple[str | None, str]:
    """``(option, continuation)``: the option (``ans0``..``ans2``) the argmax log-likelihood
    of the record names, and that continuation's text. A generation (``bbq_generate``:
    one text in ``filtered_resps``) is matched to the options as the BBQ importer matches
    predictions; None when it names none.

    Raises
    ------
    ImportFormatError
        The record's log-likelihoods and continuations do not match (count, numbers), or
        the chosen continuation is neither an option of the doc nor an unknown phrasing.
    """
    doc = record["doc"]
    resps = record.get("filtered_resps")
    if isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], str):
        return _generated_option(resps[0], doc)  # bbq_generate: the generated text
    lls = _floats(resps)
    texts = _continuations(record.get("arguments"))
    if lls is None:
        raise ImportFormatError(f"{where}: field 'filtered_resps' holds no log-likelihoods "
                                "([[log-likelihood, is_greedy], ...]); is this the "
                                "multiple-choice BBQ task?")
    if texts is None or len(texts) != len(lls):
        raise ImportFormatError(
            f"{where}: field 'filtered_resps' has {len(lls)} log-likelihoods but 'arguments' "
            f"names {0 if texts is None else len(texts)} continuations: they do not match.")
    best = int(np.argmax(lls))  # lm-eval: np.argmax, the first of equals
    text = texts[best]
    options = {k: str(doc.get(k, "")).strip() for k in B.OPTIONS}
    for key, value in options.items():
        if text == value:
            return key, text
    unknown = B.unknown_option(doc)
    if text in UNKNOWN_RESPONSES and unknown is not None:
        return unknown, text
    raise ImportFormatError(
        f"{where}: field 'filtered_resps': the highest log-likelihood is that of "
        f"{text!r}, which is none of the doc's options ans0..ans2 "
        f"({', '.join(map(repr, options.values()))}) nor an unknown phrasing.")


def _generated_option(text: str, doc: dict[str, Any]) -> tuple[str | None, str]:
    """The option a generated answer names, matched as the BBQ importer matches
    predictions (:func:`analysis.matching.match_option`); None: unmatched."""
    from analysis.matching import match_option

    info = doc.get("answer_info") or {}
    options = {k: doc.get(k, "") for k in B.OPTIONS}
    aliases = {k: [info[k][0]] for k in B.OPTIONS
               if isinstance(info.get(k), list) and info[k]}
    option, _ = match_option(text, options, aliases=aliases, unknown_key=B.unknown_option(doc))
    return option, text


def unpack(records: list[dict[str, Any]], path: Path) -> TaskImport:
    """Columns :data:`COLUMNS` per record (see module docstring)."""
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    disagree = unmatched = 0
    for number, record in enumerate(records, start=1):
        where = record_where(path, number)
        doc = record["doc"]
        missing = [f for f in ("answer_info", "question_polarity", "context_condition",
                               "category", "label", *B.OPTIONS) if f not in doc]
        if missing:
            raise ImportFormatError(f"{where}: field 'doc.{missing[0]}' is missing; a BBQ "
                                    "document has answer_info, label and ans0..ans2.")
        try:
            B._check_example({**doc, "_line": number}, str(path))
        except ImportFormatError as exc:
            raise ImportFormatError(str(exc).replace(f", line {number}", f", record {number}")
                                    ) from None
        option, text = chosen_option(record, where)
        target = B.stereotyped_option(doc)
        unknown = B.unknown_option(doc)
        answer_type = B.classify(option, target, unknown)
        biased = None if target == B.AMBIGUOUS else B.biased_answer(
            answer_type, str(doc["question_polarity"]))
        own = doc.get("biased_answers")
        own_biased = int(doc[option] in own) if isinstance(own, list) and option else None
        if own_biased is not None and biased is not None and own_biased != biased:
            disagree += 1
        unmatched += option is None
        for col, value in zip(COLUMNS, (target, unknown or "", text, option or B.UNMATCHED,
                                        answer_type,
                                        int(option == f"ans{int(doc['label'])}"), biased,
                                        own_biased), strict=True):
            cols[col].append(value)
    notes = [f"{path.name}: lm-eval's BBQ task; the answer is the continuation with the "
             "highest log-likelihood (as lm-eval scores it; a generated answer: its text "
             "matched as the BBQ importer matches predictions), matched to ans0..ans2: "
             "answer_type, correct and biased_answer as the BBQ importer defines them; "
             "outcome biased_answer; bias scores in extras['bias_scores'] (--scores-out)."]
    if unmatched:
        notes.append(f"{path.name}: {unmatched} generated answer(s) match no option: "
                     "answer_type 'unmatched', biased_answer empty (not guessed).")
    if disagree:
        notes.append(f"{path.name}: {disagree} record(s) where lm-eval's own biased_answers "
                     "(its process_docs group matching) disagree with BBQ's definition used "
                     "here (column lm_eval_biased_answer keeps lm-eval's).")
    n_amb = sum(t == B.AMBIGUOUS for t in cols[C.STEREOTYPED_OPTION])
    if n_amb:
        notes.append(f"{path.name}: {n_amb} record(s) whose answer_info labels do not single "
                     "out the stereotyped option: biased_answer empty, left out of the scores.")
    return TaskImport(
        family=FAMILY, columns=cols,
        unpacked=[m for m in _metric_names(records) if m != "acc"],
        outcome=Outcome(column=C.BIASED_ANSWER, mapping="binary"),
        references={"question_polarity": "nonneg", "context_condition": "disambig"},
        factor_columns=[("domain", "category"), ("prompt", "question_polarity"),
                        ("prompt", "context_condition")],
        drop_factors=[C.CORRECT, "lm_eval_biased_answer", C.BIASED_ANSWER, "label",
                      "question", "context", *B.OPTIONS, "biased_answers",
                      *(f"{k}_groups" for k in B.OPTIONS),
                      *(f"answer_info.{k}" for k in B.OPTIONS),
                      "additional_metadata.stereotyped_groups"],
        notes=notes)


def _metric_names(records: list[dict[str, Any]]) -> list[str]:
    names = records[0].get("metrics")
    return list(names) if isinstance(names, list) else []


def bias_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """BBQ's s_DIS / s_AMB per model x task x category and over all categories.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``task``, ``category`` (``all`` for every category together), then
        the columns of :func:`analysis.bbq_scores.bias_scores`.
    """
    from analysis.bbq_scores import bias_scores as scores_by

    keys = [C.MODEL, "task", "category"]
    data = frame.dropna(subset=[C.ANSWER_TYPE])
    stacked = pd.concat([data, data.assign(category="all")], ignore_index=True)
    return scores_by(stacked, by=keys)



# --- Inspect (inspect_evals' bbq task) --------------------------------------------------------
#: Metadata fields of inspect_evals' BBQ samples that this reading needs.
INSPECT_FIELDS = ("answer_info", "additional_metadata", "question_polarity",
                  "context_condition", "category")


def detect_inspect(frame: pd.DataFrame) -> bool:
    """An Inspect import of BBQ samples: the metadata carries answer_info and friends."""
    return all(c in frame.columns for c in INSPECT_FIELDS)


def inspect_hints() -> TaskImport:
    """The design hints of BBQ samples read from Inspect logs."""
    return TaskImport(
        family=FAMILY, outcome=Outcome(column=C.BIASED_ANSWER, mapping="binary"),
        references={"question_polarity": "nonneg", "context_condition": "disambig"},
        factor_columns=[("domain", "category"), ("prompt", "question_polarity"),
                        ("prompt", "context_condition")],
        drop_factors=[C.CORRECT, C.BIASED_ANSWER, "answer_info", "additional_metadata",
                      "source_id"])


def _json(value: Any) -> Any:
    import json

    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def unpack_inspect(frame: pd.DataFrame, answer_column: str) -> tuple[pd.DataFrame, list[str]]:
    """Columns :data:`COLUMNS` (without ``lm_eval_biased_answer`` and
    ``chosen_continuation``) for BBQ samples of an Inspect log, from the letter the
    ``choice()`` scorer read (``answer_column``: A, B, C = the sample's choices, which
    inspect_evals lists as ans0, ans1, ans2) and the target letter (the label).

    Returns the frame with the new columns and notes. A letter outside the choices, or a
    sample without one (no answer found), is ``unmatched``: counted, never guessed.

    Raises
    ------
    ImportFormatError
        A sample whose answer_info does not map ans0..ans2 to [text, group] (names the
        log, the sample id and the field).
    """
    out = frame.copy()
    cols: dict[str, list[Any]] = {c: [] for c in (C.STEREOTYPED_OPTION, C.UNKNOWN_OPTION,
                                                  C.PREDICTED_OPTION, C.ANSWER_TYPE,
                                                  C.CORRECT, C.BIASED_ANSWER)}
    unmatched = 0
    for r in frame.to_dict(orient="records"):
        doc = {"answer_info": _json(r["answer_info"]),
               "additional_metadata": _json(r["additional_metadata"]),
               "question_polarity": r["question_polarity"]}
        where = f"{r.get('log', '?')}, sample {r.get('id', '?')}"
        info = doc["answer_info"]
        if not isinstance(info, dict) or any(
                not isinstance(info.get(k), list) or len(info[k]) < 2 for k in B.OPTIONS):
            raise ImportFormatError(f"{where}: field 'metadata.answer_info' must map ans0, "
                                    "ans1, ans2 to [text, group] (inspect_evals' BBQ).")
        letter = str(r.get(answer_column) or "").strip().upper()
        option = f"ans{ord(letter) - ord('A')}" if len(letter) == 1 and letter in "ABC" \
            else None
        unmatched += option is None
        target = B.stereotyped_option(doc)
        unknown = B.unknown_option(doc)
        answer_type = B.classify(option, target, unknown)
        gold = str(r.get("target") or "").strip().upper()
        label = f"ans{ord(gold) - ord('A')}" if len(gold) == 1 and gold in "ABC" else None
        biased = None if target == B.AMBIGUOUS else B.biased_answer(
            answer_type, str(doc["question_polarity"]))
        for col, value in zip(cols, (target, unknown or "", option or B.UNMATCHED,
                                     answer_type, int(option is not None and option == label),
                                     biased), strict=True):
            cols[col].append(value)
    for col, values in cols.items():
        out[col] = values
    out[C.BIASED_ANSWER] = out[C.BIASED_ANSWER].astype("Int64")
    notes = ["BBQ samples (inspect_evals' bbq): the letter the choice() scorer read is the "
             "chosen option (A, B, C = ans0, ans1, ans2); answer_type, correct and "
             "biased_answer as the BBQ importer defines them; outcome biased_answer; bias "
             "scores in extras['bias_scores']."]
    if unmatched:
        notes.append(f"{unmatched:,} sample(s) without a readable answer letter: answer_type "
                     "'unmatched', biased_answer empty (not guessed).")
    return out, notes
