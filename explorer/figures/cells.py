"""A heatmap whose cells can be clicked: one invisible point at the centre of every cell (issue 25).

Plotly reports no selection for a heatmap trace (streamlit issues 8760 and 15042), so ``pick_layer``
adds a scatter trace named "cells" with one point per cell, ``customdata`` = (row, column) of the full
matrix (then the row and column counted from 1, for the hover, where the heatmap numbers its cells),
invisible whether selected or not. With ``hoverdistance`` −1 the nearest centre wins, so a click
anywhere in a cell picks that cell. The hover moves to that layer: each point carries the text the
heatmap (or a masked or dropped mark) showed for its cell, so hovering reads as before.

``cell_marks`` outlines a selected cell, or the row or column a selection on another panel points at.
"""

from __future__ import annotations

import re

import numpy as np

PICK_TRACE = "cells"  # the name of the layer of points (an overlay: the exports skip it)
PICK_LIMIT = 64 * 64  # cells a heatmap may have and still get a point each: above, the picker still works
MARK_COLOUR = "#CC79A7"  # reddish purple: seen on dark and light cells, apart from the orange highlighted row
_FIELD = re.compile(r"%\{(customdata\[(\d)\]|x|y|z)(?::\.(\d+)f)?\}")


def _number(value: float, decimals: int | None) -> str:
    """A number as plotly's d3 format writes it: fixed decimals, and a real minus sign."""
    if value is None or not np.isfinite(value):
        return "masked"  # a heatmap's gap: a masked (or dropped) cell without a mark of its own
    text = f"{value:.{decimals}f}" if decimals is not None else f"{value:g}"
    return text.replace("-", "−")


def _filled(template: str, fields: dict) -> str:
    """``template`` with plotly's ``%{…}`` fields replaced (``customdata[k]``, ``x``, ``y``, ``z`` with a
    ``.Nf`` format), and its ``<extra></extra>`` dropped."""

    def replace(match: re.Match) -> str:
        name, index, decimals = match.groups()
        value = fields["customdata"][int(index)] if index is not None else fields[name]
        if isinstance(value, str):
            return value
        return _number(value, None if decimals is None else int(decimals))

    return _FIELD.sub(replace, template.replace("<extra></extra>", ""))


def _axes(trace: dict) -> tuple[str, str]:
    return trace.get("xaxis", "x"), trace.get("yaxis", "y")


def pick_layer(data: list[dict], layout: dict, *, apart: bool = True) -> list[dict]:
    """``data`` (heatmaps, each followed by its marks) with layers of invisible points, one per cell, on top
    of each heatmap, which carry the hover; ``layout`` gets the nearest-point hover a click needs.

    One heatmap: a point's ``customdata`` is (row, column). Several (subplots side by side): ``apart``
    counts the columns on across the panels (panel k's column c is k · columns + c, as if the panels were
    one wide matrix), else every panel's cell (i, j) is the one cell (i, j) (two versions of one matrix).
    A heatmap that shows block means or more than ``PICK_LIMIT`` cells gets no points."""
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
    """The invisible points of one heatmap; None when it has no cells to pick (block means, too many).

    A heatmap whose hover names each cell (``customdata``) gets one layer with a text per point. Otherwise
    the cells that share a hover share a layer: the numbers' layer reads each value from the points'
    invisible colour through the heatmap's own template, and masked or dropped cells say so; a 64-token
    matrix then sends one template, not 4,096 texts."""
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
    """Invisible points at cell centres, selected or not, each with its (row, column) in the full matrix
    (columns counted on by ``offset`` across panels side by side), then the heatmap's ``numbers`` for its
    hover (row and column counted from 1), if it has them: ``customdata[2]`` and ``[3]``."""
    invisible = {"marker": {"opacity": 0}}
    custom = np.stack([ys, xs + offset, *numbers], axis=-1).astype(np.int32)  # (cells, 2 or 4)
    return {
        "type": "scatter",
        "name": PICK_TRACE,
        "mode": "markers",
        "x": xs,
        "y": ys,
        "xaxis": axes[0],
        "yaxis": axes[1],
        "meta": {"offset": offset},
        "customdata": custom,
        "marker": {"size": 1, "opacity": 0, "color": "rgba(0,0,0,0)"},
        "selected": invisible,
        "unselected": invisible,
        "showlegend": False,
    }


def _rect(x0: float, x1: float, y0: float, y1: float, width: int, axes: tuple[str, str] = ("x", "y")) -> dict:
    line = {"color": MARK_COLOUR, "width": width}
    return {"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "xref": axes[0], "yref": axes[1], "line": line}


def cell_marks(spec: dict, *, row: int | None = None, col: int | None = None) -> list[dict]:
    """Outlines for a figure's JSON (``spec``): the cell (``row``, ``col``) when both are given, else the
    whole row or the whole column; none for a row or column the heatmap does not show (a token window).
    On panels side by side, ``col`` counts as ``pick_layer``'s points do (each layer's ``meta.offset``)."""
    traces = spec.get("data", ())
    heats = [t for t in traces if t.get("type") == "heatmap"]
    offsets = {_axes(t): (t.get("meta") or {}).get("offset", 0) for t in traces if t.get("name") == PICK_TRACE}
    if not offsets and heats:
        offsets = {_axes(heats[0]): 0}
    marks = []
    for heat in heats:
        if _axes(heat) in offsets:
            local = None if col is None else col - offsets[_axes(heat)]
            marks += _marks(heat, row, local, all_columns=col is None)
    return marks


def _marks(heat: dict, row: int | None, col: int | None, *, all_columns: bool) -> list[dict]:
    rows, cols = list(heat.get("y") or ()), list(heat.get("x") or ())
    axes = _axes(heat)
    if (row is None and all_columns) or not rows or not cols:
        return []
    if (row is not None and row not in rows) or (not all_columns and col not in cols):
        return []
    if row is not None and not all_columns:
        return [_rect(col - 0.5, col + 0.5, row - 0.5, row + 0.5, 4, axes)]
    if row is not None:
        return [_rect(min(cols) - 0.5, max(cols) + 0.5, row - 0.5, row + 0.5, 3, axes)]
    return [_rect(col - 0.5, col + 0.5, min(rows) - 0.5, max(rows) + 0.5, 3, axes)]
