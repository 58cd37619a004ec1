"""LLM judges for four-stage open-ended bias tests (``docs/judges.md``).

The generic machinery (reusable for answer generation, batch APIs, categorisation):

- :mod:`judges.request` - ``ChatRequest``, ``Reply``, ``Result``;
- :mod:`judges.providers` - ``ChatProvider`` (``openai``, ``anthropic``), ``make_provider``;
- :mod:`judges.runner` - ``run_stream`` / ``run_requests``: concurrency, retries, cache, cost;
- :mod:`judges.cache` - ``ReplyCache`` (SQLite, WAL), ``cache_key``;
- :mod:`judges.cost` - ``PriceTable``, token estimates;
- :mod:`judges.parse` - ``find_json_objects``, ``extract_json_reply``, ``parse_judgement``.
- :mod:`judges.logprobs` - ``expected_score``: the probability-weighted score of a reply
  from its token log-probabilities (``--logprobs``, G-Eval).

The four-stage judge:

- :mod:`judges.fourstage` - ``load_fourstage``, ``validate_fourstage``;
- :mod:`judges.rubric` + ``judges/rubrics/*.yaml`` - rubrics as data;
- :mod:`judges.prompts` - filling templates with delimited, neutralised texts;
- :mod:`judges.judge` - ``judge_frame``, ``estimate_run``, the judged file;
- :mod:`judges.samples` - repeated samples' columns (``JudgeConfig(samples=K)``);
  :mod:`judges.position` - ``position_bias`` of stage 2 judged in both orders;
- :mod:`judges.embedding` - ``EmbeddingScorer``, ``score_similarity``;
- :mod:`analysis.judge_stats.metrics` - ``stage_metrics``;
  :mod:`judges.to_results` - ``to_results``;
- :mod:`judges.job` - ``JudgeJob`` (background thread for the page), ``make_judge_job``,
  ``estimate_judge_run``; :mod:`judges.cli`.

Judging at scale (``docs/judges_at_scale.md``):

- :mod:`judges.batch` - provider batch APIs (``batch_stream``, ``stream_context``),
  bookkeeping in :mod:`judges.batch_store`, API calls in :mod:`judges.batch_apis`;
- :mod:`judges.answer` - ``answer_frame``: answers of the model under test;
- :mod:`analysis.judge_stats.agreement` - ``agreement``: judge vs human labels (or a second judge);
- :mod:`judges.categorise` - ``categorise_frame``: completions into categories;
- :mod:`judges.tasks` - shared by these: ``FrameJob``, ``TaskProgress``,
  ``estimate_requests``, ``collect_results``, ``load_data_yaml``; :mod:`judges.cli_scale`.

Nothing here imports Streamlit; SDKs and sentence-transformers are imported lazily.
"""

from judges.errors import (
    EmbeddingModelError,
    FourStageError,
    JudgesError,
    PriceError,
    ProviderConfigError,
    RubricError,
)

__all__ = [
    "EmbeddingModelError",
    "FourStageError",
    "JudgesError",
    "PriceError",
    "ProviderConfigError",
    "RubricError",
]
