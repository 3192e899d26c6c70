"""Masked cells, drawn grey with what they hold: a legend for the two mask colours and the cells' marks and words."""

from __future__ import annotations

import numpy as np

from .layout import (
    MASK_COLOURS,
    MASKED_FILL,
    TICK_LIMIT,
    FigureStyle,
)
from .scales import (
    SIGNED,
)

MASKED_SCORE_HOVER = "−∞ (masked): this key is in the query's future, so its weight is exactly 0"


MASKED_WEIGHT_HOVER = "0 (masked): this key is in the query's future"


def mask_legend(style: FigureStyle) -> list[dict]:
    """A boolean mask's two colours as two legend entries, in place of a colour bar."""
    names = ("False (0): visible", "True (1): masked, a future key")
    return [
        {
            "type": "scatter",
            "x": [None],
            "y": [None],
            "mode": "markers",
            "marker": {"symbol": "square", "size": style.tick_size, "color": colour},
            "name": name,
            "hoverinfo": "skip",
        }
        for colour, name in zip(MASK_COLOURS, names, strict=True)
    ]


def masked_word(kind: str) -> str:
    """What a masked cell says in small matrices: its score −∞, or that its weight is masked."""
    return "−∞" if kind == SIGNED else "masked"


def masked_legend(style: FigureStyle) -> dict:
    """A legend entry for the grey cells, where the word "masked" does not fit in them."""
    return {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "markers",
        "marker": {"symbol": "square", "size": style.tick_size, "color": MASKED_FILL},
        "name": "masked: a future key",
        "hoverinfo": "skip",
    }


def masked_cells(view, masked_cells, kind: str, style: FigureStyle, words: bool) -> list[dict]:
    """Masked cells stay grey (the plot background shows through); they say what they are on hover,
    and in small matrices the word "masked" (``masked_word``) is written in them."""
    ii, jj = np.nonzero(masked_cells)
    if ii.size == 0 or len(view.row_positions) > TICK_LIMIT or len(view.col_positions) > TICK_LIMIT:
        return []
    x = [view.col_positions[j] for j in jj]
    y = [view.row_positions[i] for i in ii]
    hover = MASKED_SCORE_HOVER if kind == SIGNED else MASKED_WEIGHT_HOVER
    traces = [
        {
            "type": "scatter",
            "x": x,
            "y": y,
            "mode": "markers",
            "marker": {"size": 1, "opacity": 0},
            "hovertemplate": f"{hover}<extra></extra>",
            "showlegend": False,
            "name": "masked cells",
        }
    ]
    if words:
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": y,
                "mode": "text",
                "text": [masked_word(kind)] * len(ii),
                "textfont": {"size": style.label_size, "color": "#333333"},
                "hoverinfo": "skip",
                "showlegend": False,
                "name": "masked",
            }
        )
    return traces
