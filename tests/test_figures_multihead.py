"""``figures.heatmap_grid`` with ``max_row_height``: many heads in one row stay on one screen."""

import numpy as np

from explorer import figures


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
