"""Clickable cells (``figures.heatmaps``): a point per cell for a click to pick, and a picked cell's marks."""

import dataclasses
import json

import numpy as np
import plotly.io as pio
import pytest

from attention import figures
from attention.figures import figure_tables

PIECES = ["Your", " journey", " starts", " with"]


def pickable(z, **options):
    options.setdefault("title", "attn_weights")
    return figures.heatmap(z, PIECES[: len(z)], PIECES[: z.shape[1]], pickable=True, **options)


def layer(fig):
    (found,) = [t for t in fig.data if t.name == figures.PICK_TRACE]
    return found


def test_one_invisible_point_per_cell_at_its_centre_with_its_row_and_column():
    z = np.arange(12, dtype=float).reshape(4, 3) / 12
    cells = layer(pickable(z))
    assert len(cells.x) == len(cells.y) == z.size
    custom = np.asarray(cells.customdata)
    assert custom.shape == (12, 2)
    for (row, col), x, y in zip(custom, cells.x, cells.y, strict=True):
        assert (x, y) == (col, row), "the point sits at its cell's centre on the numeric axes"
    assert sorted(map(tuple, custom)) == [(i, j) for i in range(4) for j in range(3)]
    assert cells.marker.opacity == 0 and cells.selected.marker.opacity == 0 and cells.unselected.marker.opacity == 0
    assert cells.mode == "markers" and cells.showlegend is False


def test_axes_stay_numeric_and_a_click_picks_the_nearest_centre():
    fig = pickable(np.full((3, 3), 0.3))
    heat = fig.data[0]
    assert list(heat.x) == [0, 1, 2] and list(heat.y) == [0, 1, 2]
    assert all(isinstance(v, int | np.integer) for v in layer(fig).x)
    assert fig.layout.hoverdistance == -1 and fig.layout.hovermode == "closest"
    assert fig.layout.clickmode == "event+select"


def test_the_hover_moves_to_the_points_and_reads_as_before():
    z = np.array([[0.25, -1.5], [0.125, 2.0]])
    plain = figures.heatmap(z, PIECES[:2], PIECES[:2], title="scores", value_name="score", kind="signed")
    fig = figures.heatmap(z, PIECES[:2], PIECES[:2], title="scores", value_name="score", kind="signed", pickable=True)
    assert fig.data[0].hoverinfo == "skip", "the heatmap's own hover is off: the points carry it"
    texts = layer(fig).hovertext
    assert texts[1] == "query: Your<br>key: ␣journey<br>score = −1.5000"
    assert plain.data[0].hovertemplate.startswith("query: %{customdata[0]}<br>key: %{customdata[1]}")


def test_masked_cells_keep_their_words_on_hover():
    z = np.array([[0.4, np.nan], [0.5, 0.5]])
    fig = pickable(z, masked=np.array([[False, True], [False, False]]), kind="weights")
    texts = layer(fig).hovertext
    assert texts[1] == figures.heatmaps.MASKED_WEIGHT_HOVER
    assert all(t.hoverinfo == "skip" for t in fig.data if t.name != figures.PICK_TRACE)


def test_a_dropout_heatmap_is_pickable_too():
    z = np.array([[1.0, 0.0], [0.6, 0.0]])
    keep = np.array([[True, False], [True, False]])
    fig = figures.heatmap(z, PIECES[:2], PIECES[:2], title="dropped", pickable=True, dropped=~keep)
    texts = layer(fig).hovertext
    assert "dropped" in texts[3] and len(texts) == 4


def test_no_points_on_block_means_or_beyond_the_limit():
    big = np.full((70, 70), 1 / 70)
    labels = [f"t{k}" for k in range(70)]
    fig = figures.heatmap(big, labels, labels, title="w", pickable=True)
    assert not [t for t in fig.data if t.name == figures.PICK_TRACE], f"{70 * 70} > {figures.PICK_LIMIT} cells"
    style = dataclasses.replace(figures.DEFAULT_STYLE, max_cells_per_axis=16)
    blocks = figures.heatmap(np.full((40, 40), 0.025), labels[:40], labels[:40], title="w", pickable=True, style=style)
    assert not [t for t in blocks.data if t.name == figures.PICK_TRACE], "a block mean is no cell"


def test_a_token_window_keeps_the_full_matrix_indices():
    z = np.eye(6)
    labels = [f"t{k}" for k in range(6)]
    style = dataclasses.replace(figures.DEFAULT_STYLE, token_window=(2, 5))
    cells = layer(figures.heatmap(z, labels, labels, title="w", pickable=True, style=style))
    assert sorted({int(r) for r, _ in cells.customdata}) == [2, 3, 4]


def test_the_layer_is_left_out_of_the_exports_and_survives_narrow_columns():
    fig = pickable(np.full((2, 2), 0.5))
    tables = figure_tables(fig)
    assert [t["type"] for t in tables] == ["heatmap"]
    assert [t for t in figures.without_cell_text(fig).data if t.name == figures.PICK_TRACE]


@pytest.mark.parametrize(("row", "col", "expected"), [(1, 0, (-0.5, 0.5, 0.5, 1.5)), (2, None, (-0.5, 2.5, 1.5, 2.5))])
def test_marks_outline_a_cell_or_a_row(row, col, expected):
    spec = json.loads(pio.to_json(pickable(np.full((3, 3), 0.3))))
    (mark,) = figures.cell_marks(spec, row=row, col=col)
    assert (mark["x0"], mark["x1"], mark["y0"], mark["y1"]) == expected
    (column,) = figures.cell_marks(spec, col=1)
    assert (column["x0"], column["x1"], column["y0"], column["y1"]) == (0.5, 1.5, -0.5, 2.5)
    assert figures.cell_marks(spec, row=7) == [], "a row the heatmap does not show gets no mark"


def test_a_large_heatmap_sends_its_hover_as_one_template_and_masked_cells_say_so():
    z = np.tril(np.full((20, 20), 0.05))
    future = np.triu(np.ones((20, 20), dtype=bool), 1)
    labels = [f"t{k}" for k in range(20)]
    fig = figures.heatmap(np.where(future, np.nan, z), labels, labels, title="w", masked=future, pickable=True)
    layers = [t for t in fig.data if t.name == figures.PICK_TRACE]
    assert sum(len(t.x) for t in layers) == 400, "still one point per cell"
    shown = next(t for t in layers if t.marker.color is not None and not isinstance(t.marker.color, str))
    assert "%{marker.color:.4f}" in shown.hovertemplate and shown.hovertext is None, "no text per cell"
    np.testing.assert_array_equal(shown.marker.color, np.float32(0.05))  # sent as float32
    assert len(shown.x) == 210 and all(t.marker.opacity == 0 for t in layers)
    masked = [t for t in layers if t is not shown]
    assert sum(len(t.x) for t in masked) == 190 and all("masked" in t.hovertemplate for t in masked)


def test_the_points_do_not_stretch_the_axes_beyond_the_cells():
    """A scatter pads plotly's autorange; a pickable heatmap keeps its cells' extent (30 rows' ticks overlapped)."""
    z = np.arange(30 * 4, dtype=float).reshape(30, 4)
    fig = figures.heatmap(
        z, [f"t{k}" for k in range(30)], [f"d{k}" for k in range(4)], pickable=True, col_tokens=False, title="t"
    )
    assert list(fig.layout.yaxis.range) == [29.5, -0.5], "rows top to bottom, as the plain heatmap's reversed autorange"
    assert list(fig.layout.xaxis.range) == [-0.5, 3.5]
