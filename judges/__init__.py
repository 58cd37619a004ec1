"""LLM judges for four-stage open-ended bias tests (``docs/judges.md``).

The generic machinery (reusable for answer generation, batch APIs, categorisation):

- :mod:`judges.request` - ``ChatRequest``, ``Reply``, ``Result``;
- :mod:`judges.providers` - ``ChatProvider`` (``openai``, ``anthropic``), ``make_provider``;
- :mod:`judges.runner` - ``run_stream`` / ``run_requests``: concurrency, retries, cache, cost;
- :mod:`judges.cache` - ``ReplyCache`` (SQLite, WAL), ``cache_key``;
- :mod:`judges.cost` - ``PriceTable``, token estimates;
- :mod:`judges.parse` - ``find_json_objects``, ``extract_json_reply``, ``parse_judgement``.

The four-stage judge:

- :mod:`judges.fourstage` - ``load_fourstage``, ``validate_fourstage``;
- :mod:`judges.rubric` + ``judges/rubrics/*.yaml`` - rubrics as data;
- :mod:`judges.prompts` - filling templates with delimited, neutralised texts;
- :mod:`judges.judge` - ``judge_frame``, ``estimate_run``, the judged file;
- :mod:`judges.embedding` - ``EmbeddingScorer``, ``score_similarity``;
- :mod:`judges.metrics` - ``stage_metrics``; :mod:`judges.to_results` - ``to_results``;
- :mod:`judges.job` - ``JudgeJob`` (background thread for the page); :mod:`judges.cli`.

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
