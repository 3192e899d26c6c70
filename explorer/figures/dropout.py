"""Dropout's heatmap: the weights after one draw, dropped cells marked, survivors scaled by 1/(1 − p)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .cells import pick_layer
from .heatmaps import heatmap_spec
from .layout import (
    DEFAULT_STYLE,
    TICK_LIMIT,
    FigureStyle,
    figure,
)
from .masks import MASKED_WEIGHT_HOVER
from .matrices import MatrixView
from .scales import (
    NONNEGATIVE,
    WEIGHTS,
    infer_kind,
)

WORD_LABEL_LIMIT = 8  # "masked"/"dropped" written in cells up to this many tokens per axis


def dropout_heatmap(
    z,
    keep,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str,
    masked=None,
    value_name: str = "attention weight after dropout",
    meaning: str = "",
    value_range: tuple[float, float] | None = None,
    pickable: bool = False,
    style: FigureStyle = DEFAULT_STYLE,
) -> go.Figure:
    """Weights after one dropout draw: dropped cells blank and labelled "dropped".

    Survivors are scaled by 1/(1 − p), so they can pass 1: the scale is then 0 to the largest
    survivor ("nonnegative"), else the weights' 0–1; ``value_range`` overrides it.

    ``keep`` (bool, same shape, True = kept) comes from the draw; ``masked``
    (True = masked) marks the causal mask's future cells, which stay labelled
    "masked" (they are 0 whether or not the draw dropped them). The words fit
    cells up to ``WORD_LABEL_LIMIT`` tokens per axis; up to ``TICK_LIMIT``,
    dropped cells get a cross sized to the cell and future cells stay grey. ``heatmap``'s
    token window and block means apply; block means average the surviving
    weights and carry no marks. ``pickable`` adds a point to click in each cell (``cells.pick_layer``).
    """
    values = np.asarray(z, dtype=np.float64)
    future = np.zeros(values.shape, dtype=bool) if masked is None else np.asarray(masked, dtype=bool)
    dropped = ~np.asarray(keep, dtype=bool) & ~future
    kind = WEIGHTS if infer_kind(values, "weight") == WEIGHTS else NONNEGATIVE
    data, layout, view = heatmap_spec(
        values,
        row_labels,
        col_labels,
        title=title,
        value_name=value_name,
        meaning=meaning,
        kind=kind,
        diverging=False,
        value_range=value_range,
        masked=future | dropped,
        row_title="query",
        col_title="key",
        decimals=2,
        highlight_row=None,
        row_tokens=True,
        col_tokens=True,
        style=style,
    )
    heat = data[0]  # without heatmap's marks: the blank cells are labelled "masked" and "dropped" apart
    heat["meta"]["hidden_value"] = 0.0  # masked and dropped weights are exactly 0
    data = [heat, *_dropout_marks(view, future, dropped, style)]
    return figure(pick_layer(data, layout) if pickable else data, layout)


def _dropout_marks(view: MatrixView, future: np.ndarray, dropped: np.ndarray, style: FigureStyle) -> list[dict]:
    """The words "masked" and "dropped" in small matrices; up to ``TICK_LIMIT`` tokens, a cross in each
    dropped cell; none on block means."""
    if view.block > 1:
        return []
    rows, cols = view.row_positions, view.col_positions
    small = len(rows) <= WORD_LABEL_LIMIT and len(cols) <= WORD_LABEL_LIMIT
    marks = []
    for cells, text, hover in (
        (future, "masked", MASKED_WEIGHT_HOVER),
        (dropped, "dropped", "dropped: dropout set this weight to 0 in this draw"),
    ):
        ii, jj = np.nonzero(cells[np.ix_(rows, cols)])
        if ii.size == 0 or (not small and (text == "masked" or len(rows) > TICK_LIMIT or len(cols) > TICK_LIMIT)):
            continue
        colour = "#333333" if text == "masked" else "#B2182B"
        shown = {"mode": "text", "text": [text] * len(ii), "textfont": {"size": style.label_size, "color": colour}}
        if not small:  # a cross drawn as a marker, sized to the cells, so neighbours never run together
            size = int(np.clip(0.5 * style.max_height / max(len(rows), len(cols)), 4, 14))
            cross = {"symbol": "x-thin", "size": size, "line": {"width": 2, "color": colour}}
            shown = {"mode": "markers", "marker": cross}
        marks.append(
            {
                "type": "scatter",
                "x": [cols[j] for j in jj],
                "y": [rows[i] for i in ii],
                "hovertemplate": f"{hover}<extra></extra>",
                "showlegend": False,
                "name": text,
                **shown,
            }
        )
    return marks
