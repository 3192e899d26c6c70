"""Figures and text for the "Break it" page: the changed line as a diff, the right and the wrong
weights side by side on one colour scale, the measured consequences, and the saturation curve."""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .charts import lines_spec
from .heatmaps import cell_text, fit_matrix, pick_layer
from .layout import (
    COLOUR_STOPS,
    DEFAULT_STYLE,
    MASK_WORD_LIMIT,
    SEQUENTIAL,
    FigureStyle,
    axis,
    figure,
    figure_height,
    figure_layout,
    labels_that_fit,
    plain_label,
    subplot_axes,
    subplot_grid,
    tick_positions,
    token_labels,
    visible_token,
)

NAN_FILL = "rgba(213, 94, 0, 0.45)"  # vermilion over the grey of a blank cell: not a colour of the weight scale
NAN_LINE = "#D55E00"
WEIGHT = "weight = %{z:.4f}"
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


def hidden_cells(weights, future) -> np.ndarray:
    """The cells a panel leaves blank as "masked": in the future and given exactly 0 (the code hid them)."""
    return np.asarray(future, dtype=bool) & (np.asarray(weights) == 0)


def right_and_wrong(
    right,
    wrong,
    pieces: Sequence[str],
    *,
    future,
    title: str,
    titles: tuple[str, str] = ("right: the package's code", "wrong: with the mistake"),
    zmax: float = 1.0,
    pickable: bool = False,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Two (T, T) weight matrices side by side on one fixed 0–``zmax`` colour scale with one colour bar.

    Attention weights are probabilities, so the scale is 0–1 (``zmax`` is
    1/(1 − p) only for weights after dropout). Future cells with weight 0 are
    blank and labelled "masked"; rows of NaN (softmax over nothing but −∞) are
    filled vermilion, labelled "NaN" and counted in the panel's title.
    """
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
        hidden = hidden_cells(values, future) | np.isnan(values)
        view = fit_matrix(values, hidden, pieces, pieces, True, True, style)
        rows, cols = view.values.shape
        small = view.block == 1 and rows <= PANEL_TEXT_LIMIT and cols <= PANEL_TEXT_LIMIT
        z = np.where(view.hidden, np.nan, view.values).astype(np.float32)
        x, y = subplot_axes(k)
        trace = {
            "type": "heatmap",
            "z": z,
            "x": view.col_positions,
            "y": view.row_positions,
            "coloraxis": "coloraxis",
            "meta": {
                "rows": [visible_token(p) for p in view.row_labels],
                "cols": [visible_token(p) for p in view.col_labels],
                "title": titles[k],
            },
            "hoverongaps": False,
            "xgap": 1 if small else 0,
            "ygap": 1 if small else 0,
            "customdata": _positions(view.row_positions, view.col_positions),
            "hovertemplate": f"{plain_label(titles[k])}<br>query %{{customdata[0]}} · key %{{customdata[1]}}<br>"
            f"{WEIGHT}<extra></extra>",
            "xaxis": x,
            "yaxis": y,
        }
        if small:
            trace["text"] = cell_text(z, view.hidden)
            trace["texttemplate"] = "%{text}"
            trace["textfont"] = {"size": style.cell_text_size}
        data.append(trace)
        data += _masked_words(view, values, future, k, style)
        nan_traces, nan_shapes = _nan_rows(view, nan_rows[k], k, style)
        data += nan_traces
        shapes += nan_shapes
        labels = token_labels(view.row_labels) if view.row_tokens else [plain_label(x) for x in view.row_labels]
        ticks = tick_positions(len(labels), fit)
        shown = {"tickvals": [view.row_positions[i] for i in ticks], "ticktext": [labels[i] for i in ticks]}
        shown.update(showgrid=False, zeroline=False)
        span = [view.row_positions[0] - 0.5 * view.block, view.row_positions[-1] + 0.5 * view.block]
        x_axis, y_axis = "xaxis" + x[1:], "yaxis" + y[1:]
        axes[y_axis] = axis(style, "queries" if k == 0 else "", **axes[y_axis], **shown, range=span[::-1])
        axes[x_axis] = axis(style, **axes[x_axis], **shown, range=span, tickangle=-90 if len(ticks) > 6 else None)
    colour_axis = {
        "colorscale": COLOUR_STOPS[SEQUENTIAL],
        "cmin": 0.0,
        "cmax": zmax,
        "colorbar": {
            "thickness": 12,
            "title": {"text": "weight", "font": {"size": style.tick_size}},
            "tickfont": {"size": style.tick_size},
        },
    }
    own = {"shapes": shapes} if shapes else {}
    layout = figure_layout(
        title,
        style,
        height,
        margin={"t": 2 * style.title_size + style.font_size + 12},  # tick labels are below
        **axes,
        annotations=annotations,
        coloraxis=colour_axis,
        **own,
    )
    return figure(pick_layer(data, layout, apart=False) if pickable else data, layout)


def _positions(rows, cols) -> np.ndarray:
    """Each cell's (query, key) position counted from 1, as the book counts tokens: (rows, cols, 2)."""
    row_of, col_of = np.asarray(rows)[:, None] + 1, np.asarray(cols)[None, :] + 1  # (rows, 1), (1, cols)
    return np.stack(np.broadcast_arrays(row_of, col_of), axis=-1)  # (rows, cols, 2)


def _masked_words(view, values: np.ndarray, future, panel: int, style: FigureStyle) -> list[dict]:
    """The word "masked" in blank future cells, when the panel is small enough for words."""
    if view.block > 1 or len(view.row_positions) > MASK_WORD_LIMIT:
        return []
    ii, jj = np.nonzero(hidden_cells(values, future)[np.ix_(view.row_positions, view.col_positions)])
    if ii.size == 0:
        return []
    x, y = subplot_axes(panel)
    return [
        {
            "type": "scatter",
            "x": [view.col_positions[j] for j in jj],
            "y": [view.row_positions[i] for i in ii],
            "mode": "text",
            "text": ["masked"] * len(ii),
            "textfont": {"size": style.label_size, "color": "#555555"},
            "hovertemplate": "masked: a later token, given weight 0<extra></extra>",
            "showlegend": False,
            "name": "masked",
            "xaxis": x,
            "yaxis": y,
        }
    ]


def _nan_rows(view, nan_rows: np.ndarray, panel: int, style: FigureStyle) -> tuple[list[dict], list[dict]]:
    """Fill each NaN row (or block of rows holding one) vermilion and label it "NaN row" at its start
    (only the first of each run of rows when rows are too thin for a label each): the label trace
    and the fills."""
    positions = [p for p in view.row_positions if nan_rows[p : p + view.block].any()]
    if not positions:
        return [], []
    x, y = subplot_axes(panel)
    x0, x1 = view.col_positions[0] - 0.5 * view.block, view.col_positions[-1] + 0.5 * view.block
    fills = [
        {
            "type": "rect",
            "x0": x0,
            "x1": x1,
            "y0": position - 0.5 * view.block,
            "y1": position + 0.5 * view.block,
            "fillcolor": NAN_FILL,
            "line": {"color": NAN_LINE, "width": 2},
            "layer": "above",
            "xref": x,
            "yref": y,
        }
        for position in positions
    ]
    if len(view.row_positions) > 2 * PANEL_TEXT_LIMIT:  # thin rows: one label per run of NaN rows
        positions = [p for p in positions if p - view.block not in positions]
    label = {
        "type": "scatter",
        "x": [view.col_positions[0]] * len(positions),
        "y": positions,
        "mode": "text",
        "text": ["NaN row" if len(view.col_positions) > 2 else "NaN"] * len(positions),
        "textposition": "middle right",
        "textfont": {"size": style.cell_text_size, "color": "#000000"},
        "hovertemplate": "NaN: every score in this row was −∞, and softmax of only −∞ is 0/0<extra></extra>",
        "showlegend": False,
        "name": "NaN",
        "xaxis": x,
        "yaxis": y,
    }
    return [label], fills


def measure_rows(measures) -> list[dict[str, str]]:
    """The measured consequences as table rows: what is measured, with the right code, with the mistake."""
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
    """The saturation curve against d_k: ``stat`` "max_weight" (with the uniform 1/num_keys line), "grad_norm"
    (at the softmax's input) or "param_grad" (reaching W_query and W_key, on a log scale).

    ``curve`` has ``d_ks``, ``right_<stat>``, ``wrong_<stat>`` and ``num_keys``;
    ``head_dim`` marks this module's d_k with a vertical line.
    """
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
    data, layout = lines_spec(
        d_ks,
        series,
        f"{names[stat]} against d_k ({curve.num_keys} random keys)",
        "d_k",
        names[stat] + (" (median)" if stat == "param_grad" else ""),
        True,
        stat == "param_grad",
        dashed,
        style,
    )
    if head_dim is not None:
        here = {"type": "line", "x0": head_dim, "x1": head_dim, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"}
        layout["shapes"] = [{**here, "line": {"color": "#555555", "dash": "dot"}}]
        layout["annotations"] = [
            {
                "x": math.log10(head_dim),
                "y": 1,
                "yref": "paper",
                "text": f" d_k here = {head_dim}",
                "showarrow": False,
                "xanchor": "left",
            }
        ]
    return figure(data, layout)
