"""A student who follows a live room: each run reads the room (``read``) and, when the teacher moved, makes
the move. A student who follows is on the Live room page (``LIVE``), where the page's fragment draws the
teacher's page, so that a teacher's move to another step or page reruns only that fragment; a move that
changes the settings reruns the whole app, whose sidebar shows them."""

from __future__ import annotations

from collections.abc import Collection

import streamlit as st

from explorer.runtime.rooms import LIVE, RoomFullError, RoomGoneError, room_store, wakener
from explorer.session.keys import APPLIED, SEEN, STUDENT
from explorer.session.room import (
    HIDDEN_PARAMS,
    code,
    following,
    is_student,
    leave,
    session_id,
)
from explorer.session.state import open_link
from explorer.settings import from_query_params

SIDEBAR_PARAMS = ("win",)  # drawn in the sidebar besides the settings: a move that changes them reruns the app


def read(url_path: str) -> None:
    """A student's run on ``url_path``: enrol with this process's wakener (which heartbeats) and read the room
    when its version changed since this session's last read; a run the wakener started reads the room as the
    wakener read it for the whole class."""
    state, store = st.session_state, room_store()
    seen = state.get(SEEN)
    try:
        delivered = None
        if session_id() is not None:
            wakener().enrol(session_id(), code(), state[STUDENT], following(), url_path)
            delivered = wakener().delivered(session_id(), code())
        else:
            store.heartbeat(code(), state[STUDENT], following())
        if delivered is not None:
            if seen is not None and seen[0] >= delivered.version:  # this session has read a newer one since
                return
            snapshot = delivered
        else:
            version = store.version(code())
            if seen is not None and seen[0] == version:
                return
            snapshot = store.snapshot(code())
    except (RoomGoneError, RoomFullError) as error:
        leave(str(error))
        return
    state[SEEN] = (snapshot.version, snapshot.position, snapshot.revealed)


def due() -> dict | None:
    """The teacher's position when this student follows and has not arrived there yet."""
    seen = st.session_state.get(SEEN)
    if not following() or seen is None or seen[1] is None or st.session_state.get(APPLIED) == seen[1]:
        return None
    return seen[1]


def arrive(url_path: str, pages: Collection[str]) -> tuple[str, dict[str, str]] | None:
    """A student's run, before any widget is drawn: read the room, and when following, be where the teacher
    is. A student who follows is on the Live room page (``LIVE``), which draws the teacher's page: there this
    opens the teacher's link; elsewhere it returns (``LIVE``, the teacher's link) to switch to first, also when
    the student opened another page from the navigation (only "On my own" lets a student explore). A
    student who stopped following on the Live room page gets (the page it showed, the link it had), to stay
    on that view on the page itself. ``pages`` are the app's URL paths.

    The move counts as made only here, in a run on the Live room page: a switch that Streamlit dropped is
    made again by the next run."""
    if not is_student():
        return None
    read(url_path)
    if url_path == LIVE and not following():
        shown = live_page()
        if shown is None or shown not in pages:
            return None
        return shown, {k: v for k, v in st.query_params.to_dict().items() if k not in HIDDEN_PARAMS}
    position = due()
    if url_path != LIVE and LIVE in pages and following():  # a link to another page: back to the teacher's
        seen = st.session_state.get(SEEN)
        position = position or (seen and seen[1])
    if position is None or position["page"] not in pages:
        return None
    if url_path != LIVE and LIVE in pages:
        return LIVE, position["params"]
    open_link(position["params"])
    st.session_state[APPLIED] = position
    return None


def live_page() -> str | None:
    """The URL path of the teacher's page the Live room page shows this student (None: none yet)."""
    applied = st.session_state.get(APPLIED) if is_student() else None
    return applied and applied["page"]


def sidebar_differs(old: dict[str, str], new: dict[str, str]) -> bool:
    """Whether two links differ in what the sidebar draws (the settings, the token window), so that moving
    from one to the other needs the whole app's run. A page's own parameters (its step, cell, query token,
    head) are drawn in the page alone."""
    if any(old.get(k) != new.get(k) for k in SIDEBAR_PARAMS):
        return True
    return from_query_params(old)[0] != from_query_params(new)[0]


def arrive_in_page(url_path: str) -> bool:
    """A student's run of the page alone (the wakener reruns only the page when it can): make a move that
    the page alone draws here (another step; on the Live room page, another page too), and return False;
    return True when the move needs the whole app's run (other settings: the sidebar must show them)."""
    if not is_student():
        return False
    read(url_path)
    position, applied = due(), st.session_state.get(APPLIED)
    if position is None:
        return False
    if applied is None:
        return True
    if url_path != LIVE and (position["page"] != url_path or applied["page"] != url_path):
        return True
    if sidebar_differs(applied["params"], position["params"]):
        return True
    open_link(position["params"])
    st.session_state[APPLIED] = position
    return False
