"""The live room, the whole feature: a teacher opens a room in presenter mode, students join with ``?room=CODE``,
follow the teacher's page, step and settings, vote on the questions and say "Too fast" or "Got it".

``store`` keeps the rooms (in memory, or in Redis with ``ATTENTION_ROOMS_URL``) and reruns the students whose room
changed; nothing polls. This module is one session in a room: joining, the teacher's ``publish`` at each run's end,
a student's arrival where the teacher is (``follow_teacher``, ``follow_in_page``: on the Live room page, a move to
another step or page reruns only the page's fragment), the votes and their CSV, the pace, and the room on screen
(``controls``).
"""

from __future__ import annotations

import contextlib
import copy
import csv
import functools
import io
import json
import os
import re
import secrets
import urllib.parse
from collections.abc import Iterator

import streamlit as st

from attention import figures
from explorer.page_text.questions import Question
from explorer.room.store import (
    IDLE_SECONDS,
    LIVE_PAGE,
    Result,
    RoomFullError,
    RoomGoneError,
    RoomStore,
    Wakener,
    normal_code,
)
from explorer.runtime import patches
from explorer.session import (
    APPLIED,
    CODE,
    COOKIE_HELD,
    FOLLOWING,
    MESSAGE,
    PUBLISHED,
    RESUMED,
    ROOM_COOKIE_READ,
    ROOM_LINK_READ,
    ROOM_SLOT,
    SEEN,
    STUDENT,
    TOKEN,
    VOTER_HELD,
    figure_style,
    initial_param,
    notice,
    open_link,
    presenter,
)
from explorer.settings import from_query_params

URL_VARIABLE = "ATTENTION_ROOMS_URL"


def make_store() -> RoomStore:
    """Redis when ``ATTENTION_ROOMS_URL`` names one (connected on first use), else memory."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    return RoomStore.from_url(url) if url else RoomStore()


# Made once per process, as this package is imported: the one store, and the students in rooms, listening to it.
STORE = make_store()
WAKENER = Wakener(STORE)


TEACHER_COOKIE = "explorer_room"  # "CODE.TOKEN" in the teacher's browser: a new session takes the room back
VOTER_COOKIE = "explorer_voter"  # a student's anonymous id in their browser: a reload or a new tab votes as them
VOTER_SECONDS = 24 * 3600  # how long the browser keeps it; it moves nothing and reveals nothing
_VOTER_ID = re.compile(r"[0-9a-f]{16}")  # what ``secrets.token_hex(8)`` makes; anything else is ignored
HIDDEN_PARAMS = ("present", "room")  # the teacher's presenter mode and room are not the students'
SIDEBAR_PARAMS = ("win",)  # drawn in the sidebar besides the settings: a move that changes them reruns the app


# Who this session is in the room


def code() -> str | None:
    return st.session_state.get(CODE)


def is_teacher() -> bool:
    return bool(st.session_state.get(TOKEN)) and code() is not None


def is_student() -> bool:
    return code() is not None and not st.session_state.get(TOKEN)


def following() -> bool:
    return is_student() and bool(st.session_state.get(FOLLOWING))


# Joining and leaving


def app_pages(chapter: tuple, live: tuple) -> list:
    """After joining the link's room: copies of the ``chapter``'s and the ``live`` room's ``st.Page``s, made once
    (each checks its file), the live room's listed for a student alone."""
    join_from_link()
    key = (repr(chapter), repr(live), is_student())  # not ids: each run of the entry script makes new tuples
    if key not in _PROTOTYPES:
        listed = [st.Page(page, title=title, icon=icon, **options) for page, title, icon, options in chapter]
        script, name, symbol, more = live
        shown = "visible" if key[2] else "hidden"
        live_page = st.Page(script, title=name, icon=symbol, visibility=shown, **more)
        _PROTOTYPES[key] = (live_page, *listed) if key[2] else (*listed, live_page)  # first: never under "View more"
    return [copy.copy(page) for page in _PROTOTYPES[key]]  # a page's "may run" flag is each run's own


_PROTOTYPES: dict[tuple, tuple] = {}  # (the chapter, the live page, a student's?) -> its pages


def join_from_link() -> None:
    """Join the room the link names (``?room=CODE``), once per session."""
    if st.session_state.get(ROOM_LINK_READ):
        return
    st.session_state[ROOM_LINK_READ] = True
    linked = initial_param("room", "any")
    if linked is None:
        return
    if (joined := normal_code(linked)) is None:
        st.session_state[MESSAGE] = f"room={linked[:20]!r} in the link is not a room code (5 letters and digits)."
        return
    st.session_state[CODE] = joined
    st.session_state[VOTER_HELD] = voter_id(saved(VOTER_COOKIE))
    st.session_state[STUDENT] = st.session_state.get(STUDENT) or st.session_state[VOTER_HELD] or secrets.token_hex(8)
    follow(True)


def voter_id(value: object) -> str | None:
    """``value`` if it is an id this app makes, else None: an edited cookie at most makes another anonymous voter."""
    return value if isinstance(value, str) and _VOTER_ID.fullmatch(value) else None


def follow(on: bool) -> None:
    """Follow the teacher (on) or explore on one's own; following again moves to where the teacher is."""
    st.session_state[FOLLOWING] = on
    if on:
        st.session_state.pop(APPLIED, None)
        st.session_state.pop(SEEN, None)


def leave(message: str = "") -> None:
    """Leave the room, saying why (a teacher's "Close the room": its students find it until it expires); the
    sentence and settings stay as they are."""
    for key in (CODE, TOKEN, FOLLOWING, SEEN, APPLIED, PUBLISHED):
        st.session_state.pop(key, None)
    if message:
        st.session_state[MESSAGE] = message
    WAKENER.leave(patches.session_id())


# The teacher: the room, its publication, its reveals and counts


def open_room() -> None:
    """Open a room with this session as its teacher (a button's ``on_click``)."""
    try:
        st.session_state[CODE], st.session_state[TOKEN] = STORE.create()
        st.session_state.pop(PUBLISHED, None)
        st.session_state.pop(MESSAGE, None)
    except RoomFullError as error:
        st.session_state[MESSAGE] = str(error)


def saved(cookie: str) -> str | None:
    """A cookie as the browser sent it when this session connected (None: none)."""
    value = st.context.cookies.get(cookie)
    return value if isinstance(value, str) else None  # (a test's AppTest has no browser, and no cookies)


def resume_teacher(presenting: bool) -> None:
    """Once per session, in presenter mode without a room in the link: take back the room whose token the browser
    kept (after a restart or a reload)."""
    state = st.session_state
    if state.get(ROOM_COOKIE_READ):
        return
    state[ROOM_COOKIE_READ] = True
    held = state[COOKIE_HELD] = saved(TEACHER_COOKIE)
    if not held or code() is not None or not presenting:
        return
    saved_code, _, token = held.partition(".")
    try:
        if normal_code(saved_code) != saved_code or not STORE.is_teacher(saved_code, token):
            return
    except RoomGoneError:
        state[MESSAGE] = (
            f"Room {saved_code} is no longer open: the server restarted without a shared store, or the room was idle "
            f"for {IDLE_SECONDS // 3600} hours. Open a new one from the sidebar."
        )
        return
    state[CODE], state[TOKEN] = saved_code, token
    state[RESUMED] = True  # not a toast: it lay over the stepper's Next for seconds


def publish(url_path: str, params: dict[str, str]) -> None:
    """At the end of each of the teacher's runs (``explorer_app.py``): publish where the teacher is, if it moved."""
    if not is_teacher():
        return
    position = {"page": url_path, "params": {k: v for k, v in params.items() if k not in HIDDEN_PARAMS}}
    if st.session_state.get(PUBLISHED) == position:
        return
    try:
        STORE.publish(code(), st.session_state[TOKEN], position)
        st.session_state[PUBLISHED] = position
    except (RoomGoneError, PermissionError):
        leave(f"Room {code()} has closed; open a new one from the sidebar.")


def reveal(question: str, on: bool = True, asked: Question | None = None) -> None:
    """The teacher reveals (or asks again) a question for the whole room, ``asked`` as the class reads it; nothing
    for anyone else."""
    if not is_teacher():
        return
    try:
        STORE.reveal(code(), st.session_state[TOKEN], question, on, *_shown(asked))
    except (RoomGoneError, RoomFullError, PermissionError) as error:
        notice(str(error))


def revealed_by_teacher(question: str) -> bool | None:
    """For the room's teacher, whether ``question`` is revealed as the room holds it (None: not its teacher)."""
    return _read_room(is_teacher(), lambda room: question in STORE.snapshot(room).revealed, None)


def tally(question: str) -> dict[str, int]:
    return _read_room(is_teacher(), lambda room: STORE.tally(room, question), {})


def _shown(asked: Question | None) -> tuple[str, tuple[str, ...] | None]:
    """A question's prompt and choices as the store keeps them for the results."""
    return ("", None) if asked is None else (asked.prompt, asked.choices)


RESULT_COLUMNS = ("question_id", "question", "choice", "count", "revealed", "revealed_at_utc")


def results_csv(rows: list[Result]) -> str:
    """The room's results as a spreadsheet reads them: a row per question and choice, with its count and its
    Reveal (no voter ids). Text that starts like a formula is shown, never run."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RESULT_COLUMNS)
    for row in rows:
        text = [figures.csv_text(value) for value in (row.question, plain(row.prompt), row.choice)]
        writer.writerow([*text, row.count, "yes" if row.revealed_at else "no", row.revealed_at or ""])
    return buffer.getvalue()


def plain(markdown: str) -> str:
    """A prompt's Markdown as the student reads it on screen: no bold marks, code ticks or escapes."""
    text = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown.replace("**", "").replace("`", ""))
    return text.replace("\u2060", "")


def room_results(room: str, token: str) -> str:
    """The room's results as CSV for its teacher's ``token`` (only the heading once the room has closed). Called on
    a thread of its own when the teacher presses the download, where no session state is at hand."""
    try:
        return results_csv(STORE.results(room, token))
    except (RoomGoneError, PermissionError):
        return results_csv([])


def _read_room(allowed: bool, read, default):
    """``read(code)`` of this session's room if ``allowed``, else (or when the room has closed) ``default``."""
    try:
        return read(code()) if allowed else default
    except RoomGoneError:
        return default


# A student's arrival where the teacher is


def follow_teacher(pages: dict, url_path: str) -> None:
    """Before any widget: read the room; a student who follows opens the teacher's link on the Live room page, or
    switches there from another page; one who stopped following there switches to the page it showed. A move
    counts as made only on the Live room page: a dropped switch is made again. ``pages``: URL path -> ``st.Page``."""
    resume_teacher(presenter())
    if not is_student():
        return
    read(url_path)
    if url_path == LIVE_PAGE and not following():
        if live_page() in pages:
            switch(pages[live_page()], {k: v for k, v in st.query_params.to_dict().items() if k not in HIDDEN_PARAMS})
        return
    position, elsewhere = due(), url_path != LIVE_PAGE and LIVE_PAGE in pages
    if elsewhere and following():  # a link to another page: back to the teacher's
        position = position or teachers_position()
    if position is None or position["page"] not in pages:
        return
    if elsewhere:
        switch(pages[LIVE_PAGE], position["params"])
    else:
        move_to(position)


def switch(page, params: dict[str, str]) -> None:
    """Switch to ``page`` with ``params``; a run the wakener started keeps its turn."""
    keep_turn()
    st.switch_page(page, query_params=address(params))


@contextlib.contextmanager
def follow_in_page(url_path: str) -> Iterator[None]:
    """Around the page's fragment, which the wakener learns: a move it alone draws is made here, another reruns
    the whole app; a run the room woke takes its turn."""
    if is_student() and (fragment_id := patches.current_fragment_id()):
        WAKENER.page_fragment(patches.session_id(), fragment_id)
    with turn():
        if arrive_in_page(url_path):
            keep_turn()
            st.rerun(scope="app")
        yield


def page_shown(navigation, pages: dict):
    """The page the fragment draws: on the Live room page the teacher's, else the one ``st.navigation`` returned."""
    shown = live_page() if navigation.url_path == LIVE_PAGE else None
    return pages[shown] if shown in pages and shown != LIVE_PAGE else navigation


def read(url_path: str) -> None:
    """A student's run on ``url_path``: enrol with the wakener (which heartbeats) and read the room if its version
    changed, as the wakener read it for the class when it started this run."""
    state, session_id, room = st.session_state, patches.session_id(), code()
    seen_version = state.get(SEEN, (-1,))[0]  # -1: not read yet
    try:
        WAKENER.enrol(session_id, room, state[STUDENT], following(), url_path)
        snapshot = WAKENER.delivered(session_id, room)
        if snapshot is None:
            if STORE.version(room) == seen_version:
                return
            snapshot = STORE.snapshot(room)
        elif seen_version >= snapshot.version:  # this session has read a newer one since
            return
    except (RoomGoneError, RoomFullError) as error:
        leave(str(error))
        return
    state[SEEN] = (snapshot.version, snapshot.position, snapshot.revealed, snapshot.step)


def teachers_position() -> dict | None:
    """The teacher's position as this student last read it (None: none yet)."""
    seen = st.session_state.get(SEEN)
    return seen and seen[1]


def due() -> dict | None:
    """The teacher's position when this student follows and has not arrived there yet."""
    position = teachers_position() if following() else None
    return position if position is not None and st.session_state.get(APPLIED) != position else None


def move_to(position: dict) -> None:
    """Open the teacher's link; this student has arrived at ``position``."""
    open_link(position["params"])
    st.session_state[APPLIED] = position


def live_page() -> str | None:
    """The URL path of the teacher's page the Live room page shows this student (None: none yet)."""
    applied = st.session_state.get(APPLIED) if is_student() else None
    return applied and applied["page"]


def sidebar_differs(old: dict[str, str], new: dict[str, str]) -> bool:
    """Whether two links differ in what the sidebar draws (settings, token window): then a move needs the app's run."""
    differs = any(old.get(k) != new.get(k) for k in SIDEBAR_PARAMS)
    return differs or from_query_params(old)[0] != from_query_params(new)[0]


def arrive_in_page(url_path: str) -> bool:
    """A student's run of the page alone: make a move the page alone draws (another step; on the Live room page,
    another page too) and return False, or True when it needs the whole app's run (the sidebar's settings)."""
    if not is_student():
        return False
    read(url_path)
    position, applied = due(), st.session_state.get(APPLIED)
    if position is None:
        return False
    if (
        applied is None
        or (url_path != LIVE_PAGE and (position["page"] != url_path or applied["page"] != url_path))
        or sidebar_differs(applied["params"], position["params"])
    ):
        return True
    move_to(position)
    return False


def address(params: dict[str, str]) -> dict[str, str]:
    """A student's address bar keeps the room, so that reloading the page joins it again."""
    return {**params, "room": code()} if is_student() else params


def keep_turn() -> None:
    """A run the wakener started goes on in a new run (another page, or the whole app): it keeps its turn."""
    if is_student():
        WAKENER.woke(patches.session_id())


def turn():
    """Around the app's run and the page's fragment: a run the wakener started takes its turn."""
    return WAKENER.turn(patches.session_id()) if is_student() else contextlib.nullcontext()


# A student's votes


def vote(question: str, choice: object, asked: Question | None = None) -> None:
    """A student's answer, recorded as their vote (None: no answer), to ``asked`` as they read it."""
    if not is_student() or choice is None:
        return
    try:
        STORE.vote(code(), st.session_state[STUDENT], question, str(choice), *_shown(asked))
    except (RoomGoneError, RoomFullError, ValueError) as error:
        notice(str(error))


def own_vote(question: str) -> str | None:
    """A student's vote on ``question`` as the room holds it (None: none), for a new session of the same browser."""
    return _read_room(is_student(), lambda room: STORE.vote_of(room, st.session_state.get(STUDENT), question), None)


def revealed_here(question: str) -> bool | None:
    """For a student who follows, whether the teacher revealed ``question`` (None: not following)."""
    seen = st.session_state.get(SEEN)
    return (bool(seen) and question in seen[2]) if following() else None


# A student's pace


PACE_SAID = {"fast": "Too fast", "got": "Got it"}  # what a student presses, by the mark the store keeps


def pace(mark: str) -> None:
    """A following student's "Too fast" or "Got it" on the teacher's step they last saw (a button's ``on_click``)."""
    seen = st.session_state.get(SEEN)
    if not following() or not seen:
        return
    try:
        counted = STORE.pace(code(), st.session_state[STUDENT], seen[3], mark)
    except (RoomGoneError, RoomFullError) as error:
        notice(str(error))
        return
    if counted:
        st.toast(f"Your teacher sees “{PACE_SAID[mark]}” for this step.", icon=":material/check:")
    else:
        st.toast("Your teacher has moved on: press again on this step.", icon=":material/update:")


# The live room on screen: a presenter's room in the sidebar, a student's bar above the page, the class's votes.


TEACHER_POLL_SECONDS = 1.0  # the teacher's counts and votes


def controls() -> None:
    """The live room, between the sidebar and the page: a student's bar, or a presenter's room in the sidebar."""
    if message := st.session_state.get(MESSAGE):
        text, button = st.columns([4, 1], vertical_alignment="center")
        notice(message, where=text)
        button.button("Dismiss", key="room_dismiss", on_click=st.session_state.pop, args=(MESSAGE, None))
    if is_student():
        student_bar()
    elif is_teacher() or presenter():
        with st.session_state.get(ROOM_SLOT) or st.sidebar:
            teacher_panel()


def student_bar() -> None:
    """ "Following the teacher" with "On my own", or the other way round."""
    text, button = st.columns([4, 1], vertical_alignment="center")
    with text:
        remember_voter()
    if following():
        text.caption(f"Room **{code()}** · following the teacher: their page and step come to you.")
        button.button("On my own", key="room_alone", on_click=follow, args=(False,), width="stretch")
        pace_buttons()
    else:
        text.caption(f"Room **{code()}** · on your own: the teacher's moves wait for you.")
        button.button(
            "Follow the teacher", key="room_follow", on_click=follow, args=(True,), type="primary", width="stretch"
        )


@st.fragment
def pace_buttons() -> None:
    """ "Too fast" and "Got it" side by side, on a phone too; a press reruns only these."""
    with st.container(horizontal=True, key="room_pace", vertical_alignment="center"):
        st.caption("This step:")
        st.button("Too fast", key="room_fast", icon=":material/speed:", on_click=pace, args=("fast",))
        st.button("Got it", key="room_got", icon=":material/thumb_up:", on_click=pace, args=("got",))


def join_link(code: str) -> str:
    """The link students open: this server's address with ``?room=CODE``."""
    parts = urllib.parse.urlsplit(st.context.url or "http://localhost:8501/")
    host = urllib.parse.quote(parts.netloc, safe=":@[]%")  # no space, "<" or ">": the dialog's autolink holds it
    return urllib.parse.urlunsplit((parts.scheme, host, "/", f"room={code}", ""))


@functools.lru_cache(maxsize=64)
def qr_png(link: str) -> bytes:
    """The link as a QR code, drawn here (no outside service)."""
    import segno

    buffer = io.BytesIO()
    segno.make(link, error="m").save(buffer, kind="png", scale=10, border=2)
    return buffer.getvalue()


def teacher_panel() -> None:
    """In presenter mode: "Open a room", or the room's code, buttons, counts and pace, then its votes as CSV, its
    link and QR code, which may lie below a 1280×720 screen's edge."""
    remember_room()
    if not is_teacher():
        st.button(
            "Open a room",
            key="room_open",
            icon=":material/groups:",
            on_click=open_room,
            width="stretch",
            help="Students who join follow your page, step and settings, and vote on the questions.",
        )
        return
    room, link = code(), join_link(code())
    # Its own padding below: Streamlit pulls the next element 1rem up under a Markdown block, onto this large line.
    heading = "font-size:2.4rem;line-height:1.2;padding-bottom:1rem"
    st.markdown(f"<div style='{heading}'>Room <b>{room}</b></div>", unsafe_allow_html=True)
    if st.session_state.pop(RESUMED, False):
        st.caption(f"You are back in room {room}: its students and votes were kept.")
    if st.button("Show the code to the class", key="room_show", icon=":material/qr_code_2:", width="stretch"):
        join_dialog(room, link)
    st.button("Close the room", key="room_close", type="tertiary", on_click=leave)  # above the counts: seen on 720 px
    teacher_counts()
    st.download_button(
        "Download the votes (CSV)",
        data=functools.partial(room_results, room, st.session_state[TOKEN]),  # computed when pressed
        file_name=f"room-{room}-votes.csv",
        mime="text/csv",
        key="room_results",
        icon=":material/download:",
        on_click="ignore",
        width="stretch",
        help="One row per question and answer: its count and when you revealed it. No names or ids.",
    )
    st.image(qr_png(link), width="stretch", alt=f"QR code of the join link {link}")
    st.markdown(f"<{link}>")  # not the image's caption, which Streamlit fades below the contrast a link needs


def remember_room() -> None:
    """Keep the room's code and token in the teacher's browser, to take the room back after a restart."""
    want = f"{code()}.{st.session_state[TOKEN]}" if is_teacher() else None
    if want != st.session_state.get(COOKIE_HELD):
        st.session_state[COOKIE_HELD] = want
        write_cookie(TEACHER_COOKIE, want or "", IDLE_SECONDS if want else 0)


def remember_voter() -> None:
    """Keep a student's anonymous id in their browser (a reload or a new tab votes as them), written on each run
    until the browser sends it back: a run cut short by a move must not lose it."""
    if is_student() and st.session_state.get(VOTER_HELD) != st.session_state.get(STUDENT):
        write_cookie(VOTER_COOKIE, st.session_state.get(STUDENT), VOTER_SECONDS)


def write_cookie(name: str, value: str, max_age: int) -> None:
    """Set a cookie that only this site reads (``max_age`` 0 forgets it), from a script run in the browser."""
    cookie = json.dumps(f"{name}={value}; max-age={max_age}; path=/; samesite=strict")
    script = f"document.cookie = {cookie} + (location.protocol === 'https:' ? '; secure' : '');"
    st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)


@st.dialog("Join the room", width="large")
def join_dialog(code: str, link: str) -> None:
    """The code and link beside the QR code, all on one 1280×720 projector screen."""
    words, picture = st.columns([3, 2], vertical_alignment="center")
    big = "font-size:min(6rem,14vw);font-weight:700;letter-spacing:0.15em;line-height:1.1"  # a phone's too: one line
    words.markdown(f"<div style='{big}'>{code}</div>", unsafe_allow_html=True)
    words.markdown(f"Open **<{link}>** or scan the code.")  # an autolink: shown and copied exactly as it is
    picture.image(qr_png(link), width=360, alt=f"QR code of the join link {link}")


@st.fragment(run_every=TEACHER_POLL_SECONDS)
def teacher_counts() -> None:
    try:
        room = STORE.snapshot(code())
    except RoomGoneError:
        leave(f"Room {code()} has closed; open a new one from the sidebar.")
        st.rerun(scope="app")
    marks = _read_room(True, STORE.pace_counts, dict.fromkeys(PACE_SAID, 0))
    pace_line = f"This step: {marks['fast']} too fast · {marks['got']} got it"
    st.markdown(f"**{room.following} following · {room.exploring} exploring**  \n{pace_line}")


def vote_chart(question: Question, key: str) -> None:
    """The teacher's live count of the class's answers to ``question`` (stored under ``key``)."""

    @st.fragment(run_every=TEACHER_POLL_SECONDS)
    def votes() -> None:
        counts, style = tally(key), figure_style()
        if question.choices is None and not counts:
            st.caption("No votes yet.")
            return
        labels = question.choices
        if labels is None:
            labels = sorted(counts, key=lambda v: (float(v) if v.replace(".", "", 1).lstrip("-").isdigit() else 0, v))
        values = [counts.get(str(label), 0) for label in labels]
        title = f"{sum(values)} vote{'s' if sum(values) != 1 else ''}"
        if question.choices is not None:  # lettered A, B, … as the presenter lists the choices
            fig = figures.vote_bars(question.choices, values, title=title, style=style)
        else:
            more = {"value_name": "students", "decimals": 0, "extra_height": 0}
            fig = figures.bars({"votes": values}, labels, title=title, style=style, **more)
        st.plotly_chart(fig, key=f"{key}_votes", config={"displayModeBar": False}, width="stretch")

    votes()
