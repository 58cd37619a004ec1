"""Load the analysis pages' heavy frontend bundles while the visitor is still on the first page.

Streamlit's frontend loads each element's JavaScript the first time such an element arrives:
plotly.js (the ``PlotlyChart`` bundle, 4.7 MB) and the code highlighter of "Copy as code"
(``StreamlitSyntaxHighlighter``, 1.6 MB) with the first analysis page a visitor opens. In
the browser journey (``benchmarks/bench_browser_journey.py --trace``) fetching and
evaluating them was about 1 s of Coverage's first render (``v8.evaluateModule`` 0.6 s, the
fetch 0.3-0.6 s), on top of drawing the page. :func:`warm_bundles` puts one script at the
end of the sidebar that imports those bundles (by their file names in the installed
Streamlit, hashes included) once the browser is idle (or 3 s on), once per browser tab:
the same modules the frontend imports later (same URL, so the same module instance), only
earlier. Nothing is drawn and no visitor input goes into the script. The cost moves to the
first page: 1-3 s of chromium's main thread on this loaded 2-core machine
(``benchmarks/bench_first_chart.py``), while the visitor reads it.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import streamlit as st

__all__ = ["BUNDLES", "STATIC_JS", "SWITCH", "bundle_files", "warm_bundles", "warm_script"]

#: Streamlit's lazily loaded element bundles the analysis pages use (and the Data page does
#: not), heaviest first; their files are ``<name>.<hash>.js`` in Streamlit's static folder.
BUNDLES = ("PlotlyChart", "StreamlitSyntaxHighlighter", "Multiselect", "NumberInput",
           "Checkbox", "Slider", "TextInput", "Button")

#: Set to "0" to leave the bundles to the frontend (``benchmarks/bench_first_chart.py``
#: compares both ways).
SWITCH = "BIAS_WORKBENCH_WARM_BUNDLES"

#: The folder of Streamlit's frontend bundles.
STATIC_JS = Path(st.__file__).parent / "static" / "static" / "js"

_SCRIPT = """<script>
(() => {
  if (window.__bwWarmBundles) return;
  window.__bwWarmBundles = true;
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!main) return;
  const load = () => %s.forEach(file => import(new URL(file, main.src).href).catch(() => {}));
  (window.requestIdleCallback || (f => setTimeout(f, 200)))(load, {timeout: 3000});
})();
</script>"""


@functools.cache
def bundle_files(folder: Path = STATIC_JS) -> tuple[str, ...]:
    """The file names of :data:`BUNDLES` in ``folder`` (in that order; a name with no file,
    or with more than one, is left out: the warm-up only saves time, it never decides what
    the frontend loads)."""
    names = [p.name for p in folder.glob("*.js")] if folder.is_dir() else []
    out = []
    for bundle in BUNDLES:
        found = [n for n in names if re.fullmatch(rf"{re.escape(bundle)}\.[\w-]+\.js", n)]
        if len(found) == 1:
            out.append(found[0])
    return tuple(out)


def warm_script(files: tuple[str, ...]) -> str:
    """The HTML of :func:`warm_bundles`: one ``<script>`` importing ``files`` (names in the
    folder of Streamlit's main bundle) when the browser is idle, once per tab."""
    return _SCRIPT % json.dumps(list(files))


def warm_bundles() -> None:
    """At the end of the sidebar, the script that imports :func:`bundle_files` at idle
    (nothing when the installed Streamlit has none of them, or with :data:`SWITCH` "0")."""
    if os.environ.get(SWITCH, "1") == "0":
        return
    files = bundle_files()
    if files:
        st.sidebar.html(warm_script(files), unsafe_allow_javascript=True)
