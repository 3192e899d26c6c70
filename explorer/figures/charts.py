"""Charts of per-token and per-size values: bars, a stacked context vector, lines, and a
dot product written out with its numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .labels import plain_label, token_labels
from .layout import (
    DEFAULT_STYLE,
    MASKED_FILL,
    ROTATED_TICKS,
    SERIES_COLOURS,
    STACKED_TOKEN_LIMIT,
    TEXT_CELL_LIMIT,
    FigureStyle,
    apply_layout,
    tick_positions,
)

BAR_TICK_LIMIT = 16  # token labels under bars: all up to this many, else every k-th (upright)


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
    empty bars labelled with what they are.

    Value labels sit above the bars at the style's cell-text size, with fewer decimals when
    several series share a group; plotly hides a label that would not fit its bar's width
    (``uniformtext``), so labels never run into each other. Hover always has the full value.
    """
    x = list(range(len(labels)))
    text_labels = token_labels(labels)
    shown_decimals = decimals if len(values) == 1 else min(decimals, 2)
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
                text=[f"{v:.{shown_decimals}f}" if ok else str(v) for v, ok in zip(data, finite, strict=True)],
                textposition="outside" if len(labels) <= TEXT_CELL_LIMIT else "none",
                textangle=0,
                textfont={"size": style.cell_text_size},
                customdata=[f"{v:.{decimals}f}" if ok else str(v) for v, ok in zip(data, finite, strict=True)],
                hovertext=text_labels,
                hovertemplate=(
                    f"%{{hovertext}}<br>{plain_label(name)}: %{{customdata}}"
                    + (f"<br>{plain_label(meaning)}" if meaning else "")
                    + "<extra></extra>"
                ),
                cliponaxis=False,
            )
        )
    if highlight is not None and 0 <= highlight < len(labels):
        fig.add_vrect(x0=highlight - 0.5, x1=highlight + 0.5, fillcolor="#D55E00", opacity=0.12, line_width=0)
    token_axis(fig, text_labels, style, keep=highlight)
    top = max((float(np.nanmax(np.where(np.isfinite(t.y), t.y, 0))) for t in fig.data), default=1.0)
    bottom = min((float(np.nanmin(np.where(np.isfinite(t.y), t.y, 0))) for t in fig.data), default=0.0)
    headroom = 0.18 * ((top - min(bottom, 0)) or 1.0)  # room above the bars for their value labels
    fig.update_yaxes(
        title={"text": plain_label(value_name)},
        zeroline=True,
        range=[min(bottom, 0) - (headroom if bottom < 0 else 0), max(top, 0) + headroom],
    )
    fig.update_layout(
        barmode="group",
        uniformtext={"minsize": style.cell_text_size, "mode": "hide"},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
    )
    fig = apply_layout(fig, title, style, style.min_height + 80)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


def token_axis(fig: go.Figure, text_labels: Sequence[str], style: FigureStyle, keep: int | None = None) -> None:
    """Token labels under bars: all of them up to ``BAR_TICK_LIMIT``, else every k-th (``keep`` always),
    standing upright above ``ROTATED_TICKS`` so that neighbours do not run into each other."""
    ticks = tick_positions(len(text_labels), BAR_TICK_LIMIT, keep)
    fig.update_xaxes(
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
            textfont={"size": style.cell_text_size},
            marker={"symbol": "line-ew-open", "size": 28, "color": "#000000", "line": {"width": 3}},
            name="context vector",
            hovertemplate="context vector entry %{y:.4f}<extra></extra>",
        )
    )
    ticks = tick_positions(dims)
    fig.update_xaxes(
        tickvals=ticks, ticktext=[plain_label(names[k]) for k in ticks], tickfont={"size": style.tick_size}
    )
    fig.update_yaxes(tickfont={"size": style.tick_size}, title={"text": "sum of weighted inputs"})
    legend = len(fig.data) - 1 <= TEXT_CELL_LIMIT  # beyond that, hover names each token's share
    fig.update_layout(barmode="relative", legend={"orientation": "h", "y": -0.25}, showlegend=legend)
    fig = apply_layout(fig, title, style, style.min_height + (140 if legend else 40))
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
    # On a log axis, dtick 1 labels the powers of ten only: plotly's in-between "2" and "5" are 3/4 size.
    for axes, log, name in ((fig.update_xaxes, log_x, x_title), (fig.update_yaxes, log_y, y_title)):
        axes(type="log" if log else "linear", title={"text": plain_label(name)}, dtick=1 if log else None)
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    fig = apply_layout(fig, title, style, style.min_height + 140)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


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
            textangle=0,
            textfont={"size": style.cell_text_size},
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            cliponaxis=False,
            showlegend=False,
        )
    )
    token_axis(fig, text_labels, style, keep=query)
    fig.update_xaxes(title="key")
    fig.update_yaxes(title={"text": plain_label(value_name)}, zeroline=True)
    fig.update_layout(uniformtext={"minsize": style.cell_text_size, "mode": "hide"})
    fig = apply_layout(fig, title, style, style.min_height + 20)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig


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


def agreement(
    reference,
    other,
    *,
    title: str,
    reference_name: str,
    other_name: str,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Two computations of the same matrix, entry against entry: where they agree, every point lies
    on the diagonal y = x. The title carries the largest |difference|, which no eye can see."""
    x = np.ravel(np.asarray(reference, dtype=np.float64))
    y = np.ravel(np.asarray(other, dtype=np.float64))
    if x.shape != y.shape:
        raise ValueError(f"the two outputs differ in size: {x.size} and {y.size} entries.")
    low, high = (float(min(x.min(), y.min())), float(max(x.max(), y.max()))) if x.size else (0.0, 1.0)
    pad = 0.05 * ((high - low) or 1.0)
    fig = go.Figure(
        [
            go.Scatter(
                x=[low - pad, high + pad],
                y=[low - pad, high + pad],
                mode="lines",
                line={"color": "#666666", "dash": "dash", "width": 2},
                name="y = x (equal)",
                hoverinfo="skip",
            ),
            go.Scatter(
                x=x,
                y=y,
                mode="markers",
                marker={"color": SERIES_COLOURS[0], "size": 9, "opacity": 0.8},
                name="one output entry",
                hovertemplate=f"{plain_label(reference_name)}: %{{x:.6f}}<br>{plain_label(other_name)}: %{{y:.6f}}"
                "<extra></extra>",
            ),
        ]
    )
    difference = float(np.abs(x - y).max()) if x.size else 0.0
    fig.update_xaxes(title={"text": plain_label(reference_name)}, range=[low - pad, high + pad])
    fig.update_yaxes(title={"text": plain_label(other_name)}, range=[low - pad, high + pad], scaleanchor="x")
    fig.update_layout(legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0})
    fig = apply_layout(fig, f"{title}: max |difference| = {difference:.1e}", style, style.max_height)
    fig.update_layout(plot_bgcolor="rgba(0,0,0,0)")
    return fig
