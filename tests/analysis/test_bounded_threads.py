"""Small Parquet reads are decoded on the calling thread, large ones with Arrow's pool
(``analysis.bounded.ONE_THREAD_BYTES``; issue 44, the CLI's CPU): the same frame either
way."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis import bounded


@pytest.fixture(scope="module")
def data() -> bytes:
    rng = np.random.default_rng(7)
    n = 150_000  # categoricals from CATEGORY_FROM_ROWS on
    frame = pd.DataFrame({
        "model": np.array(["m0", "m1", "m2"])[rng.integers(0, 3, n)],
        "template": [f"t{i:03d}" for i in rng.integers(0, 300, n)],
        "note": [f"free text {i}" for i in range(n)],  # distinct: stays text
        "score": rng.normal(size=n), "deviation": rng.integers(0, 2, n).astype(np.int8)})
    buf = io.BytesIO()
    frame.to_parquet(buf)
    return buf.getvalue()


def declared(data: bytes, columns: list[str] | None) -> int:
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    return sum(meta.row_group(i).column(j).total_uncompressed_size
               for i in range(meta.num_row_groups)
               for j in range(meta.row_group(i).num_columns)
               if columns is None or meta.row_group(i).column(j).path_in_schema in columns)


def test_the_threshold_counts_the_columns_read(data, monkeypatch):
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    few = ["model", "deviation"]
    assert 0 < declared(data, few) < declared(data, None) < bounded.ONE_THREAD_BYTES
    assert not bounded._threaded(meta, few) and not bounded._threaded(meta, None)
    # between the two sizes: the whole file is read with the pool, two columns are not
    monkeypatch.setattr(bounded, "ONE_THREAD_BYTES", declared(data, few))
    assert not bounded._threaded(meta, few)
    assert bounded._threaded(meta, None)
    monkeypatch.setattr(bounded, "ONE_THREAD_BYTES", declared(data, few) - 1)
    assert bounded._threaded(meta, few)


@pytest.mark.parametrize("columns", [None, ["model", "template", "deviation"]])
def test_one_thread_or_the_pool_read_the_same_frame(data, monkeypatch, columns):
    one = bounded.read_parquet_bounded(data, "x.parquet", columns)
    monkeypatch.setattr(bounded, "ONE_THREAD_BYTES", 0)
    pool = bounded.read_parquet_bounded(data, "x.parquet", columns)
    pd.testing.assert_frame_equal(one, pool)
    assert isinstance(one["template"].dtype, pd.CategoricalDtype)
    assert list(one["template"].cat.categories) == list(pool["template"].cat.categories)
