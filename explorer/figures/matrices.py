"""What part of a matrix a heatmap draws: cell text, and block means for a matrix too large to read cell by cell."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import FigureStyle


def cell_text(values: np.ndarray, hidden: np.ndarray, decimals: int = 2) -> np.ndarray:
    """The numbers printed in a heatmap's cells, "" in hidden ones, as one string array: a figure copies it
    in one piece, where nested lists are copied string by string."""
    rows = zip(values, hidden, strict=True)
    return np.array([["" if off else f"{v:.{decimals}f}" for v, off in zip(*row, strict=True)] for row in rows])


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


def token_numbers(view: MatrixView) -> np.ndarray:
    """Each drawn cell's row and column counted from 1, as the pages count tokens (a block's first), for a
    hover's ``customdata``: (rows, cols, 2), int16, so a 192-token matrix adds as many bytes as its float32
    values did, where labels cell by cell would add several times more."""
    rows, cols = np.asarray(view.row_positions) + 1, np.asarray(view.col_positions) + 1
    return np.stack(np.broadcast_arrays(rows[:, None], cols[None, :]), axis=-1).astype(np.int16)


def _block_means(values: np.ndarray, hidden: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean of the shown cells in each ``block`` × ``block`` block (the last ones may be smaller),
    and which blocks have none. Sums run along rows, then down columns (``np.add.reduceat``): a third of
    the time of summing padded blocks over two strided axes."""
    rows, cols = values.shape
    shown = ~hidden & np.isfinite(values)
    row_starts, col_starts = np.arange(0, rows, block), np.arange(0, cols, block)
    sums = np.add.reduceat(np.add.reduceat(np.where(shown, values, 0.0), col_starts, axis=1), row_starts, axis=0)
    counts = np.add.reduceat(np.add.reduceat(shown.astype(np.int32), col_starts, axis=1), row_starts, axis=0)
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
        [f"#{p + 1}–{min(p + block, row_start + rows)}" for p in row_positions],  # counted from 1, as tokens are
        [f"#{p + 1}–{min(p + block, col_start + cols)}" for p in col_positions],
        row_positions,
        col_positions,
        False,
        False,
        block,
    )
