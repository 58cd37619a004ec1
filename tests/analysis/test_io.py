"""Loading results tables: every bad-input message, and every supported way in."""

from __future__ import annotations

import gzip
import io
import json
import tempfile

import numpy as np
import pandas as pd
import pytest

import analysis.io as aio
from analysis.design import (
    MAX_FACTOR_VALUES,
    Design,
    describe_columns,
    design_problems,
    make_factor,
)
from analysis.errors import AnalysisError, DesignError, LoadError
from analysis.io import load_results, read_results

# The table every successful load below must reproduce.
EXPECTED = pd.DataFrame({
    "model": ["m1", "m1", "m2", "m2"],
    "stigma": ["no stigma", "autism", "no stigma", "autism; severe"],
    "template": [0, 1, 0, 1],
    "score": [0.5, 1.25, -2.0, 3.0],
    "biased": [0, 1, 1, 0],
})


def _text(sep: str) -> str:
    def cell(v):
        v = str(v)
        return f'"{v}"' if sep in v else v

    rows = [sep.join(EXPECTED.columns)]
    rows += [sep.join(cell(v) for v in r) for r in EXPECTED.itertuples(index=False)]
    return "\n".join(rows) + "\n"


def _jsonl() -> bytes:
    return "".join(json.dumps(r) + "\n" for r in EXPECTED.to_dict(orient="records")).encode()


def _parquet() -> bytes:
    buf = io.BytesIO()
    EXPECTED.to_parquet(buf, index=False)
    return buf.getvalue()


def _same(frame: pd.DataFrame, expected: pd.DataFrame = EXPECTED) -> None:
    # Strings may come back as pandas' str dtype or object: compare values, not dtypes.
    pd.testing.assert_frame_equal(frame.reset_index(drop=True), expected, check_dtype=False)


# --- bad input: one message per problem ------------------------------------------------
BAD_INPUTS = {
    "empty file": (b"", "r.csv", {}, ["r.csv is empty"]),
    "only blank lines": (b"\n  \n\n", "r.csv", {}, ["r.csv is empty"]),
    "empty gzip": (gzip.compress(b""), "r.csv.gz", {}, ["r.csv.gz is empty"]),
    "header without rows": (b"model,stigma,biased\n", "r.csv", {},
                            ["r.csv has a header but no rows"]),
    "no header row": (b"1,2,0\n3,4,1\n", "r.csv", {},
                      ["first row (1, 2, 0) looks like data", "Add a header row"]),
    "semicolon file read with a comma": (b"model;stigma;biased\nm1;x;1\n", "r.csv",
                                         {"sep": ","},
                                         ["comma delimiter gives a single column named "
                                          "'model;stigma;biased'", "semicolon"]),
    "comma file read with a tab": (b"model,stigma\nm1,x\n", "r.tsv", {"sep": "\t"},
                                   ["tab delimiter gives a single column", "comma"]),
    "header the sniffer leaves as one column": (b'"model;stigma;biased"\nm1;x;1\nm2;y;0\n',
                                                "r.csv", {},
                                                ["single column named 'model;stigma;biased'",
                                                 "contains semicolon characters"]),
    "latin-1 bytes read as utf-8": ("model,stigma\nm1,x\nm2,café\n".encode("latin-1"),
                                    "r.csv", {},
                                    ["r.csv is not valid utf-8 text", "(line 3)", "latin-1"]),
    "unknown encoding": (b"a,b\n1,2\n", "r.csv", {"encoding": "klingon-8"},
                         ["'klingon-8' is not a known text encoding"]),
    "duplicate column names": (b"model,stigma,model\nm1,x,m2\n", "r.csv", {},
                               ["duplicate column names 'model'"]),
    "blank column name": (b"model,,biased\nm1,x,1\n", "r.csv", {},
                          ["column(s) 2 have no name"]),
    "ragged row": (b"model,stigma\nm1,x\nm2,y,z\nm3,w\n", "r.csv", {},
                   ["a row has more fields than the header", "line 3", "unquoted delimiter"]),
    "malformed JSON line": (b'{"a": 1}\n\n{"a": 2,\n{"a": 3}\n', "r.jsonl", {},
                            ["r.jsonl: line 3 is not valid JSON"]),
    "JSON line that is not an object": (b'{"a": 1}\n[1, 2]\n', "r.jsonl", {},
                                        ["line 2 is a JSON list"]),
    "JSON array of non-objects": (b"[1, 2, 3]", "r.json", {}, ["array of objects"]),
    "malformed JSON array": (b'[{"a": 1},\n {"a": }]', "r.json", {},
                             ["invalid JSON at line 2"]),
    "unreadable parquet": (b"PAR1 this is not really parquet", "r.parquet", {},
                           ["r.parquet is not a readable Parquet file"]),
    "text file named .parquet": (b"a,b\n1,2\n", "r.parquet", {},
                                 ["not a readable Parquet file"]),
    "truncated gzip": (gzip.compress(b"a,b\n1,2\n" * 100)[:30], "r.csv.gz", {},
                       ["looks gzip-compressed but cannot be decompressed"]),
}


@pytest.mark.parametrize("data,name,options,fragments", list(BAD_INPUTS.values()),
                         ids=list(BAD_INPUTS))
def test_bad_input_message(data, name, options, fragments):
    with pytest.raises(LoadError) as info:
        load_results(data, name=name, **options)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_load_error_is_an_analysis_error_and_a_value_error():
    with pytest.raises(AnalysisError):
        load_results(b"", name="x.csv")
    assert issubclass(LoadError, ValueError)


def test_bad_sources(tmp_path):
    with pytest.raises(LoadError, match="no such file"):
        load_results(tmp_path / "absent.csv")
    with pytest.raises(LoadError, match="is a folder"):
        load_results(tmp_path)
    with pytest.raises(LoadError, match="Cannot read a results table from a int"):
        load_results(42)  # type: ignore[arg-type]
    with pytest.raises(LoadError, match="unknown format 'xlsx'"):
        load_results(b"a,b\n1,2\n", format="xlsx")  # type: ignore[arg-type]


def test_dataframe_with_bad_columns():
    dupes = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(LoadError, match="duplicate column names 'a'"):
        load_results(dupes, name="frame")
    blank = pd.DataFrame([[1, 2]], columns=["a", " "])
    with pytest.raises(LoadError, match=r"column\(s\) 2 have no name"):
        load_results(blank)
    # 1 and "1" become the same name once columns are strings
    with pytest.raises(LoadError, match="duplicate column names '1'"):
        load_results(pd.DataFrame([[1, 2]], columns=[1, "1"]))


def test_parquet_with_duplicate_names_after_str():
    frame = pd.DataFrame([[1, 2]], columns=["x", "y"])
    buf = io.BytesIO()
    frame.to_parquet(buf)
    loaded = load_results(buf.getvalue(), name="p.parquet")
    assert list(loaded.columns) == ["x", "y"]


def test_free_text_column_refused_as_factor():
    n = MAX_FACTOR_VALUES + 1500
    rng = np.random.default_rng(0)
    text = "\n".join(f"m{i % 2},answer number {i} says {rng.integers(1e9)},{i % 2}"
                     for i in range(n))
    frame = load_results(("model,answer,biased\n" + text + "\n").encode(), name="r.csv")
    assert len(frame) == n
    with pytest.raises(DesignError, match=r"'answer' has 2,500 distinct values: that is free "
                                          r"text or an id"):
        make_factor(frame, "answer")
    # the same column declared as a factor in a design file: an error, not a crash
    design = Design.from_dict({"factors": [{"name": "answer", "values": ["x"]},
                                           {"name": "model", "values": ["m0", "m1"]}]})
    problems = design_problems(design, frame)
    assert [(p.severity, "2,500 distinct values" in p.message) for p in problems] == [
        ("error", True)]


# --- successful loads -------------------------------------------------------------------
@pytest.mark.parametrize("fmt,name,data", [
    ("csv", "r.csv", _text(",").encode()),
    ("tsv", "r.tsv", _text("\t").encode()),
    ("tsv sniffed in a .csv", "r.csv", _text("\t").encode()),
    ("semicolon csv", "r.csv", _text(";").encode()),
    ("pipe", "r.txt", _text("|").encode()),
    ("csv with BOM and CRLF", "r.csv", b"\xef\xbb\xbf" + _text(",").replace("\n", "\r\n")
     .encode()),
    ("parquet", "r.parquet", _parquet()),
    ("jsonl", "r.jsonl", _jsonl()),
    ("ndjson", "r.ndjson", _jsonl()),
    ("json array", "r.json", json.dumps(EXPECTED.to_dict(orient="records")).encode()),
    ("gzip csv", "r.csv.gz", gzip.compress(_text(",").encode())),
    ("gzip tsv", "r.tsv.gz", gzip.compress(_text("\t").encode())),
    ("gzip jsonl", "r.jsonl.gz", gzip.compress(_jsonl())),
    ("gzip parquet", "r.parquet.gz", gzip.compress(_parquet())),
    ("parquet without a name", None, _parquet()),
    ("jsonl without a name", None, _jsonl()),
    ("csv without a name", None, _text(",").encode()),
    ("parquet named .csv", "r.csv", _parquet()),
])
def test_formats_load_the_same_table(fmt, name, data):
    frame, meta = read_results(data, name=name)
    _same(frame)
    _same(load_results(data, name=name))
    assert meta.source_name == (name or "the uploaded file") and not frame.attrs


def test_forced_format_and_delimiter():
    _same(load_results(_text(";").encode(), name="r.data", format="csv", sep=";"))
    _same(load_results(_jsonl(), name="r.data", format="jsonl"))
    _same(load_results(_text("\t").encode(), name="r.csv", format="tsv"))


def test_other_encoding():
    data = "model,stigma\nm1,café\n".encode("latin-1")
    frame = load_results(data, name="r.csv", encoding="latin-1")
    assert frame["stigma"].tolist() == ["café"]


def test_short_rows_are_refused_not_padded():
    # issue 20: ragged rows loaded silently (a short row became missing values)
    with pytest.raises(LoadError, match="line 3: a row has fewer fields than the header"):
        load_results(b"a,b\n1,2\n3\n", name="r.csv")
    frame = load_results(b"a,b\n1,2\n3,\n", name="r.csv")  # an empty field is missing
    assert frame["b"].isna().tolist() == [False, True]


def test_jsonl_nested_objects_are_flattened():
    lines = [
        {"id": 1, "model": {"name": "m1", "params": {"temperature": 0}}, "biased": 1},
        {"id": 2, "model": {"name": "m2", "params": {"temperature": 0.7}}, "biased": 0},
    ]
    data = "\n".join(json.dumps(r) for r in lines).encode()
    frame = load_results(data, name="r.jsonl")
    # json_normalize puts the flattened columns after the top-level ones
    assert list(frame.columns) == ["id", "biased", "model.name", "model.params.temperature"]
    assert frame["model.name"].tolist() == ["m1", "m2"]
    assert frame["model.params.temperature"].tolist() == [0, 0.7]


def test_lists_become_json_text_so_columns_can_be_counted():
    data = (b'{"m": "a", "tags": ["x", "y"], "biased": 1}\n'
            b'{"m": "b", "tags": [], "biased": 0}\n'
            b'{"m": "c", "tags": ["x", "y"], "biased": 0}\n')
    frame = load_results(data, name="r.jsonl")
    assert frame["tags"].tolist() == ['["x", "y"]', "[]", '["x", "y"]']
    assert frame["tags"].nunique() == 2
    nested = pd.DataFrame({"m": ["a", "b"], "tags": [["x"], []], "meta": [{"k": "v"}, None]})
    buf = io.BytesIO()
    nested.to_parquet(buf)
    frame = load_results(buf.getvalue(), name="r.parquet")
    assert frame["tags"].tolist() == ['["x"]', "[]"]
    assert frame["meta"].iloc[0] == '{"k": "v"}'
    assert frame["meta"].isna().iloc[1]
    assert describe_columns(frame)["n_unique"].tolist() == [2, 2, 1]


def test_from_path_bytes_file_object_and_dataframe(tmp_path):
    path = tmp_path / "results.csv.gz"
    path.write_bytes(gzip.compress(_text(",").encode()))
    from_path, meta = read_results(path)
    _same(from_path)
    assert meta.source_name == "results.csv.gz"
    _same(load_results(str(path), name="shown.csv.gz"))

    _same(load_results(bytearray(_text(",").encode()), name="r.csv"))

    with open(path, "rb") as handle:
        from_handle, meta = read_results(handle)
    _same(from_handle)
    assert meta.source_name.endswith("results.csv.gz")
    _same(load_results(io.BytesIO(_parquet())))
    _same(load_results(io.StringIO(_text(",")), name="r.csv"))
    with tempfile.TemporaryFile() as tmp:  # its ``name`` is an int (a file descriptor)
        tmp.write(_text(",").encode())
        tmp.seek(0)
        _same(load_results(tmp))

    original = EXPECTED.copy()
    original.columns = ["model", "stigma", "template", "score", 5]
    from_frame, meta = read_results(original, name="frame")
    assert list(from_frame.columns) == ["model", "stigma", "template", "score", "5"]
    assert meta.source_name == "frame"
    from_frame.loc[0, "model"] = "changed"
    assert original.loc[0, "model"] == "m1"  # a copy, not the caller's frame


def test_large_text_goes_through_pyarrow_with_the_same_result(monkeypatch):
    monkeypatch.setattr(aio, "PYARROW_THRESHOLD", 0)
    _same(load_results(_text(",").encode(), name="r.csv"))
    _same(load_results(_text(";").encode(), name="r.csv"))
    # pyarrow refuses a ragged row; the C engine re-reads it to name the line
    with pytest.raises(LoadError, match="line 3"):
        load_results(b"model,stigma\nm1,x\nm2,y,z\n", name="r.csv")
