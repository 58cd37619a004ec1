"""``python -m judges ... --encoding ENC``: tables that are not UTF-8 (Latin-1, UTF-16 LE
without a byte-order mark) are read through :func:`analysis.io.load_results`, a mark
still wins, and the refusals name the option (the messages of ``python -m analysis``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.cli import EXIT_INPUT, main
from judges.fourstage import sample_path
from tests.judges.judge_server import FakeLLMServer

#: Latin-1 encodable, nine accented letters: read as UTF-8 it fails, read wrongly
#: (Latin-1 bytes of UTF-8 text) it would turn into longer mojibake.
ACCENTED = "Zoë, née à Besançon, a préféré le café crème."
MODEL = "modèle-b"
UNKNOWN = "error: 'klingon' is not a known text encoding (for example utf-8, latin-1, " \
          "cp1252, utf-16).\n"


@pytest.fixture(scope="module")
def fourstage_text() -> str:
    """The bundled sample, first 8 rows (stages 1-4, 12 judge calls), with an accented
    answer and an accented model name, as CSV text."""
    frame = pd.read_csv(sample_path()).head(8)
    frame["model"] = frame["model"].replace("model-b", MODEL)
    frame.loc[0, "answer"] = ACCENTED
    assert frame["stage"].tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    return frame.to_csv(index=False)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _estimate(path: Path, *extra: str) -> list[str]:
    return ["estimate", str(path), "--provider", "openai", "--model", "judge-x",
            "--base-url", "http://127.0.0.1:9/v1", "--no-cache", *extra]


def _score(path: Path, srv: FakeLLMServer, out: Path, *extra: str) -> list[str]:
    return ["score", str(path), "--provider", "openai", "--model", "judge-x", "--base-url",
            srv.openai_url, "--no-cache", "--quiet", "--out", str(out), *extra]


@pytest.mark.parametrize("codec, refusal", [
    ("latin-1", "is not valid utf-8 text: byte b'\\xeb, n"),
    ("utf-16-le", "looks like UTF-16 text (little-endian) without a byte-order mark"),
])
def test_fourstage_file_needs_and_takes_the_encoding(fourstage_text, tmp_path, capsys, codec,
                                                     refusal):
    plain = _write(tmp_path / "utf8.csv", fourstage_text.encode("utf-8"))
    other = _write(tmp_path / "other.csv", fourstage_text.encode(codec))
    assert not other.read_bytes().startswith((b"\xff\xfe", b"\xef\xbb\xbf"))  # no mark

    # Without --encoding: exit 2 before any request, the message names the option.
    with FakeLLMServer() as srv:
        assert main(_score(other, srv, tmp_path / "j.csv")) == EXIT_INPUT
        assert main(_estimate(other)) == EXIT_INPUT
        assert srv.n_requests == 0
    err = capsys.readouterr().err
    assert err.count(refusal) == 2 and err.count("--encoding") == 2
    assert not (tmp_path / "j.csv").exists()

    # estimate: the same calls and tokens as for the UTF-8 file (text read as it was written:
    # mojibake would lengthen the prompt of row 1 by 9 characters and its token estimate).
    assert main(_estimate(plain)) == 0
    expected = capsys.readouterr().out
    assert "judgments:            12" in expected
    assert main(_estimate(other, "--encoding", codec)) == 0
    assert capsys.readouterr().out == expected

    # score: the accented answer reaches the judge's prompt, the judged file keeps it.
    out = tmp_path / "judged.csv"
    with FakeLLMServer() as srv:
        assert main(_score(other, srv, out, "--encoding", codec)) == 0
        prompts = [c.prompt for c in srv.calls]
    assert len(prompts) == 12
    assert sum(ACCENTED in p for p in prompts) == len(C.STAGE_METRICS[1])  # row 1's calls
    judged = pd.read_csv(out, encoding="utf-8")  # what we write is UTF-8
    assert judged.loc[0, "answer"] == ACCENTED
    assert set(judged["model"]) == {"model-a", MODEL}


def test_a_byte_order_mark_wins_over_the_encoding(fourstage_text, tmp_path):
    marked = _write(tmp_path / "bom.csv", b"\xef\xbb\xbf" + fourstage_text.encode("utf-8"))
    wide = _write(tmp_path / "bom16.csv", b"\xff\xfe" + fourstage_text.encode("utf-16-le"))
    for path in (marked, wide):
        with FakeLLMServer() as srv:
            assert main(_score(path, srv, tmp_path / "j.csv", "--encoding", "latin-1")) == 0
            assert sum(ACCENTED in c.prompt for c in srv.calls) == len(C.STAGE_METRICS[1])
        assert pd.read_csv(tmp_path / "j.csv").loc[0, "answer"] == ACCENTED


@pytest.fixture(scope="module")
def judged_text(fourstage_text, tmp_path_factory) -> str:
    """A judged file of the accented sample with human labels (CSV text)."""
    tmp = tmp_path_factory.mktemp("judged")
    src = _write(tmp / "four.csv", fourstage_text.encode("utf-8"))
    with FakeLLMServer() as srv:
        assert main(_score(src, srv, tmp / "judged.csv")) == 0
    judged = pd.read_csv(tmp / "judged.csv")
    judged["human_ics"] = judged["ics"].map(lambda s: s if pd.isna(s) else 6 - s)
    return judged.to_csv(index=False)


def test_metrics_on_a_latin1_judged_file(judged_text, tmp_path, capsys):
    plain = _write(tmp_path / "judged.csv", judged_text.encode("utf-8"))
    latin = _write(tmp_path / "judged_l1.csv", judged_text.encode("latin-1"))
    assert main(["metrics", str(latin), "--json"]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "judged_l1.csv is not valid utf-8 text" in err and "--encoding" in err
    assert main(["metrics", str(plain), "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    assert main(["metrics", str(latin), "--json", "--encoding", "latin-1"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == expected
    assert {r["model"] for r in got["metrics"]} == {"model-a", MODEL}
    by_model = {(r["stage"], r["model"]): r[C.N_ROWS] for r in got["metrics"]}
    assert by_model[(1, MODEL)] == 1 and by_model[(1, "model-a")] == 1


def test_agreement_and_reliability_on_latin1_judged_files(judged_text, tmp_path, capsys):
    plain = _write(tmp_path / "judged.csv", judged_text.encode("utf-8"))
    latin = _write(tmp_path / "judged_l1.csv", judged_text.encode("latin-1"))
    agree = ["--judge-col", "ics", "--human-col", "human_ics", "--ci", "none"]
    assert main(["agreement", str(latin), *agree]) == EXIT_INPUT
    assert "--encoding" in capsys.readouterr().err
    assert main(["agreement", str(plain), *agree, "--out", str(tmp_path / "a.csv")]) == 0
    assert main(["agreement", str(latin), *agree, "--out", str(tmp_path / "b.csv"),
                 "--encoding", "latin-1"]) == 0
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    pd.testing.assert_frame_equal(a, b)
    overall = a[a["stage"].astype(str) == "all"].iloc[0]
    assert overall["n"] == 4 and overall["pearson_r"] == pytest.approx(-1.0)  # 6 - score
    # --other (a second judged file) is read with the same encoding.
    assert main(["agreement", str(latin), "--other", str(latin), "--ci", "none",
                 "--encoding", "latin-1", "--out", str(tmp_path / "c.csv")]) == 0
    same = pd.read_csv(tmp_path / "c.csv")["pearson_r"].dropna()
    assert len(same) and same.to_numpy() == pytest.approx(1.0)

    judged = pd.read_csv(plain)
    second = judged.assign(ics=judged["human_ics"], judge="openai:other [x]")
    other = _write(tmp_path / "other_l1.csv", second.to_csv(index=False).encode("latin-1"))
    capsys.readouterr()
    assert main(["reliability", str(latin), str(other), "--n-boot", "0"]) == EXIT_INPUT
    assert "--encoding" in capsys.readouterr().err
    assert main(["reliability", str(latin), str(other), "--n-boot", "0", "--json",
                 "--encoding", "latin-1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judges"] == ["openai:judge-x", "openai:other"]


def test_categorise_and_answer_read_the_encoding(tmp_path, capsys):
    texts = pd.DataFrame({"answer": [ACCENTED, "Plain."], "model": [MODEL, "m"]})
    latin = _write(tmp_path / "texts.csv", texts.to_csv(index=False).encode("latin-1"))
    with FakeLLMServer() as srv:
        base = ["categorise", str(latin), "--text-col", "answer", "--categories", "a,b",
                "--provider", "openai", "--model", "judge-x", "--base-url", srv.openai_url,
                "--no-cache", "--quiet", "--out", str(tmp_path / "cat.csv")]
        assert main(base) == EXIT_INPUT
        assert srv.n_requests == 0
        main([*base, "--encoding", "latin-1"])  # replies are not categories: exit 3
        assert sum(ACCENTED in c.prompt for c in srv.calls) == 1
    prompts = pd.DataFrame({"prompt": [ACCENTED]})
    latin = _write(tmp_path / "prompts.csv", prompts.to_csv(index=False).encode("latin-1"))
    with FakeLLMServer() as srv:
        base = ["answer", str(latin), "--provider", "openai", "--model", "mut", "--base-url",
                srv.openai_url, "--no-cache", "--quiet", "--out", str(tmp_path / "ans.csv")]
        assert main(base) == EXIT_INPUT
        assert main([*base, "--encoding", "latin-1"]) == 0
        assert [c.prompt for c in srv.calls] == [ACCENTED]
    assert capsys.readouterr().err.count("is not valid utf-8 text") == 2


@pytest.mark.parametrize("command", [
    ["score", "IN", "--provider", "embedding", "--model", "bundled", "--out", "OUT"],
    ["estimate", "IN", "--provider", "openai", "--model", "m"],
    ["metrics", "IN"],
    ["agreement", "IN"],
    ["reliability", "IN", "IN"],
    ["categorise", "IN", "--text-col", "t", "--provider", "openai", "--model", "m",
     "--out", "OUT"],
    ["answer", "IN", "--provider", "openai", "--model", "m", "--out", "OUT"],
])
def test_an_unknown_encoding_exits_2_before_anything(fourstage_text, tmp_path, capsys,
                                                     command):
    src = _write(tmp_path / "four.csv", fourstage_text.encode("utf-8"))
    out = tmp_path / "sub" / "out.csv"
    argv = [str(src) if a == "IN" else str(out) if a == "OUT" else a for a in command]
    assert main([*argv, "--encoding", "klingon"]) == EXIT_INPUT
    assert capsys.readouterr().err == UNKNOWN
    assert not out.parent.exists()  # refused before the output folder is made
    assert main([*argv, "--encoding", " "]) == EXIT_INPUT
    assert "' ' is not a text encoding name" in capsys.readouterr().err


def test_every_table_reading_command_lists_the_option(capsys):
    for command in ("score", "estimate", "metrics", "agreement", "reliability", "categorise",
                    "answer"):
        assert main([command, "--help"]) == 0
        assert "--encoding ENC" in capsys.readouterr().out
    assert main(["batches", "--help"]) == 0
    assert "--encoding" not in capsys.readouterr().out
