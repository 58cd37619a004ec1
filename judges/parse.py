"""Parsing a judge's reply into a structured result.

The parser reads only the reply, never the prompt, so nothing inside the texts under
judgement can change how a reply is parsed. Rules (``docs/judges.md``):

1. An empty reply, a refusal (reported by the provider) or a content-filter stop is
   unscored with that reason.
2. Every JSON object in the reply is found, whether the reply is the bare object (as
   with structured output), sits in a code fence, or is embedded in prose. Objects
   nested inside another object or inside a string are not counted separately.
3. The objects holding the required key are the candidates. None: unscored ("no JSON
   object" / "the JSON object has no 'score'"). Several that disagree: unscored
   ("ambiguous"). Otherwise the (last) candidate is used.
4. The score must be a whole number among the allowed scores (``4``, ``4.0`` and
   ``"4"`` are accepted; ``4.5``, ``7``, ``"high"`` and ``true`` are not).

An unparseable reply is never turned into a number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judges.errors import ReplyParseError
from judges.request import Reply

__all__ = [
    "Judgement", "MAX_REPLY_CHARS", "extract_json_reply", "find_json_objects",
    "parse_judgement", "score_schema",
]


#: Replies longer than this are truncated before the JSON search (a judge reply is short).
MAX_REPLY_CHARS = 200_000
_DECODER = json.JSONDecoder()


def find_json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order of appearance.

    Scans for ``{`` and decodes from there; after a successful decode the scan resumes
    after the object, so objects nested in another object (or in its strings) are not
    returned separately.
    """
    text = text[:MAX_REPLY_CHARS]
    found: list[dict[str, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = text.find("{", end)
    return found


def _check_reply(reply: Reply | str | None) -> str:
    if isinstance(reply, Reply):
        if reply.refusal:
            raise ReplyParseError(f"refusal: {_shorten(reply.refusal)}")
        if reply.finish_reason in ("refusal", "content_filter"):
            detail = f": {_shorten(reply.text)}" if reply.text else ""
            raise ReplyParseError(f"{reply.finish_reason.replace('_', ' ')}{detail}")
        text = reply.text
    else:
        text = reply
    if text is None or not str(text).strip():
        if isinstance(reply, Reply) and reply.finish_reason == "length":
            raise ReplyParseError(
                f"empty reply: cut off at the token limit ({reply.output_tokens:,} output "
                "tokens spent, e.g. on reasoning); raise max tokens")
        raise ReplyParseError("empty reply")
    return str(text)


def extract_json_reply(reply: Reply | str | None, *, required: str) -> dict[str, Any]:
    """The JSON object of a reply that holds the key ``required``.

    Raises
    ------
    ReplyParseError
        Empty reply, refusal, no JSON object, no object with ``required``, or several
        candidate objects whose ``required`` values differ. The message is the reason.
    """
    text = _check_reply(reply)
    objects = find_json_objects(text)
    candidates = [o for o in objects if required in o]
    if not candidates:
        cut = isinstance(reply, Reply) and reply.finish_reason == "length"
        suffix = " (the reply was cut off at the token limit)" if cut else ""
        if objects:
            raise ReplyParseError(f"the JSON object has no {required!r}{suffix}")
        raise ReplyParseError(f"no JSON object in the reply{suffix}")
    values = {json.dumps(c[required], sort_keys=True) for c in candidates}
    if len(values) > 1:
        raise ReplyParseError(f"ambiguous reply: {len(candidates)} JSON objects with different "
                              f"{required!r} values ({', '.join(sorted(values))})")
    return candidates[-1]


@dataclass(frozen=True)
class Judgement:
    """A parsed judge reply: ``score`` and ``explanation``, or ``reason`` it is unscored."""

    score: int | None
    explanation: str
    reason: str | None

    @property
    def scored(self) -> bool:
        """Whether a valid score was found."""
        return self.score is not None


def _as_score(value: Any, allowed: Sequence[int]) -> int:
    if isinstance(value, bool):  # as the reply wrote it (JSON true, not Python True)
        raise ReplyParseError(f"score {json.dumps(value)} is not a whole number")
    number: float
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        number = float(value.strip())
    else:
        raise ReplyParseError(f"score {_shorten(json.dumps(value))} is not a whole number")
    if not number.is_integer():
        raise ReplyParseError(f"score {value!r} is not a whole number")
    if int(number) not in allowed:
        raise ReplyParseError(f"score {int(number)} is outside {min(allowed)}-{max(allowed)}")
    return int(number)


def parse_judgement(reply: Reply | str | None, *,
                    allowed: Sequence[int] = (1, 2, 3, 4, 5)) -> Judgement:
    """Parse a judge reply of the form ``{"explanation": str, "score": int}``.

    Returns
    -------
    Judgement
        ``score`` (an allowed int) and ``explanation`` (``""`` if the object has none);
        or ``score=None`` with ``reason`` saying why the reply is unscored.
    """
    try:
        obj = extract_json_reply(reply, required="score")
        score = _as_score(obj["score"], allowed)
    except ReplyParseError as exc:
        return Judgement(None, "", str(exc))
    explanation = obj.get("explanation", "")
    if not isinstance(explanation, str):
        explanation = json.dumps(explanation, ensure_ascii=False)
    return Judgement(score, explanation.strip(), None)


def _shorten(text: str | None, limit: int = 120) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def score_schema(allowed: Sequence[int] = (1, 2, 3, 4, 5)) -> dict[str, Any]:
    """JSON schema of a judge reply, for the providers' structured-output features."""
    return {
        "type": "object",
        "properties": {
            "explanation": {"type": "string"},
            "score": {"type": "integer", "enum": list(allowed)},
        },
        "required": ["explanation", "score"],
        "additionalProperties": False,
    }
