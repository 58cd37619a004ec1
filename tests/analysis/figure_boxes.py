"""Layout boxes of plotly figures as plotly.js draws them (Debian's chromium, Playwright):
one page with plotly.js, each figure drawn at its export size, the bounding boxes of its
texts read from the SVG (title, legend, axis titles, tick labels, colour bar, every
annotation, the plot area). Used by tests/analysis/test_figure_layout.py."""

from __future__ import annotations

import json
from pathlib import Path

#: Which SVG groups are which box (plotly.js 2/3 class names).
BOXES_JS = """(id) => {
  const gd = document.getElementById(id);
  const r = (el) => { const b = el.getBoundingClientRect();
                      return b.width * b.height > 0 ? [b.left, b.top, b.right, b.bottom] : null; };
  const union = (els) => { const bs = els.map(r).filter(Boolean);
      if (!bs.length) return null;
      return [Math.min(...bs.map(b => b[0])), Math.min(...bs.map(b => b[1])),
              Math.max(...bs.map(b => b[2])), Math.max(...bs.map(b => b[3]))]; };
  const q = (s) => Array.from(gd.querySelectorAll(s));
  const out = {figure: r(gd.querySelector('.main-svg')),
               title: union(q('.g-gtitle text')), legend: union(q('.legend .bg')),
               xtitle: union(q('.g-xtitle text')), ytitle: union(q('.g-ytitle text')),
               xtitle_text: q('.g-xtitle text').map(t => t.textContent).join(' '),
               xticks: union(q('.xaxislayer-above .xtick text')),
               colorbar: union(q('.colorbar')),
               annotations: q('.annotation').map(a => ({text: a.textContent, box: r(a)}))};
  const f = r(gd.querySelector('.main-svg')), z = gd._fullLayout._size;
  out.plot = gd._fullLayout.xaxis ? [f[0] + z.l, f[1] + z.t, f[0] + z.l + z.w, f[1] + z.t + z.h]
                                  : null;  // the cartesian plot area (none: a sunburst)
  return out;
}"""


def figure_boxes(figures: list, sizes: list[tuple[int, int]]) -> list[dict]:
    """The boxes (``[left, top, right, bottom]`` in px) of each figure drawn at its size."""
    import plotly
    from playwright.sync_api import sync_playwright

    from tests.app.browsertools import CHROMIUM, FLAGS

    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 2400, "height": 2400})
        page.set_content("<html><body style='margin:0'></body></html>")
        page.add_script_tag(path=str(js))
        for i, (fig, (w, h)) in enumerate(zip(figures, sizes, strict=True)):
            spec = json.loads(fig.to_json())
            spec["layout"].update(width=w, height=h)
            page.evaluate("""([id, spec]) => { document.body.innerHTML = '';
                const d = document.createElement('div'); d.id = id; document.body.appendChild(d);
                return Plotly.newPlot(d, spec.data, spec.layout, {staticPlot: true}); }""",
                          [f"f{i}", spec])
            out.append(page.evaluate(BOXES_JS, f"f{i}"))
        browser.close()
    return out


def overlaps(a, b, slack: float = 1.0) -> bool:
    """Whether two boxes overlap by more than ``slack`` px on both axes."""
    if a is None or b is None:
        return False
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def collisions(boxes: dict) -> list[str]:
    """Every pair of texts drawn over each other, and texts outside the figure."""
    named = {k: boxes[k] for k in ("title", "legend", "xtitle", "ytitle", "xticks", "colorbar",
                                   "plot") if boxes.get(k)}
    for i, a in enumerate(boxes["annotations"]):
        if a["box"]:
            named[f"annotation {i} ({a['text'][:30]!r})"] = a["box"]
    found = []
    keys = list(named)
    for i, k in enumerate(keys):
        for m in keys[i + 1:]:
            if "plot" in (k, m) and not {k, m} & {"title", "legend"} and not (
                    k.startswith("annotation") or m.startswith("annotation")):
                continue  # axis titles and ticks border the plot area
            if overlaps(named[k], named[m]):
                found.append(f"{k} over {m}")
    fig = boxes["figure"]
    for k, b in named.items():
        if b[0] < fig[0] - 1 or b[1] < fig[1] - 1 or b[2] > fig[2] + 1 or b[3] > fig[3] + 1:
            found.append(f"{k} outside the figure")
    return found
