"""Charts with their downloads: a figure built once for every session that draws the same (``drawn``),
drawn with PNG/SVG export and a CSV of its numbers, side by side in columns, in this session's style."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from explorer import figures
from explorer.widgets.cells import chart_args
from explorer.widgets.downloads import IMAGE_FORMAT, export_name, figure_downloads
from explorer.widgets.drawn import Drawn, prepare, shared


def style() -> figures.FigureStyle:
    """The figure style for this session: presenter mode makes everything larger, and
    the sidebar's token window narrows token axes to the tokens chosen there."""
    base = figures.PRESENTER if st.session_state.get("presenter") else figures.DEFAULT_STYLE
    window = st.session_state.get("token_window")
    return dataclasses.replace(base, token_window=window) if window else base


def chart(fig, name: str, *, key: str | None = None, cell_text: bool = True) -> None:
    """Draw a plotly figure built for this run (``draw`` draws shared ones): the toolbar downloads PNG
    (3× resolution) or SVG, named for the view; heatmaps get a CSV download, and the numbers join this
    step's JSON export.

    ``cell_text=False`` drops the numbers printed in cells, for heatmaps drawn too narrow for them.
    """
    show(prepare(fig, cell_text=cell_text), name, key=key)


def show(drawn: Drawn, name: str, *, key: str | None = None, explain=None) -> None:
    """Draw a prepared figure, with its downloads; ``explain`` (``views.cells.Cells``) lets a learner pick
    its cells (``widgets.cells``)."""
    figures.layout.pandas_settled()  # st.plotly_chart encodes the figure with plotly's JSON encoder too
    image_format = st.session_state.get(IMAGE_FORMAT, "png")
    file_name = export_name(name)
    config = figures.export_config(file_name, image_format=image_format)
    chart, picking = (drawn.chart, {}) if explain is None else chart_args(drawn, name, key or name, explain)
    st.plotly_chart(chart, key=key, config=config, width="stretch", **picking)
    figure_downloads(drawn.tables, drawn.title, name, file_name, key=f"csv:{key or name}")


TEXT_COLUMNS = {1: figures.TEXT_CELL_LIMIT, 2: 8, 3: 4}  # widest heatmap whose cell values fit, by figures per row


@dataclasses.dataclass(frozen=True)
class Panel:
    """A figure to draw beside others: ``builder(*args, **options)`` (a ``figures`` function), shown as ``name``."""

    name: str
    builder: Callable
    args: tuple
    options: dict
    explain: object = None  # ``views.cells.Cells``: its cells can be picked (``widgets.cells``)

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
    (``views.cells.Cells``) lets a learner pick its cells."""
    options.setdefault("style", style())
    if explain is not None:
        options["pickable"] = True
    return Panel(name, builder, args, options, explain)


def side_by_side(*panels: Panel) -> None:
    """Panels in columns, each built once for every session that draws the same (``draw``). A heatmap too
    wide for its column loses its cell values (hover still has them). An underscore in a name becomes a
    hyphen in its file name; the key keeps it."""
    widest = TEXT_COLUMNS[len(panels)]
    for column, shown in zip(st.columns(len(panels)), panels, strict=True):
        with column:
            cell_text = shown.columns() <= widest
            drawn = shared(shown.builder, *shown.args, cell_text=cell_text, **shown.options)
            show(drawn, shown.name.replace("_", "-"), key=shown.name, explain=shown.explain)


def draw(
    builder: Callable, name: str, *args, key: str | None = None, cell_text: bool = True, explain=None, **options
) -> None:
    """Draw the figure ``builder`` (a ``figures`` function) makes in this session's ``style``, keyed by ``key``
    or else ``name``. The figure is built once for every session that draws the same (``shared_figures``).
    ``explain`` (``views.cells.Cells``) lets a learner pick its cells (``widgets.cells``)."""
    options.setdefault("style", style())
    if explain is not None:
        options["pickable"] = True
    show(shared(builder, *args, cell_text=cell_text, **options), name, key=key or name, explain=explain)


def token_vectors(name: str, vectors, pieces: Sequence[str], cols: Sequence[str] | None = None, **options) -> None:
    """One vector per token as a heatmap: token rows, dimension columns ("dim k" unless ``cols``), signed
    values on the diverging scale, 4 decimals as the book prints them up to 4 columns, else 2."""
    dims = np.shape(vectors)[1]
    cols = [f"dim {k}" for k in range(dims)] if cols is None else cols
    shown = dict(row_title="token", col_title="dimension", col_tokens=False, diverging=True, value_name="context value")
    shown.update(decimals=4 if dims <= 4 else 2)
    shown.update(options)
    draw(figures.heatmap, name, vectors, pieces, cols, **shown)
