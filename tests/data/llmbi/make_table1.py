"""Writes ``table1_polarity.csv``: for each response of the LLMBI paper's appendix whose
score its Table 1 prints (13 of them), the TextBlob polarity of the response and the
published ``llmbi_score``. Numbers only: the paper's sentences stay out of the project
(shared/papers/README.md), and a fresh clone's tests need no paper (issue 42).

Run from the repository root with the paper beside it: ``python
tests/data/llmbi/make_table1.py`` (reads ``../shared/papers/llmbi.txt``; TextBlob as
installed by the ``text`` extra; the version is written in the file's first line).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

if __name__ == "__main__":
    from importlib.metadata import version

    from analysis.features import extract_features
    from tests.analysis.test_index_published import table_1_responses

    table = table_1_responses()
    featured, _ = extract_features(table, "response", ["polarity_textblob"])
    out = Path(__file__).with_name("table1_polarity.csv")
    with out.open("w", encoding="utf-8") as f:
        f.write(f"# textblob {version('textblob')}; from the LLMBI paper's appendix\n")
        featured[["polarity_textblob", "published"]].to_csv(f, index=False,
                                                            float_format="%.17g")
    print(out, len(featured))
