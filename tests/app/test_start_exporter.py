"""The figure exporter starts on a server's first page view, once (issue 44.4)."""

from __future__ import annotations

import sys
import types

import pytest

import analysis.export
import ui.widgets as widgets


@pytest.fixture
def calls(monkeypatch):
    made = []
    monkeypatch.setattr(analysis.export, "warm_up", lambda: made.append(1) or True)
    monkeypatch.setitem(widgets._EXPORTER, "asked", False)
    monkeypatch.delitem(sys.modules, "streamlit.testing.v1", raising=False)
    monkeypatch.delenv(widgets.NO_EXPORT_WARM_UP, raising=False)
    return made


def test_once_per_process(calls):
    assert widgets.start_exporter() is True
    assert widgets.start_exporter() is False
    assert calls == [1]


def test_not_under_apptest(calls, monkeypatch):
    monkeypatch.setitem(sys.modules, "streamlit.testing.v1", types.ModuleType("x"))
    assert widgets.start_exporter() is False and calls == []


def test_not_when_switched_off(calls, monkeypatch):
    monkeypatch.setenv(widgets.NO_EXPORT_WARM_UP, "1")
    assert widgets.start_exporter() is False and calls == []
