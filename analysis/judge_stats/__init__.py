"""Statistics on judged tables (``docs/judges.md``): plain functions of a DataFrame.

They sit under :mod:`analysis` because they are statistics: the judges package (which
calls the LLMs and writes the judged files), the report and the pages import them from
here, never the other way round (``docs/architecture.md``, "Layers and imports").

- :mod:`analysis.judge_stats.columns` - the judged file's column names;
- :mod:`analysis.judge_stats.errors` - ``JudgesError``, ``EmbeddingModelError``;
- :mod:`analysis.judge_stats.metrics` - ``stage_metrics`` (FairMonitor's stage metrics);
- :mod:`analysis.judge_stats.agreement` - judge vs human (or a second judge) agreement;
- :mod:`analysis.judge_stats.category_agreement` - agreement of category labels;
- :mod:`analysis.judge_stats.reliability` - reliability between judges and samples;
- :mod:`analysis.judge_stats.samples` - the ``<metric>_scores`` cell format.
"""

__all__: list[str] = []
