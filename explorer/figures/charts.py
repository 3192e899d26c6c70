"""Charts of per-token and per-size values: bars, a stacked context vector, lines, and a
dot product written out with its numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.figures.layout import plain_numbers

from .labels import plain_label, token_labels
from .layout import (
    DEFAULT_STYLE,
    MASKED_FILL,
    ROTATED_TICKS,
    SERIES_COLOURS,
    STACKED_TOKEN_LIMIT,
    TEXT_CELL_LIMIT,
    FigureStyle,
    axis,
    figure,
    figure_layout,
    tick_positions,
)

BAR_TICK_LIMIT = 16  # token labels under bars: all up to this many, else every k-th (upright)
LABEL_HEADROOM = 0.25  # a stacked chart's y axis reaches this share of its bars' span above them: its sums' labels


def bars(
    values: Mapping[str, Sequence[float]],
    labels: Sequence[str],
    *,
    title: str,
    value_name: str = "value",
    meaning: str = "",
    decimals: int = 4,
    highlight: int | None = None,
    extra_height: int = 80,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """One or more series of per-token values as grouped bars (e.g. a score row
    and its three normalizations). Non-finite values (nan, inf) are drawn as
    empty bars labelled with what they are.

    Value labels sit above the bars at the style's cell-text size, with fewer decimals when
    several series share a group; plotly hides a label that would not fit its bar's width
    (``uniformtext``), so labels never run into each other. Hover always has the full value.
    """
    x = list(range(len(labels)))
    text_labels = token_labels(labels)
    shown_decimals = decimals if len(values) == 1 else min(decimals, 2)
    data = []
    for index, (name, series) in enumerate(values.items()):
        numbers = np.asarray(series, dtype=np.float64)
        if numbers.shape != (len(labels),):
            raise ValueError(f"series {name!r} has {numbers.size} values for {len(labels)} labels.")
        finite = np.isfinite(numbers)
        data.append(
            {
                "type": "bar",
                "x": x,
                "y": np.where(finite, numbers, 0.0),
                "name": plain_label(name),
                "marker": {"color": SERIES_COLOURS[index % len(SERIES_COLOURS)]},
                "text": [f"{v:.{shown_decimals}f}" if ok else str(v) for v, ok in zip(numbers, finite, strict=True)],
                "textposition": "outside" if len(labels) <= TEXT_CELL_LIMIT else "none",
                "textangle": 0,
                "textfont": {"size": style.cell_text_size},
                "customdata": [f"{v:.{decimals}f}" if ok else str(v) for v, ok in zip(numbers, finite, strict=True)],
                "hovertext": text_labels,
                "hovertemplate": (
                    f"%{{hovertext}}<br>{plain_label(name)}: %{{customdata}}"
                    + (f"<br>{plain_label(meaning)}" if meaning else "")
                    + "<extra></extra>"
                ),
                "cliponaxis": False,
            }
        )
    own = {}
    if highlight is not None and 0 <= highlight < len(labels):
        band = {"type": "rect", "x0": highlight - 0.5, "x1": highlight + 0.5, "xref": "x", "y0": 0, "y1": 1}
        own["shapes"] = [{**band, "yref": "y domain", "fillcolor": "#D55E00", "opacity": 0.12, "line": {"width": 0}}]
    top = max((float(np.nanmax(trace["y"])) for trace in data), default=1.0)
    bottom = min((float(np.nanmin(trace["y"])) for trace in data), default=0.0)
    headroom = 0.18 * ((top - min(bottom, 0)) or 1.0)  # room above the bars for their value labels
    return figure(
        data,
        figure_layout(
            title,
            style,
            style.min_height + extra_height,
            legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
            xaxis=token_axis(text_labels, style, keep=highlight),
            yaxis=axis(
                style,
                plain_label(value_name),
                zeroline=True,
                range=[min(bottom, 0) - (headroom if bottom < 0 else 0), max(top, 0) + headroom],
            ),
            barmode="group",
            uniformtext={"minsize": style.cell_text_size, "mode": "hide"},
            plot_bgcolor="rgba(0,0,0,0)",
            **own,
        ),
    )


def token_axis(text_labels: Sequence[str], style: FigureStyle, keep: int | None = None, title: str | None = None):
    """Token labels under bars: all of them up to ``BAR_TICK_LIMIT``, else every k-th (``keep`` always),
    standing upright above ``ROTATED_TICKS`` so that neighbours do not run into each other."""
    ticks = tick_positions(len(text_labels), BAR_TICK_LIMIT, keep)
    return axis(
        style,
        title,
        tickvals=ticks,
        ticktext=[text_labels[i] for i in ticks],
        tickangle=-90 if len(text_labels) > ROTATED_TICKS else 0,
        automargin=True,
    )


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
    values = np.asarray(contributions, dtype=np.float64)
    num_tokens, dims = values.shape
    names = list(dim_names) if dim_names is not None else [f"dim {k}" for k in range(dims)]
    labels = token_labels(token_pieces)
    shown = np.arange(num_tokens)
    if num_tokens > STACKED_TOKEN_LIMIT:
        largest = np.argsort(-np.abs(values).sum(axis=1), kind="stable")[: STACKED_TOKEN_LIMIT - 1]
        shown = np.sort(largest)
    dimensions = list(range(dims))
    data = [
        {
            "type": "bar",
            "x": dimensions,
            "y": values[j],
            "name": f"{j + 1}: {labels[j]}",  # tokens counted from 1, as the book counts x^(1)
            "marker": {"color": SERIES_COLOURS[j % len(SERIES_COLOURS)]},
            "hovertemplate": f"{labels[j]}<br>contributes %{{y:.4f}}<extra></extra>",
        }
        for j in shown
    ]
    if len(shown) < num_tokens:
        others = np.ones(num_tokens, dtype=bool)
        others[shown] = False
        name = f"other {int(others.sum())} tokens"
        data.append(
            {
                "type": "bar",
                "x": dimensions,
                "y": values[others].sum(axis=0),
                "name": name,
                "marker": {"color": MASKED_FILL},
                "hovertemplate": f"{name}<br>contribute %{{y:.4f}}<extra></extra>",
            }
        )
    legend = len(data) <= TEXT_CELL_LIMIT  # beyond that, hover names each token's share
    totals = values.sum(axis=0)
    line = {"symbol": "line-ew-open", "size": 28, "color": "#000000", "line": {"width": 3}}
    context = {"type": "scatter", "x": dimensions, "y": totals, "mode": "markers+text", "marker": line}
    if dims <= TEXT_CELL_LIMIT:
        context["text"] = [f"{t:.4f}" for t in totals]
    context.update(textposition="top center", textfont={"size": style.cell_text_size}, cliponaxis=False)
    context.update(name="context vector", hovertemplate="context vector entry %{y:.4f}<extra></extra>")
    ticks = tick_positions(dims)
    # the bars' extent (positive blocks stack up, negative down) and a line of text above the tallest sum
    top = max(float(np.clip(values, 0, None).sum(axis=0).max()), float(totals.max()), 0.0)
    bottom = min(float(np.clip(values, None, 0).sum(axis=0).min()), float(totals.min()), 0.0)
    headroom = LABEL_HEADROOM * (top - bottom or 1.0) if "text" in context else 0.0
    return figure(
        [*data, context],
        figure_layout(
            title,
            style,
            style.min_height + (140 if legend else 40),
            legend={"orientation": "h", "y": -0.25},
            xaxis=axis(style, tickvals=ticks, ticktext=[plain_label(names[k]) for k in ticks]),
            yaxis=axis(style, "sum of weighted inputs", range=[bottom, top + headroom]),
            barmode="relative",
            showlegend=legend,
            plot_bgcolor="rgba(0,0,0,0)",
        ),
    )


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
    x_ticks: Sequence[float] | None = None,
    y_range: tuple[float, float] | None = None,
    extra_height: int = 140,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Several named series against a shared x axis (scaling lab, convergence, timings).

    ``x_ticks`` labels those x values only (the d_k a lab measured); ``y_range`` fixes the y axis (a
    share: 0 to 1); the plot is ``style.min_height + extra_height`` pixels high."""
    data, layout = lines_spec(x, series, title, x_title, y_title, log_x, log_y, dashed, style)
    layout["height"] = style.min_height + extra_height
    if x_ticks is not None:
        layout["xaxis"]["tickvals"] = plain_numbers(x_ticks)
    if y_range is not None:
        layout["yaxis"]["range"] = [float(y_range[0]), float(y_range[1])]
    return figure(data, layout)


def lines_spec(x, series, title, x_title, y_title, log_x, log_y, dashed, style) -> tuple[list[dict], dict]:
    """``lines``' traces and layout as plain dicts, for builders that add to them."""
    xs = plain_numbers(x)
    data = [
        {
            "type": "scatter",
            "x": xs,
            "y": np.asarray(ys, dtype=np.float64).tolist(),
            "mode": "lines+markers",
            "name": plain_label(name),
            "line": {
                "color": SERIES_COLOURS[index % len(SERIES_COLOURS)],
                "dash": "dash" if name in dashed else "solid",
                "width": 3,
            },
            "hovertemplate": f"{plain_label(name)}<br>{plain_label(x_title)} = %{{x}}<br>"
            f"{plain_label(y_title)} = %{{y:.4g}}<extra></extra>",
        }
        for index, (name, ys) in enumerate(series.items())
    ]
    # On a log axis, dtick 1 labels the powers of ten only: plotly's in-between "2" and "5" are 3/4 size.
    layout = figure_layout(
        title,
        style,
        style.min_height + 140,
        legend={"orientation": "h", "y": -0.25},
        xaxis=axis(style, plain_label(x_title), type="log" if log_x else "linear", dtick=1 if log_x else None),
        yaxis=axis(style, plain_label(y_title), type="log" if log_y else "linear", dtick=1 if log_y else None),
        plot_bgcolor="rgba(0,0,0,0)",
    )
    return data, layout
