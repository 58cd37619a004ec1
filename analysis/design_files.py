"""Design files: YAML / JSON text <-> the fields of a :class:`~analysis.design.Design`.

Reading is safe (no Python objects, no YAML aliases, capped size and number of declared
values, :mod:`analysis.limits`) and every malformed part is a :class:`DesignError` that
says what and where. The model (:mod:`analysis.design_model`) calls these functions from
its ``to_dict`` / ``from_dict`` / ``from_text`` / ``load`` / ``save`` methods; this module
does not import the model (the factor and outcome classes are passed in).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from analysis.errors import AnalysisError, DesignError, LimitError
from analysis.limits import MAX_DESIGN_SIZE, MAX_DESIGN_VALUES, max_bytes
from analysis.prepare import PrepareError, Step, parse_recipe

__all__ = ["DESIGN_FORMAT_VERSION", "design_fields", "design_to_dict", "dump_json",
           "dump_yaml", "parse_design_text", "read_design_file", "write_design_file"]

DESIGN_FORMAT_VERSION = 1


def design_to_dict(design: Any) -> dict[str, Any]:
    """A plain dict (``version``, ``factors``, ``outcome``, ``recipe``, ``cluster`` if set)
    of a :class:`~analysis.design.Design`."""
    out: dict[str, Any] = {"version": DESIGN_FORMAT_VERSION}
    if design.name:
        out["name"] = design.name
    out["factors"] = [
        {"name": f.name, "kind": f.kind, "reference": f.reference, "values": list(f.values)}
        for f in design.factors
    ]
    if design.outcome is not None:
        o = {k: v for k, v in asdict(design.outcome).items() if v not in (None, ())}
        if o.get("type") == "binary":  # the default: files stay as they were
            del o["type"]
        if "values" in o:
            o["values"] = list(o["values"])
        out["outcome"] = o
    if design.recipe:
        out["recipe"] = [step.to_dict() for step in design.recipe]
    if design.cluster:
        out["cluster"] = design.cluster
    if design.polarity:
        out["polarity"] = dict(design.polarity)
    if design.prompt_unit:
        out["prompt_unit"] = list(design.prompt_unit)
    if design.covariates:
        out["covariates"] = list(design.covariates)
    if design.constraints is not None:
        out["constraints"] = [c.to_dict() for c in design.constraints]
    if design.inferred:
        out["structure"] = dict(design.inferred)
    return out


def dump_yaml(data: Mapping[str, Any]) -> str:
    """A design dict as YAML text (keys in their order)."""
    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True)


def dump_json(data: Mapping[str, Any]) -> str:
    """A design dict as JSON text."""
    return json.dumps(dict(data), indent=2, ensure_ascii=False)


def design_fields(data: Mapping[str, Any], factor_type: Callable[..., Any],
                  outcome_type: Callable[..., Any]) -> dict[str, Any]:
    """The keyword arguments of a :class:`~analysis.design.Design` read from a plain dict
    (the inverse of :func:`design_to_dict`); ``factor_type`` / ``outcome_type`` build each
    factor and the outcome. :class:`DesignError` names what is malformed."""
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
        factors.append(factor_type(
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
        outcome = outcome_type(**o)
    recipe: tuple[Step, ...] = ()
    if data.get("recipe"):
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
    from analysis.constraints import parse_constraints

    constraints = parse_constraints(data["constraints"]) if "constraints" in data else None
    return dict(factors=tuple(factors), outcome=outcome, name=str(data.get("name", "")),
                constraints=constraints,
               recipe=recipe, cluster=cluster or None, polarity=tuple(polarity.items()),
               prompt_unit=tuple(str(c) for c in unit),
               covariates=tuple(_scalar(c, f"Covariate #{j}")
                                for j, c in enumerate(covariates, start=1)),
               inferred=inferred or None)


def parse_design_text(text: str | bytes) -> Any:
    """The data of design text (what :meth:`~analysis.design.Design.from_text` parses:
    UTF-8 YAML or JSON, safely, aliases refused, size capped; :class:`DesignError` or
    :class:`LimitError` otherwise)."""
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
    return _parse_design_text(text) or {}


def read_design_file(path: str | Path, parse: Callable[[bytes], Any]) -> Any:
    """``parse`` of the bytes of the design file at ``path``; every :class:`DesignError`
    and :class:`LimitError` names the path (see :meth:`~analysis.design.Design.load`)."""
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
        return parse(data)
    except LimitError as exc:
        raise LimitError(f"{path}: {exc}") from None
    except DesignError as exc:
        if type(exc) is not DesignError:
            raise
        raise DesignError(f"{path}: {exc}") from None


def write_design_file(path: str | Path, data: Mapping[str, Any]) -> None:
    """Write a design dict atomically to ``path``: JSON if it ends in ``.json``, else YAML."""
    from analysis.safe_write import atomic_write_text

    path = Path(path)
    atomic_write_text(path, dump_json(data) if path.suffix == ".json" else dump_yaml(data))


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
            return json.loads(text, object_pairs_hook=_unique_keys)
        except DesignError:
            raise
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
    except DesignError:
        raise
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) ..."
        if "digits" in str(exc):
            raise DesignError("The design file holds a number of more than 4,300 digits; a "
                              "factor value or threshold that long is not a design value "
                              "(quote it to make it text).") from None
        raise DesignError(f"The design file holds a value that cannot be read: {exc}.") \
            from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (``json.loads`` keeps the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DesignError(f"The design file gives the key {key!r} twice in one object; "
                              "only one can count, so neither is used. Remove one.")
        out[key] = value
    return out


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
    hand-written ``values: [no, yes]`` means the factor values "no" and "yes". A key given
    twice in one mapping is refused (PyYAML keeps the last one silently: a second
    ``outcome:`` replaced the first)."""

    def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN201 - PyYAML's
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.setdefault(key, line)
            except TypeError:  # an unhashable key: PyYAML's own error follows
                continue
            if first != line:
                raise DesignError(f"The design file gives the key {key!r} twice in one "
                                  f"mapping (lines {first} and {line}); only one can count, "
                                  "so neither is used. Remove one.")
        return super().construct_mapping(node, deep=deep)


_DesignLoader.yaml_implicit_resolvers = {
    key: [r for r in resolvers if r[0] != "tag:yaml.org,2002:bool"]  # noqa: B035
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_DesignLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))

