"""The live room's state and the wake-up that brings a teacher's move to the class.

A room has a short code for the class and a secret token for its teacher, which every move or reveal carries;
students only heartbeat and vote. In order: the bounds, the few Redis commands in memory (``MemoryDB``), the one
store written against them (``RoomStore``), and this process's students (``Wakener``), rerun when their room changes.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from explorer.runtime.memory import TurnQueue
from explorer.runtime.patches import rerun_session, session_active

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: a code read off a projector
CODE_LENGTH = 5
IDLE_SECONDS = 4 * 3600  # a room without a write for this long is gone
ACTIVE_SECONDS = 10  # a student counts as present for this long after a heartbeat
MAX_STUDENTS = 200
MAX_QUESTIONS = 200  # questions with votes or reveals in one room
MAX_ROOMS = 1000  # open rooms in one store
MAX_CHOICE_CHARS = 40
MAX_PROMPT_CHARS = 2000  # a question's prompt as the store keeps it for the teacher's results
PACE_MARKS = ("fast", "got")  # a student's "Too fast" or "Got it" on the teacher's step
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
    step: int = 0  # changes when the teacher moves to another step or page, not on a reveal or a picked cell


@dataclass(frozen=True)
class Result:
    """One row of a room's results: how many students chose ``choice`` in ``question`` (anonymous)."""

    question: str  # the question's key, as the room stores its votes
    prompt: str  # Markdown, as the students read it ("" when the room never learned it)
    choice: str  # a choice, or a number as the students typed it ("" for a number question without votes)
    count: int
    revealed_at: str | None  # when the teacher revealed it, UTC ISO 8601 ("2026-12-08T09:15:00Z"); None: not revealed


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


Listener = Callable[[str | None], None]
CHANNEL = "rooms:changed"  # where a move or a reveal is published, for every process's listener
ROOMS = "rooms"  # a hash: each open room's code -> when it expires


class MemoryDB:
    """The few Redis commands the store sends, on hashes in this process's memory: the store of one process."""

    def __init__(self, clock=time.time):
        self._hashes: dict[str, dict[str, str]] = {}
        self._expires: dict[str, float] = {}  # key -> when it is forgotten
        self._lock = threading.Lock()  # every session's thread reads and writes the rooms
        self._clock = clock
        self._now = self._sweep_at = clock()
        self._published: list[str] = []
        self.subscribers: list[Listener] = []

    def run(self, commands: Iterable[tuple]) -> list:
        """Commands as one step, as a Redis transaction; then the subscribers hear what was published (outside the
        lock: a subscriber reads the store)."""
        with self._lock:
            self._now = self._clock()
            if self._now >= self._sweep_at:  # every expired key is forgotten once a minute, a command's at once
                self._sweep_at = self._now + 60
                for key in [key for key, end in self._expires.items() if end <= self._now]:
                    self.delete(key)
            results = [getattr(self, name)(*args) for name, *args in commands]
            published, self._published = self._published, []
        for message in published:
            for subscriber in list(self.subscribers):
                subscriber(message)
        return results

    def _hash(self, key: str, write: bool = False) -> dict[str, str]:
        if key in self._expires and self._expires[key] <= self._now:
            self.delete(key)
        return self._hashes.setdefault(key, {}) if write else self._hashes.get(key, {})

    def hget(self, key: str, field: str) -> str | None:
        return self._hash(key).get(field)

    def hgetall(self, key: str) -> dict[str, str]:
        return dict(self._hash(key))

    def hset(self, key: str, field: str, value: object) -> None:
        self._hash(key, write=True)[field] = str(value)

    def hsetnx(self, key: str, field: str, value: object) -> bool:
        found = self._hash(key, write=True)
        new = field not in found
        found.setdefault(field, str(value))
        return new

    def hincrby(self, key: str, field: str, amount: int) -> int:
        found = self._hash(key, write=True)
        found[field] = str(value := int(found.get(field, 0)) + amount)
        return value

    def hdel(self, key: str, *fields: str) -> None:
        found = self._hash(key)
        for field in fields:
            found.pop(field, None)
        if not found:  # as in Redis, a hash without fields is no key
            self.delete(key)

    def expire(self, key: str, seconds: float) -> None:
        if key in self._hashes:
            self._expires[key] = self._now + seconds

    def delete(self, key: str) -> None:
        self._hashes.pop(key, None)
        self._expires.pop(key, None)

    def publish(self, channel: str, message: str) -> None:
        self._published.append(message)


class RoomStore:
    """The rooms in ``db``: a decoding ``redis.Redis`` shared by several app processes, or this process's
    ``MemoryDB``. A room is hashes under ``room:CODE`` (token digest, version, position as JSON), ``:seen``
    (heartbeat and following), ``:questions`` ("0": has votes, "1": revealed) and ``:votes:QUESTION``; every
    write renews their time to live (``IDLE_SECONDS``), and a move or a reveal is published on ``CHANNEL``."""

    def __init__(self, db=None, clock=time.time, listen_client=None):
        self.db = MemoryDB(clock) if db is None else db
        self._clock = clock
        self._listen_client = listen_client or db  # Redis's subscription, without a read timeout
        self._listeners: list[Listener] = []

    @classmethod
    def from_url(cls, url: str) -> RoomStore:
        import redis

        return cls(
            redis.Redis.from_url(url, decode_responses=True, socket_timeout=5),
            listen_client=redis.Redis.from_url(url, decode_responses=True, health_check_interval=30),
        )

    def on_change(self, listener: Listener) -> None:
        """``listener`` hears the code of every room moved or revealed in by any process sharing the store, and
        None when changes may have been missed; the first one starts the hearing."""
        self._listeners.append(listener)
        if len(self._listeners) > 1:
            return
        if isinstance(self.db, MemoryDB):
            self.db.subscribers.append(self._changed)
        else:
            # Redis's subscription blocks while it waits for a message: it gets a thread of its own
            threading.Thread(target=self._listen, name="rooms-listener", daemon=True).start()

    def _changed(self, code: str | None) -> None:
        for listener in list(self._listeners):
            try:
                listener(code)
            except Exception:  # one listener's failure must not stop the store's writes or its listener thread
                _LOG.exception("rooms: a change listener failed")

    def _listen(self) -> None:
        """Hear every process's moves and reveals; after a lost connection, subscribe again and say so."""
        import redis

        subscribed_before = False
        while True:
            try:
                pubsub = self._listen_client.pubsub()
                pubsub.subscribe(CHANNEL)
                while True:
                    message = pubsub.get_message(timeout=5.0) or {}  # {}: nothing within 5 s
                    if message.get("type") == "subscribe":
                        if subscribed_before:  # changes made while the connection was lost were not heard
                            self._changed(None)
                        subscribed_before = True
                    elif message.get("type") == "message":
                        self._changed(message["data"])
            except (redis.RedisError, OSError) as error:
                _LOG.warning("rooms: lost Redis (%s); subscribing again in 1 s", error)
                time.sleep(1.0)

    def _run(self, *commands: tuple) -> list:
        """Commands such as ("hget", key, field), sent together: one round trip to Redis."""
        if isinstance(self.db, MemoryDB):
            return self.db.run(commands)
        pipe = self.db.pipeline()
        for name, *args in commands:
            getattr(pipe, name)(*args)
        return pipe.execute()

    def _room(self, code: str, *reads: tuple, token: str | None = None, teacher: bool = False) -> list:
        """The room's token digest and what ``reads`` read; raises unless the room is found (with ``teacher``: and
        the token is its teacher's)."""
        found = self._run(("hget", f"room:{code}", "token"), *reads)
        if found[0] is None:
            raise RoomGoneError(code)
        if teacher and not token_matches(found[0], token):
            raise PermissionError("Only the teacher who opened this room can move it or reveal answers.")
        return found

    def _write(self, code: str, *commands: tuple, more: tuple[str, ...] = (), publish: bool = False) -> list:
        """``commands``, then the room's keys (and ``more``) live on for ``IDLE_SECONDS``; ``publish`` a move."""
        parts = ("", ":seen", ":questions", ":asked", ":reveals", ":pace")
        keys = [f"room:{code}{part}" for part in parts] + list(more)
        renew = [("expire", key, IDLE_SECONDS) for key in keys] + [("hset", ROOMS, code, self._clock() + IDLE_SECONDS)]
        return self._run(*commands, *renew, *([("publish", CHANNEL, code)] if publish else []))

    def create(self) -> tuple[str, str]:
        """Open a room; returns its code and its teacher's token."""
        token = secrets.token_urlsafe(24)
        now = self._clock()
        (rooms,) = self._run(("hgetall", ROOMS))
        gone = [code for code, end in rooms.items() if float(end) <= now]
        if len(rooms) - len(gone) >= MAX_ROOMS:
            raise RoomFullError(f"This server has {MAX_ROOMS} rooms open; try again later.")
        for _ in range(100):
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            if self._run(("hsetnx", f"room:{code}", "token", digest(token)))[0]:
                self._write(code, ("hset", f"room:{code}", "version", 0), *(("hdel", ROOMS, c) for c in gone))
                return code, token
        raise RoomFullError("No free room code was found; try again.")

    def snapshot(self, code: str) -> Snapshot:
        """The room now; raises ``RoomGoneError``."""
        room = f"room:{code}"
        reads = ("hgetall", room), ("hgetall", f"{room}:seen"), ("hgetall", f"{room}:questions")
        _, found, seen, questions = self._room(code, *reads)
        now = self._clock()
        present = [follows == "1" for at, follows in map(str.split, seen.values()) if now - float(at) <= ACTIVE_SECONDS]
        revealed = frozenset(question for question, state in questions.items() if state == "1")
        position = json.loads(found["position"]) if found.get("position") else None
        version, step = int(found.get("version") or 0), int(found.get("step") or 0)
        return Snapshot(version, position, revealed, sum(present), len(present) - sum(present), step)

    def version(self, code: str) -> int:
        """The room's version alone, the cheap read; raises ``RoomGoneError``."""
        return int(self._room(code, ("hget", f"room:{code}", "version"))[1] or 0)

    def is_teacher(self, code: str, token: str) -> bool:
        """Whether ``token`` is the room's teacher's; raises ``RoomGoneError``."""
        return token_matches(self._room(code)[0], token)

    def publish(self, code: str, token: str, position: dict) -> int:
        """Move the room to ``position`` (the teacher's only); returns the new version. Another step or page is a
        new ``step`` too, which starts its pace afresh."""
        room = f"room:{code}"
        _, old = self._room(code, ("hget", room, "position"), token=token, teacher=True)
        changes = [("hset", room, "position", json.dumps(position)), ("hincrby", room, "version", 1)]
        if old is None or another_step(json.loads(old), position):
            changes += [("hincrby", room, "step", 1), ("delete", f"{room}:pace")]
        return int(self._write(code, *changes, publish=True)[1])

    def reveal(
        self, code: str, token: str, question: str, revealed: bool = True, prompt: str = "", choices=None
    ) -> None:
        """Reveal (or hide again) a question's answer for every student (the teacher's only), noting when; the
        ``prompt`` and ``choices`` are kept for the results."""
        questions = f"room:{code}:questions"
        _, asked = self._room(code, ("hgetall", questions), token=token, teacher=True)
        if revealed:
            room_for_question(question, asked)
            when = datetime.datetime.fromtimestamp(self._clock(), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            changes = [("hset", questions, question, "1"), ("hset", f"room:{code}:reveals", question, when)]
            changes += self._asked(code, question, prompt, choices)
        else:  # asked again: a fresh vote
            changes = [
                ("hdel", questions, question),
                ("hdel", f"room:{code}:reveals", question),
                ("delete", f"room:{code}:votes:{question}"),
            ]
        self._write(code, *changes, ("hincrby", f"room:{code}", "version", 1), publish=True)

    def _asked(self, code: str, question: str, prompt: str, choices) -> list[tuple]:
        """The command that keeps a question's prompt and choices, the first time they are given."""
        if not prompt:
            return []
        shown = {"prompt": prompt[:MAX_PROMPT_CHARS], "choices": None if choices is None else list(choices)}
        return [("hsetnx", f"room:{code}:asked", question, json.dumps({**shown, "at": self._clock()}))]

    def heartbeat(self, code: str, student: str, following: bool) -> None:
        """A student is here, following or exploring; ``RoomFullError`` for a new one beyond ``MAX_STUDENTS``."""
        seen = f"room:{code}:seen"
        _, known = self._room(code, ("hget", seen, student))
        now = self._clock()
        stale = []
        if known is None:
            (students,) = self._run(("hgetall", seen))
            stale = [s for s, value in students.items() if now - float(value.split()[0]) > ACTIVE_SECONDS]
            if len(students) - len(stale) >= MAX_STUDENTS:
                raise RoomFullError(f"This room is full: it holds {MAX_STUDENTS} students.")
        self._write(code, *(("hdel", seen, s) for s in stale), ("hset", seen, student, f"{now} {int(following)}"))

    def vote(self, code: str, student: str, question: str, choice: str, prompt: str = "", choices=None) -> None:
        """A present student's answer to a question not yet revealed; a later vote replaces it. The ``prompt`` and
        ``choices`` are kept for the results."""
        if len(choice := str(choice)) > MAX_CHOICE_CHARS:
            raise ValueError(f"An answer has at most {MAX_CHOICE_CHARS} characters.")
        questions, votes = f"room:{code}:questions", f"room:{code}:votes:{question}"
        _, present, asked = self._room(code, ("hget", f"room:{code}:seen", student), ("hgetall", questions))
        if present is None or asked.get(question) == "1":
            return
        room_for_question(question, asked)
        changes = ("hsetnx", questions, question, "0"), ("hset", votes, student, choice)
        self._write(code, *changes, *self._asked(code, question, prompt, choices), more=(votes,))

    def tally(self, code: str, question: str) -> dict[str, int]:
        """How many students chose each answer."""
        return dict(collections.Counter(self._room(code, ("hgetall", f"room:{code}:votes:{question}"))[1].values()))

    def vote_of(self, code: str, student: str, question: str) -> str | None:
        """The student's vote on a question (None: none), for their session after a reload or in a new tab."""
        return self._room(code, ("hget", f"room:{code}:votes:{question}", student))[1]

    def results(self, code: str, token: str) -> list[Result]:
        """Every question with votes or a reveal, in the order the room first heard of them: a row per choice (0s
        too) or per distinct number answer, smallest first (the teacher's only)."""
        room = f"room:{code}"
        reads = ("hgetall", f"{room}:questions"), ("hgetall", f"{room}:asked"), ("hgetall", f"{room}:reveals")
        _, questions, asked, reveals = self._room(code, *reads, token=token, teacher=True)
        shown = {question: json.loads(asked[question]) if question in asked else {} for question in questions}
        order = sorted(questions, key=lambda question: (shown[question].get("at", float("inf")), question))
        votes = self._run(*(("hgetall", f"{room}:votes:{question}") for question in order)) if order else []
        rows = []
        for question, chosen in zip(order, votes, strict=True):
            counts, choices = collections.Counter(chosen.values()), shown[question].get("choices")
            if choices is None:
                choices = sorted(counts, key=number_first) or [""]
            else:
                choices += sorted(set(counts) - set(choices))  # none unless the question's choices changed
            prompt, when = shown[question].get("prompt", ""), reveals.get(question)
            rows += [Result(question, prompt, choice, counts[choice], when) for choice in choices]
        return rows

    def pace(self, code: str, student: str, step: int, mark: str) -> bool:
        """A present student's "Too fast" (``fast``) or "Got it" (``got``) on the step they saw; another press on
        that step replaces theirs. False when the teacher has moved on since (nothing is counted)."""
        if mark not in PACE_MARKS:
            raise ValueError(f"A pace is one of {PACE_MARKS}.")
        room = f"room:{code}"
        _, present, now = self._room(code, ("hget", f"{room}:seen", student), ("hget", room, "step"))
        if present is None or int(now or 0) != step:
            return False
        self._write(code, ("hset", f"{room}:pace", student, f"{step} {mark}"))
        return True

    def pace_counts(self, code: str) -> dict[str, int]:
        """How many students pressed each pace mark on the teacher's step now."""
        room = f"room:{code}"
        _, step, marks = self._room(code, ("hget", room, "step"), ("hgetall", f"{room}:pace"))
        counts = collections.Counter(mark.split()[1] for mark in marks.values() if mark.split()[0] == str(step or 0))
        return {mark: counts[mark] for mark in PACE_MARKS}


def another_step(old: dict, new: dict) -> bool:
    """Whether the teacher moved to another page or step (not another cell, token or head on the same step)."""
    return old.get("page") != new.get("page") or old.get("params", {}).get("step") != new.get("params", {}).get("step")


def number_first(answer: str) -> tuple:
    """Numbers by value, before any other answer."""
    try:
        return (0, float(answer), answer)
    except ValueError:
        return (1, 0.0, answer)


def room_for_question(question: str, asked: dict[str, str]) -> None:
    """Room for ``question`` beside the ``asked`` ones, or ``RoomFullError``."""
    if question not in asked and len(asked) >= MAX_QUESTIONS:
        raise RoomFullError(f"A room holds at most {MAX_QUESTIONS} questions.")


# This process's students: each run enrols its session; when its room changes (here or in another process) the
# store's listener reruns each following student's session, as Streamlit's ``runOnSave`` does, and the woken runs
# take turns (thirty runs sharing Python's thread by time slices all end late; one after another end one by one).
# A thread heartbeats every enrolled student whose browser is connected and forgets closed tabs.


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
    """The enrolled sessions of one process (by Streamlit session id) and their wake-ups. ``rerun(session_id,
    fragment_id)`` reruns a session (that fragment alone, when given); ``active(session_id)``: its browser is on."""

    def __init__(self, store: RoomStore, rerun=None, active=None):
        # No lock: each change is one dict or set operation, which the interpreter does whole
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
        """A student's run on ``page``: note it, and heartbeat now when it is new here or changed its mind."""
        known = self._members.get(session_id)
        fragment = known.fragment if known and known.page == page else ""
        self._members[session_id] = Member(code, student, following, page, fragment)
        if self._unstarted.pop("heartbeat", False):
            # renews every enrolled student's presence in the store, whether or not the room moves
            threading.Thread(target=self._beat_forever, name="rooms-heartbeat", daemon=True).start()
        if known is None or (known.code, known.student, known.following) != (code, student, following):
            self._store.heartbeat(code, student, following)

    def page_fragment(self, session_id: str | None, fragment_id: str) -> None:
        member = self._members.get(session_id)
        if member is not None:
            member.fragment = fragment_id

    def leave(self, session_id: str | None) -> None:
        self._members.pop(session_id, None)
        self._delivered.pop(session_id, None)

    def members(self) -> dict[str, Member]:
        return self._members.copy()

    def changed(self, code: str | None) -> None:
        """Room ``code`` moved or revealed (None: any may have): wake its following students here, only the page's
        fragment for those on the Live room page or the teacher's page, the whole app for the others."""
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
        """The session's next run is one this wakener started: it takes a turn and reads ``snapshot``."""
        self._woken.add(session_id)
        if snapshot is not None:
            self._delivered[session_id] = snapshot

    def delivered(self, session_id: str, code: str) -> Snapshot | None:
        """The room as read when this session was last woken, if its run has not taken it yet: one read per move,
        not one per student; a newer one's wake-up is on its way."""
        snapshot = self._delivered.pop(session_id, None)
        member = self._members.get(session_id)
        return snapshot if member is not None and member.code == code else None

    def turn(self, session_id: str | None) -> contextlib.AbstractContextManager:
        """Around a session's run: a run this wakener started waits for its turn, one at a time."""
        try:
            self._woken.remove(session_id)  # one step: a wake-up that lands meanwhile is not lost
        except KeyError:
            return contextlib.nullcontext()
        return self._turns.turn()

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
