"""The analysis pages' heavy frontend bundles load at idle from the first page
(``ui/frontend_warm.py``): the file names found, the script, and in chromium that plotly.js
and the code highlighter arrive on the Data page and are not fetched again when the first
chart is drawn."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, settle, visit
from ui.frontend_warm import BUNDLES, STATIC_JS, SWITCH, bundle_files, warm_script


def test_every_bundle_is_in_the_installed_streamlit():
    """A Streamlit upgrade that renames an element's bundle fails here (update BUNDLES)."""
    files = bundle_files()
    assert [f.split(".")[0] for f in files] == list(BUNDLES)
    for f in files:
        assert (STATIC_JS / f).is_file()
        assert re.fullmatch(r"[A-Za-z]+\.[\w-]+\.js", f)
    assert (STATIC_JS / files[0]).stat().st_size > 1_000_000  # plotly.js is the big one


def test_the_files_of_a_folder(tmp_path: Path):
    for name in ("PlotlyChart.AbC_1-x.js", "ButtonGroup.Zz.js", "Button.Q9.js", "Slider.a.js",
                 "Slider.b.js", "Checkbox.c.js.map", "Multiselect.m.css",
                 "NumberInput.n.js"):
        (tmp_path / name).write_text("")
    # in BUNDLES' order; Slider twice and the others missing: left out; ButtonGroup is not
    # Button; a .map or .css file is no bundle
    assert bundle_files(tmp_path) == ("PlotlyChart.AbC_1-x.js", "NumberInput.n.js",
                                      "Button.Q9.js")
    assert bundle_files(tmp_path / "none") == ()


def test_the_script_imports_the_files_once_per_tab():
    files = ("PlotlyChart.AbC.js", "Button.Q9.js")
    body = warm_script(files)
    assert body.startswith("<script>") and body.endswith("</script>")
    assert json.dumps(list(files)) in body
    assert "if (window.__bwWarmBundles) return;" in body
    assert "new URL(file, main.src)" in body  # next to the main bundle, whatever the base URL


def _warm_app():
    from ui.frontend_warm import warm_bundles

    warm_bundles()


@pytest.mark.parametrize("switch", [None, "1", "0"])
def test_the_script_goes_to_the_sidebar_unless_switched_off(monkeypatch, switch):
    from streamlit.testing.v1 import AppTest

    if switch is None:
        monkeypatch.delenv(SWITCH, raising=False)
    else:
        monkeypatch.setenv(SWITCH, switch)
    at = AppTest.from_function(_warm_app).run()
    assert not at.exception
    shown = [el.proto for el in at.sidebar if el.type == "html"]
    assert not [el for el in at.main if el.type == "html"]  # nothing in the page itself
    if switch == "0":
        assert shown == []
    else:
        assert len(shown) == 1
        assert shown[0].body == warm_script(bundle_files())
        assert shown[0].unsafe_allow_javascript


#: How often each of Streamlit's bundles was fetched so far, by its name without the hash.
FETCHED = """() => {
    const out = {};
    for (const e of performance.getEntriesByType('resource')) {
        const m = e.name.match(/\\/static\\/js\\/([^/.]+)\\.[^/]+\\.js$/);
        if (m) out[m[1]] = (out[m[1]] || 0) + 1;
    }
    return out; }"""


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_plotly_arrives_on_the_data_page_and_is_not_fetched_again(app_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(app_url)
            page.get_by_text("35,868").first.wait_for(timeout=120_000)  # the Data page
            settle(page)
            assert not page.locator(".js-plotly-plot").count()  # no chart on the Data page
            # every bundle arrives while the Data page is open, none twice
            page.wait_for_function(f"""() => {{ const f = ({FETCHED})();
                return {json.dumps(list(BUNDLES))}.every(b => f[b] >= 1); }}""",
                                   timeout=120_000)
            assert visit(page, "Coverage") == []
            page.locator(".st-key-coverage_heatmap_chart .js-plotly-plot").first.wait_for(
                timeout=60_000)
            fetched = page.evaluate(FETCHED)
            assert fetched["PlotlyChart"] == 1  # the frontend's import found the same module
            assert fetched["StreamlitSyntaxHighlighter"] == 1
        finally:
            browser.close()
