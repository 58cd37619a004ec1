"""Probability-weighted judge scores from token log-probabilities (the G-Eval idea).

A judge asked for ``{"explanation": ..., "score": N}`` writes one score token, but the
model's distribution at that token says how sure it was: a reply ``4`` written with
P(4) = 0.55, P(5) = 0.40, P(3) = 0.05 is a different verdict from a ``4`` with P(4) =
0.99. Liu et al. (2023), *G-Eval: NLG Evaluation using GPT-4 with Better Human
Alignment*, weight the scores by those probabilities::

    expected = sum_k k * p_k / sum_k p_k        (k = 1..5)

where ``p_k`` is the probability of the tokens that write score ``k`` at the position of
the score token. Here (``docs/judges.md``, "Probability-weighted scores"):

1. the score is located in the reply text: the last ``"score": N`` of the JSON the parser
   reads (:func:`judges.parse.parse_judgement`), N being the parsed score;
2. the token holding the score's digit is found by its UTF-8 byte offset (tokens may
   carry more than the digit: ``' 4'``, ``':4'``, ``'4}'``);
3. its alternatives (``top_logprobs``, the chosen token added when missing) that write a
   score are kept: the token with white space removed is ``1``-``5``, or the chosen
   token's other characters around another digit (``':5'`` beside ``':4'``); tokens
   writing the same score (``'4'`` and ``' 4'``) add up;
4. below :data:`MIN_MASS` (0.5) of probability on the scores, or without any of the
   above, there is no expected score (``None`` with the reason), never a guess.

Providers keep on the :class:`~judges.request.Reply` only the tokens that hold a digit
(:func:`read_openai_logprobs`), so the cache stays small.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judges.request import Reply, TokenLogprob

__all__ = [
    "ExpectedScore", "LOW_MASS", "MIN_MASS", "MISALIGNED", "NOT_WRITTEN", "NO_LOGPROBS",
    "NO_TOKEN", "TOP_LOGPROBS", "expected_score", "expected_warnings", "read_openai_logprobs",
    "score_of_token", "score_probabilities",
]


#: ``top_logprobs`` asked for (the OpenAI API's maximum).
TOP_LOGPROBS = 20
#: Below this share of probability on the scores, there is no expected score.
MIN_MASS = 0.5
#: Reasons a scored judgment has no expected score (short, so warnings can count them).
NO_LOGPROBS = "no log-probabilities in the reply (the server did not return them)"
NOT_WRITTEN = "the score is not written as a JSON number in the reply"
NO_TOKEN = "no log-probabilities for the score's token"
MISALIGNED = "the log-probabilities do not line up with the reply text"
LOW_MASS = f"the scores hold under {MIN_MASS:.0%} of the probability at the score's token"

_SCORE = re.compile(r'"score"\s*:\s*"?\s*(\d+)(?:\.0+)?\b')
_DIGIT = re.compile(r"[0-9]")


@dataclass(frozen=True)
class ExpectedScore:
    """The probability-weighted score of one reply.

    Attributes
    ----------
    value
        ``sum k p_k`` over the renormalised probabilities, or ``None``.
    probabilities
        ``{score: probability}`` renormalised over the scores (empty without a value).
    mass
        Probability on the scores before renormalising (0 when not found).
    reason
        Why ``value`` is ``None`` (one of this module's reason constants, or the
        provider's note), else ``None``.
    """

    value: float | None
    probabilities: Mapping[int, float] = field(default_factory=dict)
    mass: float = 0.0
    reason: str | None = None


def _entries(items: Any) -> Iterable[tuple[str, bytes | None, float, list[tuple[str, float]]]]:
    """``(token, its bytes or None, logprob, top)`` of an OpenAI ``logprobs`` block."""
    content = items.get("content")
    if isinstance(content, list):  # Chat Completions: {"content": [{token, logprob, ...}]}
        for item in content:
            if not isinstance(item, Mapping) or not isinstance(item.get("token"), str):
                continue
            raw = item.get("bytes")
            try:
                data = bytes(raw) if isinstance(raw, list) else None
            except (TypeError, ValueError):
                data = None
            top = [(t["token"], t["logprob"]) for t in item.get("top_logprobs") or []
                   if isinstance(t, Mapping) and isinstance(t.get("token"), str)
                   and isinstance(t.get("logprob"), int | float)]
            yield item["token"], data, _number(item.get("logprob")), top
    elif isinstance(items.get("tokens"), list):  # legacy Completions shape (llama-cpp-python)
        logps = items.get("token_logprobs") or []
        tops = items.get("top_logprobs") or []
        for i, token in enumerate(items["tokens"]):
            if not isinstance(token, str):
                continue
            alternatives = tops[i] if i < len(tops) and isinstance(tops[i], Mapping) else {}
            yield (token, None, _number(logps[i] if i < len(logps) else None),
                   [(t, v) for t, v in alternatives.items() if isinstance(v, int | float)])


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else -math.inf


def read_openai_logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    """The digit-holding tokens of a Chat Completions choice's ``logprobs`` block.

    Reads ``choice["logprobs"]["content"][i]`` (``token``, ``logprob``, ``bytes``,
    ``top_logprobs[j].token`` / ``.logprob``), and the legacy ``tokens`` /
    ``token_logprobs`` / ``top_logprobs`` shape some compatible servers return. Returns
    ``None`` when the choice has no such block (not asked for, or not supported).
    """
    block = choice.get("logprobs") if isinstance(choice, Mapping) else None
    if not isinstance(block, Mapping) or not (
            isinstance(block.get("content"), list) or isinstance(block.get("tokens"), list)):
        return None
    kept: list[TokenLogprob] = []
    offset = 0
    for token, data, logprob, top in _entries(block):
        data = data if data is not None else token.encode("utf-8", "surrogatepass")
        size = len(data)
        if _DIGIT.search(data.decode("utf-8", "ignore")):  # what the token writes
            kept.append(TokenLogprob(offset, size, token, logprob,
                                     tuple((str(t), float(v)) for t, v in top)))
        offset += size
    return tuple(kept)


def _core(text: str) -> str:
    return "".join(text.split())


def score_of_token(token: str, allowed: Sequence[int], prefix: str = "",
                   suffix: str = "") -> int | None:
    """The score ``token`` writes: white space removed it is a score, or it is
    ``prefix + score + suffix`` (the chosen token's characters around its digit)."""
    core, pre, suf = _core(token), _core(prefix), _core(suffix)
    for candidate in (core, core[len(pre):len(core) - len(suf)] if (
            (pre or suf) and core.startswith(pre) and core.endswith(suf)
            and len(core) > len(pre) + len(suf)) else None):
        if candidate is not None and candidate.isdigit() and int(candidate) in allowed:
            return int(candidate)
    return None


def score_probabilities(chosen: str, chosen_logprob: float,
                        top: Sequence[tuple[str, float]], *, digit_at: int | None = None,
                        allowed: Sequence[int] = (1, 2, 3, 4, 5)) -> tuple[dict[int, float], float]:
    """Probability of each score at one token position, renormalised, and the mass before.

    Parameters
    ----------
    chosen, chosen_logprob
        The token the reply has there and its log-probability (counted when ``top``
        does not list it).
    top
        ``(token, logprob)`` alternatives.
    digit_at
        Character index of the score's digit in ``chosen`` (default: its first digit);
        the characters around it are the ``prefix`` / ``suffix`` of
        :func:`score_of_token`.

    Returns
    -------
    (dict, float)
        ``{score: p}`` summing to 1 (empty when no token writes a score) and the
        probability on the scores before renormalising.
    """
    if digit_at is None:
        found = _DIGIT.search(chosen)
        digit_at = found.start() if found else 0
    prefix, suffix = chosen[:digit_at], chosen[digit_at + 1:]
    candidates = dict(top)
    candidates.setdefault(chosen, chosen_logprob)
    p: dict[int, float] = {}
    for token, logprob in candidates.items():
        score = score_of_token(token, allowed, prefix, suffix)
        if score is not None and math.isfinite(logprob):
            p[score] = p.get(score, 0.0) + math.exp(min(logprob, 0.0))
    mass = sum(p.values())
    if mass <= 0:
        return {}, 0.0
    return {k: p[k] / mass for k in sorted(p)}, min(mass, 1.0)


def expected_score(reply: Reply, score: int | None = None, *,
                   allowed: Sequence[int] = (1, 2, 3, 4, 5),
                   min_mass: float = MIN_MASS) -> ExpectedScore:
    """The probability-weighted score of a judge reply (see the module docstring).

    Parameters
    ----------
    reply
        A reply with :attr:`~judges.request.Reply.logprobs`.
    score
        The parsed score (parsed here when not given).
    allowed
        The scores.
    min_mass
        Least probability the scores must hold at the score's token.

    Returns
    -------
    ExpectedScore
        ``value`` or ``None`` with ``reason``.
    """
    if reply.logprobs is None:
        return ExpectedScore(None, reason=reply.logprobs_note or NO_LOGPROBS)
    text = reply.text or ""
    if score is None:
        from judges.parse import parse_judgement

        score = parse_judgement(reply, allowed=allowed).score
        if score is None:
            return ExpectedScore(None, reason="the reply has no score")
    matches = [m for m in _SCORE.finditer(text) if int(m.group(1)) == score]
    if not matches or len(matches[-1].group(1)) != 1:
        return ExpectedScore(None, reason=NOT_WRITTEN)
    at = len(text[:matches[-1].start(1)].encode("utf-8", "surrogatepass"))
    entry = next((e for e in reply.logprobs if e.offset <= at < e.offset + e.nbytes), None)
    if entry is None:
        return ExpectedScore(None, reason=NO_TOKEN)
    raw = entry.token.encode("utf-8", "surrogatepass")
    if len(raw) == entry.nbytes:  # the token's text is its bytes: find the digit exactly
        if raw[at - entry.offset:at - entry.offset + 1] != str(score).encode():
            return ExpectedScore(None, reason=MISALIGNED)
        digit_at = len(raw[:at - entry.offset].decode("utf-8", "ignore"))
    elif str(score) in entry.token:  # a token shown differently from its bytes
        digit_at = entry.token.index(str(score))
    else:
        return ExpectedScore(None, reason=MISALIGNED)
    p, mass = score_probabilities(entry.token, entry.logprob, entry.top, digit_at=digit_at,
                                  allowed=allowed)
    if mass < min_mass:
        return ExpectedScore(None, p, mass, LOW_MASS)
    return ExpectedScore(sum(k * v for k, v in p.items()), p, mass)


def expected_warnings(outcomes: Iterable[Any]) -> list[str]:
    """One sentence on the scored judgments without an expected score, or nothing.

    ``outcomes`` are :class:`judges.judge.MetricOutcome`\\ s of a run that asked for
    log-probabilities (``score``, ``expected``, ``expected_note``).
    """
    scored = [o for o in outcomes if o.score is not None]
    missing = Counter(o.expected_note or NO_LOGPROBS for o in scored if o.expected is None)
    if not missing:
        return []
    why = "; ".join(f"{n:,}: {reason}" for reason, n in missing.most_common())
    return [f"log-probabilities: {sum(missing.values()):,} of {len(scored):,} scored "
            f"judgments have no expected score ({why}); their <metric>_expected is empty and "
            "the sampled score stands."]
