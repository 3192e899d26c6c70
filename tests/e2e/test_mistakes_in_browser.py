"""The Break it page in Chromium: every mistake chosen from its selectbox, the drawn weights equal to
``attention.run_mistake``'s, the predict question answered, and presenter mode fitting a 1280×720 screen."""

from __future__ import annotations

from urllib.parse import quote

import numpy as np
import pytest
from e2e_support import Inputs, eventually

import attention

pytestmark = pytest.mark.browser

SENTENCE = "The cat saw the cat, and the cat sat on the mat before the dog came home."
THIRTY = (
    "Attention lets every token look back at the tokens before it, and a causal mask keeps each later token "
    "hidden from every query in this long sentence."
)


def expected_weights(name: str, inputs: Inputs) -> tuple[np.ndarray, np.ndarray]:
    """The two panels as the page draws them: future cells given exactly 0 are blank (NaN)."""
    p = 0.5 if name == "dropout_without_rescale" else 0.0  # the sidebar's p is 0: the page uses the book's 0.5
    mha = attention.build(attention.MultiHeadAttention, inputs.seed, inputs.d_in, inputs.d_out, 1024, p, num_heads=2)
    run = attention.run_mistake(name, mha, inputs.embeddings(), seed=inputs.seed)
    panels = []
    for weights in (run.right_weights.numpy(), run.wrong_weights.numpy()):
        future = np.triu(np.ones(weights.shape, dtype=bool), 1)
        panels.append(np.where(future & (weights == 0), np.nan, weights))
    return panels[0], panels[1]


def choose(app_page, title: str) -> None:
    """Pick a mistake in the page's selectbox, as a learner does."""
    before = app_page.answers()
    app_page.page.locator('[data-testid="stMain"] .st-key-w_mistake input').click()
    app_page.page.get_by_role("option", name=title, exact=True).click()
    app_page.wait_for_answer(before)


def drawn_panels(app_page) -> tuple[np.ndarray, np.ndarray]:
    (plot,) = app_page.plots()
    right, wrong = plot.heatmaps()
    return right["z"], wrong["z"]


def test_every_mistake_is_selectable_and_draws_the_packages_weights(app_page):
    app_page.goto("mistakes", "step=right-beside-wrong")
    assert app_page.step() == (2, 3)
    for name, mistake in attention.MISTAKES.items():
        if name != "fill_zero":  # the first one is already chosen
            choose(app_page, mistake.title)
        app_page.assert_no_exception()
        right, wrong = expected_weights(name, Inputs())

        def same(right=right, wrong=wrong, name=name):
            drawn_right, drawn_wrong = drawn_panels(app_page)
            np.testing.assert_allclose(drawn_right, right, atol=1e-6, err_msg=name)
            np.testing.assert_allclose(drawn_wrong, wrong, atol=1e-6, err_msg=name)

        eventually(same)
        if name in ("tril_mask", "fill_zero"):
            app_page.screenshot(f"mistakes-{name}-step2")
    assert "mistake=merge_without_transpose" in app_page.page.url and "step=right-beside-wrong" in app_page.page.url


def test_a_typed_sentence_and_the_prediction(app_page):
    app_page.goto("mistakes", "mistake=diagonal_0")
    app_page.type_sentence(SENTENCE)
    app_page.next()
    right, wrong = expected_weights("diagonal_0", Inputs(text=SENTENCE))
    drawn_right, drawn_wrong = drawn_panels(app_page)
    np.testing.assert_allclose(drawn_right, right, atol=1e-6)
    np.testing.assert_allclose(drawn_wrong, wrong, atol=1e-6)
    assert np.isnan(drawn_wrong[0]).all()  # the first token's row is NaN, drawn as a gap, never as 0
    app_page.screenshot("mistakes-diagonal_0-sentence-step2")
    choose(app_page, attention.MISTAKES["fill_zero"].title)
    app_page.previous()
    main = app_page.page.locator('[data-testid="stMain"]')
    app_page.press_and_wait(main.locator("label").filter(has_text="None: the mask still hides them"))
    app_page.press_and_wait(main.get_by_role("button", name="Reveal"))
    assert "Not quite" in main.locator('[data-testid="stAlert"]').inner_text()  # 0-filled: x^(1) sees later tokens


def figure_bottom(app_page) -> float:
    box = app_page.page.locator('[data-testid="stMain"] .js-plotly-plot').bounding_box()
    return box["y"] + box["height"]


def test_presenter_mode_fits_the_weights_on_a_projector(app_page):
    app_page.goto("mistakes", "mistake=tril_mask&step=right-beside-wrong&present=1")
    assert figure_bottom(app_page) <= 720, f"the figure ends at {figure_bottom(app_page):.0f} px"
    sizes = app_page.page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p')]
             .map((p) => parseFloat(getComputedStyle(p).fontSize))"""
    )
    assert sizes and min(sizes) >= 18, sizes
    app_page.screenshot("mistakes-tril_mask-presenter-step2")
    thirty = f"mistake=tril_mask&step=right-beside-wrong&present=1&input=text&text={quote(THIRTY)}"
    app_page.goto("mistakes", thirty)  # no sidebar
    assert len(attention.tokenize(THIRTY).ids) == 30
    assert figure_bottom(app_page) <= 720, f"with 30 tokens the figure ends at {figure_bottom(app_page):.0f} px"
    app_page.screenshot("mistakes-tril_mask-presenter-30-tokens")
