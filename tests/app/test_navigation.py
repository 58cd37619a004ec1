"""The sidebar's pages: the listed ones, then every other page file (ui/navigation.py)."""

from pathlib import Path

from ui.navigation import _LISTED, PAGES, _with_unlisted

ROOT = Path(__file__).resolve().parents[2]


def test_an_unlisted_page_file_joins_analyse_titled_from_its_name(tmp_path):
    (tmp_path / "pages").mkdir()
    for name in ("data.py", "value_rates.py", "_helper.py", "notes.txt"):
        (tmp_path / "pages" / name).write_text("", encoding="utf-8")
    listed = {"Set up": [("pages/data.py", "Data", ":material/upload_file:")],
              "Analyse": [("pages/x.py", "X", ":material/grid_on:")]}
    pages = _with_unlisted(listed, tmp_path)
    assert pages == {"Set up": listed["Set up"],
                     "Analyse": [("pages/x.py", "X", ":material/grid_on:"),
                                 ("pages/value_rates.py", "Value rates",
                                  ":material/analytics:")]}
    assert listed["Analyse"] == [("pages/x.py", "X", ":material/grid_on:")]  # not changed


def test_every_page_of_the_app_is_listed_by_hand():
    assert PAGES == _LISTED  # each page chose its section, title and icon
    files = {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    assert files == {path for pages in PAGES.values() for path, _, _ in pages}
