"""Every layer and head of a model at a glance: one small attention-weight matrix per head, rows = layers,
columns = heads, all on the one fixed 0–1 scale with one colour bar (BertViz's model view and CircuitsVis's
head grid show the same idea).

Rows share the height a step's figure may take, so GPT-2's 12 layers fit a 1280×720 screen under the stepper.
The small multiples carry no cell numbers and no tick labels. Each has one transparent scatter point, in its
blank upper-right triangle (the causal mask hides those keys), which carries its head's summary: written there
when it fits (``labels_fit``), and in the hover. With ``hoverdistance = -1`` that point is the nearest one
wherever the mouse is in the small multiple, so a click anywhere selects it: ``st.plotly_chart`` reports clicks
on scatter points but not on heatmaps (streamlit issues 8760 and 15042). Its ``customdata`` is [layer, head],
both counted from 1. The point's hover therefore replaces the heatmap's (layer, head, query, key and weight)
over the small multiple; a point per cell would keep both, but 67,000 of them take Chromium 5 s to draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .labels import plain_label, token_labels
from .layout import DEFAULT_STYLE, SERIES_COLOURS, FigureStyle, figure, figure_layout, subplot_axes, subplot_grid
from .scales import WEIGHTS, colour_settings

PICK = "open this head"  # the name of the scatter traces a click selects (``tables.OVERLAYS``: not data)
CURRENT = SERIES_COLOURS[1]  # orange: the outline of the layer and head the chapter pages hold now
GAP_PX = 6  # between small multiples
LABEL_COLOUR = "#1A1A1A"  # near black: legible on the masked triangle's light grey
NUMBERS_ABOVE = 6  # more heads than this side by side: the columns are headed 1, 2, … under one "head"


BOTTOM_PX = 10
MIN_ROW_PX = 24  # a small multiple's row (with its gap) is never lower than this


def _top(style: FigureStyle) -> int:
    return int(1.6 * style.title_size + 1.4 * style.font_size) + 6  # the title, then the "head j" headers


def _row(num_layers: int, style: FigureStyle) -> int:
    """A layer's row, gap included: the layers share what a step's figure may take (``style.max_height``)."""
    return max(MIN_ROW_PX, (style.max_height - _top(style) - BOTTOM_PX) // num_layers)


def labels_fit(num_layers: int, style: FigureStyle) -> bool:
    """Whether a head's label fits in its small multiple: its text takes at most 40% of the row's height.
    Otherwise (12 layers in presenter mode) the labels would cover the weights, and only the hover has them."""
    return style.font_size <= 0.4 * _row(num_layers, style)


def every_head_grid(
    weights,
    labels: Sequence[Sequence[str]],
    details: Sequence[Sequence[str]],
    pieces: Sequence[str],
    *,
    title: str,
    current: tuple[int, int] | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """``weights`` (L, h, T, T) as an L × h grid of heatmaps; ``labels[l][k]`` is layer l+1's head k+1's summary,
    ``details[l][k]`` what its label's hover adds.

    ``current`` (layer, head, both from 1) is outlined. Queries are rows and keys columns, on numeric axes whose
    hidden tick labels are the escaped tokens, so hover names the tokens.
    """
    stack = np.asarray(weights, dtype=np.float32)
    num_layers, num_heads, rows, cols = stack.shape
    grid = (num_layers, num_heads)
    if np.shape(labels)[:2] != grid or np.shape(details)[:2] != grid or len(pieces) != rows or rows != cols:
        raise ValueError("every_head_grid needs weights (L, h, T, T), an L × h grid of labels and T tokens.")
    top, plot_height = _top(style), num_layers * _row(num_layers, style)
    height = top + plot_height + BOTTOM_PX
    written = labels_fit(num_layers, style)
    axes, _ = subplot_grid(
        num_layers,
        num_heads,
        [],
        style,
        horizontal_spacing=min(0.03, 0.24 / num_heads),
        vertical_spacing=GAP_PX / plot_height,
    )
    hidden = np.triu(np.ones((rows, cols), dtype=bool), k=1)  # the causal mask: keys after the query
    positions = list(range(1, rows + 1))  # tokens counted from 1, as the hover's "query 1 · key 1" reads
    ticks = {"tickmode": "array", "tickvals": positions, "ticktext": token_labels(pieces), "showticklabels": False}
    spots = {"x": [1 + 0.72 * (cols - 1)], "y": [1 + 0.24 * (rows - 1)]}  # inside the blank upper-right triangle
    data, annotations, shapes = [], [], []
    numbered = num_heads > NUMBERS_ABOVE  # "head 12" is wider than a phone's column
    if numbered:
        annotations.append({**_header("head", (0.0, 1.0), "right", style), "yanchor": "bottom"})
    for layer in range(num_layers):
        for head in range(num_heads):
            k = layer * num_heads + head
            x, y = subplot_axes(k)
            name = f"layer {layer + 1}, head {head + 1}"
            label = plain_label(labels[layer][head])
            data.append(
                {
                    "type": "heatmap",
                    "z": np.where(hidden, np.nan, stack[layer, head]).astype(np.float32),
                    "x": positions,
                    "y": positions,
                    "meta": {"title": name, "kind": WEIGHTS, "hidden_value": 0.0},
                    "hoverongaps": False,
                    "hovertemplate": f"{name}<br>query %{{y}} · key %{{x}}<br>attention weight = %{{z:.3f}}"
                    "<extra></extra>",
                    **colour_settings(WEIGHTS, 0.0, 1.0, style, show=k == 0),
                    "xaxis": x,
                    "yaxis": y,
                }
            )
            data.append(
                {
                    "type": "scatter",
                    "name": PICK,
                    **spots,
                    "mode": "markers+text" if written else "markers",
                    "text": [label],
                    "textposition": "middle center",
                    "textfont": {"size": style.font_size, "color": LABEL_COLOUR},
                    "marker": {"size": 2.2 * style.font_size, "color": "rgba(0,0,0,0)"},
                    "customdata": [[layer + 1, head + 1]],
                    "hovertemplate": f"{name}: {label}<br>{plain_label(details[layer][head])}<br>click to open "
                    "it on the chapter pages<extra></extra>",
                    "showlegend": False,
                    "cliponaxis": False,
                    "xaxis": x,
                    "yaxis": y,
                }
            )
            domain_x, domain_y = axes["xaxis" + x[1:]]["domain"], axes["yaxis" + y[1:]]["domain"]
            if layer == 0:
                header = str(head + 1) if numbered else f"head {head + 1}"
                annotations.append(_header(header, (sum(domain_x) / 2, 1.0), "bottom", style))
            if head == 0:
                annotations.append(_header(f"layer {layer + 1}", (0.0, sum(domain_y) / 2), "right", style))
            if current == (layer + 1, head + 1):
                shapes.append(_outline(x, y))
    for name, props in axes.items():
        shown = {"range": [0.5, cols + 0.5]} if name.startswith("x") else {"range": [rows + 0.5, 0.5]}
        axes[name] = {**props, **ticks, **shown, "ticks": "", "showgrid": False, "zeroline": False}
    margin = {"t": top, "b": BOTTOM_PX, "l": int(4.4 * style.font_size)}  # room for "layer 12" left of the grid
    layout = figure_layout(title, style, height, margin=margin, **axes, annotations=annotations, shapes=shapes)
    # hoverdistance -1: a small multiple's one point is the nearest wherever the mouse is in it, so a click
    # anywhere in it selects that point
    layout.update(hovermode="closest", hoverdistance=-1, dragmode=False, clickmode="event+select")
    return figure(data, layout)


def _header(text: str, at: tuple[float, float], side: str, style: FigureStyle) -> dict:
    """A column's "head j" above the grid (``side`` "bottom") or a row's "layer i" left of it ("right")."""
    above = side == "bottom"
    anchor = {"xanchor": "center", "yanchor": "bottom"} if above else {"xanchor": "right", "yanchor": "middle"}
    return {
        "x": at[0],
        "y": at[1],
        "xref": "paper",
        "yref": "paper",
        "text": text,
        "showarrow": False,
        "font": {"size": style.font_size},
        **anchor,
    }


def _outline(x: str, y: str) -> dict:
    """A rectangle around the small multiple on axes ``x``/``y``: the layer and head the pages hold now."""
    return {
        "type": "rect",
        "xref": f"{x} domain",
        "yref": f"{y} domain",
        "x0": 0,
        "x1": 1,
        "y0": 0,
        "y1": 1,
        "line": {"color": CURRENT, "width": 3},
    }
