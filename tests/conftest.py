"""Shared paths and fixtures.

The raw benchmark files the tests need ship gzip-compressed in ``tests/data`` (same
layout as the project's shared data folder, licences included: see
``tests/data/README.md``), so a fresh clone runs every test; the bundled samples live in
``sample_data/``. ``needs_shared`` remains as the mark of the tests that read them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "sample_data"
BBQ_SAMPLE = SAMPLE_DIR / "bbq_unifiedqa.csv.gz"
SHARED_DATA = REPO / "tests" / "data"
SSQA_TABLE = SHARED_DATA / "ssqa" / "ssqa_factor_table.csv.gz"



@pytest.fixture(autouse=True)
def _main_module_restored():
    """Put ``sys.modules["__main__"]`` back after each test: Streamlit's script runner
    (every AppTest) replaces it with the page's module and never restores it, and a
    process started later by ``multiprocessing``'s spawn re-runs that module (a
    ``from_function`` page then dies with ``NameError: __args``)."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


#: Mark for tests that read the raw SocialStigmaQA factor table.
needs_shared = pytest.mark.skipif(not SSQA_TABLE.is_file(),
                                  reason=f"test data missing from {SHARED_DATA}")

#: The SSQA factor columns (everything but the row id).
SSQA_FACTORS = ["cot", "template", "stigma", "pachankis_cluster", "gender", "gender_careful",
                "prompt_style", "biased_answer"]


@pytest.fixture(scope="session")
def _ssqa_cached() -> pd.DataFrame:
    from analysis.io import load_results

    return load_results(SSQA_TABLE)


@pytest.fixture
def ssqa_table(_ssqa_cached: pd.DataFrame) -> pd.DataFrame:
    """The SSQA factor table as ``load_results`` reads it (a fresh copy per test)."""
    return _ssqa_cached.copy()
