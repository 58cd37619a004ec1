"""A judge run in a background thread, for user interfaces that must stay responsive.

The page starts a :class:`JudgeJob`, keeps it in its session, redraws a progress bar
from :meth:`JudgeJob.progress` and can :meth:`JudgeJob.cancel` it: judgments already
made are kept (in the result and in the cache), the rest are marked as not judged.
No Streamlit here.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from judges.cache import ReplyCache
from judges.cost import PriceTable
from judges.judge import JudgeConfig, JudgeProgress, JudgeRun, judge_frame_async, n_judgments
from judges.providers import ChatProvider
from judges.rubric import Rubric
from judges.runner import RunConfig, RunStats


class JudgeJob:
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
    run_config, judge_config, prices, rubrics
        As for :func:`judges.judge.judge_frame`.
    """

    def __init__(self, frame: pd.DataFrame, *, provider: ChatProvider | None = None,
                 embedding_model: str | None = None, cache_path: str | Path | None = None,
                 run_config: RunConfig | None = None, judge_config: JudgeConfig | None = None,
                 prices: PriceTable | None = None,
                 rubrics: Mapping[str, Rubric] | None = None):
        self.frame = frame
        self.provider = provider
        self.embedding_model = embedding_model
        self.cache_path = cache_path
        self.run_config = run_config
        self.judge_config = judge_config
        self.prices = prices
        self.rubrics = rubrics
        total = len(frame) if provider is None else n_judgments(frame)
        self._progress = JudgeProgress(total=total)
        self.stats = RunStats()
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="judge-job")
        self.result: JudgeRun | None = None
        self.judged: pd.DataFrame | None = None
        self.error: str | None = None

    # --- control -------------------------------------------------------------------------
    def start(self) -> JudgeJob:
        """Start the thread; returns at once."""
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop taking new requests; what is done is kept."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until finished (or ``timeout``); return whether it finished."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        """Started and not finished."""
        return self._thread.is_alive()

    @property
    def finished(self) -> bool:
        """Finished, with a result or an error."""
        return self.judged is not None or self.error is not None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def progress(self) -> JudgeProgress:
        """A snapshot of the progress counters."""
        return self._progress.snapshot()

    # --- work ----------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            if self.provider is None:
                self._run_embedding()
            else:
                self._run_llm()
        except Exception as exc:  # noqa: BLE001 - shown to the user, never raised in a thread
            text = str(exc) or type(exc).__name__
            self.error = self.provider.redact(text) if self.provider is not None else text

    def _run_embedding(self) -> None:
        from judges.embedding import EmbeddingScorer, score_similarity

        judged = score_similarity(self.frame, EmbeddingScorer(self.embedding_model))
        with self._progress._lock:
            self._progress.done = self._progress.scored = len(judged)
        self.judged = judged

    def _run_llm(self) -> None:
        assert self.provider is not None
        cache = ReplyCache(self.cache_path) if self.cache_path else None
        try:
            self.result = asyncio.run(judge_frame_async(
                self.frame, self.provider, rubrics=self.rubrics, config=self.judge_config,
                run_config=self.run_config, cache=cache, prices=self.prices,
                cancel=self._cancel, progress=self._progress, stats=self.stats))
        finally:
            if cache is not None:
                cache.close()
        self.judged = self.result.judged
