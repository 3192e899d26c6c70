"""Every layer and head at a glance, in Chromium: a real mouse click at one small multiple's pixel position sets
the sidebar's layer and head and outlines it; the page link then opens that head on Causal mask. The step fits
a projector in presenter mode and a phone without horizontal scrolling, with the small GPT and 30 tokens."""

from __future__ import annotations

import urllib.parse

import pytest
from e2e_support import eventually
from test_presenter import SENTENCE_30, measure, problems

pytestmark = pytest.mark.browser

QUERY = urllib.parse.urlencode({"weights": "trained", "step": "9", "input": "text", "text": SENTENCE_30})
GRID = "attn_weights: 4 layers × 4 heads"

LABEL_AT = """(k) => {
  const plot = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .find((p) => p.layout.title.text.includes('attn_weights: '));
  plot.scrollIntoView({block: 'center'});
  const suffix = k === 0 ? '' : String(k + 1);
  const xa = plot._fullLayout['xaxis' + suffix], ya = plot._fullLayout['yaxis' + suffix];
  const point = plot._fullData.find((t) => t.type === 'scatter' && t.xaxis === 'x' + suffix);
  const box = plot.getBoundingClientRect();
  return [box.left + xa._offset + xa.d2p(point.x[0]), box.top + ya._offset + ya.d2p(point.y[0])];
}"""


def sidebar_value(app_page, key: str) -> str:
    return app_page.page.locator(f'[data-testid="stSidebar"] .st-key-{key} input').input_value()


def outlined(app_page) -> list[str]:
    return app_page.page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
             .filter((p) => p.layout.title.text.includes('attn_weights: '))
             .flatMap((p) => (p._fullLayout.shapes || []).map((s) => s.xref))"""
    )


def test_a_mouse_click_on_a_small_multiple_opens_its_layer_and_head(app_page):
    app_page.goto("multihead", QUERY)
    assert app_page.step() == (9, 9)
    assert any(p.title.startswith(GRID) for p in app_page.plots())
    assert outlined(app_page) == ["x domain"]  # layer 1, head 1
    x, y = app_page.page.evaluate(LABEL_AT, 2 * 4 + 1)  # layer 3, head 2: the tenth small multiple
    app_page.page.mouse.move(x, y)
    before = app_page.runs()
    app_page.page.mouse.click(x, y)
    app_page.wait_for_run(before)

    def opened():
        assert (sidebar_value(app_page, "w_layer"), sidebar_value(app_page, "w_head")) == ("3", "2")
        assert outlined(app_page) == ["x10 domain"]

    eventually(opened)
    assert "layer=3" in app_page.page.url and "layer_head=1" in app_page.page.url
    assert "They hold layer 3, head 2 now" in app_page.page.locator('[data-testid="stMain"]').inner_text()
    app_page.press_and_wait(app_page.page.get_by_role("link", name="Causal mask: layer 3, head 2"))
    assert "/causal_mask" in app_page.page.url
    assert "layer 3 of 4 of the small GPT" in app_page.page.locator('[data-testid="stMain"]').inner_text()


def test_the_keyboard_alone_opens_a_layer_and_head(app_page):
    app_page.goto("multihead", QUERY)
    keyboard = app_page.page.keyboard
    app_page.page.locator('[data-testid="stMain"] [class*="st-key-every_head_layer"] input').focus()
    for typed in ("4", "Enter", "Tab", "3", "Enter", "Tab"):  # Layer 4, Head 3, then the Open button
        keyboard.press(typed) if len(typed) > 1 else keyboard.type(typed)
    assert app_page.page.evaluate("() => document.activeElement.innerText.trim()") == "Open"
    before = app_page.runs()
    keyboard.press("Enter")
    app_page.wait_for_run(before)

    def opened():
        assert (sidebar_value(app_page, "w_layer"), sidebar_value(app_page, "w_head")) == ("4", "3")
        assert outlined(app_page) == ["x15 domain"]  # layer 4, head 3

    eventually(opened)


def test_the_step_fits_a_projector_in_presenter_mode(app_page):
    app_page.goto("multihead", QUERY + "&present=1")
    assert app_page.step() == (9, 9)
    measured = measure(app_page)
    assert any(GRID in c["title"] for c in measured["charts"])
    found = problems(measured, "multihead step 9, presenter")
    app_page.screenshot("every-head-presenter")
    assert not found, "\n".join(found[:40])


def test_the_step_fits_a_phone_without_scrolling_sideways(app_page):
    app_page.page.set_viewport_size({"width": 390, "height": 844})
    app_page.goto("multihead", QUERY)
    assert any(p.title.startswith(GRID) for p in app_page.plots())
    widths = app_page.page.evaluate(
        """() => [document.scrollingElement.scrollWidth,
                 document.querySelector('[data-testid="stMain"]').scrollWidth, window.innerWidth]"""
    )
    assert max(widths[:2]) <= widths[2], f"the page scrolls sideways: {widths}"
    app_page.screenshot("every-head-phone")
