"""Several same-sized matrices side by side, e.g. one attention-weight matrix per head, on one
shared colour scale with one colour bar."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .cells import pick_layer
from .labels import plain_label, token_labels, visible_token
from .layout import (
    DEFAULT_STYLE,
    TEXT_CELL_LIMIT,
    FigureStyle,
    axis,
    figure,
    figure_height,
    figure_layout,
    labels_that_fit,
    subplot_axes,
    subplot_grid,
    tick_positions,
)
from .matrices import cell_text, fit_matrix, token_numbers
from .scales import WEIGHTS, colour_range, colour_settings, hidden_value

GRID_ROW_SPACING = 0.12  # the room between a grid's rows of panels: this over the rows, + 0.04, of the height


def heatmap_grid(
    matrices,
    titles: Sequence[str],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    value_name: str = "attention weight",
    kind: str = WEIGHTS,
    masked=None,
    columns: int = 3,
    max_row_height: int | None = None,
    pickable: bool = False,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Several same-sized matrices (e.g. one weight matrix per head) on one shared colour scale
    with one colour bar; token labels on the first column's axis only, so no subplot's labels
    land on its neighbour.

    ``max_row_height`` caps each grid row's height in pixels, so that many
    narrow subplots side by side stay on one screen instead of growing tall. ``pickable`` adds a point to
    click in each cell, panel k's column j counted as k · columns + j (``cells.pick_layer``).
    """
    stack = np.asarray(matrices, dtype=np.float64)
    count, rows, cols = stack.shape
    columns = max(1, min(columns, count))
    grid_rows = int(np.ceil(count / columns))
    vertical_spacing = GRID_ROW_SPACING / max(grid_rows, 1) + 0.04
    axes, annotations = subplot_grid(
        grid_rows,
        columns,
        [plain_label(t) for t in titles],
        style,
        horizontal_spacing=0.03,
        vertical_spacing=vertical_spacing,
        shared_yaxes=True,
    )
    hidden = np.zeros((rows, cols), dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    views = [
        fit_matrix(stack[k], hidden | ~np.isfinite(stack[k]), row_labels, col_labels, True, True, style)
        for k in range(count)
    ]
    view = views[0]
    rows, cols = view.values.shape
    row_text = token_labels(view.row_labels) if view.row_tokens else [plain_label(x) for x in view.row_labels]
    col_text = token_labels(view.col_labels) if view.col_tokens else [plain_label(x) for x in view.col_labels]
    row_raw = [visible_token(x) for x in view.row_labels]
    col_raw = [visible_token(x) for x in view.col_labels]
    small = rows <= TEXT_CELL_LIMIT and cols <= TEXT_CELL_LIMIT and count <= 4
    low, high = colour_range(stack, kind)
    data, first = [], "" if view.block == 1 else " block from"
    for k in range(count):
        z = np.where(views[k].hidden, np.nan, views[k].values).astype(np.float32)
        x, y = subplot_axes(k)
        trace = {
            "type": "heatmap",
            "z": z,
            "x": view.col_positions,
            "y": view.row_positions,
            "meta": {
                "rows": row_raw,
                "cols": col_raw,
                "title": titles[k],
                "kind": kind,
                "hidden_value": hidden_value(kind, masked is not None),
            },
            "hoverongaps": False,
            "textfont": {"size": style.cell_text_size},
            "customdata": token_numbers(views[k]),  # counted from 1 (a block's first)
            "hovertemplate": f"{plain_label(titles[k])}<br>query{first} %{{customdata[0]}} · "
            f"key{first} %{{customdata[1]}}<br>{plain_label(value_name)} = %{{z:.4f}}<extra></extra>",
            **colour_settings(kind, low, high, style, show=k == 0),
            "xaxis": x,
            "yaxis": y,
        }
        if small:
            trace["text"] = cell_text(z, views[k].hidden)
            trace["texttemplate"] = "%{text}"
        data.append(trace)
    row_height = max(figure_height(rows, style, extra=60), 240)
    if max_row_height is not None:
        row_height = min(row_height, max_row_height)
    height = min(style.max_height + 200, grid_rows * row_height)
    fit = labels_that_fit(height // grid_rows + 2 * style.title_size, style)
    # rows: as many labels as a panel's plot area is tall, 1.3 lines each; it is the figure's height less the title's
    # margin above, and the column labels with the bottom margin below (2 lines), shared by the grid's rows
    plot_height = height - (2 * style.title_size + 2 * style.tick_size + 24) - (2 * style.tick_size + 10)
    panel_height = plot_height * (1 - vertical_spacing * (grid_rows - 1)) / grid_rows
    row_fit = max(2, int(panel_height / (1.3 * style.tick_size)))
    row_ticks, col_ticks = tick_positions(rows, row_fit), tick_positions(cols, max(2, fit // columns + 1))
    y_ticks = {"tickvals": [view.row_positions[i] for i in row_ticks], "ticktext": [row_text[i] for i in row_ticks]}
    x_ticks = {"tickvals": [view.col_positions[j] for j in col_ticks], "ticktext": [col_text[j] for j in col_ticks]}
    for name, props in axes.items():
        ticks = x_ticks if name.startswith("x") else {**y_ticks, "autorange": "reversed"}
        axes[name] = axis(style, **props, **ticks, showgrid=False)
    layout = figure_layout(title, style, height, **axes, annotations=annotations)
    return figure(pick_layer(data, layout) if pickable else data, layout)
