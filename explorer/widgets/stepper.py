"""The stepper: Previous and Next (the ← and → keys, and a presentation clicker's PageUp and PageDown),
the step's title and progress, and the step number kept in the URL. A student who follows a live room gets the
title and progress alone: the teacher moves their steps."""

from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st

from explorer.parsing import parse_position, quoted
from explorer.session import room
from explorer.session.links import initial_param
from explorer.session.notices import notice
from explorer.session.state import RUN_STEP

# display: none takes the clicker buttons out of the layout, the tab order and the accessibility
# tree, so screen readers do not read them; their keyboard shortcuts still work.
CLICKER_CSS = """<style>
[class*="st-key-clicker_"] {display: none;}
</style>"""


def stepper(page: str, steps: Sequence[str]) -> int:
    """Previous / Next buttons and a step indicator; returns the step index.

    The ← and → keys press Previous and Next; PageUp and PageDown, which
    presentation clickers send, do the same.
    """
    key = f"step:{page}"
    if key not in st.session_state:
        linked = initial_param("step", page, key)
        start = (parse_position(linked) or 1) - 1
        if linked is not None and parse_position(linked) is None:
            notice(f"step={quoted(linked)} in the link is not a step number; starting at step 1.")
        st.session_state[key] = min(max(start, 0), len(steps) - 1)
    st.session_state[key] = min(max(st.session_state[key], 0), len(steps) - 1)

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, 0), len(steps) - 1)

    index = st.session_state[key]
    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    if not room.following():  # a student who follows the room gets the teacher's steps, and no buttons or keys
        _buttons(page, index, len(steps), move, previous, following)
    middle.markdown(
        f"<div style='text-align:center'><b>Step {index + 1} of {len(steps)}</b> · {html.escape(steps[index])}</div>",
        unsafe_allow_html=True,
    )
    middle.progress((index + 1) / len(steps))
    st.session_state[RUN_STEP] = (page, index, steps[index])  # the link's step (``finish_run``) and file names
    return index


def _buttons(page: str, index: int, count: int, move, previous, following) -> None:
    """Previous and Next in their columns, with their keys, and the clicker's two hidden buttons."""
    # No arrow icons: Streamlit already shows each shortcut (← and →) beside the label.
    previous.button(
        "Previous",
        key=f"prev:{page}",
        on_click=move,
        args=(-1,),
        disabled=index == 0,
        shortcut="Left",
        width="stretch",
    )
    following.button(
        "Next",
        key=f"next:{page}",
        on_click=move,
        args=(1,),
        disabled=index == count - 1,
        shortcut="Right",
        width="stretch",
        type="primary",
    )
    # Presentation clickers send PageDown/PageUp: two more shortcuts, on buttons kept off screen.
    st.html(CLICKER_CSS)
    for name, delta, shortcut in (("clicker_next", 1, "PageDown"), ("clicker_prev", -1, "PageUp")):
        st.button(f"{name} {page}", key=f"{name}_{page}", on_click=move, args=(delta,), shortcut=shortcut)
