"""One options object per analysis: the CLI, the report, the copy text and the API agree
with it (``analysis/options``). Walks every registered analysis."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from analysis.cli import build_parser
from analysis.options import FROM_DESIGN, OptionError, Options, all_options
from analysis.options.common import NOISE_FIELDS
from analysis.report import SECTIONS

ROOT = Path(__file__).resolve().parents[2]
ANALYSES = all_options()

#: Arguments every command needs before its options parse (file, and what is required).
REQUIRED: dict[str, list[str]] = {
    "disparity": ["--feature", "x", "--by", "g"],
    "cohorts": ["--category", "c", "--cohort", "m"],
    "compare": ["--by", "model"],
    "counterfactual": ["--swap", "gender"],
    "features": ["--text-col", "t", "--out", "o.csv"],
    "power": ["--rate", "0.3", "--ld", "0.4", "--share", "0.1"],
    "plan": [],
    "ecdf": ["--factors", "a", "--by", "model"],
    "index": ["--dimensions", "gender"],
    "index-published": ["--polarity", "p"],
}


def _parse(cls: type[Options], extra: list[str]) -> argparse.Namespace:
    command = cls.COMMAND
    argv = [command] + ([] if command in ("power",) else ["results.csv"])
    return build_parser(command).parse_args([*argv, *REQUIRED.get(command, []), *extra])


def _other_value(name: str, default, spec):
    """A valid value different from the default, for the round trip."""
    if spec.cluster:
        return "template" if default == FROM_DESIGN else FROM_DESIGN
    if spec.choices:
        return next(c for c in spec.choices if c != default)
    if spec.negate or isinstance(default, bool):
        return not default
    if spec.repeat:
        return ("a:b", "a:c")
    if isinstance(default, tuple) and all(isinstance(v, float) for v in default):
        return tuple(round(v + 0.05, 4) for v in default)  # --quantiles 0.25,0.75
    if isinstance(default, tuple):  # a list of names (--features a,b)
        return default[:1]
    if default is None and spec.type is None:  # a column or factor name
        return "some_column"
    if isinstance(default, int) or (default is None and "int" in str(spec.type.__name__
                                                                       if spec.type else "")):
        return (default or 0) + 3
    if default is None and spec.type is not None and "whole" in spec.type.__name__:
        return 7
    if isinstance(default, float) or default is None:
        return 0.125 if (default or 0) != 0.125 else 0.25
    return f"{default}_x"


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_defaults_of_the_cli_are_the_options_defaults(name):
    cls = ANALYSES[name]
    assert cls.from_args(_parse(cls, [])) == cls()


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_every_option_round_trips_through_the_copy_text_and_the_cli(name):
    cls = ANALYSES[name]
    for option, (default, spec) in cls.specs().items():
        if spec.flag is None:
            continue
        changed = cls.coerce({option: _other_value(option, default, spec)})
        argv = []
        for flag, value in changed.cli_options():
            text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
            argv += [f"--{flag}"] if value is True else [f"--{flag}", text]  # as cli_command
        assert cls.from_args(_parse(cls, argv)) == changed, (option, argv)
        assert set(changed.changed()) == {option}


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_no_option_flag_is_written_outside_its_options_object(name):
    """The command, the report and the copy text take each flag and default from the
    options object: none of them spells an option's flag itself."""
    from analysis.commands import SUMMARIES

    cls = ANALYSES[name]
    module = next(m for m, (command, _) in SUMMARIES.items() if command == cls.COMMAND)
    sources = {p: p.read_text() for p in [ROOT / f"analysis/commands/{module}.py",
                                          ROOT / "analysis/reproduce.py"]}
    for option, (_, spec) in cls.specs().items():
        flag = spec.negate or spec.flag or option.replace("_", "-")
        if spec.flag is None:
            continue
        for path, text in sources.items():
            assert f'"--{flag}"' not in text, (path.name, flag)
            assert not re.search(rf'(?<![\w.])\("{re.escape(flag)}",', text) or path.name != \
                "reproduce.py" or option in _SHARED_WITH_OTHER_VIEWS, (path.name, flag)


#: Flags reproduce.py may spell although an options object has an option of that name.
_SHARED_WITH_OTHER_VIEWS = {"level"}  # compare's --level, not an option of compare


@pytest.mark.parametrize("name", sorted(set(ANALYSES) & set(SECTIONS)))
def test_report_settings_start_from_the_options_defaults(name):
    from analysis.report import default_settings
    from tests.app.apptools import sample_with_design

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    settings = default_settings(name, frame, design)
    cls = ANALYSES[name]
    for option, value in cls().settings(skip=NOISE_FIELDS).items():
        if option not in settings:
            continue  # page-only
        if option in cls.FROM_DATA:  # None: the section resolves it from the table
            assert value is None and settings[option] is not None, option
            continue
        if cls.spec(option).cluster:  # the design's, named or as the options' default
            assert settings[option] in (design.cluster, FROM_DESIGN), option
            continue
        assert settings[option] == value, option
    if "judge_noise" in settings:  # the noise options, nested: replicates 0 means off
        nested = settings["judge_noise"]
        assert cls.default("judge_noise") is None and nested["replicates"] == 0
        assert nested["mode"] == cls.default("noise_mode")
        for key in ("seed", "noise_alpha"):
            if key in cls.specs():
                assert nested[key.replace("noise_", "")] == cls.default(key), key


def test_coerce_checks_names_choices_and_types_and_accepts_strings():
    from analysis.options.importance import ImportanceOptions

    o = ImportanceOptions.coerce(alpha="0.01", likelihood_ratio="false",
                                 interactions=["a:b"])
    assert (o.alpha, o.likelihood_ratio, o.interactions) == (0.01, False, ("a:b",))
    with pytest.raises(OptionError, match="has no option 'alfa'.*alpha"):
        ImportanceOptions.coerce(alfa=0.1)
    with pytest.raises(OptionError, match="on_separation must be one of 'refuse'"):
        ImportanceOptions.coerce(on_separation="ignore")
    with pytest.raises(OptionError, match="alpha: must be less than 1, not 2"):
        ImportanceOptions.coerce(alpha=2)
    with pytest.raises(OptionError, match="gee is True or False"):
        ImportanceOptions.coerce(gee="yes please")
    assert dataclasses.is_dataclass(o) and o.replace(alpha=0.05) == ImportanceOptions(
        interactions=("a:b",), likelihood_ratio=False)


def test_the_options_are_one_declaration_each():
    """Every option has help, and its flag is unique within its command."""
    for name, cls in ANALYSES.items():
        flags = [spec.negate or spec.flag or o.replace("_", "-")
                 for o, (_, spec) in cls.specs().items() if spec.flag is not None]
        assert len(flags) == len(set(flags)), name
        for option in cls.specs():
            assert cls.help(option).strip(), (name, option)


def test_a_new_option_is_one_declaration_that_reaches_cli_report_copy_text_and_api(
        monkeypatch, capsys):
    """The issue's "done when": one field added to ImportanceOptions (nothing else edited)
    is a CLI flag that reaches the fit, a report setting with its default, a flag of the
    copy text when it differs, and an API keyword (strings accepted)."""
    from dataclasses import dataclass

    import analysis.options.importance as module
    from analysis import api
    from analysis.cli import main
    from analysis.options import option
    from analysis.options.types import POSITIVE_FLOAT
    from analysis.report import default_settings
    from analysis.reproduce import importance_view
    from tests.app.apptools import sample_with_design

    @dataclass(frozen=True, kw_only=True)
    class WithRows(module.ImportanceOptions):
        min_rows_per_parameter: float = option(
            10.0, "refuse a model with fewer rows per parameter (default %(default)s)",
            type=POSITIVE_FLOAT, label="Rows per parameter")

    monkeypatch.setattr(module, "ImportanceOptions", WithRows)
    data = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
    design_file = str(data).replace(".csv.gz", ".design.yaml")
    argv = ["importance", str(data), "--design", design_file, "--factors", "model,cot"]
    assert main([*argv, "--json"]) == 0  # 41,440 rows over 3 parameters: fitted
    capsys.readouterr()
    assert main([*argv, "--min-rows-per-parameter", "20000", "--json"]) == 2
    assert "13813.3 per parameter; at least 20000" in capsys.readouterr().err  # the fit's
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    assert default_settings("importance", frame, design)["min_rows_per_parameter"] == 10.0
    view = importance_view({"factors": ["model", "cot"], "references": {},
                            "min_rows_per_parameter": 20000.0}, ["model", "cot"])
    assert ("min-rows-per-parameter", 20000.0) in view.options
    from analysis.importance import ImportanceRefusal

    with pytest.raises(ImportanceRefusal, match="at least 20000 are needed"):
        api.importance(frame, design, factors=["model", "cot"],
                       min_rows_per_parameter="20000")
