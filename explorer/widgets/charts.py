"""Charts with their downloads: a figure built once for every session that draws the same (``drawn``),
drawn with PNG/SVG export and a CSV of its numbers, side by side in columns, in this session's style."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import streamlit as st

from explorer import figures
from explorer.session.keys import PHONE, PRESENTER, RUN_CELLS, RUN_FIGURES, RUN_STEP, TOKEN_WINDOW
from explorer.widgets.cells import NO_STEP, UNREAD, chart_args, picked, step_key
from explorer.widgets.downloads import IMAGE_FORMAT, csv_download, export_name, figure_downloads
from explorer.widgets.drawn import Drawn, prepare, shared


def style() -> figures.FigureStyle:
    """The figure style for this session: presenter mode makes everything larger, a phone its text at least
    16 px, and the sidebar's token window narrows token axes to the tokens chosen there."""
    state = st.session_state
    base = figures.PHONE if state.get(PHONE) else figures.DEFAULT_STYLE
    base = figures.PRESENTER if state.get(PRESENTER) else base
    window = st.session_state.get(TOKEN_WINDOW)
    return dataclasses.replace(base, token_window=window) if window else base


def chart(fig, name: str, *, key: str | None = None, cell_text: bool = True) -> None:
    """Draw a plotly figure built for this run (``draw`` draws shared ones): the toolbar downloads PNG
    (3× resolution) or SVG, named for the view; heatmaps get a CSV download, and the numbers join this
    step's JSON export.

    ``cell_text=False`` drops the numbers printed in cells, for heatmaps drawn too narrow for them.
    """
    show(prepare(fig, cell_text=cell_text), name, key=key)


def show(drawn: Drawn, name: str, *, key: str | None = None) -> None:
    """Draw a prepared figure, with its downloads."""
    figures.layout.pandas_settled()  # st.plotly_chart encodes the figure with plotly's JSON encoder too
    image_format = st.session_state.get(IMAGE_FORMAT, "png")
    file_name = export_name(name)
    config = figures.export_config(file_name, image_format=image_format)
    with phone_scroll(drawn.readable_width, key or name):
        st.plotly_chart(drawn.chart, key=key, config=config, width="stretch", alt=drawn.alt)
        figure_downloads(drawn.tables, drawn.title, name, file_name, key=f"csv:{key or name}")


TEXT_COLUMNS = {1: figures.TEXT_CELL_LIMIT, 2: 8, 3: 4}  # widest heatmap whose cell values fit, by figures per row


@dataclasses.dataclass(frozen=True)
class Panel:
    """A figure to draw beside others: ``builder(*args, **options)`` (a ``figures`` function), shown as ``name``."""

    name: str
    builder: Callable
    args: tuple
    options: dict
    explain: object = None  # ``explorer.cells.Cells``: its cells can be picked (``widgets.cells``)

    def columns(self) -> int:
        """How many columns of cells the panel's heatmap shows (0 for any other figure): its matrix's,
        or those inside the token window when its columns are tokens (``figures.fit_matrix``)."""
        if self.builder is not figures.heatmap:
            return 0
        columns, window = int(np.shape(self.args[0])[1]), self.options["style"].token_window
        if window is not None and self.options.get("col_tokens", True):
            columns = len(range(columns)[window[0] : window[1]])
        return columns


def panel(name: str, builder: Callable, *args, explain=None, **options) -> Panel:
    """A ``Panel`` for ``side_by_side``, in this session's ``style`` unless ``options`` name one; ``explain``
    (``explorer.cells.Cells``) lets a learner pick its cells."""
    if "style" not in options:
        options["style"] = style()
    if explain is not None:
        options["pickable"] = True
    return Panel(name, builder, args, options, explain)


def side_by_side(*panels: Panel) -> None:
    """Panels in columns, each drawn as ``draw`` draws. A heatmap too wide for its column loses its cell values
    (hover still has them). An underscore in a name becomes a hyphen in its file name; the key keeps it."""
    widest = TEXT_COLUMNS[len(panels)]
    for column, shown in zip(st.columns(len(panels)), panels, strict=True):
        with column:
            name, key = shown.name.replace("_", "-"), shown.name
            cell_text = shown.columns() <= widest
            draw(shown.builder, name, *shown.args, key=key, cell_text=cell_text, explain=shown.explain, **shown.options)


def draw(
    builder: Callable,
    name: str,
    *args,
    key: str | None = None,
    cell_text: bool = True,
    on_select: Callable | None = None,
    explain=None,
    **options,
) -> None:
    """Draw the figure ``builder`` (a ``figures`` function) makes in this session's ``style``, keyed by ``key``
    or else ``name``, with its downloads; ``on_select`` is called when a click selects a point
    (``widgets.cells``), and ``explain`` (``explorer.cells.Cells``) lets a learner pick its cells
    (``widgets.cells``).

    The figure is built once for every session that draws the same (``shared``): a Next click back to a step
    finds its figures by their contents, and builds none."""
    if "style" not in options:
        options["style"] = style()
    if explain is not None:
        options["pickable"] = True
    key = key or name
    state = st.session_state
    drawn = shared(builder, *args, cell_text=cell_text, **options)
    file_name = export_name(name)
    config = figures.export_config(file_name, image_format=state.get(IMAGE_FORMAT, "png"))
    download = csv_download(drawn.tables, file_name, key=f"csv:{key}")
    if not figures.layout.PANDAS_SETTLED:
        figures.layout.pandas_settled()  # st.plotly_chart encodes the figure with plotly's JSON encoder too
    chart, picks = drawn.chart, {}
    if on_select is not None:
        picks = {"on_select": on_select, "selection_mode": "points"}
    if explain is not None:  # a click read back and, once a cell is selected, marked (``widgets.cells``)
        cell_key = step_key(state.get(RUN_STEP, NO_STEP))
        if state.get(cell_key, UNREAD) is None:  # no cell selected on this step: nothing to mark or check
            state.setdefault(RUN_CELLS, []).append((name, explain))
            picks = {"on_select": partial(picked, key, cell_key, name, explain), "selection_mode": "points"}
        else:
            chart, picks = chart_args(drawn, name, key, explain)
    state.setdefault(RUN_FIGURES, []).append({"name": name, "title": drawn.title or name, "tables": drawn.tables})
    with phone_scroll(drawn.readable_width, key):  # the download inside: a keyboard reaches the scrolled area
        st.plotly_chart(chart, key=key, config=config, width="stretch", alt=drawn.alt, **picks)
        if download is not None:
            st.download_button(**download)


PHONE_PX = 358  # the width a chart gets on a 390 px phone
SCROLL_WIDTHS = (480, 560, 640, 720, 800, 960, 1120, 1280, 1600, 2000)  # the widths css.BASE_CSS knows


def phone_scroll(readable_width: int, key: str):
    """Around a chart whose cell texts need more than a phone's width, and its CSV download: on a phone the chart
    keeps that width and scrolls sideways inside itself, under a hint (``css.BASE_CSS``); on a wider screen
    nothing changes. The download is a focusable element in the scrolled area, which keyboards reach."""
    if readable_width <= PHONE_PX:
        return contextlib.nullcontext()
    width = next((w for w in SCROLL_WIDTHS if w >= readable_width), SCROLL_WIDTHS[-1])
    return st.container(key=f"scroll{width}_{key}")


def token_vectors(name: str, vectors, pieces: Sequence[str], cols: Sequence[str] | None = None, **options) -> None:
    """One vector per token as a heatmap: token rows, dimension columns ("dim k" unless ``cols``), signed
    values on the diverging scale, 4 decimals as the book prints them up to 4 columns, else 2."""
    dims = np.shape(vectors)[1]
    cols = [f"dim {k}" for k in range(dims)] if cols is None else cols
    shown = dict(row_title="token", col_title="dimension", col_tokens=False, diverging=True, value_name="context value")
    shown.update(decimals=4 if dims <= 4 else 2)
    shown.update(options)
    draw(figures.heatmap, name, vectors, pieces, cols, **shown)
