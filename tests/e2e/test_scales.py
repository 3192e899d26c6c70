"""Colour scales as plotly drew them in Chromium, checked on every page and step by the projector's walk
(``test_presenter``: the book's example, 28 and 30 tokens), which reads them with ``READ_SCALES`` at each step.

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

import numpy as np
import pytest

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


def heat(title: str, kind: str, low: float, high: float, largest: float, plot: int = 0) -> dict:
    return {"plot": plot, "title": title, "kind": kind, "low": low, "high": high, "largest": largest}


@pytest.mark.parametrize(
    ("heatmaps", "expected"),
    [
        ([heat("attn_weights", "weights", 0, 1, 0.9), heat("attn_scores", "signed", -2, 2, 2, plot=1)], ""),
        ([heat("attn_scores", "signed", -0.4, 0.4, 2)], "spans less than half"),
        ([heat("attn_weights", "weights", 0, 0.6, 0.6)], "not 0–1"),
        ([heat("keys", "signed", -1, 2, 2)], "not centred on 0"),
        ([heat("head 1", "signed", -1, 1, 1), heat("head 2", "signed", -2, 2, 2)], "one figure's panels use 2"),
        (
            [heat("attn_scores", "signed", -2, 2, 2), heat("attn_scores / √d_k", "signed", -1, 1, 1, plot=1)],
            "compared on different ranges",
        ),
    ],
    ids=["true", "sliver", "weights", "off-centre", "one-figure", "compared"],
)
def test_each_untrue_scale_is_named(heatmaps, expected):
    """The projector walk's check finds each kind of untrue colour scale, and passes true ones."""
    found = scale_problems(heatmaps, "step 1/1")
    assert (expected in "\n".join(found)) if expected else not found, found
