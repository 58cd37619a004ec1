"""The bad-input corpus (``tests/data/bad/cases.yaml``): cases per kind and channel, the
file of a case (stored, or generated into a temporary folder by ``generate.py``), and the
expected message, error and load facts of each channel."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

BAD = Path(__file__).resolve().parent / "data" / "bad"
MANIFEST = BAD / "cases.yaml"
GOOD_RESULTS = BAD / "good_results.csv"
KINDS = ("upload", "design", "judge_reply", "session_link")
CHANNELS = ("ui", "cli", "api")


@dataclass(frozen=True)
class Case:
    """One manifest entry (see the header of ``cases.yaml`` for the fields)."""

    id: str
    file: str
    kind: str
    tested: tuple[str, ...]
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def generated(self) -> str | None:
        """The generator's name for ``generate:<name>`` files, else None."""
        return self.file.split(":", 1)[1] if self.file.startswith("generate:") else None

    @property
    def name(self) -> str:
        """The file name a message names (a generated file: ``<generator>.csv``, or the
        generator's name when it has an extension, ``dictionary_bomb.parquet``)."""
        if not self.generated:
            return self.file
        return self.generated if "." in self.generated else f"{self.generated}.csv"

    def expect(self, channel: str) -> str | None:
        """The message fragment the user reads on ``channel`` (None: nothing specific)."""
        value = self.raw.get("expect")
        return value.get(channel) if isinstance(value, dict) else value

    def error(self, channel: str) -> str | None:
        """The exception class name the API raises (also the CLI's, for messages)."""
        value = self.raw.get("error")
        return value.get(channel) if isinstance(value, dict) else value

    def get(self, key: str, default: Any = None) -> Any:
        """Any other field of the entry."""
        return self.raw.get(key, default)


def load_manifest() -> tuple[list[Case], dict[str, Any]]:
    """The cases of ``cases.yaml`` and its top-level settings."""
    data = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    cases = [Case(c["id"], c["file"], c["kind"], tuple(c["tested"]), c) for c in data["cases"]]
    return cases, {k: v for k, v in data.items() if k != "cases"}


CASES, SETTINGS = load_manifest()


def params(kind: str, channel: str) -> list:
    """``pytest.param(case, id=case.id)`` for every case of ``kind`` tested on ``channel``."""
    return [pytest.param(c, id=c.id) for c in CASES if c.kind == kind and channel in c.tested]


def _generate_module():
    spec = importlib.util.spec_from_file_location("bad_generate", BAD / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


_GENERATED: dict[tuple[str, str], tuple[Path, dict]] = {}


def case_path(case: Case, folder: Path) -> tuple[Path, dict]:
    """The case's file and the generator's facts (``{}`` for a stored file). A generated
    file is written once per folder (a session's temporary folder) and reused."""
    if case.generated is None:
        return BAD / case.file, {}
    key = (case.generated, str(folder))
    if key not in _GENERATED:
        path = folder / case.name
        facts = _generate_module().GENERATORS[case.generated](path)
        _GENERATED[key] = (path, facts)
    return _GENERATED[key]
