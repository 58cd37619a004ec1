"""One options object per analysis: each option written once.

An analysis's options are a frozen dataclass (a subclass of :class:`Options`) whose
fields are declared with :func:`option`: the name (the keyword argument of the analysis
function), the default, the help text, the choices or value type, the CLI flag. Every
place that shows or takes the options derives from it:

- the CLI: :meth:`Options.add_arguments` adds the flags to a subcommand's parser and
  :meth:`Options.from_args` reads them back;
- the API: :meth:`Options.coerce` checks names, choices and types (strings accepted where
  a user would type them) and :meth:`Options.kwargs` gives the function's arguments;
- the report: :meth:`Options.settings` is a section's default settings;
- "Copy as CLI / Python": :meth:`Options.cli_options` (the flags that differ from the
  defaults) and :meth:`Options.changed`;
- the pages: :meth:`Options.default`, :meth:`Options.choices`, :meth:`Options.help` give a
  widget its default, its choices and its help.

Adding an option is one :func:`option` line plus its use in the analysis
(``docs/architecture.md``, "Add an option"). ``tests/analysis/test_options.py`` walks
every registered analysis and checks that the CLI, the report and the copy text agree.

This package imports nothing heavy (no pandas): building the CLI's parser imports it.
"""

from __future__ import annotations

import argparse
import dataclasses
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from analysis.errors import AnalysisError

__all__ = [
    "FROM_DESIGN",
    "OptionError",
    "Options",
    "ReportSection",
    "Spec",
    "all_options",
    "current_names",
    "option",
    "options_for",
    "register",
]

#: The cluster option's default: the design's cluster (``--cluster COL`` names another,
#: ``--no-cluster`` none: independent rows).
FROM_DESIGN: str = "<the design's cluster>"

#: Option modules, imported by :func:`all_options` (one per analysis family): every module
#: of this package but the shared ``common`` and ``types``, found on disk, so a new
#: analysis's ``analysis/options/<x>.py`` registers itself.
MODULES = sorted(m.name for m in pkgutil.iter_modules(__path__)
                 if m.name not in ("common", "types"))

_REGISTRY: dict[str, type[Options]] = {}

#: Names the options had before they were written once (report settings saved earlier
#: still load: :meth:`Options.from_settings` reads them under the one name).
LEGACY_NAMES: dict[str, str] = {"random_state": "seed", "n_boot": "n_resamples",
                                "n_permutations": "n_resamples", "replicates": "n_resamples"}

OptionsT = TypeVar("OptionsT", bound="Options")


def current_names(settings: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    """``settings`` with each :data:`LEGACY_NAMES` key renamed to its one name when
    ``known`` (a section's setting names) has that name and not the old one (a report
    saved before the rename still loads; the new name wins when both are given)."""
    known = set(known)
    out = dict(settings)
    for old, new in LEGACY_NAMES.items():
        if old in out and old not in known and new in known:
            value = out.pop(old)
            out.setdefault(new, value)
    return out


class OptionError(AnalysisError):
    """An unknown option name, a value outside its choices or of the wrong type."""


@dataclass(frozen=True)
class ReportSection:
    """One report section, declared once (``analysis.report`` derives ``SECTIONS``,
    ``TITLES``, the default settings and the builders from these records).

    An analysis declares its section on its options class (``REPORT =
    ReportSection("Title", after="cohorts")``); the report's own sections are listed in
    ``analysis.report.REPORT_SECTIONS``.

    Attributes
    ----------
    title
        The section's heading.
    name
        The section's name (settings key, ``--sections``); "": the options' ``NAME``.
    after
        The section a full report lists it after; "": at the end.
    builder
        ``builder(section, results, design, settings)`` filling the section; None: the
        options' ``FUNCTION`` called with ``options=<Options>.from_settings(settings)``,
        its ``Result.table`` and notes put in the section.
    defaults
        ``defaults(results, design) -> settings``; None: the options' defaults and
        ``where: {}`` (a report built-in's branch of ``default_settings``).
    options
        The options class (set by the report when it reads a declaration).
    """

    title: str
    name: str = ""
    after: str = ""
    builder: Callable[..., None] | None = None
    defaults: Callable[..., dict[str, Any]] | None = None
    options: Any = None


@dataclass(frozen=True)
class Spec:
    """How one option is shown and taken (the metadata of a dataclass field).

    Attributes
    ----------
    help
        One sentence; ``%(default)s`` is replaced by the default (argparse does the same).
    flag
        The CLI flag without ``--``; ``""``: the field name with dashes; None: not on the
        command line (a page- or API-only option).
    choices
        The allowed values.
    type
        Parses a string into a value and checks it (``analysis.options.types``).
    metavar
        The value's name in ``--help``.
    negate
        A True-by-default switch whose flag (this name) turns it off (``no-lr``).
    repeat
        A tuple given by repeating the flag (``--interaction a:b --interaction a:c``).
    switch
        A choice whose CLI flag is a bare switch selecting this value
        (``--saged-conventions``: ``conventions="saged"``).
    cluster
        A cluster column: ``--cluster COL`` / ``--no-cluster``, default :data:`FROM_DESIGN`.
    call
        Whether it is a keyword argument of the analysis function (False: how the result
        is drawn or printed, e.g. a figure's scale).
    label
        The page widget's label.
    group
        The CLI help section.
    """

    help: str
    flag: str | None = ""
    choices: tuple[Any, ...] | None = None
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    negate: str | None = None
    repeat: bool = False
    switch: Any = None
    cluster: bool = False
    call: bool = True
    label: str | None = None
    group: str | None = None


def option(default: Any, help: str, **spec: Any) -> Any:
    """Declare an option: a dataclass field with its :class:`Spec` (keyword arguments).

    Lists are given as tuples (the options are frozen and hashable).
    """
    if isinstance(default, (list, dict, set)):
        raise TypeError("an option's default must be immutable: use a tuple")
    return field(default=default, metadata={"spec": Spec(help=help, **spec)})


def register(cls: type[OptionsT]) -> type[OptionsT]:
    """Class decorator: make ``cls`` the options of the analysis ``cls.NAME``."""
    _REGISTRY[cls.NAME] = cls
    return cls


def all_options() -> dict[str, type[Options]]:
    """Every analysis's options class, by analysis name."""
    import importlib

    for module in MODULES:
        importlib.import_module(f"analysis.options.{module}")
    return dict(_REGISTRY)


def options_for(name: str) -> type[Options]:
    """The options class of the analysis ``name`` (:class:`OptionError` if unknown)."""
    known = all_options()
    if name not in known:
        raise OptionError(f"No analysis called {name!r}: use one of {', '.join(sorted(known))}.")
    return known[name]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _flag(name: str, spec: Spec) -> str | None:
    if spec.flag is None:
        return None
    return spec.flag or name.replace("_", "-")


class Options:
    """Base class of an analysis's options (subclasses are frozen, keyword-only dataclasses).

    Class attributes: ``NAME`` (the analysis), ``COMMAND`` (its CLI subcommand),
    ``FROM_DATA`` (options whose None default is resolved from the data).
    """

    NAME: ClassVar[str] = ""
    COMMAND: ClassVar[str] = ""
    #: Options whose default None means "chosen from the table and design" (a subgroup
    #: level from the number of factors ...): a report section or page resolves it.
    FROM_DATA: ClassVar[tuple[str, ...]] = ()
    #: The analysis's report section (:class:`ReportSection`), or None: none.
    REPORT: ClassVar[ReportSection | None] = None

    # --- the declaration ------------------------------------------------------------------
    @classmethod
    def specs(cls) -> dict[str, tuple[Any, Spec]]:
        """Option name -> (default, :class:`Spec`), in declaration order."""
        out = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if "spec" in f.metadata:
                out[f.name] = (f.default, f.metadata["spec"])
        return out

    @classmethod
    def spec(cls, name: str) -> Spec:
        """The :class:`Spec` of option ``name``."""
        try:
            return cls.specs()[name][1]
        except KeyError:
            raise OptionError(cls._unknown(name)) from None

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of option ``name`` (a page widget starts from it)."""
        try:
            return cls.specs()[name][0]
        except KeyError:
            raise OptionError(cls._unknown(name)) from None

    @classmethod
    def choices(cls, name: str) -> list[Any]:
        """The allowed values of option ``name`` (a page's radio or select box)."""
        return list(cls.spec(name).choices or ())

    @classmethod
    def help(cls, name: str) -> str:
        """The help text of option ``name`` with its default filled in."""
        spec = cls.spec(name)
        return spec.help % {"default": cls.default(name)}

    @classmethod
    def label(cls, name: str) -> str:
        """The page widget's label of option ``name``."""
        return cls.spec(name).label or name.replace("_", " ").capitalize()

    @classmethod
    def _unknown(cls, name: str) -> str:
        return (f"{cls.NAME} has no option {name!r}: its options are "
                f"{', '.join(cls.specs())}.")

    # --- the command line ---------------------------------------------------------------
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, *,
                      skip: Iterable[str] = ()) -> None:
        """Add each option's flag to ``parser`` (help sections by :attr:`Spec.group`)."""
        skip = set(skip)
        groups: dict[str, Any] = {}
        for name, (default, spec) in cls.specs().items():
            flag = _flag(name, spec)
            if flag is None or name in skip:
                continue
            where = parser
            if spec.group:
                if spec.group not in groups:
                    groups[spec.group] = parser.add_argument_group(spec.group)
                where = groups[spec.group]
            if spec.cluster:
                which = where.add_mutually_exclusive_group()
                which.add_argument(f"--{flag}", metavar=spec.metavar or "COL",
                                   help=spec.help)
                which.add_argument(f"--no-{flag}", action="store_true",
                                   help="independent rows: no cluster even when the design "
                                        "names one or one is inferred (labelled so in the output)")
            elif spec.negate:
                where.add_argument(f"--{spec.negate}", dest=name, action="store_false",
                                   help=spec.help)
            elif spec.switch is not None:
                where.add_argument(f"--{flag}", dest=name, action="store_const",
                                   const=spec.switch, default=default, help=spec.help)
            elif default is False and not spec.choices and spec.type is None:
                where.add_argument(f"--{flag}", dest=name, action="store_true",
                                   help=spec.help)
            elif spec.repeat:
                where.add_argument(f"--{flag}", dest=name, action="append", default=[],
                                   metavar=spec.metavar, type=spec.type, help=spec.help)
            else:
                where.add_argument(f"--{flag}", dest=name, default=default, type=spec.type,
                                   choices=spec.choices, metavar=spec.metavar,
                                   help=spec.help)

    @classmethod
    def from_args(cls: type[OptionsT], args: argparse.Namespace) -> OptionsT:
        """The options the parsed command line gives (absent flags: the defaults)."""
        values = {}
        for name, (_, spec) in cls.specs().items():
            if _flag(name, spec) is None:
                continue
            if spec.cluster:
                flag = _flag(name, spec).replace("-", "_")
                if getattr(args, f"no_{flag}", False):
                    values[name] = None
                else:
                    values[name] = getattr(args, flag, None) or FROM_DESIGN
            elif hasattr(args, name):
                value = getattr(args, name)
                values[name] = tuple(value) if spec.repeat else value
        return cls(**values)

    def cli_options(self) -> tuple[tuple[str, Any], ...]:
        """``(flag, value)`` pairs of the options that differ from the defaults, for
        :func:`analysis.reproduce.cli_command` (True: a bare flag; repeated flags listed
        once per value)."""
        out: list[tuple[str, Any]] = []
        for name, (default, spec) in self.specs().items():
            flag = _flag(name, spec)
            value = getattr(self, name)
            if flag is None or value == default:
                continue
            if spec.cluster:
                out.append((f"no-{flag}", True) if value is None else (flag, value))
            elif spec.negate:
                out.append((spec.negate, True))
            elif spec.switch is not None:
                out.append((flag, True))
            elif spec.repeat:
                out += [(flag, v) for v in value]
            else:
                out.append((flag, value))
        return tuple(out)

    # --- the API ------------------------------------------------------------------------
    @classmethod
    def coerce(cls: type[OptionsT], options: OptionsT | Mapping[str, Any] | None = None, /,
               **overrides: Any) -> OptionsT:
        """Options from an options object, a mapping and/or keyword arguments.

        Names are checked (an unknown one is an :class:`OptionError` listing the known
        ones), strings are parsed by the option's type, values outside the choices are
        refused, lists become tuples.
        """
        if isinstance(options, cls):
            values = dataclasses.asdict(options)
        elif options is None:
            values = {}
        elif isinstance(options, Mapping):
            values = dict(options)
        else:
            raise OptionError(f"options must be a {cls.__name__} or a mapping, not "
                              f"{type(options).__name__}.")
        values.update(overrides)
        specs = cls.specs()
        out = {}
        for name, value in values.items():
            if name not in specs:
                raise OptionError(cls._unknown(name))
            out[name] = cls._check(name, value, *specs[name])
        return cls(**out)

    @classmethod
    def _check(cls, name: str, value: Any, default: Any, spec: Spec) -> Any:
        if spec.cluster and value == FROM_DESIGN:
            return FROM_DESIGN
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(default, bool) and not spec.choices:
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                value = value.strip().lower() == "true"
            if not isinstance(value, bool):
                raise OptionError(f"{name} is True or False, not {value!r}.")
            return value
        if spec.type is not None and value is not None and not spec.repeat:
            try:
                value = spec.type(value)
            except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
                raise OptionError(f"{name}: {exc}") from None
        if spec.choices and value not in spec.choices and not (value is None and default is None):
            raise OptionError(f"{name} must be one of {', '.join(map(repr, spec.choices))}, "
                              f"not {value!r}.")
        return value

    def replace(self: OptionsT, **changes: Any) -> OptionsT:
        """A copy with ``changes`` (checked like :meth:`coerce`)."""
        return self.coerce(self, **changes)

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the analysis function (options with ``call``)."""
        return {name: getattr(self, name) for name, (_, spec) in self.specs().items()
                if spec.call}

    def changed(self) -> dict[str, Any]:
        """The options that differ from the defaults."""
        return {name: getattr(self, name) for name, (default, _) in self.specs().items()
                if getattr(self, name) != default}

    # --- the report ---------------------------------------------------------------------
    def settings(self, *, skip: Iterable[str] = ()) -> dict[str, Any]:
        """Every option by name (lists for tuples) but those in ``skip``: a report
        section's settings."""
        skip = set(skip)
        return {name: _plain(getattr(self, name)) for name in self.specs() if name not in skip}

    @classmethod
    def from_settings(cls: type[OptionsT], settings: Mapping[str, Any], *,
                      skip: Iterable[str] = (), **overrides: Any) -> OptionsT:
        """The options named in a report section's ``settings`` (other keys, and those in
        ``skip``, ignored; ``overrides`` win), checked like :meth:`coerce`."""
        skip = set(skip) | set(overrides)
        specs = cls.specs()
        given = {}
        for key, value in settings.items():
            name = key if key in specs else LEGACY_NAMES.get(key, key)
            if name in specs and name not in skip and (name == key or name not in settings):
                given[name] = value
        return cls.coerce(given, **overrides)
