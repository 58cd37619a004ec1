"""``check RESULTS --design D --criteria C [--baseline RESULTS2] [--junit out.xml]
[--markdown out.md] [--json]``: the bias gate (``docs/checks.md``).

Evaluates every criterion of the criteria file on the results (and the baseline run)
and exits 0 (every criterion passed), 1 (a criterion failed, or a required one could not
be evaluated), 2 (bad input: the criteria file, the results or the design; nothing is
written) or 3 (no failure, but a criterion's interval straddles its threshold: too
uncertain to decide). The Markdown summary and the JUnit XML (one test case per
criterion) are written together, atomically, after every criterion was evaluated.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("check",
           "the bias gate: criteria with their uncertainty, exit 0 pass / 1 fail / "
           "2 bad input / 3 uncertain")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1],
                       description=__doc__.split("\n\n")[0])
    p.add_argument("file", metavar="RESULTS", help="the run's results table")
    p.add_argument("--design", required=True, help="the design file (.yaml or .json)")
    p.add_argument("--criteria", required=True, help="the criteria file (YAML, docs/checks.md)")
    p.add_argument("--baseline", metavar="RESULTS2",
                   help="a baseline run's results (for criteria with compare: baseline)")
    p.add_argument("--junit", metavar="OUT.xml", help="write JUnit XML (one test case per "
                                                      "criterion)")
    p.add_argument("--markdown", metavar="OUT.md", help="write the Markdown summary (e.g. "
                                                        "$GITHUB_STEP_SUMMARY)")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.api import check
    from analysis.io import load_results
    from analysis.safe_write import check_output_path, write_files

    for path in (args.junit, args.markdown):
        if path:
            check_output_path(path)
    results = load_results(args.file)
    baseline = load_results(args.baseline) if args.baseline else None
    report = check(results, args.design, criteria=args.criteria, baseline=baseline).raw
    outputs = {}
    if args.markdown:
        text = report.markdown()
        outputs[args.markdown] = lambda tmp: tmp.write_text(text, encoding="utf-8")
    if args.junit:
        xml = report.junit_xml()
        outputs[args.junit] = lambda tmp: tmp.write_text(xml, encoding="utf-8")
    write_files(outputs)
    if args.json:
        print(report.to_json())
    else:
        print(report.markdown(), end="")
    return report.exit_code
