"""The generic request and reply types shared by providers, cache and runner.

A :class:`ChatRequest` is everything that decides an LLM's output (messages and
output-affecting parameters) plus extra cache-key parts (such as a rubric id and
version) and a free ``tag`` for the caller's bookkeeping. A :class:`Reply` is what came
back, reduced to what every provider has: the text, the token usage and why it stopped.
Nothing here knows about rubrics or four-stage files, so the same machinery serves
judges, answer generation and categorisation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, NamedTuple

__all__ = [
    "ChatRequest", "KNOWN_PARAMS", "Reply", "Result", "Role", "STORED_UNUSABLE_CHARS", "Status",
    "TokenLogprob", "clip_text", "safe_text",
]


Role = Literal["system", "user", "assistant"]

#: Parameters the runner passes to providers; each provider sends the ones it supports.
#: ``temperature`` (float or None = provider default), ``max_tokens`` (int),
#: ``json_schema`` (a JSON schema dict for structured output, or None), ``seed`` (int),
#: ``reasoning_effort`` (``minimal``/``low``/``medium``/``high`` for reasoning models),
#: ``logprobs`` (``True``: ask for token log-probabilities; ``None``: do not ask).
KNOWN_PARAMS: frozenset[str] = frozenset({"temperature", "max_tokens", "json_schema", "seed",
                                          "reasoning_effort", "logprobs"})


#: Characters kept of a reply that could not be used (cache, judged file): issue 26.
STORED_UNUSABLE_CHARS = 4096


def clip_text(text: str, limit: int | None = None) -> str:
    """``text`` cut to ``limit`` characters (default :data:`STORED_UNUSABLE_CHARS`), with
    a note of how many were left out."""
    limit = STORED_UNUSABLE_CHARS if limit is None else limit
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit:,} more characters not kept]"


def safe_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a valid surrogate pair becomes
    its character), so it can be stored in SQLite and written to any UTF-8 file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make.

    Parameters
    ----------
    messages
        ``(role, content)`` pairs in order; a ``system`` message, if any, comes first.
    params
        Output-affecting parameters (see :data:`KNOWN_PARAMS`). They are part of the
        cache key; timeouts and retry counts are not parameters.
    key_parts
        Extra strings that belong in the cache key (e.g. ``{"rubric": "fourstage-ics@2.0"}``).
    tag
        Anything the caller wants back with the result (e.g. ``(row, metric)``); not
        part of the cache key.
    """

    messages: tuple[tuple[Role, str], ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    key_parts: Mapping[str, str] = field(default_factory=dict)
    tag: Any = None

    def __post_init__(self) -> None:
        unknown = set(self.params) - KNOWN_PARAMS
        if unknown:
            raise ValueError(f"Unknown request parameter(s): {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(sorted(KNOWN_PARAMS))}.")
        if not self.messages:
            raise ValueError("A chat request needs at least one message.")

    def message_dicts(self) -> list[dict[str, str]]:
        """The messages as ``{"role": ..., "content": ...}`` dicts."""
        return [{"role": r, "content": c} for r, c in self.messages]


class TokenLogprob(NamedTuple):
    """The log-probabilities at one reply token (kept for tokens that hold a digit).

    ``offset`` and ``nbytes`` place the token in the UTF-8 bytes of the reply text;
    ``logprob`` is the chosen token's, ``top`` the ``(token, logprob)`` alternatives the
    server listed at that position (``top_logprobs``).
    """

    offset: int
    nbytes: int
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


def _token_logprobs(entries: Any) -> tuple[TokenLogprob, ...]:
    """``entries`` (tuples, or lists from the cache's JSON) as token log-probabilities."""
    return tuple(TokenLogprob(int(o), int(n), safe_text(str(t)), float(lp),
                              tuple((safe_text(str(a)), float(b)) for a, b in top))
                 for o, n, t, lp, top in entries)


@dataclass(frozen=True)
class Reply:
    """A provider's reply, normalised.

    Attributes
    ----------
    text
        The reply text (``None`` when the server sent no text).
    input_tokens, output_tokens
        Usage as reported by the server (0 when it reported none).
    finish_reason
        Why generation stopped, normalised to ``stop``, ``length``, ``refusal``,
        ``content_filter`` or the provider's own word.
    refusal
        The refusal message when the provider reports one separately (OpenAI).
    model
        The model name the server reported (the snapshot, e.g. ``gpt-4o-mini-2024-07-18``).
    billed_share
        Share of the price table's rate billed for this reply: 1 for a live call,
        :data:`judges.batch.BATCH_DISCOUNT` for a reply that came from a provider batch
        (kept in the cache, so a cached batch reply keeps its batch price).

    Text fields holding lone surrogates or other code points UTF-8 cannot encode (a
    server may send ``"\\ud800"`` in JSON) are stored with U+FFFD in their place, so a
    reply can always be cached and written (:func:`safe_text`).
    """

    text: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None
    refusal: str | None = None
    model: str | None = None
    billed_share: float = 1.0
    logprobs: tuple[TokenLogprob, ...] | None = None
    logprobs_note: str | None = None

    def __post_init__(self) -> None:
        if self.logprobs is not None:
            object.__setattr__(self, "logprobs", _token_logprobs(self.logprobs))
        for name in ("text", "finish_reason", "refusal", "model", "logprobs_note"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                value = str(value)
            if value is not None:
                object.__setattr__(self, name, safe_text(value))

    def clipped(self, limit: int | None = None) -> Reply:
        """This reply with ``text`` and ``refusal`` cut by :func:`clip_text` (what the cache
        keeps of a reply its caller cannot use, which is asked again anyway)."""
        return replace(self, text=None if self.text is None else clip_text(self.text, limit),
                       refusal=None if self.refusal is None else clip_text(self.refusal, limit))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (what the cache stores)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reply:
        """Inverse of :meth:`to_dict` (unknown keys are ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


Status = Literal["ok", "error", "cancelled"]


@dataclass(frozen=True)
class Result:
    """The outcome of one request.

    Attributes
    ----------
    request
        The request.
    status
        ``ok`` (a reply arrived, maybe from the cache), ``error`` (no reply: a permanent
        error, or retries exhausted) or ``cancelled`` (never sent).
    reply
        The reply when ``status == "ok"``.
    error
        What went wrong when ``status != "ok"`` (never contains an API key).
    cached
        The reply came from the cache: no request was made and nothing was paid now.
    attempts
        HTTP attempts made for this request in this run (0 for cache hits).
    cost_usd
        Cost of the reply's tokens at the price table's rate, ``None`` if the model has
        no price (or there is no reply).
    """

    request: ChatRequest
    status: Status
    reply: Reply | None = None
    error: str | None = None
    cached: bool = False
    attempts: int = 0
    cost_usd: float | None = None
