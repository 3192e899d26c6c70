"""One score as a dot product, term by term, and charts that compare two computations of the same numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from explorer.figures.layout import plain_numbers

from .charts import lines_spec, token_axis
from .labels import plain_label, token_labels
from .layout import (
    DEFAULT_STYLE,
    SERIES_COLOURS,
    TEXT_CELL_LIMIT,
    FigureStyle,
    axis,
    figure,
    figure_layout,
)


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
    bar = {
        "type": "bar",
        "x": list(range(len(labels))),
        "y": data,
        "marker": {"color": [SERIES_COLOURS[5] if j == query else SERIES_COLOURS[0] for j in range(len(labels))]},
    }
    if small:
        bar["text"] = [f"{v:.4f}" for v in data]
    bar.update(textposition="outside" if small else "none", textangle=0, textfont={"size": style.cell_text_size})
    bar.update(hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False, showlegend=False)
    return figure(
        [bar],
        figure_layout(
            title,
            style,
            style.min_height + 20,
            xaxis=token_axis(text_labels, style, keep=query, title="key"),
            yaxis=axis(style, plain_label(value_name), zeroline=True),
            uniformtext={"minsize": style.cell_text_size, "mode": "hide"},
            plot_bgcolor="rgba(0,0,0,0)",
        ),
    )


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
    data, layout = lines_spec(x, series, title, x_title, y_title, True, True, dashed, style)
    layout["xaxis"].update(tickvals=plain_numbers(x), ticktext=[f"{v:g}" for v in x])
    layout["legend"] = {
        "orientation": "v",
        "x": 1.02,
        "xanchor": "left",
        "y": 1,
        "yanchor": "top",
        "font": {"size": style.tick_size},
    }
    layout["height"] = style.min_height + 100  # no legend rows under the plot
    grey = {plain_label(name) for name in dashed}
    for trace in data:
        if trace["name"] in grey:
            trace["line"]["color"] = "#666666"
            trace["marker"] = {"color": "#666666"}
    return figure(data, layout)


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
    span = [low - pad, high + pad]
    diagonal = {"type": "scatter", "x": span, "y": span, "mode": "lines", "name": "y = x (equal)", "hoverinfo": "skip"}
    diagonal["line"] = {"color": "#666666", "dash": "dash", "width": 2}
    entries = {
        "type": "scatter",
        "x": x,
        "y": y,
        "mode": "markers",
        "marker": {"color": SERIES_COLOURS[0], "size": 9, "opacity": 0.8},
        "name": "one output entry",
        "hovertemplate": f"{plain_label(reference_name)}: %{{x:.6f}}<br>{plain_label(other_name)}: %{{y:.6f}}"
        "<extra></extra>",
    }
    difference = float(np.abs(x - y).max()) if x.size else 0.0
    return figure(
        [diagonal, entries],
        figure_layout(
            f"{title}: max |difference| = {difference:.1e}",
            style,
            style.max_height,
            legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
            xaxis=axis(style, plain_label(reference_name), range=span),
            yaxis=axis(style, plain_label(other_name), range=span, scaleanchor="x"),
            plot_bgcolor="rgba(0,0,0,0)",
        ),
    )
