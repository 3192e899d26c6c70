"""Small Streamlit pieces every page shares: the stepper, the code panel,
charts with exports, and friendly handling of bad input."""

from __future__ import annotations

import csv
import html
import inspect
import io
import json
from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from . import figures, state


def style() -> figures.FigureStyle:
    """The figure style for this session (presenter mode makes everything larger)."""
    return figures.PRESENTER if st.session_state.get("presenter") else figures.DEFAULT_STYLE


def stepper(page: str, steps: Sequence[str]) -> int:
    """Previous / Next buttons (also the ← and → keys) and a step indicator; returns the step index."""
    key = f"step:{page}"
    if key not in st.session_state:
        linked = state.initial_param("step", page)
        start = int(linked) - 1 if linked is not None and linked.isdigit() else 0
        st.session_state[key] = min(max(start, 0), len(steps) - 1)
    st.session_state[key] = min(max(st.session_state[key], 0), len(steps) - 1)

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, 0), len(steps) - 1)

    index = st.session_state[key]
    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    previous.button(
        "Previous",
        key=f"prev:{page}",
        icon=":material/arrow_back:",
        on_click=move,
        args=(-1,),
        disabled=index == 0,
        shortcut="Left",
        width="stretch",
    )
    following.button(
        "Next",
        key=f"next:{page}",
        icon=":material/arrow_forward:",
        icon_position="right",
        on_click=move,
        args=(1,),
        disabled=index == len(steps) - 1,
        shortcut="Right",
        width="stretch",
        type="primary",
    )
    middle.markdown(
        f"<div style='text-align:center'><b>Step {index + 1} of {len(steps)}</b> · {html.escape(steps[index])}</div>",
        unsafe_allow_html=True,
    )
    middle.progress((index + 1) / len(steps))
    state.page_param("step", index + 1)
    return index


def show_code(*objects: Callable | type, title: str = "Show the code") -> None:
    """The package source that computed what is on screen, read with ``inspect.getsource``."""
    with st.expander(title, icon=":material/code:"):
        for obj in objects:
            module = inspect.getmodule(obj)
            where = f"{module.__name__}.{obj.__qualname__}" if module else obj.__qualname__
            st.caption(f"`{where}`")
            st.code(inspect.getsource(obj), language="python")


def chart(fig, name: str, *, key: str | None = None) -> None:
    """Draw a plotly figure with a toolbar that exports PNG at presentation resolution."""
    st.plotly_chart(fig, key=key, config=figures.export_config(name), width="stretch")


def matrix_csv(matrix, row_labels: Sequence[str], col_labels: Sequence[str], corner: str = "") -> str:
    """A matrix as CSV with token labels in the header and the first column."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([corner, *col_labels])
    for label, row in zip(row_labels, np.asarray(matrix), strict=True):
        writer.writerow([label, *(f"{float(v):.6g}" for v in row)])
    return buffer.getvalue()


def step_json(payload: dict) -> str:
    """This step's numbers as JSON (arrays become nested lists; -inf and nan become null)."""

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, np.ndarray | list | tuple):
            return [clean(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
        if isinstance(value, float | np.floating):
            return float(value) if np.isfinite(value) else None
        if isinstance(value, np.integer | np.bool_):
            return value.item()
        return value

    return json.dumps(clean(payload), indent=1, ensure_ascii=False)


def show_error(error: ValueError) -> None:
    """A bad input explained, never a traceback."""
    st.warning(str(error), icon=":material/edit_note:")


def guard(function: Callable, *args, **kwargs):
    """Call ``function``; a ``ValueError`` becomes a friendly warning and stops the page."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        show_error(error)
        st.stop()
