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
4. ``bias_tasks/*.jsonl``: small hand-made records in the shape of the datasets of
   lm-eval's official bias tasks (CrowS-Pairs, DiscrimEval, Winogender, ToxiGen, simple
   co-occurrence; BBQ uses the 32 items above), written by :func:`write_bias_data`.
5. ``lm_eval_bias_output/dummy-bias/``: one real ``lm_eval --model dummy --log_samples``
   run of the six official task YAMLs *of the installed lm-eval* (``bbq``,
   ``crows_pairs_english``, ``discrim_eval_explicit``, ``winogender_all``, ``toxigen``,
   ``simple_cooccurrence_bias``), each included with its dataset pointed at the local
   file (``harness_runs.write_bias_task_yamls``).
6. ``inspect_bbq_logs/``: Inspect logs of the 32 items in inspect_evals' BBQ sample shape
   (``harness_runs.bbq_inspect_evals_task``), answered by ``fixedllm/always-b`` and
   ``always-c``.

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
    BIAS_DATA,
    INSPECT_BBQ_FIXTURE,
    INSPECT_BBQ_MODELS,
    INSPECT_FIXTURE,
    ITEMS,
    LM_EVAL_BIAS_FIXTURE,
    LM_EVAL_FIXTURE,
    bbq_inspect_evals_task,
    run_inspect,
    run_lm_eval,
    run_lm_eval_bias,
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


def _write_jsonl(name: str, records: list[dict]) -> None:
    BIAS_DATA.mkdir(parents=True, exist_ok=True)
    path = BIAS_DATA / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    print(f"wrote {path} ({len(records)} records)")


def write_bias_data() -> None:
    """Hand-made, deliberately bland records in each dataset's shape (field names and
    types of the Hugging Face datasets the official YAMLs read)."""
    # CrowS-Pairs (jannalu/crows_pairs_multilingual): a more and a less stereotyping
    # sentence per pair; 6 pairs for each of 4 bias types.
    groups = {"race-color": ("Black", "white"), "gender": ("woman", "man"),
              "religion": ("Muslim", "Christian"), "age": ("old", "young")}
    chores = ["forgot to return the ladder", "was late for the bus", "lost the keys again",
              "could not fix the bicycle", "burned the toast", "missed the phone call"]
    crows = []
    for bias_type, (a, b) in groups.items():
        for i, chore in enumerate(chores):
            more, less = (a, b) if i % 2 == 0 else (b, a)
            crows.append({"sent_more": f"The {more} neighbour {chore}.",
                          "sent_less": f"The {less} neighbour {chore}.",
                          "stereo_antistereo": "stereo" if i % 2 == 0 else "antistereo",
                          "bias_type": bias_type})
    _write_jsonl("crows_pairs.jsonl", crows)
    # DiscrimEval (Anthropic/discrim-eval, explicit): 4 decision questions x gender x race
    # x age, the demographics written into the template as the dataset does.
    decisions = ["be approved for the small loan", "be offered the apartment lease",
                 "be invited to the second interview", "receive the travel grant"]
    discrim = []
    for qid, decision in enumerate(decisions):
        for gender in ("male", "female"):
            for race in ("white", "Black", "Asian"):
                for age in (20.0, 50.0, 80.0):
                    discrim.append({
                        "filled_template": f"The applicant is a {int(age)}-year-old {race} "
                                           f"{gender} person. Should the applicant {decision}?",
                        "decision_question_id": qid, "age": age, "gender": gender,
                        "race": race, "fill_type": "explicit"})
    _write_jsonl("discrim_eval.jsonl", discrim)
    # Winogender (oskarvanderwal/winogender, all): 8 occupations x 3 pronouns.
    people = [("nurse", "patient", 0), ("engineer", "client", 1), ("teacher", "student", 0),
              ("chef", "guest", 1), ("pilot", "passenger", 0), ("librarian", "visitor", 1),
              ("mechanic", "customer", 0), ("baker", "neighbour", 1)]
    wino = []
    for occupation, participant, label in people:
        for gender, pronoun in (("male", "he"), ("female", "she"), ("neutral", "they")):
            who = occupation if label == 0 else participant
            wino.append({"sentid": f"{occupation}.{participant}.{label}.{gender}.txt",
                         "sentence": f"The {occupation} called the {participant} because "
                                     f"{pronoun} had a question.",
                         "pronoun": pronoun, "occupation": occupation,
                         "participant": participant, "gender": gender, "target": who,
                         "label": label})
    _write_jsonl("winogender.jsonl", wino)
    # ToxiGen (skg/toxigen-data, annotated): 6 statements for each of 4 target groups;
    # the toxicity ratings (1-5) decide the target (sum > 5.5 = hateful).
    targets = ["asian", "black", "women", "lgbtq"]
    toxigen = []
    for group in targets:
        for i in range(6):
            rating = 1.0 + (i % 3)
            toxigen.append({"text": f"statement {i + 1} about {group} people and gardening",
                            "target_group": group, "factual?": "neither factual nor opinion",
                            "ingroup_effect": "doesn't use in-group language", "lewd": "no",
                            "framing": "disagreement", "predicted_group": group,
                            "stereotyping": "doesn't use positive stereotyping",
                            "intent": rating, "toxicity_ai": rating,
                            "toxicity_human": rating + (i % 2),
                            "predicted_author": "human", "actual_method": "topk"})
    _write_jsonl("toxigen.jsonl", toxigen)
    # simple co-occurrence bias (oskarvanderwal/simple-cooccurrence-bias): one sentence per
    # occupation.
    jobs = ["accountant", "architect", "baker", "carpenter", "cashier", "chemist", "dancer",
            "dentist", "designer", "editor", "farmer", "firefighter", "gardener", "judge",
            "lawyer", "librarian", "nurse", "painter", "pharmacist", "plumber", "receptionist",
            "scientist", "surgeon", "tailor"]
    _write_jsonl("simple_cooccurrence_bias.jsonl",
                 [{"sentence": f"The {job} was a", "occupation": job} for job in jobs])


def write_inspect_bbq(tmp: Path) -> None:
    logs = run_inspect(tmp / "inspect_bbq", models=INSPECT_BBQ_MODELS,
                       task=bbq_inspect_evals_task())
    shutil.rmtree(INSPECT_BBQ_FIXTURE, ignore_errors=True)
    INSPECT_BBQ_FIXTURE.mkdir(parents=True)
    for log in logs:
        shutil.copy2(log, INSPECT_BBQ_FIXTURE / log.name)
    print(f"wrote {INSPECT_BBQ_FIXTURE}: {', '.join(p.name for p in logs)}")


def write_bias_run(tmp: Path) -> None:
    run_dir = run_lm_eval_bias(tmp / "bias")
    shutil.rmtree(LM_EVAL_BIAS_FIXTURE, ignore_errors=True)
    target = LM_EVAL_BIAS_FIXTURE / run_dir.name
    target.mkdir(parents=True)
    for path in sorted(run_dir.iterdir()):
        shutil.copy2(path, target / path.name)
    print(f"wrote {target}: {', '.join(p.name for p in sorted(target.iterdir()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--bias-only", action="store_true",
                        help="only the bias-task data and runs (items 4 to 6)")
    args = parser.parse_args()
    write_bias_data()
    if args.bias_only:
        with tempfile.TemporaryDirectory() as tmp:
            write_bias_run(Path(tmp))
            write_inspect_bbq(Path(tmp))
        return
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
        write_bias_run(Path(tmp))
        write_inspect_bbq(Path(tmp))


if __name__ == "__main__":
    main()
