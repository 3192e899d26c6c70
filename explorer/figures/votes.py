"""The teacher's chart of a live room's votes on a question's choices."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .labels import plain_label
from .layout import DEFAULT_STYLE, SERIES_COLOURS, FigureStyle, axis, figure, figure_height, figure_layout


def vote_bars(choices: Sequence[str], counts: Sequence[int], *, title: str, style: FigureStyle = DEFAULT_STYLE):
    """A class's votes on a question's ``choices``, lettered A, B, … as the presenter lists them: one row per
    choice, top to bottom in the list's order, so that no label runs into another however long it is.

    A choice is shown as it is written (``plain_label``), not as a token: its tokens' whitespace is already
    visible in it."""
    if len(counts) != len(choices):
        raise ValueError(f"{len(counts)} counts for {len(choices)} choices.")
    labels = [f"{chr(65 + k)} · {plain_label(choice)}" for k, choice in enumerate(choices)]
    rows = list(range(len(choices)))
    most = max(counts, default=0)
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "x": list(counts),
            "y": rows,
            "marker": {"color": SERIES_COLOURS[0]},
            "text": [str(n) for n in counts],
            "textposition": "outside",
            "textfont": {"size": style.cell_text_size},
            "hovertext": labels,
            "hovertemplate": "%{hovertext}: %{x} students<extra></extra>",
            "cliponaxis": False,
        }
    ]
    return figure(
        data,
        figure_layout(
            title,
            style,
            figure_height(len(choices), style, extra=2 * style.title_size + 2 * style.tick_size + 40),
            margin={"t": 2 * style.title_size + 12},  # no legend above the bars: the title alone
            showlegend=False,
            yaxis=axis(
                style, None, tickvals=rows, ticktext=labels, autorange="reversed", automargin=True, ticksuffix="  "
            ),
            xaxis=axis(
                style,
                "students",
                range=[0, max(most, 1) * 1.15],
                dtick=max(1, int(np.ceil(max(most, 1) / 5))),
                rangemode="tozero",
            ),
            plot_bgcolor="rgba(0,0,0,0)",
        ),
    )
