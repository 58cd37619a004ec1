"""Options of the bias index (``analysis.index.bias_index``, LLMBI; its bootstrap; the
``index`` command, the Bias index page, the report's index section).

The dimensions are the analysis's factors (``--dimensions``, the API's ``factors``);
``scores`` and ``weights`` give one entry, or one per dimension, as the command line does
(a comma-separated text, or a list in the API).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.options import OptionError, register
from analysis.options.common import BootstrapOptions, confidence_option, n_resamples_option, option
from analysis.options.types import FINITE_FLOAT

__all__ = ["DIMENSION_SCORES", "IndexOptions", "SENTIMENT_SCORES", "comma_text"]

#: Kept literal here (``analysis.index`` imports pandas); the index module checks they agree.
DIMENSION_SCORES = ("deviation_metric", "max_abs_log_disparity", "one_minus_impact_ratio")
SENTIMENT_SCORES = ("one_minus_impact_ratio", "range_of_means")


def comma_text(value: Any) -> str:
    """A comma-separated text from a text or a list (``["a", "b"]`` -> ``"a,b"``)."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v).strip() for v in value)
    return str(value).strip()


comma_text.__name__ = "comma-separated list"


def _split(text: str | None) -> list[str]:
    return [v.strip() for v in (text or "").split(",") if v.strip()]


@register
@dataclass(frozen=True, kw_only=True)
class IndexOptions(BootstrapOptions):
    """LLMBI = (1/n) sum w_i B_i + P(D) + lambda S (methods.md §6)."""

    NAME = "index"
    COMMAND = "index"
    FROM_DATA = ("model", "sentiment_by")

    scores: str = option(
        "deviation_metric", "score per dimension, one or one per dimension: "
        f"{', '.join(DIMENSION_SCORES)} (default %(default)s)", type=comma_text,
        label="Score")
    weights: str = option("", "comma-separated weights (default all 1)", type=comma_text,
                          label="Weight")
    model: str | None = option(None, "factor with one index per value (default: all rows)",
                               label="One index per value of")
    ideal: float = option(0.0, "C of the deviation metric", type=FINITE_FLOAT,
                          label="Ideal value C")
    printed_equation: bool = option(
        False, "the LLMBI paper's equation as printed: sum w_i B_i (weights as given, no 1/n; "
        "its code divides by n)", label="Equation as printed (sum w_i B_i, no 1/n)")
    normalize_weights: bool = option(
        True, "use (1/n) sum w_i B_i literally instead of the weighted mean",
        negate="no-normalize", label="Weighted mean (rescale weights to mean 1)")
    penalty: float = option(0.0, "constant diversity penalty", type=FINITE_FLOAT,
                            label="Diversity penalty P(D)")
    penalty_gini: float | None = option(
        None, "penalty = SCALE x coverage Gini index of the design (instead of --penalty)",
        type=FINITE_FLOAT, metavar="SCALE", label="Penalty scale x coverage Gini")
    penalty_factors: str | None = option(
        None, "factors of the coverage grid (default: dimensions)", type=comma_text,
        label="Factors of the coverage grid")
    sentiment: str | None = option(None, "numeric column for the sentiment-bias score S",
                                   label="Sentiment column")
    sentiment_by: str | None = option(
        None, "factor S is compared across (default: 1st dimension)", label="Compared across")
    sentiment_score: str = option("one_minus_impact_ratio", "how S is computed",
                                  choices=SENTIMENT_SCORES, label="Sentiment score")
    sentiment_scale: float = option(1.0, "scale lambda of the sentiment term (default "
                                    "%(default)s)", flag="lambda", type=FINITE_FLOAT,
                                    label="lambda (scale of S)")
    n_resamples: int = n_resamples_option(200)
    confidence: float = confidence_option()

    def dimensions(self, factors: Sequence[str]) -> list[dict[str, Any]]:
        """Each factor's dimension as ``{"factor", "score", "weight"}`` (what
        :func:`analysis.index.bias_index` takes), with ``scores`` and ``weights`` (one
        entry for all, or one per factor).

        Raises
        ------
        OptionError
            A weight that is not a number, or a count of scores / weights that is neither
            1 nor the number of factors.
        """
        factors = list(factors)
        scores = _split(self.scores) or [self.default("scores")]
        try:
            weights = [float(w) for w in _split(self.weights)] or [1.0] * len(factors)
        except ValueError:
            raise OptionError(f"--weights takes numbers, got {self.weights!r}.") from None
        if len(scores) == 1:
            scores = scores * len(factors)
        if len(scores) != len(factors) or len(weights) != len(factors):
            raise OptionError("Give one --scores entry (or one per dimension) and one weight "
                              "per dimension.")
        return [{"factor": f, "score": s, "weight": w}
                for f, s, w in zip(factors, scores, weights, strict=True)]

    @classmethod
    def from_index_kwargs(cls, kwargs: Mapping[str, Any]) -> IndexOptions:
        """The options from :func:`analysis.index.bias_index`'s keyword arguments (what
        the report's section settings and the Bias index page hold): ``penalty_kind`` and
        ``penalty_value`` become ``penalty`` or ``penalty_gini``, a list of
        ``penalty_factors`` a comma-separated text; ``dimensions`` and ``where`` are
        inputs, not options (the API's ``dimensions=`` and ``where=``).

        Raises
        ------
        OptionError
            An unknown name or a bad value (:meth:`Options.coerce`).
        """
        kw = {k: v for k, v in kwargs.items() if k not in ("dimensions", "where", "n_boot")}
        if "n_boot" in kwargs and "n_resamples" not in kw:  # a report saved earlier
            kw["n_resamples"] = kwargs["n_boot"]
        kind, value = kw.pop("penalty_kind", "constant"), kw.pop("penalty_value", None)
        if value is not None:
            kw["penalty_gini" if kind == "coverage_gini" else "penalty"] = value
        if kw.get("penalty_factors") is not None:
            kw["penalty_factors"] = comma_text(kw["penalty_factors"]) or None
        return cls.coerce(kw)

    def index_kwargs(self, factors: Sequence[str]) -> dict[str, Any]:
        """The keyword arguments of :func:`analysis.index.bias_index` for the dimension
        ``factors`` (``--penalty-gini`` gives the coverage-Gini penalty).

        Raises
        ------
        OptionError
            ``penalty`` and ``penalty_gini`` both given, or bad ``scores`` / ``weights``.
        """
        gini = self.penalty_gini is not None
        if gini and self.penalty != self.default("penalty"):
            raise OptionError("Give a constant penalty or penalty_gini (--penalty or "
                              "--penalty-gini), not both.")
        return {"dimensions": self.dimensions(factors), "model": self.model,
                "ideal": self.ideal, "normalize_weights": self.normalize_weights,
                "printed_equation": self.printed_equation,
                "penalty_kind": "coverage_gini" if gini else "constant",
                "penalty_value": self.penalty_gini if gini else self.penalty,
                "penalty_factors": _split(self.penalty_factors) or None,
                "sentiment": self.sentiment, "sentiment_by": self.sentiment_by,
                "sentiment_score": self.sentiment_score,
                "sentiment_scale": self.sentiment_scale}
