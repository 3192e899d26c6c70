"""A heatmap whose cells can be clicked: one invisible point at the centre of every cell (issue 25).

Plotly reports no selection for a heatmap trace (streamlit issues 8760 and 15042), so ``pick_layer``
adds a scatter trace named "cells" with one point per cell, ``customdata`` = (row, column) of the full
matrix, invisible whether selected or not. With ``hoverdistance`` −1 the nearest centre wins, so a click
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


def pick_layer(data: list[dict], layout: dict) -> list[dict]:
    """``data`` (a heatmap first, then its marks) with a layer of one invisible point per cell on top,
    which carries the hover; ``layout`` gets the nearest-point hover a click needs. Unchanged when the
    heatmap shows block means or more than ``PICK_LIMIT`` cells."""
    heat = data[0]
    rows, cols = list(heat["y"]), list(heat["x"])
    z = np.asarray(heat["z"], dtype=np.float64)
    blocks = rows != list(range(rows[0], rows[0] + len(rows))) or cols != list(range(cols[0], cols[0] + len(cols)))
    if blocks or z.shape != (len(rows), len(cols)) or z.size > PICK_LIMIT:  # block means are no cells
        return data
    overlay_hover = {}  # (x, y) -> what a mark (masked, dropped) says on hover
    for trace in data[1:]:
        template = trace.get("hovertemplate")
        if template and trace.get("type") == "scatter":
            overlay_hover.update({(x, y): _filled(template, {}) for x, y in zip(trace["x"], trace["y"], strict=True)})
    custom, template = heat.get("customdata"), heat.get("hovertemplate", "")
    groups: dict[str | None, list] = {}  # hover text shared by a group of cells (None: the heatmap's) -> cells
    texts = []  # a small heatmap's hover, cell by cell: its labels are per cell anyway
    for i, y in enumerate(rows):
        for j, x in enumerate(cols):
            own = overlay_hover.get((x, y)) or (None if np.isfinite(z[i, j]) else "masked")
            if custom is not None:
                fields = {"x": x, "y": y, "z": z[i, j], "customdata": list(custom[i][j])}
                texts.append(own or _filled(template, fields))
                own = ""  # one layer: each point has its own text
            groups.setdefault(own, []).append((y, x, z[i, j]))
    for trace in data:
        trace["hoverinfo"] = "skip"
        trace.pop("hovertemplate", None)
    layers = []
    for own, cells in groups.items():
        ys, xs, values = (np.array(c) for c in zip(*cells, strict=True))
        layer = _points(ys.astype(np.int32), xs.astype(np.int32))
        if custom is not None:
            layer.update(hovertext=texts, hovertemplate="%{hovertext}<extra></extra>")
        elif own is None:  # numbers only: the template reads the value from the (invisible) colour
            layer["marker"]["color"] = values.astype(np.float32)
            layer["hovertemplate"] = template.replace("%{z", "%{marker.color")
        else:
            layer["hovertemplate"] = f"{own}<extra></extra>"
        layers.append(layer)
    layout.update(hovermode="closest", hoverdistance=-1, clickmode="event+select", dragmode=False)
    return [*data, *layers]


def _points(ys: np.ndarray, xs: np.ndarray) -> dict:
    """Invisible points at cell centres, selected or not, each with its (row, column) in the full matrix."""
    invisible = {"marker": {"opacity": 0}}
    return {
        "type": "scatter",
        "name": PICK_TRACE,
        "mode": "markers",
        "x": xs,
        "y": ys,
        "customdata": np.stack([ys, xs], axis=-1),  # (cells, 2)
        "marker": {"size": 1, "opacity": 0, "color": "rgba(0,0,0,0)"},
        "selected": invisible,
        "unselected": invisible,
        "showlegend": False,
    }


def _rect(x0: float, x1: float, y0: float, y1: float, width: int) -> dict:
    return {"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "line": {"color": MARK_COLOUR, "width": width}}


def cell_marks(spec: dict, *, row: int | None = None, col: int | None = None) -> list[dict]:
    """Outlines for a figure's JSON (``spec``): the cell (``row``, ``col``) when both are given, else the
    whole row or the whole column; none for a row or column the heatmap does not show (a token window)."""
    heat = next((t for t in spec.get("data", ()) if t.get("type") == "heatmap"), None)
    if heat is None or (row is None and col is None):
        return []
    rows, cols = list(heat.get("y") or ()), list(heat.get("x") or ())
    if not rows or not cols or (row is not None and row not in rows) or (col is not None and col not in cols):
        return []
    if row is not None and col is not None:
        return [_rect(col - 0.5, col + 0.5, row - 0.5, row + 0.5, 4)]
    if row is not None:
        return [_rect(min(cols) - 0.5, max(cols) + 0.5, row - 0.5, row + 0.5, 3)]
    return [_rect(col - 0.5, col + 0.5, min(rows) - 0.5, max(rows) + 0.5, 3)]
