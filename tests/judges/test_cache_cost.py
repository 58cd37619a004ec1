"""The reply cache (judges/cache.py) and the price table (judges/cost.py)."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from judges.cache import ReplyCache, cache_key, default_cache_path
from judges.cost import Price, PriceTable, estimate_message_tokens, estimate_tokens
from judges.errors import PriceError
from judges.request import Reply


def test_put_get_contains_and_wal(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    reply = Reply(text='{"score": 3}', input_tokens=10, output_tokens=2, finish_reason="stop",
                  model="m")
    with ReplyCache(path) as cache:
        assert cache.get("k1") is None
        cache.put("k1", reply, provider="openai", model="m")
        assert cache.get("k1") == reply
        assert cache.contains(["k1", "k2"] + [f"x{i}" for i in range(1200)]) == {"k1"}
        assert len(cache) == 1
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _writer(path: str, start: int) -> None:
    with ReplyCache(path) as cache:
        for i in range(start, start + 50):
            cache.put(f"k{i}", Reply(text=str(i)))


def test_each_put_is_committed_and_processes_can_share_the_file(tmp_path):
    path = tmp_path / "c.sqlite"
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(str(path), s))
             for s in (0, 50)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    with ReplyCache(path) as cache:
        assert len(cache) == 100
        assert cache.get("k73").text == "73"


def test_cache_key_is_stable_and_ignores_none_params():
    ident = {"provider": "openai", "model": "m", "endpoint": "http://x"}
    msgs = (("user", "hello"),)
    k = cache_key(ident, {"temperature": 0.0, "seed": None}, {"rubric": "r@1"}, msgs)
    assert k == cache_key(ident, {"temperature": 0.0}, {"rubric": "r@1"}, msgs)
    assert k != cache_key(ident, {"temperature": 0.0}, {"rubric": "r@1"}, (("user", "hello "),))
    assert len(k) == 64 and int(k, 16) >= 0


def test_default_cache_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_CACHE", str(tmp_path / "x.sqlite"))
    assert default_cache_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("BIAS_WORKBENCH_JUDGE_CACHE")
    assert default_cache_path().name == "judge-cache.sqlite"


def test_price_lookup_exact_prefix_star_and_missing():
    table = PriceTable.from_dict({"sections": {
        "anthropic": {"claude-haiku-4-5": {"input": 1, "output": 5},
                      "claude-haiku": {"input": 9, "output": 9}},
        "local": {"*": {"input": 0, "output": 0}},
        "openai-compatible": {},
    }})
    assert table.lookup("anthropic", "claude-haiku-4-5") == Price(1, 5)
    assert table.lookup("anthropic", "claude-haiku-4-5-20251001") == Price(1, 5)  # longest prefix
    assert table.lookup("anthropic", "claude-haiku-3") == Price(9, 9)
    assert table.lookup("local", "llama3") == Price(0, 0)
    assert table.lookup("openai-compatible", "x") is None
    assert table.lookup("nowhere", "x") is None
    # 2,500 input tokens at $1/M + 400 output tokens at $5/M
    assert table.cost("anthropic", "claude-haiku-4-5", 2500, 400) == pytest.approx(0.0045)
    assert table.cost("openai-compatible", "x", 10, 10) is None


def test_price_per_thousand_is_scaled():
    table = PriceTable.from_dict({"per": 1000, "sections": {"openai": {
        "m": {"input": 0.001, "output": 0.002}}}})
    assert table.lookup("openai", "m") == Price(pytest.approx(1.0), pytest.approx(2.0))


@pytest.mark.parametrize(("data", "message"), [
    ({}, "needs a 'sections' mapping"),
    ({"sections": {"openai": {"m": {"input": 1}}}}, "openai/m needs numeric"),
    ({"sections": {"openai": {"m": {"input": "x", "output": 1}}}}, "openai/m needs numeric"),
    ({"sections": {"openai": {"m": {"input": -1, "output": 1}}}}, "negative"),
])
def test_price_table_errors(data, message):
    with pytest.raises(PriceError, match=message):
        PriceTable.from_dict(data)


def test_bundled_price_table_loads_and_prices_known_models(tmp_path):
    table = PriceTable.load()
    assert table.lookup("openai", "gpt-4o-mini") == Price(0.15, 0.60)
    assert table.lookup("local", "anything") == Price(0, 0)
    assert table.lookup("openai", "gpt-unknown") is None
    with pytest.raises(PriceError, match="no such price file"):
        PriceTable.load(tmp_path / "absent.yaml")
    (tmp_path / "bad.yaml").write_text("sections: [")
    with pytest.raises(PriceError, match="not valid YAML"):
        PriceTable.load(tmp_path / "bad.yaml")


def test_token_estimates():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_message_tokens((("system", "a" * 40), ("user", "b" * 401))) == 10 + 4 + 101 + 4


def _mode(path) -> int:
    import os
    import stat

    return stat.S_IMODE(os.stat(path).st_mode)


def test_cache_and_batch_records_are_private(tmp_path, monkeypatch):
    """Issue 43 item 4: the cache holds every visitor's prompts and replies and the batch
    records; its new folders are 0700, the file and its WAL 0600 (under umask 022), an
    older 0644 file becomes 0600, and the built-in folder is 0700."""
    import os

    from judges.batch_store import BatchStore

    old = os.umask(0o022)
    try:
        path = tmp_path / "a" / "b" / "c.sqlite"
        with ReplyCache(path) as cache:
            cache.put("k", Reply(text="x"))
            with BatchStore(path):
                pass
            assert _mode(path.with_name("c.sqlite-wal")) == 0o600
        assert (_mode(tmp_path / "a"), _mode(tmp_path / "a" / "b"), _mode(path)) == \
            (0o700, 0o700, 0o600)
        os.chmod(path, 0o644)
        ReplyCache(path).close()
        assert _mode(path) == 0o600
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.delenv("BIAS_WORKBENCH_JUDGE_CACHE", raising=False)
        (tmp_path / "home" / ".cache" / "bias-workbench").mkdir(parents=True, mode=0o755)
        ReplyCache(default_cache_path()).close()
        assert _mode(tmp_path / "home" / ".cache" / "bias-workbench") == 0o700
        assert _mode(default_cache_path()) == 0o600
        shared = tmp_path / "shared"  # a folder given by the user keeps its mode
        shared.mkdir(mode=0o755)
        ReplyCache(shared / "c.sqlite").close()
        assert _mode(shared) == 0o755 and _mode(shared / "c.sqlite") == 0o600
    finally:
        os.umask(old)
