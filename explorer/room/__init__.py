"""The live room, the whole feature: a teacher opens a room in presenter mode, students join with ``?room=CODE``,
follow the teacher's page, step and settings, and vote on the questions.

* ``store``: the room's state (a teacher's position, who follows, votes, reveals) in this process's memory,
  or in Redis, shared by several processes (``ATTENTION_ROOMS_URL=redis://...``).
* ``wake``: this process's students in rooms, rerun when their room changes; nothing polls.
* ``live``: one session in a room: joining, the teacher's publication at the end of each run, a student's
  arrival where the teacher is, the votes. ``panel``: the room on screen, and the class's votes.

``room_store()`` and ``wakener()`` are the process's one store and one register of students.
"""

from __future__ import annotations

import os

from explorer.room.store import (
    MemoryRoomStore,
    RoomFullError,
    RoomGoneError,
    RoomStore,
    Snapshot,
    normal_code,
)
from explorer.room.wake import LIVE_PAGE, Wakener

URL_VARIABLE = "ATTENTION_ROOMS_URL"
LIVE = LIVE_PAGE


def make_store() -> RoomStore:
    """A store for this process: Redis when ``ATTENTION_ROOMS_URL`` names one (connected on first use), else
    memory."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        from explorer.room.store import RedisRoomStore

        return RedisRoomStore.from_url(url)
    return MemoryRoomStore()


# Made as this package is imported, which Python does once per process whichever session's thread imports it.
_STORE = make_store()
_WAKENER = Wakener(_STORE)


def room_store() -> RoomStore:
    """The process's one store (``make_store``)."""
    return _STORE


def wakener() -> Wakener:
    """The process's one register of students in rooms, listening to ``room_store()``."""
    return _WAKENER


# A session's side last: ``live`` and ``panel`` use ``room_store()`` and ``wakener()`` above.
from explorer.room.live import (  # noqa: E402  # noqa: E402
    address,
    app_pages,
    code,
    controls,
    follow_in_page,
    follow_teacher,
    following,
    is_student,
    is_teacher,
    own_vote,
    page_shown,
    publish,
    reveal,
    revealed_by_teacher,
    revealed_here,
    turn,
    vote,
    vote_chart,
)

__all__ = [
    "LIVE",
    "URL_VARIABLE",
    "MemoryRoomStore",
    "RoomFullError",
    "RoomGoneError",
    "RoomStore",
    "Snapshot",
    "Wakener",
    "address",
    "app_pages",
    "code",
    "controls",
    "follow_in_page",
    "follow_teacher",
    "following",
    "is_student",
    "is_teacher",
    "make_store",
    "normal_code",
    "own_vote",
    "page_shown",
    "publish",
    "reveal",
    "revealed_by_teacher",
    "revealed_here",
    "room_store",
    "turn",
    "vote",
    "vote_chart",
    "wakener",
]
