"""The live room's stores (``explorer.runtime.rooms``): the same tests for memory and for Redis.

The Redis store runs against a real ``redis-server`` started on a free loopback port. Without one the Redis
tests are skipped, except in CI (``CI=true``), where .ci/run installs it and a missing one fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from explorer.runtime import rooms
from explorer.runtime.rooms import store as store_module
from explorer.runtime.rooms.store import MemoryRoomStore, RoomFullError, RoomGoneError


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    binary = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin:/usr/sbin")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is missing in CI (.ci/run installs it)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    pytest.importorskip("redis")
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not start within 20 s")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(params=["memory", "redis"])
def store_and_clock(request):
    clock = Clock()
    if request.param == "memory":
        return MemoryRoomStore(clock=clock), clock
    from explorer.runtime.rooms.redis_store import RedisRoomStore

    url = request.getfixturevalue("redis_url")
    store = RedisRoomStore.from_url(url)
    store._redis.flushdb()
    store._clock = clock
    return store, clock


def test_a_room_has_a_short_unambiguous_code_and_a_long_token(store_and_clock):
    store, _ = store_and_clock
    code, token = store.create()
    assert len(code) == store_module.CODE_LENGTH and set(code) <= set(store_module.ALPHABET)
    assert not set(code) & set("01OIL")
    assert len(token) >= 32 and code not in token
    assert rooms.normal_code(code.lower()[:2] + " " + code.lower()[2:]) == code
    assert rooms.normal_code("O0O0O") is None and rooms.normal_code(None) is None


def test_the_teacher_moves_the_room_and_students_read_it(store_and_clock):
    store, _ = store_and_clock
    code, token = store.create()
    assert store.snapshot(code).position is None
    position = {"page": "causal_mask", "params": {"step": "3", "text": "Your journey"}}
    version = store.publish(code, token, position)
    assert store.version(code) == version == store.snapshot(code).version
    assert store.snapshot(code).position == position


@pytest.mark.parametrize("token", ["", "not-the-token", None])
def test_only_the_token_moves_or_reveals(store_and_clock, token):
    store, _ = store_and_clock
    code, right = store.create()
    other_code, other_token = store.create()
    store.publish(code, right, {"page": "", "params": {}})
    for wrong in (token, other_token):
        with pytest.raises(PermissionError):
            store.publish(code, wrong, {"page": "dropout", "params": {}})
        with pytest.raises(PermissionError):
            store.reveal(code, wrong, "q1")
    snapshot = store.snapshot(code)
    assert snapshot.position == {"page": "", "params": {}} and not snapshot.revealed


def test_a_wrong_or_expired_code_is_gone(store_and_clock):
    store, clock = store_and_clock
    with pytest.raises(RoomGoneError, match="no open room"):
        store.version("ZZZZZ")
    code, token = store.create()
    clock.now += store_module.IDLE_SECONDS - 5
    store.heartbeat(code, "s1", True)  # a write keeps it open
    clock.now += store_module.IDLE_SECONDS - 5
    assert store.version(code) == 0
    if isinstance(store, MemoryRoomStore):
        clock.now += 10
    else:  # Redis keeps its own time: its time to live ends the room
        store._redis.expire(f"room:{code}", 1)
        time.sleep(1.2)
    for action in (lambda: store.version(code), lambda: store.heartbeat(code, "s1", True)):
        with pytest.raises(RoomGoneError):
            action()


def test_counts_of_following_and_exploring_students(store_and_clock):
    store, clock = store_and_clock
    code, _ = store.create()
    for student in ("a", "b", "c"):
        store.heartbeat(code, student, True)
    store.heartbeat(code, "c", False)  # c goes on their own
    snapshot = store.snapshot(code)
    assert (snapshot.following, snapshot.exploring) == (2, 1)
    clock.now += store_module.ACTIVE_SECONDS + 1
    store.heartbeat(code, "a", True)
    snapshot = store.snapshot(code)
    assert (snapshot.following, snapshot.exploring) == (1, 0)  # b and c stopped heartbeating


def test_votes_one_per_student_changeable_until_reveal(store_and_clock):
    store, _ = store_and_clock
    code, token = store.create()
    for student, choice in (("a", "x"), ("b", "x"), ("c", "y")):
        store.heartbeat(code, student, True)
        store.vote(code, student, "q1", choice)
    store.vote(code, "b", "q1", "y")  # b changes their mind
    store.vote(code, "stranger", "q1", "x")  # never heartbeated: not counted
    assert store.tally(code, "q1") == {"x": 1, "y": 2}
    store.reveal(code, token, "q1")
    store.vote(code, "a", "q1", "y")  # too late
    assert store.tally(code, "q1") == {"x": 1, "y": 2}
    assert store.snapshot(code).revealed == {"q1"}
    store.reveal(code, token, "q1", revealed=False)  # asked again
    assert store.tally(code, "q1") == {} and not store.snapshot(code).revealed
    with pytest.raises(ValueError, match="at most"):
        store.vote(code, "a", "q1", "x" * 1000)


def test_reveals_and_moves_change_the_version(store_and_clock):
    store, _ = store_and_clock
    code, token = store.create()
    before = store.version(code)
    store.reveal(code, token, "q1")
    after_reveal = store.version(code)
    store.publish(code, token, {"page": "", "params": {}})
    assert before < after_reveal < store.version(code)


def test_a_room_is_bounded(store_and_clock, monkeypatch):
    store, _ = store_and_clock
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 3)
    monkeypatch.setattr(store_module, "MAX_QUESTIONS", 2)
    import explorer.runtime.rooms.redis_store as redis_rooms

    monkeypatch.setattr(redis_rooms, "MAX_STUDENTS", 3)
    monkeypatch.setattr(redis_rooms, "MAX_QUESTIONS", 2)
    code, token = store.create()
    for student in "abc":
        store.heartbeat(code, student, True)
    with pytest.raises(RoomFullError, match="full: it holds 3 students"):
        store.heartbeat(code, "d", True)
    store.heartbeat(code, "a", False)  # one already in may still switch
    store.vote(code, "a", "q1", "x")
    store.reveal(code, token, "q2")
    with pytest.raises(RoomFullError, match="at most 2 questions"):
        store.vote(code, "a", "q3", "x")
    with pytest.raises(RoomFullError):
        store.reveal(code, token, "q3")


def test_the_memory_store_is_shared_safely_by_threads():
    store = MemoryRoomStore()
    code, _ = store.create()

    def student(name: str) -> None:
        for k in range(50):
            store.heartbeat(code, name, k % 2 == 0)
            store.vote(code, name, "q", str(k % 3))

    threads = [threading.Thread(target=student, args=(f"s{n}",)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(store.tally(code, "q").values()) == 20
    snapshot = store.snapshot(code)
    assert snapshot.following + snapshot.exploring == 20


def test_the_store_is_memory_unless_a_redis_url_is_set(monkeypatch, redis_url):
    from explorer.runtime.rooms.redis_store import RedisRoomStore

    monkeypatch.setattr(rooms, "_STORE", [])
    monkeypatch.delenv(rooms.URL_VARIABLE, raising=False)
    assert isinstance(rooms.room_store(), MemoryRoomStore)
    assert rooms.room_store() is rooms.room_store()
    monkeypatch.setattr(rooms, "_STORE", [])
    monkeypatch.setenv(rooms.URL_VARIABLE, redis_url)
    store = rooms.room_store()
    assert isinstance(store, RedisRoomStore)
    code, _ = store.create()
    assert store.version(code) == 0
