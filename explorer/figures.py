"""Pure figure builders: numbers and labels in, ``plotly.graph_objects.Figure`` out.

Every page draws through these functions, so the conventions hold everywhere:

* rows are queries and columns are keys, labelled with the tokens on numeric
  axes (``tickvals``/``ticktext``), so a token that occurs twice stays two rows;
* every token label passes through ``token_label``, which makes whitespace
  visible and escapes it, so "<b>" or a link typed by a user is shown, never
  interpreted by plotly;
* colour scales are colour-blind-safe: Cividis for values that start at zero
  (weights), ColorBrewer's RdBu, centred on zero, for signed values (scores, Q/K/V);
* cell values are printed when the matrix is small; hover everywhere says the
  row token, the column token, the value and what it means;
* masked cells are blank and labelled "masked".

Builders take numpy arrays (or anything ``np.asarray`` accepts) and do no torch math.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

SEQUENTIAL = "Cividis"
DIVERGING = "RdBu_r"
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MASKED_FILL = "#D9D9D9"
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
    height_per_row=44,
    min_height=300,
    max_height=470,
)

_INVISIBLE = {" ": "␣", "\t": "⇥", "\n": "↵", "\r": "␍"}


def visible_token(piece: str, *, max_chars: int = 24) -> str:
    """A token's text with whitespace and invisible characters made visible and
    long pieces shortened; for places that show text literally (tables)."""
    shown = []
    for char in piece:
        if char in _INVISIBLE:
            shown.append(_INVISIBLE[char])
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn"):
            shown.append(f"⟨U+{ord(char):04X}⟩")
        else:
            shown.append(char)
    text = "".join(shown) or "∅"
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    # Bidirectional text stays in its own run, so a right-to-left token cannot reorder its neighbours.
    if any(unicodedata.bidirectional(c) in ("R", "AL") for c in text):
        text = "\u2068" + text + "\u2069"
    return text


def token_label(piece: str, *, max_chars: int = 24) -> str:
    """A token as a plotly label: ``visible_token`` with HTML special characters
    escaped, so "<b>" or a link typed by a user is shown, never interpreted."""
    return html.escape(visible_token(piece, max_chars=max_chars), quote=False)


def token_labels(pieces: Sequence[str]) -> list[str]:
    return [token_label(p) for p in pieces]


def plain_label(text: str) -> str:
    """Escape a label that is not a token (a dimension name, a series name)."""
    return html.escape(str(text), quote=False)


def plural(word: str) -> str:
    """An axis title from a row or column name: "query" → "queries", "key" → "keys"."""
    if not word.isalpha():  # a symbol such as "d_out" names the axis as it is
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word if word.endswith("s") else word + "s"


def _ticks(count: int, limit: int = TICK_LIMIT) -> list[int]:
    """Which of ``count`` positions get a label: all up to ``limit``, else every k-th."""
    if count <= limit:
        return list(range(count))
    step = int(np.ceil(count / limit))
    return list(range(0, count, step))


def _labels_that_fit(height: int, style: FigureStyle) -> int:
    """How many token labels fit along a heatmap of this figure height without overlapping:
    its plot area (the height less the title margin) over 1.3 lines of tick text each."""
    plot_height = height - (2 * style.title_size + 2 * style.tick_size + 34)
    return max(2, min(TICK_LIMIT, int(plot_height / (1.3 * style.tick_size))))


def _height(rows: int, style: FigureStyle, extra: int = 120) -> int:
    return int(np.clip(rows * style.height_per_row + extra, style.min_height, style.max_height))


def _layout(fig: go.Figure, title: str, style: FigureStyle, height: int) -> go.Figure:
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
        height=height,
        margin={"l": 10, "r": 10, "t": 2 * style.title_size + 2 * style.tick_size + 24, "b": 10},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor=MASKED_FILL,
        hoverlabel={"font": {"size": style.font_size}},
    )
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


def heatmap(
    z,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    value_name: str = "value",
    meaning: str = "",
    diverging: bool = False,
    masked=None,
    zmin: float | None = None,
    zmax: float | None = None,
    row_title: str = "query",
    col_title: str = "key",
    decimals: int = 2,
    highlight_row: int | None = None,
    row_tokens: bool = True,
    col_tokens: bool = True,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """A matrix as a heatmap with token (or other) labels on numeric axes.

    ``row_labels``/``col_labels`` are raw token pieces (``row_tokens``/``col_tokens``
    True) or plain names such as "dim 0"; either way they are made safe here.
    ``masked`` (bool, same shape, True = masked) blanks cells and labels them "masked".
    ``meaning`` is a sentence shown on hover.
    """
    values = np.asarray(z, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"heatmap needs a 2-d matrix, got shape {values.shape}.")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"{values.shape[0]}×{values.shape[1]} matrix but {len(row_labels)} row and {len(col_labels)} column labels."
        )
    hidden = np.zeros_like(values, dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    hidden = hidden | ~np.isfinite(values)
    view = fit_matrix(values, hidden, row_labels, col_labels, row_tokens, col_tokens, style)
    values, hidden, row_labels, col_labels = view.values, view.hidden, view.row_labels, view.col_labels
    row_tokens, col_tokens = view.row_tokens, view.col_tokens
    rows, cols = values.shape
    shown = np.where(hidden, np.nan, values).astype(np.float32)

    row_text = token_labels(row_labels) if row_tokens else [plain_label(x) for x in row_labels]
    col_text = token_labels(col_labels) if col_tokens else [plain_label(x) for x in col_labels]
    small = rows <= TEXT_CELL_LIMIT and cols <= TEXT_CELL_LIMIT
    finite = shown[np.isfinite(shown)]
    if diverging:
        bound = float(np.max(np.abs(finite))) if finite.size else 1.0
        zmin = -bound if zmin is None else zmin
        zmax = bound if zmax is None else zmax
    trace = go.Heatmap(
        z=shown,
        x=view.col_positions,
        y=view.row_positions,
        meta={
            "rows": [visible_token(x) if row_tokens else str(x) for x in row_labels],
            "cols": [visible_token(x) if col_tokens else str(x) for x in col_labels],
            "title": title,
        },
        colorscale=DIVERGING if diverging else SEQUENTIAL,
        zmin=zmin,
        zmax=zmax,
        zmid=0 if diverging else None,
        colorbar={"thickness": 12, "tickfont": {"size": style.tick_size}},
        hoverongaps=False,
        xgap=1 if small else 0,
        ygap=1 if small else 0,
    )
    meaning_line = f"<br>{plain_label(meaning)}" if meaning else ""
    if small:
        trace.customdata = np.dstack(
            [np.repeat(np.array(row_text, dtype=object)[:, None], cols, axis=1), np.tile(col_text, (rows, 1))]
        )
        trace.hovertemplate = (
            f"{plain_label(row_title)}: %{{customdata[0]}}<br>{plain_label(col_title)}: %{{customdata[1]}}"
            f"<br>{plain_label(value_name)} = %{{z:.{decimals + 2}f}}{meaning_line}<extra></extra>"
        )
        trace.text = [
            ["" if hidden[i, j] else f"{values[i, j]:.{decimals}f}" for j in range(cols)] for i in range(rows)
        ]
        trace.texttemplate = "%{text}"
        trace.textfont = {"size": style.cell_text_size}
    else:
        block = "" if view.block == 1 else f" (mean of a {view.block}×{view.block} block)"
        trace.hovertemplate = (
            f"{plain_label(row_title)} #%{{y}}<br>{plain_label(col_title)} #%{{x}}"
            f"<br>{plain_label(value_name)} = %{{z:.{decimals + 2}f}}{block}{meaning_line}<extra></extra>"
        )
    fig = go.Figure(trace)
    if masked is not None and rows <= MASK_WORD_LIMIT and cols <= MASK_WORD_LIMIT:
        ii, jj = np.nonzero(hidden)
        fig.add_trace(
            go.Scatter(
                x=[view.col_positions[j] for j in jj],
                y=[view.row_positions[i] for i in ii],
                mode="text",
                text=["masked"] * len(ii),
                textfont={"size": max(style.cell_text_size - 3, 9), "color": "#555555"},
                hovertemplate="masked: this key is in the query's future (score −∞, weight 0)<extra></extra>",
                showlegend=False,
                name="masked",
            )
        )
    if highlight_row is not None and highlight_row in view.row_positions and view.block == 1:
        fig.add_shape(
            type="rect",
            x0=view.col_positions[0] - 0.5,
            x1=view.col_positions[-1] + 0.5,
            y0=highlight_row - 0.5,
            y1=highlight_row + 0.5,
            line={"color": "#D55E00", "width": 3},
        )
    fit = _labels_that_fit(_height(rows, style), style)  # columns too: side-by-side heatmaps are about square
    row_ticks, col_ticks = _ticks(rows, fit), _ticks(cols, fit)
    # Many column labels are drawn upright, and plotly.js then puts a top axis's title a little
    # too close: it overlapped their ends until it stood off by another line of tick text.
    upright = len(col_ticks) > ROTATED_TICKS
    standoff = 4 + (style.tick_size if upright else 0)
    longest = max((len(col_text[j]) for j in col_ticks), default=0)
    fig.update_yaxes(
        tickvals=[view.row_positions[i] for i in row_ticks],
        ticktext=[row_text[i] for i in row_ticks],
        autorange="reversed",
        title={"text": plain_label(plural(row_title))},
        tickfont={"size": style.tick_size},
        showgrid=False,
        zeroline=False,
    )
    fig.update_xaxes(
        tickvals=[view.col_positions[j] for j in col_ticks],
        ticktext=[col_text[j] for j in col_ticks],
        title={"text": plain_label(plural(col_title)), "standoff": standoff},
        tickfont={"size": style.tick_size},
        tickangle=-90 if upright else None,
        side="top",
        showgrid=False,
        zeroline=False,
        automargin=True,
    )
    fig = _layout(fig, title, style, _height(rows, style))
    if upright:  # room above the plot for the figure's title, then the axis title, then the labels
        labels_height = int(0.6 * style.tick_size * longest)
        fig.update_layout(margin_t=2 * style.title_size + 2 * style.tick_size + standoff + labels_height + 12)
    return fig


def bars(
    values: Mapping[str, Sequence[float]],
    labels: Sequence[str],
    *,
    title: str,
    value_name: str = "value",
    meaning: str = "",
    decimals: int = 4,
    highlight: int | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """One or more series of per-token values as grouped bars (e.g. a score row
    and its three normalizations). Non-finite values (nan, inf) are drawn as
    empty bars labelled with what they are."""
    x = list(range(len(labels)))
    text_labels = token_labels(labels)
    fig = go.Figure()
    for index, (name, series) in enumerate(values.items()):
        data = np.asarray(series, dtype=np.float64)
        if data.shape != (len(labels),):
            raise ValueError(f"series {name!r} has {data.size} values for {len(labels)} labels.")
        finite = np.isfinite(data)
        fig.add_trace(
            go.Bar(
                x=x,
                y=np.where(finite, data, 0.0),
                name=plain_label(name),
                marker_color=SERIES_COLOURS[index % len(SERIES_COLOURS)],
                text=[f"{v:.{decimals}f}" if ok else str(v) for v, ok in zip(data, finite, strict=True)],
                textposition="outside" if len(labels) <= TEXT_CELL_LIMIT else "none",
                customdata=np.array(text_labels, dtype=object),
                hovertemplate=(
                    f"%{{customdata}}<br>{plain_label(name)}: %{{text}}"
                    + (f"<br>{plain_label(meaning)}" if meaning else "")
                    + "<extra></extra>"
                ),
                cliponaxis=False,
            )
        )
    if highlight is not None and 0 <= highlight < len(labels):
        fig.add_vrect(x0=highlight - 0.5, x1=highlight + 0.5, fillcolor="#D55E00", opacity=0.12, line_width=0)
    ticks = _ticks(len(labels))
    fig.update_xaxes(tickvals=ticks, ticktext=[text_labels[i] for i in ticks], tickfont={"size": style.tick_size})
    fig.update_yaxes(title={"text": plain_label(value_name)}, tickfont={"size": style.tick_size}, zeroline=True)
    fig.update_layout(
        barmode="group",
        plot_bgcolor="rgba(0,0,0,0)",
        legend={"orientation": "h", "y": -0.2},
    )
    fig = _layout(fig, title, style, style.min_height + 80)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


def stacked_contributions(
    contributions,
    token_pieces: Sequence[str],
    *,
    title: str,
    dim_names: Sequence[str] | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """A context vector as the sum of each token's weighted input.

    ``contributions`` is (num_tokens, d): row j is ``weight_j * x_j``. One bar
    per dimension, stacked by token, so each bar's height is the context vector's entry.
    Above ``STACKED_TOKEN_LIMIT`` tokens, the ``STACKED_TOKEN_LIMIT - 1`` tokens with the
    largest total |contribution| keep their own blocks and the rest are summed into one
    "other N tokens" block: a thousand thin blocks are unreadable and slow to draw.
    """
    data = np.asarray(contributions, dtype=np.float64)
    num_tokens, dims = data.shape
    names = list(dim_names) if dim_names is not None else [f"dim {k}" for k in range(dims)]
    labels = token_labels(token_pieces)
    shown = np.arange(num_tokens)
    if num_tokens > STACKED_TOKEN_LIMIT:
        largest = np.argsort(-np.abs(data).sum(axis=1), kind="stable")[: STACKED_TOKEN_LIMIT - 1]
        shown = np.sort(largest)
    fig = go.Figure()
    for j in shown:
        fig.add_trace(
            go.Bar(
                x=list(range(dims)),
                y=data[j],
                name=f"{j}: {labels[j]}",
                marker_color=SERIES_COLOURS[j % len(SERIES_COLOURS)],
                hovertemplate=f"{labels[j]}<br>contributes %{{y:.4f}}<extra></extra>",
            )
        )
    if len(shown) < num_tokens:
        others = np.ones(num_tokens, dtype=bool)
        others[shown] = False
        name = f"other {int(others.sum())} tokens"
        fig.add_trace(
            go.Bar(
                x=list(range(dims)),
                y=data[others].sum(axis=0),
                name=name,
                marker_color=MASKED_FILL,
                hovertemplate=f"{name}<br>contribute %{{y:.4f}}<extra></extra>",
            )
        )
    totals = data.sum(axis=0)
    fig.add_trace(
        go.Scatter(
            x=list(range(dims)),
            y=totals,
            mode="markers+text",
            text=[f"{t:.4f}" for t in totals] if dims <= TEXT_CELL_LIMIT else None,
            textposition="top center",
            marker={"symbol": "line-ew-open", "size": 28, "color": "#000000", "line": {"width": 3}},
            name="context vector",
            hovertemplate="context vector entry %{y:.4f}<extra></extra>",
        )
    )
    ticks = _ticks(dims)
    fig.update_xaxes(
        tickvals=ticks, ticktext=[plain_label(names[k]) for k in ticks], tickfont={"size": style.tick_size}
    )
    fig.update_yaxes(tickfont={"size": style.tick_size}, title={"text": "sum of weighted inputs"})
    fig.update_layout(
        barmode="relative",
        legend={"orientation": "h", "y": -0.25},
        showlegend=len(fig.data) - 1 <= TEXT_CELL_LIMIT,  # beyond that, hover names each token's share
    )
    fig = _layout(fig, title, style, style.min_height + 140)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


def lines(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
    dashed: Sequence[str] = (),
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Several named series against a shared x axis (scaling lab, convergence, timings)."""
    fig = go.Figure()
    for index, (name, ys) in enumerate(series.items()):
        fig.add_trace(
            go.Scatter(
                x=list(x),
                y=list(np.asarray(ys, dtype=np.float64)),
                mode="lines+markers",
                name=plain_label(name),
                line={
                    "color": SERIES_COLOURS[index % len(SERIES_COLOURS)],
                    "dash": "dash" if name in dashed else "solid",
                    "width": 3,
                },
                hovertemplate=f"{plain_label(name)}<br>{plain_label(x_title)} = %{{x}}<br>"
                f"{plain_label(y_title)} = %{{y:.4g}}<extra></extra>",
            )
        )
    fig.update_xaxes(
        type="log" if log_x else "linear", title={"text": plain_label(x_title)}, tickfont={"size": style.tick_size}
    )
    fig.update_yaxes(
        type="log" if log_y else "linear", title={"text": plain_label(y_title)}, tickfont={"size": style.tick_size}
    )
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    fig = _layout(fig, title, style, style.min_height + 140)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


def heatmap_grid(
    matrices,
    titles: Sequence[str],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    value_name: str = "attention weight",
    masked=None,
    columns: int = 3,
    max_row_height: int | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Several same-sized weight matrices (e.g. one per head) on one shared colour scale.

    ``max_row_height`` caps each grid row's height in pixels, so that many
    narrow subplots side by side stay on one screen instead of growing tall.
    """
    stack = np.asarray(matrices, dtype=np.float64)
    count, rows, cols = stack.shape
    columns = max(1, min(columns, count))
    grid_rows = int(np.ceil(count / columns))
    fig = make_subplots(
        rows=grid_rows,
        cols=columns,
        subplot_titles=[plain_label(t) for t in titles],
        horizontal_spacing=0.06,
        vertical_spacing=0.12 / max(grid_rows, 1) + 0.04,
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
    finite = stack[np.isfinite(stack)]
    zmax = float(finite.max()) if finite.size else 1.0
    for k in range(count):
        z = np.where(views[k].hidden, np.nan, views[k].values).astype(np.float32)
        hidden = views[k].hidden
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=view.col_positions,
                y=view.row_positions,
                meta={"rows": row_raw, "cols": col_raw, "title": titles[k]},
                colorscale=SEQUENTIAL,
                zmin=0.0,
                zmax=zmax,
                showscale=k == 0,
                colorbar={"thickness": 12},
                hoverongaps=False,
                text=[[("" if hidden[i, j] else f"{z[i, j]:.2f}") for j in range(cols)] for i in range(rows)]
                if small
                else None,
                texttemplate="%{text}" if small else None,
                hovertemplate=f"{plain_label(titles[k])}<br>query #%{{y}} · key #%{{x}}"
                f"<br>{plain_label(value_name)} = %{{z:.4f}}<extra></extra>",
            ),
            row=k // columns + 1,
            col=k % columns + 1,
        )
    row_ticks, col_ticks = _ticks(rows), _ticks(cols)
    fig.update_yaxes(
        tickvals=[view.row_positions[i] for i in row_ticks],
        ticktext=[row_text[i] for i in row_ticks],
        autorange="reversed",
        tickfont={"size": style.tick_size},
        showgrid=False,
    )
    fig.update_xaxes(
        tickvals=[view.col_positions[j] for j in col_ticks],
        ticktext=[col_text[j] for j in col_ticks],
        tickfont={"size": style.tick_size},
        showgrid=False,
    )
    row_height = max(_height(rows, style, extra=60), 240)
    if max_row_height is not None:
        row_height = min(row_height, max_row_height)
    height = min(style.max_height + 200, grid_rows * row_height)
    return _layout(fig, title, style, height)


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


def _factor(value: float) -> str:
    text = f"{value:.4g}".replace("-", "−")
    return f"({text})" if value < 0 else text


def dot_product_text(query_vector, key_vector, score: float, query: int, key: int, *, max_terms: int = 4) -> str:
    """A dot product written out with its real numbers, numbered from 1 like the book:
    "x^(2)·x^(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.9544".

    Only the first ``max_terms`` terms are written; the rest are "…". ``score``
    is the dot product as the package computed it: nothing is computed here.
    """
    q = np.asarray(query_vector, dtype=np.float64)
    k = np.asarray(key_vector, dtype=np.float64)
    if q.shape != k.shape or q.ndim != 1:
        raise ValueError(f"query and key vectors must have the same length, got {q.shape} and {k.shape}.")
    terms = [f"{_factor(a)}×{_factor(b)}" for a, b in zip(q[:max_terms], k[:max_terms], strict=True)]
    if q.size > max_terms:
        terms.append(f"… ({q.size - max_terms:,} more)")
    return f"x^({query + 1})·x^({key + 1}) = {' + '.join(terms)} = {score:.4f}"


def dot_product_bars(
    scores,
    labels: Sequence[str],
    query_vector,
    key_vectors,
    *,
    query: int,
    title: str,
    value_name: str = "attention score",
    max_terms: int = 4,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """One query's score row as bars; hovering a bar writes its dot product out.

    ``scores`` (num_tokens,) are the query's dot products with every input,
    ``query_vector`` (d,) and ``key_vectors`` (num_tokens, d) the inputs they
    came from, used only to write the terms (see ``dot_product_text``). The
    query's own bar is drawn in a second colour.
    """
    data = np.asarray(scores, dtype=np.float64)
    keys = np.asarray(key_vectors, dtype=np.float64)
    if data.shape != (len(labels),) or keys.shape[0] != len(labels):
        raise ValueError(f"{data.size} scores and {keys.shape[0]} key vectors for {len(labels)} labels.")
    text_labels = token_labels(labels)
    written = [
        dot_product_text(query_vector, keys[j], data[j], query, j, max_terms=max_terms) for j in range(len(keys))
    ]
    hover = [f"key {label}<br>{plain_label(line)}" for label, line in zip(text_labels, written, strict=True)]
    small = len(labels) <= TEXT_CELL_LIMIT
    fig = go.Figure(
        go.Bar(
            x=list(range(len(labels))),
            y=data,
            marker_color=[SERIES_COLOURS[5] if j == query else SERIES_COLOURS[0] for j in range(len(labels))],
            text=[f"{v:.4f}" for v in data] if small else None,
            textposition="outside" if small else "none",
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            cliponaxis=False,
            showlegend=False,
        )
    )
    ticks = _ticks(len(labels))
    fig.update_xaxes(
        tickvals=ticks, ticktext=[text_labels[i] for i in ticks], tickfont={"size": style.tick_size}, title="key"
    )
    fig.update_yaxes(title={"text": plain_label(value_name)}, tickfont={"size": style.tick_size}, zeroline=True)
    fig = _layout(fig, title, style, style.min_height + 20)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


WORD_LABEL_LIMIT = 8  # "masked"/"dropped" written in cells up to this many tokens per axis


def dropout_heatmap(
    z,
    keep,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    masked=None,
    value_name: str = "attention weight after dropout",
    meaning: str = "",
    zmax: float | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Weights after one dropout draw: dropped cells blank and labelled "dropped".

    ``keep`` (bool, same shape, True = kept) comes from the draw; ``masked``
    (True = masked) marks the causal mask's future cells, which stay labelled
    "masked" (they are 0 whether or not the draw dropped them). The words fit
    cells up to ``WORD_LABEL_LIMIT`` tokens per axis; up to ``TICK_LIMIT``,
    dropped cells get a small "×" and future cells stay blank. ``heatmap``'s
    token window and block means apply; block means average the surviving
    weights and carry no marks.
    """
    values = np.asarray(z, dtype=np.float64)
    future = np.zeros(values.shape, dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    dropped = ~np.asarray(keep, dtype=bool) & ~future
    fig = heatmap(
        values,
        row_labels,
        col_labels,
        title=title,
        value_name=value_name,
        meaning=meaning,
        masked=future | dropped,
        zmin=0.0,
        zmax=zmax,
        style=style,
    )
    fig.data = fig.data[:1]  # relabel the blank cells: "masked" and "dropped" separately
    view = fit_matrix(values, future | dropped, row_labels, col_labels, True, True, style)
    if view.block > 1:
        return fig
    rows, cols = view.row_positions, view.col_positions
    small = len(rows) <= WORD_LABEL_LIMIT and len(cols) <= WORD_LABEL_LIMIT
    label_size = max(style.cell_text_size - 3, 9)
    for cells, text, hover in (
        (future, "masked", "masked: this key is in the query's future (score −∞, weight 0)"),
        (dropped, "dropped", "dropped: dropout set this weight to 0 in this draw"),
    ):
        ii, jj = np.nonzero(cells[np.ix_(rows, cols)])
        if ii.size == 0 or (not small and (text == "masked" or len(rows) > TICK_LIMIT or len(cols) > TICK_LIMIT)):
            continue
        fig.add_trace(
            go.Scatter(
                x=[cols[j] for j in jj],
                y=[rows[i] for i in ii],
                mode="text",
                text=[text if small else "×"] * len(ii),
                textfont={
                    "size": label_size if small else style.cell_text_size,
                    "color": "#555555" if text == "masked" else "#B2182B",
                },
                hovertemplate=f"{hover}<extra></extra>",
                showlegend=False,
                name=text,
            )
        )
    return fig


def without_cell_text(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` with the numbers and "masked" labels printed in its cells removed.

    For heatmaps drawn too narrow for their cell text (e.g. two side by side):
    the values stay in the hover, masked cells stay blank. A figure with no cell
    text (above ``TEXT_CELL_LIMIT`` tokens) is returned as it is: copying it costs
    about 14 ms for nothing.
    """
    if not any(_prints_in_cells(trace) for trace in fig.data):
        return fig
    copy = go.Figure(fig)
    copy.data = [trace for trace in copy.data if not (trace.type == "scatter" and trace.mode == "text")]
    copy.update_traces(text=None, texttemplate=None, selector={"type": "heatmap"})
    return copy


def _prints_in_cells(trace) -> bool:
    if trace.type == "scatter":
        return trace.mode == "text"
    return trace.type == "heatmap" and (trace.text is not None or trace.texttemplate is not None)


def measured_lines(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    dashed: Sequence[str] = (),
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """``lines`` on log–log axes for measurements: a tick at every measured x, y ticks at powers of ten,
    the legend beside the plot, and ``dashed`` series (computed references) in grey.

    On log–log axes a cost that grows as x^k is a straight line of slope k, so T² and T lines
    differ in steepness (the Speed page).
    """
    options = dict(title=title, x_title=x_title, y_title=y_title, log_x=True, log_y=True, dashed=dashed, style=style)
    fig = lines(x, series, **options)
    fig.update_xaxes(tickvals=list(x), ticktext=[f"{v:g}" for v in x])
    fig.update_yaxes(dtick=1)
    legend = {
        "orientation": "v",
        "x": 1.02,
        "xanchor": "left",
        "y": 1,
        "yanchor": "top",
        "font": {"size": style.tick_size},
    }
    fig.update_layout(legend=legend, height=style.min_height + 100)  # no legend rows under the plot
    for name in dashed:
        fig.update_traces(line_color="#666666", marker_color="#666666", selector={"name": plain_label(name)})
    return fig
