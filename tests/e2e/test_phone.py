"""Every page on a 390×844 phone (a phone's User-Agent), measured from the DOM in Chromium: on every step, for the
book's example and a 30-token sentence, no text is under 16 px (the charts' included), no two texts of a chart
(tick labels, value labels, titles) overlap, none sticks out of its chart, and plotly's toolbar covers no chart
title (``presenter_measure.js``, as for the projector)."""

from __future__ import annotations

import urllib.parse

import pytest
from e2e_support import stepped_pages
from test_presenter import LIMITS, MEASURE, SENTENCE_30, TO_TOP

pytestmark = pytest.mark.browser

PHONE_TEXT_PX = 16  # every text of a page on a phone, the charts' included (code blocks apart)
# The toolbar's buttons and every chart's title: a title under a button is a covered title.
COVERED_TITLES = """() => {
  const covered = [];
  for (const plot of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    const bar = plot.querySelector('.modebar');
    if (!bar || getComputedStyle(bar).display === 'none' || getComputedStyle(bar).opacity === '0') continue;
    const b = bar.getBoundingClientRect();
    for (const title of plot.querySelectorAll('.gtitle, .annotation-text')) {
      const t = title.getBoundingClientRect();
      if (t.width && b.width && t.left < b.right && b.left < t.right && t.top < b.bottom && b.top < t.bottom)
        covered.push(title.textContent);
    }
  }
  return covered;
}"""


def walk_phone(app_page, spec, sentence: str | None, **more: str) -> list[str]:
    app_page.page.mouse.move(1, 400)  # a mouse over a chart would show its toolbar, as a finger on it does
    query = ({} if sentence is None else {"input": "text", "text": sentence}) | more
    app_page.goto(spec.url_path, urllib.parse.urlencode(query, quote_via=urllib.parse.quote))
    found = []
    while True:
        step, total = app_page.step()
        app_page.page.evaluate(TO_TOP)
        app_page.page.wait_for_timeout(150)
        limits = {**LIMITS, "text": PHONE_TEXT_PX, "code": 0, "canvas": None}  # HTML tables: presenter mode only
        measured = app_page.page.evaluate(MEASURE, limits)
        where = f"{spec.stem} step {step}/{total}"
        found += [f"{where}: text under {PHONE_TEXT_PX} px: {s}" for s in measured["small"]]
        found += [f"{where}: overlap {s}" for s in measured["overlaps"]]
        found += [f"{where}: outside its chart: {s}" for s in measured["outside"]]
        found += [f"{where}: the toolbar covers {t!r}" for t in app_page.page.evaluate(COVERED_TITLES)]
        if step == total:
            return found
        app_page.next()


@pytest.mark.parametrize("sentence", [None, SENTENCE_30], ids=["book", "30-tokens"])
@pytest.mark.parametrize("spec", stepped_pages(), ids=lambda s: s.stem)
def test_a_phone_shows_every_chart_without_overlapping_text(open_app, spec, sentence):
    found = walk_phone(open_app(phone=True), spec, sentence)
    assert not found, "\n".join(found[:40])


def test_a_phone_shows_the_trained_models_heads_whole(open_app):
    """Multi-head's last steps with the small trained GPT: the grouped bars keep their 16 px values (they scroll
    sideways), and the grid of every layer and head leaves its labels to the hover."""
    (spec,) = [s for s in stepped_pages() if s.stem == "multihead"]
    found = walk_phone(open_app(phone=True), spec, None, weights="trained")
    assert not found, "\n".join(found[:40])
