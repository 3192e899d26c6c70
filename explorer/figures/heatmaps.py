"""Heatmaps: a matrix with its rows as queries and its columns as keys.

Token labels sit on numeric axes (``tickvals``/``ticktext``), so a token that occurs twice
stays two rows; masked cells are grey and say so on hover. Colour is a measurement, set by
the matrix's ``kind``:

* ``"weights"``: attention weights are probabilities, always on one fixed 0–1 scale;
* ``"signed"``: scores, Q/K/V, context vectors, W matrices: a diverging scale centred on 0,
  from −max|v| to +max|v|;
* ``"nonnegative"``: other values that cannot be negative, from 0 to their maximum;
* ``"mask"``: a boolean mask, two colours and a two-entry legend, no colour bar.

Panels meant to be compared take one ``value_range`` (from ``shared_range``), so equal
colours mean equal numbers. A range is never stretched over a sliver of the values: a weight
matrix whose entries all lie close together says so in its title, in numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .labels import plain_label, plural, token_labels, visible_token
from .layout import (
    DEFAULT_STYLE,
    DIVERGING,
    MASK_COLOURS,
    MASK_WORD_LIMIT,
    ROTATED_TICKS,
    SEQUENTIAL,
    TEXT_CELL_LIMIT,
    TICK_LIMIT,
    FigureStyle,
    apply_layout,
    figure_height,
    fit_matrix,
    labels_that_fit,
    tick_positions,
)

WEIGHTS, SIGNED, NONNEGATIVE, MASK = "weights", "signed", "nonnegative", "mask"
KINDS = (WEIGHTS, SIGNED, NONNEGATIVE, MASK)
NARROW_WIDTH = 320  # px: a heatmap's plot may be this narrow (two or three side by side); wider labels stand up
NARROWEST_PLOT = 200  # px: the narrowest plot area drawn (three heatmaps side by side); column labels fit it
NARROW_SPREAD = 0.05  # weights that all lie within this of each other get their spread in the title
MASKED_SCORE_HOVER = "−∞ (masked): this key is in the query's future, so its weight is exactly 0"
MASKED_WEIGHT_HOVER = "0 (masked): this key is in the query's future"


def infer_kind(values, value_name: str = "") -> str:
    """``"signed"`` if any value is negative; ``"weights"`` if the name says weight and every value is in
    0–1; else ``"nonnegative"``. Pages pass ``kind`` where they know better."""
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    if finite.size and finite.min() < 0:
        return SIGNED
    if "weight" in value_name.lower() and (not finite.size or finite.max() <= 1 + 1e-6):
        return WEIGHTS
    return NONNEGATIVE


def colour_range(values, kind: str) -> tuple[float, float]:
    """The colour scale's (low, high) for ``values`` of this ``kind``: 0–1 for weights and masks,
    ±max|v| for signed values, 0–max for non-negative ones (1 where every value is 0)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
    if kind in (WEIGHTS, MASK):
        return 0.0, 1.0
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    largest = float(np.abs(finite).max()) if finite.size else 0.0
    largest = largest if largest > 0 else 1.0
    return (-largest, largest) if kind == SIGNED else (0.0, largest)


def shared_range(*matrices, kind: str) -> tuple[float, float]:
    """One colour range for panels shown together for comparison (pass it to each as ``value_range``)."""
    flat = [np.ravel(np.asarray(m, dtype=np.float64)) for m in matrices]
    return colour_range(np.concatenate(flat) if flat else np.zeros(0), kind)


def spread_note(values, kind: str) -> str:
    """For weights that all lie within ``NARROW_SPREAD`` of each other, their range in words: on the
    fixed 0–1 scale they look alike, and they are nearly alike."""
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    if kind != WEIGHTS or finite.size < 2:
        return ""
    low, high = float(finite.min()), float(finite.max())
    if high - low >= NARROW_SPREAD:
        return ""
    return f" (all {low:.3f}–{high:.3f}, within {high - low:.3f})"


def _scale(kind: str, low: float, high: float, style: FigureStyle, show: bool = True) -> dict:
    """A heatmap trace's colour settings: an explicit range (zauto off, so plotly keeps it)."""
    colours = SEQUENTIAL if kind in (WEIGHTS, NONNEGATIVE) else DIVERGING
    if kind == MASK:
        colours = [[0, MASK_COLOURS[0]], [0.5, MASK_COLOURS[0]], [0.5, MASK_COLOURS[1]], [1, MASK_COLOURS[1]]]
    return {
        "colorscale": colours,
        "zmin": low,
        "zmax": high,
        "zauto": False,
        "showscale": show and kind != MASK,
        "colorbar": {"thickness": 14, "tickfont": {"size": style.tick_size}},
    }


def _mask_legend(fig: go.Figure, style: FigureStyle) -> None:
    """A boolean mask's two colours as two legend entries, in place of a colour bar."""
    for colour, name in zip(MASK_COLOURS, ("False (0): visible", "True (1): masked, a future key"), strict=True):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={"symbol": "square", "size": style.tick_size, "color": colour},
                name=name,
                hoverinfo="skip",
            )
        )
    fig.update_layout(  # under the plot (its column labels are on top), so the plot keeps its width
        showlegend=True,
        legend={"orientation": "h", "x": 0, "y": 0, "yanchor": "top", "font": {"size": style.font_size}},
    )


def _masked_cells(fig, view, masked_cells, kind: str, style: FigureStyle, words: bool) -> None:
    """Masked cells stay grey (the plot background shows through); they say what they are on hover,
    and in small matrices the word "masked" is written in them."""
    ii, jj = np.nonzero(masked_cells)
    if ii.size == 0 or len(view.row_positions) > TICK_LIMIT or len(view.col_positions) > TICK_LIMIT:
        return
    x = [view.col_positions[j] for j in jj]
    y = [view.row_positions[i] for i in ii]
    hover = MASKED_SCORE_HOVER if kind == SIGNED else MASKED_WEIGHT_HOVER
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            marker={"size": 1, "opacity": 0},
            hovertemplate=f"{hover}<extra></extra>",
            showlegend=False,
            name="masked cells",
        )
    )
    if words:
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="text",
                text=["−∞" if kind == SIGNED else "masked"] * len(ii),
                textfont={"size": style.label_size, "color": "#333333"},
                hoverinfo="skip",
                showlegend=False,
                name="masked",
            )
        )


def heatmap(
    z,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    value_name: str = "value",
    meaning: str = "",
    kind: str | None = None,
    diverging: bool = False,
    value_range: tuple[float, float] | None = None,
    masked=None,
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
    ``kind`` ("weights", "signed", "nonnegative", "mask") sets the colour scale; without it,
    ``diverging`` means "signed", and otherwise ``infer_kind`` decides. ``value_range``
    overrides the kind's range, for panels that share one (``shared_range``).
    ``masked`` (bool, same shape, True = masked) greys cells out and labels them; non-finite
    values (−∞ scores) are masked too. ``meaning`` is a sentence shown on hover.
    """
    values = np.asarray(z, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"heatmap needs a 2-d matrix, got shape {values.shape}.")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"{values.shape[0]}×{values.shape[1]} matrix but {len(row_labels)} row and {len(col_labels)} column labels."
        )
    kind = kind or (SIGNED if diverging else infer_kind(values, value_name))
    low, high = value_range if value_range is not None else colour_range(values, kind)
    note = spread_note(values, kind)
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
    trace = go.Heatmap(
        z=shown,
        x=view.col_positions,
        y=view.row_positions,
        meta={
            "rows": [visible_token(x) if row_tokens else str(x) for x in row_labels],
            "cols": [visible_token(x) if col_tokens else str(x) for x in col_labels],
            "title": title,
            "kind": kind,
            "hidden_value": _hidden_value(kind, masked is not None),
        },
        hoverongaps=False,
        xgap=1 if small else 0,
        ygap=1 if small else 0,
        **_scale(kind, low, high, style),
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
    if kind == MASK:
        _mask_legend(fig, style)
    elif view.block == 1:
        words = masked is not None and rows <= MASK_WORD_LIMIT and cols <= MASK_WORD_LIMIT
        _masked_cells(fig, view, hidden, kind, style, words)
    highlighted = highlight_row is not None and highlight_row in view.row_positions and view.block == 1
    if highlighted:
        fig.add_shape(
            type="rect",
            x0=view.col_positions[0] - 0.5,
            x1=view.col_positions[-1] + 0.5,
            y0=highlight_row - 0.5,
            y1=highlight_row + 0.5,
            line={"color": "#D55E00", "width": 3},
        )
    # Token labels thin out to what fits: columns as many as rows would in a square plot; rows as many
    # as the plot's height fits once upright column labels (plotly stands them up when they would
    # overlap lying down, ``autotickangles``) have taken their room above it.
    height = figure_height(rows, style)
    col_ticks = tick_positions(cols, min(labels_that_fit(height, style), int(NARROWEST_PLOT / (1.3 * style.tick_size))))
    longest = max((len(col_text[j]) for j in col_ticks), default=0)
    labels_height = int(0.6 * style.tick_size * longest)
    may_stand = len(col_ticks) > ROTATED_TICKS or len(col_ticks) * (longest + 1) * 0.6 * style.tick_size > NARROW_WIDTH
    if may_stand:
        height = min(style.max_height, height + labels_height)
    keep = view.row_positions.index(highlight_row) if highlighted else None
    legend_height = 2 * style.font_size + 6 if kind == MASK else 0
    row_fit = labels_that_fit(height - (labels_height if may_stand else 0) - legend_height, style)
    plot_height = height - (2 * style.title_size + 2 * style.tick_size + 34) - legend_height
    if small and (plot_height - (labels_height if may_stand else 0)) / rows < 1.3 * style.cell_text_size:
        fig.update_traces(text=None, texttemplate=None, selector={"type": "heatmap"})  # values would overlap
        fig.data = [trace for trace in fig.data if trace.name != "masked"]  # and so would the words
    row_ticks = tick_positions(rows, row_fit, keep)
    fig.update_yaxes(
        tickvals=[view.row_positions[i] for i in row_ticks],
        ticktext=[row_text[i] for i in row_ticks],
        autorange="reversed",
        title={"text": plain_label(plural(row_title))},
        showgrid=False,
        zeroline=False,
    )
    fig.update_xaxes(
        tickvals=[view.col_positions[j] for j in col_ticks],
        ticktext=[col_text[j] for j in col_ticks],
        # plotly.js puts a top axis's title too close to upright labels: one more line of tick text apart
        title={"text": plain_label(plural(col_title)), "standoff": 4 + (style.tick_size if may_stand else 0)},
        tickangle=-90 if len(col_ticks) > ROTATED_TICKS else None,  # None: "auto"
        autotickangles=[0, -90],
        side="top",
        showgrid=False,
        zeroline=False,
        automargin=True,
    )
    fig = apply_layout(fig, title + note, style, height)
    if kind == MASK:  # room under the plot for the legend
        fig.update_layout(margin_b=2 * style.font_size + 16)
    if may_stand:  # room above the plot for the figure's title, then the axis title, then upright labels
        fig.update_layout(margin_t=2 * style.title_size + 3 * style.tick_size + labels_height + 16)
    return fig


def _hidden_value(kind: str, masked: bool) -> str | float | None:
    """What a blank cell holds, for exports: a masked weight is exactly 0, a masked score −∞."""
    if kind == WEIGHTS:
        return 0.0
    if kind == SIGNED and masked:
        return "-inf"
    return None


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
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Several same-sized matrices (e.g. one weight matrix per head) on one shared colour scale
    with one colour bar; token labels on the first column's axis only, so no subplot's labels
    land on its neighbour.

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
        horizontal_spacing=0.03,
        vertical_spacing=0.12 / max(grid_rows, 1) + 0.04,
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
    for k in range(count):
        z = np.where(views[k].hidden, np.nan, views[k].values).astype(np.float32)
        hidden = views[k].hidden
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=view.col_positions,
                y=view.row_positions,
                meta={
                    "rows": row_raw,
                    "cols": col_raw,
                    "title": titles[k],
                    "kind": kind,
                    "hidden_value": _hidden_value(kind, masked is not None),
                },
                hoverongaps=False,
                text=[[("" if hidden[i, j] else f"{z[i, j]:.2f}") for j in range(cols)] for i in range(rows)]
                if small
                else None,
                texttemplate="%{text}" if small else None,
                textfont={"size": style.cell_text_size},
                hovertemplate=f"{plain_label(titles[k])}<br>query #%{{y}} · key #%{{x}}"
                f"<br>{plain_label(value_name)} = %{{z:.4f}}<extra></extra>",
                **_scale(kind, low, high, style, show=k == 0),
            ),
            row=k // columns + 1,
            col=k % columns + 1,
        )
    row_height = max(figure_height(rows, style, extra=60), 240)
    if max_row_height is not None:
        row_height = min(row_height, max_row_height)
    height = min(style.max_height + 200, grid_rows * row_height)
    fit = labels_that_fit(height // grid_rows + 2 * style.title_size, style)
    row_ticks, col_ticks = tick_positions(rows, fit), tick_positions(cols, max(2, fit // columns + 1))
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
    return apply_layout(fig, title, style, height)


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
    value_range: tuple[float, float] | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Weights after one dropout draw: dropped cells blank and labelled "dropped".

    Survivors are scaled by 1/(1 − p), so they can pass 1: the scale is then 0 to the largest
    survivor ("nonnegative"), else the weights' 0–1; ``value_range`` overrides it.

    ``keep`` (bool, same shape, True = kept) comes from the draw; ``masked``
    (True = masked) marks the causal mask's future cells, which stay labelled
    "masked" (they are 0 whether or not the draw dropped them). The words fit
    cells up to ``WORD_LABEL_LIMIT`` tokens per axis; up to ``TICK_LIMIT``,
    dropped cells get a cross sized to the cell and future cells stay grey. ``heatmap``'s
    token window and block means apply; block means average the surviving
    weights and carry no marks.
    """
    values = np.asarray(z, dtype=np.float64)
    future = np.zeros(values.shape, dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    dropped = ~np.asarray(keep, dtype=bool) & ~future
    kind = WEIGHTS if infer_kind(values, "weight") == WEIGHTS else NONNEGATIVE
    options = dict(title=title, value_name=value_name, meaning=meaning, kind=kind, value_range=value_range)
    fig = heatmap(values, row_labels, col_labels, masked=future | dropped, style=style, **options)
    fig.data = fig.data[:1]  # relabel the blank cells: "masked" and "dropped" separately
    fig.data[0].meta = {**fig.data[0].meta, "hidden_value": 0.0}  # masked and dropped weights are exactly 0
    view = fit_matrix(values, future | dropped, row_labels, col_labels, True, True, style)
    if view.block > 1:
        return fig
    rows, cols = view.row_positions, view.col_positions
    small = len(rows) <= WORD_LABEL_LIMIT and len(cols) <= WORD_LABEL_LIMIT
    for cells, text, hover in (
        (future, "masked", MASKED_WEIGHT_HOVER),
        (dropped, "dropped", "dropped: dropout set this weight to 0 in this draw"),
    ):
        ii, jj = np.nonzero(cells[np.ix_(rows, cols)])
        if ii.size == 0 or (not small and (text == "masked" or len(rows) > TICK_LIMIT or len(cols) > TICK_LIMIT)):
            continue
        colour = "#333333" if text == "masked" else "#B2182B"
        marks = dict(mode="text", text=[text] * len(ii), textfont={"size": style.label_size, "color": colour})
        if not small:  # a cross drawn as a marker, sized to the cells, so neighbours never run together
            size = int(np.clip(0.5 * style.max_height / max(len(rows), len(cols)), 4, 14))
            marks = dict(
                mode="markers", marker={"symbol": "x-thin", "size": size, "line": {"width": 2, "color": colour}}
            )
        fig.add_trace(
            go.Scatter(
                x=[cols[j] for j in jj],
                y=[rows[i] for i in ii],
                hovertemplate=f"{hover}<extra></extra>",
                showlegend=False,
                name=text,
                **marks,
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
