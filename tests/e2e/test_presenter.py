"""Presenter mode on a 1280×720 projector, measured from the DOM in Chromium.

With ``?present=1``, on every page and step, for the book's example and a 30-token sentence:

* every chart ends above the bottom of the screen (the page is at its top, nothing scrolled);
* every visible text in the main area is at least 18 px (code at least 16 px), plotly's SVG text included;
* no tick label overlaps another, an axis title, or a plot area (its own or a neighbouring chart's);
* no two value labels printed in a chart overlap, and none sticks out of its chart;
* a highlighted (outlined) row keeps its tick label.

One page load walks all of a page's steps with the stepper, measuring each.
"""

from __future__ import annotations

import urllib.parse

import pytest
from e2e_support import app_pages

pytestmark = pytest.mark.browser

PAGES = app_pages()
SENTENCE_30 = (  # 30 GPT-2 tokens
    "Attention lets every token in a sentence look back at the tokens before it, so that a model can weigh "
    "which of the earlier words matter most."
)
SCREEN_HEIGHT = 720
MIN_TEXT_PX = 18
MIN_CODE_PX = 16
HIGHLIGHT = "#D55E00"  # the outline of a highlighted row (figures.heatmap)

MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const boxOf = (el) => { const r = el.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const overlap = (a, b, slack) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > slack && Math.min(a.b, b.b) - Math.max(a.t, b.t) > slack;
  const inside = (a, b, slack) => a.l >= b.l - slack && a.r <= b.r + slack && a.t >= b.t - slack && a.b <= b.b + slack;
  const shown = (el) => {
    for (let e = el; e && e !== main; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || Number(s.opacity) === 0) return false;
    }
    const r = el.getBoundingClientRect();
    return r.width >= 2 && r.height >= 2;
  };
  const out = {charts: [], small: [], overlaps: [], missing: [], outside: []};
  // Text: the smallest computed font size of every visible text node.
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || !shown(el)) continue;
    if (el.closest('.katex-mathml, .modebar, .hoverlayer, [data-testid="stIconMaterial"]')) continue;  // icons are glyphs
    const size = parseFloat(getComputedStyle(el).fontSize);
    const code = !!el.closest('pre, code, [data-testid="stCode"]');
    if (size < (code ? %(code)d : %(text)d) - 0.05) out.small.push(`${size.toFixed(1)}px "${text.slice(0, 30)}"`);
  }
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const title = (plot.layout && plot.layout.title && plot.layout.title.text) || '(untitled)';
    const frame = boxOf(plot);
    out.charts.push({title, bottom: frame.b});
    const areas = [...plot.querySelectorAll('.draglayer .nsewdrag')].map(boxOf);
    const ticks = [...plot.querySelectorAll('.xtick text, .ytick text')].filter(shown);
    const titles = [...plot.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-gtitle text')].filter(shown);
    const boxes = ticks.map((t) => ({text: t.textContent, box: boxOf(t)}));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (overlap(boxes[i].box, boxes[j].box, 1)) out.overlaps.push(`${title}: ticks "${boxes[i].text}" / "${boxes[j].text}"`);
      }
      for (const t of titles) {
        if (overlap(boxes[i].box, boxOf(t), 1)) out.overlaps.push(`${title}: tick "${boxes[i].text}" / title "${t.textContent}"`);
      }
      for (const area of areas) {
        if (overlap(boxes[i].box, area, 2)) out.overlaps.push(`${title}: tick "${boxes[i].text}" on a plot area`);
      }
      if (!inside(boxes[i].box, frame, 1)) out.outside.push(`${title}: tick "${boxes[i].text}"`);
    }
    // Value labels printed in cells or on bars.
    const values = [...plot.querySelectorAll('.barlayer text, .textpoint text, .heatmaplayer text, .scatterlayer text')]
      .filter(shown).filter((t) => t.textContent.trim()).map((t) => ({text: t.textContent, box: boxOf(t)}));
    if (values.length <= 400) {
      for (let i = 0; i < values.length; i++) {
        for (let j = i + 1; j < values.length; j++) {
          if (overlap(values[i].box, values[j].box, 1)) out.overlaps.push(`${title}: values "${values[i].text}" / "${values[j].text}"`);
        }
      }
    }
    for (const v of values) if (!inside(v.box, frame, 1)) out.outside.push(`${title}: value "${v.text}"`);
    // A highlighted row keeps its label.
    for (const shape of (plot.layout.shapes || [])) {
      if (!shape.line || shape.line.color !== '%(highlight)s' || shape.type !== 'rect') continue;
      const row = (shape.y0 + shape.y1) / 2;
      const axis = plot.layout.yaxis || {};
      if (!(axis.tickvals || []).includes(row)) out.missing.push(`${title}: row ${row}`);
    }
  }
  return out;
}""" % {"code": MIN_CODE_PX, "text": MIN_TEXT_PX, "highlight": HIGHLIGHT}

TO_TOP = """() => {
  for (const el of [document.querySelector('[data-testid="stMain"]'), document.scrollingElement]) if (el) el.scrollTo(0, 0);
}"""


def measure(app_page) -> dict:
    """The layout of the current step, measured at the top of the page."""
    app_page.page.evaluate(TO_TOP)
    app_page.page.wait_for_timeout(150)
    return app_page.page.evaluate(MEASURE)


def problems(measured: dict, where: str) -> list[str]:
    found = [f"{where}: chart {c['title']!r} ends at {c['bottom']:.0f} px" for c in measured["charts"]]
    found = [f for f, c in zip(found, measured["charts"], strict=True) if c["bottom"] > SCREEN_HEIGHT + 0.5]
    found += [f"{where}: text {s}" for s in measured["small"]]
    found += [f"{where}: overlap {s}" for s in measured["overlaps"]]
    found += [f"{where}: outside its chart: {s}" for s in measured["outside"]]
    found += [f"{where}: highlighted without a label: {s}" for s in measured["missing"]]
    return found


def walk_presenter(app_page, spec, sentence: str | None) -> tuple[list[str], dict]:
    """Open ``spec`` in presenter mode and measure every step; returns the problems and a summary."""
    query = {"present": "1"}
    if sentence is not None:
        query.update(input="text", text=sentence)
    app_page.goto(spec.url_path, urllib.parse.urlencode(query, quote_via=urllib.parse.quote))
    found, lowest, bottoms = [], [], []
    while True:
        step, total = app_page.step()
        measured = measure(app_page)
        found += problems(measured, f"{spec.stem} step {step}/{total}")
        bottoms += [c["bottom"] for c in measured["charts"]]
        if step == total:
            return found, {"steps": total, "max_chart_bottom": max(bottoms, default=0.0)}
        app_page.next()


@pytest.mark.parametrize("sentence", [None, SENTENCE_30], ids=["book", "30-tokens"])
@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.stem)
def test_presenter_mode_fits_a_projector(app_page, spec, sentence):
    found, _ = walk_presenter(app_page, spec, sentence)
    assert not found, "\n".join(found[:40])
