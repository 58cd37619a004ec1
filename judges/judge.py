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
``judge_cached_calls`` (calls of the row served from the cache in this run),
``judge`` (``provider:model [rubric@version, ...]``), ``<metric>_raw`` (the reply text
as received, kept also when it cannot be parsed), ``judge_params`` (the parameters
actually sent, JSON) and ``judge_model_snapshot`` (the model name(s) the API reported);
with ``JudgeConfig(logprobs=True)`` also ``<metric>_expected`` (the probability-weighted
score, :mod:`judges.logprobs`; NaN where unavailable).

With ``JudgeConfig(samples=K)`` each (row, metric) is asked K times, with
``both_orders=True`` stage-2 pairs also with the stories swapped; ``<metric>`` is then the
mean and ``<metric>_sd``, ``_n``, ``_scores`` (and ``_ab`` / ``_ba``) follow the metric
columns (:mod:`judges.samples`, :mod:`judges.position`, ``docs/judges.md`` section 5).

Rows whose stage text is empty (``validate_fourstage(..., allow_empty_texts=True)``)
are not sent: their judgments are unscored, ``no answer to judge (<column> is empty)``.
Cached replies that cannot be parsed are asked again unless
``JudgeConfig(reuse_unparsed=True)``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.judge_stats import columns as C
from judges.cache import ReplyCache
from judges.context import RunContext
from judges.cost import PriceTable, estimate_message_tokens
from judges.errors import JudgesError, PriceError
from judges.fourstage import empty_texts
from judges.logprobs import expected_score, expected_warnings
from judges.parse import parse_judgement, score_schema
from judges.prompts import build_messages
from judges.providers import REASONING_EFFORTS, ChatProvider
from judges.request import ChatRequest, Reply, Result, clip_text, safe_text
from judges.rubric import Rubric, load_rubrics
from judges.runner import STOPPED_PREFIX, RunStats, request_key, run_stream

__all__ = [
    "DEFAULT_MAX_TOKENS", "Estimate", "JudgeConfig", "JudgeProgress", "JudgeRun", "MAX_SAMPLES",
    "MetricOutcome", "REASONING_MAX_TOKENS", "REASON_SEPARATOR", "assemble_judged",
    "check_batch_cap", "empty_outputs", "estimate_run", "interpret", "is_judged", "judge_frame",
    "judge_frame_async", "judge_requests", "judge_stream", "n_judgments", "no_answer_outcomes",
    "run_warnings", "safe_frame", "split_tag", "swapped",
]


#: Separator between the per-metric reasons in ``unscored_reason``.
REASON_SEPARATOR = " | "
#: Most samples per judgment (``JudgeConfig.samples``).
MAX_SAMPLES = 100
#: Reply length limit of a judge call: ordinary models, and reasoning models (whose
#: hidden reasoning tokens count against the limit; 400 left 37 of 48 replies empty).
DEFAULT_MAX_TOKENS = 400
REASONING_MAX_TOKENS = 4000


@dataclass(frozen=True)
class JudgeConfig:
    """Output-affecting judge settings (all enter the cache key except the estimate's).

    Attributes
    ----------
    temperature
        Sampling temperature, 0 by default; ``None`` sends none (provider default).
        The Anthropic provider and OpenAI reasoning models do not take one: it is then
        not sent, with a warning (:meth:`ChatProvider.param_warnings`).
    max_tokens
        Reply length limit; ``None`` = :data:`DEFAULT_MAX_TOKENS`, or
        :data:`REASONING_MAX_TOKENS` for a reasoning model (room for reasoning plus the
        verdict).
    reasoning_effort
        ``minimal``, ``low``, ``medium`` or ``high`` for reasoning models; ``None`` sends
        none.
    reuse_unparsed
        Reuse cached replies that cannot be parsed (by default they are asked again).
    samples
        How many times each (row, metric) is asked (``--samples K``). Sample 1 is the
        request of a single-sample run (same cache key, so raising K reuses it); samples
        2..K add ``{"sample": i}`` to the cache key and, where the provider takes one,
        ``seed = i`` (OpenAI and compatible servers). The judged file then keeps the mean
        in ``<metric>`` and adds ``<metric>_sd``, ``_n`` and ``_scores``.
    both_orders
        Judge each stage-2 story pair also with the stories swapped (story_b shown first;
        cache key part ``{"order": "ba"}``). ``<metric>`` is then the order-averaged score
        and ``<metric>_ab`` / ``<metric>_ba`` the mean of each order
        (:func:`judges.position.position_bias`).
    structured_output
        Ask for the JSON reply through the provider's structured-output feature
        (OpenAI ``response_format``, Anthropic ``output_config``). Turn off for servers
        that do not support it; the parser reads JSON in prose either way.
    expected_output_tokens
        Reply length assumed by the estimate (not sent).
    logprobs
        Ask for token log-probabilities (``logprobs``, ``top_logprobs`` 20) and add the
        probability-weighted score ``<metric>_expected`` (:mod:`judges.logprobs`). In the
        cache key only when on. Providers that cannot (Anthropic, reasoning models) do not
        send it, with a warning.
    """

    temperature: float | None = 0.0
    max_tokens: int | None = None
    structured_output: bool = True
    expected_output_tokens: int = 150
    reasoning_effort: str | None = None
    reuse_unparsed: bool = False
    samples: int = 1
    both_orders: bool = False
    logprobs: bool = False

    def __post_init__(self) -> None:
        from judges.validation import check_generation

        check_generation("JudgeConfig", temperature=self.temperature, max_tokens=self.max_tokens)
        if (isinstance(self.samples, bool) or not isinstance(self.samples, (int, np.integer))
                or not 1 <= int(self.samples) <= MAX_SAMPLES):
            raise JudgesError(f"samples must be a whole number from 1 to {MAX_SAMPLES}, "
                              f"not {self.samples!r}.")
        object.__setattr__(self, "samples", int(self.samples))
        object.__setattr__(self, "both_orders", bool(self.both_orders))
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise JudgesError(f"reasoning effort must be one of {', '.join(REASONING_EFFORTS)}, "
                              f"not {self.reasoning_effort!r}.")

    def token_limit(self, provider: ChatProvider | None = None) -> int:
        """``max_tokens``, or the default for ``provider``'s model."""
        if self.max_tokens is not None:
            return self.max_tokens
        reasoning = provider is not None and provider.reasoning
        return REASONING_MAX_TOKENS if reasoning else DEFAULT_MAX_TOKENS

    def params(self, provider: ChatProvider | None = None) -> dict[str, Any]:
        """The request parameters (``max_tokens`` resolved for ``provider``'s model)."""
        return {"temperature": self.temperature, "max_tokens": self.token_limit(provider),
                "json_schema": score_schema() if self.structured_output else None,
                "reasoning_effort": self.reasoning_effort,
                "logprobs": True if self.logprobs else None}

    @property
    def repeated(self) -> bool:
        """Whether a judgment has several replies (samples or both orders)."""
        return self.samples > 1 or self.both_orders

    def orders(self, stage: int) -> tuple[str, ...]:
        """The orders a row of ``stage`` is judged in (``ab`` = as given, ``ba`` = swapped)."""
        if self.both_orders and int(stage) == 2:
            return (C.ORDER_AB, C.ORDER_BA)
        return (C.ORDER_AB,)

    def sent(self, provider: ChatProvider) -> str:
        """The parameters ``provider`` actually sends, as JSON (the schema as ``true``);
        with samples or both orders also ``samples``, the ``seeds`` of samples 2..K (where
        sent) and ``both_orders``."""
        params = provider.effective_params(self.params(provider))
        if "json_schema" in params:
            params["json_schema"] = True
        if self.samples > 1:
            params["samples"] = self.samples
            if "seed" in provider.accepted_params():
                params["seeds"] = list(range(1, self.samples))
        if self.both_orders:
            params["both_orders"] = True
        return json.dumps(params, sort_keys=True)

    def sampling_warnings(self, provider: ChatProvider) -> list[str]:
        """Why K samples may all come back the same (empty for one sample)."""
        if self.samples <= 1:
            return []
        sent = provider.effective_params(self.params(provider))
        seeded = "seed" in provider.accepted_params()
        if sent.get("temperature") == 0:
            return [f"{self.samples} samples at temperature 0 on {provider.label}: the "
                    "replies will likely be identical (SD 0) whatever the "
                    f"{'seed' if seeded else 'sample'}; set a temperature such as 0.7 or 1 "
                    "to measure the judge's own variation."]
        if not seeded and "temperature" not in sent:
            return [f"{self.samples} samples on {provider.label}, which takes no seed and is "
                    "sent no temperature: the samples vary only as much as the model's "
                    "default sampling does (they may be identical)."]
        return []

    def warnings(self, provider: ChatProvider) -> list[str]:
        """Parameters set but not sent (:meth:`ChatProvider.param_warnings`), then
        :meth:`sampling_warnings`."""
        return [*provider.param_warnings(self.params(provider)),
                *self.sampling_warnings(provider)]

    def reuse(self) -> Any:
        """The runner's ``reuse`` predicate: ``None`` (reuse all) or parseable replies only."""
        if self.reuse_unparsed:
            return None
        return lambda reply: parse_judgement(reply).scored


def _cell_text(value: Any) -> Any:
    if isinstance(value, str):
        return safe_text(value)  # a lone surrogate in the input cannot be sent or cached
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with lone surrogates in its text cells replaced by U+FFFD (a copy only when
    some cell needs it), so it can be written to CSV, Parquet or JSON Lines."""
    out = frame
    for col in frame.columns:
        if frame[col].dtype != object:
            continue
        values = frame[col].to_numpy(dtype=object)
        fixed = [safe_text(v) if isinstance(v, str) else v for v in values]
        if any(a is not b for a, b in zip(values, fixed, strict=True)):
            out = out.copy() if out is frame else out
            out[col] = fixed
    return out


def judge_requests(frame: pd.DataFrame, *, rubrics: Mapping[str, Rubric] | None = None,
                   config: JudgeConfig | None = None, provider: ChatProvider | None = None,
                   skip: Iterable[int] = ()) -> Iterator[ChatRequest]:
    """The judge calls of a validated four-stage table, lazily.

    ``provider`` resolves the default token limit for its model; rows at the positions in
    ``skip`` (empty texts, :func:`judges.fourstage.empty_texts`) are left out.

    Yields
    ------
    ChatRequest
        One per (row, metric, order, sample), in row order; ``key_parts`` holds
        ``{"rubric": "id@version"}``. The first sample in the as-given order is the
        single-sample request, tagged ``(row position, metric)``; the others are tagged
        ``(row position, metric, sample index, order)`` and add ``{"sample": "<i>"}``
        (and ``seed = i`` in ``params``) and/or ``{"order": "ba"}`` (``story_a`` and
        ``story_b`` swapped) to the key (:func:`split_tag` reads either tag).
    """
    rubrics = rubrics or load_rubrics()
    config = config or JudgeConfig()
    params = config.params(provider)
    skipped = set(skip)
    text_columns = sorted({t.field for r in rubrics.values() for t in r.texts} & set(frame.columns))
    arrays = {c: frame[c].to_numpy(dtype=object) for c in text_columns}
    stages = frame[C.STAGE].to_numpy()
    for pos in range(len(frame)):
        if pos in skipped:
            continue
        row = {c: _cell_text(a[pos]) for c, a in arrays.items()}
        for metric in C.STAGE_METRICS[int(stages[pos])]:
            rubric = rubrics[metric]
            for order in config.orders(int(stages[pos])):
                shown = swapped(row) if order == C.ORDER_BA else row
                messages = build_messages(rubric, shown)
                for sample in range(config.samples):
                    key_parts = {"rubric": rubric.key}
                    if order != C.ORDER_AB:
                        key_parts["order"] = order
                    if sample:
                        key_parts["sample"] = str(sample)
                    tag: tuple[Any, ...] = ((pos, metric) if sample == 0 and order == C.ORDER_AB
                                            else (pos, metric, sample, order))
                    yield ChatRequest(messages=messages,
                                      params={**params, "seed": sample} if sample else params,
                                      key_parts=key_parts, tag=tag)


def swapped(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with ``story_a`` and ``story_b`` exchanged: the rubric's ``STORY A`` block then
    shows the second story first (the swapped order of :attr:`JudgeConfig.both_orders`)."""
    out = dict(row)
    out[C.STORY_A], out[C.STORY_B] = row.get(C.STORY_B), row.get(C.STORY_A)
    return out


def split_tag(tag: tuple[Any, ...]) -> tuple[int, str, int, str]:
    """``(row position, metric, sample index, order)`` of a judge request's tag."""
    if len(tag) == 2:
        return int(tag[0]), str(tag[1]), 0, C.ORDER_AB
    return int(tag[0]), str(tag[1]), int(tag[2]), str(tag[3])


def n_judgments(frame: pd.DataFrame, config: JudgeConfig | None = None) -> int:
    """Number of judge calls a validated table needs: (row, metric) pairs times
    ``config.samples``, stage-2 ones twice with ``config.both_orders``."""
    config = config or JudgeConfig()
    counts = frame[C.STAGE].value_counts()
    return int(sum(int(n) * len(C.STAGE_METRICS[int(s)]) * len(config.orders(int(s)))
                   for s, n in counts.items()) * config.samples)


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
    raw: str = ""
    snapshot: str = ""
    sample: int = 0
    order: str = C.ORDER_AB
    expected: float | None = None  # probability-weighted score (--logprobs)
    expected_note: str | None = None  # why a scored judgment has none


def no_answer_outcomes(frame: pd.DataFrame, empty: Mapping[int, list[str]],
                       config: JudgeConfig | None = None) -> list[MetricOutcome]:
    """Unscored outcomes ("no answer to judge") of the rows with empty stage texts (one per
    sample and order)."""
    config = config or JudgeConfig()
    stages = frame[C.STAGE].to_numpy()
    return [MetricOutcome(pos, metric, None, "", f"{C.NO_ANSWER} ({', '.join(cols)} empty)",
                          sample=sample, order=order)
            for pos, cols in empty.items() for metric in C.STAGE_METRICS[int(stages[pos])]
            for order in config.orders(int(stages[pos])) for sample in range(config.samples)]


def _raw(reply: Reply) -> str:
    return reply.text if reply.text is not None else (reply.refusal or "")


def interpret(result: Result) -> MetricOutcome:
    """A runner result as a judgment: parsed score, or the reason it is unscored."""
    position, metric, sample, order = split_tag(result.request.tag)
    if result.status == "ok" and result.reply is not None:
        judgement = parse_judgement(result.reply)
        expected = None
        if result.request.params.get("logprobs") and judgement.score is not None:
            expected = expected_score(result.reply, judgement.score)
        raw = _raw(result.reply)
        return MetricOutcome(position, metric, judgement.score, judgement.explanation,
                             judgement.reason, result.reply.input_tokens,
                             result.reply.output_tokens, result.cost_usd, result.cached,
                             raw if judgement.score is not None else clip_text(raw),
                             result.reply.model or "", sample, order,
                             expected.value if expected else None,
                             expected.reason if expected else None)
    if result.status == "cancelled" and (result.error or "").startswith(STOPPED_PREFIX):
        reason = f"not judged: {result.error}"
    elif result.status == "cancelled":
        reason = "not judged: run cancelled"
    else:
        reason = f"request failed: {result.error}"
    return MetricOutcome(position, metric, None, "", reason, sample=sample, order=order)


def _clear_outputs(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in (*C.OUTPUT_COLUMNS, *C.SAMPLE_OUTPUT_COLUMNS,
                                           *C.EXPECTED_COLUMNS)
                               if c in frame.columns])


def empty_outputs(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every output column added empty (existing ones replaced); text cells
    holding lone surrogates get U+FFFD (:func:`safe_frame`), so the judged file can be
    written."""
    out = safe_frame(_clear_outputs(frame).reset_index(drop=True))
    n = len(out)
    texts = (*map(C.explanation_column, C.METRICS), *map(C.raw_column, C.METRICS),
             C.UNSCORED_REASON, C.JUDGE, C.JUDGE_PARAMS, C.JUDGE_MODEL_SNAPSHOT)
    counts = (C.JUDGE_INPUT_TOKENS, C.JUDGE_OUTPUT_TOKENS, C.JUDGE_CACHED)
    new: dict[str, Any] = {m: pd.array([pd.NA] * n, dtype="Int64") for m in C.METRICS}
    new.update({c: pd.Series([""] * n, dtype=object) for c in texts})
    new.update({c: np.full(n, np.nan) for c in (C.SIMILARITY, C.JUDGE_COST_USD)})
    new.update({c: np.zeros(n, dtype=np.int64) for c in counts})
    out = pd.concat([out, pd.DataFrame(new)], axis=1)
    return out[[*[c for c in out.columns if c not in C.OUTPUT_COLUMNS], *C.OUTPUT_COLUMNS]]


def assemble_judged(frame: pd.DataFrame, outcomes: Iterable[MetricOutcome], *,
                    judge_label: str, rubrics: Mapping[str, Rubric] | None = None,
                    params_sent: str = "", config: JudgeConfig | None = None,
                    logprobs: bool = False) -> pd.DataFrame:
    """The judged file: ``frame`` plus the output columns (see the module docstring).

    Rows are in input order (index reset). A row's cost is empty when any of its
    judgments has no price; tokens always add up (over samples and orders too).
    ``params_sent`` fills ``judge_params`` (:meth:`JudgeConfig.sent`).

    With ``config.samples > 1`` or ``config.both_orders`` (:attr:`JudgeConfig.repeated`),
    ``<metric>`` is the mean of the scored samples (float; the mean of the two orders'
    means for stage-2 metrics in both orders) and the sample columns follow the metric
    columns (:func:`judges.samples.sample_columns`): ``<metric>_sd``, ``<metric>_n``,
    ``<metric>_scores`` and, in both orders, ``<metric>_ab`` / ``<metric>_ba`` for TCS,
    PCS and ETCS. The explanation and raw reply are those of the first scored sample
    (as-given order first); an unscored sample of a scored judgment leaves its reason as
    ``metric: sample i: reason``. With ``logprobs`` (or ``config.logprobs``),
    ``<metric>_expected`` (float) is added at the end for every metric: the mean of the
    outcomes' expected scores (NaN where none has one).
    """
    from judges.samples import sample_columns

    rubrics = rubrics or load_rubrics()
    config = config or JudgeConfig()
    out = empty_outputs(frame)
    n = len(out)
    scores = {m: np.full(n, -1, dtype=np.int64) for m in C.METRICS}
    explanations = {m: [""] * n for m in C.METRICS}
    raws = {m: [""] * n for m in C.METRICS}
    snapshots: list[set[str]] = [set() for _ in range(n)]
    reasons: list[list[str]] = [[] for _ in range(n)]
    tokens_in = np.zeros(n, dtype=np.int64)
    tokens_out = np.zeros(n, dtype=np.int64)
    cost = np.zeros(n)
    cached = np.zeros(n, dtype=np.int64)
    groups: dict[tuple[int, str], list[MetricOutcome]] = {}
    expected = {m: ([], []) for m in C.METRICS}  # (positions, values) of expected scores
    for o in outcomes:
        p = o.position
        groups.setdefault((p, o.metric), []).append(o)
        if o.expected is not None:
            expected[o.metric][0].append(p)
            expected[o.metric][1].append(o.expected)
        if o.snapshot:
            snapshots[p].add(o.snapshot)
        tokens_in[p] += o.input_tokens
        tokens_out[p] += o.output_tokens
        cost[p] = np.nan if o.cost_usd is None else cost[p] + o.cost_usd
        cached[p] += int(o.cached)
    for (p, metric), group in groups.items():
        group.sort(key=lambda o: (o.order != C.ORDER_AB, o.sample))
        scored = [o for o in group if o.score is not None]
        first = scored[0] if scored else group[-1]
        if scored:
            scores[metric][p] = first.score  # type: ignore[assignment]
        explanations[metric][p] = first.explanation
        raws[metric][p] = first.raw
        reasons[p] += _group_reasons(metric, group, scored, config)
    for m in C.METRICS:
        out[m] = pd.array(np.where(scores[m] > 0, scores[m], 0), dtype="Int64")
        out.loc[scores[m] <= 0, m] = pd.NA
        out[C.explanation_column(m)] = explanations[m]
        out[C.raw_column(m)] = raws[m]
    out[C.JUDGE_MODEL_SNAPSHOT] = [", ".join(sorted(s)) for s in snapshots]
    out[C.JUDGE_PARAMS] = params_sent
    out[C.UNSCORED_REASON] = [REASON_SEPARATOR.join(r) for r in reasons]
    out[C.JUDGE_INPUT_TOKENS] = tokens_in
    out[C.JUDGE_OUTPUT_TOKENS] = tokens_out
    out[C.JUDGE_COST_USD] = cost
    stages = out[C.STAGE].to_numpy()
    labels = {s: f"{judge_label} [{', '.join(rubrics[m].key for m in C.STAGE_METRICS[s])}]"
              for s in C.STAGES}
    out[C.JUDGE_CACHED] = cached
    out[C.JUDGE] = [labels[int(s)] for s in stages]
    if config.repeated:
        extra = sample_columns(n, groups, both_orders=config.both_orders)
        for m in C.METRICS:
            out[m] = extra.pop(m)
        head = [c for c in out.columns if c not in C.OUTPUT_COLUMNS] + list(C.METRICS)
        out = pd.concat([out, extra], axis=1)
        out = out[[*head, *extra.columns,
                   *[c for c in C.OUTPUT_COLUMNS if c not in C.METRICS]]]
    if logprobs or config.logprobs:  # mean over the outcomes (samples) that have one
        for m, (pos, values) in expected.items():
            out[C.expected_column(m)] = pd.Series(values, index=pos, dtype=float).groupby(
                level=0).mean().reindex(range(n))
    return out


def _group_reasons(metric: str, group: list[MetricOutcome], scored: list[MetricOutcome],
                   config: JudgeConfig) -> list[str]:
    """The ``unscored_reason`` parts of one (row, metric): ``metric: reason`` when nothing
    is scored (distinct reasons joined by ``; ``), else one ``metric: sample i: reason``
    per unscored sample."""
    unscored = [o for o in group if o.score is None]
    if not unscored:
        return []
    if not scored:
        return [f"{metric}: {'; '.join(dict.fromkeys(str(o.reason) for o in unscored))}"]
    parts = []
    for o in unscored:
        where = [f"sample {o.sample + 1}"] if config.samples > 1 else []
        if o.order != C.ORDER_AB:
            where.append("swapped order")
        parts.append(f"{metric}: {', '.join(where)}: {o.reason}")
    return parts


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
        spent = outcome.input_tokens or outcome.output_tokens
        with self._lock:
            self._count(outcome.score is not None, outcome.cached, (
                outcome.input_tokens, outcome.output_tokens, outcome.cost_usd) if spent else None)

    def _count(self, usable: bool, cached: bool,
               spend: tuple[int, int, float | None] | None) -> None:
        """One more finished judgment or request (under the lock): ``spend`` is the
        ``(input tokens, output tokens, cost)`` received in this run, if any."""
        self.done += 1
        self.scored += int(usable)
        self.unscored += int(not usable)
        if cached:
            self.cached += 1
        elif spend is not None:
            self.input_tokens += spend[0]
            self.output_tokens += spend[1]
            if spend[2] is None:
                self.unpriced += 1
            else:
                self.cost_usd += spend[2]

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
    warnings: list[str] = field(default_factory=list)

    @property
    def stopped(self) -> str | None:
        """Why the run stopped early (setup error before any reply, cost cap), or None."""
        return self.stats.stopped


async def judge_frame_async(
    frame: pd.DataFrame,
    provider: ChatProvider,
    *,
    rubrics: Mapping[str, Rubric] | None = None,
    config: JudgeConfig | None = None,
    max_cost_usd: float | None = None,
    context: RunContext | None = None,
    **run: Any,
) -> JudgeRun:
    """Judge a validated four-stage table (see :func:`judge_frame`).

    ``context`` (:class:`judges.context.RunContext`) says how the requests run; ``**run``
    are its fields as keywords (``cache``, ``run_config``, ``prices``, ``cancel``,
    ``progress``, ``stats``). A live run: ``batch`` is
    :func:`judges.batch.judge_frame_batch_async`'s.
    """
    rubrics = rubrics or load_rubrics()
    config = config or JudgeConfig()
    ctx = RunContext.of(context, **run).priced()
    if ctx.batch is not None:
        raise TypeError("judge_frame_async runs live: judge through the batch API with "
                        "judges.batch.judge_frame_batch_async.")
    progress = ctx.progress if ctx.progress is not None else JudgeProgress(
        total=n_judgments(frame, config))
    judged, outcomes = await judge_stream(
        frame, provider, lambda requests: run_stream(
            requests, provider, cache=ctx.cache, config=ctx.run_config, prices=ctx.prices,
            cancel=ctx.cancel, stats=ctx.stats, reuse=config.reuse(),
            max_cost_usd=max_cost_usd),
        rubrics=rubrics, config=config, progress=progress, label=provider.label)
    return JudgeRun(judged, progress, ctx.stats, cancelled=ctx.cancelled,
                    warnings=run_warnings(provider, config, outcomes))


async def judge_stream(frame: pd.DataFrame, provider: ChatProvider,
                       stream: Callable[[Iterator[ChatRequest]], AsyncIterator[Result]], *,
                       rubrics: Mapping[str, Rubric], config: JudgeConfig,
                       progress: JudgeProgress, label: str,
                       outcome: Callable[[Result], MetricOutcome] = interpret
                       ) -> tuple[pd.DataFrame, list[MetricOutcome]]:
    """The judged table of ``frame`` and its outcomes, the judgments' requests run by
    ``stream`` (live or batch) and each result read by ``outcome``, counted in
    ``progress``; the provider is closed at the end."""
    empty = empty_texts(frame)
    outcomes = no_answer_outcomes(frame, empty, config)
    for done in outcomes:
        progress.add(done)
    try:
        async for result in stream(judge_requests(frame, rubrics=rubrics, config=config,
                                                  provider=provider, skip=empty)):
            outcomes.append(outcome(result))
            progress.add(outcomes[-1])
    finally:
        await provider.aclose()
    judged = assemble_judged(frame, outcomes, judge_label=label, rubrics=rubrics,
                             params_sent=config.sent(provider), config=config)
    return judged, outcomes


def run_warnings(provider: ChatProvider, config: JudgeConfig,
                 outcomes: Iterable[MetricOutcome]) -> list[str]:
    """The parameters set but not sent and the sampling warnings
    (:meth:`JudgeConfig.warnings`), then (when log-probabilities were sent) one sentence on
    the scored judgments without an expected score."""
    warnings = config.warnings(provider)
    if config.logprobs and provider.logprobs_unavailable() is None:
        warnings += expected_warnings(outcomes)
    return warnings


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
        (``threading.Event``), ``progress`` (:class:`JudgeProgress`), ``stats``,
        ``max_cost_usd`` (stop before the spending could cross it; resumable).

    Returns
    -------
    JudgeRun
        ``judged`` has the columns listed in the module docstring; ``warnings`` names
        the parameters set but not sent; ``stopped`` says why a run stopped early.

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
        Judge calls the file needs: (row, metric) pairs (rows without an answer
        included) times the samples, stage-2 ones twice in both orders.
    cached
        Judgments already in the cache (free, no request), or repeating an identical
        request (sent once), or without an answer to judge (never sent).
    calls
        Distinct requests to make (``judgments - cached``).
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
    """Count calls, tokens and cost of judging ``frame`` without making any request.

    Requests are de-duplicated by cache key (identical requests are sent once); cached
    replies count as free unless they cannot be parsed and ``config.reuse_unparsed`` is
    off (they will be asked again). Samples and both orders are counted (each is its own
    request, :func:`judge_requests`). A reasoning model's output is assumed to use a
    quarter of its token limit (hidden reasoning), at least ``expected_output_tokens``.
    """
    config = config or JudgeConfig()
    requests = list(judge_requests(frame, rubrics=rubrics, config=config, provider=provider,
                                   skip=empty_texts(frame)))
    unique: dict[str, ChatRequest] = {}
    for r in requests:
        unique.setdefault(request_key(provider, r), r)
    if cache is not None:
        reuse = config.reuse()
        for key in cache.contains(unique):
            hit = cache.get(key)
            if hit is not None and (reuse is None or reuse(hit)):
                del unique[key]
    to_call = list(unique.values())
    input_tokens = sum(estimate_message_tokens(r.messages) for r in to_call)
    limit = config.token_limit(provider)
    per_call = max(limit // 4, config.expected_output_tokens) if provider.reasoning else (
        config.expected_output_tokens)
    output_tokens = len(to_call) * min(per_call, limit)
    prices = prices or PriceTable.load()
    cost = prices.cost(provider.price_section, provider.model, input_tokens, output_tokens)
    judgments = n_judgments(frame, config)
    return Estimate(judgments, judgments - len(to_call), len(to_call), input_tokens,
                    output_tokens, cost, provider.model, provider.price_section)


def is_judged(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` already holds judge output (a ``judge`` column with values)."""
    return C.JUDGE in frame.columns and frame[C.JUDGE].fillna("").astype(str).str.len().gt(0).any()


def check_batch_cap(frame: pd.DataFrame, provider: ChatProvider, *, max_cost_usd: float,
                    config: JudgeConfig | None = None, prices: PriceTable | None = None,
                    cache: ReplyCache | None = None, rubrics: Mapping[str, Rubric] | None = None,
                    share: float = 0.5) -> float:
    """Refuse a batch run that could cost more than ``max_cost_usd``; return its bound.

    A batch cannot be stopped half-way the way a live run is, so the cap is checked before
    anything is submitted, on the worst case: every distinct uncached request at its
    estimated prompt tokens plus its full ``max_tokens``, at ``share`` of the price table
    (the batch discount).

    Raises
    ------
    PriceError
        The model has no price.
    JudgesError
        The bound exceeds the cap.
    """
    config = config or JudgeConfig()
    prices = prices or PriceTable.load()
    price = prices.lookup(provider.price_section, provider.model)
    if price is None:
        raise PriceError(f"A cost cap needs a price: {provider.model!r} has none in section "
                         f"{provider.price_section!r} of the price table.")
    est = estimate_run(frame, provider, rubrics=rubrics, config=config, prices=prices,
                       cache=cache)
    bound = price.cost(est.input_tokens, est.calls * config.token_limit(provider)) * share
    if bound > max_cost_usd:
        raise JudgesError(f"This batch could cost up to ${bound:,.4f} ({est.calls:,} requests "
                          f"at up to {config.token_limit(provider):,} output tokens each), more "
                          f"than the cost cap ${max_cost_usd:,.4f}; a batch cannot stop "
                          "half-way: raise the cap, lower max tokens or split the file.")
    return bound
