"""Server cost of each kind of action (issues 15, 23 and 25): a Next click, a page switch, a new sentence, a
cell selection; first paint; a first look at the grid of every layer and head; the functions an action enters.

Usage, from the repository root (BENCHMARKS.md's "Cost per action and first paint" and "Every layer and head"
give the runs)::

    python -m benchmarks.actions costs --pages causal_mask,multihead --sizes 6,64,1024 --repeats 10
    python -m benchmarks.actions {paint,select,grid,hops} [--repeats N] [--sizes T,...] [--list] [--against S]

``costs`` and ``select`` time each action inside the server (``launch.TimedServer``); each command's function
says what it measures (``page_actions``, ``cell_actions``, ``paint``, ``grid``, ``hops``) and writes
``artifacts/actions/<command>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.launch import ROOT, TimedServer, chromium, cold_start
from benchmarks.meter import cpu_model, load_text, loadavg, median, percentile
from benchmarks.protocol import BrowserStudent, Sentences, open_typed, warm

ARTIFACTS = ROOT / "artifacts" / "actions"
ACTIONS = ("select", "next", "previous", "switch", "sentence")
PAGE, STEPS = "causal_mask", 6  # what ``select`` walks through, and the heatmaps it clicks on each step (from 1)
CHARTS = {1: ["unmasked-weights"], 3: ["tril-masked", "tril-route"], 4: ["masked-scores"],
          5: ["tril-route", "causal-weights"], 6: ["causal-context"]}  # fmt: skip
HOPS_SENTENCE = "The quick brown fox jumps over the lazy dog again and again, said the teacher today"
SENTENCE_30 = (  # ``grid``'s 30 GPT-2 tokens, as in tests/e2e/test_presenter.py
    "Attention lets every token in a sentence look back at the tokens before it, so that a model can weigh "
    "which of the earlier words matter most."
)


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


def run_facts() -> dict:
    """The command, when it started and the load averages then; ``loadavg_end`` is added at its end."""
    command = " ".join(["python", "-m", "benchmarks.actions", *sys.argv[1:]])
    return {"command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "loadavg_start": loadavg()}


def walk(steps: int, repeats: int) -> list[int]:
    """Stepper moves (+1 Next, -1 Previous) from step 1, to the last step and back, until each has ``repeats``."""
    moves, position, direction = [], 1, 1
    while min(moves.count(1), moves.count(-1)) < repeats and steps > 1:
        if not 1 <= position + direction <= steps:
            direction = -direction
        moves.append(direction)
        position += direction
    return moves


async def page_actions(server, num_tokens: int, repeats: int, sentences, *, pages: list[str]) -> list[dict]:
    """``repeats`` of each action at T = ``num_tokens`` on each page; a switch goes to the next page in ``pages``."""
    rows = []
    for index, page in enumerate(pages):
        student, counts = await open_typed(BrowserStudent(server.base), page, num_tokens, sentences), {1: 0, -1: 0}
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


def selection(row: int, col: int, cols: int) -> str:
    """The widget value plotly's click on cell (row, col) sends: one point of the layer of cells."""
    index = row * cols + col
    point = {"curve_number": 1, "point_number": index, "point_index": index, "customdata": {"0": row, "1": col}}
    return json.dumps({"selection": {"points": [point], "point_indices": [index], "box": [], "lasso": []}})


async def cell_actions(server, num_tokens: int, repeats: int, sentences) -> list[dict]:
    """``repeats`` walks through Causal mask at T = ``num_tokens``: on each step, select a random cell of one of
    its explainable heatmaps (the selection event a click sends, in the page's fragment), then Next; from the
    last step, Previous back to the first. Each row names the step it lands on."""
    student = await open_typed(BrowserStudent(server.base), PAGE, num_tokens, sentences, step="1")
    rng, rows = random.Random(num_tokens), []

    async def act(kind: str, message: bytes, step: int) -> None:
        rows.append({**await timed(server, student, kind, message), "step": step})

    for _ in range(repeats):
        for step in range(1, STEPS + 1):
            if step in CHARTS:
                name = rng.choice(CHARTS[step])
                cols = 2 if name == "causal-context" else num_tokens  # the context's d_out = 2 columns
                point = selection(rng.randrange(num_tokens), rng.randrange(cols), cols)
                student.states[student.charts[name][0]] = ("string_value", point)
                await act("select", student.request(states=student.states, fragment_id=student.charts[name][1]), step)
            if step < STEPS:
                await act("next", student.message(click=f"next:{PAGE}"), step + 1)
        for step in range(STEPS - 1, 0, -1):
            await act("previous", student.message(click=f"prev:{PAGE}"), step)
    await student.close()
    if "cell=" not in rows[0]["query"]:
        raise RuntimeError(f"the selection did not select a cell: {rows[0]['query']}")
    return [{**r, "page": PAGE, "T": num_tokens} for r in rows]


def summary(rows: list[dict]) -> list[dict]:
    """Median and p95 per (T, page, action) of each run's figures; a switch counts for the page it lands on."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["T"], r["page"], r["action"]), []).append(r)
    out, order = [], sorted(groups.items(), key=lambda g: (g[0][0], g[0][1], ACTIONS.index(g[0][2])))
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


async def timed_actions(args, pages: list[str], actions, warm_tokens: int) -> dict:
    """One timed server: ``pages`` warmed up with sentences of ``warm_tokens`` tokens, then the rows of
    ``actions(server, T, repeats, sentences)`` at each T of ``--sizes``, and their ``summary``."""
    server = TimedServer("streamlit_app.py", args.command, ARTIFACTS)
    server.start()
    facts = run_facts()
    try:
        sentences = Sentences(seed=args.seed)
        await warm(server.base, pages, make=lambda: sentences.make(warm_tokens))  # first runs are not timed
        rows = []
        for num_tokens in args.sizes:
            rows += await actions(server, num_tokens, args.repeats, sentences)
            print(f"T = {num_tokens}: {len(rows)} runs so far, load {loadavg()[0]:.2f}", flush=True)
    finally:
        server.stop()
    result = {**facts, "loadavg_end": loadavg(), "rows": rows, "summary": summary(rows)}
    result["server_log_problems"] = server.log_problems()[:20]
    for e in result["summary"]:
        print(
            f"T={e['T']:5d} {e['page']:12s} {e['action']:8s} server CPU p50 {e['cpu_ms']:6.1f} ms (script "
            f"{e['script_cpu_ms']:5.1f}), sent {e['kib']:6.1f} KiB, errors {e['errors']}, load {e['load'][0]:.2f}"
            f"-{e['load'][1]:.2f}"
        )
    print(f"load average at start {load_text(facts['loadavg_start'])}, at end {load_text(result['loadavg_end'])}")
    return result


def costs(args) -> dict:
    return asyncio.run(timed_actions(args, args.pages, functools.partial(page_actions, pages=args.pages), 64))


def select(args) -> dict:
    return asyncio.run(timed_actions(args, [PAGE], cell_actions, 30))


# Installed before Streamlit's code: when the websocket opened, each message arrived, the first plot and heatmap drew
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
# (phase, what the time marks), each in seconds since the server process was started (NaN if it did not happen)
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

    samples, against, facts = [], [], run_facts()
    with chromium() as browser:
        for _ in range(args.repeats):
            s = cold_start(browser, ARTIFACTS / "paint.log", "/", None, PAINT_CLOCK, inspect)
            s["phases"] = {"healthy": s["healthy_s"], **s["phases"], "painted": s["painted_s"]}
            samples.append(s)
            print(f"  cold start /: painted {s['painted_s']:.1f} s (server CPU {s['painted_cpu_s']:.1f} s)", flush=True)
            if args.against:  # the other script's cold start right after, so that both meet the same load
                other = cold_start(
                    browser, ARTIFACTS / "paint-against.log", "/", None, PAINT_CLOCK, inspect, script=args.against
                )
                other["phases"] = {"healthy": other["healthy_s"], **other["phases"], "painted": other["painted_s"]}
                against.append(other)
                print(f"  cold start of {args.against}: painted {other['painted_s']:.1f} s", flush=True)
    table = paint_table(samples)
    print("median seconds since server start (since the phase before):")
    for name, at, step in table:
        print(f"  {name:16s} {at:6.2f} (+{step:5.2f})  {dict(PHASES)[name]}")
    if against:
        print(f"the same for {args.against}:")
        for name, at, step in paint_table(against):
            print(f"  {name:16s} {at:6.2f} (+{step:5.2f})  {dict(PHASES)[name]}")
    out = {**facts, "loadavg_end": loadavg(), "samples": samples}
    if against:
        ours, theirs = median(s["painted_s"] for s in samples), median(s["painted_s"] for s in against)
        print(f"painted, median: this app {ours:.2f} s, {args.against} {theirs:.2f} s: {ours / theirs:.2f}×")
        out |= {"against": args.against, "against_samples": against, "ratio_of_medians": ours / theirs}
    out["phases"] = [{"phase": name, "median_s": at, "after_previous_s": step} for name, at, step in table]
    keys = ("healthy_s", "healthy_cpu_s", "painted_s", "painted_cpu_s")
    return out | {key: median(s.get(key, float("nan")) for s in samples) for key in keys}


def first_look(settings, *, cold: bool) -> tuple[float, float, int]:
    """What one learner's first look at the grid of every layer and head costs the server (``cold``: its caches
    cleared): ms for the numbers (tokens, one pass collecting every layer's weights, each head's summaries) and
    for the figure (labels, the small multiples, their JSON for the browser), and the JSON's bytes."""
    from attention.figures import DEFAULT_STYLE
    from attention.figures.charts import every_head_grid
    from explorer import models
    from explorer.widgets import models as words
    from explorer.widgets.charts import FIGURES, shared

    if cold:
        models._every_head.clear()
        models.layer_prepared.clear()
        FIGURES.clear()
    start = time.perf_counter()
    found = models.every_head(settings)
    numbers = time.perf_counter()
    labels, details = words.head_labels(found.summaries)
    title = words.grid_title(*found.weights.shape[:2])  # (num_layers, num_heads)
    options = dict(title=title, current=(settings.layer, settings.head + 1), style=DEFAULT_STYLE)
    drawn = shared(every_head_grid, found.weights, labels, details, found.pieces, **options)
    return 1000 * (numbers - start), 1000 * (time.perf_counter() - numbers), len(drawn.spec)


def grid(args) -> dict:
    """``first_look``'s medians of ``--repeats`` cold rounds, the worst, and a rerun (everything cached), for
    a GPT-2-shaped checkpoint (12 × 12) and the small GPT (4 × 4), as a Markdown table."""
    import torch

    torch.set_num_threads(1)  # as the server runs each script run (``explorer.runtime.server``)
    facts, rows, path = run_facts(), [], args.checkpoint
    with tempfile.TemporaryDirectory() as folder:
        if path is None:
            sys.path.insert(0, str(ROOT / "tests"))
            from gpt2_checkpoints import write_gpt2

            start = time.perf_counter()
            path = write_gpt2(Path(folder) / "model.safetensors")
            print(f"wrote a GPT-2-small-shaped checkpoint in {time.perf_counter() - start:.1f} s", flush=True)
        os.environ["ATTENTION_GPT2_CHECKPOINT"] = str(path)
        from explorer.models import model
        from explorer.settings import GPT2, TEXT, TRAINED, Settings

        for kind, name in ((GPT2, "GPT-2-shaped, 12 × 12"), (TRAINED, "small GPT, 4 × 4")):
            start = time.perf_counter()
            row = {"model": f"{name} (width {model(kind).cfg.emb_dim})", "load_s": time.perf_counter() - start}
            settings = Settings(weights=kind, source=TEXT, text=SENTENCE_30)
            cold = [first_look(settings, cold=True) for _ in range(args.repeats)]
            warm, totals = [first_look(settings, cold=False) for _ in range(args.repeats)], [c[0] + c[1] for c in cold]
            row |= {"numbers_ms": median(c[0] for c in cold), "figure_ms": median(c[1] for c in cold)}
            row |= {"total_ms": median(totals), "worst_ms": max(totals), "rerun_ms": median(w[0] + w[1] for w in warm)}
            rows.append(row | {"json_mb": cold[0][2] / 1e6})
    result = {**facts, "loadavg_end": loadavg(), "rows": rows}
    print(f"\n{cpu_model()}, {os.cpu_count()} logical CPUs, torch threads {torch.get_num_threads()}")
    before, after = load_text(facts["loadavg_start"]), load_text(result["loadavg_end"])
    print(f"load average before {before}, after {after}; {args.repeats} rounds, medians\n")
    print("| model | numbers ms | figure ms | first look ms | worst ms | rerun ms | figure JSON MB | model load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['model']} | {r['numbers_ms']:.0f} | {r['figure_ms']:.0f} | **{r['total_ms']:.0f}** | "
            f"{r['worst_ms']:.0f} | {r['rerun_ms']:.1f} | {r['json_mb']:.2f} | {r['load_s']:.1f} s |"
        )
    return result


def entered(run, *, fragment_only: bool) -> collections.Counter:
    """Each ``explorer/`` function ``run()`` enters, with its number of calls; with ``fragment_only``, only
    those inside the app script's ``show_page`` fragment."""
    counts, depth = collections.Counter(), [0]

    def profile(frame, event, arg):
        code = frame.f_code
        fragment = code.co_name == "show_page" and code.co_filename.endswith("explorer_app.py")
        if event == "call":
            depth[0] += fragment
            inside = depth[0] or not fragment_only
            if inside and "/explorer/" in code.co_filename and not code.co_name.startswith("<"):
                counts[(code.co_filename.split("/explorer/", 1)[1], code.co_name)] += 1
        elif event == "return" and fragment:
            depth[0] -= 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    finally:
        threading.setprofile(None)
        sys.setprofile(None)
    return counts


def hops(args) -> dict:
    """The distinct ``explorer/`` functions (``entered``) of a Next click on Causal mask in ``AppTest``, its view and
    figures cached (Next, Next, Previous first), inside the page's fragment, which is what a Next click reruns on a
    server; and of a new sentence typed in the sidebar, the whole run. ``--list`` names every function."""
    import pandas  # noqa: F401 (the server imports it after its first page, ``runtime.server.warm_up``; so does this)

    sys.path.insert(0, str(ROOT / "tests"))
    from apptest_support import app, next_step, previous_step, stepper_button

    at = app("pages/causal_mask.py")
    for move in (next_step, next_step, previous_step):
        move(at)
    stepper_button(at, "next").click()
    found = {"Next click, view and figures cached (the fragment)": entered(at.run, fragment_only=True)}
    at.radio(key="w_source").set_value("text").run()
    run = at.text_input(key="w_text").input(HOPS_SENTENCE).run
    found["New sentence (the whole run)"] = entered(run, fragment_only=False)
    result = run_facts()
    for name, counts in found.items():
        files, calls = {file for file, _ in counts}, sum(counts.values())
        prepared = sum(n for (file, fn), n in counts.items() if file.endswith("models.py") and fn == "prepared")
        result[name] = {"functions": len(counts), "files": len(files), "calls": calls, "prepared": prepared}
        print(f"{name}: {len(counts)} distinct explorer functions in {len(files)} files, {calls} calls; "
              f"models.prepared called {prepared} times")  # fmt: skip
        for (file, function), n in sorted(counts.items()) if args.list else ():
            print(f"  {n:4d}  {file}  {function}")
    return result


COMMANDS = {"costs": costs, "paint": paint, "select": select, "grid": grid, "hops": hops}
# --sizes, --repeats and --seed: costs' and paint's, and what other commands take instead
OPTIONS = {"sizes": [6, 64, 1024], "repeats": 10, "seed": 15}
COMMAND_OPTIONS = {"select": {"sizes": [6, 30, 64], "repeats": 15, "seed": 0}, "grid": {"repeats": 7}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("--pages", type=parse_list, default=["causal_mask", "multihead"], help="URL paths (costs)")
    parser.add_argument("--sizes", type=lambda t: parse_list(t, int), help="token counts T (costs, select)")
    parser.add_argument("--repeats", type=int, help="runs of each action, cold starts (paint) or rounds (grid)")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--checkpoint", type=Path, help="grid: a GPT-2-shaped file written before (else one is made)")
    parser.add_argument("--list", action="store_true", help="hops: name every function entered")
    parser.add_argument("--against", help="paint: a script whose cold start follows each of the app's, e.g. the bare "
                        "page with one chart, benchmarks/bare_chart.py")  # fmt: skip
    args = parser.parse_args(argv)
    for key, value in (OPTIONS | COMMAND_OPTIONS.get(args.command, {})).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    result, path = COMMANDS[args.command](args), ARTIFACTS / f"{args.command}.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
