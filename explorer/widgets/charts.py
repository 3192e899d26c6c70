"""Charts, whole: a figure built once and shared by every session that draws it (``shared``), drawn with its
downloads, and its cells made clickable, with the panel that explains the clicked one (issue 25)::

    explained = cells.weights(steps.scaled_scores, pieces, code="attn_weights = torch.softmax(",
                              notation=Notation("attn_weights", scaled=True))
    widgets.draw(figures.heatmap, "weights", z, pieces, pieces, title=..., explain=explained)
    widgets.explain_cell()  # once on the step, where the panel should go

Streamlit reports no selection on a heatmap trace, so the figure gets invisible points, one per cell
(``figures.heatmaps.pick_layer``). A click (``on_pick``) or the picker sets the step's cell: it is outlined, other
panels mark the rows and columns they share with it by name (``Cells.rows``, ``Cells.cols``), its ``Cells.code``
line is marked in "Show the code", and the link carries ``cell=i,j`` (from 1; ``i,j,p`` for the p-th panel)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import numpy as np
import plotly.io as pio
import streamlit as st
from plotly.basedatatypes import BaseFigure

from attention import figures
from attention.figures import figure_alt, figure_tables, figure_title, highlighted_rows
from explorer.runtime.memory import MIB, SharedCache
from explorer.session import (
    cell_key,
    initial_param,
    notice,
    page_param,
    this_run,
)
from explorer.session import figure_style as style
from explorer.settings import parse_cell, quoted
from explorer.widgets import IMAGE_FORMAT, NO_STEP, SCROLL_WIDTHS, csv_download, export_name

FIGURE_ENTRIES = 512  # figures kept; a class on one sentence draws about 100 different ones
FIGURE_BYTES = 64 * MIB  # the numbers of every kept figure together (the figures hold about as much again)
FIGURE_TTL_S = 600.0
FIGURES = SharedCache(FIGURE_BYTES, FIGURE_BYTES // 8, FIGURE_TTL_S)


class EncodedFigure(BaseFigure):
    """A figure that is only its JSON, plus this session's cell marks (``shapes``), for ``st.plotly_chart``, which
    encodes ``to_dict()``: parsing the JSON takes 0.1-0.3 ms, a figure made from it 2-8 ms."""

    def __init__(self, spec: str, shapes: Sequence[dict] = ()) -> None:  # BaseFigure's would build plotly objects
        self._spec, self._shapes = spec, shapes

    def to_dict(self) -> dict:  # a new dict at each call: the chart may change it
        found = json.loads(self._spec)
        if self._shapes:
            found["layout"]["shapes"] = [*found["layout"].get("shapes", []), *self._shapes]
        return found


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A figure ready to draw, kept as JSON (500 kept as plotly objects added 54 ms to a full garbage collection),
    with its numbers for the downloads (``figure_tables``)."""

    spec: str  # plotly's JSON of the figure
    tables: tuple[dict, ...]
    title: str
    alt: str = ""  # its text alternative for screen readers (``figures.figure_alt``)
    readable_width: int = 0  # the width its cell texts need (``figures.readable_width``); a phone scrolls to it


def _frozen(value):
    """Arrays read-only and lists as tuples: what a table keeps is read by every session and written by none."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    return tuple(value) if isinstance(value, list) else value


def prepare(fig, *, cell_text: bool = True) -> Drawn:
    """``fig`` (without the numbers printed in its cells unless ``cell_text``) as JSON, with its export tables."""
    fig = fig if cell_text else figures.without_cell_text(fig)
    tables = tuple({name: _frozen(value) for name, value in table.items()} for table in figure_tables(fig))
    spec = pio.to_json(fig, validate=False)
    title = figure_title(fig)
    alt = figure_alt(title, tables, highlighted_rows(fig))
    return Drawn(spec, tables, title, alt, figures.readable_width(fig))


class UnhashableError(TypeError):
    """An argument ``fingerprint`` cannot digest: the figure is built for this call alone."""


def _feed(digest, value) -> None:
    """Add ``value``'s type and contents to ``digest``."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        digest.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        digest.update(f"array:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.data if array.dtype != object else repr(array.tolist()).encode())
    elif isinstance(value, np.generic):
        _feed(digest, value.item())
    elif isinstance(value, list | tuple) and all(type(item) is str for item in value):  # labels: one update
        digest.update(f"{type(value).__name__}-str:{value!r};".encode())
    elif isinstance(value, list | tuple | range):
        digest.update(f"{type(value).__name__}:{len(value)}[".encode())
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, Mapping) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        fields = () if isinstance(value, Mapping) else dataclasses.fields(value)
        items = value.items() if isinstance(value, Mapping) else [(f.name, getattr(value, f.name)) for f in fields]
        digest.update(f"{type(value).__qualname__}:".encode())
        _feed(digest, list(items))  # (name, value) pairs
    elif callable(value) and hasattr(value, "__qualname__"):
        digest.update(f"callable:{value.__module__}.{value.__qualname__};".encode())
    else:
        raise UnhashableError(f"cannot fingerprint a {type(value).__name__}")


def fingerprint(*values) -> str:
    """A digest of ``values``' contents: equal for equal numbers, labels and options, whatever their origin."""
    digest = hashlib.sha256()  # 2-3 times blake2b's speed here (SHA extensions): 4 MiB of weights in about 1 ms
    for value in values:
        _feed(digest, value)
    return digest.hexdigest()


def shared(builder: Callable, *args, cell_text: bool = True, **options) -> Drawn:
    """``prepare(builder(*args, **options))``, built once for all calls whose arguments have equal contents
    (``fingerprint``), whichever session made them; as JSON, no session can change what another sees."""
    try:
        key = ("figure", fingerprint(builder, args, options, cell_text))
    except UnhashableError:
        return prepare(builder(*args, **options), cell_text=cell_text)
    drawn = FIGURES.get(key)
    if drawn is None:
        drawn = prepare(builder(*args, **options), cell_text=cell_text)
        FIGURES.put(key, drawn, FIGURE_ENTRIES)
    return drawn


# On a touch screen plotly.js selects a tapped point from the last hover (``selectOnClick`` reads
# ``gd._hoverdata``), and a tap has no hover before it: the first tap selected nothing, a later one the cell
# tapped before. A mousemove at the touch point, sent as the finger lands, gives plotly that hover first.
# The sidebar draws it once a page (``widgets.sidebar``): a listener on the document serves every step.
TOUCH_HOVER = """<script>
if (!window.cellTouchHover) {
  window.cellTouchHover = true;
  document.addEventListener('touchstart', (event) => {
    const target = event.target;
    const plot = target instanceof Element && target.classList.contains('nsewdrag');
    if (!plot || !target.closest('.js-plotly-plot')) return;
    const touch = event.touches[0];
    target.dispatchEvent(new MouseEvent('mousemove', {clientX: touch.clientX, clientY: touch.clientY, bubbles: true}));
  }, {capture: true, passive: true});
}
</script>"""
# Where the heatmaps are depends on the page and the screen (beside the panel, or below it on a phone): not said.
HINT = "Click or tap any cell of a heatmap on this step, or pick one here, to see how its number was made."


def _step_key() -> str:
    step = this_run().step or NO_STEP
    return cell_key(step[0], step[1])


def _labels_id(cells) -> int:
    return hash((cells.row_labels, cells.col_labels))


def selection() -> dict | None:
    """This step's selected cell: {"panel", "row", "col", "labels"}, or None."""
    key = _step_key()
    if key not in st.session_state:
        raw = initial_param("cell", (this_run().step or NO_STEP)[0])
        found = parse_cell(raw)
        if raw is not None and found is None:
            notice(f"cell={quoted(raw)} in the link is not a cell such as 2,1 (query 2, key 1); none is selected.")
        st.session_state[key] = None if found is None else {"panel": found[2], "row": found[0], "col": found[1]}
    chosen = st.session_state[key]
    return chosen if isinstance(chosen, dict) else None


def _set(key: str, name: str, row: int, col: int, cells) -> dict:
    """The step's selection; with what its rows and columns are, so a panel drawn before it can mark them."""
    chosen = {"panel": name, "row": row, "col": col, "labels": _labels_id(cells), "axes": (cells.rows, cells.cols)}
    st.session_state[key] = chosen
    return chosen


def _pick_cell(step_key: str, name: str, cells, row: int, col: int | None = None, *numbers: int) -> None:
    """A click or tap on a chart's cell (``on_pick``) becomes the step's selection."""
    if col is not None and 0 <= row < cells.shape[0] and 0 <= col < cells.shape[1]:
        _set(step_key, name, row, col, cells)


def register(name: str, cells) -> dict | None:
    """Add a panel to this run's explainable ones; the step's selection as it applies to it, checked."""
    panels = this_run().cells
    panels.append((name, cells))
    key, chosen = _step_key(), selection()
    if chosen is None:
        return None
    if chosen["panel"] == len(panels):  # from a link: the step's p-th panel
        rows, cols = cells.shape
        if not (1 <= chosen["row"] <= rows and 1 <= chosen["col"] <= cols):
            notice(f"cell={chosen['row']},{chosen['col']} in the link is outside this {rows}×{cols} matrix.")
            st.session_state[key] = None
            return None
        chosen = _set(key, name, chosen["row"] - 1, chosen["col"] - 1, cells)
    if chosen["panel"] != name:
        return chosen
    if chosen.get("labels") != _labels_id(cells):  # a new sentence: start afresh
        st.session_state[key] = None
        return None
    this_run().cell_code = cells.code
    return chosen


@functools.lru_cache(maxsize=64)
def _axes(spec: str) -> dict:
    """What ``figures.cell_marks`` reads of a figure's JSON, read once per shared figure: each heatmap's row
    and column positions and axes, and the pick layers' axes and column offsets (panels side by side)."""
    read = {"heatmap": ("type", "x", "y", "xaxis", "yaxis"), figures.PICK_TRACE: ("name", "xaxis", "yaxis", "meta")}
    traces = [(read.get(t.get("type")) or read.get(t.get("name")), t) for t in json.loads(spec)["data"]]
    return {"data": [{k: t[k] for k in keys if k in t} for keys, t in traces if keys]}


def _marks(spec: str, cells, chosen: dict | None, name: str) -> list[dict]:
    if chosen is None or not isinstance(chosen["panel"], str):
        return []
    row, col = chosen["row"], chosen["col"]
    if chosen["panel"] != name:  # another panel's cell: the same cell, row or column where the names match
        owner = dict(this_run().cells).get(chosen["panel"])
        axes = (owner.rows, owner.cols) if owner is not None else chosen.get("axes")
        if axes is None:  # from a link, and drawn later in this run: its names are not known yet
            return []
        named = {axes[0]: row, axes[1]: col}
        row, col = named.get(cells.rows), named.get(cells.cols)
    return figures.cell_marks(_axes(spec), row=row, col=col)


def _picker_changed(key: str, panels: dict, widgets: tuple[str, str, str]) -> None:
    """The keyboard route: a matrix, row or column picked sets the step's selection; a coordinate not yet
    picked is the current one, clamped, or the first."""
    matrix, row_widget, col_widget = widgets
    name = st.session_state.get(matrix)
    name = name if name in panels else next(iter(panels))
    cells, chosen = panels[name], st.session_state.get(key) or {}
    rows, cols = cells.shape
    row, col = st.session_state.get(row_widget), st.session_state.get(col_widget)
    # A value that is not one of the picker's own (a stale or crafted one: Streamlit hands back any text it
    # cannot match) counts as not picked.
    row = row if isinstance(row, int) and 0 <= row < rows else min(chosen.get("row", 0), rows - 1)
    col = col if isinstance(col, int) and 0 <= col < cols else min(chosen.get("col", 0), cols - 1)
    _set(key, name, row, col, cells)


def explain_cell(where=None) -> None:
    """The step's cell picker and the explanation of its selected cell, in ``where`` (default: the page)."""
    panels = dict(this_run().cells)
    this_run().cell_panels_shown = len(panels)  # checked by ``Steps.show``
    if not panels:
        return
    key, chosen = _step_key(), selection()
    if chosen is not None and chosen["panel"] not in panels:  # a link's panel number this step does not have
        count = f"{len(panels)} {'matrix' if len(panels) == 1 else 'matrices'}"
        notice(f"This step has {count} to pick from, not {chosen['panel']}; no cell is selected.")
        chosen = st.session_state[key] = None
    names = list(panels)
    name = chosen["panel"] if chosen else names[0]
    cells = panels[name]
    widgets = (f"w_{key}:matrix", f"w_{key}:row", f"w_{key}:col")
    row, col = (chosen["row"], chosen["col"]) if chosen else (None, None)
    st.session_state.update({widgets[0]: name, widgets[1]: row, widgets[2]: col})
    changed = {"on_change": _picker_changed, "args": (key, panels, widgets)}
    with (where or st).container(key="cell_panel"):
        if len(panels) > 1:
            st.selectbox("Matrix", names, format_func=lambda k: panels[k].notation.name, key=widgets[0], **changed)
        for column, widget, what, options in zip(
            st.columns(2), widgets[1:], (cells.rows, cells.cols), cells.options, strict=True
        ):
            column.selectbox(
                what.capitalize(),
                range(len(options)),
                format_func=options.__getitem__,  # the options made once (``Cells.options``)
                key=widget,
                placeholder="Pick one",
                **changed,
            )
        if chosen is None:
            st.caption(HINT)
            return
        words, sums = cells.explain(chosen["row"], chosen["col"])
        st.markdown(words)
        if isinstance(sums, str):
            st.code(sums, language=None, wrap_lines=True)
        else:  # two versions of one cell side by side (stacked on a phone)
            for column, (heading, text) in zip(st.columns(len(sums)), sums, strict=True):
                column.markdown(heading)
                column.code(text, language=None, wrap_lines=True)
        number = names.index(name) + 1
        page_param("cell", f"{chosen['row'] + 1},{chosen['col'] + 1}" + (f",{number}" if number > 1 else ""))


def on_pick(key: str, action: Callable[..., None]) -> Callable[[], None]:
    """An ``on_select`` callback for the chart ``key``: ``action(*customdata)`` of the point a click selected, if its
    ``customdata`` is whole numbers (Streamlit reports scatter points, not heatmap cells: its issues 8760 and 15042)."""

    def callback() -> None:
        try:
            values = st.session_state.get(key)["selection"]["points"][0]["customdata"]
        except (KeyError, IndexError, TypeError):
            return
        if isinstance(values, dict):  # the frontend sends a typed array's items as {"0": row, "1": col}
            values = [values.get("0"), values.get("1")]
        if isinstance(values, list | tuple) and values and all(type(v) is int for v in values):
            action(*values)

    return callback


# Charts with their downloads, alone or side by side in columns, in this session's style.


def chart(fig, name: str, *, key: str | None = None) -> None:
    """Draw a plotly figure built for this run, as ``draw`` draws shared ones."""
    _show(prepare(fig), name, key)


@dataclasses.dataclass(frozen=True)
class Panel:
    """A figure to draw beside others: ``builder(*args, **options)`` (a ``figures`` function), shown as ``name``."""

    name: str
    builder: Callable
    args: tuple
    options: dict
    explain: object = None  # ``attention.prose.cells.Cells``: its cells can be picked (``widgets.charts``)


def panel(name: str, builder: Callable, *args, explain=None, share: float = 1.0, **options) -> Panel:
    """A ``Panel`` for ``side_by_side``, in this session's ``style`` unless ``options`` name one; ``share`` is its
    column's share of the page's width (``figures.COLUMN_SHARES``)."""
    if "style" not in options:
        options["style"] = style(share=share)
    if explain is not None:
        options["pickable"] = True
    return Panel(name, builder, args, options, explain)


def side_by_side(*panels: Panel) -> None:
    """Panels in columns, each drawn as ``draw`` draws, in its column's share of the width: a heatmap prints the cell
    values that fit it (hover has them all). An underscore in a name becomes a hyphen in its file name; the key
    keeps it."""
    share = figures.COLUMN_SHARES[len(panels)]
    for column, shown in zip(st.columns(len(panels)), panels, strict=True):
        with column:
            name, key = shown.name.replace("_", "-"), shown.name
            options = shown.options | {"style": dataclasses.replace(shown.options["style"], share=share)}
            draw(shown.builder, name, *shown.args, key=key, explain=shown.explain, **options)


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
    """Draw, keyed by ``key`` or else ``name``, the figure ``builder`` makes in this session's ``style``, built once
    for all sessions (``shared``), with its PNG or SVG and CSV downloads; ``on_select`` is called when a click
    selects a point, and ``explain`` (``attention.prose.cells.Cells``) lets a learner pick its cells."""
    options = panel(name, builder, *args, explain=explain, **options).options
    _show(shared(builder, *args, cell_text=cell_text, **options), name, key or name, on_select, explain)


def _show(drawn: Drawn, name: str, key: str | None, on_select: Callable | None = None, explain=None) -> None:
    state = st.session_state
    file_name = export_name(name)
    config = figures.export_config(file_name, image_format=state.get(IMAGE_FORMAT, "png"))
    marks = []
    if explain is not None:  # a click read back and, once a cell is selected, marked
        marks = _marks(drawn.spec, explain, register(name, explain), name)
        on_select = on_pick(key, partial(_pick_cell, _step_key(), name, explain))
    picks = {} if on_select is None else {"on_select": on_select, "selection_mode": "points"}
    chart = EncodedFigure(drawn.spec, marks)
    this_run().figures.append({"name": name, "title": drawn.title or name, "tables": drawn.tables})
    with phone_scroll(drawn.readable_width, key or name):  # the download inside: a keyboard reaches the scroll
        st.plotly_chart(chart, key=key, config=config, width="stretch", alt=drawn.alt, **picks)
        csv_download(drawn.tables, file_name, key=f"csv:{key or name}")


PHONE_PX = 358  # the width a chart gets on a 390 px phone


def phone_scroll(readable_width: int, key: str):
    """Around a chart whose cell texts need more than a phone's width, and its CSV download (a focusable element, which
    keyboards reach): on a phone the chart keeps that width and scrolls sideways inside itself."""
    if readable_width <= PHONE_PX:
        return contextlib.nullcontext()
    width = next((w for w in SCROLL_WIDTHS if w >= readable_width), SCROLL_WIDTHS[-1])
    return st.container(key=f"scroll{width}_{key}")


def token_vectors(name: str, vectors, pieces: Sequence[str], cols: Sequence[str] | None = None, **options) -> None:
    """One vector per token as a heatmap: token rows, dimension columns ("dim k" unless ``cols``), signed
    values on the diverging scale, 4 decimals as the book prints them up to 4 columns, else 2."""
    dims = np.shape(vectors)[1]
    cols = [f"dim {k}" for k in range(dims)] if cols is None else cols
    shown = dict(row_title="token", col_title=figures.DIMENSION, col_tokens=False, kind="signed")
    shown["value_name"] = "context value"
    draw(figures.heatmap, name, vectors, pieces, cols, **(shown | {"decimals": 4 if dims <= 4 else 2} | options))
