"""``report FILE --design design.yaml --out report.html``: the whole-analysis report.

Builds each section of :mod:`analysis.report` with the default settings the pages start
from (``--settings FILE`` gives per-section settings as JSON/YAML ``{section: {...}}``,
e.g. what the app's Report page exports). Sections the design cannot support are skipped
with a stated reason in the report. ``--ci bootstrap [--n-boot B] [--seed S]
[--confidence C] [--cluster COL]`` adds bootstrap intervals to the subgroups, ecdf and
index sections (:mod:`analysis.bootstrap`); ``--judge-noise R [--noise-mode M]
[--noise-alpha A]`` adds judge-noise survival to the subgroups and importance sections
(:mod:`analysis.judge_noise`). ``--zip`` adds each figure as PNG/SVG/PDF and each
table as CSV; ``--pdf`` prints the report with headless Chromium. Every output is
written to a temporary file in its folder and renamed only when all succeeded.
"""

from __future__ import annotations

import argparse

__all__ = ["ci_overrides", "noise_overrides", "register", "run"]


SUMMARY = ("report", "whole-analysis report: HTML, figures ZIP, PDF")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_input

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1],
                       description="A self-contained HTML report of the chosen sections "
                                   "(docs/report.md), optionally a ZIP of its figures and "
                                   "tables and a PDF.")
    add_input(p)
    p.add_argument("--design", required=True, help="design file (YAML/JSON)")
    p.add_argument("--out", required=True, help="the HTML report to write")
    p.add_argument("--zip", help="also write figures (PNG/SVG/PDF) and tables (CSV) here")
    p.add_argument("--pdf", help="also write a PDF of the report (needs Chromium)")
    p.add_argument("--sections", default="",
                   help="comma-separated sections, in order (default: all of "
                        "coverage,subgroups,ecdf,importance,disparity,index,cohorts,judges)")
    p.add_argument("--settings", help="JSON/YAML file {section: {setting: value}}")
    p.add_argument("--criteria", metavar="C", help="a criteria file (docs/checks.md): the "
                                                   "Checks section shows its verdicts")
    from analysis import cli as cli_types

    g = p.add_argument_group(
        "uncertainty (bootstrap intervals of the subgroups, ecdf and index sections; a "
        "section's own settings in --settings take precedence)")
    from analysis.options.common import CI_CHOICES, NOISE_MODES

    g.add_argument("--ci", choices=CI_CHOICES,
                   help="bootstrap percentile intervals (default none)")
    g.add_argument("--n-boot", type=cli_types.POSITIVE_INT,
                   help="bootstrap replicates, at least 20 (default: 1000; index 200)")
    g.add_argument("--seed", type=cli_types.NON_NEGATIVE_INT, help="random seed (default 0)")
    g.add_argument("--confidence", type=cli_types.PROBABILITY,
                   help="confidence level of the intervals (default 0.95)")
    g.add_argument("--cluster", metavar="COL",
                   help="resample whole clusters of COL (default: the design's cluster); "
                        "also the importance section's cluster for robust standard errors")
    g = p.add_argument_group(
        "judge noise (subgroups and importance sections of a results table judged with "
        "--samples K; docs/judge_noise.md; a section's own judge_noise settings take "
        "precedence)")
    g.add_argument("--judge-noise", type=cli_types.NON_NEGATIVE_INT, metavar="R",
                   help="redraw the judge's scores R times (e.g. 200) and add how often each "
                        "subgroup / term keeps its sign and significance (0: off)")
    g.add_argument("--noise-mode", choices=NOISE_MODES,
                   help="mean (default): resample the K samples and average; single: one "
                        "sample; confusion: a score from P(human | judge)")
    g.add_argument("--noise-alpha", type=cli_types.PROBABILITY,
                   help="subgroups: significant when the adjusted p-value (the section's "
                        "adjust) is below this (default 0.05); importance uses its own alpha")
    p.set_defaults(func=run)


def ci_overrides(args: argparse.Namespace, section: str) -> dict:
    """The interval settings given on the command line for ``section`` (those not given
    are left to the section's settings or defaults)."""
    from analysis.report import CI_SECTIONS

    given = {"ci": args.ci, "n_resamples": args.n_boot, "seed": args.seed,
             "confidence": args.confidence, "cluster": args.cluster}
    if section == "importance":
        return {"cluster": args.cluster} if args.cluster else {}
    if section not in CI_SECTIONS:
        return {}
    return {k: v for k, v in given.items() if v is not None}


def noise_overrides(args: argparse.Namespace, section: str) -> dict:
    """The ``judge_noise`` keys given on the command line for ``section`` (``--seed``
    also seeds the noise, as in the subcommands)."""
    from analysis.report import NOISE_SECTIONS

    if section not in NOISE_SECTIONS:
        return {}
    given = {"replicates": args.judge_noise, "mode": args.noise_mode, "seed": args.seed,
             "alpha": args.noise_alpha}
    return {k: v for k, v in given.items() if v is not None and k in NOISE_SECTIONS[section]}


def _merged(args: argparse.Namespace, section: str, own: dict) -> dict:
    """The command line's settings of ``section`` overridden by its own (``--settings``);
    ``judge_noise`` is merged key by key."""
    if "n_boot" in own and "n_resamples" not in own:  # a settings file saved before the rename
        own = {("n_resamples" if k == "n_boot" else k): v for k, v in own.items()}
    out = {**ci_overrides(args, section), **own}
    noise = noise_overrides(args, section)
    if noise:
        mine = own.get("judge_noise")
        out["judge_noise"] = {**noise, **(mine if isinstance(mine, dict) else {})}
        if mine is not None and not isinstance(mine, dict):
            out["judge_noise"] = mine  # rejected with its message by the section
    return out


def _settings(path: str | None) -> dict:
    from pathlib import Path

    import yaml

    from analysis.errors import AnalysisError

    if not path:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise AnalysisError(f"{path}: cannot read the settings file ({exc}).") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) or v is None
                                             for v in data.values()):
        raise AnalysisError(f"{path}: settings must map a section name to its settings.")
    return {str(k): v or {} for k, v in data.items()}


def run(args: argparse.Namespace) -> None:
    import sys
    from pathlib import Path

    from analysis.cli import load_with_design, split_list
    from analysis.errors import AnalysisError
    from analysis.export import ExportUnavailable
    from analysis.report import SECTIONS, build_report, report_html, report_pdf, report_zip
    from analysis.safe_write import write_files

    names = split_list(args.sections) or list(SECTIONS)
    unknown = [s for s in names if s not in SECTIONS]
    if unknown:
        raise AnalysisError(f"--sections: unknown section(s) {', '.join(unknown)}; use "
                            f"{', '.join(SECTIONS)}.")
    settings = _settings(args.settings)
    if args.criteria:
        settings.setdefault("checks", {})["criteria"] = args.criteria
    extra = [s for s in settings if s not in names]
    if extra:
        raise AnalysisError(f"{args.settings}: settings for section(s) {', '.join(extra)} "
                            "that are not in --sections.")
    for target in (args.out, args.zip, args.pdf):
        if target and not Path(target).parent.resolve().is_dir():
            raise AnalysisError(f"{target}: the folder {Path(target).parent} does not exist.")
    load_args = argparse.Namespace(**vars(args))
    load_args.factors = None
    results, design, meta = load_with_design(load_args, need_outcome=False, with_meta=True)
    if getattr(args, "cluster", None) and args.cluster not in results.columns:
        raise AnalysisError(f"Cluster column {args.cluster!r} is not in the table.")
    chosen = [(s, _merged(args, s, settings.get(s) or {})) for s in names]
    report = build_report(results, design, chosen,
                          source=meta.source_name or Path(args.file).name)
    html_text = report_html(report)
    outputs = {args.out: lambda p: p.write_text(html_text, encoding="utf-8")}
    if args.zip:
        data = report_zip(report, html_text)
        outputs[args.zip] = lambda p: p.write_bytes(data)
    if args.pdf:
        try:
            pdf = report_pdf(html_text)
        except ExportUnavailable as exc:
            raise AnalysisError(f"--pdf: {exc}") from None
        outputs[args.pdf] = lambda p: p.write_bytes(pdf)
    write_files(outputs)
    for sec in report.sections:
        state = f"skipped: {sec.skipped}" if sec.skipped else (
            f"{len(sec.figures)} figures, {len(sec.tables)} tables, "
            f"{len(sec.warnings)} warnings")
        print(f"{sec.title}: {state}", file=sys.stderr)
    print(f"Wrote {', '.join(str(p) for p in outputs)}.", file=sys.stderr)
