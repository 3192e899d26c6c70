"""Load benchmark: many students on one Attention Explorer server, or on several behind nginx.

Usage, from the repository root (BENCHMARKS.md's "A class on one link" describes the students and scenarios)::

    python -m benchmarks.load class --students 1,100 --servers 1,2 --duration 120
    python -m benchmarks.load class --students 100 --servers 2 --duration 90 --burst 15   # all press Next at once
    python -m benchmarks.load typing --students 1,30 --servers 1,2 --duration 120
    python -m benchmarks.load typing --students 30 --duration 600 --memory-log    # the soak: memory by kind
    python -m benchmarks.load room --students 1,100 --servers 2 --think 5 --page causal_mask   # a live room

Students (``LessonStudent``) open ``--page`` and act with their scenario's mix (``MIXES``) until ``--duration``
is up; in ``room`` they follow a teacher's live room, kept in Redis, and vote (``room_lesson``). With ``--burst S``
the whole class also presses Next together every S seconds, as when the teacher says "now" (``burst_times``). Each
run starts its own server(s) and appends a JSON line to ``artifacts/load/results.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import sys
import time
import urllib.parse
from collections import Counter
from pathlib import Path

import redis
import websockets

from benchmarks import report
from benchmarks.launch import RedisServer, lesson_target
from benchmarks.meter import Meter, loadavg, machine, memory_lines, memory_trends, read_memory_log, summarize
from benchmarks.protocol import TEXT_WIDGET_KEY, BrowserStudent, Run, read_reply, sentence, warm

ROOT = Path(__file__).resolve().parents[1]
RESULTS = str(ROOT / "artifacts" / "load" / "results.jsonl")

# A stepper click (Next or Previous), a page switch, a new sentence, and the Generate page writing a continuation
# of a sentence it has not seen (issue 27: the class's mix with a fifth of the actions generating).
ACTIONS = ("step", "switch", "sentence", "generate")
MIXES = {"class": (0.6, 0.2, 0.2, 0.0), "generating": (0.48, 0.16, 0.16, 0.2), "typing": (0.0, 0.0, 1.0, 0.0)}
MIXES["room"] = (0.75, 0.25, 0.0, 0.0)  # the teacher's moves; the students only follow and vote


SLOWEST = 12  # the slowest actions a lesson's result lists, with the page and step they ended on
# Not chapter pages: the Speed page's timing lab, the "Break it" exercise, the glossary, and Generate (its own action)
LEFT_OUT_PAGES = ("speed", "mistakes", "glossary", "generate", "live")
# What a class types: the sentences a teacher's slides and a class's chat would offer, 6-40 GPT-2 tokens.
CLASS_SENTENCES = (
    "Your journey starts with one step",
    "The cat sat on the mat because it was tired.",
    "Attention lets every word look back at the words that came before it.",
    "I went to the bank to sit by the river and watch the boats go by.",
    "The trophy did not fit in the suitcase because it was too big.",
    "A small language model reads a sentence one token at a time and guesses the next word.",
    "The teacher asked why softmax makes each row of weights sum to one, and nobody answered at first.",
    "Alice gave Bob the book she had borrowed from the library last week, and he promised to bring it back "
    "before Friday.",
    "Transformers replaced recurrent networks for translation because they can look at the whole sentence at "
    "once, instead of squeezing everything the encoder read into one hidden state.",
    "In the morning the students opened their laptops, typed their own sentences into the sidebar, and watched "
    "the attention weights change as each new word arrived.",
)
TYPED_WORDS = (5, 34)  # a student's own new sentence: random words, about 6-40 GPT-2 tokens, never typed before
BURST_JITTER_S = 0.1  # in a burst, each student presses within this many seconds of the teacher's "now"
KINDS = ("open", "next", "previous", "burst", "switch", "sentence", "generate")  # the order a summary lists them


def pick(scenario: str, rng: random.Random) -> str:
    """One of ``ACTIONS``, drawn with ``MIXES[scenario]``'s probabilities."""
    return rng.choices(ACTIONS, MIXES[scenario])[0]


def chapter_pages(app_pages: list[tuple[str, str]]) -> list[str]:
    """The URL paths a class moves between: every page of the app but ``LEFT_OUT_PAGES``."""
    return [path for path, _ in app_pages if path not in LEFT_OUT_PAGES]


def route_cookie(target, rng: random.Random) -> str | None:
    """nginx's sticky-session cookie, as nginx gives one, when ``target`` has nginx in front."""
    return f"explorer_route={rng.getrandbits(64):016x}" if target.proxied else None


def burst_times(spread: float, duration: float, every: float) -> list[float]:
    """The seconds after a lesson's start at which the whole class presses Next: every ``every`` seconds once the
    students have arrived (the first at ``spread + every``), before ``duration`` is up; none when ``every`` is 0."""
    count = int((duration - spread) // every) + 1 if every > 0 else 0
    return [t for t in (spread + k * every for k in range(1, count + 1)) if t < duration]


def stepper_click(buttons: dict[str, tuple[str, str, bool]], direction: int) -> tuple[str, str, int] | None:
    """The stepper button a student walking in ``direction`` (+1 forward, -1 back) presses: (action, key,
    direction); at the last step Next is disabled, so they turn and press Previous (and at step 1, Next)."""
    for way in (direction, -direction):
        prefix, action = ("next:", "next") if way > 0 else ("prev:", "previous")
        for key, (_, _, disabled) in buttons.items():
            if key.startswith(prefix) and not disabled:
                return action, key, way
    return None


class LessonStudent(BrowserStudent):
    """A browser-like student in a lesson: walks the stepper, switches pages and types sentences."""

    def __init__(self, base: str, cookie: str | None, rng: random.Random) -> None:
        super().__init__(base, cookie)
        self.rng = rng
        self.direction = 1  # a class walks forward, and back from the last step
        self.present = False  # in the lesson: the link opened, and the connection not lost
        self.lock = asyncio.Lock()  # one websocket, one action at a time: a burst's press waits for one in flight

    async def act(self, action: str, pages: list[str], typing: bool) -> Run:
        """Do ``action`` (``pick``) and wait for the page; the run's kind says what was done."""
        async with self.lock:
            return self._where(await self._act(action, pages, typing))

    async def press(self, pages: list[str]) -> Run | None:
        """Press Next (or Previous, ``stepper_click``) with the whole class, once an action in flight is done: a run
        of kind "burst", or None when not in the lesson or on a page without a stepper."""
        async with self.lock:
            if not self.present or self.step is None or stepper_click(self.buttons, self.direction) is None:
                return None
            run = self._where(await self._act("step", pages, typing=False))
        run.kind = "burst"
        return run

    def _where(self, run: Run) -> Run:
        run.where = f"{self.page or '/'} {self.step[0]}/{self.step[1]}" if self.step else self.page or "/"
        return run

    async def _act(self, action: str, pages: list[str], typing: bool) -> Run:
        if action == "switch":
            self.page = self.rng.choice([p for p in pages if p != self.page])
            return await self.send("switch", self.message(page=self.page), expect_text=None)
        if action == "generate":  # the Generate page continues one of the class's sentences
            self.page, text = "generate", self.rng.choice(CLASS_SENTENCES)
            return await self.send("generate", self.message(page=self.page, text=text), expect_text=text)
        if action == "sentence":
            current = self.states.get(self.widget_ids.get(TEXT_WIDGET_KEY, ""), ("", ""))[1]
            others = [s for s in CLASS_SENTENCES if s != current]
            text = sentence(self.rng, *TYPED_WORDS) if typing else self.rng.choice(others)
            return await self.send("sentence", self.message(text=text), expect_text=text)
        click = stepper_click(self.buttons, self.direction)
        if click is None or self.step is None:
            return Run("next", time.perf_counter(), latency=0.0, error=f"no stepper button on /{self.page}")
        kind, key, self.direction = click
        before = self.step
        run = await self.send(kind, self.message(click=key), expect_text=None)
        wanted = (before[0] + self.direction, before[1])
        if run.error is None and self.step != wanted:
            run.error, run.ok = f"stale: the stepper shows step {self.step}, not {wanted}", False
        return run


class RoomMember(LessonStudent):
    """The teacher of a live room, or a student in it. After joining, a student sends nothing but a vote: every
    run it reads is one the server started when the teacher moved, and ``follow`` notes when each ended and which
    page and step it showed."""

    def __init__(self, base: str, cookie: str | None, rng: random.Random) -> None:
        super().__init__(base, cookie, rng)
        self.room: str | None = None
        self.shown, self.address = "", ""  # the page the last run drew, and the one in its address bar
        self.arrivals: list[tuple[float, str, tuple[int, int] | None, str | None]] = []  # (time, page, step, error)

    def note(self, reply, run: Run, seen: dict) -> None:
        super().note(reply, run, seen)
        self.room, self.address = reply.room or self.room, reply.page_url if reply.page_script_hash else self.address
        if reply.step:  # the page whose script drew the stepper: the teacher's, on the Live room page
            self.shown = next((u for u, h in self.page_hashes.items() if h == reply.script_hash), self.address)

    def arrive(self, error: str | None = None) -> None:
        self.page = self.shown
        self.arrivals.append((time.perf_counter(), self.page, self.step, error))

    async def follow(self) -> None:
        run = Run("follow", time.perf_counter())
        with contextlib.suppress(websockets.ConnectionClosed):
            async for data in self.ws:
                reply = read_reply(data)
                if reply.kind == "new_session":
                    self.step = None
                self.note(reply, run, {})
                if reply.final:
                    self.arrive(run.error)
                    run = Run("follow", time.perf_counter())

    def vote(self, choice: float) -> str | None:
        """Answer the question this page shows (a number box) in the next run; returns the question's key."""
        key = next((k for k in self.widget_ids if k.startswith("predict_") and k.endswith("_widget")), None)
        if key is not None:
            self.states[self.widget_ids[key]] = ("double_value", choice)
        return key and key.removesuffix("_widget")


async def arrived(students: list, since: float, page: str, step, kind: str = "join", timeout: float = 30.0) -> list:
    """Each student's first run after ``since`` that ended on ``page`` at ``step``, as a ``Run`` timed from
    ``since`` (an error when it did not come within ``timeout`` seconds)."""
    deadline = time.perf_counter() + timeout

    def first(s: RoomMember):
        return next((a for a in s.arrivals if a[0] > since and a[1] == page and a[2] == step), None)

    def run(s: RoomMember, got) -> Run:
        error = got[3] if got else f"did not reach {page} {step} in {timeout:.0f} s (shows {s.page} {s.step})"
        return Run(kind, since, latency=(got[0] - since) if got else 0.0, ok=not error, error=error)

    while time.perf_counter() < deadline and not all(first(s) for s in students):
        await asyncio.sleep(0.02)
    return [run(s, first(s)) for s in students]


async def room_lesson(target, args, n: int) -> dict:
    """A teacher opens a live room on ``args.page`` in presenter mode; ``n`` students join from its link over
    ``args.spread`` seconds. The teacher moves (Next or Previous, or a page switch) every ``args.think`` seconds
    until ``args.duration`` is up; each move is timed from the teacher's click to each student's run that ended
    on the teacher's page and step. Then every student votes on one question, one app process is killed (the
    students on it reconnect, as a browser does, to the other), and the teacher moves three more times."""
    rng = random.Random(args.seed)
    teacher = RoomMember(target.base, route_cookie(target, rng), rng)
    await teacher.visit(args.page, {"present": "1", "input": "text", "text": CLASS_SENTENCES[0]})
    await teacher.send("open", teacher.message(click="room_open"), expect_text=None)
    students = [
        RoomMember(target.base, route_cookie(target, rng), random.Random(args.seed * 1000 + i)) for i in range(n)
    ]

    async def join(student: RoomMember) -> None:
        await asyncio.sleep(rng.uniform(0, args.spread))
        opened = await student.visit("", {"room": teacher.room})
        student.arrive(None if opened.error and opened.error.startswith("wrong page") else opened.error)
        student.reader = asyncio.create_task(student.follow())

    await asyncio.gather(*(join(s) for s in students))
    joined = await arrived(students, 0.0, teacher.page, teacher.step)  # every student on the teacher's step
    per_server = dict(Counter(s.upstream or "direct" for s in students))
    pages = [args.page, *[p for p in chapter_pages(teacher.app_pages) if p != args.page][:3]]

    cpu, moves = {"step": [], "switch": []}, []  # the app processes' CPU seconds of each move, till all arrived

    async def move(kind: str) -> list[Run]:  # "step" or "switch", timed until every student shows its end
        since, cpu0 = time.perf_counter(), target.cpu_s()
        await teacher.act(kind, pages, typing=False)
        runs = await arrived(students, since, teacher.page, teacher.step, kind)
        return cpu[kind].append(target.cpu_s() - cpu0) or runs

    async with Meter(target) as meter:
        end = time.perf_counter() + args.duration
        while time.perf_counter() < end:
            moves += await move(pick("room", teacher.rng))
            await asyncio.sleep(max(0.0, args.think - (time.perf_counter() - moves[-1].sent)))
    while teacher.page != "causal_mask" or teacher.step[0] != 2:  # a step with a number question
        await (move("switch") if teacher.page != "causal_mask" else move("step"))
    choices = [rng.choice((0.5, 1.0)) for _ in students]
    questions = {s.vote(c) for s, c in zip(students, choices, strict=True)}
    await asyncio.gather(*(s.ws.send(s.message()) for s in students))
    await asyncio.sleep(3.0)
    question = f"room:{teacher.room}:votes:{next(iter(questions))}"
    store = redis.Redis.from_url(os.environ["ATTENTION_ROOMS_URL"])
    votes_before = sorted(store.hvals(question))
    others = [p for p in target.cluster.app_ports if not teacher.upstream.endswith(f":{p}")] if target.proxied else []
    killed = others[0] if others else None  # an app process the teacher is not on
    after: list[Run] = []
    if killed is not None:
        os.killpg(target.cluster.apps[target.cluster.app_ports.index(killed)].pid, signal.SIGKILL)
        await asyncio.sleep(1.0)
        for s in [s for s in students if s.upstream.endswith(f":{killed}")]:  # a browser reconnects and reruns
            s.arrive((await s.visit(s.address, dict(urllib.parse.parse_qsl(s.query_string)))).error)
            s.reader = asyncio.create_task(s.follow())
        for _ in range(3):
            after += await move("step")
    for s in [teacher, *students]:
        await s.close()
    wanted = sorted(f"{c:.2f}".encode() for c in choices)
    by_kind = {kind: summarize([r for r in moves if r.kind == kind]) for kind in ("step", "switch")}
    out = {"moves": summarize(moves), "by_kind": by_kind, "after_kill": summarize(after)}
    out |= {"cpu_ms_per_arrival": {k: 1000 * sum(c) / len(c) / n for k, c in cpu.items() if c}}
    out |= {"students_per_server": per_server, "joined": sum(r.ok for r in joined)}
    out |= {"join_errors": dict(Counter(r.error for r in joined if r.error)), "questions": len(questions)}
    out |= {"votes_cast": len(choices), "votes_counted": len(votes_before), "votes_exact": votes_before == wanted}
    out |= {"votes_after_kill_exact": sorted(store.hvals(question)) == wanted, "killed_app_port": killed}
    return out | meter.report(len(moves))


def summarize_lesson(runs: list[Run], start: float, end: float) -> dict:
    """Latency per action kind and over every action (opening the link apart), and the throughput of the window."""
    actions = [r for r in runs if r.kind != "open"]
    kinds = sorted({r.kind for r in runs}, key=KINDS.index)
    finished = [r for r in actions if start <= r.sent + r.latency <= end]
    slowest = sorted((r for r in actions if r.ok), key=lambda r: -r.latency)[:SLOWEST]
    out = {"actions": summarize(actions), "by_kind": {k: summarize([r for r in runs if r.kind == k]) for k in kinds}}
    out["slowest"] = [{"kind": r.kind, "where": r.where, "latency_s": r.latency} for r in slowest]
    return out | {"throughput_runs_per_s": len(finished) / (end - start) if end > start else float("nan")}


def summarize_bursts(bursts: list[tuple[float, list[Run]]], start: float) -> list[dict]:
    """Each burst, given as (the moment it was called, the runs of the students who pressed), in time order: when
    (seconds after ``start``), how many pressed, the p50, p95 and max of their runs (the max: the slowest student's),
    the errors, and the seconds from the call until every press had finished (jitter and actions in flight too)."""
    out = []
    for at, runs in sorted(bursts, key=lambda b: b[0]):
        s, done = summarize(runs), max((r.sent + r.latency for r in runs), default=float("nan"))
        out.append({"at_s": at - start, "students": len(runs), "p50_s": s["p50_s"], "p95_s": s["p95_s"]})
        out[-1] |= {"max_s": s["max_s"], "errors": s["errors"], "all_done_s": done - at}
    return out


async def lesson(target, args, n: int):
    """``n`` students open the class's link (``args.page``, the class's first sentence) over ``args.spread``
    seconds, then think (exponential, mean ``args.think``) and act until ``args.duration`` is up; with
    ``args.burst``, every student on a stepper also presses Next at each of ``burst_times`` (``LessonStudent.press``),
    within ``BURST_JITTER_S`` of it."""
    rng, typing = random.Random(args.seed), args.scenario == "typing"
    burst_rng = random.Random(args.seed * 1000 - 1)  # the jitters, apart from the students' own draws
    pages, link = chapter_pages(target.app_pages), {"input": "text", "text": CLASS_SENTENCES[0]}
    runs: list[Run] = []
    students = [
        LessonStudent(target.base, route_cookie(target, rng), random.Random(args.seed * 1000 + i)) for i in range(n)
    ]

    async def attend(student: LessonStudent, delay: float, end: float) -> None:
        await asyncio.sleep(delay)
        try:
            await student.connect()
        except (OSError, websockets.InvalidHandshake) as exc:
            runs.append(Run("open", time.perf_counter(), latency=0.0, error=f"connection refused: {exc}"))
            return
        opened = await student.open(args.page, link)
        runs.append(opened)
        student.present = opened.ok
        while student.present and time.perf_counter() < end:
            await asyncio.sleep(student.rng.expovariate(1 / args.think))
            if time.perf_counter() >= end:
                break
            run = await student.act(pick(args.scenario, student.rng), pages, typing)
            runs.append(run)
            student.present = not (run.error and run.error.startswith("connection closed"))
        student.present = False

    async def press_at(student: LessonStudent, when: float) -> Run | None:
        await asyncio.sleep(max(0.0, when - time.perf_counter()))
        run = await student.press(pages)
        if run is not None:
            runs.append(run)
            if run.error and run.error.startswith("connection closed"):
                student.present = False
        return run

    async def burst(at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.perf_counter()))
        jitters = [burst_rng.uniform(0, BURST_JITTER_S) for _ in students]
        pressed = await asyncio.gather(*(press_at(s, at + j) for s, j in zip(students, jitters, strict=True)))
        bursts.append((at, [r for r in pressed if r is not None]))

    bursts: list[tuple[float, list[Run]]] = []
    async with Meter(target) as meter:
        start, wall_start = time.perf_counter(), time.time()
        end = start + args.duration
        moments = [start + t for t in burst_times(args.spread, args.duration, args.burst)]
        await asyncio.gather(
            *(attend(s, rng.uniform(0, args.spread), end) for s in students), *(burst(at) for at in moments)
        )
    for s in students:
        await s.close()
    samples = read_memory_log(target.memory_log)  # none without --memory-log, and then no trends
    memory = memory_trends(samples, wall_start, wall_start + args.duration)
    out = {**summarize_lesson(runs, start, end), "server_memory": memory}
    out |= {"bursts": summarize_bursts(bursts, start)}
    out |= {"joined": sum(1 for r in runs if r.kind == "open" and r.ok)}
    out |= {"students_per_server": dict(Counter(s.upstream or "direct" for s in students)), "pages": pages}
    return out | {**meter.report(len(runs)), "rss_samples": meter.samples[:: max(1, int(10 / meter.every))]}


async def one_lesson(args, servers: int, n: int) -> None:
    """A run of ``args.scenario`` with ``n`` students on ``servers`` app processes (behind nginx if more than one):
    start them (and Redis for a room), warm each up, run the lesson, stop; record the entry and print its summary."""
    scenario, label = args.scenario, f"{args.scenario}-{servers}server-{n}"
    log_path = os.path.join(os.path.dirname(args.results), "logs", label + ".log")
    memory_log = log_path + ".memory.jsonl" if args.memory_log else ""
    if memory_log and os.path.exists(memory_log):
        os.remove(memory_log)
    rooms = RedisServer() if scenario == "room" else None
    if rooms is not None:
        os.environ["ATTENTION_ROOMS_URL"] = rooms.start()  # the app processes inherit it
    target = lesson_target(servers, log_path, args.arena_max, memory_log, args.memory_every)
    print(f"== {label}: students connect to {target.base} (load {loadavg()[0]:.2f})", flush=True)
    target.start()
    try:
        warm_errors = []
        for base in target.app_bases:
            runs, target.app_pages, _ = await warm(base)
            warm_errors += [r.error for r in runs if r.error]
        print(f"   warmed up {len(target.app_bases)} server(s), errors: {warm_errors or 'none'}", flush=True)
        result = await (room_lesson if scenario == "room" else lesson)(target, args, n)
        result |= {"server_log_problems": target.log_problems()[:20], "warm_up_errors": warm_errors}
    finally:
        target.stop()
        if rooms is not None:
            rooms.stop()
    mode = f"{servers} server" + ("s behind nginx" if servers > 1 else "")
    e = {"scenario": scenario, "mode": mode, "servers": servers, "students": n, "page": args.page}
    e |= {"think_s": args.think, "spread_s": args.spread, "duration_s": args.duration, "memory_log": memory_log}
    e |= {"burst_s": args.burst}
    e |= {"malloc_arena_max": args.arena_max, "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    e |= {"command": " ".join(["python", "-m", "benchmarks.load", *sys.argv[1:]])}
    e |= {"server_command": " ".join(target.command()), "machine": machine(), **result}
    report.record(e, args.results)
    if scenario == "room":
        a, k = e["moves"], e["after_kill"]
        print(
            f"   {a['runs']} arrivals, p50 {a['p50_s'] * 1000:.0f} ms, p95 {a['p95_s'] * 1000:.0f} ms, max "
            f"{a['max_s'] * 1000:.0f} ms, {a['errors']} errors; votes {e['votes_counted']}/{e['votes_cast']} "
            f"(exact {e['votes_exact']}, after the kill {e['votes_after_kill_exact']}); after the kill "
            f"{k['runs']} arrivals, {k['errors']} errors; CPU ms per arrival {e['cpu_ms_per_arrival']}",
            flush=True,
        )
    else:
        a, p95 = e["actions"], {kind: f"{s['p95_s'] * 1000:.0f}" for kind, s in e["by_kind"].items()}
        print(f"   {a['runs']} actions, p95 {a['p95_s'] * 1000:.0f} ms (by kind {p95}), {a['errors']} errors")
        if args.burst:
            print(f"   {len(e['bursts'])} bursts, every {args.burst:g} s:{burst_lines(e['bursts'])}")
    print(f"   server CPU {e['server_cpu_cores']:.2f} cores, load {e['loadavg_end']:.2f}", flush=True)
    if e.get("server_memory"):
        print(f"   server memory (MiB unless a count; {memory_log}):\n{memory_lines(e['server_memory'])}", flush=True)


def burst_lines(bursts: list[dict]) -> str:
    """``summarize_bursts``'s bursts for the printed summary, one line each."""
    return "".join(
        f"\n     at {b['at_s']:.0f} s, {b['students']} students: p50 {b['p50_s'] * 1000:.0f} ms, p95 "
        f"{b['p95_s'] * 1000:.0f} ms, max {b['max_s'] * 1000:.0f} ms, all done {b['all_done_s'] * 1000:.0f} ms, "
        f"{b['errors']} errors"
        for b in bursts
    )


def numbers(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", choices=MIXES)
    parser.add_argument("--students", type=numbers, default="1,30,100", help="comma-separated class sizes")
    parser.add_argument("--servers", type=numbers, default="1", help="comma-separated app process counts (2+: nginx)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of the lesson, from the first arrival")
    parser.add_argument("--think", type=float, default=3.0, help="mean think time before each action, seconds")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds over which students arrive")
    parser.add_argument("--page", default="multihead", help="the page the class's link opens (URL path)")
    parser.add_argument("--arena-max", type=int, default=2, help="MALLOC_ARENA_MAX of the app processes (0: unset)")
    parser.add_argument("--memory-log", action="store_true", help="one server: its memory by kind, and trends")
    parser.add_argument("--memory-every", type=float, default=5.0, help="seconds between --memory-log samples")
    parser.add_argument("--burst", type=float, default=0.0, help="every this many seconds all press Next (0: off)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", default=RESULTS, help="JSON lines file the results are appended to")
    args = parser.parse_args(argv)
    if args.burst < 0 or (args.burst and args.scenario == "room"):
        parser.error("--burst takes seconds >= 0, and a room's students only follow the teacher")
    for n in args.students:
        for servers in args.servers:
            asyncio.run(one_lesson(args, servers, n))


if __name__ == "__main__":
    main()
