"""The live room's shared state: a teacher's position, who follows it, the votes and the reveals.

``room_store()`` is the process's one store: in memory by default (one process, nothing to install), or Redis
when ``ATTENTION_ROOMS_URL=redis://...`` names one, so that several app processes share rooms.
``wakener()`` is the process's register of students in rooms, which wakes them when their room changes.
"""

from __future__ import annotations

import os
import threading

from explorer.runtime.rooms.store import (
    MemoryRoomStore,
    RoomFullError,
    RoomGoneError,
    RoomStore,
    Snapshot,
    normal_code,
)
from explorer.runtime.rooms.wake import LIVE_PAGE, Wakener

URL_VARIABLE = "ATTENTION_ROOMS_URL"
LIVE = LIVE_PAGE

_STORE: list[RoomStore] = []
_STORE_LOCK = threading.Lock()
_WAKENER: list[Wakener] = []
_WAKENER_LOCK = threading.Lock()


def room_store() -> RoomStore:
    """The process's one store: Redis when ``ATTENTION_ROOMS_URL`` names one, else memory."""
    with _STORE_LOCK:
        if not _STORE:
            url = os.environ.get(URL_VARIABLE, "").strip()
            if url:
                from explorer.runtime.rooms.redis_store import RedisRoomStore

                _STORE.append(RedisRoomStore.from_url(url))
            else:
                _STORE.append(MemoryRoomStore())
        return _STORE[0]


def wakener() -> Wakener:
    """The process's one register of students in rooms, listening to ``room_store()``."""
    with _WAKENER_LOCK:
        if not _WAKENER:
            _WAKENER.append(Wakener(room_store()))
        return _WAKENER[0]


__all__ = [
    "LIVE",
    "URL_VARIABLE",
    "MemoryRoomStore",
    "RoomFullError",
    "RoomGoneError",
    "RoomStore",
    "Snapshot",
    "Wakener",
    "normal_code",
    "room_store",
    "wakener",
]
