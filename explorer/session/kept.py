"""State a page keeps across reruns and steps (the inspected head, the query token, a sample count), started
from the link, checked against what a crafted message may have left there, and written into the URL."""

from __future__ import annotations

import streamlit as st

from explorer.parsing import parse_position, quoted
from explorer.session.links import initial_param, page_param
from explorer.session.notices import notice
from explorer.session.state import _WHOLE


def kept_index(key: str, name: str, page: str, *, default: int, count: int) -> int:
    """An index a page keeps across reruns and steps (the inspected head, the query token).

    It starts from the link's ``name`` parameter (or ``default``), lives in plain state under
    ``key`` so that it outlives the widgets that change it, is clamped below ``count``, and is
    written into this run's URL.
    """
    if key not in st.session_state:
        linked = initial_param(name, page, key)
        number = parse_position(linked)
        if linked is not None and number is None:
            notice(f"{name}={quoted(linked)} in the link is not a position; using {default}.")
            number = None
        st.session_state[key] = default if number is None else number
    value = st.session_state[key]
    if not _WHOLE(value) or value < 0:
        notice(f"{name}={quoted(value)} is not a position; using {default}.")
        value = default
    index = st.session_state[key] = max(0, min(value, count - 1))
    page_param(name, index)
    return index


def whole_state(key: str, default: int) -> int:
    """A page's own whole number (>= 1) in ``st.session_state``, or ``default`` with a notice when a
    crafted message left something else there."""
    value = st.session_state.get(key, default)
    if not _WHOLE(value) or value < 1:
        notice(f"{quoted(value)} is not a count; using {default}.")
        value = st.session_state[key] = default
    return value


def kept_widget(key: str, widget: str, default) -> dict:
    """Arguments for a widget whose value is kept under ``key`` while the widget is off screen
    (Streamlit forgets a widget's state when a rerun does not draw it)."""
    value = st.session_state.setdefault(key, default)
    if type(value) is not type(default) and not (_WHOLE(value) and isinstance(default, float)):
        notice(f"{quoted(value)} is not a value this control takes; using {default}.")
        st.session_state[key] = default
    st.session_state[widget] = st.session_state[key]
    return {"key": widget, "on_change": lambda: st.session_state.update({key: st.session_state[widget]})}
