"""The live room's store in Redis, for several app processes (``ATTENTION_ROOMS_URL=redis://host:6379/0``).

One room is a few keys under ``room:CODE``: a hash (the token's digest, the version, the position as JSON),
two sorted sets of students by last heartbeat (``following``, ``exploring``), a set of revealed questions,
a set of questions with votes or reveals, and one hash of votes per question. Every write renews the keys'
time to live, so Redis forgets a room ``IDLE_SECONDS`` after its last write. A move or a reveal is published on
the channel ``rooms:changed``, which each process's listener thread hears (``on_change``).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time

from explorer.room.store import (
    ACTIVE_SECONDS,
    IDLE_SECONDS,
    MAX_QUESTIONS,
    MAX_STUDENTS,
    RoomFullError,
    RoomGoneError,
    RoomStore,
    Snapshot,
    check_choice,
    digest,
    new_code,
    token_matches,
)

_PARTS = ("", ":following", ":exploring", ":revealed", ":questions")
CHANNEL = "rooms:changed"
_LOG = logging.getLogger(__name__)


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
        """Also start hearing the other processes (once: the process's one ``Wakener`` calls this, made under
        ``explorer.room._MAKING``)."""
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

    def _keys(self, code: str) -> list[str]:
        return [f"room:{code}{part}" for part in _PARTS]

    def _touch(self, pipe, code: str, *more: str) -> None:
        for key in [*self._keys(code), *more]:
            pipe.expire(key, IDLE_SECONDS)

    def _live(self, code: str, token: str | None = None, *, teacher: bool = False) -> None:
        stored = self._redis.hget(f"room:{code}", "token")
        if stored is None:
            raise RoomGoneError(code)
        if teacher and not token_matches(stored, token):
            raise PermissionError("Only the teacher who opened this room can move it or reveal answers.")

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
        stored = self._redis.hget(f"room:{code}", "token")
        if stored is None:
            raise RoomGoneError(code)
        return token_matches(stored, token)

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
        counts: dict[str, int] = {}
        for choice in self._redis.hvals(f"room:{code}:votes:{question}"):
            counts[choice] = counts.get(choice, 0) + 1
        return counts

    def vote_of(self, code: str, student: str, question: str) -> str | None:
        self._live(code)
        return self._redis.hget(f"room:{code}:votes:{question}", student)
