"""The design of a benchmark: factors, their values and references, and the outcome.

A :class:`Design` says which columns of a results table are *factors* (domain, prompt
or model), the ordered values each may take, the *reference* (control) value of each,
and how an outcome column maps to the binary *deviation* (``docs/methods.md``,
vocabulary). It is a frozen dataclass that round-trips through YAML or JSON, so an
analyst can save it, share it and load it against another file; loading against a
file reports every mismatch at once.

Factor values are always strings: ``7``, ``7.0`` and ``"7"`` in a file all become the
value ``"7"``; a missing factor value becomes the explicit value ``"(missing)"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd
import yaml

from analysis.columns import DEVIATION
from analysis.errors import AnalysisError, DesignError, DesignMismatchError, LimitError
from analysis.limits import MAX_DESIGN_SIZE, MAX_DESIGN_VALUES, max_bytes
from analysis.prepare import Step, parse_recipe
from analysis.values import (
    KINDS,
    MAX_FACTOR_VALUES,
    MISSING_VALUE,
    MODEL_WORDS,
    PROMPT_WORDS,
    REFERENCE_PATTERN,
    FactorKind,
    check_frame,
    default_reference,
    factor_values,
    format_value,
    guess_kind,
    order_values,
    outcome_meaning,
    too_many_values,
)

__all__ = [
    "DESIGN_FORMAT_VERSION", "KINDS", "MAPPINGS", "MAX_FACTOR_VALUES", "MISSING_VALUE",
    "OUTCOME_TYPES", "REFERENCE_PATTERN", "SUGGEST_MAX_VALUES", "Design", "Factor",
    "FactorKind", "Outcome", "OutcomeType", "Problem", "apply_design", "check_design",
    "check_frame", "default_reference", "describe_columns", "design_from_structure",
    "design_problems", "deviation", "factor_values", "format_value", "guess_kind",
    "make_factor", "order_values", "outcome_meaning", "parse_assignments", "suggest_design",
    "suggest_outcome", "too_many_values",
]

Mapping_ = Literal["binary", "values", "equals", "below", "above"]
MAPPINGS: tuple[str, ...] = get_args(Mapping_)
OutcomeType = Literal["binary", "continuous"]
OUTCOME_TYPES: tuple[str, ...] = get_args(OutcomeType)

#: Columns with at most this many distinct values are suggested as factors.
SUGGEST_MAX_VALUES = 100
DESIGN_FORMAT_VERSION = 1



@dataclass(frozen=True)
class Factor:
    """One factor of the design.

    Parameters
    ----------
    name
        Column name in the results table.
    kind
        ``"domain"`` (what the prompt is about), ``"prompt"`` (how it is asked) or
        ``"model"`` (which model and settings answered).
    values
        The declared values, in display order. Values never seen in the data are
        allowed (they count as empty cells in coverage).
    reference
        The control value that regression compares against; one of ``values``.
    """

    name: str
    kind: FactorKind
    values: tuple[str, ...]
    reference: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(str(v) for v in self.values))
        object.__setattr__(self, "reference", str(self.reference))
        if not str(self.name).strip():
            raise DesignError("A factor needs a column name.")
        if self.kind not in KINDS:
            raise DesignError(
                f"Factor {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}."
            )
        if not self.values:
            raise DesignError(f"Factor {self.name!r} has no values.")
        if len(set(self.values)) < len(self.values):  # linear: 200k values check in ms
            seen: set[str] = set()
            dupes = sorted({v for v in self.values if v in seen or seen.add(v)})
            raise DesignError(f"Factor {self.name!r} lists values twice: {', '.join(dupes)}.")
        if self.reference not in self.values:
            raise DesignError(
                f"Factor {self.name!r}: reference {self.reference!r} is not one of its values."
            )


@dataclass(frozen=True)
class Outcome:
    """How an outcome column maps to the binary deviation.

    Parameters
    ----------
    column
        The outcome column.
    mapping
        ``"binary"``: the column is 0/1 or boolean, 1 = deviation. ``"values"``: the
        listed ``values`` count as deviation. ``"equals"``: deviation where the column
        equals ``other_column`` in the same row (SSQA: the answer equals the row's biased
        answer; compared as trimmed, case-insensitive text). ``"below"`` / ``"above"``:
        a numeric column strictly below / above ``threshold`` deviates.
    type
        ``"binary"`` (default): analyses use the 0/1 deviation. ``"continuous"``: the
        column is a score (DiscrimEval's ``logit_yes``, a toxicity probability) that
        factor importance models as a number (:mod:`analysis.importance_linear`); the
        mapping (``below`` / ``above`` a threshold) still gives the deviation the 0/1
        analyses use. Written to a design file only when continuous.
    """

    column: str
    mapping: Mapping_ = "binary"
    values: tuple[str, ...] = ()
    other_column: str | None = None
    threshold: float | None = None
    type: OutcomeType = "binary"

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(str(v) for v in self.values))
        if self.type not in OUTCOME_TYPES:
            raise DesignError(f"Outcome type {self.type!r} is not one of "
                              f"{', '.join(OUTCOME_TYPES)}.")
        if self.type == "continuous" and self.mapping not in ("below", "above"):
            raise DesignError(f"Outcome {self.column!r} is continuous: its deviation (for the "
                              "0/1 analyses) is a threshold, mapping below or above.")
        if self.mapping not in MAPPINGS:
            raise DesignError(
                f"Outcome mapping {self.mapping!r} is not one of {', '.join(MAPPINGS)}."
            )
        if self.mapping == "values" and not self.values:
            raise DesignError(
                f"Outcome {self.column!r}: say which values count as deviation."
            )
        if self.mapping == "equals" and not self.other_column:
            raise DesignError(
                f"Outcome {self.column!r}: say which column it is compared with."
            )
        if self.mapping in ("below", "above"):
            try:
                threshold = float(self.threshold)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                threshold = np.nan
            if not np.isfinite(threshold):
                raise DesignError(f"Outcome {self.column!r}: a numeric threshold is needed, "
                                  f"not {self.threshold!r}.")
            object.__setattr__(self, "threshold", threshold)

    def describe(self) -> str:
        """A one-line description such as ``"answer equals biased_answer"``."""
        if self.mapping == "binary":
            return f"{self.column} = 1"
        if self.mapping == "values":
            return f"{self.column} in {{{', '.join(self.values)}}}"
        if self.mapping == "equals":
            return f"{self.column} equals {self.other_column}"
        text = self.rule()
        return text + " (threshold of a continuous score)" if self.type == "continuous" \
            else text

    def rule(self) -> str:
        """The threshold rule alone (``"logit_yes < 0"``) of a below / above mapping."""
        if self.mapping not in ("below", "above"):
            return self.describe()
        return f"{self.column} {'<' if self.mapping == 'below' else '>'} {self.threshold:g}"


@dataclass(frozen=True)
class Design:
    """Factors and outcome of a benchmark (see module docstring)."""

    factors: tuple[Factor, ...] = ()
    outcome: Outcome | None = None
    name: str = field(default="", compare=False)
    #: Prepare steps that rebuild the analysed table from the raw file (analysis.prepare).
    recipe: tuple[Step, ...] = ()
    #: Optional column whose rows are not independent (template, prompt id, seed, ...):
    #: uncertainty is then cluster-robust (``docs/uncertainty.md``). It may also be a
    #: factor of the design, but not of a model that uses it as the cluster.
    cluster: str | None = None

    #: Optional ``(column, "harmful" | "favourable")`` pairs: whether higher values of a
    #: numeric feature (or the outcome) are harmful or favourable. A mapping is accepted.
    polarity: tuple[tuple[str, str], ...] = ()

    #: Columns whose distinct combinations identify one prompt (e.g. a prompt id column);
    #: empty means "the domain and prompt factors" (see :meth:`prompt_unit_columns`).
    prompt_unit: tuple[str, ...] = ()

    #: Numeric columns entered as covariates beside the factors in factor importance
    #: (DiscrimEval's ``age``); not factors.
    covariates: tuple[str, ...] = ()

    #: What :mod:`analysis.structure` inferred when the design was suggested (roles,
    #: item id, prompt unit, cluster and one-line reasons): saved as the ``structure``
    #: block of the design file, for the record; it changes no number.
    inferred: Mapping[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "factors", tuple(self.factors))
        object.__setattr__(self, "recipe", parse_recipe(list(self.recipe)))
        pairs = self.polarity.items() if isinstance(self.polarity, Mapping) else self.polarity
        pairs = tuple((str(c), str(v)) for c, v in pairs)
        bad = [f"{c}: {v}" for c, v in pairs if v not in ("harmful", "favourable")]
        if bad:
            raise DesignError(f"Polarity must be harmful or favourable, got {', '.join(bad)}.")
        object.__setattr__(self, "polarity", pairs)
        if isinstance(self.prompt_unit, str):
            object.__setattr__(self, "prompt_unit", (self.prompt_unit,))
        unit = tuple(str(c) for c in self.prompt_unit)
        if len(set(unit)) < len(unit) or any(not c for c in unit):
            raise DesignError("prompt_unit lists distinct, non-empty column names.")
        object.__setattr__(self, "prompt_unit", unit)
        covariates = ((self.covariates,) if isinstance(self.covariates, str)
                      else tuple(str(c) for c in self.covariates))
        if len(set(covariates)) < len(covariates) or any(not c for c in covariates):
            raise DesignError("covariates lists distinct, non-empty column names.")
        object.__setattr__(self, "covariates", covariates)
        names = [f.name for f in self.factors]
        seen: set[str] = set()
        dupes = sorted({n for n in names if n in seen or seen.add(n)})
        if dupes:
            raise DesignError(f"Factors declared twice: {', '.join(dupes)}.")
        if self.cluster is not None:
            object.__setattr__(self, "cluster", str(self.cluster) or None)

    @property
    def names(self) -> list[str]:
        """Factor names in declaration order."""
        return [f.name for f in self.factors]

    def factor(self, name: str) -> Factor:
        """The factor called ``name``; :class:`DesignError` if there is none."""
        for f in self.factors:
            if f.name == name:
                return f
        raise DesignError(
            f"{name!r} is not a factor of the design (factors: {', '.join(self.names) or 'none'})."
        )

    def polarity_of(self, column: str) -> str | None:
        """``"harmful"`` / ``"favourable"`` as declared for ``column``, else None."""
        return dict(self.polarity).get(column)

    def of_kind(self, *kinds: str) -> list[str]:
        """Names of the factors of the given kinds."""
        return [f.name for f in self.factors if f.kind in kinds]

    def prompt_unit_columns(self) -> list[str]:
        """The columns whose distinct combinations are the prompts of the benchmark.

        :attr:`prompt_unit` when set (a prompt id column, say), else the domain and
        prompt factors (every factor when there are none of those kinds).
        """
        return list(self.prompt_unit) or self.of_kind("domain", "prompt") or self.names

    def with_prompt_unit(self, columns: Iterable[str]) -> Design:
        """A copy whose prompts are the distinct combinations of ``columns`` (empty: the
        domain and prompt factors)."""
        return replace(self, prompt_unit=tuple(columns))

    def subset(self, names: Iterable[str]) -> Design:
        """The same design restricted to ``names`` (in that order).

        The prompts stay the same prompts: when the subset drops a column of
        :meth:`prompt_unit_columns`, the copy names the whole design's unit explicitly.
        """
        names = list(names)
        kept = replace(self, factors=tuple(self.factor(n) for n in names))
        unit = self.prompt_unit_columns()
        if not self.prompt_unit and set(kept.prompt_unit_columns()) != set(unit):
            kept = replace(kept, prompt_unit=tuple(unit))
        return kept

    def with_reference(self, name: str, reference: str) -> Design:
        """A copy whose factor ``name`` has a new reference value."""
        new = tuple(replace(f, reference=str(reference)) if f.name == name else f
                    for f in self.factors)
        self.factor(name)
        return replace(self, factors=new)

    def with_outcome(self, outcome: Outcome | None) -> Design:
        """A copy with another outcome mapping."""
        return replace(self, outcome=outcome)

    def with_cluster(self, cluster: str | None) -> Design:
        """A copy with another cluster column (None: rows independent)."""
        return replace(self, cluster=cluster or None)

    def with_covariates(self, covariates: Iterable[str]) -> Design:
        """A copy with these numeric covariates."""
        return replace(self, covariates=tuple(covariates))

    # --- serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A plain dict (``version``, ``factors``, ``outcome``, ``recipe``, ``cluster`` if set)."""
        out: dict[str, Any] = {"version": DESIGN_FORMAT_VERSION}
        if self.name:
            out["name"] = self.name
        out["factors"] = [
            {"name": f.name, "kind": f.kind, "reference": f.reference, "values": list(f.values)}
            for f in self.factors
        ]
        if self.outcome is not None:
            o = {k: v for k, v in asdict(self.outcome).items() if v not in (None, ())}
            if o.get("type") == "binary":  # the default: files stay as they were
                del o["type"]
            if "values" in o:
                o["values"] = list(o["values"])
            out["outcome"] = o
        if self.recipe:
            out["recipe"] = [step.to_dict() for step in self.recipe]
        if self.cluster:
            out["cluster"] = self.cluster
        if self.polarity:
            out["polarity"] = dict(self.polarity)
        if self.prompt_unit:
            out["prompt_unit"] = list(self.prompt_unit)
        if self.covariates:
            out["covariates"] = list(self.covariates)
        if self.inferred:
            out["structure"] = dict(self.inferred)
        return out

    def with_recipe(self, recipe: Iterable[Step | Mapping[str, Any]]) -> Design:
        """A copy with these Prepare steps (see :mod:`analysis.prepare`)."""
        return replace(self, recipe=parse_recipe(list(recipe)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Design:
        """Inverse of :meth:`to_dict`; :class:`DesignError` names what is malformed."""
        if not isinstance(data, Mapping):
            raise DesignError("A design file must hold a mapping with a 'factors' list.")
        version = data.get("version", DESIGN_FORMAT_VERSION)
        if version != DESIGN_FORMAT_VERSION:
            raise DesignError(f"Design format version {version!r} is not supported "
                              f"(this version reads {DESIGN_FORMAT_VERSION}).")
        raw_factors = data.get("factors", [])
        if not isinstance(raw_factors, list):
            raise DesignError("'factors' must be a list of factors.")
        _check_declared_values(raw_factors)
        factors = []
        for i, f in enumerate(raw_factors, start=1):
            if not isinstance(f, Mapping):
                raise DesignError(f"Factor #{i} must be a mapping with name, kind, values.")
            missing = [k for k in ("name", "values") if k not in f]
            if missing:
                raise DesignError(f"Factor #{i} lacks {', '.join(missing)}.")
            if not isinstance(f["values"], (list, tuple)):
                hint = (f" such as [{f['values']}]" if isinstance(f["values"], str) else "")
                raise DesignError(f"Factor #{i} ({f['name']}): 'values' must be a list{hint}, "
                                  f"not {_kind_of(f['values'])}.")
            name = _scalar(f["name"], f"Factor #{i}: 'name'")
            values = [_scalar(v, f"Factor {name!r}: value #{j}")
                      for j, v in enumerate(f["values"], start=1)]
            reference = f.get("reference", values[0] if values else "")
            factors.append(Factor(
                name=name, kind=f.get("kind", "domain"), values=tuple(values),
                reference=_scalar(reference, f"Factor {name!r}: 'reference'"),
            ))
        outcome = None
        if data.get("outcome"):
            if not isinstance(data["outcome"], Mapping):
                raise DesignError("'outcome' must be a mapping with a 'column' and a 'mapping'.")
            o = dict(data["outcome"])
            unknown = set(o) - {"column", "mapping", "values", "other_column", "threshold",
                                "type"}
            if unknown:
                raise DesignError(f"Unknown outcome keys: {', '.join(sorted(unknown))}.")
            if "column" not in o:
                raise DesignError("The outcome needs a 'column'.")
            o["column"] = _scalar(o["column"], "The outcome's 'column'")
            if not isinstance(o.get("values", []), (list, tuple)):
                raise DesignError("The outcome's 'values' must be a list.")
            o["values"] = tuple(_scalar(v, f"Outcome value #{j}")
                                for j, v in enumerate(o.get("values", ()), start=1))
            outcome = Outcome(**o)
        recipe: tuple[Step, ...] = ()
        if data.get("recipe"):
            from analysis.prepare import PrepareError

            try:
                recipe = parse_recipe(data["recipe"])
            except PrepareError as exc:
                raise DesignError(f"The design's recipe: {exc}") from None
        cluster = data.get("cluster")
        if cluster is not None and not isinstance(cluster, str):
            raise DesignError("'cluster' must be the name of one column.")
        polarity = data.get("polarity") or {}
        if not isinstance(polarity, Mapping):
            raise DesignError("'polarity' must map column names to harmful or favourable.")
        unit = data.get("prompt_unit") or ()
        if isinstance(unit, str):
            unit = (unit,)
        if not isinstance(unit, (list, tuple)):
            raise DesignError("'prompt_unit' must be a column name or a list of column names.")
        covariates = data.get("covariates") or ()
        if isinstance(covariates, str):
            covariates = (covariates,)
        if not isinstance(covariates, (list, tuple)):
            raise DesignError("'covariates' must be a column name or a list of column names.")
        inferred = data.get("structure")
        if inferred is not None and not isinstance(inferred, Mapping):
            raise DesignError("'structure' must be a mapping (roles, prompt_unit, cluster, "
                              "reasons), as a suggested design writes it.")
        return cls(factors=tuple(factors), outcome=outcome, name=str(data.get("name", "")),
                   recipe=recipe, cluster=cluster or None, polarity=tuple(polarity.items()),
                   prompt_unit=tuple(str(c) for c in unit),
                   covariates=tuple(_scalar(c, f"Covariate #{j}")
                                    for j, c in enumerate(covariates, start=1)),
                   inferred=inferred or None)

    def to_yaml(self) -> str:
        """The design as YAML text."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def to_json(self) -> str:
        """The design as JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_text(cls, text: str | bytes) -> Design:
        """Parse YAML or JSON text (JSON is valid YAML).

        The loader is safe (no Python objects), refuses YAML aliases (``*name``: nested
        aliases expand a few hundred bytes into gigabytes) and the document size and
        number of declared values are capped (:mod:`analysis.limits`).

        Raises
        ------
        DesignError
            Not UTF-8 text, not valid YAML/JSON, an alias, a malformed design.
        LimitError
            The text or its declared values exceed a limit.
        """
        if not isinstance(text, (str, bytes)):
            raise DesignError(f"A design is read from YAML or JSON text, not a "
                              f"{type(text).__name__}.")
        if len(text) > max_bytes(MAX_DESIGN_SIZE):
            raise LimitError(f"The design file is larger than the "
                             f"{MAX_DESIGN_SIZE.value():,.0f} KB allowed. "
                             f"{MAX_DESIGN_SIZE.how_to_raise()}")
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise DesignError(f"The design file is not UTF-8 text (YAML or JSON): byte "
                                  f"{text[exc.start:exc.start + 1]!r} at position {exc.start}. "
                                  "Save it as UTF-8.") from None
        return cls.from_dict(_parse_design_text(text) or {})

    @classmethod
    def from_file_bytes(cls, data: bytes) -> Design:
        """:meth:`from_text` for the contents of a design *file* (:meth:`load`, the Design
        page's upload): an empty file, or one that declares nothing, is a
        :class:`DesignError` rather than an empty design that would silently replace a
        working one."""
        if not data.strip():
            raise DesignError("The design file is empty: it declares no factors.")
        return cls.from_text(data).check_not_empty()

    @property
    def is_empty(self) -> bool:
        """Whether the design declares nothing: no factor, outcome, recipe or cluster."""
        return not (self.factors or self.outcome or self.recipe or self.cluster)

    def check_not_empty(self) -> Design:
        """``self``, or :class:`DesignError` if it declares nothing (a design *file* that
        declares nothing would silently replace a working design with an empty one)."""
        if self.is_empty:
            raise DesignError("The design file declares no factors and no outcome "
                              "('factors' is empty): there is nothing to apply.")
        return self

    def save(self, path: str | Path) -> None:
        """Write to ``path``: JSON if it ends in ``.json``, else YAML."""
        from analysis.safe_write import atomic_write_text

        path = Path(path)
        atomic_write_text(path, self.to_json() if path.suffix == ".json" else self.to_yaml())

    @classmethod
    def load(cls, path: str | Path) -> Design:
        """Read a design written by :meth:`save`.

        Raises
        ------
        DesignError
            The path is missing, a folder, a FIFO or device, not UTF-8, or not a design
            (messages name the path).
        LimitError
            The file exceeds :data:`analysis.limits.MAX_DESIGN_SIZE`.
        """
        from analysis.io import check_regular_file

        path = Path(path)
        try:
            info = check_regular_file(path)
        except AnalysisError as exc:
            message = str(exc).replace("a results file", "a design file")
            raise DesignError(message.replace(": no such file.", ": no such design file.")
                              ) from None
        limit = max_bytes(MAX_DESIGN_SIZE)
        if info.st_size > limit:
            raise LimitError(f"{path} is larger than the {MAX_DESIGN_SIZE.value():,.0f} KB "
                             f"allowed for a design file. {MAX_DESIGN_SIZE.how_to_raise()}")
        try:
            with path.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise DesignError(f"{path} cannot be read: {exc.strerror or exc}.") from None
        try:
            return cls.from_file_bytes(data)
        except LimitError as exc:
            raise LimitError(f"{path}: {exc}") from None
        except DesignError as exc:
            if type(exc) is not DesignError:
                raise
            raise DesignError(f"{path}: {exc}") from None


def _check_declared_values(raw_factors: list) -> None:
    """Refuse a design declaring more values than :data:`analysis.limits.MAX_DESIGN_VALUES`."""
    cap = MAX_DESIGN_VALUES.value()
    total = sum(len(f["values"]) for f in raw_factors
                if isinstance(f, Mapping) and isinstance(f.get("values"), (list, tuple)))
    if total > cap:
        raise LimitError(f"The design declares {total:,} values, more than the {cap:,.0f} "
                         f"allowed. {MAX_DESIGN_VALUES.how_to_raise()}")


def _scalar(value: Any, what: str) -> str:
    """A name or value from a design file as text; lists, mappings, bytes (``!!binary``),
    sets and nulls are refused instead of becoming text such as ``"['a']"`` or ``"None"``."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, bool):
        return str(value).lower()
    if hasattr(value, "isoformat"):  # a YAML date or timestamp: its ISO text
        return value.isoformat()
    raise DesignError(f"{what} is {_kind_of(value)}; it must be text or a number.")


def _kind_of(value: Any) -> str:
    """What a value parsed from YAML/JSON is, in words (for messages)."""
    return {list: "a list", dict: "a mapping", bytes: "binary data (!!binary)", str: "text",
            set: "a set (!!set)", type(None): "empty (null)"}.get(
        type(value), f"a {type(value).__name__}")


def _parse_design_text(text: str) -> Any:
    """JSON (fast) or YAML through libyaml when available, refusing aliases either way."""
    try:
        try:
            return json.loads(text)
        except ValueError as exc:
            json_error = exc
        if "*" in text:  # an alias needs a '*': only then look at the events
            for event in yaml.parse(text, Loader=_PARSER):
                if isinstance(event, yaml.AliasEvent):
                    raise DesignError(
                        f"The design file uses a YAML alias (*{event.anchor}) at line "
                        f"{event.start_mark.line + 1}: aliases are not allowed in design files "
                        "(write the values out).")
        return yaml.load(text, Loader=_DesignLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        if text.lstrip()[:1] in ("{", "["):  # written as JSON: the JSON error is the clear one
            raise DesignError(f"The design file is not valid JSON: {json_error}.") from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        if isinstance(exc, yaml.constructor.ConstructorError) and "tag" in str(exc.problem):
            raise DesignError(f"The design file is not valid YAML or JSON for a design: "
                              f"{exc.problem}{where}. Tags that construct objects (!!python/"
                              "...) are not allowed in design files; nothing was run."
                              ) from None
        hint = (". YAML indents with spaces, not tabs." if "\t" in text
                and "cannot start any token" in str(exc) else "")
        raise DesignError(f"The design file is not valid YAML or JSON: {exc}{hint}") from None
    except RecursionError:
        raise DesignError("The design file is nested too deeply to be a design.") from None


class _NoAliasComposer:
    """Refuses YAML aliases: nested aliases ("billion laughs") make a tiny file expand to
    gigabytes, and a design file never needs them."""

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise DesignError(
                f"The design file uses a YAML alias (*{event.anchor}) at line "
                f"{event.start_mark.line + 1}: aliases are not allowed in design files "
                "(write the values out).")
        return super().compose_node(parent, index)


_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DesignLoader(_NoAliasComposer, _PARSER):  # type: ignore[misc, valid-type]
    """SafeLoader with YAML 1.2 booleans: ``no``/``yes``/``on``/``off`` stay strings, so a
    hand-written ``values: [no, yes]`` means the factor values "no" and "yes"."""


_DesignLoader.yaml_implicit_resolvers = {
    key: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]  # noqa: B035
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_DesignLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


# --- values as strings --------------------------------------------------------------------
def _is_binary_number(series: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(series):
        return True
    if not pd.api.types.is_numeric_dtype(series):
        return False
    values = series.dropna()  # an empty column (all missing) is no outcome
    return len(values) > 0 and set(pd.unique(values)) <= {0, 1}


def describe_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per column with what an analyst needs to pick factors and the outcome.

    Returns
    -------
    pandas.DataFrame
        Columns ``column``, ``dtype``, ``n_unique``, ``n_missing``, ``examples`` (up to
        three values) and ``suggested_role`` (``factor``, ``outcome``, ``numeric``,
        ``text or id``).
    """
    rows = []
    n_rows = len(frame)
    for col in frame.columns:
        s = frame[col]
        n_unique = int(s.nunique(dropna=True))
        rows.append({
            "column": col,
            "dtype": str(s.dtype),
            "n_unique": n_unique,
            "n_missing": int(s.isna().sum()),
            "examples": ", ".join(format_value(v) for v in s.dropna().unique()[:3])[:80],
            "suggested_role": _suggest_role(s, n_unique, n_rows),
        })
    return pd.DataFrame(rows)


def _suggest_role(s: pd.Series, n_unique: int, n_rows: int) -> str:
    if _is_binary_number(s):
        return "outcome"
    if pd.api.types.is_float_dtype(s) and n_unique > 10:
        return "numeric"
    if pd.api.types.is_numeric_dtype(s) and n_unique > SUGGEST_MAX_VALUES:
        return "numeric"
    if 2 <= n_unique <= SUGGEST_MAX_VALUES and n_unique < max(n_rows, 2):
        if s.dtype == object or pd.api.types.is_string_dtype(s):
            lengths = s.dropna().astype(str).str.len()
            if len(lengths) and lengths.mean() > 60:
                return "text or id"
        return "factor"
    if n_unique <= 1:
        return "constant"
    return "text or id"


def make_factor(frame: pd.DataFrame, column: str, kind: FactorKind | None = None,
                reference: str | None = None) -> Factor:
    """A factor for ``column`` with its observed values (ordered) and a default reference."""
    if column not in frame.columns:
        raise DesignError(f"There is no column {column!r} in the results table.")
    _, values = factor_values(frame[column])
    if len(values) > MAX_FACTOR_VALUES:
        raise DesignError(too_many_values(column, len(values)))
    ordered = order_values(values)
    ref = str(reference) if reference is not None else default_reference(frame[column])
    if ref not in ordered:
        raise DesignError(
            f"Factor {column!r}: reference {ref!r} is not among its values "
            f"({', '.join(ordered[:10])}{', ...' if len(ordered) > 10 else ''})."
        )
    return Factor(name=column, kind=kind or guess_kind(column), values=tuple(ordered),
                  reference=ref)


#: Outcome names read as "1 = deviation" (harm words) and as "1 = fine" (success words).
def _not_value(series: pd.Series) -> str:
    """The value meaning "no" in a 0/1 or boolean column (``"false"`` or ``"0"``)."""
    return "false" if pd.api.types.is_bool_dtype(series) else "0"


def suggest_outcome(frame: pd.DataFrame) -> Outcome | None:
    """An outcome chosen by name and meaning among the 0/1 and boolean columns.

    A column named like a harm (``biased``, ``deviation``, ``harmful``) is used as it is
    (1 = deviation); else one named like a success (``correct``, ``is_correct``,
    ``accuracy``) maps to deviation = not correct (its 0/false value); else the first
    0/1 column whose name does not look like a factor (``cot``, ``model``,
    ``..._format``); else None.
    """
    binary = [c for c in frame.columns if _is_binary_number(frame[c])]
    for meaning in ("harm", "success"):
        for c in binary:
            if outcome_meaning(c) == meaning:
                if meaning == "harm":
                    return Outcome(column=c, mapping="binary")
                return Outcome(column=c, mapping="values", values=(_not_value(frame[c]),))
    for c in binary:
        words = re.split(r"[^a-z0-9]+", c.lower())
        if not any(w in words for w in (*MODEL_WORDS, *PROMPT_WORDS)):
            return Outcome(column=c, mapping="binary")
    return None


def suggest_design(frame: pd.DataFrame, *, max_values: int = SUGGEST_MAX_VALUES,
                   structure: Any = None) -> Design:
    """A starting design read from the table's structure (:mod:`analysis.structure`).

    The outcome comes from :func:`suggest_outcome`. Factors are the columns that
    :func:`analysis.structure.infer_structure` calls factors (never item texts, ids,
    answer options, answer keys, responses or the template) and that have 2 to
    ``max_values`` values, with the kind it found (a column crossed with the items is a
    prompt variant). Other 0/1 columns are factors (``cot`` on/off) unless their name
    reads as an outcome (``correct`` beside ``biased``): a second outcome is not a
    factor. The design's ``cluster`` is the inferred template and its ``prompt_unit``
    the inferred prompt unit; ``inferred`` keeps the reasons.

    Parameters
    ----------
    structure
        An :class:`analysis.structure.Structure` already inferred on ``frame``.
    """
    from analysis.structure import infer_structure

    check_frame(frame, "suggest_design")
    outcome = suggest_outcome(frame)
    if structure is None:
        structure = infer_structure(frame, outcome=outcome.column if outcome else None,
                                    max_values=max_values)
    return design_from_structure(frame, structure, outcome, max_values=max_values)


def design_from_structure(frame: pd.DataFrame, structure: Any, outcome: Outcome | None, *,
                          max_values: int = SUGGEST_MAX_VALUES,
                          factors: Sequence[Factor] | None = None) -> Design:
    """The suggested design of a table from its inferred structure (see
    :func:`suggest_design`); ``factors`` are the candidate factors with their values
    (default: :func:`make_factor` of every column), kept when the structure says factor."""
    n_rows = len(frame)
    candidates = {f.name: f for f in factors} if factors is not None else None
    chosen = []
    for col in frame.columns:
        if structure.role(col) != "factor" or (outcome is not None and col == outcome.column):
            continue
        s = frame[col]
        n_unique = int(s.nunique(dropna=False))
        role = _suggest_role(s, n_unique, n_rows)
        if role == "outcome":
            if outcome_meaning(col) or n_unique < 2:
                continue
            role = "factor"
        if role != "factor" or n_unique > max_values:
            continue
        kind = structure.factor_kinds.get(col) or guess_kind(col)
        if candidates is None:
            chosen.append(make_factor(frame, col, kind=kind))
        elif col in candidates:
            chosen.append(replace(candidates[col], kind=kind))
    unit = tuple(c for c in structure.prompt_unit if c in frame.columns)
    return Design(factors=tuple(chosen), outcome=outcome, cluster=structure.cluster,
                  prompt_unit=unit, inferred=structure.to_dict())


# --- checking a design against a table ---------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """One mismatch between a design and a table. ``severity`` is ``error`` or ``warning``."""

    severity: Literal["error", "warning"]
    message: str


def design_problems(design: Design, frame: pd.DataFrame, *, _memo: dict | None = None
                    ) -> list[Problem]:
    """Every mismatch between ``design`` and ``frame``.

    Errors (the design cannot be applied): a factor or outcome column that does not
    exist, a factor with more than ``MAX_FACTOR_VALUES`` values, values in the data
    that the design does not declare, a reference value absent from the data, an
    outcome column whose values do not fit its mapping. Warnings: declared values
    never seen in the data (they are legitimate empty cells for coverage).

    ``_memo`` (internal) receives the factor codes and the deviation computed on the
    way, so :func:`apply_design` does not compute them twice.
    """
    check_frame(frame, "design_problems")
    if not isinstance(design, Design):
        raise DesignError(f"A design (analysis.design.Design: Design.load(path), "
                          f"suggest_design(frame) ...) is needed, not "
                          f"{'nothing' if design is None else type(design).__name__}.")
    memo = {} if _memo is None else _memo
    problems: list[Problem] = []
    for f in design.factors:
        if f.name not in frame.columns:
            problems.append(Problem("error", f"Factor column {f.name!r} is not in the table."))
            continue
        codes, values = memo[f.name] = factor_values(frame[f.name])
        if len(values) > MAX_FACTOR_VALUES:
            problems.append(Problem("error", too_many_values(f.name, len(values))))
            continue
        counts = np.bincount(codes.to_numpy(), minlength=len(values))
        declared = set(f.values)  # a set: a 200k-value design checks in linear time
        undeclared = [(v, int(counts[i])) for i, v in enumerate(values) if v not in declared]
        if undeclared:
            listing = ", ".join(f"{v!r} ({c:,} rows)" for v, c in undeclared[:8])
            more = f" and {len(undeclared) - 8} more" if len(undeclared) > 8 else ""
            problems.append(Problem("error", f"Factor {f.name!r}: values in the data that the "
                                             f"design does not declare: {listing}{more}."))
        seen = set(values)
        if f.reference not in seen:
            problems.append(Problem("error", f"Factor {f.name!r}: the reference value "
                                             f"{f.reference!r} does not occur in the data."))
        unseen = [v for v in f.values if v not in seen and v != f.reference]
        if unseen:
            problems.append(Problem(
                "warning", f"Factor {f.name!r}: declared values never seen in the data "
                           f"(empty cells): {', '.join(repr(v) for v in unseen[:8])}"
                           f"{' ...' if len(unseen) > 8 else ''}."))
    if design.cluster is not None and design.cluster not in frame.columns:
        # the analyses then treat rows as independent and say so (analysis/clusters.py)
        problems.append(Problem("warning", f"Cluster column {design.cluster!r} is not in "
                                           "the table: rows are treated as independent "
                                           "(no cluster-robust uncertainty)."))
    elif design.cluster is not None:
        from analysis.structure import cluster_note

        note = cluster_note(frame, design.cluster)  # constant, or one row per cluster
        if note:
            problems.append(Problem("warning", note))
    absent_unit = [c for c in design.prompt_unit if c not in frame.columns]
    if absent_unit:
        # only coverage counts prompts (and says so itself): a warning, not an error
        problems.append(Problem("warning", f"Prompt unit column(s) not in the table: "
                                           f"{', '.join(repr(c) for c in absent_unit)}; "
                                           "coverage cannot count prompts."))
    if design.outcome is not None:
        col = design.outcome.column
        if col in frame.columns and len(frame) and frame[col].isna().all():
            problems.append(Problem("error", f"Outcome column {col!r} is empty: all "
                                             f"{len(frame):,} values are missing, so no row "
                                             "has a deviation. Choose another outcome."))
            return problems
        try:
            memo[DEVIATION] = deviation(frame, design.outcome)
        except DesignError as exc:
            problems.append(Problem("error", str(exc)))
    return problems


def check_design(design: Design, frame: pd.DataFrame) -> list[str]:
    """Raise :class:`DesignMismatchError` listing every error; return the warnings."""
    problems = design_problems(design, frame)
    errors = [p.message for p in problems if p.severity == "error"]
    if errors:
        raise DesignMismatchError(errors)
    return [p.message for p in problems if p.severity == "warning"]


# --- outcome mapping ----------------------------------------------------------------------
_TRUE = {"1", "true", "yes", "1.0"}
_FALSE = {"0", "false", "no", "0.0"}


def _as_text(series: pd.Series) -> pd.Series:
    """Trimmed, case-folded factor-value strings (``7``, ``7.0``, ``" 7 "`` -> ``"7"``)."""
    codes, values = factor_values(series)
    labels = np.array([v.strip().casefold() for v in values], dtype=object)
    return pd.Series(labels[codes.to_numpy()], index=series.index)


def deviation(frame: pd.DataFrame, outcome: Outcome) -> pd.Series:
    """The binary deviation of every row: 1.0, 0.0, or NaN where the outcome is missing.

    Raises
    ------
    DesignError
        The outcome column (or the compared column) is absent, or its values do not
        fit the mapping (non-0/1 values for ``binary``, non-numbers for a threshold).
    """
    col = outcome.column
    if col not in frame.columns:
        raise DesignError(f"Outcome column {col!r} is not in the table.")
    s = frame[col]
    missing = s.isna()
    if outcome.mapping == "binary":
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            bad = ~missing & ~s.isin([0, 1])
            out = s.astype(float)
        else:
            text = s.astype(str).str.strip().str.lower()
            bad = ~missing & ~text.isin(_TRUE | _FALSE)
            out = text.isin(_TRUE).astype(float)
        if bad.any():
            examples = ", ".join(repr(format_value(v)) for v in pd.unique(s[bad])[:5])
            raise DesignError(
                f"Outcome {col!r} should be 0/1 or true/false, but {int(bad.sum()):,} rows hold "
                f"other values ({examples}). Map it with a set of deviating values, a "
                "comparison column or a threshold instead."
            )
    elif outcome.mapping == "values":
        codes, values = factor_values(s)
        deviating = set(outcome.values)
        hit = np.array([v in deviating for v in values], dtype=float)
        out = pd.Series(hit[codes.to_numpy()], index=s.index)
        unknown = set(outcome.values) - set(values)
        if unknown == set(outcome.values):
            raise DesignError(
                f"Outcome {col!r}: none of the deviating values "
                f"({', '.join(sorted(unknown))}) occurs in the column; its values are "
                f"{', '.join(sorted(values)[:10])}."
            )
    elif outcome.mapping == "equals":
        other = outcome.other_column
        if other not in frame.columns:
            raise DesignError(f"Comparison column {other!r} (for outcome {col!r}) is not in "
                              "the table.")
        a, b = _as_text(s), _as_text(frame[other])  # 1 and 1.0 are the same value
        missing = missing | frame[other].isna()
        out = (a == b).astype(float)
    else:
        numbers = pd.to_numeric(s, errors="coerce")
        bad = numbers.isna() & ~missing
        if bad.any():
            examples = ", ".join(repr(str(v)) for v in pd.unique(s[bad])[:5])
            raise DesignError(
                f"Outcome {col!r} needs numbers for a threshold, but {int(bad.sum()):,} rows "
                f"are not numeric ({examples})."
            )
        out = (numbers < outcome.threshold) if outcome.mapping == "below" else (
            numbers > outcome.threshold)
        out = out.astype(float)
    out = out.where(~missing, np.nan)
    out.name = DEVIATION
    return out


# --- applying a design --------------------------------------------------------------------
def apply_design(frame: pd.DataFrame, design: Design) -> pd.DataFrame:
    """The results table in analysis form.

    Checks the design (:func:`check_design`), then returns a copy of ``frame`` whose
    factor columns are ordered categoricals over the declared values and, when the
    design has an outcome, with a float column ``deviation`` (1.0 / 0.0 / NaN where the
    outcome is missing). Every other column is kept as it was.

    Raises
    ------
    DesignMismatchError
        Listing every mismatch between the design and the table.
    """
    memo: dict = {}
    problems = design_problems(design, frame, _memo=memo)
    errors = [p.message for p in problems if p.severity == "error"]
    if errors:
        raise DesignMismatchError(errors)
    out = frame.copy()
    for f in design.factors:
        codes, values = memo[f.name]
        position = {v: i for i, v in enumerate(f.values)}
        remap = np.array([position[v] for v in values], dtype=np.int64)
        out[f.name] = pd.Categorical.from_codes(remap[codes.to_numpy()],
                                                categories=list(f.values), ordered=True)
    if design.outcome is not None:
        if DEVIATION in frame.columns and not (
                design.outcome.column == DEVIATION and design.outcome.mapping == "binary"):
            out = out.rename(columns={DEVIATION: f"{DEVIATION}_original"})
        out[DEVIATION] = memo[DEVIATION]
    return out


def parse_assignments(items: Sequence[str], what: str = "--reference") -> dict[str, str]:
    """Parse ``["a=x", "b=y"]`` into ``{"a": "x", "b": "y"}`` (CLI helper)."""
    out = {}
    for item in items:
        if "=" not in item:
            raise DesignError(f"{what} takes FACTOR=VALUE, got {item!r}.")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out
