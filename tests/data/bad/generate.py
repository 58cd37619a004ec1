"""Generators of the big bad-input cases, written at test time into a temporary folder
(``tests/data/bad/cases.yaml`` names them as ``generate:<name>``; nothing big is stored).

Each generator streams its file in blocks of about 1 MB, so writing the 300 MB case needs
a few MB of memory, and returns the facts a test checks (rows, deviations).

    python tests/data/bad/generate.py big_300mb /tmp/big.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

#: One block of the 300 MB file: 4 models x 6 categories x 2 outcomes = 48 rows.
_MODELS = ("m1", "m2", "m3", "m4")
_CATEGORIES = ("age", "disability", "gender", "nationality", "religion", "race")


def _block() -> tuple[bytes, int, int]:
    rows, deviations = [], 0
    for model in _MODELS:
        for category in _CATEGORIES:
            for biased in (0, 1):
                # a model's index decides how often it deviates: m1 never in 'age' ...
                flag = biased if (model, category) != ("m1", "age") else 0
                deviations += flag
                rows.append(f"{model},{category},{flag},padding-text-to-make-rows-longer\n")
    return "".join(rows).encode(), len(rows), deviations


def big_csv(path: str | Path, size_mb: float = 300) -> dict[str, int]:
    """A CSV of about ``size_mb`` MB (model, category, biased, note), streamed to ``path``.

    Returns
    -------
    dict
        ``rows``, ``deviations`` (rows with biased = 1), ``bytes`` written.
    """
    block, n_block, dev_block = _block()
    per_chunk = max(1, (1 << 20) // len(block))
    chunk = block * per_chunk
    header = b"model,category,biased,note\n"
    target = int(size_mb * (1 << 20))
    written, rows, deviations = len(header), 0, 0
    with open(path, "wb") as handle:
        handle.write(header)
        while written < target:
            handle.write(chunk)
            written += len(chunk)
            rows += n_block * per_chunk
            deviations += dev_block * per_chunk
    return {"rows": rows, "deviations": deviations, "bytes": written}


def many_values(path: str | Path, n: int = 100_000) -> dict[str, int]:
    """A results table whose ``prompt_id`` column has ``n`` distinct values (an id, not a
    factor), with a ``model`` factor (2 values) and a 0/1 ``biased`` outcome.

    Returns
    -------
    dict
        ``rows`` and ``deviations``.
    """
    deviations = 0
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write("prompt_id,model,biased\n")
        lines = []
        for i in range(n):
            biased = int(i % 3 == 0)
            deviations += biased
            lines.append(f"p{i:06d},m{1 + i % 2},{biased}\n")
            if len(lines) == 10_000:
                handle.write("".join(lines))
                lines.clear()
        handle.write("".join(lines))
    return {"rows": n, "deviations": deviations}


def dictionary_bomb(path: str | Path, n: int = 20_000_000, width: int = 100) -> dict[str, int]:
    """Issue 26's Parquet "decode bomb": ``n`` rows of one dictionary-encoded value of
    ``width`` characters in one column ``answer``, written without the Arrow schema (so
    nothing says it was categorical). About 250-340 KB on disk; its metadata claims about
    300 KB uncompressed; read naively it took 10.8 GB.

    Returns
    -------
    dict
        ``rows`` and ``bytes``.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    step = 1_000_000
    chunk = pa.DictionaryArray.from_arrays(pa.array(np.zeros(step, dtype="int32")),
                                           pa.array(["x" * width]))
    table = pa.table({"answer": pa.chunked_array([chunk] * (n // step))})
    pq.write_table(table, path, store_schema=False, row_group_size=n)
    return {"rows": n, "bytes": Path(path).stat().st_size}


def deep_nesting(path: str | Path, depth: int = 100_000) -> dict[str, int]:
    """A JSON Lines file whose one record nests ``depth`` arrays (a ``RecursionError``
    in the JSON parser before issue 26)."""
    Path(path).write_text('{"a": ' + "[" * depth + "]" * depth + "}\n", encoding="utf-8")
    return {"rows": 1}


def fifo(path: str | Path) -> dict[str, int]:
    """A named pipe where a results file is expected (reading it would block forever)."""
    import os

    os.mkfifo(path)
    return {}


def wide_columns(path: str | Path, n_columns: int = 1_000, n_rows: int = 5) -> dict[str, int]:
    """Issue 43's upload that pinned a core: ``n_columns`` columns ``c0000`` ... of
    seeded letters ``a``-``c`` (every column a candidate factor) x ``n_rows`` rows, written
    as CSV, Parquet or JSON Lines by the file's extension (1,000 x 5 is about 10 KB).

    Returns
    -------
    dict
        ``rows``, ``columns`` and ``bytes``.
    """
    import json
    import random

    rng = random.Random(n_columns)
    names = [f"c{i:04d}" for i in range(n_columns)]
    rows = [[rng.choice("abc") for _ in names] for _ in range(n_rows)]
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)}), path)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in rows),
                        encoding="utf-8")
    else:
        path.write_text("\n".join(",".join(r) for r in [names, *rows]) + "\n",
                        encoding="utf-8")
    return {"rows": n_rows, "columns": n_columns, "bytes": path.stat().st_size}


def _wide(n_columns: int, suffix: str):
    def write(path: str | Path) -> dict[str, int]:
        return wide_columns(path, n_columns)
    write.__doc__ = f"{n_columns:,} columns x 5 rows ({suffix})."
    return write


GENERATORS = {"fifo.csv": fifo, "big_300mb": big_csv, "many_values": many_values,
              "dictionary_bomb.parquet": dictionary_bomb, "deep_nesting.jsonl": deep_nesting,
              "columns_1000": _wide(1_000, "csv"), "columns_100000": _wide(100_000, "csv"),
              "columns_20000.parquet": _wide(20_000, "parquet"),
              "columns_100000.jsonl": _wide(100_000, "jsonl")}


if __name__ == "__main__":
    print(GENERATORS[sys.argv[1]](sys.argv[2]))
