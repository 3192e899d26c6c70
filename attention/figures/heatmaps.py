"""Heatmaps: a matrix with its rows as queries and its columns as keys, in the order one is made: colour scale by
kind, what part of a large matrix is drawn, masked cells, clickable cells, the heatmap, a grid of them side by side,
and how wide a figure must be for its texts to stay apart."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from . import (
    COLOUR_STOPS,
    DEFAULT_STYLE,
    DIVERGING,
    MASK_COLOURS,
    MASK_WORD_LIMIT,
    MASKED_FILL,
    ROTATED_TICKS,
    SEQUENTIAL,
    TEXT_CELL_LIMIT,
    TICK_LIMIT,
    FigureStyle,
    axis,
    cell_text_size,
    chart_width,
    chosen_ticks,
    figure,
    figure_height,
    figure_layout,
    labels_that_fit,
    plain_label,
    plural,
    rect,
    subplot_axes,
    subplot_grid,
    text_px,
    tick_positions,
    token_labels,
    visible_token,
    words_fit,
)

# Colour is a measurement: each matrix has a kind, and the kind sets its colour scale (the package's docstring
# lists them). A range is never stretched over a sliver of the values: a weight matrix whose entries all lie close
# together says so under its title, in numbers (``spread_note``).


WEIGHTS, SIGNED, NONNEGATIVE, MASK = "weights", "signed", "nonnegative", "mask"
KINDS = (WEIGHTS, SIGNED, NONNEGATIVE, MASK)
NARROW_SPREAD = 0.05  # weights that all lie within this of each other get their spread in the title


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
    """For weights that all lie within ``NARROW_SPREAD`` of each other, their range in words (a line under the
    heatmap's title): on the fixed 0–1 scale they look alike, and they are nearly alike."""
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    if kind != WEIGHTS or finite.size < 2:
        return ""
    low, high = float(finite.min()), float(finite.max())
    if high - low >= NARROW_SPREAD:
        return ""
    return f"all {low:.3f}–{high:.3f}, within {high - low:.3f}"


def colour_settings(kind: str, low: float, high: float, style: FigureStyle, show: bool = True) -> dict:
    """A heatmap trace's colour settings: an explicit range (zauto off, so plotly keeps it)."""
    colours = COLOUR_STOPS[SEQUENTIAL if kind in (WEIGHTS, NONNEGATIVE) else DIVERGING]
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


def hidden_value(kind: str, masked: bool) -> str | float | None:
    """What a blank cell holds, for exports: a masked (or dropped) weight is exactly 0, a masked score −∞."""
    return 0.0 if kind == WEIGHTS else "-inf" if kind == SIGNED and masked else None


# What part of a matrix a heatmap draws: cell text, and block means for a matrix too large to read cell by cell.


def cell_texts(values: np.ndarray, hidden: np.ndarray, decimals: int = 2, *, compact: bool = False) -> np.ndarray:
    """A heatmap's numbers as printed in its cells, "" in hidden ones, as one string array (a figure copies it in
    one piece, nested lists string by string); ``compact`` drops a weight's leading zero (".10"), as tables of
    probabilities print them, where "0.10" would not fit its cell."""
    rows = zip(values, hidden, strict=True)
    text = [["" if off else f"{v:.{decimals}f}" for v, off in zip(*row, strict=True)] for row in rows]
    if compact:
        text = [[t[1:] if t.startswith("0.") else t for t in row] for row in text]
    return np.array(text)


def cell_text(texts: np.ndarray, size: int) -> dict:
    """A heatmap trace's printed numbers (``cell_texts``) at ``size`` px."""
    return {"text": texts, "texttemplate": "%{text}", "textfont": {"size": size}}


CHROME_PX = 30  # a heatmap's side margins and its y axis title's standoff and tick padding, besides the texts


def plot_width(style: FigureStyle, row_text: Sequence[str], *, colour_bar: bool, title: bool = True) -> float | None:
    """The width (px) of a heatmap's plot area at 1280×720 (``chart_width``): what its y axis title, row labels and
    colour bar leave; None where the chart's width is not known. Measured in Chromium, it is 0-30 px wider."""
    width = chart_width(style)
    if width is None:
        return None
    labels = max((text_px(html.unescape(t), style.tick_size) for t in row_text), default=0.0)
    left = CHROME_PX + (style.font_size + 14 if title else 0) + labels
    return width - left - (3.5 * style.tick_size + 24 if colour_bar else 0)


def fitted_cell_text(values, hidden, decimals: int, kind: str, cell_px: float | None, style) -> dict:
    """The numbers a heatmap prints in cells ``cell_px`` wide, at the largest size that fits (``cell_text_size``);
    a weight drops its leading zero if only that fits. Empty if nothing fits: the hover keeps the values."""
    for compact in (False, True) if kind == WEIGHTS else (False,):
        texts = cell_texts(values, hidden, decimals, compact=compact)
        size = cell_text_size(texts, cell_px, style)
        if size is not None:
            return cell_text(texts, size)
    return {}


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

    def tick_texts(self) -> tuple[list[str], list[str]]:
        """The row and column labels as plotly shows them: tokens through ``token_labels``, names escaped."""
        rows = token_labels(self.row_labels) if self.row_tokens else [plain_label(x) for x in self.row_labels]
        return rows, token_labels(self.col_labels) if self.col_tokens else [plain_label(x) for x in self.col_labels]

    def trace(self, title: str, meta: dict, **props) -> dict:
        """A heatmap trace of the drawn cells, hidden ones as gaps (grey); ``meta`` adds to the row and column
        names and the title that the exports read."""
        rows = [visible_token(x) if self.row_tokens else str(x) for x in self.row_labels]
        cols = [visible_token(x) if self.col_tokens else str(x) for x in self.col_labels]
        z = np.where(self.hidden, np.nan, self.values).astype(np.float32)
        trace = {"type": "heatmap", "z": z, "x": self.col_positions, "y": self.row_positions, "hoverongaps": False}
        return {**trace, "meta": {"rows": rows, "cols": cols, "title": title, **meta}, **props}


def token_numbers(view: MatrixView) -> np.ndarray:
    """Each drawn cell's row and column counted from 1 (a block's first), for a hover's ``customdata``: (rows, cols,
    2) int16, as many bytes as the float32 values, where labels cell by cell would take several times more."""
    rows, cols = np.asarray(view.row_positions) + 1, np.asarray(view.col_positions) + 1
    return np.stack(np.broadcast_arrays(rows[:, None], cols[None, :]), axis=-1).astype(np.int16)


def _block_means(values: np.ndarray, hidden: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean of the shown cells in each ``block`` × ``block`` block (the last ones may be smaller) and which
    blocks have none; ``np.add.reduceat`` along rows, then columns, takes a third of the time of padded blocks."""
    rows, cols = values.shape
    shown = ~hidden & np.isfinite(values)
    row_starts, col_starts = np.arange(0, rows, block), np.arange(0, cols, block)
    sums = np.add.reduceat(np.add.reduceat(np.where(shown, values, 0.0), col_starts, axis=1), row_starts, axis=0)
    counts = np.add.reduceat(np.add.reduceat(shown.astype(np.int32), col_starts, axis=1), row_starts, axis=0)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    return means, counts == 0


def fit_matrix(values, hidden, row_labels, col_labels, row_tokens, col_tokens, style: FigureStyle) -> MatrixView:
    """Apply ``style.token_window`` to token axes, then block means if an axis is still longer than
    ``style.max_cells_per_axis``, so a 1,024-token matrix is not sent cell by cell."""
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
    block = max(1, int(np.ceil(max(rows, cols) / style.max_cells_per_axis)))
    row_positions = list(range(row_start, row_start + rows, block))
    col_positions = list(range(col_start, col_start + cols, block))
    if block > 1:  # labelled by the tokens they span, counted from 1 as tokens are
        values, hidden = _block_means(values, hidden, block)
        row_labels = [f"#{p + 1}–{min(p + block, row_start + rows)}" for p in row_positions]
        col_labels = [f"#{p + 1}–{min(p + block, col_start + cols)}" for p in col_positions]
        row_tokens = col_tokens = False
    return MatrixView(
        values, hidden, row_labels, col_labels, row_positions, col_positions, row_tokens, col_tokens, block
    )


# Masked cells, drawn grey with what they hold: a legend for the two mask colours and the cells' marks and words.


MASKED_SCORE_HOVER = "−∞ (masked): this key is in the query's future, so its weight is exactly 0"
MASKED_WEIGHT_HOVER = "0 (masked): this key is in the query's future"


def legend_square(colour: str, name: str, style: FigureStyle) -> dict:
    """A legend entry without data: a boolean mask's colour, or the grey of masked cells too small for "masked"."""
    square = {"symbol": "square", "size": style.tick_size, "color": colour}
    entry = {"type": "scatter", "x": [None], "y": [None], "mode": "markers", "marker": square, "name": name}
    return {**entry, "hoverinfo": "skip"}


def cell_words(x, y, word: str, hover: str | None, colour: str, size: int, **props) -> dict:
    """A trace writing ``word`` in the cells centred at ``x``, ``y`` with ``hover`` (None: the cells' own shows
    through); ``props`` add its name, its axes ..."""
    said = {"hovertemplate": f"{hover}<extra></extra>"} if hover is not None else {"hoverinfo": "skip"}
    written = {"mode": "text", "text": [word] * len(x), "textfont": {"size": size, "color": colour}}
    return {"type": "scatter", "x": x, "y": y, **written, **said, "showlegend": False, **props}


def masked_word(kind: str) -> str:
    """What a masked cell says in small matrices: its score −∞, or that its weight is masked."""
    return "−∞" if kind == SIGNED else "masked"


def masked_cells(view, masked_cells, kind: str, style: FigureStyle, words: bool) -> list[dict]:
    """Masked cells stay grey (the plot background); they say what they are on hover, and in small matrices
    ``masked_word`` is written in them."""
    ii, jj = np.nonzero(masked_cells)
    if ii.size == 0 or len(view.row_positions) > TICK_LIMIT or len(view.col_positions) > TICK_LIMIT:
        return []
    x = [view.col_positions[j] for j in jj]
    y = [view.row_positions[i] for i in ii]
    hover = MASKED_SCORE_HOVER if kind == SIGNED else MASKED_WEIGHT_HOVER
    said = {"hovertemplate": f"{hover}<extra></extra>", "showlegend": False, "name": "masked cells"}
    traces = [{"type": "scatter", "x": x, "y": y, "mode": "markers", "marker": {"size": 1, "opacity": 0}, **said}]
    if words:
        traces.append(cell_words(x, y, masked_word(kind), None, "#333333", style.label_size, name="masked"))
    return traces


# A heatmap whose cells can be clicked (issue 25): plotly reports no selection for a heatmap (streamlit issues 8760
# and 15042), so ``pick_layer`` adds an invisible point at every cell's centre, ``customdata`` = (row, column) of
# the full matrix. With ``hoverdistance`` −1 the nearest centre wins, so a click anywhere in a cell picks it. The
# points carry the hover the heatmap (or a mark) showed. ``cell_marks`` outlines a picked cell, row or column.


PICK_TRACE = "cells"  # the name of the layer of points (an overlay: the exports skip it)
PICK_LIMIT = 64 * 64  # cells a heatmap may have and still get a point each: above, the picker still works
MARK_COLOUR = "#CC79A7"  # reddish purple: seen on dark and light cells, apart from the orange highlighted row
_FIELD = re.compile(r"%\{(customdata\[(\d)\]|x|y|z)(?::\.(\d+)f)?\}")


def _filled(template: str, fields: dict) -> str:
    """``template`` with plotly's ``%{…}`` fields (``customdata[k]``, ``x``, ``y``, ``z``, ``.Nf``) filled in as
    plotly's d3 format writes them, without its ``<extra></extra>``."""

    def replace(match: re.Match) -> str:
        name, index, decimals = match.groups()
        value = fields["customdata"][int(index)] if index is not None else fields[name]
        if isinstance(value, str):
            return value
        if value is None or not np.isfinite(value):
            return "masked"  # a heatmap's gap: a masked (or dropped) cell without a mark of its own
        return (f"{value:.{decimals}f}" if decimals is not None else f"{value:g}").replace("-", "−")

    return _FIELD.sub(replace, template.replace("<extra></extra>", ""))


def _axes(trace: dict) -> tuple[str, str]:
    return trace.get("xaxis", "x"), trace.get("yaxis", "y")


def pick_layer(data: list[dict], layout: dict, *, apart: bool = True) -> list[dict]:
    """``data`` (heatmaps, each followed by its marks) with a layer of invisible points on each heatmap, which
    carry the hover; ``layout`` gets the nearest-point hover a click needs. With several panels, ``apart`` counts
    panel k's column c as k · columns + c (one wide matrix), else cell (i, j) is one cell in every panel (two
    versions of one matrix). Block means or more than ``PICK_LIMIT`` cells get no points."""
    heats = [t for t in data if t.get("type") == "heatmap"]
    layers = []
    for k, heat in enumerate(heats):
        offset = k * len(heat["x"]) if apart else 0
        overlays = [t for t in data if t is not heat and _axes(t) == _axes(heat)]
        found = _layers(heat, overlays, offset)
        if found is None:
            return data
        layers += found
    for trace in data:
        trace["hoverinfo"] = "skip"
        trace.pop("hovertemplate", None)
    for heat in heats:  # the points must not stretch an axis: each keeps its heatmap's extent
        _keep_extent(layout, heat)
    layout.update(hovermode="closest", hoverdistance=-1, clickmode="event+select", dragmode=False)
    return [*data, *layers]


def _keep_extent(layout: dict, heat: dict) -> None:
    """Fix ``heat``'s axes to its cells' extent (reversed where its y axis is), unless a range is set."""
    for name, values in (("x", list(heat["x"])), ("y", list(heat["y"]))):
        key = f"{name}axis" + heat.get(f"{name}axis", name)[1:]
        axis = layout.setdefault(key, {})
        if "range" in axis:
            continue
        span = [min(values) - 0.5, max(values) + 0.5]
        axis["range"] = span[::-1] if axis.get("autorange") == "reversed" else span
        axis.pop("autorange", None)


def _layers(heat: dict, overlays: list[dict], offset: int) -> list[dict] | None:
    """The invisible points of one heatmap, None when it has no cells to pick. A hover that names each cell gets
    one text per point; else cells sharing a hover share a layer, the numbers' layer reading each value from the
    points' invisible colour through the heatmap's template (a 64-token matrix sends one template, not 4,096)."""
    rows, cols = list(heat["y"]), list(heat["x"])
    z = np.asarray(heat["z"], dtype=np.float64)
    blocks = rows != list(range(rows[0], rows[0] + len(rows))) or cols != list(range(cols[0], cols[0] + len(cols)))
    if blocks or z.shape != (len(rows), len(cols)) or z.size > PICK_LIMIT:  # block means are no cells
        return None
    overlay_hover = {}  # (x, y) -> what a mark (masked, dropped) says on hover
    for trace in overlays:
        template = trace.get("hovertemplate")
        if template and trace.get("type") == "scatter":
            overlay_hover.update({(x, y): _filled(template, {}) for x, y in zip(trace["x"], trace["y"], strict=True)})
    custom, template = heat.get("customdata"), heat.get("hovertemplate", "")
    numbered = custom is not None and np.asarray(custom).dtype.kind in "iu"  # ``token_numbers``, not labels
    labelled = custom is not None and not numbered
    groups: dict[str | None, list] = {}  # hover text shared by a group of cells (None: the heatmap's) -> cells
    texts = []  # a heatmap's hover cell by cell, when its labels are per cell anyway
    for i, y in enumerate(rows):
        for j, x in enumerate(cols):
            own = overlay_hover.get((x, y)) or (None if np.isfinite(z[i, j]) else "masked")
            if labelled:
                fields = {"x": x, "y": y, "z": z[i, j], "customdata": list(custom[i][j])}
                texts.append(own or _filled(template, fields))
                own = ""  # one layer: each point has its own text
            numbers = tuple(custom[i][j]) if numbered else ()
            groups.setdefault(own, []).append((y, x, z[i, j], *numbers))
    layers = []
    for own, cells in groups.items():
        ys, xs, values, *numbers = (np.array(c) for c in zip(*cells, strict=True))
        layer = _points(ys.astype(np.int32), xs.astype(np.int32), _axes(heat), offset, numbers)
        if labelled:
            layer.update(hovertext=texts, hovertemplate="%{hovertext}<extra></extra>")
        elif own is None:  # numbers only: the template reads the value from the (invisible) colour
            layer["marker"]["color"] = values.astype(np.float32)
            shifted = template.replace("customdata[1]", "customdata[3]").replace("customdata[0]", "customdata[2]")
            layer["hovertemplate"] = shifted.replace("%{z", "%{marker.color")
        else:
            layer["hovertemplate"] = f"{own}<extra></extra>"
        layers.append(layer)
    return layers


def _points(ys: np.ndarray, xs: np.ndarray, axes: tuple[str, str], offset: int, numbers=()) -> dict:
    """Invisible points at cell centres, selected or not, with their (row, column) in the full matrix (columns
    counted on by ``offset``), then the heatmap's ``numbers`` for its hover as ``customdata[2]`` and ``[3]``."""
    invisible = {"marker": {"opacity": 0}}
    custom = np.stack([ys, xs + offset, *numbers], axis=-1).astype(np.int32)  # (cells, 2 or 4)
    marker = {"size": 1, "opacity": 0, "color": "rgba(0,0,0,0)"}
    point = {"type": "scatter", "name": PICK_TRACE, "mode": "markers", "x": xs, "y": ys, "xaxis": axes[0]}
    point |= {"yaxis": axes[1], "meta": {"offset": offset}, "customdata": custom, "marker": marker}
    return {**point, "selected": invisible, "unselected": invisible, "showlegend": False}


def cell_marks(spec: dict, *, row: int | None = None, col: int | None = None) -> list[dict]:
    """Outlines for a figure's JSON (``spec``): the cell (``row``, ``col``) when both are given, else the row or the
    column, if shown; on panels side by side ``col`` counts as ``pick_layer``'s points do (``meta.offset``)."""
    traces = spec.get("data", ())
    heats = [t for t in traces if t.get("type") == "heatmap"]
    offsets = {_axes(t): (t.get("meta") or {}).get("offset", 0) for t in traces if t.get("name") == PICK_TRACE}
    if not offsets and heats:
        offsets = {_axes(heats[0]): 0}
    marks = []
    for heat in (h for h in heats if _axes(h) in offsets and (row, col) != (None, None)):
        rows, cols = list(heat.get("y") or ()), list(heat.get("x") or ())
        local = None if col is None else col - offsets[_axes(heat)]
        if not rows or not cols or (row is not None and row not in rows) or (col is not None and local not in cols):
            continue
        x0, x1 = (min(cols), max(cols)) if col is None else (local, local)
        y0, y1 = (min(rows), max(rows)) if row is None else (row, row)
        line = {"color": MARK_COLOUR, "width": 3 if None in (row, col) else 4}  # a cell's outline is bolder
        marks.append(rect(x0 - 0.5, x1 + 0.5, y0 - 0.5, y1 + 0.5, line, xref=_axes(heat)[0], yref=_axes(heat)[1]))
    return marks


# Heatmaps: a matrix with its rows as queries and its columns as keys.


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
    value_range: tuple[float, float] | None = None,
    masked=None,
    dropped=None,
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
    """A matrix as a heatmap with token labels (``row_tokens``/``col_tokens``) or names ("dim 0") on numeric axes.

    ``kind`` (``KINDS``; else ``infer_kind``) sets the colour scale, ``value_range`` overrides its range (panels that
    share one). ``masked`` cells (bool, True = masked) and non-finite values are grey and labelled; ``meaning`` is a
    hover line; ``legend_names`` renames legend entries; ``pickable`` adds a point to click in each cell.
    ``dropped`` (bool) draws one dropout draw: dropped cells are blank and say "dropped", future ones "masked";
    survivors scaled by 1/(1 − p) can pass 1, so ``infer_kind`` then picks "nonnegative". Block means carry no marks.
    """
    values = np.asarray(z, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"heatmap needs a 2-d matrix, got shape {values.shape}.")
    if len(row_labels) != values.shape[0] or len(col_labels) != values.shape[1]:
        raise ValueError(
            f"{values.shape[0]}×{values.shape[1]} matrix but {len(row_labels)} row and {len(col_labels)} column labels."
        )
    kind = kind or infer_kind(values, value_name)
    low, high = value_range if value_range is not None else colour_range(values, kind)
    note = spread_note(values, kind)
    hidden = future = np.zeros_like(values, dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    if dropped is not None:  # one dropout draw: a future cell is "masked", dropped or not
        dropped = np.asarray(dropped, dtype=bool) & ~future
        hidden = future | dropped
    hidden = hidden | ~np.isfinite(values)
    view = fit_matrix(values, hidden, row_labels, col_labels, row_tokens, col_tokens, style)
    values, hidden = view.values, view.hidden
    rows, cols = values.shape
    row_text, col_text = view.tick_texts()
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
    plot_px = plot_width(style, row_text, colour_bar=kind != MASK)  # None where the chart's width is not known
    # "masked" written in small matrices' grey cells where it fits beside its neighbours; else a legend says it
    may_say = masked is not None and kind != MASK and small and max(rows, cols) <= MASK_WORD_LIMIT and view.block == 1
    says = may_say and words_fit(masked_word(kind), cols, style, NARROW_WIDTH if plot_px is None else plot_px)
    # (one dropout draw writes its own words in its cells, so it never needs the legend)
    grey_legend = may_say and not says and bool(hidden.any()) and dropped is None
    # a legend under the plot: a mask's two entries take two lines but in a wide plot, the grey cells' one
    legend_lines = 2 if kind == MASK else int(grey_legend)
    legend_height = int(legend_lines * LEGEND_LINE * style.font_size) + 6 if legend_lines else 0
    height = min(style.max_height, height + legend_height)  # the legend comes on top, as far as the screen allows
    # the plot area is what the margins (as set below) leave; each labelled row needs a line of tick text
    top = 2 * style.title_size + (3 * style.tick_size + labels_height + 16 if may_stand else 2 * style.tick_size + 24)
    plot_height = height - top - (legend_height + 10)
    row_fit = max(2, min(TICK_LIMIT, int(plot_height / (ROW_LABEL_LINES * style.tick_size))))
    # cell text only where it fits, across (``fitted_cell_text``) and down: else the values would overlap
    shown = small and plot_height / rows >= 1.3 * style.min_cell_text_size
    cell_px = None if plot_px is None else plot_px / cols
    printed = fitted_cell_text(values, hidden, decimals, kind, cell_px, style) if shown else {}
    if printed and plot_height / rows < 1.3 * printed["textfont"]["size"]:  # a smaller size fits down
        printed["textfont"]["size"] = max(style.min_cell_text_size, int(plot_height / rows / 1.3))
    prints_values = bool(printed)
    row_ticks = tick_positions(rows, row_fit, keep)

    blank = 0.0 if dropped is not None else hidden_value(kind, masked is not None)
    meta = {"kind": kind, "hidden_value": blank, "highlight": keep}  # the row, for the text alternative
    trace = view.trace(title, meta, xgap=int(small), ygap=int(small), **colour_settings(kind, low, high, style))
    meaning_line = f"<br>{plain_label(meaning)}" if meaning else ""
    block = "" if small or view.block == 1 else f" (mean of a {view.block}×{view.block} block)"
    said = ":" if small else "" if view.block == 1 else " block from"
    if small:  # the cells' labels, else their numbers counted from 1 (``token_numbers``)
        row_of, col_of = np.array(row_text)[:, None], np.array(col_text)[None, :]  # (rows, 1), (1, cols)
        trace["customdata"] = np.stack(np.broadcast_arrays(row_of, col_of), axis=-1)  # (rows, cols, 2)
        trace["textfont"] = {"size": style.cell_text_size}
        trace.update(printed)
    else:
        trace["customdata"] = token_numbers(view)
    trace["hovertemplate"] = (
        f"{plain_label(row_title)}{said} %{{customdata[0]}}<br>{plain_label(col_title)}{said} %{{customdata[1]}}"
        f"<br>{plain_label(value_name)} = %{{z:.{decimals + 2}f}}{block}{meaning_line}<extra></extra>"
    )
    data = [trace]
    own = {}  # this heatmap's own layout, beside the shared one
    if dropped is not None:  # one dropout draw: its own marks tell masked cells from dropped ones
        data += _dropout_marks(view, future, dropped, style)
    elif kind == MASK:
        names = ("False (0): visible", "True (1): masked, a future key")
        data += [legend_square(colour, name, style) for colour, name in zip(MASK_COLOURS, names, strict=True)]
    elif view.block == 1:
        data += masked_cells(view, hidden, kind, style, prints_values and says)
    if grey_legend:
        data.append(legend_square(MASKED_FILL, "masked: a future key", style))
    if kind == MASK or grey_legend:  # under the plot (its column labels are on top), so the plot keeps its width
        own["showlegend"] = True
        own["legend"] = {"orientation": "h", "x": 0, "y": 0, "yanchor": "top", "font": {"size": style.font_size}}
    if highlighted:
        x0, x1 = view.col_positions[0] - 0.5, view.col_positions[-1] + 0.5
        own["shapes"] = [rect(x0, x1, highlight_row - 0.5, highlight_row + 0.5, {"color": "#D55E00", "width": 3})]
    plain = {"showgrid": False, "zeroline": False}
    row_axis = {**chosen_ticks(view.row_positions, row_text, row_ticks), "autorange": "reversed", **plain}
    own["yaxis"] = axis(style, plain_label(plural(row_title)), **row_axis)
    upright = -90 if len(col_ticks) > ROTATED_TICKS else None  # None: "auto"
    col_axis = {**chosen_ticks(view.col_positions, col_text, col_ticks), "tickangle": upright, "automargin": True}
    own["xaxis"] = axis(style, plain_label(plural(col_title)), **col_axis, autotickangles=[0, -90], side="top", **plain)
    # plotly.js puts a top axis's title too close to upright labels: one more line of tick text apart
    own["xaxis"]["title"]["standoff"] = 4 + (style.tick_size if may_stand else 0)
    # room under the plot for the legend; above it, for the title, then the axis title, then upright labels
    margin = ({"b": legend_height + 10} if legend_height else {}) | ({"t": top} if may_stand else {})
    layout = figure_layout(title, style, height, margin=margin, subtitle=note, **own)
    for trace in data if legend_names else ():
        if trace.get("name") in legend_names:
            trace["name"] = legend_names[trace["name"]]
    return figure(pick_layer(data, layout) if pickable else data, layout)


def without_cell_text(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` without the numbers and words printed in its cells (too narrow for them), which stay in the
    hover; a figure with no cell text is returned as it is."""
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


def _dropout_marks(view: MatrixView, future: np.ndarray, dropped: np.ndarray, style: FigureStyle) -> list[dict]:
    """The words "masked" and "dropped" up to ``MASK_WORD_LIMIT`` tokens per axis; up to ``TICK_LIMIT``, a cross in
    each dropped cell, future cells staying grey; none on block means."""
    if view.block > 1:
        return []
    rows, cols = view.row_positions, view.col_positions
    small = len(rows) <= MASK_WORD_LIMIT and len(cols) <= MASK_WORD_LIMIT
    marks = []
    for cells, text, hover in (
        (future, "masked", MASKED_WEIGHT_HOVER),
        (dropped, "dropped", "dropped: dropout set this weight to 0 in this draw"),
    ):
        ii, jj = np.nonzero(cells[np.ix_(rows, cols)])
        if ii.size == 0 or (not small and (text == "masked" or len(rows) > TICK_LIMIT or len(cols) > TICK_LIMIT)):
            continue
        colour = "#333333" if text == "masked" else "#B2182B"
        xs, ys = [cols[j] for j in jj], [rows[i] for i in ii]
        mark = cell_words(xs, ys, text, hover, colour, style.label_size, name=text)
        if not small:  # a cross drawn as a marker, sized to the cells, so neighbours never run together
            size = int(np.clip(0.5 * style.max_height / max(len(rows), len(cols)), 4, 14))
            del mark["text"], mark["textfont"]
            cross = {"symbol": "x-thin", "size": size, "line": {"width": 2, "color": colour}}
            mark.update(mode="markers", marker=cross)
        marks.append(mark)
    return marks


# Several same-sized matrices side by side, e.g. one attention-weight matrix per head, on one colour scale.


GREY_NOTE = "gray cells: masked, a future key (weight 0)"
GRID_ROW_SPACING = 0.12  # the room between a grid's rows of panels: this over the rows, + 0.04, of the height


def heatmap_grid(
    matrices,
    titles: Sequence[str],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    masked=None,
    columns: int = 3,
    max_row_height: int | None = None,
    pickable: bool = False,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Same-sized attention-weight matrices (one per head) on the one 0–1 scale with one colour bar, token labels on
    the first column's axis only. ``max_row_height`` caps a grid row's height (px), so many narrow panels stay on
    one screen; ``pickable`` adds a point to click in each cell (panel k's column j is k · columns + j)."""
    stack = np.asarray(matrices, dtype=np.float64)
    count, rows, cols = stack.shape
    columns = max(1, min(columns, count))
    grid_rows = int(np.ceil(count / columns))
    gap = GRID_ROW_SPACING / max(grid_rows, 1) + 0.04
    spacing = {"horizontal_spacing": 0.03, "vertical_spacing": gap, "shared_yaxes": True}
    axes, annotations = subplot_grid(grid_rows, columns, [plain_label(t) for t in titles], style, **spacing)
    hidden = np.zeros((rows, cols), dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    views = [fit_matrix(m, hidden | ~np.isfinite(m), row_labels, col_labels, True, True, style) for m in stack]
    view = views[0]
    rows, cols = view.values.shape
    row_text, col_text = view.tick_texts()
    row_height = max(figure_height(rows, style, extra=60), 240)
    if max_row_height is not None:
        row_height = min(row_height, max_row_height)
    height = min(style.max_height + 200, grid_rows * row_height)
    fit = labels_that_fit(height // grid_rows + 2 * style.title_size, style)
    # rows: as many labels as a panel's plot area is tall, 1.3 lines each; it is the figure's height less the title's
    # margin above, and the column labels with the bottom margin below (2 lines), shared by the grid's rows
    plot_height = height - (2 * style.title_size + 2 * style.tick_size + 24) - (2 * style.tick_size + 10)
    panel_height = plot_height * (1 - gap * (grid_rows - 1)) / grid_rows
    # numbers in the cells where they fit across (``fitted_cell_text``) and down
    small = rows <= TEXT_CELL_LIMIT and cols <= TEXT_CELL_LIMIT and view.block == 1
    small = small and panel_height / rows >= 1.3 * style.min_cell_text_size
    plot_px = plot_width(style, row_text, colour_bar=True, title=False)  # the panels share it, with their gaps
    panel_px = None if plot_px is None else plot_px * (1 - spacing["horizontal_spacing"] * (columns - 1)) / columns
    # masked cells as on every heatmap (``masked_cells``): "masked" written in them where it fits, else said above
    may_say = bool(views[0].hidden.any()) and masked is not None and small and max(rows, cols) <= MASK_WORD_LIMIT
    says = may_say and words_fit("masked", cols, style, NARROW_WIDTH if panel_px is None else panel_px)
    data, first = [], "" if view.block == 1 else " block from"
    printed = []
    for k in range(count):
        x, y = subplot_axes(k)
        hover = f"{plain_label(titles[k])}<br>query{first} %{{customdata[0]}} · key{first} %{{customdata[1]}}"
        props = {"hovertemplate": f"{hover}<br>attention weight = %{{z:.4f}}<extra></extra>", "xaxis": x, "yaxis": y}
        props |= {"customdata": token_numbers(views[k]), "textfont": {"size": style.cell_text_size}}  # from 1
        meta = {"kind": WEIGHTS, "hidden_value": 0.0}  # a masked weight is exactly 0
        trace = views[k].trace(titles[k], meta, **props, **colour_settings(WEIGHTS, 0.0, 1.0, style, show=k == 0))
        cell_px = None if panel_px is None else panel_px / cols
        printed.append(fitted_cell_text(trace["z"], views[k].hidden, 2, WEIGHTS, cell_px, style) if small else {})
        data.append(trace | printed[-1])
    words = says and all(printed)
    for k in range(count) if view.block == 1 and masked is not None else ():
        x, y = subplot_axes(k)
        marks = masked_cells(views[k], views[k].hidden, WEIGHTS, style, words)
        data += [mark | {"xaxis": x, "yaxis": y} for mark in marks]
    # a legend under the grid would meet its column labels: the grey cells are named under the title instead
    grey_note = GREY_NOTE if masked is not None and views[0].hidden.any() and not words else ""
    row_fit = max(2, int(panel_height / (1.3 * style.tick_size)))
    row_ticks, col_ticks = tick_positions(rows, row_fit), tick_positions(cols, max(2, fit // columns + 1))
    y_ticks = chosen_ticks(view.row_positions, row_text, row_ticks)
    x_ticks = chosen_ticks(view.col_positions, col_text, col_ticks)
    for name, props in axes.items():
        ticks = x_ticks if name.startswith("x") else {**y_ticks, "autorange": "reversed"}
        axes[name] = axis(style, **props, **ticks, showgrid=False)
    layout = figure_layout(title, style, height, subtitle=grey_note, **axes, annotations=annotations)
    return figure(pick_layer(data, layout) if pickable else data, layout)


# How wide a figure must be drawn for its texts to stay apart: a phone scrolls a narrower chart sideways.


CHAR_PX = 7.5  # one digit or letter of plotly's 12 px cell text, measured in Chromium; larger text in proportion
CELL_PAD_PX = 8  # and the room between two cells' texts
LINE_HEIGHT = 1.5  # a standing tick label takes its font size times this across, with the room to the next
LABEL_PITCH_PX = 16  # a row or column with its own tick label needs this much, or the labels run together


def readable_width(fig: go.Figure) -> int:
    """The narrowest width (px) at which no two texts run into each other across: a heatmap's column as wide as its
    longest printed number, at least ``LABEL_PITCH_PX``, and lying x tick labels as wide as their text, in their
    panel's share of the width, plus the side margins; 0 when nothing needs room."""
    plot_px = 0.0
    sizes = [fig.layout[key].tickfont.size for key in fig.layout if key.startswith(("xaxis", "yaxis"))]
    pitch = LABEL_PITCH_PX * max([12, *[size for size in sizes if size]]) / 12  # larger tick labels, more room

    def need(px: float, axis_name: str | None) -> None:
        nonlocal plot_px
        axis = fig.layout[f"xaxis{(axis_name or 'x')[1:]}"]
        share = (axis.domain[1] - axis.domain[0]) if axis.domain else 1.0
        plot_px = max(plot_px, px / max(share, 0.05))

    for trace in fig.data:
        if trace.type == "heatmap" and trace.z is not None and np.ndim(trace.z) == 2:
            columns = np.shape(trace.z)[1]
        elif prints_in_cells(trace) and trace.x is not None:
            columns = len(set(np.ravel(trace.x)))
        elif trace.type == "bar" and trace.text is not None and trace.constraintext == "none":  # values kept whole
            beside = [t for t in fig.data if t.type == "bar" and t.text is not None and t.xaxis == trace.xaxis]
            columns = len(set(np.ravel(trace.x))) * (len(beside) if fig.layout.barmode == "group" else 1) * 1.25
        else:
            continue
        texts = [] if trace.text is None else [str(t) for t in np.ravel(np.asarray(trace.text, dtype=object))]
        texts = [t for t in texts if t and t != "None"]
        char = CHAR_PX * (trace.textfont.size or 12) / 12 if hasattr(trace, "textfont") else CHAR_PX
        need(columns * max([pitch] + [len(t) * char + CELL_PAD_PX for t in texts]), trace.xaxis)
    for name in [key for key in fig.layout if key.startswith("xaxis")]:
        axis = fig.layout[name]
        if axis.tickvals is None or not len(axis.tickvals):
            continue
        labels = [str(t) for t in (axis.ticktext if axis.ticktext is not None else axis.tickvals)]
        size = axis.tickfont.size or 12
        if axis.tickangle in (-90, 90):  # standing labels: each takes a line's height across
            need(len(labels) * size * LINE_HEIGHT, f"x{name[5:]}")
        else:
            need(len(labels) * (max(map(len, labels)) * CHAR_PX * size / 12 + CELL_PAD_PX), f"x{name[5:]}")
    if not plot_px:
        return 0
    margin = fig.layout.margin
    sides = (margin.l if margin.l is not None else 80) + (margin.r if margin.r is not None else 80)
    legend = fig.layout.legend
    if legend.orientation == "v" and (legend.x or 0) > 1:  # a legend beside the plot takes its names' width
        names = [len(trace.name or "") for trace in fig.data if trace.showlegend is not False]
        sides += max(names, default=0) * CHAR_PX * (legend.font.size or 12) / 12 + 40
    return int(plot_px + sides + 70 * any(getattr(trace, "showscale", False) for trace in fig.data))
