"""Judges CLI argument validation (issue 20 item 7): bad options exit 2 with a message,
before any request is sent or paid for."""

from __future__ import annotations

import pytest

from judges.answer import AnswerSettings
from judges.categorise import CategoriseConfig
from judges.cli import EXIT_INPUT, main
from judges.errors import JudgesError
from judges.judge import JudgeConfig
from tests.conftest import REPO

FOURSTAGE = REPO / "judges" / "data" / "fourstage_illustrative.csv"
QUESTIONS = REPO / "judges" / "data" / "fourstage_questions.csv"


def _exit(capsys, argv) -> tuple[int, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: usage and message
        code = exc.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize("option, value, fragment", [
    ("--concurrency", "0", "must be at least 1, not 0"),
    ("--timeout", "0", "must be greater than 0"),
    ("--max-retries", "-1", "must be at least 0, not -1"),
    ("--max-tokens", "0", "must be at least 1, not 0"),
    ("--temperature", "-1", "temperature must be a number >= 0"),
    ("--poll-interval", "0", "must be greater than 0"),
    ("--max-resubmits", "x", "expected a whole number, not 'x'"),
])
def test_score_options(capsys, tmp_path, option, value, fragment):
    code, err = _exit(capsys, ["score", FOURSTAGE, "--provider", "openai", "--model", "m",
                               "--out", tmp_path / "o.csv", option, value])
    assert code == 2 and fragment in err and option in err, err


@pytest.mark.parametrize("argv, fragment", [
    (["--seed", "x"], "--seed: 'x' is not valid"),
    (["--seed", "1,-2"], "a seed is a whole number >= 0"),
    (["--temperature", "0,hot"], "--temperature: 'hot' is not valid"),
    (["--concurrency", "0"], "must be at least 1, not 0"),
])
def test_answer_options(capsys, tmp_path, argv, fragment):
    code, err = _exit(capsys, ["answer", QUESTIONS, "--provider", "openai", "--model", "m",
                               "--out", tmp_path / "o.csv", *argv])
    assert code == EXIT_INPUT == 2 and fragment in err, err


def test_agreement_options(capsys, tmp_path):
    code, err = _exit(capsys, ["agreement", FOURSTAGE, "--confidence", "1"])
    assert code == 2 and "must be less than 1" in err
    code, err = _exit(capsys, ["agreement", FOURSTAGE, "--n-boot", "0"])
    assert code == 2 and "must be at least 1" in err


def test_output_folder_refused_before_any_request(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    # no server listens on port 9: a request would fail, but none is made
    code, err = _exit(capsys, ["score", FOURSTAGE, "--provider", "openai", "--model", "m",
                               "--base-url", "http://127.0.0.1:9/v1", "--no-cache",
                               "--out", tmp_path])
    assert code == 2 and "is a folder" in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, err = _exit(capsys, ["score", FOURSTAGE, "--provider", "openai", "--model", "m",
                               "--no-cache", "--out", blocker / "sub" / "o.csv"])
    assert code == 2 and "Cannot create the folder" in err


def test_settings_files_that_cannot_be_read(capsys, tmp_path):
    latin = tmp_path / "system.txt"
    latin.write_bytes("R\u00e9ponds".encode("latin-1"))
    code, err = _exit(capsys, ["answer", QUESTIONS, "--provider", "openai", "--model", "m",
                               "--out", tmp_path / "o.csv", "--system-prompt-file", latin])
    assert code == 2 and "--system-prompt-file" in err and "is not UTF-8 text" in err
    code, err = _exit(capsys, ["answer", QUESTIONS, "--provider", "openai", "--model", "m",
                               "--out", tmp_path / "o.csv", "--system-prompt-file", tmp_path])
    assert code == 2 and "is a folder" in err
    code, err = _exit(capsys, ["score", FOURSTAGE, "--provider", "openai", "--model", "m",
                               "--out", tmp_path / "o.csv", "--prices", tmp_path / "none.yaml"])
    assert code == 2 and "none.yaml" in err


@pytest.mark.parametrize("make, fragment", [
    (lambda: JudgeConfig(max_tokens=0),
     "JudgeConfig: max_tokens must be None or a whole number >= 1"),
    (lambda: JudgeConfig(temperature=float("nan")), "temperature must be None or a number"),
    (lambda: CategoriseConfig(max_tokens=-5), "CategoriseConfig: max_tokens"),
    (lambda: AnswerSettings(seed="x"), "AnswerSettings: seed must be None or a whole number"),
    (lambda: AnswerSettings(temperature=-0.5), "temperature must be None or a number >= 0"),
])
def test_api_settings_are_checked(make, fragment):
    with pytest.raises(JudgesError, match=fragment):
        make()
    assert JudgeConfig(temperature=None, max_tokens=1).max_tokens == 1
