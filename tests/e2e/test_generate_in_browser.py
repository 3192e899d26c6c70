"""The Generate page in Chromium: five generated tokens stepped through with the token slider, in normal,
presenter and phone views, each drawn row of attention weights and each top-10 equal to ``attention.generate``'s."""

from __future__ import annotations

import numpy as np
import pytest
from e2e_support import eventually

import attention

pytestmark = pytest.mark.browser

VIEWS = {"normal": ("", None), "presenter": ("&present=1", None), "phone": ("", {"width": 390, "height": 844})}


@pytest.fixture(scope="module")
def expected():
    prompt = attention.tokenize(attention.BOOK_SENTENCE).ids
    return attention.generate(attention.load_trained_gpt(), prompt, 40)


def drawn(app_page) -> tuple[np.ndarray, np.ndarray]:
    """The query rows' heatmap and the top-10 bars, as the browser draws them."""
    rows, bars = app_page.plots()[:2]
    return rows.heatmaps()[0]["z"], bars.traces[0]["y"]


@pytest.mark.parametrize("view", VIEWS)
def test_five_generated_tokens_show_the_packages_numbers(app_page, expected, view):
    query, viewport = VIEWS[view]
    if viewport:
        app_page.page.set_viewport_size(viewport)
    app_page.goto("generate", "step=2" + query)
    assert app_page.step() == (2, 6)
    slider = app_page.page.locator('[data-testid="stMain"] .st-key-w_generate_token input[type="range"]')
    for k in range(5):
        token = expected.tokens[k]

        def same(k=k, token=token):
            rows, probs = drawn(app_page)
            assert rows.shape == (k + 1, 6 + k)
            np.testing.assert_allclose(rows[-1], token.attn_rows[0][0].numpy(), atol=1e-6)
            np.testing.assert_allclose(probs, token.probs_top, atol=1e-6)

        eventually(same)
        text = app_page.page.locator('[data-testid="stMain"]').inner_text()
        assert f"New token {k + 1} of 40" in text
        if k == 4:
            app_page.screenshot(f"generate-{view}-token5")
            break
        before = app_page.answers()
        slider.focus()
        slider.press("ArrowRight")
        app_page.wait_for_answer(before)
        assert app_page.step() == (2, 6), "the slider's arrow key must not turn the step"
    assert "token_n=5" in app_page.page.url  # new token 5, counted from 1
