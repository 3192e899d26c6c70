"""What each attention head looks at, as grouped bars: one group per head, shares on a fixed 0–1 axis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .labels import plain_label
from .layout import DEFAULT_STYLE, SERIES_COLOURS, FigureStyle, axis, figure, figure_layout


def head_summary_bars(
    shares: Mapping[str, Sequence[float]],
    *,
    title: str,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Per-head shares (each series one value per head, all between 0 and 1) as grouped bars.

    The y axis is fixed to 0–1, as every attention weight in the app is, so two layers or two
    sentences can be compared by eye. Heads are named "head 1", "head 2", ..., counted from 1 as on the heads grid,
    the table beside the bars and the grid of every layer and head.
    """
    lengths = {len(series) for series in shares.values()}
    if len(lengths) != 1:
        raise ValueError("Every series needs one value per head.")
    num_heads = lengths.pop()
    heads = [f"head {k + 1}" for k in range(num_heads)]
    data = []
    for index, (name, series) in enumerate(shares.items()):
        values = np.clip(np.asarray(series, dtype=np.float64), 0.0, 1.0)
        data.append(
            {
                "type": "bar",
                "x": heads,
                "y": values,
                "name": plain_label(name),
                "marker": {"color": SERIES_COLOURS[index % len(SERIES_COLOURS)]},
                "text": [f"{v:.2f}" for v in values],
                "textposition": "outside",
                "textfont": {"size": style.cell_text_size},
                "constraintext": "both" if style.shrink_text else "none",  # readable_width makes the room
                "hovertemplate": f"%{{x}}<br>{plain_label(name)}: %{{y:.3f}}<extra></extra>",
                "cliponaxis": False,
            }
        )
    return figure(
        data,
        figure_layout(
            title,
            style,
            style.min_height + 80,
            legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
            xaxis=axis(style),
            yaxis=axis(style, "share (0–1)", range=[0, 1.15], tickvals=[0, 0.25, 0.5, 0.75, 1]),
            barmode="group",
            plot_bgcolor="rgba(0,0,0,0)",
        ),
    )
