"""One visitor's part in a live room: the teacher who opened it, or a student who joined with ``?room=CODE``.

The teacher's session alone holds the room's token; each of its runs publishes where it is (the page and the
link's parameters) when that changed. A student's session holds the code and an anonymous id; how its runs
follow the teacher is ``session.live``'s. Students vote on questions; only the token reveals.
"""

from __future__ import annotations

import contextlib
import re
import secrets

import streamlit as st

from explorer.runtime import patches
from explorer.runtime.rooms import RoomFullError, RoomGoneError, normal_code, room_store, wakener
from explorer.runtime.rooms.store import IDLE_SECONDS
from explorer.session.keys import (
    APPLIED,
    CODE,
    COOKIE_HELD,
    FOLLOWING,
    MESSAGE,
    PUBLISHED,
    ROOM_COOKIE_READ,
    ROOM_LINK_READ,
    SEEN,
    STUDENT,
    TOKEN,
    VOTER_HELD,
)
from explorer.session.links import initial_param
from explorer.session.notices import notice

TEACHER_COOKIE = "explorer_room"  # "CODE.TOKEN" in the teacher's browser: a new session takes the room back
VOTER_COOKIE = "explorer_voter"  # a student's anonymous id in their browser: a reload or a new tab votes as them
VOTER_SECONDS = 24 * 3600  # how long the browser keeps it; it moves nothing and reveals nothing
_VOTER_ID = re.compile(r"[0-9a-f]{16}")  # what ``secrets.token_hex(8)`` makes; anything else is ignored
HIDDEN_PARAMS = ("present", "room")  # the teacher's presenter mode and room are not the students'


def code() -> str | None:
    return st.session_state.get(CODE)


def is_teacher() -> bool:
    return bool(st.session_state.get(TOKEN)) and code() is not None


def is_student() -> bool:
    return code() is not None and not st.session_state.get(TOKEN)


def following() -> bool:
    return is_student() and bool(st.session_state.get(FOLLOWING))


def session_id() -> str | None:
    return patches.session_id()


def leave(message: str) -> None:
    """Leave the room, saying why; the student's sentence and settings stay as they are."""
    for key in (CODE, TOKEN, FOLLOWING, SEEN, APPLIED, PUBLISHED):
        st.session_state.pop(key, None)
    st.session_state[MESSAGE] = message
    if session_id() is not None:
        wakener().leave(session_id())


def open_room() -> None:
    """Open a room with this session as its teacher (a button's ``on_click``)."""
    try:
        st.session_state[CODE], st.session_state[TOKEN] = room_store().create()
    except RoomFullError as error:
        st.session_state[MESSAGE] = str(error)
        return
    st.session_state.pop(PUBLISHED, None)
    st.session_state.pop(MESSAGE, None)


def close_room() -> None:
    """This teacher stops using the room; its students find it until it expires."""
    for key in (CODE, TOKEN, PUBLISHED):
        st.session_state.pop(key, None)


def join_from_link() -> None:
    """Join the room the link names (``?room=CODE``), once per session."""
    if st.session_state.get(ROOM_LINK_READ):
        return
    st.session_state[ROOM_LINK_READ] = True
    linked = initial_param("room", "any")
    if linked is None:
        return
    joined = normal_code(linked)
    if joined is None:
        st.session_state[MESSAGE] = f"room={linked[:20]!r} in the link is not a room code (5 letters and digits)."
        return
    st.session_state[CODE] = joined
    st.session_state[VOTER_HELD] = saved_voter()
    st.session_state[STUDENT] = st.session_state.get(STUDENT) or st.session_state[VOTER_HELD] or secrets.token_hex(8)
    follow(True)


def saved_voter() -> str | None:
    """The student's anonymous id as their browser sent it when this session connected (None: none)."""
    return voter_id(st.context.cookies.get(VOTER_COOKIE))


def voter_id(saved: object) -> str | None:
    """``saved`` if it is an id this app makes, else None. An edited cookie can at most make the student
    another anonymous voter: it holds no token, so it cannot move the room or reveal."""
    return saved if isinstance(saved, str) and _VOTER_ID.fullmatch(saved) else None


def voter_cookie_due() -> str | None:
    """The student's id for their browser to keep, while the browser did not send it (None: nothing to write).
    Written on each of the session's runs until then: a run cut short by a move must not lose it."""
    if not is_student() or st.session_state.get(VOTER_HELD) == st.session_state.get(STUDENT):
        return None
    return st.session_state.get(STUDENT)


def saved_teacher() -> str | None:
    """The teacher's cookie as the browser sent it when this session connected."""
    saved = st.context.cookies.get(TEACHER_COOKIE)
    return saved if isinstance(saved, str) else None  # (a test's AppTest has no browser, and no cookies)


def resume_teacher(presenting: bool) -> bool:
    """Once per session, in presenter mode and without a room in the link: take back the room whose token the
    browser kept, after the app's process restarted or the tab was reloaded. Returns True when it did."""
    state = st.session_state
    if state.get(ROOM_COOKIE_READ):
        return False
    state[ROOM_COOKIE_READ] = True
    saved = saved_teacher()
    state[COOKIE_HELD] = saved
    if not saved or code() is not None or not presenting:
        return False
    saved_code, _, token = saved.partition(".")
    try:
        if normal_code(saved_code) != saved_code or not room_store().is_teacher(saved_code, token):
            return False
    except RoomGoneError:
        state[MESSAGE] = (
            f"Room {saved_code} is no longer open: the server restarted without a shared store, or the room was idle "
            f"for {IDLE_SECONDS // 3600} hours. Open a new one from the sidebar."
        )
        return False
    state[CODE], state[TOKEN] = saved_code, token
    return True


def cookie_due() -> str | bool | None:
    """What the teacher's browser should hold now, when it differs from what it holds: "CODE.TOKEN", or None to
    forget a closed room; False when nothing is to be written."""
    want = f"{code()}.{st.session_state[TOKEN]}" if is_teacher() else None
    if want == st.session_state.get(COOKIE_HELD):
        return False
    st.session_state[COOKIE_HELD] = want
    return want


def follow(on: bool) -> None:
    """Follow the teacher (on) or explore on one's own; following again moves to where the teacher is."""
    st.session_state[FOLLOWING] = on
    if on:
        st.session_state.pop(APPLIED, None)
        st.session_state.pop(SEEN, None)


def publish(url_path: str, params: dict[str, str]) -> None:
    """The teacher's run: publish where the teacher is, when it changed."""
    if not is_teacher():
        return
    position = {"page": url_path, "params": {k: v for k, v in params.items() if k not in HIDDEN_PARAMS}}
    if st.session_state.get(PUBLISHED) == position:
        return
    try:
        room_store().publish(code(), st.session_state[TOKEN], position)
        st.session_state[PUBLISHED] = position
    except (RoomGoneError, PermissionError):
        leave(f"Room {code()} has closed; open a new one from the sidebar.")


def address(params: dict[str, str]) -> dict[str, str]:
    """A student's address bar keeps the room, so that reloading the page joins it again."""
    return {**params, "room": code()} if is_student() else params


def keep_turn() -> None:
    """A run the wakener started goes on in a new run (another page, or the whole app): it keeps its turn."""
    if is_student() and session_id() is not None:
        wakener().woke(session_id())


def turn():
    """Around the page's drawing: a run the wakener started takes its turn (``Wakener.turn``)."""
    return wakener().turn(session_id()) if is_student() else contextlib.nullcontext()


def page_fragment(fragment_id: str | None) -> None:
    """Tell this process's wakener which fragment draws this student's page, so that a move within the page
    reruns only it."""
    if is_student() and fragment_id and session_id() is not None:
        wakener().page_fragment(session_id(), fragment_id)


def revealed_by_teacher(question: str) -> bool | None:
    """For the room's teacher, whether ``question`` is revealed as the room holds it (None: not its teacher, or
    the room closed). A session that took the room back after a restart then shows what the students see."""
    if not is_teacher():
        return None
    try:
        return question in room_store().snapshot(code()).revealed
    except RoomGoneError:
        return None


def revealed_here(question: str) -> bool | None:
    """For a student who follows, whether the teacher revealed ``question`` (None: not following)."""
    if not following():
        return None
    seen = st.session_state.get(SEEN)
    return bool(seen) and question in seen[2]


def vote(question: str, choice: object) -> None:
    """A student's answer, recorded as their vote (None: no answer)."""
    if not is_student() or choice is None:
        return
    try:
        room_store().vote(code(), st.session_state[STUDENT], question, str(choice))
    except (RoomGoneError, RoomFullError, ValueError) as error:
        notice(str(error))


def own_vote(question: str) -> str | None:
    """A student's vote on ``question`` as the room holds it (None: none), for a new session of the same browser."""
    if not is_student():
        return None
    try:
        return room_store().vote_of(code(), st.session_state[STUDENT], question)
    except RoomGoneError:
        return None


def reveal(question: str, on: bool = True) -> None:
    """The teacher reveals (or asks again) a question for the whole room; nothing for anyone else."""
    if not is_teacher():
        return
    try:
        room_store().reveal(code(), st.session_state[TOKEN], question, on)
    except (RoomGoneError, RoomFullError, PermissionError) as error:
        notice(str(error))


def tally(question: str) -> dict[str, int]:
    try:
        return room_store().tally(code(), question) if is_teacher() else {}
    except RoomGoneError:
        return {}


def counts() -> tuple[int, int] | None:
    """The teacher's room: (following, exploring), or None when it closed."""
    try:
        snapshot = room_store().snapshot(code())
    except RoomGoneError:
        leave(f"Room {code()} has closed; open a new one from the sidebar.")
        return None
    return snapshot.following, snapshot.exploring
