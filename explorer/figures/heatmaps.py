"""Heatmaps: a matrix with its rows as queries and its columns as keys.

Token labels sit on numeric axes (``tickvals``/``ticktext``), so a token that occurs twice
stays two rows; masked cells are grey and say so on hover. The matrix's ``kind`` sets its
colour scale (``scales``). ``dropout_heatmap`` marks the cells one dropout draw set to 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .cells import pick_layer
from .labels import plain_label, plural, token_labels, visible_token
from .layout import (
    DEFAULT_STYLE,
    MASK_WORD_LIMIT,
    ROTATED_TICKS,
    TEXT_CELL_LIMIT,
    TICK_LIMIT,
    FigureStyle,
    axis,
    figure,
    figure_height,
    figure_layout,
    labels_that_fit,
    tick_positions,
    words_fit,
)
from .masks import mask_legend, masked_cells, masked_legend, masked_word
from .matrices import MatrixView, cell_text, fit_matrix, token_numbers
from .scales import (
    MASK,
    SIGNED,
    colour_range,
    colour_settings,
    hidden_value,
    infer_kind,
    spread_note,
)

NARROW_WIDTH = 320  # px: a heatmap's plot may be this narrow (two or three side by side); wider labels stand up
NARROWEST_PLOT = 200  # px: the narrowest plot area drawn (three heatmaps side by side); column labels fit it
LEGEND_LINE = 1.6  # a legend's line of entries, in font sizes, with its share of the padding (2 lines: 68 px at 20 px)
ROW_LABEL_LINES = 1.3  # a row's tick label needs this many font sizes of height (a line box is 1.245 in Chromium)
STANDING_EM = 0.55  # an upright column label's height per letter, in font sizes ("␣journey": 0.49 in Chromium)


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
    legend_names: Mapping[str, str] | None = None,
    pickable: bool = False,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """A matrix as a heatmap with token (or other) labels on numeric axes.

    ``row_labels``/``col_labels`` are raw token pieces (``row_tokens``/``col_tokens``
    True) or plain names such as "dim 0"; either way they are made safe here.
    ``kind`` ("weights", "signed", "nonnegative", "mask") sets the colour scale; without it,
    ``diverging`` means "signed", and otherwise ``infer_kind`` decides. ``value_range``
    overrides the kind's range, for panels that share one (``shared_range``).
    ``masked`` (bool, same shape, True = masked) greys cells out and labels them; non-finite
    values (−∞ scores) are masked too. ``meaning`` is a sentence shown on hover. ``legend_names``
    renames legend entries (a mask's two colours, named for what 0 and 1 mean in it). ``pickable`` adds a
    point to click in each cell (``cells.pick_layer``).
    """
    data, layout, _ = heatmap_spec(
        z,
        row_labels,
        col_labels,
        title=title,
        value_name=value_name,
        meaning=meaning,
        kind=kind,
        diverging=diverging,
        value_range=value_range,
        masked=masked,
        row_title=row_title,
        col_title=col_title,
        decimals=decimals,
        highlight_row=highlight_row,
        row_tokens=row_tokens,
        col_tokens=col_tokens,
        style=style,
    )
    for trace in data if legend_names else ():
        if trace.get("name") in legend_names:
            trace["name"] = legend_names[trace["name"]]
    return figure(pick_layer(data, layout) if pickable else data, layout)


def heatmap_spec(
    z,
    row_labels,
    col_labels,
    *,
    title,
    value_name,
    meaning,
    kind,
    diverging,
    value_range,
    masked,
    row_title,
    col_title,
    decimals,
    highlight_row,
    row_tokens,
    col_tokens,
    style,
) -> tuple[list[dict], dict, MatrixView]:
    """``heatmap``'s traces and layout as plain dicts, and the part of the matrix they draw."""
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

    row_text = token_labels(row_labels) if row_tokens else [plain_label(x) for x in row_labels]
    col_text = token_labels(col_labels) if col_tokens else [plain_label(x) for x in col_labels]
    small = rows <= TEXT_CELL_LIMIT and cols <= TEXT_CELL_LIMIT
    highlighted = highlight_row is not None and highlight_row in view.row_positions and view.block == 1
    # Token labels thin out to what fits: columns as many as rows would in a square plot; rows as many
    # as the plot's height fits once upright column labels (plotly stands them up when they would
    # overlap lying down, ``autotickangles``) have taken their room above it.
    height = figure_height(rows, style)
    col_ticks = tick_positions(cols, min(labels_that_fit(height, style), int(NARROWEST_PLOT / (1.3 * style.tick_size))))
    longest = max((len(col_text[j]) for j in col_ticks), default=0)
    labels_height = int(STANDING_EM * style.tick_size * longest)
    may_stand = len(col_ticks) > ROTATED_TICKS or len(col_ticks) * (longest + 1) * 0.6 * style.tick_size > NARROW_WIDTH
    if may_stand:
        height = min(style.max_height, height + labels_height)
    keep = view.row_positions.index(highlight_row) if highlighted else None
    # "masked" written in small matrices' grey cells where it fits beside its neighbours; else a legend says it
    may_say = masked is not None and kind != MASK and small and max(rows, cols) <= MASK_WORD_LIMIT and view.block == 1
    says = may_say and words_fit(masked_word(kind), cols, style, NARROW_WIDTH)
    grey_legend = may_say and not says and bool(hidden.any())
    # a legend under the plot: a mask's two entries take two lines but in a wide plot, the grey cells' one
    legend_lines = 2 if kind == MASK else int(grey_legend)
    legend_height = int(legend_lines * LEGEND_LINE * style.font_size) + 6 if legend_lines else 0
    height = min(style.max_height, height + legend_height)  # the legend comes on top, as far as the screen allows
    # the plot area is what the margins (as set below) leave; each labelled row needs a line of tick text
    top = 2 * style.title_size + (3 * style.tick_size + labels_height + 16 if may_stand else 2 * style.tick_size + 24)
    plot_height = height - top - (legend_height + 10)
    row_fit = max(2, min(TICK_LIMIT, int(plot_height / (ROW_LABEL_LINES * style.tick_size))))
    # cell text only where it fits: else the values (and the words "masked") would overlap
    prints_values = small and plot_height / rows >= 1.3 * style.cell_text_size
    row_ticks = tick_positions(rows, row_fit, keep)

    trace = {
        "type": "heatmap",
        "z": np.where(hidden, np.nan, values).astype(np.float32),
        "x": view.col_positions,
        "y": view.row_positions,
        "meta": {
            "rows": [visible_token(x) if row_tokens else str(x) for x in row_labels],
            "cols": [visible_token(x) if col_tokens else str(x) for x in col_labels],
            "title": title,
            "kind": kind,
            "hidden_value": hidden_value(kind, masked is not None),
            "highlight": view.row_positions.index(highlight_row) if highlighted else None,  # for the text alternative
        },
        "hoverongaps": False,
        "xgap": 1 if small else 0,
        "ygap": 1 if small else 0,
        **colour_settings(kind, low, high, style),
    }
    meaning_line = f"<br>{plain_label(meaning)}" if meaning else ""
    if small:
        row_of, col_of = np.array(row_text)[:, None], np.array(col_text)[None, :]  # (rows, 1), (1, cols)
        trace["customdata"] = np.stack(np.broadcast_arrays(row_of, col_of), axis=-1)  # (rows, cols, 2)
        trace["hovertemplate"] = (
            f"{plain_label(row_title)}: %{{customdata[0]}}<br>{plain_label(col_title)}: %{{customdata[1]}}"
            f"<br>{plain_label(value_name)} = %{{z:.{decimals + 2}f}}{meaning_line}<extra></extra>"
        )
        if prints_values:
            trace["text"] = cell_text(values, hidden, decimals)
            trace["texttemplate"] = "%{text}"
        trace["textfont"] = {"size": style.cell_text_size}
    else:  # numbers, not labels, cell by cell: counted from 1 (``token_numbers``)
        block = "" if view.block == 1 else f" (mean of a {view.block}×{view.block} block)"
        first = "" if view.block == 1 else " block from"
        trace["customdata"] = token_numbers(view)
        trace["hovertemplate"] = (
            f"{plain_label(row_title)}{first} %{{customdata[0]}}<br>{plain_label(col_title)}{first} %{{customdata[1]}}"
            f"<br>{plain_label(value_name)} = %{{z:.{decimals + 2}f}}{block}{meaning_line}<extra></extra>"
        )
    data = [trace]
    own = {}  # this heatmap's own layout, beside the shared one
    if kind == MASK:
        data += mask_legend(style)
    elif view.block == 1:
        data += masked_cells(view, hidden, kind, style, prints_values and says)
    if grey_legend:
        data.append(masked_legend(style))
    if kind == MASK or grey_legend:  # under the plot (its column labels are on top), so the plot keeps its width
        own["showlegend"] = True
        own["legend"] = {"orientation": "h", "x": 0, "y": 0, "yanchor": "top", "font": {"size": style.font_size}}
    if highlighted:
        own["shapes"] = [
            {
                "type": "rect",
                "x0": view.col_positions[0] - 0.5,
                "x1": view.col_positions[-1] + 0.5,
                "y0": highlight_row - 0.5,
                "y1": highlight_row + 0.5,
                "line": {"color": "#D55E00", "width": 3},
            }
        ]
    own["yaxis"] = axis(
        style,
        plain_label(plural(row_title)),
        tickvals=[view.row_positions[i] for i in row_ticks],
        ticktext=[row_text[i] for i in row_ticks],
        autorange="reversed",
        showgrid=False,
        zeroline=False,
    )
    own["xaxis"] = axis(
        style,
        plain_label(plural(col_title)),
        tickvals=[view.col_positions[j] for j in col_ticks],
        ticktext=[col_text[j] for j in col_ticks],
        tickangle=-90 if len(col_ticks) > ROTATED_TICKS else None,  # None: "auto"
        autotickangles=[0, -90],
        side="top",
        showgrid=False,
        zeroline=False,
        automargin=True,
    )
    # plotly.js puts a top axis's title too close to upright labels: one more line of tick text apart
    own["xaxis"]["title"]["standoff"] = 4 + (style.tick_size if may_stand else 0)
    margin = {}
    if legend_height:  # room under the plot for the legend
        margin["b"] = legend_height + 10
    if may_stand:  # room above the plot for the figure's title, then the axis title, then upright labels
        margin["t"] = top
    return data, figure_layout(title, style, height, margin=margin, subtitle=note, **own), view


def without_cell_text(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` with the numbers and "masked" labels printed in its cells removed.

    For heatmaps drawn too narrow for their cell text (e.g. two side by side):
    the values stay in the hover, masked cells stay blank. A figure with no cell
    text (above ``TEXT_CELL_LIMIT`` tokens) is returned as it is.
    """
    if not any(prints_in_cells(trace) for trace in fig.data):
        return fig
    data = [trace.to_plotly_json() for trace in fig.data if not (trace.type == "scatter" and trace.mode == "text")]
    for trace in data:
        if trace["type"] == "heatmap":
            trace.pop("text", None)
            trace.pop("texttemplate", None)
    return figure(data, fig.layout.to_plotly_json())


def prints_in_cells(trace) -> bool:
    if trace.type == "scatter":
        return trace.mode == "text"
    return trace.type == "heatmap" and (trace.text is not None or trace.texttemplate is not None)
