"""Every number explains itself (issue 25): click, tap or pick a heatmap's cell, and a panel says how it was made.

How a page opts in. Give a heatmap drawn with ``widgets.draw`` or ``widgets.panel`` an ``explain=``, a
``explorer.cells.Cells`` made in the step from the view's arrays (``explorer.cells.scores``, ``weights``, ``dropped``,
``masked_weights``, ``renormalized``, ``context``, ``projections``). Then call ``explain_cell(where)`` once
on the step, where the panel should go (under the charts, or in a text column beside them)::

    cells = explorer.cells.weights(steps.scaled_scores, pieces, code="attn_weights = torch.softmax(",
                                notation=Notation("attn_weights", scaled=True))
    widgets.draw(figures.heatmap, "weights", z, pieces, pieces, title=..., explain=cells)
    widgets.explain_cell()

What happens. The figure gets a layer of invisible points, one per cell (``figures.heatmaps.pick_layer``):
Streamlit reports no selection on a heatmap trace, but does on those points. A click or tap calls
``picked``, which stores the cell for the page's step; the rerun is the page's fragment, and the view is
cached, so it costs what a Next click costs. The picker (two selectboxes) sets the same state from the
keyboard. Panels of one step share the selection: the chosen cell is outlined, and the rows and columns
other panels share with it by name (``Cells.rows``, ``Cells.cols``: "query", "key", "dim") are marked.
The selected matrix's ``Cells.code`` line is marked in "Show the code" (``code.show_code``), and the
link carries ``cell=i,j`` (from 1, as the book counts; ``i,j,p`` for the step's p-th panel).

A new kind of cell: a function in ``attention.derivations`` that returns a ``Derivation``, then its words and
its constructor, side by side, in ``explorer.cells``.

Clicks on any chart end in ``on_pick`` (at the end of this module), which turns the points a click selects
into a call of the chart's handler.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from functools import partial

import streamlit as st

from explorer import figures
from explorer.parsing import parse_cell, quoted
from explorer.session.keys import CELL_CODE, CELL_PANELS_SHOWN, RUN_CELLS, RUN_STEP, cell_key
from explorer.session.state import initial_param, notice, page_param
from explorer.widgets.drawn import Drawn, EncodedFigure

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


NO_STEP = ("", 0, "")  # RUN_STEP on a page without steps
UNREAD = object()  # a step's selection not read yet (from the link, by ``selection``)


@functools.lru_cache(maxsize=256)
def step_key(step: tuple[str, int, str]) -> str:
    """The session-state key of the selection of ``step`` (RUN_STEP: page, index, title)."""
    return cell_key(step[0], step[1])


def _step_key() -> str:
    return step_key(st.session_state.get(RUN_STEP, NO_STEP))


def _labels_id(cells) -> int:
    return hash((cells.row_labels, cells.col_labels))


def selection() -> dict | None:
    """This step's selected cell: {"panel", "row", "col", "labels"}, or None."""
    key = _step_key()
    if key not in st.session_state:
        page = st.session_state.get(RUN_STEP, ("",))[0]
        raw = initial_param("cell", page)
        found = parse_cell(raw)
        if raw is not None and found is None:
            notice(f"cell={quoted(raw)} in the link is not a cell such as 2,1 (query 2, key 1); none is selected.")
        st.session_state[key] = None if found is None else {"panel": found[2], "row": found[0], "col": found[1]}
    chosen = st.session_state[key]
    return chosen if isinstance(chosen, dict) else None


def _set(key: str, name: str, row: int, col: int, cells) -> None:
    """The step's selection; with what its rows and columns are, so a panel drawn before it can mark them."""
    chosen = {"panel": name, "row": row, "col": col, "labels": _labels_id(cells), "axes": (cells.rows, cells.cols)}
    st.session_state[key] = chosen


def picked(chart_key: str, step_key: str, name: str, cells) -> None:
    """A click or tap on a chart's cell: keep it as the step's selection (an empty event, a click that
    unselects, keeps the one there is)."""
    event = st.session_state.get(chart_key) or {}
    points = (event.get("selection") or {}).get("points") or []
    custom = points[0].get("customdata") if points else None
    if isinstance(custom, dict):  # the frontend sends a typed array's items as {"0": row, "1": col}
        custom = [custom.get("0"), custom.get("1")]
    if not isinstance(custom, list | tuple) or len(custom) < 2:
        return
    row, col = custom[0], custom[1]
    if isinstance(row, int) and isinstance(col, int) and 0 <= row < cells.shape[0] and 0 <= col < cells.shape[1]:
        _set(step_key, name, row, col, cells)


def register(name: str, cells) -> dict | None:
    """Add a panel to this run's explainable ones; the step's selection as it applies to it, checked."""
    panels = st.session_state.setdefault(RUN_CELLS, [])
    panels.append((name, cells))
    chosen = selection()
    if chosen is None:
        return None
    if chosen["panel"] == len(panels):  # from a link: the step's p-th panel
        rows, cols = cells.shape
        if not (1 <= chosen["row"] <= rows and 1 <= chosen["col"] <= cols):
            notice(f"cell={chosen['row']},{chosen['col']} in the link is outside this {rows}×{cols} matrix.")
            st.session_state[_step_key()] = None
            return None
        _set(_step_key(), name, chosen["row"] - 1, chosen["col"] - 1, cells)
        chosen = selection()
    if chosen["panel"] == name and chosen.get("labels") != _labels_id(cells):  # a new sentence: start afresh
        st.session_state[_step_key()] = None
        return None
    if chosen["panel"] == name:
        st.session_state[CELL_CODE] = cells.code
    return chosen


class MarkedFigure(EncodedFigure):
    """A shared figure's JSON with this session's marks added as ``st.plotly_chart`` reads it: the JSON is
    parsed once, as for any figure, and never written again."""

    def __init__(self, spec: str, shapes: list[dict]) -> None:
        self._spec, self._shapes = spec, shapes

    def to_dict(self) -> dict:
        found = json.loads(self._spec)
        found["layout"]["shapes"] = [*found["layout"].get("shapes", []), *self._shapes]
        return found


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
    if chosen["panel"] == name:
        return figures.cell_marks(_axes(spec), row=chosen["row"], col=chosen["col"])
    owner = dict(st.session_state.get(RUN_CELLS, [])).get(chosen["panel"])
    axes = (owner.rows, owner.cols) if owner is not None else chosen.get("axes")
    if axes is None:  # from a link, and drawn later in this run: its names are not known yet
        return []
    named = {axes[0]: chosen["row"], axes[1]: chosen["col"]}
    row, col = named.get(cells.rows), named.get(cells.cols)
    if row is not None and col is not None:  # the same cell of another matrix of the same shape
        return figures.cell_marks(_axes(spec), row=row, col=col)
    return figures.cell_marks(_axes(spec), row=row) + figures.cell_marks(_axes(spec), col=col)


def chart_args(drawn: Drawn, name: str, key: str, cells) -> tuple[EncodedFigure, dict]:
    """What ``st.plotly_chart`` needs for an explainable panel: the figure with the selection marked, and
    the selection callback."""
    chosen = register(name, cells)
    marks = _marks(drawn.spec, cells, chosen, name)
    chart = MarkedFigure(drawn.spec, marks) if marks else drawn.chart
    callback = partial(picked, key, _step_key(), name, cells)
    return chart, {"on_select": callback, "selection_mode": "points"}


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
    panels = dict(st.session_state.get(RUN_CELLS, []))
    st.session_state[CELL_PANELS_SHOWN] = len(st.session_state.get(RUN_CELLS, []))  # checked by ``Steps.show``
    if not panels:
        return
    key = step_key(st.session_state.get(RUN_STEP, NO_STEP))
    chosen = st.session_state.get(key, UNREAD)
    chosen = selection() if chosen is UNREAD or chosen is not None else None
    if chosen is not None and chosen["panel"] not in panels:  # a link's panel number this step does not have
        count = f"{len(panels)} {'matrix' if len(panels) == 1 else 'matrices'}"
        notice(f"This step has {count} to pick from, not {chosen['panel']}; no cell is selected.")
        chosen = st.session_state[key] = None
    names = list(panels)
    name = chosen["panel"] if chosen else names[0]
    cells = panels[name]
    widgets = (f"w_{key}:matrix", f"w_{key}:row", f"w_{key}:col")
    st.session_state[widgets[0]] = name
    st.session_state[widgets[1]] = chosen["row"] if chosen else None
    st.session_state[widgets[2]] = chosen["col"] if chosen else None
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


# Clicks on a chart: ``st.plotly_chart(on_select=...)`` reports the points a click selects, and this module
# reads them. Written for Streamlit 1.67, whose selection reports scatter points (with their ``customdata``)
# but nothing for heatmap cells (streamlit issues 8760 and 15042): a figure that wants clicks on a heatmap puts
# a transparent scatter point where a click should land (``figures.charts``).
#
# A point comes from the browser, so a crafted message can hold anything: ``picked_point`` returns only whole
# numbers, and the callback's settings path validates them again.


def picked_point(key: str) -> tuple[int, ...] | None:
    """The ``customdata`` of the first point selected in the chart ``key``, if it is a list of whole numbers."""
    event = st.session_state.get(key)
    try:
        points = event["selection"]["points"]
        values = tuple(points[0]["customdata"])
    except (KeyError, IndexError, TypeError):
        return None
    if not values or not all(type(v) is int for v in values):
        return None
    return values


def on_pick(key: str, action: Callable[..., None]) -> Callable[[], None]:
    """An ``on_select`` callback for the chart ``key``: ``action(*customdata)`` of the point a click selected;
    nothing when a click selected no point (a second click on the same point clears the selection)."""

    def callback() -> None:
        values = picked_point(key)
        if values is not None:
            action(*values)

    return callback
