"""The four-stage LLM judge (``docs/methods.md`` section 8).

One judge call per (row, metric): stage 1 and 4 rows get ICS, stage 2 rows TCS, PCS
and ETCS, stage 3 rows SBAS. :func:`judge_requests` builds the calls from the rubrics,
:func:`judge_frame` runs them through :mod:`judges.runner` (cache, concurrency, retries,
cost) and :func:`assemble_judged` turns the results into the judged file:

the input columns, then ``ics``, ``tcs``, ``pcs``, ``etcs``, ``sbas`` (1-5, empty where
not applicable or unscored), ``<metric>_explanation``, ``similarity`` (empty: embedding
scorer only), ``unscored_reason`` (``"metric: reason | metric: reason"``),
``judge_input_tokens``, ``judge_output_tokens``, ``judge_cost_usd`` (the judgments'
tokens and cost, cached ones included; empty cost if the model has no price),
``judge_cached_calls`` (calls of the row served from the cache in this run) and
``judge`` (``provider:model [rubric@version, ...]``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from judges import columns as C
from judges.cache import ReplyCache
from judges.cost import PriceTable, estimate_message_tokens
from judges.parse import parse_judgement, score_schema
from judges.prompts import build_messages
from judges.providers import ChatProvider
from judges.request import ChatRequest, Result
from judges.rubric import Rubric, load_rubrics
from judges.runner import RunConfig, RunStats, request_key, run_stream

#: Separator between the per-metric reasons in ``unscored_reason``.
REASON_SEPARATOR = " | "


@dataclass(frozen=True)
class JudgeConfig:
    """Output-affecting judge settings (all enter the cache key except the estimate's).

    Attributes
    ----------
    temperature
        Sampling temperature, 0 by default; ``None`` sends none (provider default).
        The Anthropic provider never sends one (its API rejects it).
    max_tokens
        Reply length limit.
    structured_output
        Ask for the JSON reply through the provider's structured-output feature
        (OpenAI ``response_format``, Anthropic ``output_config``). Turn off for servers
        that do not support it; the parser reads JSON in prose either way.
    expected_output_tokens
        Reply length assumed by the estimate (not sent).
    """

    temperature: float | None = 0.0
    max_tokens: int = 400
    structured_output: bool = True
    expected_output_tokens: int = 150

    def __post_init__(self) -> None:
        from judges.validation import check_generation

        check_generation("JudgeConfig", temperature=self.temperature, max_tokens=self.max_tokens)

    def params(self) -> dict[str, Any]:
        """The request parameters."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "json_schema": score_schema() if self.structured_output else None}


def _cell_text(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value


def judge_requests(frame: pd.DataFrame, *, rubrics: Mapping[str, Rubric] | None = None,
                   config: JudgeConfig | None = None) -> Iterator[ChatRequest]:
    """The judge calls of a validated four-stage table, lazily.

    Yields
    ------
    ChatRequest
        One per (row, metric), in row order; ``tag`` is ``(row position, metric)`` and
        ``key_parts`` holds ``{"rubric": "id@version"}``.
    """
    rubrics = rubrics or load_rubrics()
    params = (config or JudgeConfig()).params()
    text_columns = sorted({t.field for r in rubrics.values() for t in r.texts} & set(frame.columns))
    arrays = {c: frame[c].to_numpy(dtype=object) for c in text_columns}
    stages = frame[C.STAGE].to_numpy()
    for pos in range(len(frame)):
        row = {c: _cell_text(a[pos]) for c, a in arrays.items()}
        for metric in C.STAGE_METRICS[int(stages[pos])]:
            rubric = rubrics[metric]
            yield ChatRequest(messages=build_messages(rubric, row), params=params,
                              key_parts={"rubric": rubric.key}, tag=(pos, metric))


def n_judgments(frame: pd.DataFrame) -> int:
    """Number of (row, metric) judge calls a validated table needs."""
    counts = frame[C.STAGE].value_counts()
    return int(sum(int(n) * len(C.STAGE_METRICS[int(s)]) for s, n in counts.items()))


@dataclass(frozen=True)
class MetricOutcome:
    """One (row, metric) judgment, interpreted."""

    position: int
    metric: str
    score: int | None
    explanation: str
    reason: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cached: bool = False


def interpret(result: Result) -> MetricOutcome:
    """A runner result as a judgment: parsed score, or the reason it is unscored."""
    position, metric = result.request.tag
    if result.status == "ok" and result.reply is not None:
        judgement = parse_judgement(result.reply)
        return MetricOutcome(position, metric, judgement.score, judgement.explanation,
                             judgement.reason, result.reply.input_tokens,
                             result.reply.output_tokens, result.cost_usd, result.cached)
    if result.status == "cancelled":
        reason = "not judged: run cancelled"
    else:
        reason = f"request failed: {result.error}"
    return MetricOutcome(position, metric, None, "", reason)


def _clear_outputs(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in C.OUTPUT_COLUMNS if c in frame.columns])


def empty_outputs(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every output column added empty (existing ones replaced)."""
    out = _clear_outputs(frame).reset_index(drop=True)
    n = len(out)
    new: dict[str, Any] = {}
    for m in C.METRICS:
        new[m] = pd.array([pd.NA] * n, dtype="Int64")
    for m in C.METRICS:
        new[C.explanation_column(m)] = pd.Series([""] * n, dtype=object)
    new[C.SIMILARITY] = np.full(n, np.nan)
    new[C.UNSCORED_REASON] = pd.Series([""] * n, dtype=object)
    new[C.JUDGE_INPUT_TOKENS] = np.zeros(n, dtype=np.int64)
    new[C.JUDGE_OUTPUT_TOKENS] = np.zeros(n, dtype=np.int64)
    new[C.JUDGE_COST_USD] = np.full(n, np.nan)
    new[C.JUDGE_CACHED] = np.zeros(n, dtype=np.int64)
    new[C.JUDGE] = pd.Series([""] * n, dtype=object)
    return pd.concat([out, pd.DataFrame(new)], axis=1)


def assemble_judged(frame: pd.DataFrame, outcomes: Iterable[MetricOutcome], *,
                    judge_label: str, rubrics: Mapping[str, Rubric] | None = None
                    ) -> pd.DataFrame:
    """The judged file: ``frame`` plus the output columns (see the module docstring).

    Rows are in input order (index reset). A row's cost is empty when any of its
    judgments has no price; tokens always add up.
    """
    rubrics = rubrics or load_rubrics()
    out = empty_outputs(frame)
    n = len(out)
    scores = {m: np.full(n, -1, dtype=np.int64) for m in C.METRICS}
    explanations = {m: [""] * n for m in C.METRICS}
    reasons: list[list[str]] = [[] for _ in range(n)]
    tokens_in = np.zeros(n, dtype=np.int64)
    tokens_out = np.zeros(n, dtype=np.int64)
    cost = np.zeros(n)
    cached = np.zeros(n, dtype=np.int64)
    for o in outcomes:
        p = o.position
        if o.score is not None:
            scores[o.metric][p] = o.score
        else:
            reasons[p].append(f"{o.metric}: {o.reason}")
        explanations[o.metric][p] = o.explanation
        tokens_in[p] += o.input_tokens
        tokens_out[p] += o.output_tokens
        cost[p] = np.nan if o.cost_usd is None else cost[p] + o.cost_usd
        cached[p] += int(o.cached)
    for m in C.METRICS:
        out[m] = pd.array(np.where(scores[m] > 0, scores[m], 0), dtype="Int64")
        out.loc[scores[m] <= 0, m] = pd.NA
        out[C.explanation_column(m)] = explanations[m]
    out[C.UNSCORED_REASON] = [REASON_SEPARATOR.join(r) for r in reasons]
    out[C.JUDGE_INPUT_TOKENS] = tokens_in
    out[C.JUDGE_OUTPUT_TOKENS] = tokens_out
    out[C.JUDGE_COST_USD] = cost
    stages = out[C.STAGE].to_numpy()
    labels = {s: f"{judge_label} [{', '.join(rubrics[m].key for m in C.STAGE_METRICS[s])}]"
              for s in C.STAGES}
    out[C.JUDGE_CACHED] = cached
    out[C.JUDGE] = [labels[int(s)] for s in stages]
    return out


@dataclass
class JudgeProgress:
    """Live progress of a judge run (read it from another thread for a progress bar).

    Attributes
    ----------
    total, done
        Judgments planned and finished (scored, unscored, failed or cancelled).
    scored, unscored
        Finished judgments with and without a score (failures and cancellations are
        unscored too).
    cached
        Judgments served from the cache.
    input_tokens, output_tokens, cost_usd
        Spent in this run (cache hits excluded). ``cost_usd`` counts priced replies.
    unpriced
        Replies of this run whose model has no price (cost then incomplete).
    """

    total: int
    done: int = 0
    scored: int = 0
    unscored: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, outcome: MetricOutcome) -> None:
        """Count one finished judgment."""
        with self._lock:
            self.done += 1
            if outcome.score is None:
                self.unscored += 1
            else:
                self.scored += 1
            if outcome.cached:
                self.cached += 1
            elif outcome.input_tokens or outcome.output_tokens:
                self.input_tokens += outcome.input_tokens
                self.output_tokens += outcome.output_tokens
                if outcome.cost_usd is None:
                    self.unpriced += 1
                else:
                    self.cost_usd += outcome.cost_usd

    def snapshot(self) -> JudgeProgress:
        """A consistent copy."""
        with self._lock:
            return replace(self, _lock=threading.Lock())


@dataclass
class JudgeRun:
    """The result of :func:`judge_frame`: the judged table and how the run went."""

    judged: pd.DataFrame
    progress: JudgeProgress
    stats: RunStats
    cancelled: bool


async def judge_frame_async(
    frame: pd.DataFrame,
    provider: ChatProvider,
    *,
    rubrics: Mapping[str, Rubric] | None = None,
    config: JudgeConfig | None = None,
    run_config: RunConfig | None = None,
    cache: ReplyCache | None = None,
    prices: PriceTable | None = None,
    cancel: threading.Event | None = None,
    progress: JudgeProgress | None = None,
    stats: RunStats | None = None,
) -> JudgeRun:
    """Judge a validated four-stage table (see :func:`judge_frame`)."""
    rubrics = rubrics or load_rubrics()
    prices = prices if prices is not None else PriceTable.load()
    progress = progress if progress is not None else JudgeProgress(total=n_judgments(frame))
    stats = stats if stats is not None else RunStats()
    outcomes: list[MetricOutcome] = []
    try:
        async for result in run_stream(
                judge_requests(frame, rubrics=rubrics, config=config), provider, cache=cache,
                config=run_config, prices=prices, cancel=cancel, stats=stats):
            outcome = interpret(result)
            outcomes.append(outcome)
            progress.add(outcome)
    finally:
        await provider.aclose()
    judged = assemble_judged(frame, outcomes, judge_label=provider.label, rubrics=rubrics)
    return JudgeRun(judged, progress, stats, cancelled=bool(cancel and cancel.is_set()))


def judge_frame(frame: pd.DataFrame, provider: ChatProvider, **kwargs: Any) -> JudgeRun:
    """Judge a validated four-stage table with an LLM.

    Parameters
    ----------
    frame
        A table from :func:`judges.fourstage.load_fourstage` / ``validate_fourstage``.
    provider
        The judge (:func:`judges.providers.make_provider`).
    **kwargs
        ``rubrics``, ``config`` (:class:`JudgeConfig`), ``run_config``
        (:class:`~judges.runner.RunConfig`), ``cache`` (:class:`~judges.cache.ReplyCache`
        or ``None``), ``prices`` (:class:`~judges.cost.PriceTable`, default the bundled
        ``judges/prices.yaml``), ``cancel``
        (``threading.Event``), ``progress`` (:class:`JudgeProgress`), ``stats``.

    Returns
    -------
    JudgeRun
        ``judged`` has the columns listed in the module docstring.

    Raises
    ------
    ProviderConfigError
        SDK missing or API key needed and absent, at the first judgment that is not in
        the cache (a rerun served from the cache needs no key). Replies received before
        are cached.
    """
    return asyncio.run(judge_frame_async(frame, provider, **kwargs))


@dataclass(frozen=True)
class Estimate:
    """What a run will cost before it starts.

    Attributes
    ----------
    judgments
        (row, metric) judgments in the file.
    cached
        Judgments already in the cache (free, no request).
    calls
        Requests to make (``judgments - cached``).
    input_tokens, output_tokens
        Estimated tokens of those calls (prompt length / 4; an assumed reply length).
    cost_usd
        Estimated dollars, ``None`` if the model has no price.
    model, price_section
        Where the price was looked up.
    """

    judgments: int
    cached: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    model: str
    price_section: str

    def to_frame(self) -> pd.DataFrame:
        """Columns ``quantity`` and ``value`` (for display)."""
        cost = "no price for this model" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        return pd.DataFrame({
            "quantity": ["judgments", "already cached", "calls to make",
                         "input tokens (est.)", "output tokens (est.)", "cost (est.)"],
            "value": [f"{self.judgments:,}", f"{self.cached:,}", f"{self.calls:,}",
                      f"{self.input_tokens:,}", f"{self.output_tokens:,}", cost],
        })


def estimate_run(frame: pd.DataFrame, provider: ChatProvider, *,
                 rubrics: Mapping[str, Rubric] | None = None, config: JudgeConfig | None = None,
                 prices: PriceTable | None = None, cache: ReplyCache | None = None) -> Estimate:
    """Count calls, tokens and cost of judging ``frame`` without making any request."""
    config = config or JudgeConfig()
    requests = list(judge_requests(frame, rubrics=rubrics, config=config))
    hits: set[str] = set()
    keys = []
    if cache is not None:
        keys = [request_key(provider, r) for r in requests]
        hits = cache.contains(keys)
    to_call = [r for i, r in enumerate(requests) if not keys or keys[i] not in hits]
    input_tokens = sum(estimate_message_tokens(r.messages) for r in to_call)
    output_tokens = len(to_call) * min(config.expected_output_tokens, config.max_tokens)
    prices = prices or PriceTable.load()
    cost = prices.cost(provider.price_section, provider.model, input_tokens, output_tokens)
    return Estimate(len(requests), len(requests) - len(to_call), len(to_call), input_tokens,
                    output_tokens, cost, provider.model, provider.price_section)


def is_judged(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` already holds judge output (a ``judge`` column with values)."""
    return C.JUDGE in frame.columns and frame[C.JUDGE].fillna("").astype(str).str.len().gt(0).any()
