"""What every figure shares: colours, font sizes, ticks, the title and margins, export options,
and which part of a large matrix a heatmap draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from .labels import plain_label

SEQUENTIAL = "Cividis"
DIVERGING = "RdBu_r"
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MASKED_FILL = "#D9D9D9"
MASK_COLOURS = ("#56B4E9", "#595959")  # a boolean mask: False (visible) light blue, True (masked) dark grey
ROTATED_TICKS = 12  # above this many column labels, heatmaps draw them upright (tickangle -90)
TEXT_CELL_LIMIT = 16  # print cell values when both sides have at most this many entries
STACKED_TOKEN_LIMIT = 24  # blocks in a stacked context vector; more tokens share an "other" block
TICK_LIMIT = 40  # label every token up to this many; beyond it, every k-th
MASK_WORD_LIMIT = 8  # write "masked" in blank cells up to this many per axis (wider, the words overlap)


@dataclass(frozen=True)
class FigureStyle:
    """Font sizes and margins; ``PRESENTER`` is readable from the back of a room."""

    font_size: int = 13
    tick_size: int = 12
    title_size: int = 16
    cell_text_size: int = 12
    label_size: int = 10  # words written in cells ("masked", "dropped")
    height_per_row: int = 34
    min_height: int = 260
    max_height: int = 470  # a step's figure fits a 1280×720 screen under the title and stepper
    token_window: tuple[int, int] | None = None  # show only tokens [start, stop) on token axes
    max_cells_per_axis: int = 192  # larger matrices are drawn as block means, to keep payloads small


DEFAULT_STYLE = FigureStyle()
PRESENTER = FigureStyle(
    font_size=20,
    tick_size=18,
    title_size=24,
    cell_text_size=18,
    label_size=18,
    height_per_row=44,
    min_height=280,
    max_height=420,  # under the title, the stepper and a line of text at 1280×720
)


def tick_positions(count: int, limit: int = TICK_LIMIT, keep: int | None = None) -> list[int]:
    """Which of ``count`` positions get a label: all up to ``limit``, else every k-th.

    ``keep`` (a highlighted row or column) always keeps its label: the every-k-th
    positions are then counted from it, both ways, so no label crowds it.
    """
    if count <= limit:
        return list(range(count))
    step = int(np.ceil(count / limit))
    start = 0 if keep is None or not 0 <= keep < count else keep % step
    return list(range(start, count, step))


def labels_that_fit(height: int, style: FigureStyle) -> int:
    """How many token labels fit along a heatmap of this figure height without overlapping:
    its plot area (the height less the title margin) over 1.3 lines of tick text each."""
    plot_height = height - (2 * style.title_size + 2 * style.tick_size + 34)
    return max(2, min(TICK_LIMIT, int(plot_height / (1.3 * style.tick_size))))


def figure_height(rows: int, style: FigureStyle, extra: int = 120) -> int:
    return int(np.clip(rows * style.height_per_row + extra, style.min_height, style.max_height))


def apply_layout(fig: go.Figure, title: str, style: FigureStyle, height: int) -> go.Figure:
    """The title, margins and height every figure shares, and every text size set explicitly: Streamlit's
    plotly theme sets its own smaller axis-title, legend and colour-bar sizes where a figure sets none."""
    fig.update_layout(
        title={
            "text": plain_label(title),
            "font": {"size": style.title_size},
            "x": 0,
            "xanchor": "left",
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 6},
        },
        font={"size": style.font_size},
        legend={"font": {"size": style.font_size}},
        height=height,
        margin={"l": 10, "r": 10, "t": 2 * style.title_size + 2 * style.tick_size + 24, "b": 10},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor=MASKED_FILL,
        hoverlabel={"font": {"size": style.font_size}},
    )
    for axes in (fig.update_xaxes, fig.update_yaxes):
        axes(title_font_size=style.font_size, tickfont_size=style.tick_size)
    fig.update_traces(colorbar_tickfont_size=style.tick_size, selector={"type": "heatmap"})
    fig.update_annotations(font_size=style.font_size)
    return fig


@dataclass(frozen=True)
class MatrixView:
    """The part of a matrix a heatmap draws: a token window, then block means if still large."""

    values: np.ndarray
    hidden: np.ndarray
    row_labels: list[str]
    col_labels: list[str]
    row_positions: list[int]
    col_positions: list[int]
    row_tokens: bool
    col_tokens: bool
    block: int


def _block_means(values: np.ndarray, hidden: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = values.shape
    pad_r, pad_c = -rows % block, -cols % block
    data = np.pad(np.where(hidden, np.nan, values), ((0, pad_r), (0, pad_c)), constant_values=np.nan)
    blocks = data.reshape(data.shape[0] // block, block, data.shape[1] // block, block)
    counts = np.isfinite(blocks).sum(axis=(1, 3))
    sums = np.nansum(blocks, axis=(1, 3))
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    return means, counts == 0


def fit_matrix(values, hidden, row_labels, col_labels, row_tokens, col_tokens, style: FigureStyle) -> MatrixView:
    """Apply ``style.token_window`` to token axes, then draw block means if an axis is still
    longer than ``style.max_cells_per_axis``, so a 1,024-token matrix is not sent cell by cell."""
    row_labels, col_labels = list(row_labels), list(col_labels)
    row_start = col_start = 0
    if style.token_window is not None:
        start, stop = style.token_window
        if row_tokens:
            values, hidden, row_labels = values[start:stop], hidden[start:stop], row_labels[start:stop]
            row_start = start
        if col_tokens:
            values, hidden, col_labels = values[:, start:stop], hidden[:, start:stop], col_labels[start:stop]
            col_start = start
    rows, cols = values.shape
    block = int(np.ceil(max(rows, cols) / style.max_cells_per_axis))
    if block <= 1:
        return MatrixView(
            values,
            hidden,
            row_labels,
            col_labels,
            list(range(row_start, row_start + rows)),
            list(range(col_start, col_start + cols)),
            row_tokens,
            col_tokens,
            1,
        )
    means, empty = _block_means(values, hidden, block)
    row_positions = list(range(row_start, row_start + rows, block))
    col_positions = list(range(col_start, col_start + cols, block))
    return MatrixView(
        means,
        empty,
        [f"#{p}–{min(p + block, row_start + rows) - 1}" for p in row_positions],
        [f"#{p}–{min(p + block, col_start + cols) - 1}" for p in col_positions],
        row_positions,
        col_positions,
        False,
        False,
        block,
    )


def export_config(file_name: str, *, image_format: str = "png", scale: int = 3) -> dict:
    """plotly's toolbar config: the camera button downloads PNG at presentation
    resolution (``scale`` × the on-screen size) or SVG, named for the view."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in file_name).strip("-") or "attention-explorer"
    image_format = image_format if image_format in ("png", "svg") else "png"
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": safe, "scale": scale},
        "modeBarButtonsToRemove": ["lasso2d", "select2d"],
    }
