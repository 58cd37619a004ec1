"""Response categorisation: a judge that puts each completion into one of your categories.

For the category-distribution analysis of ``docs/methods.md`` section 7 (e.g. the gender
of a story's main character: woman / man / non-binary / unclassified). The categories are
given at run time (:class:`CategorySpec`: names, optional descriptions and what to
decide); the prompt is data (``judges/data/categorise_prompt.yaml``, id and version in
the cache key); calls go through the same runner or batch API, cache and cost tracking
as the judges.

The reply must be ``{"explanation": str, "category": str}``. The unscored rules are the
judges' (:func:`judges.parse.extract_json_reply`: empty reply, refusal, no JSON object,
several objects that disagree), plus: a category that is not in the list, after ignoring
case and the difference between spaces, ``-`` and ``_``, is unscored with the reason
``category 'x' is not one of: ...``. An unscored row never gets a category.

Output columns (prefix ``category`` unless told otherwise): ``category`` (one of the
names, empty if unscored: a categorical outcome column), ``category_explanation``,
``category_unscored_reason``, ``category_judge`` (``provider:model [prompt@version]``),
``category_input_tokens``, ``category_output_tokens``, ``category_cost_usd``,
``category_cached_calls``. The reason column is not called ``unscored_reason`` so that a
judged file keeps the judge's reasons.
"""

from __future__ import annotations

import asyncio
import functools
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.judge_stats.category_agreement import normalise_name
from analysis.values import is_blank
from judges.batch import BatchConfig, BatchMonitor, is_pending
from judges.cache import ReplyCache
from judges.context import RunContext
from judges.cost import PriceTable
from judges.errors import JudgesError, ReplyParseError
from judges.parse import extract_json_reply
from judges.prompts import delimited
from judges.providers import ChatProvider
from judges.request import ChatRequest, Reply, Result
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
    "CategoriseConfig", "CategorisePrompt", "CategoriseRun", "Category", "CategoryJudgement",
    "CategorySpec", "DEFAULT_PREFIX", "UNSCORED", "assemble_categories", "categorise_frame",
    "categorise_frame_async", "categorise_job", "categorise_requests", "category_counts",
    "category_schema", "category_spec", "category_spec_from_dict", "estimate_categorise",
    "interpret_category", "load_categorise_prompt", "load_category_spec",
    "n_categorise_requests", "output_columns", "parse_category",
]


#: Default prefix of the output columns.
DEFAULT_PREFIX = "category"
#: The value shown for unscored rows in :func:`category_counts`.
UNSCORED = "(unscored)"
_PLACEHOLDERS = {"instruction", "categories", "texts"}


def output_columns(prefix: str = DEFAULT_PREFIX) -> dict[str, str]:
    """The output column names for ``prefix``: keys ``category``, ``explanation``,
    ``reason``, ``judge``, ``input_tokens``, ``output_tokens``, ``cost_usd``, ``cached``."""
    return {"category": prefix, "explanation": f"{prefix}_explanation",
            "reason": f"{prefix}_unscored_reason", "judge": f"{prefix}_judge",
            "input_tokens": f"{prefix}_input_tokens", "output_tokens": f"{prefix}_output_tokens",
            "cost_usd": f"{prefix}_cost_usd", "cached": f"{prefix}_cached_calls"}


# --- categories ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Category:
    """One allowed answer, with an optional description shown to the judge."""

    name: str
    description: str = ""


@dataclass(frozen=True)
class CategorySpec:
    """What to decide and the allowed categories.

    Raises
    ------
    JudgesError
        Fewer than two categories, an empty name, or two names equal after
        :func:`normalise_name`.
    """

    categories: tuple[Category, ...]
    instruction: str = "Which category fits the text best."
    name: str = "custom"

    def __post_init__(self) -> None:
        names = [normalise_name(c.name) for c in self.categories]
        if len(names) < 2:
            raise JudgesError("Give at least two categories.")
        if any(not n for n in names):
            raise JudgesError("A category name is empty.")
        if len(set(names)) != len(names):
            raise JudgesError("Two categories have the same name (ignoring case, spaces, - "
                              f"and _): {', '.join(c.name for c in self.categories)}.")

    @property
    def names(self) -> tuple[str, ...]:
        """The category names, in order."""
        return tuple(c.name for c in self.categories)

    @property
    def descriptions(self) -> dict[str, str]:
        """``name -> description`` of the categories that have one."""
        return {c.name: c.description for c in self.categories if c.description}

    def lookup(self, value: str) -> str | None:
        """The listed name ``value`` stands for, or ``None``."""
        wanted = normalise_name(value)
        for c in self.categories:
            if normalise_name(c.name) == wanted:
                return c.name
        return None

    def listing(self) -> str:
        """The categories as prompt lines ``- name: description``."""
        return "\n".join(f"- {c.name}: {c.description}" if c.description else f"- {c.name}"
                         for c in self.categories)


def category_spec(names: Sequence[str] | str, *, instruction: str | None = None,
                  descriptions: Mapping[str, str] | None = None,
                  name: str = "custom") -> CategorySpec:
    """A spec from names (a list, or one comma-separated string)."""
    if isinstance(names, str):
        names = [n for n in names.split(",")]
    names = [n.strip() for n in names if n.strip()]
    descriptions = descriptions or {}
    return CategorySpec(tuple(Category(n, descriptions.get(n, "")) for n in names),
                        instruction=(instruction or CategorySpec.instruction).strip(), name=name)


def category_spec_from_dict(data: Any, *, where: str = "categories") -> CategorySpec:
    """Validate a parsed categories file (``name``, ``instruction``, ``categories`` list)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("categories"), list):
        raise JudgesError(f"{where}: needs a 'categories' list (and an 'instruction').")
    categories = []
    for i, c in enumerate(data["categories"], start=1):
        if isinstance(c, str):
            categories.append(Category(c.strip()))
        elif isinstance(c, Mapping) and c.get("name"):
            categories.append(Category(str(c["name"]).strip(),
                                       " ".join(str(c.get("description") or "").split())))
        else:
            raise JudgesError(f"{where}: category #{i} needs a 'name'.")
    instruction = " ".join(str(data.get("instruction") or CategorySpec.instruction).split())
    return CategorySpec(tuple(categories), instruction, str(data.get("name") or "custom"))


def load_category_spec(path: str | Path | None = None) -> CategorySpec:
    """Read a categories YAML file; ``None`` reads the bundled gender example."""
    return load_data_yaml(path, "categories_gender.yaml", "categories file",
                          category_spec_from_dict)


# --- prompt ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CategorisePrompt:
    """The categorisation judge's prompt (``judges/data/categorise_prompt.yaml``)."""

    id: str
    version: str
    system: str
    template: str

    @property
    def key(self) -> str:
        """``id@version`` (cache key part and the ``category_judge`` column)."""
        return f"{self.id}@{self.version}"


def load_categorise_prompt(path: str | Path | None = None) -> CategorisePrompt:
    """Read the prompt file; ``None`` reads the bundled one.

    Raises
    ------
    JudgesError
        No such file, not valid YAML (:func:`judges.tasks.load_data_yaml`), missing fields,
        or a template whose placeholders are not exactly ``$instruction``, ``$categories``
        and ``$texts``.
    """
    return load_data_yaml(path, "categorise_prompt.yaml", "prompt file", _prompt_from_dict)


def _prompt_from_dict(data: Any, *, where: str) -> CategorisePrompt:
    if not isinstance(data, Mapping) or not all(data.get(k) for k in
                                                ("id", "version", "system", "template")):
        raise JudgesError(f"{where}: needs 'id', 'version', 'system' and 'template'.")
    template = str(data["template"]).strip()
    if set(string.Template(template).get_identifiers()) != _PLACEHOLDERS:
        raise JudgesError(f"{where}: the template must use exactly $instruction, $categories "
                          "and $texts.")
    return CategorisePrompt(str(data["id"]), str(data["version"]),
                            " ".join(str(data["system"]).split()), template)


def category_schema(spec: CategorySpec) -> dict[str, Any]:
    """JSON schema of a reply, for the providers' structured-output features."""
    return {"type": "object",
            "properties": {"explanation": {"type": "string"},
                           "category": {"type": "string", "enum": list(spec.names)}},
            "required": ["explanation", "category"], "additionalProperties": False}


@dataclass(frozen=True)
class CategoriseConfig:
    """Output-affecting settings of the categorisation judge (all in the cache key).

    Attributes
    ----------
    temperature
        0 by default; ``None`` sends none. (Anthropic never gets one.)
    max_tokens
        Reply length limit.
    structured_output
        Ask for the JSON through ``response_format`` / ``output_config`` (with the
        categories as an enum); turn off for servers without it.
    """

    temperature: float | None = 0.0
    max_tokens: int = 300
    structured_output: bool = True

    def __post_init__(self) -> None:
        from judges.validation import check_generation

        check_generation("CategoriseConfig", temperature=self.temperature,
                         max_tokens=self.max_tokens)

    def params(self, spec: CategorySpec) -> dict[str, Any]:
        """The request parameters."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "json_schema": category_schema(spec) if self.structured_output else None}


def categorise_requests(frame: pd.DataFrame, spec: CategorySpec, *, text_column: str,
                        context_column: str | None = None,
                        prompt: CategorisePrompt | None = None,
                        config: CategoriseConfig | None = None) -> Iterator[ChatRequest]:
    """One request per row with a non-empty text, lazily; ``tag`` is the row position.

    Raises
    ------
    JudgesError
        ``text_column`` (or ``context_column``) is not a column of ``frame``.
    """
    for column in (text_column, context_column):
        if column is not None and column not in frame.columns:
            raise JudgesError(f"There is no column {column!r} to classify; columns: "
                              f"{', '.join(map(str, frame.columns))}.")
    prompt = prompt or load_categorise_prompt()
    params = (config or CategoriseConfig()).params(spec)
    texts = frame[text_column].to_numpy(dtype=object)
    contexts = frame[context_column].to_numpy(dtype=object) if context_column else None
    template = string.Template(prompt.template)
    for pos, text in enumerate(texts):
        if is_blank(text):
            continue
        blocks = []
        if contexts is not None and not is_blank(contexts[pos]):
            blocks.append(delimited("REQUEST", str(contexts[pos])))
        blocks.append(delimited("TEXT TO CLASSIFY", str(text)))
        user = template.substitute(instruction=spec.instruction, categories=spec.listing(),
                                   texts="\n\n".join(blocks))
        yield ChatRequest(messages=(("system", prompt.system), ("user", user)), params=params,
                          key_parts={"categorise": prompt.key}, tag=pos)


def n_categorise_requests(frame: pd.DataFrame, text_column: str) -> int:
    """Requests a categorisation run makes (before the cache): rows with a text."""
    if text_column not in frame.columns:
        raise JudgesError(f"There is no column {text_column!r} to classify.")
    return int(sum(not is_blank(t) for t in frame[text_column].tolist()))


@dataclass(frozen=True)
class CategoryJudgement:
    """A parsed reply: ``category`` and ``explanation``, or ``reason`` it is unscored."""

    category: str | None
    explanation: str
    reason: str | None


def parse_category(reply: Reply | str | None, spec: CategorySpec) -> CategoryJudgement:
    """Parse ``{"explanation": str, "category": str}`` against the allowed categories."""
    try:
        obj = extract_json_reply(reply, required="category")
    except ReplyParseError as exc:
        return CategoryJudgement(None, "", str(exc))
    explanation = obj.get("explanation", "")
    explanation = explanation.strip() if isinstance(explanation, str) else str(explanation)
    value = obj["category"]
    if not isinstance(value, str):
        return CategoryJudgement(None, explanation, f"category {value!r} is not a text")
    found = spec.lookup(value)
    if found is None:
        shown = value if len(value) <= 60 else value[:57] + "..."
        return CategoryJudgement(None, explanation, f"category {shown!r} is not one of: "
                                                    f"{', '.join(spec.names)}")
    return CategoryJudgement(found, explanation, None)


def interpret_category(result: Result, spec: CategorySpec) -> CategoryJudgement:
    """A runner or batch result as a category, or the reason it has none."""
    if is_pending(result):
        return CategoryJudgement(None, "", f"not classified yet: {result.error}")
    if result.status == "cancelled":
        return CategoryJudgement(None, "", "not classified: run cancelled")
    if result.status != "ok" or result.reply is None:
        return CategoryJudgement(None, "", f"request failed: {result.error}")
    return parse_category(result.reply, spec)


def assemble_categories(frame: pd.DataFrame, spec: CategorySpec, results: Sequence[Result], *,
                        text_column: str, judge_label: str, prefix: str = DEFAULT_PREFIX
                        ) -> pd.DataFrame:
    """``frame`` (index reset) plus the output columns (module docstring)."""
    cols = output_columns(prefix)
    out = frame.reset_index(drop=True).drop(columns=[c for c in cols.values()
                                                     if c in frame.columns])
    n = len(out)
    category = np.full(n, None, dtype=object)
    explanation = [""] * n
    reason = ["" if not is_blank(t) else "no text to classify" for t in out[text_column]]
    tokens_in = np.zeros(n, dtype=np.int64)
    tokens_out = np.zeros(n, dtype=np.int64)
    cost = np.zeros(n)
    cached = np.zeros(n, dtype=np.int64)
    for result in results:
        pos = result.request.tag
        judgement = interpret_category(result, spec)
        category[pos] = judgement.category
        explanation[pos] = judgement.explanation
        reason[pos] = judgement.reason or ""
        if result.reply is not None:
            tokens_in[pos] = result.reply.input_tokens
            tokens_out[pos] = result.reply.output_tokens
            cost[pos] = np.nan if result.cost_usd is None else result.cost_usd
            cached[pos] = int(result.cached)
    out[cols["category"]] = pd.Series(category, dtype=object)
    out[cols["explanation"]] = explanation
    out[cols["reason"]] = reason
    out[cols["judge"]] = judge_label
    out[cols["input_tokens"]] = tokens_in
    out[cols["output_tokens"]] = tokens_out
    out[cols["cost_usd"]] = cost
    out[cols["cached"]] = cached
    return out


@dataclass
class CategoriseRun:
    """The result of :func:`categorise_frame`."""

    categorised: pd.DataFrame
    progress: TaskProgress
    stats: RunStats
    monitor: BatchMonitor
    cancelled: bool


async def categorise_frame_async(
    frame: pd.DataFrame,
    provider: ChatProvider,
    spec: CategorySpec,
    *,
    text_column: str,
    context_column: str | None = None,
    prefix: str = DEFAULT_PREFIX,
    prompt: CategorisePrompt | None = None,
    config: CategoriseConfig | None = None,
    context: RunContext | None = None,
    **run: Any,
) -> CategoriseRun:
    """Classify ``frame[text_column]`` (see :func:`categorise_frame`).

    ``context`` (:class:`judges.context.RunContext`) says how the requests run; ``**run``
    are its fields as keywords (``cache``, ``run_config``, ``batch``, ``prices``,
    ``cancel``, ``progress``, ``stats``, ``monitor``).
    """
    prompt = prompt or load_categorise_prompt()
    ctx = RunContext.of(context, **run).priced()
    requests = list(categorise_requests(frame, spec, text_column=text_column,
                                        context_column=context_column, prompt=prompt,
                                        config=config))
    provider.check_ready()
    if ctx.progress is None:
        ctx = replace(ctx, progress=TaskProgress(total=len(requests)))
    results = await collect_results(
        requests, provider, ctx,
        usable=lambda result: interpret_category(result, spec).category is not None,
        purpose="categorise")
    label = f"{provider.label}{' (batch)' if ctx.batch else ''} [{prompt.key}]"
    out = assemble_categories(frame, spec, results, text_column=text_column,
                              judge_label=label, prefix=prefix)
    cancelled = ctx.cancelled or ctx.monitor.pending > 0
    return CategoriseRun(out, ctx.progress, ctx.stats, ctx.monitor, cancelled)


def categorise_frame(frame: pd.DataFrame, provider: ChatProvider, spec: CategorySpec,
                     **kwargs: Any) -> CategoriseRun:
    """Put the text of every row into one of ``spec``'s categories.

    Parameters
    ----------
    frame
        Any table (a four-stage file, an answered file, benchmark completions).
    provider
        The categorisation judge.
    spec
        The categories (:func:`category_spec`, :func:`load_category_spec`).
    **kwargs
        ``text_column`` (required), ``context_column`` (e.g. the question, shown as the
        request), ``prefix``, ``prompt``, ``config`` (:class:`CategoriseConfig`),
        ``cache``, ``run_config``, ``batch``, ``prices``, ``cancel``, ``progress``,
        ``stats``, ``monitor``.

    Returns
    -------
    CategoriseRun
        ``categorised`` is ``frame`` plus the output columns (module docstring).
    """
    return asyncio.run(categorise_frame_async(frame, provider, spec, **kwargs))


def estimate_categorise(frame: pd.DataFrame, provider: ChatProvider, spec: CategorySpec, *,
                        text_column: str, context_column: str | None = None,
                        config: CategoriseConfig | None = None, prices: PriceTable | None = None,
                        cache: ReplyCache | None = None, batch: bool = False) -> RequestEstimate:
    """Calls, tokens and cost of a categorisation run, without any request."""
    requests = categorise_requests(frame, spec, text_column=text_column,
                                   context_column=context_column, config=config)
    return estimate_requests(requests, provider, expected_output_tokens=80, prices=prices,
                             cache=cache, batch=batch)


def category_counts(categorised: pd.DataFrame, *, prefix: str = DEFAULT_PREFIX,
                    by: Sequence[str] = ()) -> pd.DataFrame:
    """How often each category was given, per group.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``category`` (every listed name seen, plus ``(unscored)``),
        ``n`` and ``share`` (of the group's classified rows; NaN for ``(unscored)``).
    """
    column = output_columns(prefix)["category"]
    if column not in categorised.columns:
        raise JudgesError(f"There is no {column!r} column: classify the file first.")
    values = categorised[column].astype(object).where(categorised[column].notna(), UNSCORED)
    table = categorised[list(by)].copy()
    table["category"] = values.to_numpy()
    counts = table.groupby([*by, "category"], dropna=False).size().rename("n").reset_index()
    scored = counts[counts["category"] != UNSCORED]
    totals = scored.groupby(list(by))["n"].transform("sum") if by else scored["n"].sum()
    counts["share"] = np.nan
    counts.loc[scored.index, "share"] = scored["n"] / totals
    return counts


def categorise_job(frame: pd.DataFrame, provider: ChatProvider, spec: CategorySpec, *,
                   text_column: str, context_column: str | None = None,
                   prefix: str = DEFAULT_PREFIX, cache_path: str | Path | None = None,
                   run_config: RunConfig | None = None, batch: BatchConfig | None = None,
                   prices: PriceTable | None = None) -> FrameJob:
    """:func:`categorise_frame` in a background thread (:class:`~judges.tasks.FrameJob`)."""
    context = RunContext(run_config=run_config, batch=batch, prices=prices,
                         progress=TaskProgress(total=n_categorise_requests(frame, text_column)))
    run = functools.partial(categorise_frame_async, frame, provider, spec,
                            text_column=text_column, context_column=context_column,
                            prefix=prefix)
    return context_job(context, run, "categorised", cache_path, provider, name="categorise")
