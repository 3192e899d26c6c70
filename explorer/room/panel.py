"""The live room on screen: a presenter opens a room in the sidebar and shows its code, link and QR code; a
student who opened ``?room=CODE`` sees a bar above the page that follows the teacher or lets them explore; the
teacher sees the class's votes on a question as they come in. The state behind all this is ``explorer.room.live``'s.
"""

from __future__ import annotations

import functools
import io
import json
import urllib.parse

import streamlit as st

from explorer import figures
from explorer.page_text.questions import Question
from explorer.room import live
from explorer.room.store import IDLE_SECONDS
from explorer.session.keys import MESSAGE, RESUMED, ROOM_SLOT
from explorer.session.state import notice, presenter
from explorer.widgets.charts import style as chart_style

TEACHER_POLL_SECONDS = 1.0  # the teacher's counts and votes


def controls() -> None:
    """The live room, between the sidebar and the page: a student's bar, or a presenter's room in
    the sidebar."""
    message = st.session_state.get(MESSAGE)
    if message:
        text, button = st.columns([4, 1], vertical_alignment="center")
        notice(message, where=text)
        button.button("Dismiss", key="room_dismiss", on_click=st.session_state.pop, args=(MESSAGE, None))
    if live.is_student():
        student_bar()
    elif live.is_teacher() or presenter():
        with st.session_state.get(ROOM_SLOT) or st.sidebar:
            teacher_panel()


def student_bar() -> None:
    """ "Following the teacher" with "On my own", or the other way round."""
    text, button = st.columns([4, 1], vertical_alignment="center")
    with text:
        remember_voter()
    if live.following():
        text.caption(f"Room **{live.code()}** · following the teacher: their page and step come to you.")
        button.button("On my own", key="room_alone", on_click=live.follow, args=(False,), width="stretch")
    else:
        text.caption(f"Room **{live.code()}** · on your own: the teacher's moves wait for you.")
        button.button(
            "Follow the teacher", key="room_follow", on_click=live.follow, args=(True,), type="primary", width="stretch"
        )


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
    """In presenter mode: "Open a room", or the open room's code, its buttons and counts, then its link and QR
    code, which may lie below the screen's edge: a 1280×720 screen shows every button without scrolling."""
    remember_room()
    if not live.is_teacher():
        st.button(
            "Open a room",
            key="room_open",
            icon=":material/groups:",
            on_click=live.open_room,
            width="stretch",
            help="Students who join follow your page, step and settings, and vote on the questions.",
        )
        return
    code, link = live.code(), join_link(live.code())
    st.markdown(f"<div style='font-size:2.4rem;line-height:1.2'>Room <b>{code}</b></div>", unsafe_allow_html=True)
    if st.session_state.pop(RESUMED, False):
        st.caption(f"You are back in room {code}: its students and votes were kept.")
    if st.button("Show the code to the class", key="room_show", icon=":material/qr_code_2:", width="stretch"):
        join_dialog(code, link)
    teacher_counts()
    st.button("Close the room", key="room_close", type="tertiary", on_click=live.close_room)
    st.image(qr_png(link), width="stretch", alt=f"QR code of the join link {link}")
    st.markdown(f"<{link}>")  # not the image's caption, which Streamlit fades below the contrast a link needs


def remember_room() -> None:
    """Keep the room's code and token in the teacher's browser (a cookie only this site reads), so that the tab
    takes the room back when the app's process restarts; forget them when the room closes."""
    due = live.cookie_due()
    if due is False:
        return
    write_cookie(live.TEACHER_COOKIE, due or "", IDLE_SECONDS if due else 0)


def remember_voter() -> None:
    """Keep a student's anonymous id in their browser, so that a reload or a new tab votes as the same student."""
    due = live.voter_cookie_due()
    if due is not None:
        write_cookie(live.VOTER_COOKIE, due, live.VOTER_SECONDS)


def write_cookie(name: str, value: str, max_age: int) -> None:
    """Set a cookie that only this site reads (``max_age`` 0 forgets it), from a script run in the browser."""
    cookie = json.dumps(f"{name}={value}; max-age={max_age}; path=/; samesite=strict")
    st.html(
        f"<script>document.cookie = {cookie} + (location.protocol === 'https:' ? '; secure' : '');</script>",
        unsafe_allow_javascript=True,
    )


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
    counts = live.counts()
    if counts is None:
        st.rerun(scope="app")
    st.markdown(f"**{counts[0]} following · {counts[1]} exploring**")


def vote_chart(question: Question, key: str) -> None:
    """The teacher's live count of the class's answers to ``question`` (stored under ``key``)."""

    @st.fragment(run_every=TEACHER_POLL_SECONDS)
    def votes() -> None:
        counts = live.tally(key)
        if question.choices is not None:  # lettered A, B, … as the presenter lists the choices
            values = [counts.get(str(choice), 0) for choice in question.choices]
            title = f"{sum(values)} vote{'s' if sum(values) != 1 else ''}"
            fig = figures.vote_bars(question.choices, values, title=title, style=chart_style())
        elif not counts:
            st.caption("No votes yet.")
            return
        else:
            labels = sorted(counts, key=lambda v: (float(v) if v.replace(".", "", 1).lstrip("-").isdigit() else 0, v))
            values = [counts[label] for label in labels]
            fig = figures.bars(
                {"votes": values},
                labels,
                title=f"{sum(values)} vote{'s' if sum(values) != 1 else ''}",
                value_name="students",
                decimals=0,
                extra_height=0,
                style=chart_style(),
            )
        figures.layout.pandas_settled()
        st.plotly_chart(fig, key=f"{key}_votes", config={"displayModeBar": False}, width="stretch")

    votes()
