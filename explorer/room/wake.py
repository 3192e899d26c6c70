"""This process's students in live rooms, and the wake-up that brings a teacher's move to them.

A student's every run enrols its session (``enrol``). When the room changes, in this process or another
sharing Redis, the store's listener wakes each following student's session here: Streamlit reruns it as it
reruns a session whose source file changed (``runOnSave``), with the widget values it holds. A student on the
Live room page (``LIVE_PAGE``), which draws the teacher's page in a fragment, or on the teacher's page itself,
reruns only that fragment; the others rerun the whole app. That run reads the room and moves the student.
Nothing polls: an idle class costs nothing between the teacher's moves.

A move wakes a whole class at once. Their runs take turns (``turn``): Python runs one thread at a time, and
thirty runs sharing it by time slices all end near the end, while runs one after the other end one by one.

A thread heartbeats every enrolled student whose browser is still connected, so that the teacher's counts
see who is following and who explores, and forgets the sessions whose tabs closed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from explorer.room.store import RoomFullError, RoomGoneError, RoomStore, Snapshot
from explorer.runtime.memory import TurnQueue
from explorer.runtime.patches import rerun_session, session_active

HEARTBEAT_SECONDS = 2.0  # well inside the store's ACTIVE_SECONDS
LIVE_PAGE = "live"  # the URL path of the page where a student who follows sees the teacher's page
_LOG = logging.getLogger(__name__)


@dataclass
class Member:
    code: str
    student: str
    following: bool
    page: str = ""  # the page (URL path) of the student's last run
    fragment: str = ""  # the fragment that draws the student's page: a move within the page reruns only it


class Wakener:
    """The enrolled sessions of one process (by Streamlit session id) and their wake-ups."""

    def __init__(self, store: RoomStore, rerun=None, active=None):
        """``rerun(session_id, fragment_id)`` reruns a session (only that fragment, when given), and
        ``active(session_id)`` says whether its browser is still connected (Streamlit's by default; tests pass
        their own)."""
        # No lock: every method changes these in single steps (one dict or set operation, which the interpreter
        # does whole), and a session's entries change only by its own runs, its wake-up and the heartbeat.
        self._store = store
        self._members: dict[str, Member] = {}
        self._rerun = rerun or rerun_session
        self._active = active or session_active
        self._unstarted = {"heartbeat": True}  # popped by the first enrolment (one step: of two threads, one gets it)
        self._woken: set[str] = set()  # sessions woken whose run has not yet taken its turn
        self._delivered: dict[str, Snapshot] = {}  # the room as read when each was woken, until its run reads it
        self._turns = TurnQueue(slots=1)
        store.on_change(self.changed)

    def enrol(self, session_id: str, code: str, student: str, following: bool, page: str = "") -> None:
        """A student's run on ``page``: note the session, and heartbeat now when it is new here or changed its
        mind."""
        member = Member(code, student, following, page)
        known = self._members.get(session_id)
        member.fragment = known.fragment if known and known.page == page else ""
        self._members[session_id] = member
        if self._unstarted.pop("heartbeat", False):
            # renews every enrolled student's presence in the store, whether or not the room moves
            threading.Thread(target=self._beat_forever, name="rooms-heartbeat", daemon=True).start()
        if known is None or (known.code, known.student, known.following) != (code, student, following):
            self._store.heartbeat(code, student, following)

    def page_fragment(self, session_id: str, fragment_id: str) -> None:
        member = self._members.get(session_id)
        if member is not None:
            member.fragment = fragment_id

    def leave(self, session_id: str) -> None:
        self._members.pop(session_id, None)
        self._delivered.pop(session_id, None)

    def members(self) -> dict[str, Member]:
        return self._members.copy()

    def changed(self, code: str | None) -> None:
        """Room ``code`` moved or revealed (None: any room may have): wake its following students here. A
        student on the Live room page or the teacher's page reruns only the page's fragment (which reruns the
        whole app when the move needs it); the others rerun the whole app."""
        snapshots: dict[str, Snapshot | None] = {}
        for session_id, member in self.members().items():
            if not member.following or code not in (None, member.code):
                continue
            if member.code not in snapshots:
                try:
                    snapshots[member.code] = self._store.snapshot(member.code)
                except (RoomGoneError, RoomFullError):
                    snapshots[member.code] = None
            snapshot = snapshots[member.code]
            position = snapshot and snapshot.position
            self.woke(session_id, snapshot)
            in_page = member.page in (position and position.get("page"), LIVE_PAGE)
            self._rerun(session_id, member.fragment if in_page else "")

    def woke(self, session_id: str, snapshot: Snapshot | None = None) -> None:
        """The session's next run is one this wakener started: it takes a turn, and reads the room from
        ``snapshot`` (read once for all the room's students here) rather than from the store."""
        self._woken.add(session_id)
        if snapshot is not None:
            self._delivered[session_id] = snapshot

    def delivered(self, session_id: str, code: str) -> Snapshot | None:
        """The room as read when this session was last woken, if its run has not taken it yet: a class woken by
        one move costs the store one read, not one per student. A snapshot lags the store only by a change
        whose wake-up is on its way, and that wake-up brings the newer one."""
        snapshot = self._delivered.pop(session_id, None)
        member = self._members.get(session_id)
        return snapshot if member is not None and member.code == code else None

    @contextlib.contextmanager
    def turn(self, session_id: str | None) -> Iterator[None]:
        """Around a session's run: a run this wakener started waits for its turn, one at a time."""
        try:
            self._woken.remove(session_id)  # one step: a wake-up that lands meanwhile is not lost
            woken = True
        except KeyError:
            woken = False
        with self._turns.turn() if woken else contextlib.nullcontext():
            yield

    def beat(self) -> None:
        """One round of heartbeats; a closed tab's session is forgotten, a closed room's is woken to say so."""
        for session_id, member in self.members().items():
            if not self._active(session_id):
                self.leave(session_id)
                continue
            try:
                self._store.heartbeat(member.code, member.student, member.following)
            except (RoomGoneError, RoomFullError):
                self._rerun(session_id, "")  # its run finds the room gone and says so
            except Exception:  # Redis away for a moment: the next round tries again
                _LOG.exception("rooms: a heartbeat failed")

    def _beat_forever(self) -> None:
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            try:
                self.beat()
            except Exception:  # never let the thread die: the next round tries again
                _LOG.exception("rooms: a heartbeat round failed")
