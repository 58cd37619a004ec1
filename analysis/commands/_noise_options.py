"""``--judge-noise R``, ``--noise-mode`` (and ``--noise-alpha`` for subgroups, whose
tests have no alpha of their own): shared by subgroups and importance (not a
subcommand). See ``analysis/judge_noise.py`` and ``docs/judge_noise.md``."""

from __future__ import annotations

import argparse

__all__ = ["add_noise_options", "noise_payload", "noise_settings"]


#: Kept literal here so that building the parser imports nothing heavy.
_MODES = ("mean", "single", "confusion")


def add_noise_options(parser: argparse.ArgumentParser, *, seed: bool, alpha: bool) -> None:
    """The judge-noise options; ``seed`` adds ``--seed`` and ``alpha`` ``--noise-alpha``
    (when the command has none of its own)."""
    from analysis import cli as cli_types

    g = parser.add_argument_group("judge noise (results tables of a judge run with --samples K)")
    g.add_argument("--judge-noise", type=cli_types.POSITIVE_INT, metavar="R",
                   help="redraw the judge's scores R times (e.g. 200), rerun the analysis "
                        "with the same settings and report how often each conclusion keeps "
                        "its sign and significance (JSON: judge_noise)")
    g.add_argument("--noise-mode", choices=_MODES, default="mean",
                   help="mean: resample the K samples and average (default); single: one "
                        "sample (a one-call judge); confusion: a score from P(human | judge) "
                        "estimated on the rows with human_<metric> labels")
    if alpha:
        g.add_argument("--noise-alpha", type=cli_types.PROBABILITY, default=0.05,
                       help="a subgroup counts as significant in a replicate when its "
                            "Benjamini-Hochberg adjusted p-value is below this (default 0.05)")
    if seed:
        g.add_argument("--seed", type=cli_types.NON_NEGATIVE_INT, default=0,
                       help="random seed (default 0)")


def noise_settings(args: argparse.Namespace, design, results) -> dict:
    """Keyword arguments of ``analysis.judge_noise`` from the options."""
    from analysis.judge_noise import JudgeNoiseError, threshold_of

    if results.attrs.get("engine"):
        raise JudgeNoiseError("--judge-noise redraws the judge's score of every row, so it "
                              "needs the rows: add --engine pandas.")

    out = {"replicates": args.judge_noise, "mode": args.noise_mode, "seed": args.seed,
           "threshold": threshold_of(design)}
    if getattr(args, "noise_alpha", None) is not None:
        out["alpha"] = args.noise_alpha
    return out


def noise_payload(table, label: str, estimate: str, q_column: str) -> dict:
    """The ``judge_noise`` section of the JSON: settings and per-row survival."""
    from analysis.judge_noise import noise_rows, survival_sentence

    what = "subgroups" if label == "subgroup" else "terms"
    return {"settings": dict(table.attrs["judge_noise"]),
            "summary": survival_sentence(table, what=what),
            "rows": noise_rows(table, label, estimate, q_column)}
