"""Fixtures of the judges tests: a loopback LLM server and small tables.

No test reaches the internet: providers point at :class:`FakeLLMServer` on 127.0.0.1,
and the environment's keys and base URLs are removed for the duration of each test.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from judges.fourstage import validate_fourstage
from tests.judges.helpers import make_row
from tests.judges.judge_server import FakeLLMServer


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real keys, no real endpoints, a private cache path; the pages may call the
    loopback servers (any port of 127.0.0.1: the operator's allow-list of
    judges/endpoints.py, narrowed again by the tests of that rule)."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_ENDPOINTS", "http://127.0.0.1:*")
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_CACHE", str(tmp_path / "judge-cache.sqlite"))


@pytest.fixture
def server():
    """A started loopback server with the default (hashed-score) behaviour."""
    srv = FakeLLMServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def four_rows() -> pd.DataFrame:
    """One row per stage (1 + 3 + 1 + 1 = 6 judge calls)."""
    return validate_fourstage(pd.DataFrame([make_row(i, s) for i, s in enumerate((1, 2, 3, 4))]))
