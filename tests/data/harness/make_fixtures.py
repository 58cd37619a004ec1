"""Write the small harness fixtures in this folder (run from the repository root).

    python tests/data/harness/make_fixtures.py [--shared ../shared/data]

1. ``bbq_religion_items.jsonl``: 32 real BBQ items from the authors' ``preds_Religion.jsonl``
   (the first four examples of question_index 1..8, one per polarity x context
   condition), only the fields the tasks need (no model predictions). BBQ: Parrish et
   al., Findings of ACL 2022, https://github.com/nyu-mll/BBQ, CC-BY-4.0 (see README.md).
   Skipped when the shared data is absent (the file is committed).
2. ``lm_eval_output/dummy-bbq/``: one real lm-evaluation-harness run (``--model dummy
   --model_args pretrained=dummy-bbq --log_samples``) of the two tasks in
   ``lm_eval_tasks/`` (a results JSON and two samples files, as lm-eval wrote them).
3. ``inspect_logs/``: one real Inspect AI eval log of the same items, answered by the
   test model ``fixedllm/always-b`` (``tests/analysis/importers/inspect_test_model.py``).

Both runs are offline (see ``tests/analysis/importers/harness_runs.py``). The dummy
model draws its log-likelihoods from Python's ``random`` (lm-eval seeds it with 0), so
its accuracy means nothing; the tests compare the import with lm-eval's own aggregates
of the same run, never with fixed numbers. Time stamps in file names and logs change
with every run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.analysis.importers.harness_runs import (  # noqa: E402
    INSPECT_FIXTURE,
    ITEMS,
    LM_EVAL_FIXTURE,
    run_inspect,
    run_lm_eval,
)

FIELDS = ("example_id", "question_index", "question_polarity", "context_condition", "category",
          "answer_info", "additional_metadata", "context", "question", "ans0", "ans1", "ans2",
          "label")


def write_items(shared: Path) -> None:
    source = shared / "bbq" / "preds_Religion.jsonl"
    if not source.is_file():
        print(f"{source} not found: keeping the committed {ITEMS.name}")
        return
    taken: dict[int, int] = {}
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        index = int(row["question_index"])
        if index <= 8 and taken.get(index, 0) < 4:
            taken[index] = taken.get(index, 0) + 1
            item = {k: row[k] for k in FIELDS}
            item["additional_metadata"] = {k: row["additional_metadata"][k]
                                           for k in ("subcategory", "stereotyped_groups")}
            lines.append(json.dumps(item, ensure_ascii=False))
    ITEMS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {ITEMS} ({len(lines)} items)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()
    write_items(args.shared)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = run_lm_eval(Path(tmp))
        shutil.rmtree(LM_EVAL_FIXTURE, ignore_errors=True)
        target = LM_EVAL_FIXTURE / run_dir.name
        target.mkdir(parents=True)
        for path in sorted(run_dir.iterdir()):
            shutil.copy2(path, target / path.name)
        print(f"wrote {target}: {', '.join(p.name for p in sorted(target.iterdir()))}")
        logs = run_inspect(Path(tmp) / "inspect")
        shutil.rmtree(INSPECT_FIXTURE, ignore_errors=True)
        INSPECT_FIXTURE.mkdir(parents=True)
        for log in logs:
            shutil.copy2(log, INSPECT_FIXTURE / log.name)
        print(f"wrote {INSPECT_FIXTURE}: {', '.join(p.name for p in logs)}")


if __name__ == "__main__":
    main()
