"""A whole lesson in Chromium, on the documented commands: a teacher and three students on two app processes
behind nginx that share rooms through Redis (issue 35, "Done when").

Started as docs/deployment.md says ("Live rooms on one server or several"), on free ports, not 6379, 8500, 8601:

    redis-server --port <free> --save ""
    ATTENTION_ROOMS_URL=redis://127.0.0.1:<free>/0 python deploy/run_cluster.py --processes 2 --port <free>

One Chromium with four browser contexts: the teacher (1280×720, ``?present=1``), two laptop students (1280×720)
and a phone student (390×844, a phone's User-Agent). The teacher and the phone are on the first app process, the
laptops on the second (nginx's route cookie). The lesson: open a room, Next, a page switch, a new sentence, a
question with votes, a reload by one student who votes again, the Reveal, and a kill (SIGKILL) of the first app
process, after which the teacher's Next must still reach every student and ``run_cluster.py`` must restart the
dead process.

Each teacher move is timed as in ``test_room.py``, from the teacher's click on the clock the four browsers share:
*delivered*, until a student's address bar shows the move (its run on the server ended), and *shown*, until its
screen shows the step's heading (and sentence, or the verdict). A move that does not arrive within
``LOST_SECONDS`` fails the test; the times themselves are a measurement (how many arrived within 1 s is printed,
and every time goes to ``artifacts/lesson/times.json``), because four browsers painting on two cores make them
depend on the machine. Screenshots of the four screens at each moment go to ``artifacts/lesson/``.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import types
import urllib.request
from pathlib import Path

import pytest
from e2e_support import CUT_SHORT, ROOT, open_page
from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from test_room import LOST_SECONDS, open_room, route_cookies, seen_at, watch

from deploy.run_cluster import free_port, nginx_binary

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

LESSON = ROOT / "artifacts" / "lesson"
TARGET_SECONDS = 1.0  # issue 35: every move reaches every student within 1 s
START_SECONDS = 180  # two Streamlit processes starting at once on a busy 2-core machine
RESTART_SECONDS = 120  # run_cluster.py noticing the dead process and its replacement answering
SENTENCE = "The cat sat on the mat"  # six tokens: six choices, lettered A-F
STUDENTS = ("laptop 1", "laptop 2", "phone")
REVOTER = "laptop 1"
QUESTION = '[data-testid="stMain"] [class*="st-key-predict_"]'  # a "Predict, then reveal" question

VOTE_CHART = """() => {  // the teacher's vote chart as drawn: its title, category labels (and their boxes), counts
  const main = document.querySelector('[data-testid="stMain"]');
  const plots = [...main.querySelectorAll('.js-plotly-plot')];
  const title = (p) => (p.querySelector('.gtitle') || {}).textContent || '';
  const plot = plots.find((p) => /^\\d+ votes?$/.test(title(p)));
  if (!plot || !plot._fullData) return {title: null, titles: plots.map(title)};
  const bars = plot._fullData[0], across = bars.orientation === 'h';  // across: one row per choice
  const ticks = [...plot.querySelectorAll(across ? '.ytick text' : '.xtick text')];
  const frame = plot.getBoundingClientRect();
  return {
    title: title(plot),
    ticks: ticks.map((t) => t.textContent),
    boxes: ticks.map((t) => t.getBoundingClientRect())
      .map((r) => (across ? [r.top, r.bottom] : [r.left, r.right])),
    clipped: ticks.filter((t) => t.getBoundingClientRect().left < frame.left - 0.5).map((t) => t.textContent),
    votes: Array.from(across ? bars.x : bars.y),
  };
}"""


def consecutive_free_ports(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports (``run_cluster.py --first-app-port``)."""
    for _ in range(100):
        first = free_port()
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise RuntimeError(f"no {count} consecutive free ports")


def answers(url: str, timeout: float = 3) -> bool:
    """Whether a Streamlit health URL (an app process's or nginx's) answers "ok"."""
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.read() == b"ok"
    return False


def children(pid: int) -> list[int]:
    """The process ids ``pid`` started and that still run (run_cluster.py's app processes and nginx)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def app_pid(cluster_pid: int, port: int) -> int | None:
    """The app process run_cluster.py runs on ``port``, or None."""
    for child in children(cluster_pid):
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"--server.port" in args and args[args.index(b"--server.port") + 1] == str(port).encode():
                return child
    return None


class Wire:
    """When a tab's websocket frames crossed the network, on the browser's own monotonic clock (Chrome DevTools
    Protocol ``Network.webSocketFrame*`` timestamps, the same clock in every tab of one Chromium): the reruns it
    asked for and the ends of the script runs it received. Taken where the frame arrives, before the page's
    JavaScript sees it: what the servers did, without the painting that four browsers on two cores share."""

    def __init__(self, page) -> None:
        self.sent: list[float] = []  # a rerun_script BackMsg left the browser
        self.finished: list[float] = []  # a script_finished ForwardMsg (not cut short by a rerun) arrived
        cdp = page.context.new_cdp_session(page)
        cdp.on("Network.webSocketFrameSent", lambda event: self._frame(event, BackMsg, self.sent))
        cdp.on("Network.webSocketFrameReceived", lambda event: self._frame(event, ForwardMsg, self.finished))
        cdp.send("Network.enable")

    @staticmethod
    def _frame(event: dict, kind, into: list[float]) -> None:
        frame = event["response"]
        if frame.get("opcode") != 2:  # Streamlit's messages are binary frames
            return
        try:
            message = kind.FromString(base64.b64decode(frame["payloadData"]))
        except (DecodeError, ValueError):
            return
        wanted = "rerun_script" if kind is BackMsg else "script_finished"
        if message.WhichOneof("type") == wanted and (kind is BackMsg or message.script_finished != CUT_SHORT):
            into.append(event["timestamp"])


@pytest.fixture
def redis_url():
    """``redis-server --port <free> --save ""``, as docs/deployment.md starts it; yields its URL for the apps."""
    redis_server = shutil.which("redis-server", path=f"{os.environ.get('PATH', '')}:/usr/bin:/usr/sbin")
    if redis_server is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is missing in CI (.ci/run installs it)")
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [redis_server, "--port", str(port), "--save", ""],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    break
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=20)


@pytest.fixture
def cluster(redis_url):
    """``python deploy/run_cluster.py --processes 2 --port <free> --first-app-port <free>`` with
    ``ATTENTION_ROOMS_URL``, as docs/deployment.md runs it; stopped (and every process it started) after the test."""
    if nginx_binary() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nginx is missing in CI (.ci/run installs it)")
        pytest.skip("nginx is not installed")
    LESSON.mkdir(parents=True, exist_ok=True)
    port, first = free_port(), consecutive_free_ports(2)
    command = [sys.executable, "deploy/run_cluster.py", "--processes", "2", "--port", str(port)]
    command += ["--first-app-port", str(first)]
    log_path = LESSON / "run_cluster.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "ATTENTION_ROOMS_URL": redis_url, "EXPLORER_SHOW_UPSTREAM": "1"},  # X-Upstream
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = types.SimpleNamespace(
        proc=proc, port=port, url=f"http://127.0.0.1:{port}", app_ports=[first, first + 1], log=log_path
    )
    started: set[int] = set()
    try:
        deadline = time.monotonic() + START_SECONDS
        urls = [f"http://127.0.0.1:{p}/_stcore/health" for p in running.app_ports] + [f"{running.url}/_stcore/health"]
        while not all(answers(url) for url in urls):
            assert proc.poll() is None, f"run_cluster.py exited ({proc.returncode}):\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"run_cluster.py did not answer in {START_SECONDS} s"
            time.sleep(0.5)
        running.started = started
        yield running
    finally:
        started.update(children(proc.pid))
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # run_cluster.py stops what it started
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=60)
        for pid in started | set(children(proc.pid)):  # each in its own session: its group is its id
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def upstream(url_port: int, cookie: str) -> str | None:
    """Which app process nginx sends a browser with route cookie ``cookie`` to now."""
    conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=30)
    try:
        conn.request("GET", "/_stcore/health", headers={"Cookie": f"explorer_route={cookie}"})
        reply = conn.getresponse()
        reply.read()
        return reply.getheader("X-Upstream")
    finally:
        conn.close()


def test_a_lesson_on_the_readmes_cluster(cluster, browser):
    cookies = route_cookies(cluster)  # cookies[k] sends a browser to app process k
    opened = []
    problems: list[str] = []  # what the lesson got wrong but could go on after; the test fails on them at the end

    def check(ok: bool, what: str) -> None:
        if not ok:
            problems.append(what)
            print("PROBLEM:", what)

    def tab(process: int, *, phone: bool = False):
        context, app_page = open_page(browser, cluster.url, phone=phone)
        context.add_cookies([{"name": "explorer_route", "value": cookies[process], "url": cluster.url}])
        app_page.wire = Wire(app_page.page)
        opened.append((context, app_page))
        return app_page

    try:
        run_lesson(cluster, cookies, tab, check)
    finally:
        for context, _ in opened:
            context.close()
        print("run_cluster.py logged:\n" + cluster.log.read_text()[-3000:])
    assert not problems, "the lesson went wrong:\n" + "\n".join(problems)


def run_lesson(cluster, cookies, tab, check) -> None:
    teacher = tab(0).goto("causal_mask", "present=1")
    students = {"laptop 1": tab(1), "laptop 2": tab(1), "phone": tab(0, phone=True)}
    everyone = {"teacher": teacher, **students}
    moment = iter(range(1, 100))

    def screenshots(name: str, question: bool = False) -> None:
        """Each screen as its person sees it; with ``question``, scrolled to the question (or its verdict)."""
        number = next(moment)
        for who, app_page in everyone.items():
            if question and app_page.page.locator(QUESTION).count():
                app_page.page.locator(QUESTION).first.scroll_into_view_if_needed()
            app_page.page.screenshot(path=str(LESSON / f"{number:02d}-{name}-{who.replace(' ', '-')}.png"))

    sidebar, code = open_room(teacher)
    for who, student in students.items():
        student.goto("", f"room={code}")
        watch(student, "joined", "shows", [1, "Causal mask", None])
        seen_at(student, "joined")
        assert f"room={code}" in student.page.url and "/live?" in student.page.url, f"{who}: {student.page.url}"
    sidebar.get_by_text("3 following · 0 exploring").wait_for(timeout=30_000)
    screenshots("room-opened")

    times: dict[str, dict | list] = {"load average (1, 5, 15 min) at the start": [round(x, 1) for x in os.getloadavg()]}

    def reaches_all(name: str, action, params: dict | None, shown: list, kind: str = "shows") -> None:
        """Do ``action`` as the teacher; note how long after the click each student's address bar showed
        ``params`` (delivered; None: nothing to see there) and each student's screen showed ``shown``; and, on
        the wire, how long after the teacher's rerun request left their browser the end of each student's last run
        of the move arrived in the student's browser (``Wire``)."""
        for student in students.values():
            if params is not None:
                watch(student, f"{name}-address", "address", ["live", params])
            watch(student, name, kind, shown)
        asked, ended = len(teacher.wire.sent), {who: len(s.wire.finished) for who, s in students.items()}
        clicked = teacher.page.evaluate("Date.now()") / 1000
        action()
        took = {"delivered": {}, "shown": {}, "on the wire": {}}
        for who, student in students.items():
            if params is not None:
                took["delivered"][who] = round(seen_at(student, f"{name}-address") - clicked, 2)
            took["shown"][who] = round(seen_at(student, name) - clicked, 2)
        teacher.page.wait_for_timeout(300)  # lets Playwright hand over the last DevTools events
        sent = teacher.wire.sent[asked:]
        for who, student in students.items():
            runs = student.wire.finished[ended[who] :]
            if sent and runs:
                took["on the wire"][who] = round(runs[-1] - sent[0], 2)
            else:
                check(False, f"{name}: no rerun request from the teacher ({sent}) or no run of {who}'s ({runs})")
        times[name] = took
        print(f"{name}: seconds from the teacher's click to each student: {took}")

    on_step_2 = {"step": "the-mask"}
    reaches_all("Next", teacher.next, on_step_2, [2, "Causal mask", None])
    screenshots("next")

    nav = sidebar.locator('[data-testid="stSidebarNav"] a')
    switch = nav.filter(has_text="Simplified").click
    reaches_all("page switch", switch, {"step": "one-query-scores"}, [1, "Simplified attention", None])
    screenshots("page-switch")

    teacher.choose_own_sentence()  # itself a move: the sidebar's source; wait until every student has it
    for student in students.values():
        watch(student, "own", "address", ["live", {"input": "text"}])
    for student in students.values():
        seen_at(student, "own")
    type_it = lambda: teacher.type_sentence(SENTENCE, wait=False)  # noqa: E731
    reaches_all("new sentence", type_it, {"text": SENTENCE, "input": "text"}, [1, "Simplified attention", SENTENCE])
    teacher.settle()
    screenshots("new-sentence")

    # The question on Simplified step 1: the presenter letters its choices A-F; each student picks one.
    lettered = re.findall(r"^([A-F])\. (.+)$", teacher.page.locator('[data-testid="stMain"]').inner_text(), re.M)
    assert [letter for letter, _ in lettered] == list("ABCDEF"), f"the presenter's choices: {lettered}"
    choices = [text.strip() for _, text in lettered]

    def radio(student):
        return student.page.locator('[data-testid="stMain"] [data-testid="stRadio"] label[data-testid="stRadioOption"]')

    for who, student in students.items():
        radio(student).first.wait_for(timeout=30_000)
        shown = [text.strip() for text in radio(student).all_inner_texts()]
        check(  # the presenter's choices, in its order, lettered as it letters them or not at all
            len(shown) == len(choices)
            and all(
                re.fullmatch(rf"({letter}\. )?{re.escape(choice)}", text)
                for letter, choice, text in zip("ABCDEF", choices, shown, strict=False)
            ),
            f"{who}'s choices {shown} are not the presenter's {lettered}",
        )

    def vote(who: str, index: int) -> None:
        student = students[who]
        before = student.answers()
        radio(student).nth(index).click()
        student.wait_for_answer(before)

    def chart_shows(votes: list[int], what: str) -> float:
        """Wait until the teacher's vote chart counts ``votes`` (one per choice); returns when it did, and
        checks its labels against the presenter's letters."""
        want = f"{sum(votes)} vote{'s' if sum(votes) != 1 else ''}"
        deadline = time.monotonic() + LOST_SECONDS
        while True:
            chart = teacher.page.evaluate(VOTE_CHART)
            if chart["title"] == want and chart["votes"] == votes:
                break
            if time.monotonic() > deadline:
                shown = teacher.page.locator(QUESTION)
                box = shown.first.inner_text() if shown.count() else ""
                check(False, f"{what}: the teacher's chart shows {chart}, not {want} as {votes}; the question: {box!r}")
                return time.monotonic()
            teacher.page.wait_for_timeout(100)
        ticks = chart["ticks"]
        check(
            len(ticks) == len(choices)
            and all(
                re.match(rf"^{letter}\b", tick) and choice in tick
                for letter, choice, tick in zip("ABCDEF", choices, ticks, strict=False)
            ),
            f"{what}: the vote chart's labels {ticks} do not read as the presenter's list {lettered}",
        )
        check(not any("\\" in tick for tick in ticks), f"{what}: the vote chart's labels show backslashes: {ticks}")
        check(not chart["clipped"], f"{what}: the vote chart's labels are cut at its left edge: {chart['clipped']}")
        boxes = chart["boxes"]
        check(
            all(left[1] <= right[0] for left, right in itertools.pairwise(boxes)),
            f"{what}: the vote chart's labels run into each other: {list(zip(ticks, boxes, strict=True))}",
        )
        return time.monotonic()

    picks = {"laptop 1": 2, "laptop 2": 1, "phone": 0}
    for who, index in picks.items():
        started = time.monotonic()
        vote(who, index)
    counted = chart_shows([1, 1, 1, 0, 0, 0], "three votes")
    times["votes on the teacher's chart"] = {"last vote's run to the chart": round(counted - started, 2)}
    screenshots("votes", question=True)

    revoter = students[REVOTER]
    revoter.page.reload()  # a new session from the address bar, which kept the room
    watch(revoter, "back", "shows", [1, "Simplified attention", SENTENCE])
    seen_at(revoter, "back")
    revoter.settle()
    revoter.page.locator(QUESTION).first.scroll_into_view_if_needed()
    revoter.page.screenshot(path=str(LESSON / f"{next(moment):02d}-reloaded-{REVOTER.replace(' ', '-')}.png"))
    picks[REVOTER] = 1
    vote(REVOTER, 1)  # the same student, again: their vote moves, the count stays 3
    chart_shows([1, 2, 0, 0, 0, 0], f"{REVOTER} reloaded and voted again")
    screenshots("reload-and-vote-again", question=True)

    reveal = teacher.page.locator('[data-testid="stMain"] button').filter(has_text="Reveal")
    check(reveal.count() == 1, f"the teacher's page has {reveal.count()} Reveal buttons")
    reaches_all("Reveal", reveal.first.click, None, "Right|Not quite", kind="verdict")
    teacher.page.get_by_text("The answer:").wait_for(timeout=30_000)
    answer = teacher.page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.inner_text()
    for who, student in students.items():
        verdict = student.page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.inner_text()
        right = f"The answer: {choices[picks[who]]}." in answer
        check(("Right:" in verdict) == right, f"{who} picked {choices[picks[who]]!r}: {verdict!r} ({answer!r})")
    screenshots("reveal", question=True)

    # Kill the app process of the teacher and the phone, mid-lesson.
    first = cluster.app_ports[0]
    killed = app_pid(cluster.proc.pid, first)
    assert killed is not None, f"run_cluster.py runs no process on port {first}: {children(cluster.proc.pid)}"
    os.killpg(killed, signal.SIGKILL)
    killed_at = time.monotonic()
    time.sleep(3)  # run_cluster.py looks at its processes every second
    assert cluster.proc.poll() is None, (
        f"run_cluster.py exited ({cluster.proc.returncode}) when one app process was killed:\n"
        + cluster.log.read_text()[-2000:]
    )
    check(answers(f"{cluster.url}/_stcore/health"), "nginx does not answer while one app process is down")
    teacher.page.get_by_text(f"You are back in room {code}").wait_for(timeout=60_000)
    for app_page in everyone.values():
        app_page.page.wait_for_function(
            """() => document.querySelector('.stApp')?.getAttribute('data-test-connection-state') === 'CONNECTED'"""
        )
        app_page.events.clear()  # the lost connection's console errors, which a dying process causes
    phone = students["phone"]
    watch(phone, "rejoined", "shows", [1, "Simplified attention", SENTENCE])
    seen_at(phone, "rejoined")
    teacher.settle()
    screenshots("after-kill")
    check(
        teacher.page.locator('[data-testid="stMain"] button').filter(has_text="Reveal").count() == 0,
        "after the failover the teacher's question offers Reveal again",
    )

    next_on_simplified = {"step": "scores-to-weights"}
    reaches_all("Next after the kill", teacher.next, next_on_simplified, [2, "Simplified attention", SENTENCE])
    screenshots("next-after-kill")

    deadline = time.monotonic() + RESTART_SECONDS
    while not answers(f"http://127.0.0.1:{first}/_stcore/health"):
        assert cluster.proc.poll() is None, f"run_cluster.py exited:\n{cluster.log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, f"run_cluster.py did not restart the app process on {first}"
        time.sleep(1)
    times["restart"] = {"kill to the new process answering": round(time.monotonic() - killed_at, 1)}
    restarted = app_pid(cluster.proc.pid, first)
    check(restarted not in (None, killed), f"the process on {first} is {restarted}, the killed one was {killed}")
    while upstream(cluster.port, cookies[0]) != f"127.0.0.1:{first}":  # nginx retries a failed server after 10 s
        if time.monotonic() > deadline:
            check(False, f"nginx does not send browsers to the restarted process on {first}")
            break
        time.sleep(1)
    newcomer = tab(0).goto("", f"room={code}")  # a late student, on the restarted process, gets the room's step
    watch(newcomer, "late", "shows", [2, "Simplified attention", SENTENCE])
    seen_at(newcomer, "late")
    everyone["late student"] = newcomer
    screenshots("late-student-on-the-restarted-process")

    LESSON.mkdir(parents=True, exist_ok=True)
    times["load average (1, 5, 15 min) at the end"] = [round(load, 1) for load in os.getloadavg()]
    (LESSON / "times.json").write_text(json.dumps(times, indent=2) + "\n")
    with (LESSON / "times.jsonl").open("a") as runs:  # one line per run, to compare runs
        runs.write(json.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "times": times}) + "\n")
    within = [  # a measurement, not a pass mark: timing belongs to benchmarks (BENCHMARKS.md, "A whole lesson")
        seconds < TARGET_SECONDS
        for took in times.values()
        if isinstance(took, dict)
        for kind in ("delivered", "shown", "on the wire")
        for seconds in took.get(kind, {}).values()
    ]
    print(f"within {TARGET_SECONDS} s: {sum(within)} of {len(within)} arrivals; every move reached every student")
    browser_problems = [f"{who}: {p}" for who, app_page in everyone.items() for p in app_page.events.problems()]
    check(not browser_problems, "the browsers reported:\n" + "\n".join(browser_problems))
