"""Cell numbers that fit their cells (issue 54): a heatmap learns its share of the page's width at 1280×720
(``FigureStyle.share``) and prints its numbers at the largest size that fits, never under the style's smallest, so
a learner's 12-token sentence keeps its weights in half the width; presenter mode keeps its 18 px."""

from dataclasses import replace

import numpy as np
import pytest

from attention import figures
from attention.figures.heatmaps import plot_width

HALF = figures.COLUMN_SHARES[2]
PIECES = ["The", " dog", " chased", " the", " ball", " across", " the", " garden", " until", " it", " was", " dark"]


def near_even(tokens: int, seed: int = 0) -> np.ndarray:
    """Softmax rows of close scores, as random 3-d inputs give: every weight near 1/tokens."""
    scores = np.random.default_rng(seed).normal(scale=0.2, size=(tokens, tokens))
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


def pieces(tokens: int) -> list[str]:
    return (PIECES * 2)[:tokens]


def printed(fig):
    heat = fig.data[0]
    return None if heat.text is None else (np.asarray(heat.text), heat.textfont.size)


def assert_fits(fig, style, tokens: int) -> None:
    """Every printed number fits its cell, and two neighbours keep ``CELL_TEXT_GAP_PX`` apart."""
    texts, size = printed(fig)
    cell = plot_width(style, fig.layout.yaxis.ticktext, colour_bar=True) / tokens
    widths = np.vectorize(lambda t: figures.text_px(t, size))(texts)
    assert widths.max() <= cell
    assert ((widths[:, 1:] + widths[:, :-1]) / 2).max() + figures.CELL_TEXT_GAP_PX <= cell


@pytest.mark.parametrize("tokens", [6, 10, 12])
def test_weights_keep_their_numbers_up_to_12_tokens_in_half_the_width(tokens):
    """Simplified attention's weights beside its scores: 10 tokens printed none before (the page's rule said 8)."""
    style = replace(figures.DEFAULT_STYLE, share=HALF)
    fig = figures.heatmap(near_even(tokens), pieces(tokens), pieces(tokens), title="w", kind="weights", style=style)
    texts, size = printed(fig)
    assert texts.shape == (tokens, tokens) and size >= figures.DEFAULT_STYLE.min_cell_text_size >= 10
    assert_fits(fig, style, tokens)
    values = np.array([[float(t) for t in row] for row in texts])  # ".08" reads as 0.08
    np.testing.assert_allclose(values, near_even(tokens), atol=0.005)


def test_a_weight_drops_its_leading_zero_only_where_0_10_does_not_fit():
    style = replace(figures.DEFAULT_STYLE, share=HALF)
    ten = figures.heatmap(near_even(10), pieces(10), pieces(10), title="w", kind="weights", style=style)
    twelve = figures.heatmap(near_even(12), pieces(12), pieces(12), title="w", kind="weights", style=style)
    assert all(t.startswith("0.") for t in printed(ten)[0].ravel())
    assert all(t.startswith(".") for t in printed(twelve)[0].ravel())  # ".08", as tables of probabilities print it
    whole = figures.heatmap(near_even(12), pieces(12), pieces(12), title="w", kind="weights")
    assert all(t.startswith("0.") for t in printed(whole)[0].ravel())  # the whole width has room for "0.08"


def test_too_many_columns_leave_their_numbers_to_the_hover():
    style = replace(figures.DEFAULT_STYLE, share=HALF)
    fig = figures.heatmap(near_even(16), pieces(16), pieces(16), title="w", kind="weights", style=style)
    assert printed(fig) is None and "%{z:.4f}" in fig.data[0].hovertemplate
    signed = figures.heatmap(near_even(12) - 0.5, pieces(12), pieces(12), title="s", kind="signed", style=style)
    assert printed(signed) is None  # "-0.42" needs 5 characters: 12 of them do not fit half the width


def test_presenter_mode_prints_numbers_at_18_px_or_not_at_all():
    style = replace(figures.PRESENTER, share=HALF)
    six = figures.heatmap(near_even(6), pieces(6), pieces(6), title="w", kind="weights", style=style)
    assert printed(six)[1] == 18
    twelve = figures.heatmap(near_even(12), pieces(12), pieces(12), title="w", kind="weights", style=style)
    assert printed(twelve) is None


def test_a_phone_keeps_16_px_numbers_and_scrolls_to_the_width_they_need():
    fig = figures.heatmap(near_even(12), pieces(12), pieces(12), title="w", kind="weights", style=figures.PHONE)
    texts, size = printed(fig)
    assert size == 16 and all(t.startswith("0.") for t in texts.ravel())
    assert figures.readable_width(fig) > 358  # wider than a phone's chart: ``widgets.charts.phone_scroll``


def test_multi_head_grid_prints_12_tokens_and_writes_masked_as_causal_mask_does():
    mask = np.triu(np.ones((6, 6), dtype=bool), 1)
    heads = np.stack([np.where(mask, 0.0, np.tril(near_even(6))) for _ in range(2)])
    heads /= heads.sum(axis=-1, keepdims=True)
    fig = figures.heatmap_grid(heads, ["head 1", "head 2"], pieces(6), pieces(6), title="g", masked=mask, columns=2)
    words = [t for t in fig.data if t.name == "masked"]
    assert [w.xaxis for w in words] == ["x", "x2"] and all(list(w.text) == ["masked"] * 15 for w in words)
    single = figures.heatmap(heads[0], pieces(6), pieces(6), title="w", masked=mask)
    assert [t.text for t in single.data if t.name == "masked"][0] == words[0].text  # the same words in the same cells
    assert not fig.layout.title.subtitle.text
    big = np.triu(np.ones((12, 12), dtype=bool), 1)
    wide = np.stack([np.where(big, 0.0, near_even(12)) for _ in range(2)])
    fig = figures.heatmap_grid(wide, ["head 1", "head 2"], pieces(12), pieces(12), title="g", masked=big, columns=2)
    assert all(t.text is not None for t in fig.data if t.type == "heatmap")  # numbers in both heads
    assert not [t for t in fig.data if t.name == "masked" and t.mode == "text"]  # "masked" does not fit 12 columns
    assert fig.layout.title.subtitle.text == "gray cells: masked, a future key (weight 0)"
