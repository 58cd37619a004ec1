"""Widgets for an analysis's options that a page does not lay out itself.

A page draws its main options by hand (labels, layout, session-state keys) and calls
:func:`other_options` for the rest of its options object (``analysis/options``): each
remaining option gets a widget from its declaration (choices: a select box; a switch: a
checkbox; a number: a number input; text: a text input), with the option's label,
default and help. So an option added to the options object appears on the page without
an edit here (``docs/architecture.md``, "Add an option").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from analysis.options import OptionError, Options
from ui.widgets import md

__all__ = ["other_options"]


def other_options(cls: type[Options], drawn: Iterable[str], *, key: str) -> dict[str, Any]:
    """Widgets for the options of ``cls`` that are arguments of the analysis function
    (``call``) and not in ``drawn``; their values, checked by the options object (a value
    it refuses is said, and its default used). Cluster columns and repeated options are
    left to the page (they need the table's columns)."""
    drawn = set(drawn)
    given: dict[str, Any] = {}
    for name, (default, spec) in cls.specs().items():
        if name in drawn or not spec.call or spec.cluster or spec.repeat:
            continue
        label, helptext, k = md(cls.label(name)), cls.help(name), f"{key}_{name}"
        if spec.choices:
            choices = list(spec.choices)
            given[name] = st.selectbox(label, choices, index=choices.index(default), key=k,
                                       help=helptext, format_func=lambda v: str(v))
        elif isinstance(default, bool):
            given[name] = st.checkbox(label, value=default, key=k, help=helptext)
        elif isinstance(default, int):
            given[name] = st.number_input(label, value=default, step=1, key=k, help=helptext)
        elif isinstance(default, float):
            given[name] = st.number_input(label, value=default, key=k, help=helptext,
                                          format="%g")
        else:
            text = st.text_input(label, value="" if default is None else str(default), key=k,
                                 help=helptext)
            given[name] = text.strip() or default
    values = {}
    for name, value in given.items():
        try:
            values[name] = getattr(cls.coerce({name: value}), name)
        except OptionError as exc:
            st.error(md(f"{cls.label(name)}: {exc} The default is used."))
            values[name] = cls.default(name)
    return values
