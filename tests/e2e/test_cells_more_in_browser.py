"""The cell panel in Chromium on Multi-head, Why attention, Break it and Generate (issue 25): a real mouse click at
a cell's pixel position on a heatmap (found from plotly's own axes), and the panel's number equals the cell's."""

from __future__ import annotations

import re

import numpy as np
import pytest
from e2e_support import eventually

pytestmark = pytest.mark.browser

# Where cell (row, col) of heatmap ``trace`` (of the main area's figure ``plot``) is on the page, in CSS pixels.
CELL_CENTRE = """([plot, trace, row, col]) => {
  const div = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')][plot];
  div.scrollIntoView({block: 'center'});
  const heat = div.data.filter((t) => t.type === 'heatmap')[trace];
  const layout = div._fullLayout;
  const xa = layout['xaxis' + (heat.xaxis || 'x').slice(1)], ya = layout['yaxis' + (heat.yaxis || 'y').slice(1)];
  const at = (v) => (v && v._inputArray !== undefined ? v._inputArray : v);
  const box = div.getBoundingClientRect();
  return [box.left + xa._offset + xa.l2p(at(heat.x)[col]), box.top + ya._offset + ya.l2p(at(heat.y)[row])];
}"""

PICKABLE = """(plot) => {
  const div = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')][plot];
  return div && div._fullLayout && div.data.some((t) => t.name === 'cells') && div.querySelector('.nsewdrag');
}"""

PANEL_SUMS = """() => [...document.querySelectorAll('.st-key-cell_panel [data-testid="stCode"]')]
  .map((block) => block.textContent)"""


def last_number(text: str) -> float:
    return float(re.findall(r"−?\d+\.\d{4}", text)[-1].replace("−", "-"))


def click_cell(app_page, plot: int, trace: int, row: int, col: int) -> list[str]:
    """Click the cell with the mouse, wait for the run it starts, and return the panel's sums."""
    app_page.settle()
    app_page.page.wait_for_function(PICKABLE, arg=plot)
    x, y = app_page.page.evaluate(CELL_CENTRE, [plot, trace, row, col])
    before = app_page.answers()
    app_page.page.mouse.move(x, y)
    app_page.page.mouse.click(x, y)
    app_page.wait_for_answer(before)
    app_page.assert_no_exception()
    return eventually(lambda: _sums(app_page))


def _sums(app_page) -> list[str]:
    sums = app_page.page.evaluate(PANEL_SUMS)
    assert sums, "the panel shows a sum"
    return sums


def cell(app_page, plot: int, trace: int, row: int, col: int) -> float:
    return float(app_page.plots()[plot].heatmaps()[trace]["z"][row, col])


@pytest.mark.parametrize(("title", "plot", "row", "col"), [("heads merged", 0, 3, 1), ("out_proj", 1, 4, 0)])
def test_a_click_on_the_merged_heads_explains_the_cell(app_page, title, plot, row, col):
    app_page.goto("multihead", "step=merge-and-out-proj")
    assert re.search(title, app_page.plots()[plot].title)
    sums = click_cell(app_page, plot, 0, row, col)
    assert last_number(sums[-1]) == pytest.approx(cell(app_page, plot, 0, row, col), abs=1e-4)
    assert ("head 1 (column" in sums[-1]) == (title == "out_proj"), "out_proj's terms come grouped by head"


def test_a_click_on_a_bahdanau_weight_explains_it(app_page):
    app_page.goto("", "step=bahdanau-looks-back")  # Why attention is the default page
    assert app_page.plots()[0].title.startswith("bahdanau_weights")
    sums = click_cell(app_page, 0, 0, 4, 2)
    assert last_number(sums[-1]) == pytest.approx(cell(app_page, 0, 0, 4, 2), abs=1e-4)
    assert sums[-1].startswith("e_53 = Σ_k v_a[k]")


def test_a_click_on_the_wrong_panel_explains_both_versions_of_the_cell(app_page):
    app_page.goto("mistakes", "step=right-beside-wrong")
    right, wrong = click_cell(app_page, 0, 1, 3, 1)  # the wrong panel's cell: both are explained
    assert last_number(right) == pytest.approx(cell(app_page, 0, 0, 3, 1), abs=1e-4)
    assert last_number(wrong) == pytest.approx(cell(app_page, 0, 1, 3, 1), abs=1e-4)
    assert not np.isclose(last_number(right), last_number(wrong)), "fill_zero changes this cell"
    assert "The changed line" in app_page.page.locator(".st-key-cell_panel").inner_text()


def test_a_click_on_a_cached_key_explains_it_beside_its_recomputation(app_page):
    app_page.goto("generate", "step=3")
    assert app_page.plots()[0].title.startswith("cached keys")
    (sums,) = click_cell(app_page, 0, 0, 4, 3)  # token 5, dim 3
    assert last_number(sums) == pytest.approx(cell(app_page, 0, 0, 4, 3), abs=1e-4), "the cached key comes last"
    recomputed = float(re.findall(r"recomputed k\^\(5\)\[3\] = (−?\d+\.\d{4})", sums)[0].replace("−", "-"))
    assert recomputed == pytest.approx(cell(app_page, 1, 0, 4, 3), abs=1e-4)
    assert "|cached − recomputed| = " in sums
    assert "that is why caching works" in app_page.page.locator(".st-key-cell_panel").inner_text()


def test_a_click_on_the_sliding_windows_mask_explains_its_entry(app_page):
    app_page.goto("generate", "step=6")
    assert app_page.plots()[1].title.startswith("sliding window of 3")
    (sums,) = click_cell(app_page, 1, 0, 5, 1)  # query 6, key 2: four tokens back
    assert cell(app_page, 1, 0, 5, 1) == 1.0 and cell(app_page, 0, 0, 5, 1) == 0.0
    assert sums.endswith("mask[5, 1] = 1  (masked: score → −∞)") and "6 − 2 = 4 ≥ 3 → yes" in sums
