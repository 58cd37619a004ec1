"""Several judges on one file, and their ensemble (``docs/judges.md`` §12).

Each judge runs :func:`judges.judge.judge_frame_async` in turn (same cache, same rubrics);
:func:`ensemble_judged` then puts the judged files side by side:

- every column a judge run adds (``ics``, ``ics_explanation``, ``ics_raw``, ``ics_sd``,
  ``ics_scores``..., ``unscored_reason``, ``judge``, ``judge_params``, tokens, cost...) is
  kept per judge as ``<column>@<judge name>``;
- ``<metric>`` is the **ensemble**: the mean (or median) of the scores of the judges that
  scored that judgment (empty when none did); ``<metric>_judges_sd`` the spread across
  them (sample SD, ddof 1; empty with fewer than two scores) and ``<metric>_judges_n`` how
  many judges scored;
- ``<metric>_explanation`` joins the judges' explanations (``name: text || name: text``);
  ``unscored_reason`` names a metric only when no judge scored it; tokens, cached calls and
  cost are summed over judges (cost empty if any judge's is); ``judge`` reads
  ``ensemble mean of <name>, <name> [rubrics]``; ``judge_params`` and
  ``judge_model_snapshot`` hold each judge's values, ``name: value`` joined by ``; ``.

A judge's name defaults to ``provider:model`` (characters other than letters, digits and
``._:/-`` become ``-``); names must be unique. With one judge nothing of this applies:
the file is exactly the single-judge file. No Streamlit here.
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml

from analysis.judge_stats import columns as C
from analysis.judge_stats.reliability import JUDGE_SEP
from judges.cost import PriceTable
from judges.errors import JudgesError
from judges.judge import (
    REASON_SEPARATOR,
    Estimate,
    JudgeConfig,
    JudgeProgress,
    JudgeRun,
    estimate_run,
    judge_frame_async,
    n_judgments,
)
from judges.providers import PROVIDERS, ChatProvider, make_provider
from judges.rubric import Rubric
from judges.runner import RunConfig, RunStats

__all__ = [
    "ENSEMBLES", "EXPLANATION_JOIN", "Ensemble", "JUDGES_N_SUFFIX", "JUDGES_SD_SUFFIX",
    "JUDGE_KEYS", "JudgeSpec", "JudgeSpecError", "MultiJudgeRun", "check_unique",
    "ensemble_job", "ensemble_judged", "estimate_judges", "judge_frames_async",
    "judges_from_data", "load_judges_yaml", "parse_judge", "sanitise_name", "total_judgments",
]


Ensemble = Literal["mean", "median"]
ENSEMBLES: tuple[str, ...] = ("mean", "median")
#: Keys a judges YAML entry may have.
JUDGE_KEYS: tuple[str, ...] = ("name", "provider", "model", "base_url", "api_key_env",
                               "temperature")
JUDGES_SD_SUFFIX = "_judges_sd"
JUDGES_N_SUFFIX = "_judges_n"
#: Joins the judges' explanations in the ensemble's ``<metric>_explanation``.
EXPLANATION_JOIN = " || "
_UNSAFE = re.compile(r"[^A-Za-z0-9._:/-]+")


class JudgeSpecError(JudgesError):
    """A judge given with ``--judge`` or in a judges YAML that cannot be used."""


def sanitise_name(text: str) -> str:
    """A judge name usable in column names: ``@``, spaces and the like become ``-``."""
    name = _UNSAFE.sub("-", text.strip()).strip("-")
    if not name:
        raise JudgeSpecError(f"Judge name {text!r} has no usable character (letters, digits, "
                             "'._:/-').")
    return name


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of a multi-judge run.

    Attributes
    ----------
    provider, model
        ``openai`` or ``anthropic``, and the model name.
    name
        Column suffix (``ics@<name>``); default ``provider:model``, sanitised.
    base_url
        Endpoint (None: the provider's API).
    api_key_env
        Environment variable holding this judge's key (None: the provider's default,
        ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``).
    temperature
        This judge's temperature; ``"inherit"`` (default) takes the run's.
    """

    provider: str
    model: str
    name: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None | str = "inherit"

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise JudgeSpecError(f"Unknown judge provider {self.provider!r}; choose one of "
                                 f"{', '.join(sorted(PROVIDERS))} (the embedding scorer is not "
                                 "an LLM judge and cannot join an ensemble).")
        if not str(self.model).strip():
            raise JudgeSpecError(f"Judge {self.provider!r} has no model.")
        t = self.temperature
        if t != "inherit" and t is not None and (
                isinstance(t, bool) or not isinstance(t, int | float) or not t >= 0):
            raise JudgeSpecError(f"Judge {self.label}: temperature must be a number >= 0 or "
                                 f"null, not {t!r}.")
        object.__setattr__(self, "name", sanitise_name(self.name or self.label))

    @property
    def label(self) -> str:
        """``provider:model``."""
        return f"{self.provider}:{self.model}"

    def config(self, base: JudgeConfig) -> JudgeConfig:
        """``base`` with this judge's temperature."""
        if self.temperature == "inherit":
            return base
        from dataclasses import replace

        return replace(base, temperature=self.temperature)

    def make_provider(self, api_key: str | None = None) -> ChatProvider:
        """The provider; the key from ``api_key``, else ``$api_key_env``, else the default."""
        if api_key is None and self.api_key_env:
            api_key = os.environ.get(self.api_key_env) or None
        return make_provider(self.provider, model=self.model, base_url=self.base_url,
                             api_key=api_key)


def parse_judge(text: str, *, base_url: str | None = None) -> JudgeSpec:
    """``provider:model`` (a ``--judge`` value; the model may hold ``:``, as in Ollama's
    ``llama3:8b``)."""
    provider, sep, model = text.strip().partition(":")
    if not sep or not model.strip():
        raise JudgeSpecError(f"--judge takes provider:model (e.g. openai:gpt-4o-mini), not "
                             f"{text!r}.")
    return JudgeSpec(provider.strip(), model.strip(), base_url=base_url)


def judges_from_data(data: Any, *, source: str = "judges YAML") -> list[JudgeSpec]:
    """Judges from parsed YAML: a list of mappings, or ``{"judges": [...]}``.

    Raises
    ------
    JudgeSpecError
        Not a list of mappings, an unknown key (the allowed ones are named), a missing
        provider or model, a bad temperature.
    """
    if isinstance(data, Mapping) and set(data) == {"judges"}:
        data = data["judges"]
    if not isinstance(data, list) or not data:
        raise JudgeSpecError(f"{source}: expected a non-empty list of judges (or 'judges:' "
                             "with one), each with provider and model.")
    specs = []
    for i, entry in enumerate(data, 1):
        if not isinstance(entry, Mapping):
            raise JudgeSpecError(f"{source}: judge {i} is not a mapping of "
                                 f"{', '.join(JUDGE_KEYS)}.")
        unknown = sorted(str(k) for k in entry if k not in JUDGE_KEYS)
        if unknown:
            raise JudgeSpecError(f"{source}: judge {i} has unknown key(s) {', '.join(unknown)}; "
                                 f"allowed: {', '.join(JUDGE_KEYS)}.")
        missing = [k for k in ("provider", "model") if not entry.get(k)]
        if missing:
            raise JudgeSpecError(f"{source}: judge {i} has no {' and no '.join(missing)}.")
        for key in ("name", "base_url", "api_key_env"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise JudgeSpecError(f"{source}: judge {i}: {key} must be text.")
        specs.append(JudgeSpec(str(entry["provider"]), str(entry["model"]),
                               name=entry.get("name") or "", base_url=entry.get("base_url"),
                               api_key_env=entry.get("api_key_env"),
                               temperature=entry.get("temperature", "inherit")))
    return specs


def load_judges_yaml(path: str | Path) -> list[JudgeSpec]:
    """The judges listed in a YAML file (:func:`judges_from_data`)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise JudgeSpecError(f"{path}: not valid YAML ({exc}).") from None
    return judges_from_data(data, source=str(path))


def check_unique(specs: Sequence[JudgeSpec]) -> list[JudgeSpec]:
    """``specs`` if their names are unique; else :class:`JudgeSpecError` naming the twin."""
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise JudgeSpecError(f"Two judges are named {s.name!r}: give each a distinct "
                                 "'name' (judges YAML) so their columns can be told apart.")
        seen.add(s.name)
    return list(specs)


# --- the ensemble file --------------------------------------------------------------------------
def _own_columns(judged: pd.DataFrame, inputs: Sequence[str]) -> list[str]:
    """The columns a judge run added (``similarity`` is the embedding scorer's: left out)."""
    return [c for c in judged.columns if c not in inputs and c != C.SIMILARITY]


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def ensemble_judged(frame: pd.DataFrame, judged: Mapping[str, pd.DataFrame], *,
                    method: Ensemble = "mean") -> pd.DataFrame:
    """Several judged versions of ``frame`` as one file (columns: module docstring).

    Parameters
    ----------
    frame
        The four-stage table that was judged (its columns come first, unchanged).
    judged
        Judge name -> that judge's judged file (same rows, same order).
    method
        ``mean`` or ``median`` of the judges that scored a judgment.

    Returns
    -------
    pandas.DataFrame
        With one judge, that judge's file unchanged.
    """
    if method not in ENSEMBLES:
        raise JudgesError(f"ensemble must be mean or median, not {method!r}.")
    if not judged:
        raise JudgesError("No judged file to combine.")
    names = list(judged)
    if len(names) == 1:
        return judged[names[0]]
    first = judged[names[0]]
    inputs = [c for c in first.columns if c in frame.columns and c not in C.OUTPUT_COLUMNS]
    base = first[inputs].reset_index(drop=True)
    n = len(base)
    for name, j in judged.items():
        if len(j) != n:
            raise JudgesError(f"Judge {name}'s file has {len(j)} rows, not {n}.")
    metrics = [m for m in C.METRICS if all(m in j.columns for j in judged.values())]
    new: dict[str, Any] = {}
    reasons: list[list[str]] = [[] for _ in range(n)]
    per_judge_reasons = {name: j.get(C.UNSCORED_REASON, pd.Series([""] * n)).map(_text)
                         .tolist() for name, j in judged.items()}
    for m in metrics:
        x = np.column_stack([pd.to_numeric(j[m], errors="coerce").to_numpy(dtype=float)
                             for j in judged.values()])
        count = np.isfinite(x).sum(1)
        with warnings.catch_warnings():  # all-NaN rows: no judge scored (NaN is right)
            warnings.simplefilter("ignore", RuntimeWarning)
            centre = np.nanmean(x, 1) if method == "mean" else np.nanmedian(x, 1)
            sd = np.where(count >= 2, np.nanstd(x, 1, ddof=1), np.nan)
        new[m] = np.where(count > 0, centre, np.nan)
        new[f"{m}{JUDGES_SD_SUFFIX}"] = sd
        new[f"{m}{JUDGES_N_SUFFIX}"] = count.astype(np.int64)
        exp = C.explanation_column(m)
        new[exp] = [EXPLANATION_JOIN.join(
            f"{name}: {_text(judged[name][exp].iloc[i])}" for name in names
            if exp in judged[name].columns and _text(judged[name][exp].iloc[i]))
            for i in range(n)]
        prefix = f"{m}: "
        for i in np.flatnonzero(count == 0):
            own = [f"{name}: {r[len(prefix):]}" for name in names
                   for r in per_judge_reasons[name][i].split(REASON_SEPARATOR)
                   if r.startswith(prefix)]
            if own:  # metric applies to the row and no judge scored it
                reasons[i].append(f"{m}: no judge scored it ({'; '.join(own)})")
    new[C.UNSCORED_REASON] = [REASON_SEPARATOR.join(r) for r in reasons]
    for col in (C.JUDGE_INPUT_TOKENS, C.JUDGE_OUTPUT_TOKENS, C.JUDGE_CACHED):
        if all(col in j.columns for j in judged.values()):
            new[col] = sum(pd.to_numeric(j[col], errors="coerce").fillna(0).to_numpy()
                           for j in judged.values()).astype(np.int64)
    if all(C.JUDGE_COST_USD in j.columns for j in judged.values()):
        new[C.JUDGE_COST_USD] = sum(pd.to_numeric(j[C.JUDGE_COST_USD], errors="coerce")
                                    .to_numpy(dtype=float) for j in judged.values())
    rubrics = [_text(v).partition(" [")[2] for v in first.get(C.JUDGE, pd.Series([""] * n))]
    new[C.JUDGE] = [f"ensemble {method} of {', '.join(names)}" + (f" [{r}" if r else "")
                    for r in rubrics]
    for col in (C.JUDGE_PARAMS, C.JUDGE_MODEL_SNAPSHOT):
        new[col] = ["; ".join(f"{name}: {_text(j[col].iloc[i])}" for name, j in judged.items()
                              if col in j.columns and _text(j[col].iloc[i]))
                    for i in range(n)]
    out = pd.concat([base, pd.DataFrame(new)], axis=1)
    for m in metrics:
        out[m] = out[m].astype("Float64")
    suffixed = {}
    for name, j in judged.items():
        for col in _own_columns(j, inputs):
            suffixed[f"{col}{JUDGE_SEP}{name}"] = j[col].reset_index(drop=True)
    return pd.concat([out, pd.DataFrame(suffixed)], axis=1)


# --- running several judges --------------------------------------------------------------------
def total_judgments(frame: pd.DataFrame,
                    judges: Sequence[tuple[str, ChatProvider, JudgeConfig]]) -> int:
    """Judge calls of all judges (each judge's samples and orders counted)."""
    return sum(n_judgments(frame, config) for _, _, config in judges)


@dataclass
class MultiJudgeRun:
    """The result of :func:`judge_frames_async`.

    Attributes
    ----------
    judged
        The ensemble file (one judge: that judge's file).
    runs
        Judge name -> its :class:`~judges.judge.JudgeRun`.
    progress
        Counters over all judges.
    cancelled
        Whether the run was cancelled.
    """

    judged: pd.DataFrame
    runs: dict[str, JudgeRun]
    progress: JudgeProgress
    cancelled: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def stats(self) -> RunStats:
        """The judges' run counters added up (``stopped``: the first judge's reason)."""
        total = RunStats()
        for run in self.runs.values():
            for f in ("done", "ok", "errors", "cancelled", "cache_hits", "http_attempts",
                      "retries", "input_tokens", "output_tokens", "cost_usd", "unpriced",
                      "shared", "reasked"):
                setattr(total, f, getattr(total, f) + getattr(run.stats, f))
            if total.stopped is None and run.stats.stopped:
                total.stopped = run.stats.stopped
        return total


async def judge_frames_async(
    frame: pd.DataFrame,
    judges: Sequence[tuple[str, ChatProvider, JudgeConfig]],
    *,
    ensemble: Ensemble = "mean",
    rubrics: Mapping[str, Rubric] | None = None,
    run_config: RunConfig | None = None,
    cache: Any = None,
    prices: PriceTable | None = None,
    cancel: threading.Event | None = None,
    progress: JudgeProgress | None = None,
    max_cost_usd: float | None = None,
) -> MultiJudgeRun:
    """Judge ``frame`` with each ``(name, provider, config)`` in turn, then combine.

    The judges run one after the other (each with the run's concurrency) on the same cache;
    ``progress`` counts over all of them; ``max_cost_usd`` caps the whole run (each judge
    gets what the earlier ones left). A judge that stops early (wrong key, cost cap) leaves
    its judgments unscored; the others still run unless ``cancel`` is set.
    """
    total = total_judgments(frame, judges)
    progress = progress if progress is not None else JudgeProgress(total=total)
    runs: dict[str, JudgeRun] = {}
    warnings: list[str] = []
    for name, provider, config in judges:
        cap = None if max_cost_usd is None else max(max_cost_usd - progress.cost_usd, 0.0)
        run = await judge_frame_async(frame, provider, rubrics=rubrics, config=config,
                                      run_config=run_config, cache=cache, prices=prices,
                                      cancel=cancel, progress=progress, stats=RunStats(),
                                      max_cost_usd=cap)
        runs[name] = run
        warnings += [f"{name}: {w}" for w in run.warnings]
    judged = ensemble_judged(frame, {k: r.judged for k, r in runs.items()}, method=ensemble)
    return MultiJudgeRun(judged, runs, progress, bool(cancel and cancel.is_set()), warnings)


def estimate_judges(frame: pd.DataFrame, judges: Sequence[tuple[str, ChatProvider, JudgeConfig]],
                    *, rubrics: Mapping[str, Rubric] | None = None,
                    prices: PriceTable | None = None, cache: Any = None,
                    batch_share: float = 1.0) -> pd.DataFrame:
    """Each judge's estimate and their total (no request is made).

    Returns
    -------
    pandas.DataFrame
        Columns ``judge``, ``judgments``, ``cached``, ``calls``, ``input_tokens``,
        ``output_tokens``, ``cost_usd`` (NaN without a price), then a ``total`` row whose
        cost is NaN when any judge has no price.
    """
    rows = []
    for name, provider, config in judges:
        est: Estimate = estimate_run(frame, provider, rubrics=rubrics, config=config,
                                     prices=prices, cache=cache)
        cost = np.nan if est.cost_usd is None else est.cost_usd * batch_share
        rows.append({"judge": name, "judgments": est.judgments, "cached": est.cached,
                     "calls": est.calls, "input_tokens": est.input_tokens,
                     "output_tokens": est.output_tokens, "cost_usd": cost})
    table = pd.DataFrame(rows)
    total = table.drop(columns="judge").sum(min_count=1)
    if table["cost_usd"].isna().any():
        total["cost_usd"] = np.nan
    table.loc[len(table)] = {"judge": "total", **total.to_dict()}
    return table.astype({c: "int64" for c in ("judgments", "cached", "calls", "input_tokens",
                                               "output_tokens")})


def ensemble_job(frame: pd.DataFrame, judges: Sequence[tuple[str, ChatProvider, JudgeConfig]],
                 *, ensemble: Ensemble = "mean", concurrency: int = 8,
                 cache_path: str | Path | None = None,
                 max_cost_usd: float | None = None) -> Any:
    """A :class:`judges.tasks.FrameJob` (not started) judging ``frame`` with every judge.

    Its ``judged`` is the ensemble file, ``result`` the :class:`MultiJudgeRun` (its
    ``warnings`` name each judge), ``stats`` the judges' counters added up at the end, so
    the Judges page's progress panel and run summary serve it unchanged. Raises the first
    judge's setup error (no SDK, no key) unless the cache holds all its judgments.
    """
    from judges.job import check_ready_unless_cached
    from judges.tasks import FrameJob, cached_work

    for _, provider, _ in judges:
        check_ready_unless_cached(frame, provider, cache_path)
    progress = JudgeProgress(total=total_judgments(frame, judges))

    async def run(cache: Any, cancel: threading.Event) -> pd.DataFrame:
        result = await judge_frames_async(
            frame, judges, ensemble=ensemble, run_config=RunConfig(concurrency=concurrency),
            cache=cache, cancel=cancel, progress=progress, max_cost_usd=max_cost_usd)
        job.result = result
        total = result.stats
        for name in vars(total):
            setattr(job.stats, name, getattr(total, name))
        return result.judged

    def redact(text: str) -> str:
        for _, provider, _ in judges:
            text = provider.redact(text)
        return text

    job = FrameJob(cached_work(cache_path, run), progress=progress, redact=redact,
                   name="ensemble")
    job.result = None
    return job
