"""Several judges on the command line, and ``python -m judges reliability`` (docs/judges.md §12).

::

    python -m judges score IN --judge openai:gpt-4o-mini --judge anthropic:claude-haiku-4-5
        [--judges judges.yaml] [--ensemble mean|median] [--base-url URL] --out OUT
    python -m judges estimate IN --judge ... --judge ...        (per judge and total)
    python -m judges reliability JUDGED [JUDGED2 ...] [--json] [--n-boot B] [--seed S]
        [--min-range 2] [--out TABLE]

``--judge provider:model`` is repeatable; ``--base-url`` applies to the ``--judge``
judges; a judges YAML (``--judges``) lists ``name``, ``provider``, ``model``,
``base_url``, ``api_key_env``, ``temperature`` per judge. One judge in all is an ordinary
run (the file is exactly the single-judge file).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.cli import NON_NEGATIVE_INT
from judges.batch import BATCH_DISCOUNT
from judges.cli_common import (
    EXIT_OK,
    add_encoding_option,
    finish_run,
    input_encoding,
    judge_config,
    load_for_scoring,
    print_position_bias,
    print_warnings,
    reply_cache,
    run_and_write,
    run_config,
    write_table,
)
from judges.cost import PriceTable
from judges.ensemble import (
    ENSEMBLES,
    JudgeSpec,
    JudgeSpecError,
    check_unique,
    estimate_judges,
    judge_frames_async,
    load_judges_yaml,
    parse_judge,
    total_judgments,
)
from judges.judge import JudgeProgress
from judges.position import has_both_orders
from judges.rubric import load_rubrics

__all__ = [
    "HANDLERS", "add_options", "estimate_multi", "json_records", "judge_specs", "register",
    "reliability_command", "resolve", "score_multi",
]


def add_options(p: argparse.ArgumentParser) -> None:
    """``--judge``, ``--judges`` and ``--ensemble`` on ``score`` and ``estimate``."""
    p.add_argument("--judge", action="append", default=[], metavar="PROVIDER:MODEL",
                   help="a judge (repeatable: several judges and their ensemble); "
                        "--base-url applies to these")
    p.add_argument("--judges", type=Path, default=None, metavar="YAML",
                   help="judges file: a list of {name, provider, model, base_url, "
                        "api_key_env, temperature}")
    p.add_argument("--ensemble", choices=list(ENSEMBLES), default="mean",
                   help="several judges: <metric> is the mean (default) or median of the "
                        "judges that scored")


def judge_specs(args: argparse.Namespace) -> list[JudgeSpec]:
    """The judges of ``--judge`` and ``--judges`` (none: ``--provider``/``--model``)."""
    specs = [parse_judge(text, base_url=args.base_url) for text in args.judge]
    if args.judges is not None:
        specs += load_judges_yaml(args.judges)
    if specs and args.provider is not None:
        raise JudgeSpecError("Give the judge either with --provider/--model or with --judge / "
                             "--judges, not both.")
    if not specs and args.provider is None:
        raise JudgeSpecError("Choose a judge: --provider and --model, or --judge "
                             "provider:model (repeatable), or --judges FILE.")
    return check_unique(specs)


def resolve(args: argparse.Namespace) -> list[JudgeSpec] | None:
    """Several judges: their specs. One ``--judge``: turned into ``--provider/--model``
    (an ordinary run) and ``None``; ``None`` too for ``--provider``."""
    specs = judge_specs(args)
    if len(specs) == 1 and specs[0].api_key_env is None and specs[0].temperature == "inherit":
        args.provider, args.model, args.base_url = (specs[0].provider, specs[0].model,
                                                    specs[0].base_url)
        return None
    if not specs:
        return None
    if getattr(args, "batch", False) and args.command == "score":
        raise JudgeSpecError("--batch runs one judge; several judges run live (or submit one "
                             "batch per judge).")
    return specs


def _judges(args: argparse.Namespace, specs: list[JudgeSpec], *, keys: bool) -> list:
    base = judge_config(args)
    judges = []
    for s in specs:
        if keys and s.api_key_env and not os.environ.get(s.api_key_env):
            raise JudgeSpecError(f"Judge {s.name}: the environment variable {s.api_key_env} "
                                 "(its api_key_env) is not set.")
        provider = s.make_provider()
        config = s.config(base)
        print_warnings([f"{s.name}: {w}" for w in config.warnings(provider)])
        judges.append((s.name, provider, config))
    return judges


def estimate_multi(args: argparse.Namespace, specs: list[JudgeSpec]) -> int:
    """``estimate`` with several judges: one line per judge and the total."""
    frame = load_for_scoring(args)
    judges = _judges(args, specs, keys=False)
    with reply_cache(args) as cache:
        table = estimate_judges(frame, judges, rubrics=load_rubrics(args.rubrics),
                                prices=PriceTable.load(args.prices), cache=cache,
                                batch_share=BATCH_DISCOUNT if args.batch else 1.0)
    shown = table.copy()
    shown["cost_usd"] = [("no price" if not math.isfinite(v) else f"${v:,.4f}")
                         for v in table["cost_usd"]]
    print(shown.to_string(index=False))
    for name, cost in zip(table["judge"], table["cost_usd"], strict=True):
        if name != "total" and not math.isfinite(cost):
            print(f"No price for judge {name}: add its model to the price table (--prices).",
                  file=sys.stderr)
    return EXIT_OK


def score_multi(args: argparse.Namespace, specs: list[JudgeSpec]) -> int:
    """``score`` with several judges: each judge in turn, then the ensemble file."""
    frame = load_for_scoring(args)
    judges = _judges(args, specs, keys=True)
    rubrics = load_rubrics(args.rubrics)
    prices = PriceTable.load(args.prices)
    progress = JudgeProgress(total=total_judgments(frame, judges))
    result = run_and_write(args, lambda cache, cancel: judge_frames_async(
        frame, judges, ensemble=args.ensemble, rubrics=rubrics, run_config=run_config(args),
        cache=cache, prices=prices, cancel=cancel, progress=progress,
        max_cost_usd=args.max_cost), progress)
    for name, r in result.runs.items():
        p, st = r.progress, r.stats
        cost = "unpriced" if st.unpriced else f"${st.cost_usd:,.4f}"
        print(f"  {name}: {st.http_attempts:,} requests ({st.retries:,} retries), "
              f"{st.cache_hits:,} from the cache, cost {cost}", file=sys.stderr)
    for name, r in result.runs.items():  # --both-orders: each judge's position bias
        if has_both_orders(r.judged):
            print(f"{name}:")
            print_position_bias(r.judged)
    stats = result.stats
    p = result.progress
    print(f"Wrote {args.out}: {len(judges)} judges, {args.ensemble} ensemble; {p.scored:,} "
          f"scored, {p.unscored:,} unscored; {stats.http_attempts:,} requests "
          f"({stats.retries:,} retries), {stats.cache_hits:,} from the cache.", file=sys.stderr)
    return finish_run(result.judged, stats, result.cancelled, args, result.progress)


# --- reliability ------------------------------------------------------------------------------
def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``reliability`` command."""
    p = sub.add_parser("reliability", help="agreement between judges and between repeated "
                                           "samples: Krippendorff's alpha, ICC, disagreements")
    p.add_argument("judged", nargs="+", help="one judged file with several judges' columns, or "
                                             "several judged files of the same rows")
    add_encoding_option(p)
    p.add_argument("--json", action="store_true", help="print JSON (reliability and "
                                                       "disagreements) instead of tables")
    p.add_argument("--n-boot", type=NON_NEGATIVE_INT, default=1000,
                   help="bootstrap resamples of the rows for alpha's interval (0: none; the "
                        "ICCs' F intervals need none)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--min-range", type=float, default=2.0,
                   help="list the judgments whose judges' scores span at least this")
    p.add_argument("--out", type=Path, default=None,
                   help="also write the reliability table here (and the disagreements next "
                        "to it, <stem>.disagreements.<ext>)")


def json_records(table: pd.DataFrame) -> list[dict]:
    out = table.astype(object).where(table.notna(), None)
    return [{k: (float(v) if isinstance(v, np.floating) else
                 int(v) if isinstance(v, np.integer) else v) for k, v in row.items()}
            for row in out.to_dict(orient="records")]


def reliability_command(args: argparse.Namespace) -> int:
    """``python -m judges reliability``."""
    from analysis import api
    from analysis.judge_stats.reliability import load_reliability_data

    data = load_reliability_data(args.judged, encoding=input_encoding(args))
    result = api.judge_reliability(data, n_resamples=args.n_boot, seed=args.seed,
                                   min_range=args.min_range)
    table, disagree = result.table, result.tables["disagreements"]
    if args.out:
        write_table(table, args.out)
        side = Path(args.out).with_name(f"{Path(args.out).stem}.disagreements"
                                        f"{Path(args.out).suffix}")
        write_table(disagree, side)
        print(f"Wrote {args.out} and {side}.", file=sys.stderr)
    if args.json:
        print(json.dumps({"judges": data.judges, "reliability": json_records(table),
                          "disagreements": json_records(disagree)}, indent=1))
        return EXIT_OK
    print(f"Judges: {', '.join(data.judges)}; {len(data.rows):,} rows. ICC(2,1): two-way "
          "random, absolute agreement; ICC(3,1): two-way mixed, consistency; ICC(1,1): one-way "
          "random (Shrout & Fleiss 1979). Alpha: Krippendorff, ordinal. Intervals: alpha "
          "percentile bootstrap over rows; ICCs classical F intervals (McGraw & Wong 1996).")
    with pd.option_context("display.width", 250, "display.max_columns", 50,
                           "display.max_rows", 500):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print(f"\n{len(disagree):,} judgments where the judges differ by {args.min_range:g} or "
              "more" + (":" if len(disagree) else "."))
        if len(disagree):
            print(disagree.to_string(index=False, float_format=lambda x: f"{x:g}"))
    return EXIT_OK


HANDLERS = {"reliability": reliability_command}
