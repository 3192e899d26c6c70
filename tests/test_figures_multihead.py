"""``figures.heatmap_grid`` with ``max_row_height``: many heads in one row stay on one screen."""

import numpy as np
import pytest

from attention import figures


def grid(**options):
    weights = np.random.default_rng(0).random((4, 30, 30))
    labels = [f"t{i}" for i in range(30)]
    titles = [f"head {k}" for k in range(4)]
    return figures.heatmap_grid(weights, titles, labels, labels, title="heads", columns=4, **options)


def test_max_row_height_caps_the_grid_height():
    tall = grid()
    capped = grid(max_row_height=340)
    assert tall.layout.height > 340
    assert capped.layout.height == 340
    assert len(capped.data) == 4


def test_max_row_height_never_stretches_a_small_grid():
    weights = np.ones((2, 3, 3))
    fig = figures.heatmap_grid(weights, ["h0", "h1"], list("abc"), list("abc"), title="t", max_row_height=900)
    default = figures.heatmap_grid(weights, ["h0", "h1"], list("abc"), list("abc"), title="t")
    assert fig.layout.height == default.layout.height


@pytest.mark.parametrize("tokens", range(20, 31))
def test_row_labels_of_two_heads_keep_a_line_and_a_third_each_in_presenter_mode(tokens):
    """Two heads side by side at 1280×720 (Multi-head step 1, Why attention's alignment): at 27 or 28 tokens every
    other row was labelled, 19-20 px apart at 18 px, and the labels ran into each other. A panel's plot area is the
    figure's height less the title's margin above and two lines of column labels and margin below."""
    style = figures.PRESENTER
    weights = np.random.default_rng(0).random((2, tokens, tokens))
    labels = [f"t{i}" for i in range(tokens)]
    fig = figures.heatmap_grid(weights, ["h1", "h2"], labels, labels, title="t", columns=2, style=style)
    plot_height = fig.layout.height - (2 * style.title_size + 2 * style.tick_size + 24) - (2 * style.tick_size + 10)
    ticks = fig.layout.yaxis.tickvals
    assert ticks[0] == 0 and len(ticks) >= 2
    assert (ticks[1] - ticks[0]) * plot_height / tokens >= 1.3 * style.tick_size
