"""The live room's state and the wake-up that brings a teacher's move to the class.

A teacher opens a room and gets a short code for the class and a secret token that stays in the teacher's
session. Every write that moves the room or reveals an answer must carry the token; students only heartbeat
and vote. Stores are bounded and forget a room after ``IDLE_SECONDS`` without a write.

In order: the store's interface and bounds, the in-memory store of one process, the same store in Redis
(``RedisStore``) for several app processes, and this process's students (``Wakener``), rerun when their room
changes.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from explorer.runtime.memory import TurnQueue
from explorer.runtime.patches import rerun_session, session_active

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: a code read off a projector
CODE_LENGTH = 5
IDLE_SECONDS = 4 * 3600  # a room without a write for this long is gone
ACTIVE_SECONDS = 10  # a student counts as present for this long after a heartbeat
MAX_STUDENTS = 200
MAX_QUESTIONS = 200  # questions with votes or reveals in one room
MAX_ROOMS = 1000  # open rooms in one memory store
MAX_CHOICE_CHARS = 40
_LOG = logging.getLogger(__name__)


class RoomGoneError(LookupError):
    """No open room has this code: a mistyped code, or a room closed after hours idle."""

    def __init__(self, code: str):
        super().__init__(
            f"There is no open room {code}: check the code, or ask your teacher for a new one "
            f"(rooms close after {IDLE_SECONDS // 3600} hours idle)."
        )


class RoomFullError(RuntimeError):
    """A room (or the server) holds as many as it may."""


@dataclass(frozen=True)
class Snapshot:
    """What a student's run reads: ``version`` changes whenever the position or a reveal does."""

    version: int
    position: dict | None  # {"page": url path, "params": the link's query parameters}
    revealed: frozenset[str]
    following: int
    exploring: int


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def digest(token: str) -> str:
    """The token as stored: a store never holds the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(stored: str | None, token: str | None) -> bool:
    return bool(stored and token) and hmac.compare_digest(stored, digest(token))


def normal_code(code: object) -> str | None:
    """A code as typed in a link ("abc de" reads as "ABCDE"), or None when it cannot be one."""
    if not isinstance(code, str):
        return None
    code = "".join(code.split()).upper()
    return code if len(code) == CODE_LENGTH and all(c in ALPHABET for c in code) else None


def check_choice(choice: object) -> str:
    choice = str(choice)
    if len(choice) > MAX_CHOICE_CHARS:
        raise ValueError(f"An answer has at most {MAX_CHOICE_CHARS} characters.")
    return choice


Listener = Callable[[str | None], None]


class RoomStore(ABC):
    """The rooms of this server. ``code`` is a room's code; a ``token`` is its teacher's secret.

    ``on_change`` registers a listener that hears the code of every room moved or revealed in, by any process
    sharing the store, and None when changes may have been missed (every room may have changed)."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _changed(self, code: str | None) -> None:
        for listener in list(self._listeners):
            try:
                listener(code)
            except Exception:  # one listener's failure must not stop the store's writes or its listener thread
                _LOG.exception("rooms: a change listener failed")

    @abstractmethod
    def create(self) -> tuple[str, str]:
        """Open a room; returns its code and its teacher's token."""

    @abstractmethod
    def snapshot(self, code: str) -> Snapshot:
        """The room now; raises ``RoomGoneError``."""

    @abstractmethod
    def version(self, code: str) -> int:
        """The room's version alone, the cheap read; raises ``RoomGoneError``."""

    @abstractmethod
    def is_teacher(self, code: str, token: str) -> bool:
        """Whether ``token`` is the room's teacher's; raises ``RoomGoneError``."""

    @abstractmethod
    def publish(self, code: str, token: str, position: dict) -> int:
        """Move the room to ``position`` (the teacher's only); returns the new version."""

    @abstractmethod
    def reveal(self, code: str, token: str, question: str, revealed: bool = True) -> None:
        """Reveal (or hide again) a question's answer for every student (the teacher's only)."""

    @abstractmethod
    def heartbeat(self, code: str, student: str, following: bool) -> None:
        """A student is here, following the teacher or exploring; raises ``RoomFullError`` for a new student
        beyond ``MAX_STUDENTS``."""

    @abstractmethod
    def vote(self, code: str, student: str, question: str, choice: str) -> None:
        """A present student's answer to a question not yet revealed; a later vote replaces it."""

    @abstractmethod
    def tally(self, code: str, question: str) -> dict[str, int]:
        """How many students chose each answer."""

    @abstractmethod
    def vote_of(self, code: str, student: str, question: str) -> str | None:
        """The student's vote on a question (None: none), for their new session after a reload or in a new tab."""


@dataclass
class _Room:
    token_digest: str
    touched: float
    version: int = 0
    position: dict | None = None
    seen: dict[str, tuple[float, bool]] = field(default_factory=dict)  # student -> (last heartbeat, following)
    votes: dict[str, dict[str, str]] = field(default_factory=dict)  # question -> student -> choice
    revealed: set[str] = field(default_factory=set)


class MemoryRoomStore(RoomStore):
    """Rooms in this process's memory, shared by its sessions behind one lock; expired lazily."""

    def __init__(self, clock=time.monotonic):
        super().__init__()
        self._rooms: dict[str, _Room] = {}
        self._lock = threading.Lock()  # every session's thread reads and writes the rooms
        self._clock = clock

    def _room(self, code: str, token: str | None = None, *, teacher: bool = False, write: bool = True) -> _Room:
        """The live room ``code`` (the lock held), touched by a write; a teacher's write must carry its token."""
        room = self._rooms.get(code)
        now = self._clock()
        if room is None or now - room.touched > IDLE_SECONDS:
            self._rooms.pop(code, None)
            raise RoomGoneError(code)
        if teacher and not token_matches(room.token_digest, token):
            raise PermissionError("Only the teacher who opened this room can move it or reveal answers.")
        if write:
            room.touched = now
        return room

    def create(self) -> tuple[str, str]:
        token = secrets.token_urlsafe(24)
        with self._lock:
            now = self._clock()
            for code in [c for c, r in self._rooms.items() if now - r.touched > IDLE_SECONDS]:
                del self._rooms[code]
            if len(self._rooms) >= MAX_ROOMS:
                raise RoomFullError(f"This server has {MAX_ROOMS} rooms open; try again later.")
            code = new_code()
            while code in self._rooms:
                code = new_code()
            self._rooms[code] = _Room(digest(token), now)
        return code, token

    def snapshot(self, code: str) -> Snapshot:
        with self._lock:
            room = self._room(code, write=False)
            now = self._clock()
            present = [following for seen, following in room.seen.values() if now - seen <= ACTIVE_SECONDS]
            return Snapshot(
                room.version, room.position, frozenset(room.revealed), sum(present), len(present) - sum(present)
            )

    def version(self, code: str) -> int:
        with self._lock:
            return self._room(code, write=False).version

    def is_teacher(self, code: str, token: str) -> bool:
        with self._lock:
            return token_matches(self._room(code, write=False).token_digest, token)

    def publish(self, code: str, token: str, position: dict) -> int:
        position = json.loads(json.dumps(position))  # a copy of plain data, as Redis would hold it
        with self._lock:
            room = self._room(code, token, teacher=True)
            room.position = position
            room.version += 1
            version = room.version
        self._changed(code)
        return version

    def reveal(self, code: str, token: str, question: str, revealed: bool = True) -> None:
        with self._lock:
            room = self._room(code, token, teacher=True)
            if revealed:
                if question not in room.revealed and len(room.revealed | room.votes.keys()) >= MAX_QUESTIONS:
                    raise RoomFullError(f"A room holds at most {MAX_QUESTIONS} questions.")
                room.revealed.add(question)
            else:
                room.revealed.discard(question)
                room.votes.pop(question, None)  # asked again: a fresh vote
            room.version += 1
        self._changed(code)

    def heartbeat(self, code: str, student: str, following: bool) -> None:
        with self._lock:
            room = self._room(code)
            now = self._clock()
            if student not in room.seen:
                for old in [s for s, (seen, _) in room.seen.items() if now - seen > ACTIVE_SECONDS]:
                    del room.seen[old]
                if len(room.seen) >= MAX_STUDENTS:
                    raise RoomFullError(f"This room is full: it holds {MAX_STUDENTS} students.")
            room.seen[student] = (now, following)

    def vote(self, code: str, student: str, question: str, choice: str) -> None:
        choice = check_choice(choice)
        with self._lock:
            room = self._room(code)
            if student not in room.seen or question in room.revealed:
                return
            if question not in room.votes and len(room.revealed | room.votes.keys()) >= MAX_QUESTIONS:
                raise RoomFullError(f"A room holds at most {MAX_QUESTIONS} questions.")
            room.votes.setdefault(question, {})[student] = choice

    def tally(self, code: str, question: str) -> dict[str, int]:
        with self._lock:
            return dict(collections.Counter(self._room(code, write=False).votes.get(question, {}).values()))

    def vote_of(self, code: str, student: str, question: str) -> str | None:
        with self._lock:
            return self._room(code, write=False).votes.get(question, {}).get(student)


# The live room's store in Redis, for several app processes (``ATTENTION_ROOMS_URL=redis://host:6379/0``).
#
# One room is a few keys under ``room:CODE``: a hash (the token's digest, the version, the position as JSON),
# two sorted sets of students by last heartbeat (``following``, ``exploring``), a set of revealed questions,
# a set of questions with votes or reveals, and one hash of votes per question. Every write renews the keys'
# time to live, so Redis forgets a room ``IDLE_SECONDS`` after its last write. A move or a reveal is published on
# the channel ``rooms:changed``, which each process's listener thread hears (``on_change``).


_PARTS = ("", ":following", ":exploring", ":revealed", ":questions")
CHANNEL = "rooms:changed"


class RedisRoomStore(RoomStore):
    """Rooms in Redis; ``client`` is a ``redis.Redis`` that decodes responses."""

    def __init__(self, client, clock=time.time, listen_client=None):
        """``listen_client`` holds the subscription (without a read timeout; ``client`` by default)."""
        super().__init__()
        self._redis = client
        self._clock = clock
        self._listen_client = listen_client or client
        self._listener: threading.Thread | None = None

    @classmethod
    def from_url(cls, url: str) -> RedisRoomStore:
        import redis

        return cls(
            redis.Redis.from_url(url, decode_responses=True, socket_timeout=5),
            listen_client=redis.Redis.from_url(url, decode_responses=True, health_check_interval=30),
        )

    def on_change(self, listener) -> None:
        """Also start hearing the other processes (once: the process's one ``Wakener`` calls this, made as
        ``explorer.room`` is imported)."""
        super().on_change(listener)
        if self._listener is None:
            # Redis's subscription blocks while it waits for a message: it gets a thread of its own
            self._listener = threading.Thread(target=self._listen, name="rooms-listener", daemon=True)
            self._listener.start()

    def _listen(self) -> None:
        """Hear the other processes' moves and reveals; after a lost connection, subscribe again and say that
        every room may have changed."""
        import redis

        subscribed_before = False
        while True:
            try:
                pubsub = self._listen_client.pubsub()
                pubsub.subscribe(CHANNEL)
                while True:
                    message = pubsub.get_message(timeout=5.0)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        if subscribed_before:  # changes made while the connection was lost were not heard
                            self._changed(None)
                        subscribed_before = True
                    elif message["type"] == "message":
                        self._changed(message["data"])
            except (redis.RedisError, OSError) as error:
                _LOG.warning("rooms: lost Redis (%s); subscribing again in 1 s", error)
                time.sleep(1.0)

    def _touch(self, pipe, code: str, *more: str) -> None:
        for key in [*(f"room:{code}{part}" for part in _PARTS), *more]:
            pipe.expire(key, IDLE_SECONDS)

    def _live(self, code: str, token: str | None = None, *, teacher: bool = False) -> str:
        """The room's token digest, after the checks of a read (or, with ``teacher``, of the teacher's write)."""
        stored = self._redis.hget(f"room:{code}", "token")
        if stored is None:
            raise RoomGoneError(code)
        if teacher and not token_matches(stored, token):
            raise PermissionError("Only the teacher who opened this room can move it or reveal answers.")
        return stored

    def create(self) -> tuple[str, str]:
        token = secrets.token_urlsafe(24)
        for _ in range(100):
            code = new_code()
            if self._redis.hsetnx(f"room:{code}", "token", digest(token)):
                pipe = self._redis.pipeline()
                pipe.hset(f"room:{code}", "version", 0)
                self._touch(pipe, code)
                pipe.execute()
                return code, token
        raise RoomFullError("No free room code was found; try again.")

    def snapshot(self, code: str) -> Snapshot:
        now = self._clock()
        pipe = self._redis.pipeline()
        pipe.hmget(f"room:{code}", "token", "version", "position")
        pipe.zcount(f"room:{code}:following", now - ACTIVE_SECONDS, "+inf")
        pipe.zcount(f"room:{code}:exploring", now - ACTIVE_SECONDS, "+inf")
        pipe.smembers(f"room:{code}:revealed")
        (token, version, position), following, exploring, revealed = pipe.execute()
        if token is None:
            raise RoomGoneError(code)
        return Snapshot(
            int(version or 0), json.loads(position) if position else None, frozenset(revealed), following, exploring
        )

    def version(self, code: str) -> int:
        token, version = self._redis.hmget(f"room:{code}", "token", "version")
        if token is None:
            raise RoomGoneError(code)
        return int(version or 0)

    def is_teacher(self, code: str, token: str) -> bool:
        return token_matches(self._live(code), token)

    def publish(self, code: str, token: str, position: dict) -> int:
        self._live(code, token, teacher=True)
        pipe = self._redis.pipeline()
        pipe.hset(f"room:{code}", "position", json.dumps(position))
        pipe.hincrby(f"room:{code}", "version", 1)
        self._touch(pipe, code)
        pipe.publish(CHANNEL, code)
        return int(pipe.execute()[1])

    def _question(self, code: str, question: str) -> None:
        """Room for one more question, or ``RoomFullError``."""
        key = f"room:{code}:questions"
        if not self._redis.sismember(key, question) and self._redis.scard(key) >= MAX_QUESTIONS:
            raise RoomFullError(f"A room holds at most {MAX_QUESTIONS} questions.")

    def reveal(self, code: str, token: str, question: str, revealed: bool = True) -> None:
        self._live(code, token, teacher=True)
        votes = f"room:{code}:votes:{question}"
        pipe = self._redis.pipeline()
        if revealed:
            self._question(code, question)
            pipe.sadd(f"room:{code}:questions", question)
            pipe.sadd(f"room:{code}:revealed", question)
        else:
            pipe.srem(f"room:{code}:revealed", question)
            pipe.delete(votes)  # asked again: a fresh vote
        pipe.hincrby(f"room:{code}", "version", 1)
        self._touch(pipe, code)
        pipe.publish(CHANNEL, code)
        pipe.execute()

    def heartbeat(self, code: str, student: str, following: bool) -> None:
        self._live(code)
        now = self._clock()
        here, there = (":following", ":exploring") if following else (":exploring", ":following")
        known = self._redis.pipeline()
        for part in (here, there):
            known.zscore(f"room:{code}{part}", student)
        if not any(known.execute()):
            stale = self._redis.pipeline()
            for part in (here, there):
                stale.zremrangebyscore(f"room:{code}{part}", "-inf", now - ACTIVE_SECONDS)
                stale.zcard(f"room:{code}{part}")
            counts = stale.execute()
            if counts[1] + counts[3] >= MAX_STUDENTS:
                raise RoomFullError(f"This room is full: it holds {MAX_STUDENTS} students.")
        pipe = self._redis.pipeline()
        pipe.zadd(f"room:{code}{here}", {student: now})
        pipe.zrem(f"room:{code}{there}", student)
        self._touch(pipe, code)
        pipe.execute()

    def vote(self, code: str, student: str, question: str, choice: str) -> None:
        choice = check_choice(choice)
        self._live(code)
        check = self._redis.pipeline()
        check.zscore(f"room:{code}:following", student)
        check.zscore(f"room:{code}:exploring", student)
        check.sismember(f"room:{code}:revealed", question)
        following, exploring, revealed = check.execute()
        if (following is None and exploring is None) or revealed:
            return
        self._question(code, question)
        votes = f"room:{code}:votes:{question}"
        pipe = self._redis.pipeline()
        pipe.sadd(f"room:{code}:questions", question)
        pipe.hset(votes, student, choice)
        self._touch(pipe, code, votes)
        pipe.execute()

    def tally(self, code: str, question: str) -> dict[str, int]:
        self._live(code)
        return dict(collections.Counter(self._redis.hvals(f"room:{code}:votes:{question}")))

    def vote_of(self, code: str, student: str, question: str) -> str | None:
        self._live(code)
        return self._redis.hget(f"room:{code}:votes:{question}", student)


# This process's students in live rooms, and the wake-up that brings a teacher's move to them.
#
# A student's every run enrols its session (``enrol``). When the room changes, in this process or another
# sharing Redis, the store's listener wakes each following student's session here: Streamlit reruns it as it
# reruns a session whose source file changed (``runOnSave``). That run reads the room and moves the student.
# Their runs take turns (``turn``): thirty runs sharing Python's one thread by time slices all end near the end,
# while runs one after the other end one by one. A thread heartbeats every enrolled student whose browser is
# still connected, for the teacher's counts, and forgets the sessions whose tabs closed.


HEARTBEAT_SECONDS = 2.0  # well inside the store's ACTIVE_SECONDS
LIVE_PAGE = "live"  # the URL path of the page where a student who follows sees the teacher's page


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
        """``rerun(session_id, fragment_id)`` reruns a session (only that fragment, when given);
        ``active(session_id)``: whether its browser is still connected (tests pass their own)."""
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
