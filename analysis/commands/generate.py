"""``generate FILE --plan add.csv --out prompts.csv``: prompts for the planned combinations.

Learns templates with named slots from FILE's prompt texts and factor values
(:mod:`analysis.generate`, ``docs/generate.md``), prints the round trip (how many
prompts the templates rebuild exactly), and with ``--plan`` (the CSV of ``plan --out``:
factor columns + ``n``, optional ``kind`` and ``template``) writes one row per new prompt
with every factor of the design, ``template`` and ``prompt``: the input of
``python -m judges answer prompts.csv ...``. ``--templates FILE`` (CSV or YAML) gives
template texts with ``{factor}`` slots (tried before the learned ones; alone, without
FILE, with ``--design``). ``--templates-out`` writes the learned templates;
``--variants-out`` (with ``--plan``) writes only a templates YAML to complete for the
variants no learned template can write (``docs/generate.md``). Nothing is
written unless every planned row can be generated. ``--json`` prints ``{"round_trip",
"n_templates", "n_generated", "notes"}``.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("generate",
           "prompts for a plan from templates with slots (learned from the prompts "
           "or given)")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_outcome_options, single_character

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1])
    p.add_argument("file", nargs="?", help="results table with a prompt text column")
    p.add_argument("--sep", type=single_character, help="delimiter of a text file")
    p.add_argument("--encoding", default="utf-8", help="text encoding (default utf-8)")
    add_outcome_options(p)
    p.add_argument("--factors", help="comma-separated factors (default: the design's; "
                                     "without --design, the suggested ones)")
    p.add_argument("--prompt-col", default="prompt", help="the prompt text column")
    p.add_argument("--template-col", default=None,
                   help="column naming each row's template, never a slot (default: "
                        "'template', else the design's cluster, if present; else inferred "
                        "from the texts)")
    p.add_argument("--slots", help="comma-separated factors that must be slots")
    p.add_argument("--templates", help="template texts with {factor} slots (CSV or YAML)")
    p.add_argument("--plan", help="the plan CSV (plan --out): factors + n [, kind, template]")
    p.add_argument("--allow-repeats", action="store_true",
                   help="a planned combination may repeat prompts already asked (default: "
                        "refused when its templates give too few new texts)")
    p.add_argument("--out", help="write the generated prompts (CSV/Parquet)")
    p.add_argument("--templates-out", help="write the learned templates (CSV)")
    p.add_argument("--variants-out", help="with --plan: write a templates YAML to complete "
                                          "for the variants no learned template can write "
                                          "(then pass it as --templates); nothing else")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, load_with_design
    from analysis.errors import AnalysisError
    from analysis.safe_write import table_writer, write_files

    if args.plan and not args.out and not args.variants_out:
        raise AnalysisError("generate --plan needs --out PATH for the prompts.")
    if args.out and not args.plan:
        raise AnalysisError("generate --out writes the prompts of a plan: give --plan "
                            "add.csv (plan --out); --templates-out writes the templates.")
    if args.variants_out and not (args.plan and args.file):
        raise AnalysisError("--variants-out needs FILE (the prompts) and --plan.")
    if not args.file and not (args.templates and args.design):
        raise AnalysisError("Give a results FILE with prompts to learn templates from, or "
                            "--templates FILE with --design FILE.")
    data = design = None
    if args.file:
        data, design = load_with_design(argparse.Namespace(**{**vars(args), "where": [],
                                                              "engine": "pandas"}),
                                        need_outcome=False)
    else:
        design = args.design
    if args.variants_out:
        _variants(args, data, design)
        return
    result = bw.generate_prompts(data, design, plan=args.plan, templates=args.templates,
                                 prompt=args.prompt_col, template_column=args.template_col,
                                 slots=args.slots, allow_repeats=args.allow_repeats,
                                 applied=data is not None)
    outputs = {}
    if args.out:
        outputs[args.out] = table_writer(result.table, args.out)
    if args.templates_out:
        outputs[args.templates_out] = table_writer(result.tables["templates"],
                                                   args.templates_out)
    write_files(outputs)  # together or not at all; CSV cells neutralised
    trip = result.meta["round_trip"]
    payload = {"round_trip": trip, "n_templates": len(result.tables["templates"]),
               "n_generated": len(result.table), "notes": list(result.notes)}
    if args.json:
        emit(argparse.Namespace(json=True, out=None), payload)
        return
    if trip:
        print(f"Round trip: {trip['n_regenerated_with_slots']:,} of {trip['n_prompts']:,} "
              f"prompts ({100 * trip['share']:.2f} %) rebuilt exactly from their template "
              f"with slots ({len(result.tables['templates']):,} templates).")
    for note in result.notes:
        print(f"Note: {note}")
    if args.out:
        print(f"Wrote {len(result.table):,} prompts to {args.out}.")


def _variants(args: argparse.Namespace, data, design) -> None:  # noqa: ANN001
    from analysis import api as bw
    from analysis.safe_write import atomic_write_text

    result = bw.generate_prompts(data, design, plan=args.plan, prompt=args.prompt_col,
                                 template_column=args.template_col, slots=args.slots,
                                 applied=True, variants_only=True)
    atomic_write_text(args.variants_out, result.meta["variants_yaml"])
    print(f"Wrote {result.meta['n_variants']:,} template variants to complete to "
          f"{args.variants_out}: write each text, then pass the file as --templates.")
