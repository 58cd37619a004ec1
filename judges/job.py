"""A judge run in a background thread, for user interfaces that must stay responsive.

The page starts a :class:`JudgeJob`, keeps it in its session, redraws a progress bar
from :meth:`JudgeJob.progress` and can :meth:`JudgeJob.cancel` it: judgments already
made are kept (in the result and in the cache), the rest are marked as not judged.
The thread, cancel flag and error handling are :class:`judges.tasks.FrameJob`'s.

The rest of the Judges page's logic lives here too: :func:`make_judge_job` (live, batch
or embedding run), :func:`estimate_judge_run` (at the batch price when asked),
:func:`check_ready_unless_cached` and :func:`progress_text`. No Streamlit here.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.judge_stats import columns as C
from judges.batch import BATCH_DISCOUNT
from judges.cache import ReplyCache, optional_cache
from judges.cost import PriceTable
from judges.errors import JudgesError
from judges.judge import (
    Estimate,
    JudgeConfig,
    JudgeProgress,
    JudgeRun,
    check_batch_cap,
    estimate_run,
    judge_frame_async,
    n_judgments,
)
from judges.providers import ChatProvider
from judges.rubric import Rubric
from judges.runner import RunConfig, RunStats
from judges.tasks import FrameJob, cached_work, judge_batch_job

__all__ = [
    "JudgeJob", "check_ready_unless_cached", "estimate_judge_run", "make_judge_job",
    "progress_text", "run_summary",
]


class JudgeJob(FrameJob):
    """Judge ``frame`` in a daemon thread.

    Parameters
    ----------
    frame
        A validated four-stage table.
    provider
        The LLM judge, or ``None`` with ``embedding_model`` for the embedding scorer.
    embedding_model
        Model for the embedding scorer (``"bundled"``, a folder or a hub name).
    cache_path
        SQLite cache file; ``None`` runs without a cache.
    run_config, judge_config, prices, rubrics, max_cost_usd
        As for :func:`judges.judge.judge_frame`.
    """

    def __init__(self, frame: pd.DataFrame, *, provider: ChatProvider | None = None,
                 embedding_model: str | None = None, cache_path: str | Path | None = None,
                 run_config: RunConfig | None = None, judge_config: JudgeConfig | None = None,
                 prices: PriceTable | None = None,
                 rubrics: Mapping[str, Rubric] | None = None,
                 max_cost_usd: float | None = None):
        self.frame = frame
        self.provider = provider
        self.embedding_model = embedding_model
        self._options = {"rubrics": rubrics, "config": judge_config, "run_config": run_config,
                         "prices": prices, "max_cost_usd": max_cost_usd}
        self.result: JudgeRun | None = None
        total = len(frame) if provider is None else n_judgments(frame, judge_config)
        work = (self._run_embedding if provider is None
                else cached_work(cache_path, self._run_llm))
        super().__init__(work, progress=JudgeProgress(total=total), stats=RunStats(),
                         redact=provider.redact if provider is not None else None,
                         name="judge")

    def progress(self) -> JudgeProgress:
        """A snapshot of the progress counters."""
        return self._progress.snapshot()

    # --- work ----------------------------------------------------------------------------
    async def _run_embedding(self, cancel: threading.Event) -> pd.DataFrame:
        from analysis.embedding import EmbeddingScorer
        from judges.embedding import score_similarity

        judged = score_similarity(self.frame, EmbeddingScorer(self.embedding_model))
        with self._progress._lock:
            self._progress.done = self._progress.scored = len(judged)
        return judged

    async def _run_llm(self, cache: ReplyCache | None, cancel: threading.Event) -> pd.DataFrame:
        assert self.provider is not None
        self.result = await judge_frame_async(
            self.frame, self.provider, cache=cache, cancel=cancel, progress=self._progress,
            stats=self.stats, **self._options)
        return self.result.judged


def estimate_judge_run(frame: pd.DataFrame, provider: ChatProvider, *,
                       cache_path: str | Path | None = None, batch: bool = False,
                       prices: PriceTable | None = None,
                       judge_config: JudgeConfig | None = None) -> Estimate:
    """:func:`judges.judge.estimate_run` with the cache at ``cache_path`` (``None``: no
    cache); ``batch`` prices the calls at :data:`judges.batch.BATCH_DISCOUNT`."""
    with optional_cache(cache_path) as cache:
        est = estimate_run(frame, provider, prices=prices or PriceTable.load(), cache=cache,
                           config=judge_config)
    if batch and est.cost_usd is not None:
        est = replace(est, cost_usd=est.cost_usd * BATCH_DISCOUNT)
    return est


def check_ready_unless_cached(frame: pd.DataFrame, provider: ChatProvider,
                              cache_path: str | Path | None) -> None:
    """Raise the provider's setup error (no SDK, no key) unless every judgment of ``frame``
    is already in the cache at ``cache_path``."""
    try:
        provider.check_ready()
    except JudgesError:
        if not cache_path:
            raise
        with ReplyCache(cache_path) as cache:
            if estimate_run(frame, provider, cache=cache).calls:
                raise


def make_judge_job(frame: pd.DataFrame, provider: ChatProvider | None = None, *,
                   embedding_model: str | None = None, concurrency: int = 8,
                   cache_path: str | Path | None = None, batch: bool = False,
                   judge_config: JudgeConfig | None = None,
                   max_cost_usd: float | None = None) -> FrameJob:
    """The job (not started) of a judge run chosen on a page.

    ``provider=None`` scores with the embedding model; ``batch`` goes through the batch API
    (:func:`judges.tasks.judge_batch_job`, cache at ``cache_path`` or the default); else a
    live :class:`JudgeJob`. ``judge_config`` (temperature, max tokens, reasoning effort)
    and ``max_cost_usd`` (live runs) as for :func:`judges.judge.judge_frame`. Raises
    :class:`JudgesError` when the provider is not ready and the cache cannot serve every
    judgment.
    """
    if provider is None:
        return JudgeJob(frame, embedding_model=embedding_model)
    check_ready_unless_cached(frame, provider, cache_path)
    if batch:
        if max_cost_usd is not None:
            with optional_cache(cache_path) as cache:
                check_batch_cap(frame, provider, max_cost_usd=max_cost_usd,
                                config=judge_config, cache=cache)
        return judge_batch_job(frame, provider, cache_path=cache_path, config=judge_config)
    return JudgeJob(frame, provider=provider, run_config=RunConfig(concurrency=concurrency),
                    cache_path=cache_path, judge_config=judge_config,
                    max_cost_usd=max_cost_usd)


def progress_text(progress: Any) -> tuple[float, str]:
    """Progress bar fraction and caption of a judge run's progress snapshot."""
    p = progress
    cost = f"${p.cost_usd:,.4f}" + (" (some replies unpriced)" if p.unpriced else "")
    text = (f"{p.done:,} / {p.total:,} judged · {p.unscored:,} unscored · {p.cached:,} cached · "
            f"{p.input_tokens + p.output_tokens:,} tokens · {cost}")
    return (p.done / p.total if p.total else 1.0), text


def run_summary(job: FrameJob, seconds: float | None = None) -> pd.DataFrame:
    """What a finished judge run did, for the page: columns ``quantity`` and ``value``.

    Judgments scored and unscored, served from the cache (and shared with an identical
    request), unparsed cached replies asked again, HTTP requests and retries, tokens and
    cost of this run, why it stopped early, the parameters sent and the model snapshot
    the API reported.
    """
    p, st = job.progress(), job.stats
    judged = job.judged
    cost = f"${p.cost_usd:,.4f}" + (" (+ unpriced replies)" if p.unpriced else "")
    rows = [("judgments", f"{p.total:,}"), ("scored", f"{p.scored:,}"),
            ("unscored", f"{p.unscored:,}"),
            ("from the cache", f"{p.cached:,} ({st.shared:,} shared with an identical "
                               "request in flight)"),
            ("unparsed cached replies asked again", f"{st.reasked:,}"),
            ("requests sent", f"{st.http_attempts:,} ({st.retries:,} retries)"),
            ("tokens (this run)", f"{p.input_tokens + p.output_tokens:,}"),
            ("cost (this run)", cost)]
    if seconds is not None:
        rows.append(("time", f"{seconds:,.1f} s"))
    if st.stopped:
        rows.append(("stopped early", st.stopped))
    if judged is not None:
        for col, label in ((C.JUDGE_PARAMS, "parameters sent"),
                           (C.JUDGE_MODEL_SNAPSHOT, "model snapshot")):
            if col in judged.columns:
                values = sorted({str(v) for v in judged[col].dropna() if str(v)})
                rows.append((label, ", ".join(values) or "(none reported)"))
    warnings = getattr(getattr(job, "result", None), "warnings", None) or []
    rows += [("warning", w) for w in warnings]
    return pd.DataFrame(rows, columns=["quantity", "value"])
