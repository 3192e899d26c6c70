"""How wide a figure must be drawn for its texts to stay apart: a phone scrolls a narrower chart sideways."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .heatmaps import prints_in_cells

CHAR_PX = 7.5  # one digit or letter of plotly's 12 px cell text, measured in Chromium; larger text in proportion
CELL_PAD_PX = 8  # and the room between two cells' texts
LINE_HEIGHT = 1.5  # a standing tick label takes its font size times this across, with the room to the next
LABEL_PITCH_PX = 16  # a row or column with its own tick label needs this much, or the labels run together


def readable_width(fig: go.Figure) -> int:
    """The narrowest width (px) at which no two texts of the figure run into each other across: each heatmap's
    column as wide as its longest printed number and at least ``LABEL_PITCH_PX`` (square cells give the rows as
    much), and each lying x tick label as wide as its text, in the share of the width its panel gets, plus the
    figure's side margins. 0 when nothing needs room."""
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
