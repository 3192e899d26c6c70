"""Charts that are not a single matrix: bars, lines, a dot product term by term, heads' shares, a room's votes,
every layer and head of a model as small multiples, and last the "Break it" page's figures and text."""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from . import (
    COLOUR_STOPS,
    DEFAULT_STYLE,
    MASK_WORD_LIMIT,
    MASKED_FILL,
    ROTATED_TICKS,
    SEQUENTIAL,
    SERIES_COLOURS,
    STACKED_TOKEN_LIMIT,
    TEXT_CELL_LIMIT,
    FigureStyle,
    axis,
    chosen_ticks,
    figure,
    figure_height,
    figure_layout,
    labels_that_fit,
    paper_text,
    plain_label,
    plain_numbers,
    rect,
    series_colour,
    subplot_axes,
    subplot_grid,
    tick_positions,
    token_labels,
)
from .heatmaps import (
    WEIGHTS,
    cell_text,
    cell_texts,
    cell_words,
    colour_settings,
    fit_matrix,
    pick_layer,
    token_numbers,
)

# Charts of per-token and per-size values: bars, a stacked context vector, lines, and a
# dot product written out with its numbers.


BAR_TICK_LIMIT = 16  # token labels under bars: all up to this many, else every k-th (upright)
LABEL_HEADROOM = 0.25  # a stacked chart's y axis reaches this share of its bars' span above them: its sums' labels
LEGEND_ABOVE = {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0}


def chart(data: list[dict], title: str, style: FigureStyle, height: int, **props) -> go.Figure:
    """A figure whose plot background is clear (a heatmap's is the grey of masked cells); ``props`` as in
    ``figure_layout``."""
    return figure(data, figure_layout(title, style, height, plot_bgcolor="rgba(0,0,0,0)", **props))


def value_bars(x, y, text, style: FigureStyle, colour, **props) -> dict:
    """A bar trace in ``colour`` (one, or one a bar) with its values written outside its bars, in the cells' text
    size, never cut off by the axes."""
    written = {"text": text, "textposition": "outside", "textfont": {"size": style.cell_text_size}}
    return {"type": "bar", "x": x, "y": y, "marker": {"color": colour}, **written, "cliponaxis": False, **props}


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
    """Series of per-token values as grouped bars (a score row and its normalizations); non-finite values are empty
    bars labelled with what they are. Value labels have fewer decimals when several series share a group, and one
    that would not fit its bar is hidden (``uniformtext``); hover always has the full value."""
    x = list(range(len(labels)))
    text_labels = token_labels(labels)
    shown_decimals = decimals if len(values) == 1 else min(decimals, 2)
    meaning_line = f"<br>{plain_label(meaning)}" if meaning else ""
    written = {"textangle": 0, "textposition": "outside" if len(labels) <= TEXT_CELL_LIMIT else "none"}
    data = []
    for index, (name, series) in enumerate(values.items()):
        numbers = np.asarray(series, dtype=np.float64)
        if numbers.shape != (len(labels),):
            raise ValueError(f"series {name!r} has {numbers.size} values for {len(labels)} labels.")
        text = [f"{v:.{shown_decimals}f}" for v in numbers]  # "inf", "nan" as they are
        said = f"%{{hovertext}}<br>{plain_label(name)}: %{{customdata}}{meaning_line}<extra></extra>"
        hover = {"customdata": [f"{v:.{decimals}f}" for v in numbers], "hovertext": text_labels, "hovertemplate": said}
        y = np.where(np.isfinite(numbers), numbers, 0.0)
        data.append(value_bars(x, y, text, style, series_colour(index), name=plain_label(name), **written, **hover))
    own = {}
    if highlight is not None and 0 <= highlight < len(labels):
        band = {"xref": "x", "yref": "y domain", "fillcolor": "#D55E00", "opacity": 0.12}
        own["shapes"] = [rect(highlight - 0.5, highlight + 0.5, 0, 1, {"width": 0}, **band)]
    top = max((float(np.nanmax(trace["y"])) for trace in data), default=1.0)
    bottom = min((float(np.nanmin(trace["y"])) for trace in data), default=0.0)
    headroom = 0.18 * ((top - min(bottom, 0)) or 1.0)  # room above the bars for their value labels
    y_range = [min(bottom, 0) - (headroom if bottom < 0 else 0), max(top, 0) + headroom]
    return chart(
        data,
        title,
        style,
        style.min_height + extra_height,
        legend=LEGEND_ABOVE,
        xaxis=token_axis(text_labels, style, keep=highlight),
        yaxis=axis(style, plain_label(value_name), zeroline=True, range=y_range),
        barmode="group",
        uniformtext={"minsize": style.cell_text_size, "mode": "hide"},
        **own,
    )


def token_axis(text_labels: Sequence[str], style: FigureStyle, keep: int | None = None, title: str | None = None):
    """Token labels under bars: all of them up to ``BAR_TICK_LIMIT``, else every k-th (``keep`` always),
    standing upright above ``ROTATED_TICKS`` so that neighbours do not run into each other."""
    ticks = tick_positions(len(text_labels), BAR_TICK_LIMIT, keep)
    upright = -90 if len(text_labels) > ROTATED_TICKS else 0
    return axis(
        style, title, tickvals=ticks, ticktext=[text_labels[i] for i in ticks], tickangle=upright, automargin=True
    )


def stacked_contributions(
    contributions,
    token_pieces: Sequence[str],
    *,
    title: str,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """A context vector as the sum of each token's weighted input: ``contributions`` (num_tokens, d), row j
    ``weight_j * x_j``, stacked by token in one bar per dimension. Above ``STACKED_TOKEN_LIMIT`` tokens, all but
    the ``STACKED_TOKEN_LIMIT - 1`` largest (total |contribution|) share one "other N tokens" block."""
    values = np.asarray(contributions, dtype=np.float64)
    num_tokens, dims = values.shape
    labels = token_labels(token_pieces)
    shown = np.arange(num_tokens)
    if num_tokens > STACKED_TOKEN_LIMIT:  # the tokens with the largest total |contribution|
        shown = np.sort(np.argsort(-np.abs(values).sum(axis=1), kind="stable")[: STACKED_TOKEN_LIMIT - 1])
    dimensions = list(range(dims))

    def block(y, name: str, colour: str, hover: str) -> dict:
        said = {"marker": {"color": colour}, "hovertemplate": f"{hover} %{{y:.4f}}<extra></extra>"}
        return {"type": "bar", "x": dimensions, "y": y, "name": name, **said}

    # tokens counted from 1, as the book counts x^(1)
    data = [block(values[j], f"{j + 1}: {labels[j]}", series_colour(j), f"{labels[j]}<br>contributes") for j in shown]
    if len(shown) < num_tokens:
        others = ~np.isin(np.arange(num_tokens), shown)
        name = f"other {int(others.sum())} tokens"
        data.append(block(values[others].sum(axis=0), name, MASKED_FILL, f"{name}<br>contribute"))
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
    return chart(
        [*data, context],
        title,
        style,
        style.min_height + (140 if legend else 40),
        legend={"orientation": "h", "y": -0.25},
        xaxis=axis(style, tickvals=ticks, ticktext=[f"dim {k}" for k in ticks]),
        yaxis=axis(style, "sum of weighted inputs", range=[bottom, top + headroom]),
        barmode="relative",
        showlegend=legend,
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
    measured: bool = False,
    layout: Mapping | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Named series against a shared x axis; ``x_ticks`` labels those x values only, ``y_range`` fixes the y axis,
    ``layout`` adds to the figure's (a line marking one x). ``measured`` draws on log–log axes (a cost growing as
    x^k is a line of slope k), a tick at every x, the legend beside the plot and ``dashed`` references in grey."""
    log_x, log_y = log_x or measured, log_y or measured
    xs = plain_numbers(x)
    data = []
    for index, (name, ys) in enumerate(series.items()):
        grey = measured and name in dashed
        line = {"color": "#666666" if grey else series_colour(index), "dash": "dash" if name in dashed else "solid"}
        hover = f"{plain_label(name)}<br>{plain_label(x_title)} = %{{x}}<br>{plain_label(y_title)} = %{{y:.4g}}"
        trace = {"type": "scatter", "x": xs, "y": np.asarray(ys, dtype=np.float64).tolist(), "mode": "lines+markers"}
        trace |= {"name": plain_label(name), "line": {**line, "width": 3}, "hovertemplate": f"{hover}<extra></extra>"}
        data.append({**trace, "marker": {"color": "#666666"}} if grey else trace)
    ticks = {"tickvals": plain_numbers(x_ticks) if x_ticks is not None else None}
    legend = {"orientation": "h", "y": -0.25}
    if measured:
        ticks = {"tickvals": xs, "ticktext": [f"{v:g}" for v in x]}
        legend = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
        legend["font"] = {"size": style.tick_size}
    # On a log axis, dtick 1 labels the powers of ten only: plotly's in-between "2" and "5" are 3/4 size.
    scale = {True: {"type": "log", "dtick": 1}, False: {"type": "linear"}}
    y_span = None if y_range is None else [float(y_range[0]), float(y_range[1])]
    return chart(
        data,
        title,
        style,
        style.min_height + (100 if measured else extra_height),
        legend=legend,
        xaxis=axis(style, plain_label(x_title), **scale[log_x], **ticks),
        yaxis=axis(style, plain_label(y_title), **scale[log_y], range=y_span),
        **(layout or {}),
    )


# One score as a dot product, term by term, and charts that compare two computations of the same numbers.


def _factor(value: float) -> str:
    text = f"{value:.4g}".replace("-", "−")
    return f"({text})" if value < 0 else text


def dot_product_text(query_vector, key_vector, score: float, query: int, key: int, *, max_terms: int = 4) -> str:
    """A dot product written out, numbered from 1 like the book: "x^(2)·x^(1) = 0.55×0.43 + 0.87×0.15 = 0.4";
    the first ``max_terms`` terms, then "…"; ``score`` as the package computed it (nothing is computed here)."""
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
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """One query's score row as bars, its own in a second colour; hovering a bar writes its dot product out.

    Shapes: ``scores`` (num_tokens,); ``query_vector`` (d,) and ``key_vectors`` (num_tokens, d), only written out.
    """
    data = np.asarray(scores, dtype=np.float64)
    keys = np.asarray(key_vectors, dtype=np.float64)
    if data.shape != (len(labels),) or keys.shape[0] != len(labels):
        raise ValueError(f"{data.size} scores and {keys.shape[0]} key vectors for {len(labels)} labels.")
    text_labels = token_labels(labels)
    written = [dot_product_text(query_vector, keys[j], data[j], query, j) for j in range(len(keys))]
    hover = [f"key {label}<br>{plain_label(line)}" for label, line in zip(text_labels, written, strict=True)]
    colours = [SERIES_COLOURS[5] if j == query else SERIES_COLOURS[0] for j in range(len(labels))]
    said = {"hovertext": hover, "hovertemplate": "%{hovertext}<extra></extra>", "textangle": 0, "showlegend": False}
    bar = value_bars(list(range(len(labels))), data, [f"{v:.4f}" for v in data], style, colours, **said)
    if len(labels) > TEXT_CELL_LIMIT:  # hover has the values
        del bar["text"]
        bar["textposition"] = "none"
    return chart(
        [bar],
        title,
        style,
        style.min_height + 20,
        xaxis=token_axis(text_labels, style, keep=query, title="key"),
        yaxis=axis(style, "attention score", zeroline=True),
        uniformtext={"minsize": style.cell_text_size, "mode": "hide"},
    )


def agreement(
    reference,
    other,
    *,
    title: str,
    reference_name: str,
    other_name: str,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Two computations of the same matrix, entry against entry: where they agree, every point lies on y = x. The
    title carries the largest |difference|, which no eye can see."""
    x = np.ravel(np.asarray(reference, dtype=np.float64))
    y = np.ravel(np.asarray(other, dtype=np.float64))
    if x.shape != y.shape:
        raise ValueError(f"the two outputs differ in size: {x.size} and {y.size} entries.")
    low, high = (float(min(x.min(), y.min())), float(max(x.max(), y.max()))) if x.size else (0.0, 1.0)
    pad = 0.05 * ((high - low) or 1.0)
    span = [low - pad, high + pad]
    diagonal = {"type": "scatter", "x": span, "y": span, "mode": "lines", "name": "y = x (equal)", "hoverinfo": "skip"}
    diagonal["line"] = {"color": "#666666", "dash": "dash", "width": 2}
    hover = f"{plain_label(reference_name)}: %{{x:.6f}}<br>{plain_label(other_name)}: %{{y:.6f}}<extra></extra>"
    entries = {"type": "scatter", "x": x, "y": y, "mode": "markers", "name": "one output entry", "hovertemplate": hover}
    entries["marker"] = {"color": SERIES_COLOURS[0], "size": 9, "opacity": 0.8}
    difference = float(np.abs(x - y).max()) if x.size else 0.0
    return chart(
        [diagonal, entries],
        f"{title}: max |difference| = {difference:.1e}",
        style,
        style.max_height,
        legend=LEGEND_ABOVE,
        xaxis=axis(style, plain_label(reference_name), range=span),
        yaxis=axis(style, plain_label(other_name), range=span, scaleanchor="x"),
    )


def head_summary_bars(
    shares: Mapping[str, Sequence[float]],
    *,
    title: str,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Per-head shares (one value per head in each series) as grouped bars on a y axis fixed to 0–1, so two layers
    or sentences compare by eye; heads are counted from 1, as on the heads grids."""
    lengths = {len(series) for series in shares.values()}
    if len(lengths) != 1:
        raise ValueError("Every series needs one value per head.")
    num_heads = lengths.pop()
    heads = [f"head {k + 1}" for k in range(num_heads)]
    kept = "both" if style.shrink_text else "none"  # on a phone, readable_width makes the room
    data = []
    for index, (name, series) in enumerate(shares.items()):
        values = np.clip(np.asarray(series, dtype=np.float64), 0.0, 1.0)
        said = {"name": plain_label(name), "hovertemplate": f"%{{x}}<br>{plain_label(name)}: %{{y:.3f}}<extra></extra>"}
        text = [f"{v:.2f}" for v in values]
        data.append(value_bars(heads, values, text, style, series_colour(index), constraintext=kept, **said))
    return chart(
        data,
        title,
        style,
        style.min_height + 80,
        legend=LEGEND_ABOVE,
        xaxis=axis(style),
        yaxis=axis(style, "share (0–1)", range=[0, 1.15], tickvals=[0, 0.25, 0.5, 0.75, 1]),
        barmode="group",
    )


def vote_bars(choices: Sequence[str], counts: Sequence[int], *, title: str, style: FigureStyle = DEFAULT_STYLE):
    """A live room's votes on a question's ``choices``, lettered A, B, … as the presenter lists them, one row each
    so no labels run together; a choice is shown as written (``plain_label``), its whitespace already visible."""
    if len(counts) != len(choices):
        raise ValueError(f"{len(counts)} counts for {len(choices)} choices.")
    labels = [f"{chr(65 + k)} · {plain_label(choice)}" for k, choice in enumerate(choices)]
    rows = list(range(len(choices)))
    most = max(counts, default=0)
    said = {"orientation": "h", "hovertext": labels, "hovertemplate": "%{hovertext}: %{x} students<extra></extra>"}
    bar = value_bars(list(counts), rows, [str(n) for n in counts], style, SERIES_COLOURS[0], **said)
    students = {"range": [0, max(most, 1) * 1.15], "dtick": max(1, int(np.ceil(max(most, 1) / 5)))}
    return chart(
        [bar],
        title,
        style,
        figure_height(len(choices), style, extra=2 * style.title_size + 2 * style.tick_size + 40),
        margin={"t": 2 * style.title_size + 12},  # no legend above the bars: the title alone
        showlegend=False,
        yaxis=axis(style, None, tickvals=rows, ticktext=labels, autorange="reversed", automargin=True, ticksuffix="  "),
        xaxis=axis(style, "students", **students, rangemode="tozero"),
    )


# Every layer and head at a glance (as BertViz's model view): one small weight matrix per head, rows = layers,
# columns = heads, on the one 0–1 scale, fitting a 1280×720 screen for GPT-2's 12 layers. Each has one transparent
# point on the middle of its top edge that carries its head's summary (written in a band above it, clear of every
# small multiple's cells, if ``labels_fit``) and, with ``hoverdistance = -1``, takes a click anywhere in it
# (plotly reports no clicks on heatmaps, streamlit issues 8760 and 15042); ``customdata`` is [layer, head] from 1.
# A point per cell would take Chromium 5 s to draw.


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


def _band(style: FigureStyle) -> int:
    """The band above each small multiple that holds its label: a line of text."""
    return int(1.4 * style.font_size)


def labels_fit(num_layers: int, style: FigureStyle) -> bool:
    """Whether a head's label fits in a band above its small multiple, which keeps at least 2.5 lines of text of
    height (else only hover has it)."""
    return _row(num_layers, style) - GAP_PX - _band(style) >= 2.5 * style.font_size


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
    ``details[l][k]`` what its hover adds; ``current`` (layer, head, from 1) is outlined."""
    stack = np.asarray(weights, dtype=np.float32)
    num_layers, num_heads, rows, cols = stack.shape
    grid = (num_layers, num_heads)
    if np.shape(labels)[:2] != grid or np.shape(details)[:2] != grid or len(pieces) != rows or rows != cols:
        raise ValueError("every_head_grid needs weights (L, h, T, T), an L × h grid of labels and T tokens.")
    written = labels_fit(num_layers, style)
    band = _band(style) if written else 0  # each label in a band above its small multiple, never over its cells
    top, plot_height = _top(style) + band, num_layers * _row(num_layers, style) - band
    height = top + plot_height + BOTTOM_PX
    spacing = {"horizontal_spacing": min(0.03, 0.24 / num_heads), "vertical_spacing": (GAP_PX + band) / plot_height}
    axes, _ = subplot_grid(num_layers, num_heads, [], style, **spacing)
    hidden = np.triu(np.ones((rows, cols), dtype=bool), k=1)  # the causal mask: keys after the query
    positions = list(range(1, rows + 1))  # tokens counted from 1, as the hover's "query 1 · key 1" reads
    ticks = {"tickmode": "array", "tickvals": positions, "ticktext": token_labels(pieces), "showticklabels": False}
    spots = {"x": [(cols + 1) / 2], "y": [0.5]}  # the middle of the top edge: the label stands above it
    point = {"type": "scatter", "name": PICK, **spots, "mode": "markers+text" if written else "markers"}
    point |= {"textposition": "top center", "textfont": {"size": style.font_size, "color": LABEL_COLOUR}}
    point |= {"marker": {"size": 2, "color": "rgba(0,0,0,0)"}, "showlegend": False}
    data, annotations, shapes = [], [], []
    numbered = num_heads > NUMBERS_ABOVE  # "head 12" is wider than a phone's column
    if numbered:
        annotations.append(paper_text("head", 0.0, 1.0, style, "right", "bottom") | {"yshift": band})
    for layer in range(num_layers):
        for head in range(num_heads):
            k = layer * num_heads + head
            x, y = subplot_axes(k)
            name = f"layer {layer + 1}, head {head + 1}"
            label = plain_label(labels[layer][head])
            z = np.where(hidden, np.nan, stack[layer, head]).astype(np.float32)
            hover = f"{name}<br>query %{{y}} · key %{{x}}<br>attention weight = %{{z:.3f}}<extra></extra>"
            heat = {"type": "heatmap", "z": z, "x": positions, "y": positions, "hoverongaps": False}
            meta = {"title": name, "kind": WEIGHTS, "hidden_value": 0.0}
            colours = colour_settings(WEIGHTS, 0.0, 1.0, style, show=k == 0)
            data.append({**heat, "meta": meta, "hovertemplate": hover, **colours, "xaxis": x, "yaxis": y})
            said = f"{name}: {label}<br>{plain_label(details[layer][head])}<br>click to open it on the chapter pages"
            picked = {"customdata": [[layer + 1, head + 1]], "hovertemplate": f"{said}<extra></extra>"}
            data.append({**point, "text": [label], **picked, "cliponaxis": False, "xaxis": x, "yaxis": y})
            domain_x, domain_y = axes["xaxis" + x[1:]]["domain"], axes["yaxis" + y[1:]]["domain"]
            if layer == 0:
                header = str(head + 1) if numbered else f"head {head + 1}"
                header = paper_text(header, sum(domain_x) / 2, 1.0, style, "center", "bottom")
                annotations.append(header | {"yshift": band})  # above the first row's labels
            if head == 0:
                annotations.append(paper_text(f"layer {layer + 1}", 0.0, sum(domain_y) / 2, style, "right", "middle"))
            if current == (layer + 1, head + 1):  # the layer and head the chapter pages hold now
                outline = {"color": CURRENT, "width": 3}
                shapes.append(rect(0, 1, 0, 1, outline, xref=f"{x} domain", yref=f"{y} domain"))
    for name, props in axes.items():
        shown = {"range": [0.5, cols + 0.5]} if name.startswith("x") else {"range": [rows + 0.5, 0.5]}
        axes[name] = {**props, **ticks, **shown, "ticks": "", "showgrid": False, "zeroline": False}
    margin = {"t": top, "b": BOTTOM_PX, "l": int(4.4 * style.font_size)}  # room for "layer 12" left of the grid
    layout = figure_layout(title, style, height, margin=margin, **axes, annotations=annotations, shapes=shapes)
    # hoverdistance -1: a small multiple's one point is the nearest wherever the mouse is in it, so a click
    # anywhere in it selects that point
    layout.update(hovermode="closest", hoverdistance=-1, dragmode=False, clickmode="event+select")
    return figure(data, layout)


# Figures and text for the "Break it" page: the changed line as a diff, the right and the wrong
# weights side by side on one colour scale, the measured consequences, and the saturation curve.


NAN_FILL = "rgba(213, 94, 0, 0.45)"  # vermilion over the grey of a blank cell: not a colour of the weight scale
NAN_LINE = "#D55E00"
PANEL_TEXT_LIMIT = 8  # print weights in cells up to this many tokens (two panels share the width)


def code_diff(right_code: str, wrong_code: str) -> str:
    """The mistake as a diff against the package's line: "- " right, "+ " wrong, "  " unchanged."""
    right, wrong = right_code.splitlines(), wrong_code.splitlines()
    shown = []
    for tag, r0, r1, w0, w1 in difflib.SequenceMatcher(a=right, b=wrong, autojunk=False).get_opcodes():
        if tag == "equal":
            shown += [f"  {line}" for line in right[r0:r1]]
            continue
        shown += [f"- {line}" for line in right[r0:r1]]
        shown += [f"+ {line}" for line in wrong[w0:w1]]
    return "\n".join(shown)


def right_and_wrong(
    right,
    wrong,
    pieces: Sequence[str],
    *,
    future,
    title: str,
    zmax: float = 1.0,
    pickable: bool = False,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Two (T, T) weight matrices side by side on one fixed 0–``zmax`` colour scale with one colour bar (``zmax``
    is 1/(1 − p) only for weights after dropout). Future cells with weight 0 are blank and labelled "masked"; rows
    of NaN (softmax over nothing but −∞) are filled vermilion, labelled "NaN" and counted in the panel's title."""
    titles = ("right: the package's code", "wrong: with the mistake")
    matrices = [np.asarray(right, dtype=np.float64), np.asarray(wrong, dtype=np.float64)]
    count = len(pieces)
    if any(m.shape != (count, count) for m in matrices):
        raise ValueError(f"right and wrong must be {count}×{count}, got {[m.shape for m in matrices]}.")
    nan_rows = [np.isnan(m).any(axis=-1) for m in matrices]
    panel_titles = [
        t + (f" · {int(n.sum())} NaN row{'s' if n.sum() != 1 else ''}" if n.any() else "")
        for t, n in zip(titles, nan_rows, strict=True)
    ]
    axes, annotations = subplot_grid(1, 2, [plain_label(t) for t in panel_titles], style, horizontal_spacing=0.1)
    height = figure_height(count, style)
    fit = labels_that_fit(height, style)
    data, shapes = [], []
    for k, values in enumerate(matrices):
        masked = np.asarray(future, dtype=bool) & (values == 0)  # blank as "masked": future, and the code hid them
        view = fit_matrix(values, masked | np.isnan(values), pieces, pieces, True, True, style)
        rows, cols = view.values.shape
        small = view.block == 1 and rows <= PANEL_TEXT_LIMIT and cols <= PANEL_TEXT_LIMIT
        x, y = subplot_axes(k)
        hover = f"{plain_label(titles[k])}<br>query %{{customdata[0]}} · key %{{customdata[1]}}<br>weight = %{{z:.4f}}"
        props = {"coloraxis": "coloraxis", "xgap": int(small), "ygap": int(small), "xaxis": x, "yaxis": y}
        props |= {"customdata": token_numbers(view), "hovertemplate": f"{hover}<extra></extra>"}  # tokens from 1
        trace = view.trace(titles[k], {}, **props)
        if small:
            trace.update(cell_text(cell_texts(trace["z"], view.hidden), style.cell_text_size))  # 2 decimals
        nan_traces, nan_shapes = _nan_rows(view, nan_rows[k], x, y, style)
        data += [trace, *_masked_words(view, masked, x, y, style), *nan_traces]
        shapes += nan_shapes
        labels = view.tick_texts()[0]
        ticks = tick_positions(len(labels), fit)
        shown = {**chosen_ticks(view.row_positions, labels, ticks), "showgrid": False, "zeroline": False}
        span = [view.row_positions[0] - 0.5 * view.block, view.row_positions[-1] + 0.5 * view.block]
        x_axis, y_axis = "xaxis" + x[1:], "yaxis" + y[1:]
        axes[y_axis] = axis(style, "queries" if k == 0 else "", **axes[y_axis], **shown, range=span[::-1])
        axes[x_axis] = axis(style, **axes[x_axis], **shown, range=span, tickangle=-90 if len(ticks) > 6 else None)
    bar_title = {"text": "weight", "font": {"size": style.tick_size}}
    colour_bar = {"thickness": 12, "title": bar_title, "tickfont": {"size": style.tick_size}}
    colour_axis = {"colorscale": COLOUR_STOPS[SEQUENTIAL], "cmin": 0.0, "cmax": zmax, "colorbar": colour_bar}
    margin = {"t": 2 * style.title_size + style.font_size + 12}  # tick labels are below
    layout = figure_layout(title, style, height, margin=margin, **axes, annotations=annotations, coloraxis=colour_axis)
    if shapes:
        layout["shapes"] = shapes
    return figure(pick_layer(data, layout, apart=False) if pickable else data, layout)


def _masked_words(view, masked: np.ndarray, x: str, y: str, style: FigureStyle) -> list[dict]:
    """The word "masked" in blank future cells, when the panel is small enough for words."""
    if view.block > 1 or len(view.row_positions) > MASK_WORD_LIMIT:
        return []
    ii, jj = np.nonzero(masked[np.ix_(view.row_positions, view.col_positions)])
    if ii.size == 0:
        return []
    hover = "masked: a later token, given weight 0"
    xs, ys = [view.col_positions[j] for j in jj], [view.row_positions[i] for i in ii]
    return [cell_words(xs, ys, "masked", hover, "#555555", style.label_size, name="masked", xaxis=x, yaxis=y)]


def _nan_rows(view, nan_rows: np.ndarray, x: str, y: str, style: FigureStyle) -> tuple[list[dict], list[dict]]:
    """The label trace and the vermilion fills of each NaN row (or block holding one), labelled "NaN row" at its
    start (only a run's first where rows are too thin for a label each)."""
    positions = [p for p in view.row_positions if nan_rows[p : p + view.block].any()]
    if not positions:
        return [], []
    x0, x1 = view.col_positions[0] - 0.5 * view.block, view.col_positions[-1] + 0.5 * view.block
    fill, half = {"fillcolor": NAN_FILL, "layer": "above", "xref": x, "yref": y}, 0.5 * view.block
    fills = [rect(x0, x1, p - half, p + half, {"color": NAN_LINE, "width": 2}, **fill) for p in positions]
    if len(view.row_positions) > 2 * PANEL_TEXT_LIMIT:  # thin rows: one label per run of NaN rows
        positions = [p for p in positions if p - view.block not in positions]
    word = "NaN row" if len(view.col_positions) > 2 else "NaN"
    hover = "NaN: every score in this row was −∞, and softmax of only −∞ is 0/0"
    xs = [view.col_positions[0]] * len(positions)
    label = cell_words(xs, positions, word, hover, "#000000", style.cell_text_size, name="NaN", xaxis=x, yaxis=y)
    label["textposition"] = "middle right"
    return [label], fills


def measure_rows(measures) -> list[dict[str, str]]:
    return [{"measured": m.label, "right": format_number(m.right), "wrong": format_number(m.wrong)} for m in measures]


def format_number(value: float) -> str:
    """A measured number as the page prints it: counts whole, others to 4 significant digits, NaN as "NaN"."""
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "NaN"
    return f"{value:.4g}"


def saturation(
    curve,
    *,
    stat: str,
    wrong_name: str,
    head_dim: int | None = None,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """The saturation curve (``d_ks``, ``right_<stat>``, ``wrong_<stat>``, ``num_keys``) against d_k: ``stat``
    "max_weight" (with the uniform 1/num_keys line), "grad_norm" (at the softmax's input) or "param_grad" (reaching
    W_query and W_key, on a log scale); ``head_dim`` marks this module's d_k with a vertical line."""
    d_ks = np.asarray(curve.d_ks)
    series = {
        "÷ √d_k (right)": getattr(curve, f"right_{stat}"),
        f"{wrong_name} (wrong)": getattr(curve, f"wrong_{stat}"),
    }
    dashed = ()
    if stat == "max_weight":
        uniform = f"all weights equal (1/{curve.num_keys})"
        series[uniform] = np.full(d_ks.shape, 1 / curve.num_keys)
        dashed = (uniform,)
    names = {
        "max_weight": "largest weight in a row",
        "grad_norm": "gradient at the softmax's input",
        "param_grad": "W_query, W_key gradient",
    }
    marks = {}
    if head_dim is not None:
        here = {"type": "line", "x0": head_dim, "x1": head_dim, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"}
        marks["shapes"] = [{**here, "line": {"color": "#555555", "dash": "dot"}}]
        said = {"text": f" d_k here = {head_dim}", "showarrow": False, "xanchor": "left"}
        marks["annotations"] = [{"x": math.log10(head_dim), "y": 1, "yref": "paper", **said}]
    return lines(
        d_ks,
        series,
        title=f"{names[stat]} against d_k ({curve.num_keys} random keys)",
        x_title="d_k",
        y_title=names[stat] + (" (median)" if stat == "param_grad" else ""),
        log_x=True,
        log_y=stat == "param_grad",
        dashed=dashed,
        layout=marks,
        style=style,
    )
