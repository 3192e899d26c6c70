"""Colour scales as plotly drew them in Chromium, on every page and step (book example and 30 tokens).

Read from each plot's ``_fullData``, the ranges plotly actually used after its own defaults:

* every heatmap's colour range spans at least half of its largest absolute value (no range
  stretched over a sliver of the values);
* attention-weight heatmaps (``meta.kind == "weights"``) use exactly 0–1;
* signed heatmaps are centred on 0;
* panels shown for comparison share one range: the heatmaps of one figure (the heads grid),
  and the side-by-side pairs named in ``COMPARED``.
"""

from __future__ import annotations

import re
import urllib.parse

import numpy as np
import pytest
from e2e_support import stepped_pages
from test_presenter import SENTENCE_30

pytestmark = pytest.mark.browser

PAGES = stepped_pages()
COMPARED = (  # title patterns of panels drawn side by side to be compared, on one step
    (r"^attn_scores$", r"^attn_scores / √"),
    (r"^SelfAttention_v1", r"^SelfAttention_v2$"),
    (r"^batch\[0\]", r"^batch\[1\]"),
    (r"^Mean of", r"^attn_weights without dropout"),
)

READ_SCALES = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  return [...main.querySelectorAll('.js-plotly-plot')].map((plot, index) => (plot._fullData || [])
    .filter((t) => t.type === 'heatmap')
    .map((t) => {
      const z = (t._z || t.z || []).flat().map(Number).filter(Number.isFinite);
      const axis = t.coloraxis && plot._fullLayout[t.coloraxis];
      return {
        plot: index,
        title: (t.meta && t.meta.title) || '',
        kind: (t.meta && t.meta.kind) || '',
        low: axis ? axis.cmin : t.zmin,
        high: axis ? axis.cmax : t.zmax,
        largest: z.length ? Math.max(...z.map(Math.abs)) : 0,
      };
    })).flat();
}"""


def scale_problems(heatmaps: list[dict], where: str) -> list[str]:
    found = []
    for h in heatmaps:
        name = f"{where}: {h['title']!r}"
        span = h["high"] - h["low"]
        if span < 0.5 * h["largest"] - 1e-9:
            found.append(f"{name}: range {h['low']:.3g}–{h['high']:.3g} spans less than half of {h['largest']:.3g}")
        if h["kind"] == "weights" and (h["low"], h["high"]) != (0, 1):
            found.append(f"{name}: weights on {h['low']:.3g}–{h['high']:.3g}, not 0–1")
        if h["kind"] == "signed" and not np.isclose(h["low"], -h["high"]):
            found.append(f"{name}: signed values not centred on 0 ({h['low']:.3g}–{h['high']:.3g})")
    for plot in {h["plot"] for h in heatmaps}:
        ranges = {(h["low"], h["high"]) for h in heatmaps if h["plot"] == plot}
        if len(ranges) > 1:
            found.append(f"{where}: one figure's panels use {len(ranges)} ranges: {sorted(ranges)}")
    for first, second in COMPARED:
        a = [h for h in heatmaps if re.search(first, h["title"])]
        b = [h for h in heatmaps if re.search(second, h["title"])]
        if a and b and {(h["low"], h["high"]) for h in a + b} != {(a[0]["low"], a[0]["high"])}:
            found.append(f"{where}: {a[0]['title']!r} and {b[0]['title']!r} are compared on different ranges")
    return found


@pytest.mark.parametrize("sentence", [None, SENTENCE_30], ids=["book", "30-tokens"])
@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.stem)
def test_colour_scales_tell_the_truth(app_page, spec, sentence):
    query = {} if sentence is None else {"input": "text", "text": sentence}
    app_page.goto(spec.url_path, urllib.parse.urlencode(query, quote_via=urllib.parse.quote))
    found, seen = [], 0
    while True:
        step, total = app_page.step()
        heatmaps = app_page.page.evaluate(READ_SCALES)
        seen += len(heatmaps)
        found += scale_problems(heatmaps, f"{spec.stem} step {step}/{total}")
        if step == total:
            break
        app_page.next()
    assert not found, "\n".join(found[:30])
