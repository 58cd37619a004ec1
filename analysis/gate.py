"""The bias gate: pre-registered criteria evaluated on a run (and a baseline run) with
their uncertainty (``docs/checks.md``; ``bias-workbench check``, ``bw.check``,
:func:`analysis.testing.assert_bias_checks`).

A criteria file (YAML) lists statements a reviewer can read before the run::

    version: 1
    confidence: 0.95
    criteria:
      - id: ambiguous-bias-age
        metric: s_AMB
        scope: {category: Age}
        max: 0.05

Each criterion gets a verdict from its estimate and interval:

- **pass**: the whole interval lies on the allowed side of the threshold;
- **fail**: the whole interval lies on the other side (for ``log_disparity``: a subgroup
  beyond the threshold at adjusted p < alpha; for ``coverage``, a property of the design
  without sampling error, the value itself);
- **uncertain**: the interval straddles the threshold: the data cannot decide, so the
  gate does not flip on noise;
- **not evaluated**: the criterion cannot be computed on these data (no native score of
  that name, no factor to compare, no baseline): fails the gate unless ``optional``.

Exit codes (:data:`EXIT_CODES`): 0 every criterion passed (or is optional and not
evaluated), 1 a criterion failed (or a required one was not evaluated), 2 bad input (the
criteria file, the results, the design; nothing written), 3 no failure but at least one
criterion too uncertain to decide.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError, CriteriaError
from analysis.formatting import level_text

__all__ = [
    "CRITERION_KEYS", "CheckReport", "CriteriaError", "Criterion", "CriterionResult",
    "EXIT_CODES", "FAIL", "MAX_CRITERIA_BYTES", "METRICS", "NATIVE_METRICS", "NOT_EVALUATED",
    "PASS", "TOP_KEYS", "UNCERTAIN", "criteria_from_upload", "load_criteria", "run_checks",
]

PASS, FAIL, UNCERTAIN, NOT_EVALUATED = "pass", "fail", "uncertain", "not evaluated"
#: Exit code of ``check`` per overall verdict.
EXIT_CODES = {PASS: 0, FAIL: 1, "bad input": 2, UNCERTAIN: 3}

#: Native scores a criterion may name (case does not matter: ``s_amb`` is ``s_AMB``).
NATIVE_METRICS = ("s_DIS", "s_AMB", "accuracy_dis", "accuracy_amb", "pct_stereotype",
                  "pct_male_preferred", "acc", "acc_norm", "exact_match", "black_bias",
                  "asian_bias", "hispanic_bias", "native_american_bias", "female_bias",
                  "non_binary_bias", "age_bias")
METRICS = (*NATIVE_METRICS, "deviation_rate", "log_disparity", "deviation_metric", "coverage")
TOP_KEYS = ("version", "confidence", "n_resamples", "seed", "criteria")
CRITERION_KEYS = ("id", "description", "metric", "scope", "max", "min", "max_abs", "alpha",
                  "confidence", "one_sided", "factors", "level", "by", "compare",
                  "max_increase", "max_decrease", "optional")
COMPARE_KEYS = ("by", "reference", "candidate")
#: ``compare:`` value that pairs the run with ``--baseline``.
BASELINE = "baseline"
_RUN = "run"


@dataclass(frozen=True)
class Criterion:
    """One validated criterion (see ``docs/checks.md`` for the keys)."""

    id: str
    metric: str
    line: int
    spec: Mapping[str, Any]
    lines: Mapping[str, int]
    confidence: float
    optional: bool = False

    def statement(self) -> str:
        """The criterion in words, as a reviewer reads it."""
        s = self.spec
        scope = s.get("scope") or {}
        where = (" for " + ", ".join(f"{k} = {v}" for k, v in scope.items())) if scope else ""
        level = level_text(self.confidence)
        if self.metric == "log_disparity":
            return (f"no subgroup with |LD| > {s['max_abs']} at adjusted p < "
                    f"{s.get('alpha', 0.05)}{where}")
        if self.metric == "coverage":
            return f"coverage >= {s['min']}"
        if "compare" in s:
            cmp = s["compare"]
            other = ("the baseline run" if cmp == BASELINE else
                     f"{cmp.get('reference')} ({cmp['by']})")
            who = "candidate" if cmp == BASELINE else f"{cmp.get('candidate')}"
            bound = (f"higher by more than {s['max_increase']}" if "max_increase" in s
                     else f"lower by more than {s['max_decrease']}")
            sided = "one-sided" if s.get("one_sided", True) else "two-sided"
            return (f"{who} not {bound} than {other} in {self.metric}{where} (paired, "
                    f"{sided}, {level})")
        bound = f"<= {s['max']}" if "max" in s else f">= {s['min']}"
        return f"{self.metric} {bound}{where} with {level} confidence"


@dataclass
class CriterionResult:
    """A criterion's outcome: ``verdict`` and what it rests on."""

    criterion: Criterion
    verdict: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    threshold: float = math.nan
    test: str = ""
    p_value: float = math.nan
    rows: int = 0
    reason: str = ""
    details: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gate_verdict(self) -> str:
        """How the criterion counts for the gate (an optional not-evaluated one passes)."""
        if self.verdict == NOT_EVALUATED:
            return PASS if self.criterion.optional else FAIL
        return self.verdict

    def to_dict(self) -> dict[str, Any]:
        c = self.criterion
        return {"id": c.id, "metric": c.metric, "statement": c.statement(),
                "verdict": self.verdict, "gate": self.gate_verdict,
                "optional": c.optional, "estimate": _num(self.estimate),
                "ci_low": _num(self.ci_low), "ci_high": _num(self.ci_high),
                "threshold": _num(self.threshold), "confidence": c.confidence,
                "test": self.test, "p_value": _num(self.p_value), "rows": int(self.rows),
                "reason": self.reason, "line": c.line,
                "details": [{k: _num(v) if isinstance(v, float) else v for k, v in d.items()}
                            for d in self.details]}


def _num(x: Any) -> Any:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


# --- the criteria file -------------------------------------------------------------------
def _suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.5)
    if not close:
        low = {str(c).lower(): str(c) for c in choices}
        close = [low[str(word).lower()]] if str(word).lower() in low else []
    return f"; did you mean {close[0]!r}?" if close else \
        f" (choose one of: {', '.join(map(str, choices))})"


def _plain(node: Any) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return {_plain(k): _plain(v) for k, v in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v) for v in node.value]
    return yaml.safe_load(yaml.serialize(node))


def load_criteria(source: str | Path | Mapping[str, Any] | Sequence[Any],
                  name: str | None = None, *, root: Any = None
                  ) -> tuple[list[Criterion], dict[str, Any]]:
    """Read and validate a criteria file (a path, its text as a mapping, or the list of
    criteria); the checks against the data come later (:func:`run_checks`).

    Returns
    -------
    (criteria, top)
        The criteria and the file's top-level settings (``confidence``,
        ``n_resamples``, ``seed``).

    Raises
    ------
    CriteriaError
        Not YAML, not a mapping with ``criteria``, an unknown key (with "did you mean"),
        an unknown metric, a missing or contradictory threshold, a bad number; the
        message names the file and the line.
    """
    import yaml

    where = name or "the criteria"
    if root is not None:  # already composed (criteria_from_upload: the file's own lines)
        pass
    elif isinstance(source, (str, Path)):
        path = Path(source)
        where = name or str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CriteriaError(f"{where}: cannot read the criteria file ({exc}).") from None
        root = _compose(text, where)
    else:
        root = yaml.compose(yaml.safe_dump(source), Loader=yaml.SafeLoader)
    if root is None:
        raise CriteriaError(f"{where}: the criteria file is empty; it needs a 'criteria:' "
                            "list (docs/checks.md).")
    if isinstance(root, yaml.SequenceNode):
        root = yaml.compose(yaml.safe_dump({"criteria": _plain(root)}))
    if not isinstance(root, yaml.MappingNode):
        raise CriteriaError(f"{where}, line {root.start_mark.line + 1}: a criteria file is a "
                            "mapping with a 'criteria:' list (docs/checks.md).")
    top: dict[str, Any] = {}
    items = None
    for k, v in root.value:
        key = _plain(k)
        line = k.start_mark.line + 1
        if key not in TOP_KEYS:
            raise CriteriaError(f"{where}, line {line}: unknown key {key!r}"
                                f"{_suggest(key, TOP_KEYS)}")
        if key == "criteria":
            items = v
        else:
            top[key] = _plain(v)
    if items is None or not isinstance(items, yaml.SequenceNode) or not items.value:
        raise CriteriaError(f"{where}: no criteria: add a non-empty 'criteria:' list "
                            "(docs/checks.md).")
    confidence = _probability(top.get("confidence", 0.95), where, "confidence")
    for key in ("n_resamples", "seed"):
        if key in top and (not isinstance(top[key], int) or isinstance(top[key], bool)
                           or top[key] < (20 if key == "n_resamples" else 0)):
            raise CriteriaError(f"{where}: {key} must be a whole number"
                                f"{' of at least 20' if key == 'n_resamples' else ''}, "
                                f"not {top[key]!r}.")
    out, seen = [], set()
    for i, node in enumerate(items.value, start=1):
        c = _criterion(node, i, where, confidence)
        if c.id in seen:
            raise CriteriaError(f"{where}, line {c.line}: the id {c.id!r} is used twice; "
                                "give each criterion its own id.")
        seen.add(c.id)
        out.append(c)
    return out, {**top, "confidence": confidence, "source": where}


#: Largest criteria file read from an upload (bytes).
MAX_CRITERIA_BYTES = 64_000


def _compose(text: str, where: str) -> Any:
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise CriteriaError(f"{where}{line}: not valid YAML "
                            f"({getattr(exc, 'problem', None) or exc}).") from None
    except RecursionError:
        raise CriteriaError(f"{where}: the YAML is nested too deeply for a criteria "
                            "file.") from None


def criteria_from_upload(data: bytes, name: str) -> dict[str, Any]:
    """An uploaded criteria file (the Report page), validated with its own line numbers,
    as plain data (what the report's Checks section stores in its settings).

    Raises
    ------
    CriteriaError
        Too large, not UTF-8, or not a valid criteria file (see :func:`load_criteria`).
    """

    if len(data) > MAX_CRITERIA_BYTES:
        raise CriteriaError(f"{name}: a criteria file is at most {MAX_CRITERIA_BYTES:,} bytes; "
                            f"this one has {len(data):,}.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CriteriaError(f"{name}: not UTF-8 text; save the criteria file as UTF-8.") from None
    root = _compose(text, name)
    if root is None:
        raise CriteriaError(f"{name}: the criteria file is empty; it needs a 'criteria:' list "
                            "(docs/checks.md).")
    load_criteria(_plain(root), name=name, root=root)
    return _plain(root)


def _probability(value: Any, where: str, key: str, line: int | None = None) -> float:
    at = f", line {line}" if line else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise CriteriaError(f"{where}{at}: {key} must be a number between 0 and 1 (e.g. "
                            f"0.95), not {value!r}.")
    return float(value)


def _number(spec: Mapping[str, Any], key: str, where: str, line: int) -> None:
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CriteriaError(f"{where}, line {line}: {key} must be a number, not {value!r}.")


def _criterion(node: Any, i: int, where: str, confidence: float) -> Criterion:
    import yaml

    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        raise CriteriaError(f"{where}, line {line}: criterion {i} must be a mapping such as "
                            "'- metric: s_AMB' with its keys (docs/checks.md).")
    spec: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for k, v in node.value:
        key = _plain(k)
        kl = k.start_mark.line + 1
        if key not in CRITERION_KEYS:
            raise CriteriaError(f"{where}, line {kl}: unknown key {key!r} in criterion {i}"
                                f"{_suggest(key, CRITERION_KEYS)}")
        spec[key], lines[key] = _plain(v), kl
    if "metric" not in spec:
        raise CriteriaError(f"{where}, line {line}: criterion {i} has no 'metric:' (one of "
                            f"{', '.join(METRICS)}).")
    metric = str(spec["metric"])
    canon = {m.lower(): m for m in METRICS}
    if metric.lower() not in canon:
        raise CriteriaError(f"{where}, line {lines['metric']}: unknown metric {metric!r}"
                            f"{_suggest(metric, METRICS)}")
    metric = canon[metric.lower()]
    cid = str(spec.get("id") or f"{i}-{metric}")
    conf = confidence if "confidence" not in spec else _probability(
        spec["confidence"], where, "confidence", lines["confidence"])
    for key in ("max", "min", "max_abs", "max_increase", "max_decrease"):
        if key in spec:
            _number(spec, key, where, lines[key])
    if "alpha" in spec:
        _probability(spec["alpha"], where, "alpha", lines["alpha"])
    for key in ("optional", "one_sided"):
        if key in spec and not isinstance(spec[key], bool):
            raise CriteriaError(f"{where}, line {lines[key]}: {key} is true or false, not "
                                f"{spec[key]!r}.")
    if "scope" in spec and (not isinstance(spec["scope"], dict) or not spec["scope"]):
        raise CriteriaError(f"{where}, line {lines['scope']}: scope is a mapping of columns "
                            "to values, e.g. scope: {category: Age}.")
    if "factors" in spec:
        f = spec["factors"]
        spec["factors"] = [s.strip() for s in f.split(",")] if isinstance(f, str) else f
        if not isinstance(spec["factors"], list) or not spec["factors"]:
            raise CriteriaError(f"{where}, line {lines['factors']}: factors is a list of the "
                                "design's factors, e.g. factors: [category, model].")
    if "level" in spec and (not isinstance(spec["level"], int) or isinstance(spec["level"], bool)
                            or spec["level"] < 1):
        raise CriteriaError(f"{where}, line {lines['level']}: level is a whole number >= 1.")
    _thresholds(metric, spec, lines, where, line)
    return Criterion(cid, metric, line, spec, lines, conf, bool(spec.get("optional", False)))


def _thresholds(metric: str, spec: dict[str, Any], lines: Mapping[str, int], where: str,
                line: int) -> None:
    def need(*keys: str, only: Sequence[str] = ()) -> None:
        present = [k for k in keys if k in spec]
        if len(present) != 1:
            raise CriteriaError(f"{where}, line {line}: a {metric} criterion"
                                + (" with compare" if "compare" in spec else "")
                                + f" needs exactly one of {' or '.join(keys)}"
                                + (f" (it has {', '.join(present)})." if present else "."))
        other = [k for k in ("max", "min", "max_abs", "max_increase", "max_decrease")
                 if k in spec and k not in keys]
        if other:
            raise CriteriaError(f"{where}, line {lines[other[0]]}: {other[0]} does not apply "
                                f"to a {metric} criterion (it takes {' or '.join(keys)}).")

    if metric == "log_disparity":
        need("max_abs")
    elif metric == "coverage":
        need("min")
    elif "compare" in spec:
        if metric == "deviation_metric":
            raise CriteriaError(f"{where}, line {lines['compare']}: compare applies to native "
                                "scores and deviation_rate, not to deviation_metric.")
        cmp = spec["compare"]
        if cmp != BASELINE:
            if not isinstance(cmp, dict):
                raise CriteriaError(f"{where}, line {lines['compare']}: compare is "
                                    "'baseline' (the --baseline run) or a mapping {by: "
                                    "FACTOR, reference: A, candidate: B}.")
            for k in cmp:
                if k not in COMPARE_KEYS:
                    raise CriteriaError(f"{where}, line {lines['compare']}: unknown key {k!r} "
                                        f"in compare{_suggest(k, COMPARE_KEYS)}")
            if "by" not in cmp:
                raise CriteriaError(f"{where}, line {lines['compare']}: compare needs by: "
                                    "the factor whose values are compared.")
        need("max_increase", "max_decrease")
    else:
        need("max", "min")


# --- evaluation -------------------------------------------------------------------------
@dataclass
class CheckReport:
    """The criteria's results; :attr:`exit_code`, :meth:`markdown`, :meth:`junit_xml`,
    :meth:`to_json`."""

    results: list[CriterionResult]
    source: str
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        gates = [r.gate_verdict for r in self.results]
        return FAIL if FAIL in gates else UNCERTAIN if UNCERTAIN in gates else PASS

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def table(self) -> pd.DataFrame:
        cols = ["id", "statement", "verdict", "estimate", "ci_low", "ci_high", "threshold",
                "test", "p_value", "rows", "optional", "reason"]
        return pd.DataFrame([{k: r.to_dict()[k] for k in cols} for r in self.results],
                            columns=cols)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "exit_code": self.exit_code, "criteria_file":
                self.source, "criteria": [r.to_dict() for r in self.results],
                "notes": list(self.notes)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    def markdown(self) -> str:
        icon = {PASS: "PASS", FAIL: "FAIL", UNCERTAIN: "UNCERTAIN", NOT_EVALUATED: "NOT EVALUATED"}
        lines = [f"## Bias checks: {icon[self.verdict]} (exit {self.exit_code})", "",
                 f"Criteria: `{self.source}`", "",
                 "| criterion | statement | verdict | estimate | interval | threshold | "
                 "test | rows |", "|---|---|---|---|---|---|---|---|"]
        for r in self.results:
            d = r.to_dict()
            verdict = icon[r.verdict] + (" (optional)" if r.criterion.optional else "")
            interval = (f"[{_fmt(d['ci_low'])}, {_fmt(d['ci_high'])}]"
                        if d["ci_low"] is not None else "")
            test = r.test + (f", p = {_fmt(d['p_value'])}" if d["p_value"] is not None else "")
            lines.append(f"| {_md(r.criterion.id)} | {_md(r.criterion.statement())} | "
                         f"{verdict} | {_fmt(d['estimate'])} | {interval} | "
                         f"{_fmt(d['threshold'])} | {_md(test)} | {d['rows']:,} |")
        reasons = [(r.criterion.id, r.reason) for r in self.results if r.reason]
        if reasons:
            lines += ["", *[f"- **{_md(i)}**: {_md(t)}" for i, t in reasons]]
        if self.notes:
            lines += ["", *[f"- {_md(n)}" for n in self.notes]]
        lines += ["", "Exit codes: 0 pass, 1 a criterion failed, 2 bad input, 3 too uncertain "
                      "to decide (docs/checks.md)."]
        return "\n".join(lines) + "\n"

    def junit_xml(self) -> str:
        failures = sum(r.gate_verdict in (FAIL, UNCERTAIN) for r in self.results)
        skipped = sum(r.verdict == NOT_EVALUATED and r.criterion.optional for r in self.results)
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               f'<testsuite name="bias-workbench check" tests="{len(self.results)}" '
               f'failures="{failures}" errors="0" skipped="{skipped}">']
        for r in self.results:
            c = r.criterion
            msg = _summary(r)
            out.append(f'  <testcase classname="bias_checks" name={quoteattr(c.id)}>')
            if r.verdict == NOT_EVALUATED and c.optional:
                out.append(f"    <skipped message={quoteattr(msg)}/>")
            elif r.gate_verdict in (FAIL, UNCERTAIN):
                kind = "uncertain" if r.verdict == UNCERTAIN else r.verdict.replace(" ", "_")
                out.append(f"    <failure type={quoteattr(kind)} message={quoteattr(msg)}/>")
            out.append(f"    <system-out>{_xml_text(c.statement() + ': ' + msg)}</system-out>")
            out.append("  </testcase>")
        out.append("</testsuite>")
        return "\n".join(out) + "\n"


def _summary(r: CriterionResult) -> str:
    d = r.to_dict()
    parts = [f"{r.verdict}"]
    if d["estimate"] is not None:
        parts.append(f"estimate {_fmt(d['estimate'])}")
    if d["ci_low"] is not None:
        parts.append(f"interval [{_fmt(d['ci_low'])}, {_fmt(d['ci_high'])}]")
    if d["threshold"] is not None:
        parts.append(f"threshold {_fmt(d['threshold'])}")
    if r.reason:
        parts.append(r.reason)
    return "; ".join(parts)


def _xml_text(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape("".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 32))


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _fmt(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, float) and abs(x) >= 1e4:
        return f"{x:,.0f}"
    return f"{x:.4g}" if isinstance(x, float) else str(x)


@dataclass
class _Context:
    data: pd.DataFrame
    design: Any
    baseline: pd.DataFrame | None
    n_resamples: int
    seed: int
    where: str
    api: Any


def run_checks(data: Any, design: Any, criteria: Any, *, analyses: Any,
               baseline: Any = None, where: Mapping[str, Any] | None = None) -> CheckReport:
    """Evaluate ``criteria`` (a criteria file's path, or its content) on ``data``.

    ``analyses`` is :mod:`analysis.api` (``bw.check`` passes it): the criteria use its
    ``prepare_inputs``, ``subgroups``, ``ecdf`` and ``coverage``, the analyses as composed
    once, without this module importing the API that imports it.

    Every criterion is validated against the data before any is evaluated (unknown
    factor, column or value: :class:`CriteriaError` with the line and a "did you mean").

    Raises
    ------
    CriteriaError
        The criteria file (see :func:`load_criteria`) or a criterion naming what the data
        lack.
    AnalysisError
        Unreadable results or design, a baseline sharing no item with the run.
    """
    prepare_inputs = analyses.prepare_inputs
    items, top = load_criteria(criteria)
    base = None
    if baseline is None:
        table, the_design, _ = prepare_inputs(data, design, where=where, need_outcome=False)
    else:  # the design is applied to both runs together (values, references of either)
        both = pd.concat([_frame(baseline).assign(**{_RUN: "baseline"}),
                          _frame(data).assign(**{_RUN: "candidate"})], ignore_index=True)
        both, the_design, _ = prepare_inputs(both, design, where=where, need_outcome=False)
        table = both[both[_RUN] == "candidate"].drop(columns=_RUN).reset_index(drop=True)
        base = both[both[_RUN] == "baseline"].drop(columns=_RUN).reset_index(drop=True)
    ctx = _Context(table, the_design, base, int(top.get("n_resamples", 1000)),
                   int(top.get("seed", 0)), top["source"], analyses)
    for c in items:
        _validate_against(c, ctx)
    results = [_evaluate(c, ctx) for c in items]
    notes = ["Verdicts: pass = the interval lies on the allowed side of the threshold, fail "
             "= on the other side, uncertain = it straddles the threshold; bounds are "
             "one-sided at the criterion's confidence unless one_sided: false."]
    return CheckReport(results, top["source"], notes)


def _frame(data: Any) -> pd.DataFrame:
    from analysis.io import load_results

    if isinstance(data, (str, Path)):
        return load_results(data)
    if not isinstance(data, pd.DataFrame):
        raise AnalysisError(f"results must be a table (a DataFrame or a file's path), not "
                            f"{type(data).__name__}.")
    return data


def _validate_against(c: Criterion, ctx: _Context) -> None:
    frame, design = ctx.data, ctx.design
    spec = c.spec
    for key in ("scope",):
        for col, value in (spec.get(key) or {}).items():
            if col not in frame.columns:
                raise CriteriaError(f"{ctx.where}, line {c.lines[key]}: criterion {c.id!r}: "
                                    f"unknown column {col!r} in scope"
                                    f"{_suggest(col, list(frame.columns))}")
            values = sorted(frame[col].dropna().astype(str).unique())
            if str(value) not in values:
                raise CriteriaError(f"{ctx.where}, line {c.lines[key]}: criterion {c.id!r}: "
                                    f"{col} has no value {value!r}{_suggest(value, values)}")
    for f in spec.get("factors", []) or []:
        if f not in design.names:
            raise CriteriaError(f"{ctx.where}, line {c.lines['factors']}: criterion {c.id!r}: "
                                f"unknown factor {f!r}{_suggest(f, design.names)}")
    by = spec.get("by")
    if by is not None and by not in design.names:
        raise CriteriaError(f"{ctx.where}, line {c.lines['by']}: criterion {c.id!r}: unknown "
                            f"factor {by!r}{_suggest(by, design.names)}")
    cmp = spec.get("compare")
    if isinstance(cmp, dict):
        col = cmp["by"]
        if col not in frame.columns:
            raise CriteriaError(f"{ctx.where}, line {c.lines['compare']}: criterion {c.id!r}: "
                                f"unknown factor {col!r}{_suggest(col, design.names)}")
        values = sorted(frame[col].dropna().astype(str).unique())
        for k in ("reference", "candidate"):
            if k in cmp and str(cmp[k]) not in values:
                raise CriteriaError(f"{ctx.where}, line {c.lines['compare']}: criterion "
                                    f"{c.id!r}: {col} has no value {cmp[k]!r}"
                                    f"{_suggest(cmp[k], values)}")


def _not_evaluated(c: Criterion, reason: str, threshold: float = math.nan) -> CriterionResult:
    return CriterionResult(c, NOT_EVALUATED, threshold=threshold, reason=reason)


def _evaluate(c: Criterion, ctx: _Context) -> CriterionResult:
    from analysis.errors import PairingError

    try:
        if c.metric == "coverage":
            return _coverage(c, ctx)
        if c.metric == "log_disparity":
            return _log_disparity(c, ctx)
        if c.metric == "deviation_metric":
            return _deviation_metric(c, ctx)
        if "compare" in c.spec:
            return _paired(c, ctx)
        return _bound(c, ctx)
    except PairingError as exc:
        if c.spec.get("compare") == BASELINE:
            raise  # a baseline that shares no item is bad input, not a verdict
        return _not_evaluated(c, str(exc))
    except CriteriaError:
        raise
    except AnalysisError as exc:
        return _not_evaluated(c, str(exc))


def _levels(c: Criterion) -> float:
    """The two-sided interval level whose ends are the criterion's bounds."""
    return 2 * c.confidence - 1 if c.spec.get("one_sided", True) else c.confidence


def _side(estimate: float, low: float, high: float, threshold: float, upper: bool) -> str:
    """pass / fail / uncertain of ``value <= threshold`` (``upper``) or ``>=``."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return NOT_EVALUATED
    if upper:
        return PASS if high <= threshold else FAIL if low > threshold else UNCERTAIN
    return PASS if low >= threshold else FAIL if high < threshold else UNCERTAIN


def _select(table: pd.DataFrame, c: Criterion, metric: str) -> pd.DataFrame:
    """The native-score rows a criterion is about: its score, the scope's group (or the
    overall score), the scope's setting values."""
    from analysis.native_scores import GROUP, OVERALL, SCOPE, SCORE

    rows = table[table[SCORE] == metric]
    scope = dict(c.spec.get("scope") or {})
    breakdown = [k for k in scope if k not in rows.columns]
    if len(breakdown) > 1:
        raise AnalysisError(f"scope fixes {', '.join(breakdown)}: a native score is broken "
                            "down by one column at a time.")
    if breakdown:
        rows = rows[(rows[SCOPE] == breakdown[0]) & (rows[GROUP] == str(scope[breakdown[0]]))]
    else:
        rows = rows[rows[SCOPE] == OVERALL]
    for k, v in scope.items():
        if k in rows.columns:
            rows = rows[rows[k].astype(str) == str(v)]
    return rows


def _metric_name(c: Criterion) -> tuple[str, list[str]]:
    return ("deviation", ["deviation"]) if c.metric == "deviation_rate" else (c.metric, [])


def _breakdowns(c: Criterion, frame: pd.DataFrame) -> list[str] | None:
    from analysis.native_scores import SETTING_COLUMNS

    scope = [k for k in (c.spec.get("scope") or {}) if k not in SETTING_COLUMNS]
    if c.metric == "deviation_rate":
        return scope
    from analysis.native_scores import BBQ_BREAKDOWNS, MEAN_BREAKDOWNS

    # a native score in a scope its family does not break down by (BBQ's s_AMB per
    # question polarity): that column is the breakdown
    known = set(BBQ_BREAKDOWNS) | set(MEAN_BREAKDOWNS)
    return scope if any(k not in known for k in scope) else None


def _bound(c: Criterion, ctx: _Context) -> CriterionResult:
    from analysis.native_scores import native_scores

    name, extra = _metric_name(c)
    if extra and "deviation" not in ctx.data.columns:
        return _not_evaluated(c, "the design has no outcome (how a row counts as a "
                              "deviation): there is no deviation rate.")
    upper = "max" in c.spec
    threshold = float(c.spec["max"] if upper else c.spec["min"])
    scores = native_scores(ctx.data, ctx.design, n_resamples=ctx.n_resamples,
                           confidence=_levels(c), seed=ctx.seed, metrics=extra,
                           breakdowns=_breakdowns(c, ctx.data)).table
    rows = _select(scores, c, name)
    if not len(rows):
        return _not_evaluated(c, f"these data have no {c.metric} score"
                              + (" in that scope" if c.spec.get("scope") else "")
                              + ".", threshold)
    return _worst(c, rows, threshold, upper, "estimate", _bound_test(upper, threshold))


def _bound_test(upper: bool, threshold: float) -> str:
    return (f"cluster bootstrap t, H0: score {'>=' if upper else '<='} {threshold:g} "
            "(one-sided)")


def _worst(c: Criterion, rows: pd.DataFrame, threshold: float, upper: bool, column: str,
           test: str) -> CriterionResult:
    from scipy import stats

    from analysis.native_scores import BOOT_SE, CI_HIGH, CI_LOW, N_CLUSTERS, N_ROWS

    order = {FAIL: 0, UNCERTAIN: 1, NOT_EVALUATED: 2, PASS: 3}
    results = []
    for r in rows.to_dict(orient="records"):
        verdict = _side(r[column], r[CI_LOW], r[CI_HIGH], threshold, upper)
        se, g = r[BOOT_SE], max(int(r[N_CLUSTERS]) - 1, 1)
        z = (r[column] - threshold) / se if se and np.isfinite(se) and se > 0 else math.nan
        p = float(stats.t.cdf(z, g) if upper else stats.t.sf(z, g)) if np.isfinite(z) \
            else math.nan
        results.append((order[verdict], -(r[CI_HIGH] if upper else -r[CI_LOW]), verdict, p, r))
    results.sort(key=lambda t: (t[0], t[1]))
    _, _, verdict, p, r = results[0]
    details = [{k: v for k, v in x[4].items() if k not in ("interval",)} | {"verdict": x[2]}
               for x in results]
    reason = "" if verdict != NOT_EVALUATED else "the score has no interval (one cluster)."
    return CriterionResult(c, verdict, float(r[column]), float(r[CI_LOW]), float(r[CI_HIGH]),
                           threshold, f"{test}; {r['interval']}", p, int(r[N_ROWS]), reason,
                           details)


def _paired(c: Criterion, ctx: _Context) -> CriterionResult:
    from analysis.native_scores import DELTA, native_deltas

    name, extra = _metric_name(c)
    cmp = c.spec["compare"]
    increase = "max_increase" in c.spec
    margin = float(c.spec["max_increase"] if increase else c.spec["max_decrease"])
    threshold = margin if increase else -margin
    ignore: list[str] = []
    if cmp == BASELINE:
        if ctx.baseline is None:
            return _not_evaluated(c, "no baseline run was given (--baseline RESULTS).",
                                  threshold)
        data = pd.concat([ctx.baseline.assign(**{_RUN: "baseline"}),
                          ctx.data.assign(**{_RUN: "candidate"})], ignore_index=True)
        by, reference, candidate = _RUN, "baseline", "candidate"
        from analysis.native_scores import SETTING_COLUMNS

        # a setting that tells the runs apart (the model, the input format) is what is
        # compared, not a split
        ignore = [k for k in SETTING_COLUMNS if k in ctx.data.columns
                  and k in ctx.baseline.columns and set(ctx.data[k].astype(str))
                  != set(ctx.baseline[k].astype(str))]
    else:
        data, by = ctx.data, cmp["by"]
        reference, candidate = cmp.get("reference"), cmp.get("candidate")
        if data[by].nunique() < 2:
            return _not_evaluated(c, f"{by!r} has one value in these data: there is nothing "
                                  "to compare.", threshold)
        if reference is None or candidate is None:
            return _not_evaluated(c, "compare needs reference and candidate (the two values "
                                  f"of {by!r}).", threshold)
        data = data[data[by].astype(str).isin([str(reference), str(candidate)])]
    deltas = native_deltas(data, ctx.design, by=by, reference=str(reference),
                           n_resamples=ctx.n_resamples, confidence=_levels(c), seed=ctx.seed,
                           metrics=extra, breakdowns=_breakdowns(c, data), ignore=ignore).table
    deltas = deltas[deltas["model_b"] == str(candidate)]
    rows = _select(deltas, c, name)
    if not len(rows):
        return _not_evaluated(c, f"no paired {c.metric} between {reference} and {candidate}"
                              + (" in that scope" if c.spec.get("scope") else "") + ".",
                              threshold)
    test = (f"paired cluster bootstrap t, H0: delta {'>=' if increase else '<='} "
            f"{threshold:g} (non-inferiority)")
    return _worst(c, rows, threshold, increase, DELTA, test)


def _log_disparity(c: Criterion, ctx: _Context) -> CriterionResult:
    api = ctx.api
    limit = float(c.spec["max_abs"])
    alpha = float(c.spec.get("alpha", 0.05))
    opts: dict[str, Any] = {"confidence": c.confidence}
    if "level" in c.spec:
        opts["level"] = c.spec["level"]
    res = api.subgroups(ctx.data, ctx.design, applied=True, factors=c.spec.get("factors"),
                        where=_scope_where(c), **opts)
    t = res.table
    t = t[t["log_disparity"].notna()]
    if not len(t):
        return _not_evaluated(c, "no subgroup has a defined log disparity.", limit)
    big = t[t["log_disparity"].abs() > limit]
    significant = big[big["p_adjusted"] < alpha]
    pick = significant if len(significant) else big if len(big) else t
    r = pick.loc[pick["log_disparity"].abs().idxmax()]
    verdict = FAIL if len(significant) else UNCERTAIN if len(big) else PASS
    reason = {FAIL: f"{len(significant)} subgroup(s) beyond |LD| {limit:g} at adjusted p < "
                    f"{alpha:g}, the largest: {r['subgroup']}",
              UNCERTAIN: f"{len(big)} subgroup(s) beyond |LD| {limit:g} but none at adjusted "
                         f"p < {alpha:g} (largest: {r['subgroup']})",
              PASS: f"largest |LD|: {r['subgroup']}"}[verdict]
    details = big[["subgroup", "n", "log_disparity", "ci_low", "ci_high", "p_adjusted"]
                  ].to_dict(orient="records")
    return CriterionResult(c, verdict, float(r["log_disparity"]), float(r["ci_low"]),
                           float(r["ci_high"]), limit, f"{r['test']}; {res.notes[0]}",
                           float(r["p_adjusted"]), int(r["n"]), reason, details)


def _scope_where(c: Criterion) -> dict[str, list[str]] | None:
    scope = c.spec.get("scope") or {}
    return {k: [str(v)] for k, v in scope.items()} or None


def _deviation_metric(c: Criterion, ctx: _Context) -> CriterionResult:
    api = ctx.api
    threshold = float(c.spec.get("max", c.spec.get("min")))
    upper = "max" in c.spec
    by = c.spec.get("by")
    if by is None:
        models = ctx.design.of_kind("model")
        if not models:
            return _not_evaluated(c, "the design has no model factor to draw curves by: give "
                                  "by: FACTOR.", threshold)
        by = models[0]
    opts: dict[str, Any] = {"ci": "bootstrap", "confidence": _levels(c),
                            "n_resamples": ctx.n_resamples, "seed": ctx.seed}
    if "level" in c.spec:
        opts["level"] = c.spec["level"]
    res = api.ecdf(ctx.data, ctx.design, applied=True, by=by, factors=c.spec.get("factors"),
                   where=_scope_where(c), **opts)
    boot = res.tables["bootstrap"]
    boot = boot[boot["quantity"] == "deviation_metric"]
    rows = pd.DataFrame({
        "curve": boot["group_a"].to_numpy(), "estimate": boot["estimate"].to_numpy(float),
        "ci_low": boot["boot_ci_low"].to_numpy(float),
        "ci_high": boot["boot_ci_high"].to_numpy(float),
        "boot_se": boot["boot_se"].to_numpy(float),
        "n_clusters": np.full(len(boot), 10**6), "n": np.full(len(boot), len(ctx.data)),
        "interval": "percentile bootstrap of the eCDF (analysis.bootstrap.bootstrap_ecdf)"})
    rows["n"] = [int((ctx.data[by].astype(str) == str(v)).sum()) for v in rows["curve"]]
    if not len(rows):
        return _not_evaluated(c, "no eCDF curve could be drawn.", threshold)
    return _worst(c, rows, threshold, upper, "estimate",
                  "bootstrap z of the deviation metric (one-sided)")


def _coverage(c: Criterion, ctx: _Context) -> CriterionResult:
    api = ctx.api
    threshold = float(c.spec["min"])
    res = api.coverage(ctx.data, ctx.design, applied=True, factors=c.spec.get("factors"),
                       where=_scope_where(c))
    joint = res.table[res.table["scope"] == "joint"].iloc[0]
    value = float(joint["coverage_percentage"])
    verdict = PASS if value >= threshold else FAIL
    return CriterionResult(c, verdict, value, math.nan, math.nan, threshold,
                           "design property (the grid's observed share; no sampling error)",
                           math.nan, int(joint["n_rows"]),
                           f"{int(joint['n_observed_cells'])} of {int(joint['n_cells'])} "
                           "cells observed")
