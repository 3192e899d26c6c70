"""Every number explains itself (issue 25), in Chromium: a real click (or tap) at a heatmap cell's pixels selects
that cell, and the panel writes it out with the package's own numbers; the keyboard picker does the same.

A cell's pixel position comes from plotly's own axes in the page (``_fullLayout.xaxis.l2p``), so the click lands
where the learner sees the cell. The expected numbers are computed here with the ``attention`` package directly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from e2e_support import TIMEOUT_MS, Inputs, _seeded, causal_page_seed, open_page

import attention
from attention import derivations

pytestmark = pytest.mark.browser

CELL_CENTRE = """([title, row, col]) => {
  const main = document.querySelector('[data-testid="stMain"]');
  const plots = [...main.querySelectorAll('.js-plotly-plot')];
  const titled = (t) => t.type === 'heatmap' && t.meta && new RegExp(title).test(t.meta.title);
  const gd = plots.find((p) => p.data.some(titled));
  gd.scrollIntoView({block: 'center'});
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  return [box.left + xa._offset + xa.l2p(col), box.top + ya._offset + ya.l2p(row)];
}"""
PANEL = '[data-testid="stMain"] .st-key-cell_panel'
NUMBER = re.compile(r"−?\d+\.\d{4}")


def numbers(text: str) -> list[float]:
    return [float(n.replace("−", "-")) for n in NUMBER.findall(text)]


def written(derivation) -> list[float]:
    """The numbers the panel's sum writes for ``derivation``, in its order (``attention.prose.cells.explain``)."""
    d = derivation
    if d.kind in ("score", "context", "projection"):
        return [f for t in d.terms for f in t.factors] + [d.total]
    if d.kind == "weight":
        shown = [n for t in d.terms if not t.masked for n in (t.factors[0], t.value)]
        return [*shown, d.terms[d.col].value, d.total, d.value]
    if d.kind == "dropped_weight":
        weight = d.terms[0].factors[0]
        return [weight, weight, d.details["scale"], d.value] if d.details["kept"] else [weight]
    raise ValueError(d.kind)


def book_causal():
    """The Causal mask page's ``CausalAttention`` on the book's six vectors, traced (eval mode)."""
    ca = _seeded(attention.CausalAttention, causal_page_seed(Inputs()), 3, 2, 1024, 0.0)
    trace = attention.trace(ca, attention.BOOK_INPUTS)
    return {name: getattr(trace, name)[0, 0] for name in ("queries", "keys", "values", "scaled_scores", "attn_weights")}


def simplified_score(row, col):
    return derivations.score(attention.BOOK_INPUTS, attention.BOOK_INPUTS, row, col)


def causal_weight(row, col):
    trace = book_causal()
    return derivations.weight(
        trace["scaled_scores"][row], col, row=row, masked=torch.arange(6) > row, subtract_max=False
    )


def unmasked_weight(row, col):
    return derivations.weight(book_causal()["scaled_scores"][row], col, row=row, subtract_max=False)


def causal_context(row, col):
    trace = book_causal()
    return derivations.weighted_sum(trace["attn_weights"][row], trace["values"], col, row=row)


def dropped_weight(row, col, drawn):
    weights = book_causal()["attn_weights"]  # the Dropout page's weights: the same module, seed 789
    kept = not np.isnan(drawn) and drawn != 0  # a dropped cell is drawn blank
    return derivations.dropped_weight(float(weights[row, col]), kept, 0.5, row=row, col=col)


def qkv_query(row, col):
    sa_v1 = _seeded(attention.SelfAttention_v1, 123, 3, 2)
    return derivations.projection(attention.BOOK_INPUTS[row], sa_v1.W_query.detach(), col, row=row)


# (page, step from 1, heatmap title pattern, row, col, the package's derivation)
CLICKS = [
    ("simplified", "all-scores-and-weights", r"^attn_scores$", 1, 0, simplified_score),
    ("causal_mask", "unmasked-weights", r"^attn_weights without a mask$", 3, 2, unmasked_weight),
    ("causal_mask", "two-routes", r"^attn_weights = softmax", 4, 1, causal_weight),
    ("causal_mask", "context-vectors", r"^context_vec, shape", 2, 1, causal_context),
    ("dropout", "one-draw", r"^attn_weights after dropout$", 3, 0, dropped_weight),
    ("dropout", "one-draw", r"^attn_weights after dropout$", 5, 2, dropped_weight),
    ("qkv", "queries-keys-values", r"^queries$", 1, 0, qkv_query),
]


def click_cell(tab, title: str, row: int, col: int, *, tap: bool = False) -> None:
    x, y = tab.page.evaluate(CELL_CENTRE, [title, row, col])
    before = tab.answers()
    x, y = x + 3, y - 3  # off the centre, still inside the cell: the nearest centre is this cell's
    tab.page.touchscreen.tap(x, y) if tap else tab.page.mouse.click(x, y)
    tab.wait_for_answer(before)


def check_panel(tab, title: str, row: int, col: int, expected) -> None:
    """The panel's words name the cell; its sum writes the package's numbers and ends at the drawn cell's value."""
    trace = tab.heatmap_of(title)
    drawn = float(trace["z"][row, col])
    derivation = expected(row, col, drawn) if expected is dropped_weight else expected(row, col)
    text = tab.page.locator(PANEL).inner_text()
    assert f"[{row}, {col}]" in text, text[:300]
    sums = tab.page.locator(f"{PANEL} [data-testid='stCode']").inner_text()
    shown = numbers(sums)
    np.testing.assert_allclose(shown, written(derivation), atol=1e-4, err_msg=sums)
    assert shown[-1] == pytest.approx(drawn, abs=1e-4) or (np.isnan(drawn) and derivation.value == 0)


@pytest.mark.parametrize(("page", "step", "title", "row", "col", "expected"), CLICKS)
def test_a_click_on_a_cell_explains_it_with_the_packages_numbers(app_page, page, step, title, row, col, expected):
    app_page.goto(page, f"step={step}")
    click_cell(app_page, title, row, col)
    check_panel(app_page, title, row, col, expected)
    assert f"cell={row + 1}%2C{col + 1}" in app_page.page.url or f"cell={row + 1},{col + 1}" in app_page.page.url
    assert app_page.events.fragment_requests >= 1, "a click reruns the page's fragment, not the whole app"
    assert not app_page.events.problems()


def test_hovering_a_cell_still_says_its_value(app_page):
    app_page.goto("causal_mask", "step=unmasked-weights")
    x, y = app_page.page.evaluate(CELL_CENTRE, [r"^attn_weights without a mask$", 1, 0])
    app_page.page.mouse.move(x + 4, y + 4)
    hover = app_page.page.locator(".hoverlayer .hovertext")
    hover.first.wait_for(timeout=TIMEOUT_MS)
    weight = float(book_causal()["scaled_scores"][1].softmax(-1)[0])
    assert re.search(rf"query: journey.*key: Your.*attention weight = {weight:.4f}", hover.first.text_content())


def test_one_tap_on_a_phone_explains_the_cell_and_the_panel_fits(server, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        from e2e_support import AppPage, watch

        page = context.new_page()
        tab = AppPage(page, server, watch(page))
        tab.goto("causal_mask", "step=two-routes")
        click_cell(tab, r"^attn_weights = softmax", 2, 1, tap=True)
        check_panel(tab, r"^attn_weights = softmax", 2, 1, causal_weight)
        widths = page.evaluate(
            f"""() => {{ const panel = document.querySelector('{PANEL}'), page = document.documentElement;
              return [panel.scrollWidth, panel.clientWidth, page.scrollWidth, window.innerWidth]; }}"""
        )
        assert widths[0] <= widths[1] and widths[2] <= widths[3], f"the panel scrolls sideways: {widths}"
        assert not tab.events.problems()
    finally:
        context.close()


def test_the_keyboard_alone_picks_a_cell_on_the_causal_mask_page(server, browser):
    context, tab = open_page(browser, server)
    try:
        tab.goto("causal_mask", "step=unmasked-weights")
        for what, option in (("row", "3: "), ("col", "2: ")):  # query 3, key 2 (options counted from 1)
            box = tab.page.locator(f'{PANEL} [class*="st-key-w_cell"][class*="{what}"] input')
            box.focus()  # as Tab would: no pointer
            before = tab.answers()
            tab.page.keyboard.type(option)  # the select filters its options to the one that starts so
            tab.page.keyboard.press("Enter")
            tab.wait_for_answer(before)
        check_panel(tab, r"^attn_weights without a mask$", 2, 1, unmasked_weight)
        assert not tab.events.problems()
    finally:
        context.close()


def test_hovering_a_large_matrix_counts_queries_and_keys_from_1(app_page):
    """Above 16 tokens a heatmap's hover numbers its cells instead of naming them: query 2, key 1, not #1, #0."""
    sentence = " ".join(f"word{k}" for k in range(20))
    app_page.goto("simplified", f"step=all-scores-and-weights&input=text&text={sentence.replace(' ', '+')}")
    x, y = app_page.page.evaluate(CELL_CENTRE, [r"^attn_scores$", 1, 0])
    app_page.page.mouse.move(x + 2, y + 2)
    hover = app_page.page.locator(".hoverlayer .hovertext")
    hover.first.wait_for(timeout=TIMEOUT_MS)
    text = hover.first.text_content()
    assert re.search(r"query 2.*key 1.*attn_scores = ", text), text
    assert "#" not in text
