"""Prices and cost arithmetic for judge runs.

The price table is a data file (``judges/prices.yaml``, or any file of the same shape)
giving US dollars per million input and output tokens, per section (provider kind) and
model. Actual cost comes from the token usage in each reply; the estimate before a run
counts tokens from the prompt text (about four characters per token) and assumes a
typical reply length.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from judges.errors import PriceError

__all__ = [
    "CHARS_PER_TOKEN", "PRICES_ENV", "Price", "PriceTable", "TOKENS_PER_MESSAGE",
    "estimate_message_tokens", "estimate_tokens",
]


#: Characters per token used by :func:`estimate_tokens` (a rough rule for English text).
CHARS_PER_TOKEN = 4.0
#: Tokens added per chat message for role markers (rough).
TOKENS_PER_MESSAGE = 4
#: Environment variable naming a price file that replaces the bundled one.
PRICES_ENV = "BIAS_WORKBENCH_PRICES"


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Dollars for the given token counts."""
        return (input_tokens * self.input_per_million
                + output_tokens * self.output_per_million) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """Prices by section and model (see ``judges/prices.yaml`` for the lookup rules)."""

    sections: Mapping[str, Mapping[str, Price]]
    source: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "prices") -> PriceTable:
        """Validate a parsed price file.

        Raises
        ------
        PriceError
            No ``sections`` mapping, or a model entry without numeric, non-negative
            ``input`` and ``output`` prices.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("sections"), Mapping):
            raise PriceError(f"{source}: a price file needs a 'sections' mapping.")
        per = float(data.get("per", 1_000_000))
        sections: dict[str, dict[str, Price]] = {}
        for section, models in data["sections"].items():
            sections[str(section)] = {}
            for model, entry in (models or {}).items():
                try:
                    inp, out = float(entry["input"]), float(entry["output"])
                except (TypeError, KeyError, ValueError):
                    raise PriceError(f"{source}: {section}/{model} needs numeric 'input' and "
                                     "'output' prices.") from None
                if inp < 0 or out < 0 or not (math.isfinite(inp) and math.isfinite(out)):
                    raise PriceError(f"{source}: {section}/{model} has a negative or infinite "
                                     "price.")
                scale = 1_000_000 / per
                sections[str(section)][str(model)] = Price(inp * scale, out * scale)
        return cls(sections=sections, source=source)

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """Read a price file; ``None`` reads ``$BIAS_WORKBENCH_PRICES`` when set (your own
        ``prices.yaml``, used by the pages and the CLI alike), else the bundled
        ``judges/prices.yaml``."""
        if path is None and os.environ.get(PRICES_ENV):
            path = os.environ[PRICES_ENV]
        if path is None:
            text = (resources.files("judges") / "prices.yaml").read_text(encoding="utf-8")
            source = "judges/prices.yaml"
        else:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise PriceError(f"{path}: no such price file.") from None
            source = str(path)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise PriceError(f"{source}: not valid YAML: {exc}") from None
        return cls.from_dict(data or {}, source=source)

    def lookup(self, section: str, model: str) -> Price | None:
        """The price of ``model`` in ``section``: exact name, longest prefix, ``*``, else None."""
        models = self.sections.get(section, {})
        if model in models:
            return models[model]
        prefixes = [m for m in models if m != "*" and model.startswith(m)]
        if prefixes:
            return models[max(prefixes, key=len)]
        return models.get("*")

    def cost(self, section: str, model: str, input_tokens: int,
             output_tokens: int) -> float | None:
        """Dollars for the token counts, or ``None`` if the model has no price."""
        price = self.lookup(section, model)
        return None if price is None else price.cost(input_tokens, output_tokens)


def estimate_tokens(text: str) -> int:
    """A rough token count: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_message_tokens(messages: tuple[tuple[str, str], ...]) -> int:
    """Rough input tokens of a chat request (text plus a few per message)."""
    return sum(estimate_tokens(content) + TOKENS_PER_MESSAGE for _, content in messages)
