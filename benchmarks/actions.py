"""Server cost of each kind of action (issue 15): a Next click, a page switch, a new sentence; and first paint.

Usage, from the repository root (behind "Cost per action and first paint (issue 15)" in BENCHMARKS.md)::

    python -m benchmarks.actions costs --pages causal_mask,multihead --sizes 6,64,1024 --repeats 10
    python -m benchmarks.actions paint --repeats 3

``costs`` times each action inside the server (``launch.TimedServer``); ``paint`` times each phase of a cold
start (``PHASES``). They write ``artifacts/actions/costs.json`` or ``paint.json``; BENCHMARKS.md has the method.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.browser import chromium, cold_start
from benchmarks.launch import ROOT, TimedServer
from benchmarks.machine import loadavg
from benchmarks.meter import median, percentile
from benchmarks.protocol import BrowserStudent, warm
from benchmarks.sentences import Sentences, open_typed

ARTIFACTS = ROOT / "artifacts" / "actions"
ACTIONS = ("next", "previous", "switch", "sentence")


def parse_list(text: str, kind=str) -> list:
    values = [kind(v.strip()) for v in text.split(",") if v.strip()]
    if not values:
        raise argparse.ArgumentTypeError("an empty list")
    return values


async def timed(server, student: BrowserStudent, kind: str, message: bytes, text: str | None = None) -> dict:
    run, timing, avg = await server.timed_send(student, kind, message, text)
    script_cpu, gc_ms = 1000 * timing["script_cpu_s"], 1000 * timing["after_s"]
    row = {"action": kind, "script_cpu_ms": script_cpu, "script_wall_ms": 1000 * timing["script_s"], "gc_ms": gc_ms}
    row |= {"cpu_ms": script_cpu + gc_ms, "client_ms": 1000 * run.latency, "kib": run.bytes / 1024, "load": avg}
    return row | {"error": run.error, "query": student.query_string}  # the query: the view after the run (step=k)


def run_facts(started: str, load_start: tuple) -> dict:
    """The command, when it started, and the load averages at its start and now."""
    command = " ".join(["python", "-m", "benchmarks.actions", *sys.argv[1:]])
    return {"command": command, "when": started, "loadavg_start": load_start, "loadavg_end": loadavg()}


def walk(steps: int, repeats: int) -> list[int]:
    """Stepper moves (+1 Next, -1 Previous) from step 1, to the last step and back, until each has ``repeats``."""
    moves, position, direction = [], 1, 1
    while min(moves.count(1), moves.count(-1)) < repeats and steps > 1:
        if not 1 <= position + direction <= steps:
            direction = -direction
        moves.append(direction)
        position += direction
    return moves


async def page_actions(server, pages: list[str], num_tokens: int, repeats: int, sentences) -> list[dict]:
    """``repeats`` of each action at T = ``num_tokens`` on each page; a switch goes to the next page in ``pages``."""
    rows = []
    for index, page in enumerate(pages):
        student = await open_typed(BrowserStudent(server.base), page, num_tokens, sentences)
        counts = {1: 0, -1: 0}
        for move in walk(student.steps or 1, repeats):
            kind, key = ("next", f"next:{page}") if move == 1 else ("previous", f"prev:{page}")
            row = await timed(server, student, kind, student.message(click=key))
            counts[move] += 1
            if counts[move] <= repeats:
                rows.append({**row, "page": page, "T": num_tokens})
        for _ in range(repeats):
            text = sentences.make(num_tokens)
            row = await timed(server, student, "sentence", student.message(text=text), text)
            rows.append({**row, "page": page, "T": num_tokens})
        other = pages[(index + 1) % len(pages)]
        for hop in range(2 * repeats):  # there and back: ``repeats`` arrivals each
            origin, student.page = student.page, (other if hop % 2 == 0 else page)
            row = await timed(server, student, "switch", student.message(page=student.page))
            rows.append({**row, "page": student.page, "from": origin, "T": num_tokens})
        await student.close()
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Median and p95 per (T, page, action) of each run's figures; a switch counts for the page it lands on."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["T"], r["page"], r["action"]), []).append(r)
    out = []
    order = sorted(groups.items(), key=lambda g: (g[0][0], g[0][1], ACTIONS.index(g[0][2])))
    for (num_tokens, page, action), group in order:
        ok = [r for r in group if not r["error"]]
        entry = {"T": num_tokens, "page": page, "action": action, "runs": len(group), "errors": len(group) - len(ok)}
        for field in ("cpu_ms", "script_cpu_ms", "gc_ms", "client_ms", "kib"):
            values = [r[field] for r in ok]
            entry[field] = percentile(values, 50)
            entry[field + "_p95"] = percentile(values, 95)
        entry["load"] = [min(r["load"] for r in group), max(r["load"] for r in group)]
        out.append(entry)
    return out


async def costs(args) -> dict:
    server = TimedServer("streamlit_app.py", "actions", ARTIFACTS)
    server.start()
    started, load_start = time.strftime("%Y-%m-%d %H:%M"), loadavg()
    try:
        sentences = Sentences(seed=args.seed)
        await warm(server.base, args.pages, make=lambda: sentences.make(64))  # first runs are not timed
        rows = []
        for num_tokens in args.sizes:
            rows += await page_actions(server, args.pages, num_tokens, args.repeats, sentences)
            print(f"T = {num_tokens}: {len(rows)} runs so far, load {loadavg()[0]:.2f}", flush=True)
    finally:
        server.stop()
    result = {**run_facts(started, load_start), "rows": rows, "summary": summary(rows)}
    result["server_log_problems"] = server.log_problems()[:20]
    for e in result["summary"]:
        print(f"T={e['T']:5d} {e['page']:14s} {e['action']:9s} CPU p50 {e['cpu_ms']:7.1f} ms, errors {e['errors']}")
    return result


# Installed in each tab before Streamlit's code: when its websocket opened, when each message arrived,
# and when the first plot and the first heatmap's image appeared in the main area.
PAINT_CLOCK = """
window.__paint = {opened: null, arrivals: [], plot: null, image: null};
new MutationObserver(() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return;
  if (!window.__paint.plot && main.querySelector('.js-plotly-plot')) window.__paint.plot = performance.now();
  if (!window.__paint.image && [...main.querySelectorAll('.js-plotly-plot .hm image')].some(
      (i) => (i.getAttribute('href') || '').startsWith('data:image/'))) window.__paint.image = performance.now();
}).observe(document, {subtree: true, childList: true, attributes: true});
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener('open', () => { window.__paint.opened = window.__paint.opened || performance.now(); });
    this.addEventListener('message', () => window.__paint.arrivals.push(performance.now()));
  }
};
"""
PAINT_TIMES = """() => ({
  origin: performance.timeOrigin,
  html: performance.getEntriesByType('navigation')[0].responseEnd,
  resources: performance.getEntriesByType('resource').map((e) => [e.name, e.startTime, e.responseEnd]),
  ...window.__paint,
})"""
# (phase, what the time marks); each sample gives each phase's seconds since the server process was started
# (NaN if it did not happen), and ``paint_table`` their medians in the order they happened.
PHASES = (
    ("healthy", "/_stcore/health answers"),
    ("html", "the browser has the page's HTML"),
    ("websocket", "the frontend's code has run and opened the websocket"),
    ("script_started", "the server starts the first script run (new_session)"),
    ("first_delta", "the first element on the page, main area or sidebar (the entry script's imports are done)"),
    ("first_main", "the page's first element in the main area arrives"),
    ("chart_delta", "the first plotly chart arrives"),
    ("script_finished", "the script run is over"),
    ("plotly_js", "the browser has fetched Streamlit's Plotly code (at the first chart, or when asked earlier)"),
    ("plot", "Plotly has made the chart's element"),
    ("heatmap", "the first heatmap's image is drawn"),
    ("painted", "the first heatmap is painted and the page settled"),
)


def message_phases(payloads: list[bytes], arrivals: list[float]) -> dict[str, float]:
    """When (in ``arrivals``' clock) the messages that mark phases arrived; ``payloads`` in the order received."""
    found: dict[str, float] = {}
    for payload, at in zip(payloads, arrivals, strict=False):
        msg = ForwardMsg.FromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            found.setdefault("script_started", at)
        elif kind == "script_finished":
            found.setdefault("script_finished", at)
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            if msg.metadata.delta_path[:1] in ([0], [1]):  # RootContainer.MAIN or SIDEBAR, not EVENT
                found.setdefault("first_delta", at)
            if msg.metadata.delta_path[:1] == [0]:  # RootContainer.MAIN
                found.setdefault("first_main", at)
            if msg.delta.new_element.WhichOneof("type") == "plotly_chart":
                found.setdefault("chart_delta", at)
    return found


def browser_phases(times: dict, payloads: list[bytes], started_epoch: float) -> dict[str, float]:
    """Each browser-side phase in seconds since ``started_epoch`` (``time.time()`` when the server was started)."""

    def since(ms: float | None) -> float:
        return float("nan") if ms is None else (times["origin"] + ms) / 1000 - started_epoch

    found = {key: since(at) for key, at in message_phases(payloads, times["arrivals"]).items()}
    plotly = [end for name, _, end in times["resources"] if "/PlotlyChart." in name]
    return {"html": since(times["html"]), "websocket": since(times["opened"]), **found} | {
        "plotly_js": since(plotly[0] if plotly else None),
        "plot": since(times["plot"]),
        "heatmap": since(times["image"]),
    }


def paint_table(samples: list[dict]) -> list[tuple[str, float, float]]:
    """(phase, median seconds since server start, seconds after the phase before it) for ``samples``, in
    the order of their medians: Plotly's code, for one, comes before or after the first chart."""
    medians = {name: median(s["phases"].get(name, float("nan")) for s in samples) for name, _ in PHASES}
    order = sorted(medians, key=lambda name: (medians[name] != medians[name], medians[name]))  # NaN last
    rows, before = [], 0.0
    for name in order:
        rows.append((name, medians[name], medians[name] - before))
        before = medians[name] if medians[name] == medians[name] else before
    return rows


def paint(args) -> dict:
    """Cold starts of the first page: the phases (``PHASES``) and the server's CPU seconds at paint, which
    depend much less on the machine's load than the wall time does."""

    def inspect(page, base: str, payloads: list[bytes], started_epoch: float) -> dict:
        phases = browser_phases(page.evaluate(PAINT_TIMES), payloads, started_epoch)
        runs = sum(ForwardMsg.FromString(p).WhichOneof("type") == "script_finished" for p in payloads)
        return {"phases": phases, "script_runs": runs}

    samples, started, load_start = [], time.strftime("%Y-%m-%d %H:%M"), loadavg()
    with chromium() as browser:
        for _ in range(args.repeats):
            s = cold_start(browser, ARTIFACTS / "paint.log", "/", None, PAINT_CLOCK, inspect)
            s["phases"] = {"healthy": s["healthy_s"], **s["phases"], "painted": s["painted_s"]}
            samples.append(s)
            print(f"  cold start /: painted {s['painted_s']:.1f} s (server CPU {s['painted_cpu_s']:.1f} s)", flush=True)
    table = paint_table(samples)
    print("median seconds since server start (since the phase before):")
    meanings = dict(PHASES)
    for name, at, step in table:
        print(f"  {name:16s} {at:6.2f} (+{step:5.2f})  {meanings[name]}")
    return {
        **run_facts(started, load_start),
        "samples": samples,
        "phases": [{"phase": name, "median_s": at, "after_previous_s": step} for name, at, step in table],
        **{key: median(s.get(key, float("nan")) for s in samples) for key in KEYS},
    }


KEYS = ("healthy_s", "healthy_cpu_s", "painted_s", "painted_cpu_s")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("costs", "paint"))
    parser.add_argument("--pages", type=parse_list, default=["causal_mask", "multihead"], help="URL paths")
    parser.add_argument("--sizes", type=lambda t: parse_list(t, int), default=[6, 64, 1024], help="token counts T")
    parser.add_argument("--repeats", type=int, default=10, help="runs of each action (costs) or cold starts (paint)")
    parser.add_argument("--seed", type=int, default=15)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(costs(args)) if args.command == "costs" else paint(args)
    path = ARTIFACTS / f"{args.command}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
