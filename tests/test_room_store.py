"""The live room's store (``explorer.room.store``, as ``explorer.room.make_store`` makes it): the same tests in memory
and in Redis.

The Redis store runs against a real ``redis-server`` started on a free loopback port. Without one the Redis
tests are skipped, except in CI (``CI=true``), where .ci/run installs it and a missing one fails.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

import explorer.room as rooms
from explorer.room import store as store_module
from explorer.room.store import MemoryDB, RoomFullError, RoomGoneError, RoomStore


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
        return RoomStore(clock=clock), clock
    url = request.getfixturevalue("redis_url")
    store = RoomStore.from_url(url)
    store.db.flushdb()
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
    position = {"page": "causal_mask", "params": {"step": "zero-and-renormalize", "text": "Your journey"}}
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
    assert store.is_teacher(code, right)
    assert not store.is_teacher(code, token) and not store.is_teacher(code, other_token)
    with pytest.raises(RoomGoneError):
        store.is_teacher("ZZZZZ", right)


def test_a_wrong_or_expired_code_is_gone(store_and_clock):
    store, clock = store_and_clock
    with pytest.raises(RoomGoneError, match="no open room"):
        store.version("ZZZZZ")
    code, token = store.create()
    clock.now += store_module.IDLE_SECONDS - 5
    store.heartbeat(code, "s1", True)  # a write keeps it open
    clock.now += store_module.IDLE_SECONDS - 5
    assert store.version(code) == 0
    if isinstance(store.db, MemoryDB):
        clock.now += 10
    else:  # Redis keeps its own time: its time to live ends the room
        store.db.expire(f"room:{code}", 1)
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
    assert [store.vote_of(code, s, "q1") for s in ("a", "b", "stranger")] == ["x", "y", None]  # after a reload
    assert store.vote_of(code, "a", "q2") is None
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


def test_a_reveal_notes_its_utc_time_and_asking_again_forgets_it(store_and_clock):
    store, clock = store_and_clock
    clock.now = 1_796_720_400.0  # 2026-12-08 09:00:00 UTC
    code, token = store.create()
    store.reveal(code, token, "q1", prompt="Which?", choices=("x", "y"))
    assert [row.revealed_at for row in store.results(code, token)] == ["2026-12-08T09:00:00Z"] * 2
    store.reveal(code, token, "q1", revealed=False)  # asked again
    assert store.results(code, token) == []


def test_the_results_count_every_choice_and_every_distinct_number_anonymously(store_and_clock):
    store, clock = store_and_clock
    clock.now = 1_796_720_400.0 - 2
    code, token = store.create()
    for student in "abcd":
        store.heartbeat(code, student, True)
    choices = ("x", "=HYPERLINK(1)", "z")
    for student, choice in zip("abc", ("x", "=HYPERLINK(1)", "x"), strict=True):
        store.vote(code, student, "mc", choice, prompt="Which **token**?", choices=choices)
    clock.now += 1  # asked after "mc": listed after it
    for student, number in zip("abcd", ("0.50", "1.00", "0.50", "-0.25"), strict=True):
        store.vote(code, student, "num", number, prompt="What sum?")
    clock.now += 1  # 2026-12-08 09:00:00 UTC
    store.reveal(code, token, "mc")
    rows = store.results(code, token)
    assert [(r.question, r.choice, r.count) for r in rows] == [
        ("mc", "x", 2),
        ("mc", "=HYPERLINK(1)", 1),
        ("mc", "z", 0),  # a choice nobody picked is a row too
        ("num", "-0.25", 1),
        ("num", "0.50", 2),
        ("num", "1.00", 1),
    ]
    assert {(r.question, r.prompt, r.revealed_at) for r in rows} == {
        ("mc", "Which **token**?", "2026-12-08T09:00:00Z"),
        ("num", "What sum?", None),
    }
    with pytest.raises(PermissionError):
        store.results(code, "not the token")
    text = rooms.results_csv(rows)
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == ["question_id", "question", "choice", "count", "revealed", "revealed_at_utc"]
    assert parsed[1] == ["mc", "Which token?", "x", "2", "yes", "2026-12-08T09:00:00Z"]
    assert parsed[2][2] == "'=HYPERLINK(1)"  # shown in a spreadsheet, never run
    assert parsed[4] == ["num", "What sum?", "-0.25", "1", "no", ""]  # a number stays a number
    assert not any(student in text.split(",") for student in "abcd")  # no voter ids


def test_pace_counts_one_mark_per_student_on_the_teachers_step_and_a_move_resets_it(store_and_clock):
    store, _ = store_and_clock
    code, token = store.create()
    store.publish(code, token, {"page": "causal_mask", "params": {"step": "unmasked-weights"}})
    step = store.snapshot(code).step
    for student in "abc":
        store.heartbeat(code, student, True)
    assert store.pace(code, "a", step, "fast") and store.pace(code, "b", step, "got")
    store.pace(code, "a", step, "fast")  # pressed again: still one
    store.pace(code, "c", step, "fast")
    store.pace(code, "c", step, "got")  # changed their mind
    assert not store.pace(code, "stranger", step, "fast")  # never heartbeated: not counted
    assert store.pace_counts(code) == {"fast": 1, "got": 2}
    store.publish(code, token, {"page": "causal_mask", "params": {"step": "unmasked-weights", "cell": "2,1"}})
    assert store.snapshot(code).step == step and store.pace_counts(code) == {"fast": 1, "got": 2}  # same step
    store.reveal(code, token, "q1")
    assert store.pace_counts(code) == {"fast": 1, "got": 2}  # a reveal is no move
    store.publish(code, token, {"page": "causal_mask", "params": {"step": "the-mask"}})
    assert store.snapshot(code).step == step + 1 and store.pace_counts(code) == {"fast": 0, "got": 0}
    assert not store.pace(code, "a", step, "fast")  # pressed on the step the teacher left: not counted
    assert store.pace_counts(code) == {"fast": 0, "got": 0}
    store.pace(code, "a", step + 1, "got")
    store.publish(code, token, {"page": "dropout", "params": {"step": "the-mask"}})  # another page
    assert store.pace_counts(code) == {"fast": 0, "got": 0}
    with pytest.raises(ValueError):
        store.pace(code, "a", step + 2, "slow")


def test_a_room_is_bounded(store_and_clock, monkeypatch):
    store, _ = store_and_clock
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 3)
    monkeypatch.setattr(store_module, "MAX_QUESTIONS", 2)
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
    store = RoomStore()
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
    monkeypatch.delenv(rooms.URL_VARIABLE, raising=False)
    assert isinstance(rooms.make_store().db, MemoryDB)
    assert isinstance(rooms.STORE, RoomStore) and rooms.WAKENER._store is rooms.STORE
    monkeypatch.setenv(rooms.URL_VARIABLE, redis_url)
    store = rooms.make_store()
    assert not isinstance(store.db, MemoryDB)
    code, _ = store.create()
    assert store.version(code) == 0


class Heard:
    """A change listener that notes what it heard, and lets a test wait for it."""

    def __init__(self):
        self.codes: list[str | None] = []
        self._event = threading.Condition()

    def __call__(self, code: str | None) -> None:
        with self._event:
            self.codes.append(code)
            self._event.notify_all()

    def wait_for(self, code: str, timeout: float = 10.0) -> None:
        with self._event:
            assert self._event.wait_for(lambda: code in self.codes, timeout=timeout), f"{code} not heard: {self.codes}"


def test_moves_and_reveals_are_heard_by_every_process_sharing_the_store(store_and_clock):
    store, _ = store_and_clock
    # in memory, one process: the store itself tells its listeners; in Redis, another process's store does
    other = store if isinstance(store.db, MemoryDB) else RoomStore.from_url(_url_of(store))
    heard = Heard()
    before = 0 if other is store else subscribers(store)
    other.on_change(heard)
    if other is not store:
        wait_subscribed(store, before + 1)
    code, token = store.create()
    store.heartbeat(code, "a", True)
    store.vote(code, "a", "q1", "1")
    assert code not in heard.codes  # a heartbeat or a vote moves no one
    store.publish(code, token, {"page": "dropout", "params": {}})
    heard.wait_for(code)
    heard.codes.clear()
    store.reveal(code, token, "q1")
    heard.wait_for(code)
    with pytest.raises(PermissionError):
        store.publish(code, "not the token", {"page": "x", "params": {}})


def subscribers(store) -> int:
    from explorer.room.store import CHANNEL

    return store.db.pubsub_numsub(CHANNEL)[0][1]


def wait_subscribed(store, listeners: int) -> None:
    """Until ``listeners`` connections listen (earlier tests' stores keep theirs)."""
    from explorer.room.store import CHANNEL

    deadline = time.monotonic() + 10
    while store.db.pubsub_numsub(CHANNEL)[0][1] < listeners:
        assert time.monotonic() < deadline, "the listener did not subscribe"
        time.sleep(0.02)


def test_after_a_lost_connection_the_listener_says_every_room_may_have_changed(redis_url):
    store = RoomStore.from_url(redis_url)
    store.db.flushdb()
    heard = Heard()
    before = subscribers(store)
    store.on_change(heard)
    wait_subscribed(store, before + 1)
    assert heard.codes == []  # the first subscription missed nothing: no student is woken for it
    store.db.client_kill_filter(_type="pubsub")  # Redis drops the subscription, as a restart would
    heard.wait_for(None)  # subscribed again: every room may have changed meanwhile


def _url_of(store) -> str:
    kwargs = store.db.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def test_a_failing_listener_does_not_break_the_write_or_the_others():
    store = RoomStore()
    heard = Heard()

    def broken(code):
        raise RuntimeError("a listener's bug")

    store.on_change(broken)
    store.on_change(heard)
    code, token = store.create()
    assert store.publish(code, token, {"page": "p", "params": {}}) == 1
    assert heard.codes == [code]


def test_the_wakener_reruns_the_following_students_of_the_room_that_changed():
    from explorer.room.store import Wakener

    store = RoomStore()
    woken: list[str] = []
    connected = {"s1", "s2", "s3", "s4"}
    wakener = Wakener(store, rerun=lambda session, fragment: woken.append(session), active=connected.__contains__)
    room_a, token_a = store.create()
    room_b, _ = store.create()
    wakener.enrol("s1", room_a, "alice", True)
    wakener.enrol("s2", room_a, "bob", False)  # exploring: the teacher's moves wait for them
    wakener.enrol("s3", room_b, "carol", True)
    wakener.enrol("s4", room_a, "dave", True)
    assert (store.snapshot(room_a).following, store.snapshot(room_a).exploring) == (2, 1)  # enrolling heartbeats
    store.publish(room_a, token_a, {"page": "dropout", "params": {}})
    assert sorted(woken) == ["s1", "s4"]
    woken.clear()
    wakener.changed(None)  # after a lost connection: every following student
    assert sorted(woken) == ["s1", "s3", "s4"]
    woken.clear()
    wakener.enrol("s2", room_a, "bob", True)  # bob follows again
    store.reveal(room_a, token_a, "q1")
    assert sorted(woken) == ["s1", "s2", "s4"]


def test_the_wakener_heartbeats_connected_students_and_forgets_closed_tabs():
    from explorer.room.store import Wakener

    clock = Clock()
    store = RoomStore(clock=clock)
    woken: list[str] = []
    connected = {"s1", "s2"}
    wakener = Wakener(store, rerun=lambda session, fragment: woken.append(session), active=connected.__contains__)
    code, _ = store.create()
    wakener.enrol("s1", code, "alice", True)
    wakener.enrol("s2", code, "bob", True)
    connected.discard("s2")  # bob closed the tab
    clock.now += store_module.ACTIVE_SECONDS - 1
    wakener.beat()
    clock.now += 2  # alice's first heartbeat is now too old; the beat renewed it
    snapshot = store.snapshot(code)
    assert (snapshot.following, snapshot.exploring) == (1, 0)
    assert set(wakener.members()) == {"s1"}
    clock.now += store_module.IDLE_SECONDS + 1  # the room expired
    wakener.beat()
    assert woken == ["s1"]  # woken, so that its run says the room has closed


def test_a_student_on_the_teachers_page_reruns_only_the_page_and_others_the_whole_app():
    from explorer.room.store import Wakener

    store = RoomStore()
    woken: list[tuple[str, str]] = []
    wakener = Wakener(store, rerun=lambda session, fragment: woken.append((session, fragment)), active=bool)
    code, token = store.create()
    wakener.enrol("s1", code, "alice", True, "causal_mask")
    wakener.page_fragment("s1", "page-fragment")
    wakener.enrol("s2", code, "bob", True, "dropout")
    wakener.page_fragment("s2", "page-fragment")
    store.publish(code, token, {"page": "causal_mask", "params": {"step": "zero-and-renormalize"}})
    assert sorted(woken) == [("s1", "page-fragment"), ("s2", "")]  # bob must switch pages: the whole app
    wakener.enrol("s1", code, "alice", True, "dropout")  # alice's page changed: its fragment is not known yet
    woken.clear()
    store.publish(code, token, {"page": "dropout", "params": {}})
    assert sorted(woken) == [("s1", ""), ("s2", "page-fragment")]


def test_a_student_on_the_live_room_page_reruns_only_the_page_when_the_teacher_switches_pages():
    from explorer.room.store import LIVE_PAGE, Wakener

    store = RoomStore()
    woken: list[tuple[str, str]] = []
    wakener = Wakener(store, rerun=lambda session, fragment: woken.append((session, fragment)), active=bool)
    code, token = store.create()
    wakener.enrol("s1", code, "alice", True, LIVE_PAGE)
    wakener.page_fragment("s1", "page-fragment")
    wakener.enrol("s2", code, "bob", True, "causal_mask")  # bob wandered to a page of his own
    wakener.page_fragment("s2", "page-fragment")
    for page in ("causal_mask", "dropout"):
        woken.clear()
        store.publish(code, token, {"page": page, "params": {"step": "2"}})
        assert woken[0] == ("s1", "page-fragment")
    assert woken[1] == ("s2", "")  # to be taken to the Live room page: the whole app


@pytest.mark.parametrize(
    "old, new, needs_the_app",
    [
        ({"step": "2", "text": "a b"}, {"step": "5", "query_n": "4", "head_n": "2", "text": "a b"}, False),
        ({"step": "2", "text": "a b"}, {"step": "5", "query": "3", "head": "1", "text": "a b"}, False),  # old names
        ({"weights": "trained", "layer_head": "1"}, {"weights": "trained", "layer_head_n": "2"}, False),  # same head
        ({"input": "text", "text": "a b"}, {"input": "text", "text": "a b c"}, True),
        ({"d_out": "4"}, {"d_out": "4", "cell": "2,1", "second": "x y"}, False),
        ({"d_out": "4"}, {"d_out": "2"}, True),
        ({}, {"win": "1-48"}, True),
    ],
)
def test_a_move_needs_the_whole_app_only_when_the_sidebar_shows_something_else(old, new, needs_the_app):
    from explorer.room import sidebar_differs

    assert sidebar_differs(old, new) is needs_the_app


def test_woken_runs_take_turns_and_other_runs_do_not_wait():
    from explorer.room.store import Wakener

    store = RoomStore()
    wakener = Wakener(store, rerun=lambda session, fragment: None, active=bool)
    code, token = store.create()
    for session in ("s1", "s2"):
        wakener.enrol(session, code, session, True, "p")
    store.publish(code, token, {"page": "p", "params": {}})
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def run(session: str) -> None:
        with wakener.turn(session):
            order.append(f"{session} in")
            inside.set()
            release.wait(timeout=10)
            order.append(f"{session} out")

    first = threading.Thread(target=run, args=("s1",))
    first.start()
    assert inside.wait(timeout=10)
    second = threading.Thread(target=run, args=("s2",))
    second.start()
    with wakener.turn("s3"):  # a run the wakener did not start never waits
        order.append("s3")
    time.sleep(0.2)
    assert order == ["s1 in", "s3"]  # s2 waits for s1's turn to end
    release.set()
    first.join(timeout=10)
    second.join(timeout=10)
    assert order == ["s1 in", "s3", "s1 out", "s2 in", "s2 out"]
    with wakener.turn("s1"):  # its wake-up was used: a later run of s1 does not wait
        pass


def test_a_move_reads_the_room_once_for_the_class_and_each_woken_run_takes_that_read():
    from explorer.room.store import Wakener

    class Counting(RoomStore):
        reads = 0

        def snapshot(self, code):
            Counting.reads += 1
            return super().snapshot(code)

    store = Counting()
    wakener = Wakener(store, rerun=lambda session, fragment: None, active=bool)
    code, token = store.create()
    other, _ = store.create()
    for n in range(30):
        wakener.enrol(f"s{n}", code, f"student{n}", True, "live")
    wakener.enrol("away", code, "eve", False, "dropout")  # exploring: not woken, nothing delivered
    Counting.reads = 0
    version = store.publish(code, token, {"page": "dropout", "params": {"step": "one-draw"}})
    assert Counting.reads == 1  # one read for thirty students
    delivered = wakener.delivered("s0", code)
    assert delivered.version == version and delivered.position["params"] == {"step": "one-draw"}
    assert wakener.delivered("s0", code) is None  # taken once: a later run of its own reads the store
    assert wakener.delivered("away", code) is None
    wakener.enrol("s1", other, "student1", True, "live")  # s1 joined another room meanwhile
    assert wakener.delivered("s1", code) is None and wakener.delivered("s1", other) is None
    wakener.leave("s2")
    assert wakener.delivered("s2", code) is None
    assert wakener.delivered("s3", code).version == version
