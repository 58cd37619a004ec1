"""Filling a rubric's prompt template with the texts of one row.

Each text sits between a line ``<<<LABEL>>>`` and a line ``<<<END LABEL>>>``. Before
that, :func:`neutralise` shortens every run of three or more ``<`` or ``>`` in the text
to two, so no text under judgement can contain (or fake) a delimiter, and the prompt
tells the judge that everything inside the markers is material, not instructions. The
reply parser never looks at the prompt, so whatever the texts say cannot change how a
reply is parsed.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from analysis.values import is_blank
from judges.rubric import Rubric

__all__ = ["build_messages", "delimited", "neutralise", "render_texts"]


_ANGLES = re.compile(r"<{3,}|>{3,}")


def neutralise(text: str) -> str:
    """``text`` with runs of 3+ ``<`` or ``>`` cut to two (no fake ``<<<DELIMITERS>>>``)."""
    return _ANGLES.sub(lambda m: m.group(0)[:2], text)


def delimited(label: str, text: str) -> str:
    """One text block: ``<<<LABEL>>>``, the neutralised text, ``<<<END LABEL>>>``."""
    return f"<<<{label}>>>\n{neutralise(str(text).strip())}\n<<<END {label}>>>"


def render_texts(rubric: Rubric, row: Mapping[str, Any]) -> str:
    """The delimited text blocks of ``row`` for ``rubric`` (optional empty texts left out).

    Raises
    ------
    KeyError
        A required field is missing from ``row`` (validated files never do this).
    """
    blocks = []
    for slot in rubric.texts:
        value = row.get(slot.field)
        if is_blank(value):
            if slot.optional:
                continue
            raise KeyError(f"{rubric.metric}: the text {slot.field!r} is missing or empty.")
        blocks.append(delimited(slot.label, str(value)))
    return "\n\n".join(blocks)


def build_messages(rubric: Rubric, row: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The ``(role, content)`` messages asking the judge to rate ``row`` on ``rubric``.

    Returns
    -------
    tuple
        ``(("system", rubric.system), ("user", filled template))``.
    """
    user = string.Template(rubric.template).substitute(
        name=rubric.name, measures=rubric.measures, levels=rubric.levels_text,
        texts=render_texts(rubric, row))
    return (("system", rubric.system), ("user", user))
