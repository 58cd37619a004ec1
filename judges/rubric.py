"""Rubrics: what each judge metric measures, its five levels and its prompt template.

Rubrics are data files (``judges/rubrics/<metric>.yaml``), validated into a frozen
:class:`Rubric`. Their ``id`` and ``version`` enter the cache key, so editing a rubric
and bumping its version makes the judge ask again instead of reusing old answers.

A rubric file holds::

    id: fourstage-ics          # stable identifier
    version: "2.0"             # bump on every change that can alter a judgement
    metric: ics                # output column
    name: Idea consistency score (ICS)
    stages: [1, 4]
    measures: what the metric measures (prose)
    levels:                    # exactly 1..5
      1: {label: ..., description: ...}
    texts:                     # the columns shown to the judge, in order
      - {field: question, label: QUESTION}
      - {field: story_question, label: ..., optional: true}
    system: the system message
    template: the user message, with $name, $measures, $levels, $texts placeholders

The five level descriptions are written in our own words (``docs/methods.md`` section 8).

Variants: ``judges/rubrics/cot.yaml`` turns each rubric into a chain-of-thought one
(:func:`variant_rubrics`; ``load_rubrics("cot")``, ``--rubrics cot``): same scale and
texts, the judge writes numbered steps before the score (FairMonitor's Table 3 compares
such a judge with the direct one; ``docs/judges.md``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, replace
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from analysis.judge_stats import columns as C
from judges.errors import RubricError

__all__ = [
    "Level", "Rubric", "SCORES", "TextSlot", "VARIANTS", "load_rubric_file", "load_rubrics",
    "rubric_from_dict", "variant_rubrics",
]


SCORES: tuple[int, ...] = (1, 2, 3, 4, 5)
_PLACEHOLDERS = {"name", "measures", "levels", "texts"}
_LABEL = re.compile(r"^[A-Z][A-Z0-9 ]*$")


@dataclass(frozen=True)
class TextSlot:
    """One text shown to the judge: the input column ``field`` under ``label``."""

    field: str
    label: str
    optional: bool = False


@dataclass(frozen=True)
class Level:
    """One level of the 1-5 scale."""

    score: int
    label: str
    description: str


@dataclass(frozen=True)
class Rubric:
    """A validated rubric (see the module docstring for the file layout)."""

    id: str
    version: str
    metric: str
    name: str
    stages: tuple[int, ...]
    measures: str
    levels: tuple[Level, ...]
    texts: tuple[TextSlot, ...]
    system: str
    template: str

    @property
    def key(self) -> str:
        """``id@version``, the rubric's part of the cache key and of the ``judge`` column."""
        return f"{self.id}@{self.version}"

    @cached_property
    def levels_text(self) -> str:
        """The scale as lines ``1 = No consistency: ...``, from the lowest score up to 5.

        The order follows the paper's scoring tables (1 first), so a judge reads the scale
        the way the levels were defined.
        """
        return "\n".join(f"{lv.score} = {lv.label}: {lv.description}"
                         for lv in sorted(self.levels, key=lambda lv: lv.score))


def _require(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data or data[key] in (None, ""):
        raise RubricError(f"{where}: the field {key!r} is missing or empty.")
    return data[key]


def rubric_from_dict(data: dict[str, Any], *, where: str = "rubric") -> Rubric:
    """Validate a parsed rubric file into a :class:`Rubric`.

    Raises
    ------
    RubricError
        A field is missing or empty; ``levels`` is not exactly 1-5 with a label and a
        description each; a text slot has no ``field``/``label`` or a label that is not
        upper-case words (labels become delimiters); ``template`` uses a placeholder other
        than ``$name``, ``$measures``, ``$levels``, ``$texts`` or lacks ``$texts``;
        ``metric`` or ``stages`` disagree with ``analysis.judge_stats.columns.STAGE_METRICS``.
    """
    if not isinstance(data, dict):
        raise RubricError(f"{where}: a rubric file must hold a mapping.")
    metric = str(_require(data, "metric", where))
    if metric not in C.METRICS:
        raise RubricError(f"{where}: metric {metric!r} is not one of {', '.join(C.METRICS)}.")
    stages = tuple(int(s) for s in _require(data, "stages", where))
    expected = tuple(s for s, ms in C.STAGE_METRICS.items() if metric in ms)
    if stages != expected:
        raise RubricError(f"{where}: metric {metric!r} judges stages {expected}, "
                          f"the file says {stages}.")
    raw_levels = _require(data, "levels", where)
    if not isinstance(raw_levels, dict) or sorted(int(k) for k in raw_levels) != list(SCORES):
        raise RubricError(f"{where}: 'levels' must describe exactly the scores 1, 2, 3, 4, 5.")
    levels = []
    for k, v in sorted(raw_levels.items(), key=lambda kv: int(kv[0])):
        if not isinstance(v, dict) or not v.get("label") or not v.get("description"):
            raise RubricError(f"{where}: level {k} needs a 'label' and a 'description'.")
        levels.append(Level(int(k), str(v["label"]).strip(), " ".join(str(v["description"])
                                                                         .split())))
    slots = []
    for i, t in enumerate(_require(data, "texts", where), start=1):
        if not isinstance(t, dict) or not t.get("field") or not t.get("label"):
            raise RubricError(f"{where}: text #{i} needs a 'field' and a 'label'.")
        if not _LABEL.match(str(t["label"])):
            raise RubricError(f"{where}: text label {t['label']!r} must be upper-case words.")
        slots.append(TextSlot(str(t["field"]), str(t["label"]), bool(t.get("optional", False))))
    template = str(_require(data, "template", where))
    used = set(string.Template(template).get_identifiers())
    unknown = used - _PLACEHOLDERS
    if unknown:
        raise RubricError(f"{where}: template uses unknown placeholder(s) "
                          f"{', '.join('$' + u for u in sorted(unknown))}; allowed: "
                          f"{', '.join('$' + p for p in sorted(_PLACEHOLDERS))}.")
    if "texts" not in used:
        raise RubricError(f"{where}: template must include $texts.")
    return Rubric(
        id=str(_require(data, "id", where)),
        version=str(_require(data, "version", where)),
        metric=metric,
        name=str(_require(data, "name", where)).strip(),
        stages=stages,
        measures=" ".join(str(_require(data, "measures", where)).split()),
        levels=tuple(levels),
        texts=tuple(slots),
        system=str(_require(data, "system", where)).strip(),
        template=template.strip(),
    )


def load_rubric_file(path: str | Path) -> Rubric:
    """Read and validate one rubric YAML file."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RubricError(f"{path}: no such rubric file.") from None
    except yaml.YAMLError as exc:
        raise RubricError(f"{path}: not valid YAML: {exc}") from None
    return rubric_from_dict(data, where=str(path))


@cache
def _bundled() -> dict[str, Rubric]:
    folder = resources.files("judges") / "rubrics"
    out = {}
    for metric in C.METRICS:
        resource = folder / f"{metric}.yaml"
        data = yaml.safe_load(resource.read_text(encoding="utf-8"))
        out[metric] = rubric_from_dict(data, where=f"judges/rubrics/{metric}.yaml")
    return out


#: Bundled rubric variants (``judges/rubrics/<name>.yaml``), usable as ``load_rubrics(name)``.
VARIANTS: tuple[str, ...] = ("cot",)


@cache
def variant_rubrics(name: str) -> dict[str, Rubric]:
    """The bundled rubrics turned into variant ``name`` (``cot``: chain of thought).

    Each rubric keeps its metric, scale, texts and system message; its closing instruction
    (the line ``replaces`` and what follows) becomes the variant's ``reply``; its id gets
    ``-<name>`` and its version ``+<name><variant version>``.
    """
    if name not in VARIANTS:
        raise RubricError(f"No rubric variant {name!r} (bundled: {', '.join(VARIANTS)}).")
    resource = resources.files("judges") / "rubrics" / f"{name}.yaml"
    spec = yaml.safe_load(resource.read_text(encoding="utf-8"))
    where = f"judges/rubrics/{name}.yaml"
    marker = str(_require(spec, "replaces", where))
    reply = str(_require(spec, "reply", where)).strip()
    version = str(_require(spec, "version", where))
    out = {}
    for metric, rubric in _bundled().items():
        at = rubric.template.find(marker)
        if at < 0:
            raise RubricError(f"{where}: the {metric} rubric has no line {marker!r} to replace.")
        out[metric] = replace(rubric, id=f"{rubric.id}-{name}",
                              version=f"{rubric.version}+{name}{version}",
                              template=rubric.template[:at] + reply)
    return out


def load_rubrics(folder: str | Path | None = None) -> dict[str, Rubric]:
    """The five rubrics, keyed by metric (``ics``, ``tcs``, ``pcs``, ``etcs``, ``sbas``).

    Parameters
    ----------
    folder
        A folder with ``<metric>.yaml`` files to use instead of the bundled ones (a
        metric without a file there keeps the bundled rubric), or the name of a bundled
        variant (:data:`VARIANTS`: ``"cot"``, the chain-of-thought rubrics).
    """
    if folder is not None and str(folder) in VARIANTS and not Path(folder).is_dir():
        return dict(variant_rubrics(str(folder)))
    rubrics = dict(_bundled())
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise RubricError(f"{folder}: no such rubric folder.")
        for metric in C.METRICS:
            path = folder / f"{metric}.yaml"
            if path.exists():
                rubrics[metric] = load_rubric_file(path)
    return rubrics
