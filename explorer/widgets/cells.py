"""Every number explains itself (issue 25): click, tap or pick a heatmap's cell, and a panel says how it was made.

How a page opts in. Give a heatmap drawn with ``widgets.draw`` or ``widgets.panel`` an ``explain=``, a
``views.cells.Cells`` made from the view's arrays (``views.cells.scores``, ``weights``, ``dropped``,
``masked_weights``, ``renormalized``, ``context``, ``projections``). Then call ``explain_cell(where)`` once
on the step, where the panel should go (under the charts, or in a text column beside them)::

    cells = views.cells.weights(steps.scaled_scores, pieces, code="attn_weights = torch.softmax(",
                                notation=Notation("attn_weights", scaled=True))
    widgets.draw(figures.heatmap, "weights", z, pieces, pieces, title=..., explain=cells)
    widgets.explain_cell()

What happens. The figure gets a layer of invisible points, one per cell (``figures.cells.pick_layer``):
Streamlit reports no selection on a heatmap trace, but does on those points. A click or tap calls
``_picked``, which stores the cell for the page's step; the rerun is the page's fragment, and the view is
cached, so it costs what a Next click costs. The picker (two selectboxes) sets the same state from the
keyboard. Panels of one step share the selection: the chosen cell is outlined, and the rows and columns
other panels share with it by name (``Cells.rows``, ``Cells.cols``: "query", "key", "dim") are marked.
The selected matrix's ``Cells.code`` line is marked in "Show the code" (``code.show_code``), and the
link carries ``cell=i,j`` (from 1, as the book counts; ``i,j,p`` for the step's p-th panel).

A new kind of cell: a function in ``attention.derivations`` that returns a ``Derivation``, its words in
``page_text.cells.explain``, and a constructor in ``views.cells``.
"""

from __future__ import annotations

import json
from functools import partial

import streamlit as st

from explorer import figures
from explorer.parsing import parse_cell, quoted
from explorer.session.links import initial_param, page_param
from explorer.session.notices import notice
from explorer.session.state import CELL_CODE, RUN_CELLS, RUN_STEP
from explorer.widgets.drawn import Drawn, EncodedFigure

HINT = "Click or tap any cell of a heatmap above, or pick one here, to see how its number was made."


def _step_key() -> str:
    page, index, _ = st.session_state.get(RUN_STEP, ("", 0, ""))
    return f"cell:{page}:{index}"


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
    st.session_state[key] = {"panel": name, "row": row, "col": col, "labels": _labels_id(cells)}


def _picked(chart_key: str, step_key: str, name: str, cells) -> None:
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


def _marks(spec: str, cells, chosen: dict | None, name: str) -> list[dict]:
    if chosen is None or not isinstance(chosen["panel"], str):
        return []
    if chosen["panel"] == name:
        return figures.cell_marks(json.loads(spec), row=chosen["row"], col=chosen["col"])
    source = dict(st.session_state.get(RUN_CELLS, []))
    owner = source.get(chosen["panel"])
    if owner is None:  # drawn later in this run: its names are not known yet
        return []
    named = {owner.rows: chosen["row"], owner.cols: chosen["col"]}
    marks = []
    if cells.rows in named:
        marks += figures.cell_marks(json.loads(spec), row=named[cells.rows])
    if cells.cols in named:
        marks += figures.cell_marks(json.loads(spec), col=named[cells.cols])
    return marks


def chart_args(drawn: Drawn, name: str, key: str, cells) -> tuple[EncodedFigure, dict]:
    """What ``st.plotly_chart`` needs for an explainable panel: the figure with the selection marked, and
    the selection callback."""
    chosen = register(name, cells)
    marks = _marks(drawn.spec, cells, chosen, name)
    chart = drawn.chart
    if marks:
        spec = json.loads(drawn.spec)
        spec["layout"]["shapes"] = [*spec["layout"].get("shapes", []), *marks]
        chart = EncodedFigure(json.dumps(spec))
    callback = partial(_picked, key, _step_key(), name, cells)
    return chart, {"on_select": callback, "selection_mode": "points"}


TOKEN_AXES = ("query", "key", "token")  # a picker lists these as tokens counted from 1; others by their names


def _option(labels, tokens: bool, k: int) -> str:
    """A picker's option: a token counted from 1, as the book counts ("2: Your"), or a name ("dim 0")."""
    return f"{k + 1}: {figures.visible_token(labels[k])}" if tokens else str(labels[k])


def _picker_changed(key: str, panels: dict, widgets: tuple[str, str, str]) -> None:
    """The keyboard route: a matrix, row or column picked sets the step's selection; a coordinate not yet
    picked is the current one, clamped, or the first."""
    matrix, row_widget, col_widget = widgets
    name = st.session_state.get(matrix) or next(iter(panels))
    cells, chosen = panels[name], st.session_state.get(key) or {}
    rows, cols = cells.shape
    row = st.session_state.get(row_widget)
    col = st.session_state.get(col_widget)
    row = min(chosen.get("row", 0), rows - 1) if row is None else row
    col = min(chosen.get("col", 0), cols - 1) if col is None else col
    _set(key, name, row, col, cells)


def explain_cell(where=None) -> None:
    """The step's cell picker and the explanation of its selected cell, in ``where`` (default: the page)."""
    panels = dict(st.session_state.get(RUN_CELLS, []))
    if not panels:
        return
    key, chosen = _step_key(), selection()
    if chosen is not None and chosen["panel"] not in panels:
        chosen = None  # a link's panel number this step does not have
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
        for column, widget, what, labels in zip(
            st.columns(2), widgets[1:], (cells.rows, cells.cols), (cells.row_labels, cells.col_labels), strict=True
        ):
            column.selectbox(
                what.capitalize(),
                range(len(labels)),
                format_func=partial(_option, labels, what in TOKEN_AXES),
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
