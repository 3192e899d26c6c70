"""``figures.readable_width``: how wide a figure must be for its texts to stay apart (a phone scrolls to it)."""

import numpy as np

from explorer import figures
from explorer.figures.widths import LABEL_PITCH_PX


def test_a_heatmap_of_numbers_needs_room_for_its_longest_number_in_every_column():
    values = np.linspace(-0.9, 0.9, 6 * 16).reshape(6, 16)
    fig = figures.heatmap(values, [f"t{i}" for i in range(6)], [f"h{j}" for j in range(16)], title="t", diverging=True)
    width = figures.readable_width(fig)
    assert width > 16 * len("-0.90") * 7  # far wider than a 390 px phone
    narrow = figures.heatmap(values[:, :3], [f"t{i}" for i in range(6)], ["a", "b", "c"], title="t", diverging=True)
    assert figures.readable_width(narrow) < width
    assert figures.readable_width(figures.without_cell_text(fig)) < width  # only the labels' pitch is left


def test_two_panels_side_by_side_need_twice_the_width_of_one():
    one = figures.readable_width(figures.heatmap(np.eye(8), list("abcdefgh"), list("abcdefgh"), title="t"))
    fig = figures.heatmap(np.eye(8), list("abcdefgh"), list("abcdefgh"), title="t")
    fig.update_layout(xaxis={"domain": [0, 0.5]})
    assert figures.readable_width(fig) > one
    assert one > 8 * LABEL_PITCH_PX


def test_a_chart_without_heatmaps_or_tick_labels_needs_nothing():
    fig = figures.lines([1, 2, 3], {"a": [1.0, 2.0, 3.0]}, title="t", x_title="x", y_title="y")
    assert figures.readable_width(fig) == 0
