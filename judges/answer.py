"""Answers from the model under test: fill the answer columns of a four-stage file.

The input is a *question file* (``docs/judges_at_scale.md``): the four-stage columns
``id``, ``stage``, ``sensitive_factor``, ``scenario`` plus, per stage,

- stages 1 and 4: ``question`` (keep ``expected_output`` for the judge);
- stage 2: the story prompt of each variant, either ``story_prompt_a`` and
  ``story_prompt_b``, or a ``question`` containing ``{variant}`` with ``variant_a`` and
  ``variant_b`` (e.g. "... The student is a {variant}." with ``girl`` / ``boy``);
- stage 3: ``question_a`` and ``question_b``.

Existing answers (``answer``, ``story_a``, ``story_b``, ``answer_a``, ``answer_b``), the
``model`` column, earlier ``answer_*`` columns and judge output columns are dropped, then
exact duplicate rows (a file answered by several models) collapse into one question set.

Each question is sent as its own conversation through the runner (same cache,
concurrency, retries and cost tracking as the judges; or the batch API): stages 1 and 4
ask ``question``; stage 2 asks each variant's story prompt; stage 3 asks ``question_a``
and ``question_b`` separately, so answer B never sees answer A. The wording around the
texts is data (``judges/data/answer_prompts.yaml``, id and version in the cache key).

**A plain list of prompts** works too: any table with a text column (``prompt_column``,
``--prompt-col`` on the CLI; a file without a ``stage`` column and with a ``prompt``
column is taken as such a list). Each non-empty prompt is sent as it is, in its own
conversation, and the reply goes to ``answer``; every other column passes through, and
no four-stage column is needed. Such a file is ready for ``categorise`` or for the
analysis pages, not for the four-stage judge.

The model's settings become model-factor columns so the analysis can compare them
(:data:`MODEL_SETTING_COLUMNS`): ``answer_model`` (``provider:model``),
``answer_temperature`` (as sent; ``default`` when none is sent, e.g. Anthropic),
``answer_system_prompt_id`` and ``answer_seed`` (``none`` when not sent: Anthropic has no
seed). Several settings (e.g. temperatures 0 and 1) give one copy of the question set
each. ``model`` is set to the model's name.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.judge_stats import columns as C
from analysis.values import is_blank
from judges.batch import BatchConfig, BatchMonitor, is_pending
from judges.cache import ReplyCache
from judges.context import RunContext
from judges.cost import PriceTable
from judges.errors import FourStageError, JudgesError
from judges.fourstage import parse_stage
from judges.providers import ChatProvider
from judges.request import ChatRequest, Result
from judges.runner import RunConfig, RunStats
from judges.tasks import (
    FrameJob,
    RequestEstimate,
    TaskProgress,
    collect_results,
    context_job,
    estimate_requests,
    load_data_yaml,
)

__all__ = [
    "ANSWER_CACHED", "ANSWER_COLUMNS", "ANSWER_COST_USD", "ANSWER_INPUT_TOKENS",
    "ANSWER_ISSUES", "ANSWER_MODEL", "ANSWER_OUTPUT_TOKENS", "ANSWER_PROMPTS", "ANSWER_SEED",
    "ANSWER_SYSTEM_PROMPT_ID", "ANSWER_TARGETS", "ANSWER_TEMPERATURE", "AnswerPrompts",
    "AnswerRun", "AnswerSettings", "DEFAULT_PROMPT_COLUMN", "MODEL_SETTING_COLUMNS",
    "QUESTIONS_SAMPLE", "STORY_PROMPT_A", "STORY_PROMPT_B", "VARIANT_A", "VARIANT_B",
    "VARIANT_PLACEHOLDER", "answer_frame", "answer_frame_async", "answer_job",
    "answer_prompts_from_dict", "answer_requests", "answer_text", "assemble_answers",
    "estimate_answers", "load_answer_prompts", "n_answer_requests", "prompt_column_of",
    "question_items", "questions_sample_path", "settings_grid", "story_prompts",
    "system_prompt",
]


# --- columns ----------------------------------------------------------------------------------
STORY_PROMPT_A = "story_prompt_a"
STORY_PROMPT_B = "story_prompt_b"
VARIANT_A = "variant_a"
VARIANT_B = "variant_b"
#: Placeholder in a stage 2 ``question`` replaced by ``variant_a`` / ``variant_b``.
VARIANT_PLACEHOLDER = "{variant}"

#: The model-under-test settings (names in :mod:`analysis.judge_stats.columns`): factors
#: (kind ``model``) of the results table made by :func:`judges.to_results.to_results`.
ANSWER_MODEL = C.ANSWER_MODEL
ANSWER_TEMPERATURE = C.ANSWER_TEMPERATURE
ANSWER_SYSTEM_PROMPT_ID = C.ANSWER_SYSTEM_PROMPT_ID
ANSWER_SEED = C.ANSWER_SEED
MODEL_SETTING_COLUMNS: tuple[str, ...] = C.MODEL_SETTING_COLUMNS
ANSWER_PROMPTS = "answer_prompts"
ANSWER_INPUT_TOKENS = "answer_input_tokens"
ANSWER_OUTPUT_TOKENS = "answer_output_tokens"
ANSWER_COST_USD = "answer_cost_usd"
ANSWER_CACHED = "answer_cached_calls"
#: ``target: problem | target: problem`` (empty answer, cut off, failed, pending).
ANSWER_ISSUES = "answer_issues"
#: Every column an answer run writes besides the answer texts and ``model``.
ANSWER_COLUMNS: tuple[str, ...] = (*MODEL_SETTING_COLUMNS, ANSWER_PROMPTS, ANSWER_INPUT_TOKENS,
                                   ANSWER_OUTPUT_TOKENS, ANSWER_COST_USD, ANSWER_CACHED,
                                   ANSWER_ISSUES)

#: Which answer column each stage fills, and from which question column.
#: Stage 2's sources ``a``/``b`` are the variants' story prompts.
ANSWER_TARGETS: dict[int, tuple[tuple[str, str], ...]] = {
    1: ((C.ANSWER, C.QUESTION),),
    2: ((C.STORY_A, "a"), (C.STORY_B, "b")),
    3: ((C.ANSWER_A, C.QUESTION_A), (C.ANSWER_B, C.QUESTION_B)),
    4: ((C.ANSWER, C.QUESTION),),
}
_ANSWER_TEXT_COLUMNS = (C.ANSWER, C.STORY_A, C.STORY_B, C.ANSWER_A, C.ANSWER_B)
#: The column a file without ``stage`` is read as a plain prompt list from, by default.
DEFAULT_PROMPT_COLUMN = "prompt"
_PLACEHOLDERS = {1: {"question"}, 2: {"story_prompt"}, 3: {"question"}, 4: {"question"}}


# --- prompts ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerPrompts:
    """The wording sent to the model under test (``judges/data/answer_prompts.yaml``)."""

    id: str
    version: str
    templates: Mapping[int, str]
    system_prompts: Mapping[str, str]

    @property
    def key(self) -> str:
        """``id@version`` (cache key part and the ``answer_prompts`` column)."""
        return f"{self.id}@{self.version}"


def answer_prompts_from_dict(data: Any, *, where: str = "answer prompts") -> AnswerPrompts:
    """Validate a parsed answer-prompt file.

    Raises
    ------
    JudgesError
        No ``id``/``version``; templates not exactly stages 1-4; a template using a
        placeholder other than ``$question`` (stages 1, 3, 4) / ``$story_prompt`` (stage 2)
        or missing it; ``system_prompts`` not a mapping of names to texts.
    """
    if not isinstance(data, Mapping) or not data.get("id") or not data.get("version"):
        raise JudgesError(f"{where}: needs 'id', 'version', 'templates' and 'system_prompts'.")
    raw = data.get("templates")
    if not isinstance(raw, Mapping) or sorted(int(k) for k in raw) != list(C.STAGES):
        raise JudgesError(f"{where}: 'templates' must give one template for each stage 1-4.")
    templates = {}
    for stage, text in raw.items():
        stage = int(stage)
        if set(string.Template(str(text)).get_identifiers()) != _PLACEHOLDERS[stage]:
            raise JudgesError(f"{where}: the stage {stage} template must use exactly "
                              f"{', '.join('$' + p for p in sorted(_PLACEHOLDERS[stage]))}.")
        templates[stage] = str(text).strip()
    systems = data.get("system_prompts") or {}
    if not isinstance(systems, Mapping):
        raise JudgesError(f"{where}: 'system_prompts' must map names to texts.")
    return AnswerPrompts(str(data["id"]), str(data["version"]), templates,
                         {str(k): " ".join(str(v or "").split()) for k, v in systems.items()})


def load_answer_prompts(path: str | Path | None = None) -> AnswerPrompts:
    """Read an answer-prompt file; ``None`` reads the bundled one."""
    return load_data_yaml(path, "answer_prompts.yaml", "answer-prompt file",
                          answer_prompts_from_dict)


# --- settings ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerSettings:
    """How the model under test is asked (output-affecting: all enter the cache key).

    Attributes
    ----------
    temperature
        ``None`` sends none (the provider's default).
    system_prompt, system_prompt_id
        The system message (``""`` sends none) and its name for the factor column.
    seed
        Sent where the provider supports it (OpenAI), else recorded as ``none``.
    max_tokens
        Answer length limit.
    """

    temperature: float | None = None
    system_prompt: str = ""
    system_prompt_id: str = "none"
    seed: int | None = None
    max_tokens: int = 1024

    def __post_init__(self) -> None:
        from judges.validation import check_generation

        check_generation("AnswerSettings", temperature=self.temperature,
                         max_tokens=self.max_tokens, seed=self.seed)

    def params(self) -> dict[str, Any]:
        """The request parameters."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "seed": self.seed}

    def columns(self, provider: ChatProvider) -> dict[str, str]:
        """The model-setting columns, as actually sent to ``provider``."""
        sent = provider.effective_params(self.params())
        return {ANSWER_MODEL: provider.label,
                ANSWER_TEMPERATURE: f"{sent['temperature']:g}" if "temperature" in sent
                else "default",
                ANSWER_SYSTEM_PROMPT_ID: self.system_prompt_id,
                ANSWER_SEED: str(sent["seed"]) if "seed" in sent else "none"}


def system_prompt(prompts: AnswerPrompts, name: str | None = None, *,
                  text: str | None = None) -> tuple[str, str]:
    """``(id, text)`` of a named system prompt, or of your own ``text`` (id ``custom-<hash>``).

    Raises
    ------
    JudgesError
        An unknown name.
    """
    if text is not None and text.strip():
        text = " ".join(text.split())
        return f"custom-{hashlib.sha256(text.encode()).hexdigest()[:8]}", text
    name = name or "none"
    if name not in prompts.system_prompts:
        raise JudgesError(f"Unknown system prompt {name!r}; choose one of "
                          f"{', '.join(prompts.system_prompts)} or give your own text.")
    return name, prompts.system_prompts[name]


def settings_grid(*, temperatures: Sequence[float | None] = (None,),
                  seeds: Sequence[int | None] = (None,),
                  system_prompts: Sequence[tuple[str, str]] = (("none", ""),),
                  max_tokens: int = 1024) -> list[AnswerSettings]:
    """Every combination of temperatures x system prompts x seeds."""
    return [AnswerSettings(t, text, pid, s, max_tokens) for t, (pid, text), s
            in itertools.product(temperatures, system_prompts, seeds)]


# --- the question file ------------------------------------------------------------------------
#: The bundled illustrative question set (texts written for bias-workbench).
QUESTIONS_SAMPLE = "fourstage_questions.csv"


def questions_sample_path() -> Path:
    """Path of the bundled question set (16 items, 4 stages, 4 sensitive factors)."""
    return Path(str(resources.files("judges") / "data" / QUESTIONS_SAMPLE))


def story_prompts(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """The two story prompts of a stage 2 row, or ``None`` if it has none usable."""
    a, b = row.get(STORY_PROMPT_A), row.get(STORY_PROMPT_B)
    if not is_blank(a) and not is_blank(b):
        return str(a).strip(), str(b).strip()
    question = row.get(C.QUESTION)
    va, vb = row.get(VARIANT_A), row.get(VARIANT_B)
    if (not is_blank(question) and VARIANT_PLACEHOLDER in str(question)
            and not is_blank(va) and not is_blank(vb)):
        q = str(question).strip()
        return (q.replace(VARIANT_PLACEHOLDER, str(va).strip()),
                q.replace(VARIANT_PLACEHOLDER, str(vb).strip()))
    return None


def prompt_column_of(frame: pd.DataFrame, prompt_column: str | None = None) -> str | None:
    """The plain-prompt column ``frame`` is read with, or ``None`` for a four-stage file.

    ``prompt_column`` given: it must be a column (and not ``answer``, which receives the
    replies). Not given: a file with a ``stage`` column is a four-stage question file; a
    file without one but with a ``prompt`` column is a plain prompt list.

    Raises
    ------
    FourStageError
        The named column is missing or is ``answer``; a file with neither ``stage`` nor
        ``prompt`` (the message says how to name the prompt column).
    """
    if not isinstance(frame, pd.DataFrame) or frame.empty:
        raise FourStageError("The question file has no rows.")
    columns = [str(c) for c in frame.columns]
    if prompt_column is not None:
        if prompt_column not in frame.columns:
            raise FourStageError(f"No column {prompt_column!r} to read prompts from; columns: "
                                 f"{', '.join(columns)}.")
        if prompt_column == C.ANSWER:
            raise FourStageError(f"The prompt column cannot be {C.ANSWER!r}: the replies are "
                                 "written there. Rename it.")
        return prompt_column
    if C.STAGE in frame.columns:
        return None
    if DEFAULT_PROMPT_COLUMN in frame.columns:
        return DEFAULT_PROMPT_COLUMN
    raise FourStageError(
        "This file is neither a four-stage question file (no 'stage' column) nor a prompt "
        f"list with a {DEFAULT_PROMPT_COLUMN!r} column. For a plain list of prompts name its "
        f"text column (--prompt-col COLUMN, prompt_column=...); columns: {', '.join(columns)}.")


def _prompt_list_items(frame: pd.DataFrame, prompt_column: str) -> pd.DataFrame:
    drop = {C.ANSWER, C.MODEL, *ANSWER_COLUMNS, *C.OUTPUT_COLUMNS} - {prompt_column}
    items = frame.drop(columns=[c for c in frame.columns if c in drop])
    items = items.drop_duplicates().reset_index(drop=True)
    empty = [pos + 1 for pos, v in enumerate(items[prompt_column].tolist()) if is_blank(v)]
    if empty:
        shown = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
        raise FourStageError(f"{len(empty)} row(s) have an empty {prompt_column!r} "
                             f"(rows {shown}); remove them or fill them in.")
    return items


def question_items(frame: pd.DataFrame, prompt_column: str | None = None) -> pd.DataFrame:
    """Validate a question file and reduce it to one row per question set item.

    With ``prompt_column`` (or a file read as a prompt list, :func:`prompt_column_of`) the
    file is a plain list of prompts: the rows without ``answer``, ``model`` and earlier
    answer / judge columns, exact duplicates dropped; a row with an empty prompt is an
    error.

    Returns
    -------
    pandas.DataFrame
        The rows without answers, ``model``, ``answer_*`` and judge output columns,
        exact duplicates dropped, ``stage`` as int, index reset.

    Raises
    ------
    FourStageError
        Listing every problem: missing ``id``/``stage``/``sensitive_factor``/``scenario``;
        a stage that is not 1-4; an empty question; a stage 2 row without both story
        prompts (see the module docstring).
    """
    prompt_column = prompt_column_of(frame, prompt_column)
    if prompt_column is not None:
        return _prompt_list_items(frame, prompt_column)
    common = [c for c in C.COMMON_COLUMNS if c != C.MODEL]
    missing = [c for c in common if c not in frame.columns]
    if missing:
        raise FourStageError(f"Missing column(s) {', '.join(missing)}: a question file needs "
                             f"{', '.join(common)}.")
    drop = {*_ANSWER_TEXT_COLUMNS, C.MODEL, *ANSWER_COLUMNS, *C.OUTPUT_COLUMNS}
    items = frame.drop(columns=[c for c in frame.columns if c in drop])
    items = items.drop_duplicates().reset_index(drop=True)
    problems = []
    stages = [parse_stage(v) for v in items[C.STAGE].tolist()]
    for pos, row in enumerate(items.to_dict("records")):
        label = f"row {pos + 1} (id {row.get(C.ID)})"
        stage = stages[pos]
        if stage is None:
            problems.append(f"{label}: stage {row.get(C.STAGE)!r} is not 1, 2, 3 or 4.")
        elif stage == 2:
            if story_prompts(row) is None:
                problems.append(f"{label}, stage 2: needs {STORY_PROMPT_A} and {STORY_PROMPT_B}, "
                                f"or a question with {VARIANT_PLACEHOLDER} and {VARIANT_A}, "
                                f"{VARIANT_B}.")
        else:
            for _, source in ANSWER_TARGETS[stage]:
                if is_blank(row.get(source)):
                    problems.append(f"{label}, stage {stage}: {source} is empty or missing.")
    if problems:
        raise FourStageError(problems)
    items[C.STAGE] = pd.Series(stages, dtype="int64")
    return items


# --- requests and the answered file ------------------------------------------------------------
def answer_requests(items: pd.DataFrame, settings: Sequence[AnswerSettings], *,
                    prompts: AnswerPrompts | None = None,
                    prompt_column: str | None = None) -> Iterator[ChatRequest]:
    """The questions to send, lazily: one per (setting, row, answer column).

    ``tag`` is ``(setting index, row position, answer column)``. With ``prompt_column``
    (a plain prompt list) each row's prompt is sent as it is and answers into ``answer``.
    """
    prompts = prompts or load_answer_prompts()
    records = items.to_dict("records")
    for s_index, setting in enumerate(settings):
        system = (("system", setting.system_prompt),) if setting.system_prompt else ()
        params = setting.params()
        for pos, row in enumerate(records):
            if prompt_column is not None:
                yield ChatRequest(messages=(*system, ("user", str(row[prompt_column]).strip())),
                                  params=params, key_parts={"answer_prompts": prompts.key},
                                  tag=(s_index, pos, C.ANSWER))
                continue
            stage = int(row[C.STAGE])
            template = string.Template(prompts.templates[stage])
            if stage == 2:
                texts = dict(zip("ab", story_prompts(row) or ("", ""), strict=True))
                filled = [(t, template.substitute(story_prompt=texts[src]))
                          for t, src in ANSWER_TARGETS[2]]
            else:
                filled = [(t, template.substitute(question=str(row[src]).strip()))
                          for t, src in ANSWER_TARGETS[stage]]
            for target, user in filled:
                yield ChatRequest(messages=(*system, ("user", user)), params=params,
                                  key_parts={"answer_prompts": prompts.key},
                                  tag=(s_index, pos, target))


def answer_text(result: Result) -> tuple[str, str]:
    """``(answer, issue)`` of one result; the answer is ``""`` when there is none.

    A refusal is an answer (what the model said); a reply cut off at the token limit is
    kept with the issue ``cut off at the token limit``.
    """
    if is_pending(result):
        return "", f"not answered yet: {result.error}"
    if result.status == "cancelled":
        return "", "not answered: run cancelled"
    if result.status != "ok" or result.reply is None:
        return "", f"request failed: {result.error}"
    reply = result.reply
    text = (reply.text or "").strip() or (reply.refusal or "").strip()
    if not text:
        return "", f"empty reply ({reply.finish_reason or 'no text'})"
    return text, "cut off at the token limit" if reply.finish_reason == "length" else ""


def assemble_answers(items: pd.DataFrame, settings: Sequence[AnswerSettings],
                     results: Sequence[Result], provider: ChatProvider, *,
                     prompts: AnswerPrompts | None = None,
                     prompt_column: str | None = None) -> pd.DataFrame:
    """The answered file: one copy of ``items`` per setting with the answers filled."""
    prompts = prompts or load_answer_prompts()
    n = len(items)
    texts = {c: [[""] * n for _ in settings] for c in _ANSWER_TEXT_COLUMNS}
    issues = [[[] for _ in range(n)] for _ in settings]
    tokens_in = np.zeros((len(settings), n), dtype=np.int64)
    tokens_out = np.zeros((len(settings), n), dtype=np.int64)
    cost = np.zeros((len(settings), n))
    cached = np.zeros((len(settings), n), dtype=np.int64)
    for result in results:
        s, pos, target = result.request.tag
        text, issue = answer_text(result)
        texts[target][s][pos] = text
        if issue:
            issues[s][pos].append(f"{target}: {issue}")
        if result.reply is not None:
            tokens_in[s, pos] += result.reply.input_tokens
            tokens_out[s, pos] += result.reply.output_tokens
            cost[s, pos] = np.nan if result.cost_usd is None else cost[s, pos] + result.cost_usd
            cached[s, pos] += int(result.cached)
    if prompt_column is None:
        stages = items[C.STAGE].to_numpy()
        items = _story_request_for_judge(items)
        used = {t for st in C.STAGES for t, _ in ANSWER_TARGETS[st] if (stages == st).any()}
    else:
        used = {C.ANSWER}
    parts = []
    for s, setting in enumerate(settings):
        part = items.copy()
        for column in _ANSWER_TEXT_COLUMNS:
            if column in used:
                part[column] = pd.Series(texts[column][s], dtype=object)
        part[C.MODEL] = provider.model
        for column, value in setting.columns(provider).items():
            part[column] = value
        part[ANSWER_PROMPTS] = prompts.key
        part[ANSWER_INPUT_TOKENS] = tokens_in[s]
        part[ANSWER_OUTPUT_TOKENS] = tokens_out[s]
        part[ANSWER_COST_USD] = cost[s]
        part[ANSWER_CACHED] = cached[s]
        part[ANSWER_ISSUES] = [" | ".join(i) for i in issues[s]]
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _story_request_for_judge(items: pd.DataFrame) -> pd.DataFrame:
    """Stage 2 ``question`` templates as the judge should see them: ``{variant}`` becomes
    ``variant_a / variant_b`` ("... The student is a girl / boy.")."""
    if not {C.QUESTION, VARIANT_A, VARIANT_B} <= set(items.columns):
        return items
    items = items.copy()
    questions = items[C.QUESTION].to_numpy(dtype=object).copy()
    for pos, row in enumerate(items.to_dict("records")):
        q = row[C.QUESTION]
        if row[C.STAGE] == 2 and not is_blank(q) and VARIANT_PLACEHOLDER in str(q):
            both = f"{str(row[VARIANT_A]).strip()} / {str(row[VARIANT_B]).strip()}"
            questions[pos] = str(q).replace(VARIANT_PLACEHOLDER, both)
    items[C.QUESTION] = questions
    return items


@dataclass
class AnswerRun:
    """The result of :func:`answer_frame`: the answered table and how the run went."""

    answered: pd.DataFrame
    progress: TaskProgress
    stats: RunStats
    monitor: BatchMonitor
    cancelled: bool

    @property
    def complete(self) -> bool:
        """Every answer arrived (no failure, none pending or cancelled)."""
        return not self.answered[ANSWER_ISSUES].str.contains(
            r"(?:request failed|not answered|empty reply)", regex=True).any()


def n_answer_requests(items: pd.DataFrame, n_settings: int = 1,
                      prompt_column: str | None = None) -> int:
    """Requests an answer run makes (before the cache): one per answer column."""
    if prompt_column is not None:
        return len(items) * n_settings
    per_stage = {s: len(t) for s, t in ANSWER_TARGETS.items()}
    return int(items[C.STAGE].map(per_stage).sum()) * n_settings


async def answer_frame_async(
    frame: pd.DataFrame,
    provider: ChatProvider,
    *,
    settings: Sequence[AnswerSettings] = (AnswerSettings(),),
    prompts: AnswerPrompts | None = None,
    prompt_column: str | None = None,
    context: RunContext | None = None,
    **run: Any,
) -> AnswerRun:
    """Ask the model under test every question of ``frame`` (see :func:`answer_frame`).

    ``context`` (:class:`judges.context.RunContext`) says how the requests run; ``**run``
    are its fields as keywords (``cache``, ``run_config``, ``batch``, ``prices``,
    ``cancel``, ``progress``, ``stats``, ``monitor``).
    """
    prompts = prompts or load_answer_prompts()
    ctx = RunContext.of(context, **run).priced()
    prompt_column = prompt_column_of(frame, prompt_column)
    items = question_items(frame, prompt_column)
    settings = list(settings)
    if not settings:
        raise JudgesError("Give at least one model setting.")
    provider.check_ready()
    if ctx.progress is None:
        ctx = replace(ctx, progress=TaskProgress(
            total=n_answer_requests(items, len(settings), prompt_column)))
    results = await collect_results(
        answer_requests(items, settings, prompts=prompts, prompt_column=prompt_column),
        provider, ctx, usable=lambda result: bool(answer_text(result)[0]), purpose="answer")
    answered = assemble_answers(items, settings, results, provider, prompts=prompts,
                                prompt_column=prompt_column)
    cancelled = ctx.cancelled or ctx.monitor.pending > 0
    return AnswerRun(answered, ctx.progress, ctx.stats, ctx.monitor, cancelled)


def answer_frame(frame: pd.DataFrame, provider: ChatProvider, **kwargs: Any) -> AnswerRun:
    """Fill the answer columns of a question file by asking the model under test.

    Parameters
    ----------
    frame
        A question file (module docstring), or a plain list of prompts (any text column,
        ``prompt_column``); answers already present are replaced.
    provider
        The model under test (:func:`judges.providers.make_provider`).
    **kwargs
        ``settings`` (a sequence of :class:`AnswerSettings`, default one with the
        provider's defaults), ``prompts``, ``cache``, ``run_config``, ``batch`` (a
        :class:`~judges.batch.BatchConfig` to use the batch API), ``prices``, ``cancel``,
        ``progress``, ``stats``, ``monitor``, ``prompt_column`` (read ``frame`` as a plain
        prompt list from this column).

    Returns
    -------
    AnswerRun
        ``answered``: the question rows once per setting, with ``answer`` (stages 1, 4),
        ``story_a``/``story_b`` (2), ``answer_a``/``answer_b`` (3), ``model`` and the
        columns :data:`ANSWER_COLUMNS`. It is a four-stage file ready for the judge once
        ``answer_issues`` reports no missing answer. A prompt list gets ``answer`` only.
    """
    return asyncio.run(answer_frame_async(frame, provider, **kwargs))


def estimate_answers(frame: pd.DataFrame, provider: ChatProvider, *,
                     settings: Sequence[AnswerSettings] = (AnswerSettings(),),
                     prompts: AnswerPrompts | None = None, prices: PriceTable | None = None,
                     cache: ReplyCache | None = None, batch: bool = False,
                     expected_output_tokens: int = 300,
                     prompt_column: str | None = None) -> RequestEstimate:
    """Calls, tokens and cost of answering ``frame``, without any request."""
    prompt_column = prompt_column_of(frame, prompt_column)
    items = question_items(frame, prompt_column)
    return estimate_requests(answer_requests(items, settings, prompts=prompts,
                                             prompt_column=prompt_column), provider,
                             expected_output_tokens=min(expected_output_tokens,
                                                        max(s.max_tokens for s in settings)),
                             prices=prices, cache=cache, batch=batch)


def answer_job(frame: pd.DataFrame, provider: ChatProvider, *,
               settings: Sequence[AnswerSettings] = (AnswerSettings(),),
               cache_path: str | Path | None = None, run_config: RunConfig | None = None,
               batch: BatchConfig | None = None, prices: PriceTable | None = None,
               prompt_column: str | None = None) -> FrameJob:
    """:func:`answer_frame` in a background thread (:class:`~judges.tasks.FrameJob`).

    Raises
    ------
    FourStageError
        At once, if ``frame`` is not a valid question file or prompt list.
    """
    prompt_column = prompt_column_of(frame, prompt_column)
    items = question_items(frame, prompt_column)
    context = RunContext(run_config=run_config, batch=batch, prices=prices,
                         progress=TaskProgress(total=n_answer_requests(
                             items, len(settings), prompt_column)))
    run = functools.partial(answer_frame_async, frame, provider, settings=settings,
                            prompt_column=prompt_column)
    return context_job(context, run, "answered", cache_path, provider, name="answer")
