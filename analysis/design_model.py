"""The design model: :class:`Factor`, :class:`Outcome` and :class:`Design`.

A :class:`Design` says which columns of a results table are *factors* (domain, prompt
or model), the ordered values each may take, the *reference* (control) value of each,
and how an outcome column maps to the binary *deviation* (``docs/methods.md``,
vocabulary). It is a frozen dataclass that round-trips through YAML or JSON
(:mod:`analysis.design_files`). Import these names from :mod:`analysis.design`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from analysis import design_files
from analysis.errors import DesignError
from analysis.prepare import Step, parse_recipe
from analysis.values import KINDS, MAX_FACTOR_VALUES, FactorKind

__all__ = ["KINDS", "MAPPINGS", "MAX_FACTOR_VALUES", "OUTCOME_TYPES", "Design", "Factor",
           "FactorKind", "Mapping_", "Outcome", "OutcomeType"]

Mapping_ = Literal["binary", "values", "equals", "below", "above"]
MAPPINGS: tuple[str, ...] = get_args(Mapping_)
OutcomeType = Literal["binary", "continuous"]
OUTCOME_TYPES: tuple[str, ...] = get_args(OutcomeType)



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

    #: Combinations that cannot exist (:mod:`analysis.constraints`; the ``constraints:``
    #: block). None: none declared (the planner then uses the proposed ones and says so);
    #: ``()``: declared none.
    constraints: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if self.constraints is not None:
            from analysis.constraints import Constraint, parse_constraints

            items = list(self.constraints)
            object.__setattr__(self, "constraints", tuple(
                c if isinstance(c, Constraint) else parse_constraints([c])[0] for c in items))
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
        constraints = self.constraints if self.constraints is None else tuple(
            r for r in (c.restricted(names) for c in self.constraints) if r is not None)
        kept = replace(self, factors=tuple(self.factor(n) for n in names),
                       constraints=constraints)
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

    def with_constraints(self, constraints: Iterable[Any] | None) -> Design:
        """A copy with these constraints (:class:`analysis.constraints.Constraint` or
        their file form; None: none declared)."""
        return replace(self, constraints=None if constraints is None else tuple(constraints))

    def with_covariates(self, covariates: Iterable[str]) -> Design:
        """A copy with these numeric covariates."""
        return replace(self, covariates=tuple(covariates))

    # --- serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A plain dict (``version``, ``factors``, ``outcome``, ``recipe``, ``cluster`` if set)."""
        return design_files.design_to_dict(self)

    def with_recipe(self, recipe: Iterable[Step | Mapping[str, Any]]) -> Design:
        """A copy with these Prepare steps (see :mod:`analysis.prepare`)."""
        return replace(self, recipe=parse_recipe(list(recipe)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Design:
        """Inverse of :meth:`to_dict`; :class:`DesignError` names what is malformed."""
        return cls(**design_files.design_fields(data, Factor, Outcome))

    def to_yaml(self) -> str:
        """The design as YAML text."""
        return design_files.dump_yaml(self.to_dict())

    def to_json(self) -> str:
        """The design as JSON text."""
        return design_files.dump_json(self.to_dict())

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
        return cls.from_dict(design_files.parse_design_text(text))

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
        """Write to ``path`` (atomically): JSON if it ends in ``.json``, else YAML."""
        design_files.write_design_file(path, self.to_dict())

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

        return design_files.read_design_file(path, cls.from_file_bytes)
