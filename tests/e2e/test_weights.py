"""Trained weights in Chromium: a link with ``?weights=trained`` opens Multi-head attention and Why attention on the
small GPT's layer, with the sidebar's fixed sizes disabled and the per-head summaries drawn."""

from __future__ import annotations

import numpy as np
import pytest
from e2e_support import eventually

from explorer import models
from explorer.settings import Settings

pytestmark = pytest.mark.browser

CAPTION = "layer 1 of 4 of the small GPT trained on The Verdict"
WHY_CAPTION = "they do not reach this page"


def main_text(app_page) -> str:
    return app_page.page.locator('[data-testid="stMain"]').inner_text()


def test_multihead_with_trained_weights_draws_the_layers_heads_and_their_summaries(app_page):
    app_page.goto("multihead", "weights=trained&step=what-heads-look-at")
    app_page.assert_no_exception()
    assert CAPTION in main_text(app_page)
    assert app_page.step() == (8, 9)  # then "Every layer and head"
    sidebar = app_page.page.locator('[data-testid="stSidebar"]')
    assert sidebar.locator(".st-key-w_d_out input").is_disabled()
    assert not sidebar.locator(".st-key-w_layer input").is_disabled()

    def summary():
        plots = [p for p in app_page.plots() if p.title.startswith("What each head of layer 1")]
        assert plots, "the per-head summary is not drawn yet"
        plot = plots[0]
        return np.array([np.asarray(trace["y"], dtype=float) for trace in plot.traces])  # (3 measures, 4 heads)

    drawn = eventually(summary)
    expected = models.summaries(Settings(weights="trained", layer=1))
    np.testing.assert_allclose(drawn[0], expected.previous_token, atol=1e-6)
    np.testing.assert_allclose(drawn[1], expected.first_token, atol=1e-6)
    assert (drawn.max(axis=1) - drawn.min(axis=1)).max() > 0.07  # the heads differ
    assert "attention sink" in main_text(app_page)

    app_page.previous()  # the wrapper and the layer's MultiHeadAttention agree
    app_page.assert_no_exception()

    def agreement():
        assert any(p.title.startswith("Every output entry") for p in app_page.plots())

    eventually(agreement)


def test_why_attention_opens_with_trained_weights_and_says_they_do_not_reach_its_rnn(app_page):
    app_page.goto("", "weights=trained")
    app_page.assert_no_exception()
    assert WHY_CAPTION in main_text(app_page)
    assert app_page.page.locator('[data-testid="stSidebar"] .st-key-w_d_out input').is_disabled()

    def painted():
        plots = app_page.plots()
        assert plots, "no figure painted yet"
        return plots

    plots = eventually(painted)
    assert all(trace["z"] is None or np.size(trace["z"]) > 0 for plot in plots for trace in plot.traces)
