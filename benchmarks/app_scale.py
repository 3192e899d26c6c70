"""The app at GPT-2 scale: server time, bytes and browser paint time of a rerun, at T = 6 … 1,024 tokens.

Usage (the command behind the "App at scale" section of BENCHMARKS.md)::

    python benchmarks/app_scale.py                               # everything, about 15 minutes on 2 cores
    python benchmarks/app_scale.py --pages causal_mask,multihead --sizes 64,1024 --no-browser --no-cold
    python benchmarks/app_scale.py profile --page multihead --step 1 --size 1024   # where a rerun's time goes
    python benchmarks/app_scale.py report                        # the tables again, from the saved results

What it measures (results in ``artifacts/app_scale/results.json``; tables between markers in
BENCHMARKS.md's "App at scale" section, which describes the method in full):

1. **Server time of a rerun after a sentence change**, every page and step, T = 6, 64, 256, 1,024
   GPT-2 tokens: a fresh session opens the page from a link, then the sidebar's sentence is
   replaced by new sentences of the same T (every cache misses). ``serve.py --timings`` times
   ``ScriptRunner._run_script`` inside the server, with and without the post-run
   ``gc.collect(2)``; the protocol client is ``load.py``'s ``Student``.
2. **The bare page** (``BARE_APP``: the explorer's widgets, Streamlit and tiktoken only) and
   **the shell** (``SHELL_APP``: the explorer's entry script around an empty page), timed before
   every page in the same run; a page's ratio uses the median of the bare sessions so far at that T.
3. **Bytes sent to the browser per rerun**: the rerun's websocket payloads.
4. **Enter to painted, in Chromium**, on each page's heaviest step (most bytes at the largest T
   among the steps that draw a chart, or ``--browser-steps``) at T = 64 and 1,024: from the
   ``keydown`` of Enter to the frame after the last change inside any plot, once the page has
   settled (``launch.SETTLED``) and no plot has changed for ``QUIET_MS``.
5. **Cold start**: ``streamlit run streamlit_app.py`` launched until the first heatmap is painted
   in an already running Chromium; and ``python -X importtime -c "import attention"``.

The load average is recorded at every timed run; other developers share this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import pstats
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import load  # noqa: E402
from load import WORDS, Student, replace_block  # noqa: E402

from benchmarks.launch import CHROMIUM, SETTLED, TIKTOKEN_CACHE, VIEWPORT, AppServer, launch_chromium  # noqa: E402

ARTIFACTS = ROOT / "artifacts" / "app_scale"
RESULTS = ARTIFACTS / "results.json"
MARKDOWN = ROOT / "BENCHMARKS.md"
TABLES_START, TABLES_END = "<!-- app-scale:tables:start -->", "<!-- app-scale:tables:end -->"
SIZES = (6, 64, 256, 1024)
BROWSER_SIZES = (64, 1024)
MAX_URL_TEXT_CHARS = 2_000  # explorer.settings: longer link texts are cut (with a notice)
BYTES_GOAL = 2 * 10**6
GOALS = {"small": 1.5, "large": 3.0, "paint": 3.0}
QUIET_MS = 800  # the browser measurement ends once no plot has changed for this long
PAGE_ALIASES = {"default": "", "why_attention": "", "": ""}


# ------------------------------------------------------------------------------------------ the bare page

BARE_APP = """\
\"\"\"The bare page for benchmarks/app_scale.py (generated): the explorer's widgets, no content, no torch.\"\"\"

import urllib.parse

import streamlit as st
import tiktoken

st.set_page_config(page_title="Bare page", page_icon=":material/grid_on:", layout="wide")
DEFAULTS = {{
    "w_source": "book",
    "w_text": "Your journey starts with one step",
    "w_d_in": 3,
    "w_d_out": 2,
    "w_num_heads": 2,
    "w_context_length": 1024,
    "w_dropout": 0.0,
    "w_seed": 123,
    "w_training": False,
}}
STEPS = ["one", "two", "three", "four", "five"]


@st.cache_resource
def encoding():
    return tiktoken.get_encoding("r50k_base")  # GPT-2's ranks, from TIKTOKEN_CACHE_DIR


@st.cache_data(max_entries=32, show_spinner=False)
def count_tokens(text: str) -> int:
    return len(encoding().encode(text, allowed_special={{"<|endoftext|>"}}, disallowed_special=()))


def start_session() -> None:
    state = st.session_state
    if "settings" in state:
        return
    params = st.query_params.to_dict()
    state.update(DEFAULTS)
    if "text" in params:
        state["w_text"], state["w_source"] = params["text"][:2000], "text"
    state["settings"] = dict(DEFAULTS, w_text=state["w_text"], w_source=state["w_source"])
    step = params.get("step", "1")
    state["step"] = min(max(int(step) - 1, 0), len(STEPS) - 1) if step.isdigit() else 0


def on_change() -> None:
    st.session_state["settings"] = {{key: st.session_state[key] for key in DEFAULTS}}


def sidebar() -> dict:
    state = st.session_state
    with st.sidebar:
        st.toggle("Presenter mode", key="presenter", help="Large fonts.")
        state["link_slot"] = st.container()
        st.radio("Input", ("book", "text"), key="w_source", format_func=str.title, on_change=on_change)
        book = state["w_source"] == "book"
        st.text_input("Sentence", key="w_text", on_change=on_change, disabled=book, help="Press Enter to apply.")
        left, right = st.columns(2)
        left.number_input("d_in", 1, 1024, key="w_d_in", on_change=on_change, disabled=book, help="d_in")
        right.number_input("d_out", 1, 1024, key="w_d_out", on_change=on_change, help="d_out")
        left.number_input("num_heads", 1, 16, key="w_num_heads", on_change=on_change, help="heads")
        right.number_input("context_length", 1, 1024, key="w_context_length", on_change=on_change, help="ctx")
        left.number_input("dropout p", 0.0, 0.9, step=0.05, format="%.2f", key="w_dropout", on_change=on_change)
        right.number_input("seed", 0, 2**31 - 1, key="w_seed", on_change=on_change, help="seed")
        st.toggle("Training mode (dropout on)", key="w_training", on_change=on_change, help="training")
        st.segmented_control("Figure download format", ("png", "svg"), default="png", key="w_image_format")
    return state["settings"]


def token_window(settings: dict) -> None:
    \"\"\"The token-window slider above 48 tokens, sized like the explorer's (tokenizer only).\"\"\"
    if settings["w_source"] != "text" or not settings["w_text"].strip():
        return
    num_tokens = min(count_tokens(settings["w_text"]), settings["w_context_length"])
    if num_tokens <= 48:
        return
    if "w_window" not in st.session_state or st.session_state.get("window_tokens") != num_tokens:
        st.session_state["w_window"], st.session_state["window_tokens"] = (0, num_tokens), num_tokens
    with st.sidebar:
        st.slider("Tokens shown in heatmaps", 0, num_tokens, key="w_window", help="Block means.")


def stepper() -> int:
    state = st.session_state

    def move(delta: int) -> None:
        state["step"] = min(max(state["step"] + delta, 0), len(STEPS) - 1)

    index = state["step"]
    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    previous.button("Previous", key="prev:bare", icon=":material/arrow_back:", on_click=move, args=(-1,),
                    disabled=index == 0, shortcut="Left", width="stretch")
    following.button("Next", key="next:bare", icon=":material/arrow_forward:", icon_position="right", on_click=move,
                     args=(1,), disabled=index == len(STEPS) - 1, shortcut="Right", width="stretch", type="primary")
    st.html("<style>[class*='st-key-clicker_'] {{position: absolute; left: -10000px;}}</style>")
    for name, delta, shortcut in (("clicker_next", 1, "PageDown"), ("clicker_prev", -1, "PageUp")):
        st.button(f"{{name}} bare", key=f"{{name}}_bare", on_click=move, args=(delta,), shortcut=shortcut)
    label = f"<b>Step {{index + 1}} of {{len(STEPS)}}</b> · {{STEPS[index]}}"
    middle.markdown(f"<div style='text-align:center'>{{label}}</div>", unsafe_allow_html=True)
    middle.progress((index + 1) / len(STEPS))
    return index


def bare() -> None:
    st.title("Bare page")
    stepper()


start_session()
navigation = st.navigation([st.Page(bare, title="Bare", url_path="bare", default=True)])
settings = sidebar()
token_window(settings)
st.html("<style>[data-testid='stMainBlockContainer'] {{padding-top: 2.2rem;}}</style>")
navigation.run()
params = {{"input": settings["w_source"], "text": settings["w_text"], "step": str(st.session_state["step"] + 1)}}
query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
with st.session_state["link_slot"].popover("Copy link to this view", icon=":material/link:", width="stretch"):
    st.caption("Opens this page.")
    st.code(f"http://localhost:8501/?{{query}}", language=None, wrap_lines=True)
if st.query_params.to_dict() != params:
    st.query_params.from_dict(params)
"""

SHELL_APP = """\
\"\"\"The explorer's entry script around an empty page, for benchmarks/app_scale.py (generated).\"\"\"

import sys

sys.path.insert(0, {root!r})

import streamlit as st  # noqa: E402

from explorer import state, ui  # noqa: E402

st.set_page_config(
    page_title="Shell",
    page_icon=":material/grid_on:",
    layout="wide",
    initial_sidebar_state="collapsed" if state.presenter() else "auto",
)


def empty() -> None:
    state.current()
    st.title("Shell")
    ui.stepper("shell", ["one", "two", "three", "four", "five"])


navigation = st.navigation([st.Page(empty, title="Shell", url_path="shell", default=True)])
settings = state.sidebar()
ui.token_window_control(settings)
ui.base_css()
if state.presenter():
    ui.presenter_css()
ui.begin_run()
navigation.run()
ui.step_exports(navigation.title, settings)
state.share_link(navigation.url_path)
state.sync_url()
"""


def write_apps(folder: Path) -> tuple[Path, Path]:
    """The bare app and the shell app, generated into ``folder``."""
    bare, shell = folder / "bare_app.py", folder / "shell_app.py"
    bare.write_text(BARE_APP.format())
    shell.write_text(SHELL_APP.format(root=str(ROOT)))
    return bare, shell


# ------------------------------------------------------------------------------------------ machine, servers


def loadavg() -> tuple[float, float, float]:
    return os.getloadavg()


def machine() -> dict:
    import plotly

    chromium = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    return {**load.machine(), "plotly": plotly.__version__, "chromium": chromium}


class TimedServer(AppServer):
    """``streamlit run SCRIPT`` under ``serve.py --timings``, which times every script run."""

    def __init__(self, script: str, name: str, profile: Path | None = None) -> None:
        self.name = name
        self.timings = ARTIFACTS / f"{name}.timings.jsonl"
        serve = ["--timings", str(self.timings), *(["--profile", str(profile)] if profile else [])]
        super().__init__(script, log=ARTIFACTS / f"{name}.log", serve_options=serve)
        self.pages: list[tuple[str, str]] = []

    def start(self, timeout: float = 180.0, every: float = 0.3) -> str:
        self.timings.parent.mkdir(parents=True, exist_ok=True)
        self.timings.write_text("")
        return super().start(timeout, every)

    def mark(self) -> int:
        with self.timings.open() as f:
            return sum(1 for _ in f)

    async def timing_after(self, mark: int, timeout: float = 30.0) -> dict | None:
        """The last script run's timing written after ``mark`` lines (it is written after the post-run GC)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.timings.open() as f:
                lines = f.read().splitlines()
            if len(lines) > mark:
                await asyncio.sleep(0.05)  # a rerun the script asked for writes one line for both runs
                with self.timings.open() as f:
                    lines = f.read().splitlines()
                return json.loads(lines[-1])
            await asyncio.sleep(0.02)
        return None


# ------------------------------------------------------------------------------------------ sentences


class Sentences:
    """New sentences of exactly T GPT-2 tokens (``attention.tokenize``), never the same one twice."""

    def __init__(self, seed: int = 7) -> None:
        import attention

        self.words = WORDS
        self.tokenize = attention.tokenize
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def make(self, num_tokens: int) -> str:
        for _ in range(200):
            words = self.rng.choices(self.words, k=num_tokens + 8)
            text = " ".join(words).capitalize()
            pieces = self.tokenize(text).pieces
            if len(pieces) < num_tokens:
                continue
            candidate = "".join(pieces[:num_tokens])
            if len(self.tokenize(candidate)) == num_tokens and candidate.strip() and candidate not in self.seen:
                self.seen.add(candidate)
                return candidate
        raise RuntimeError(f"could not build a sentence of {num_tokens} tokens")


def link_text(text: str) -> tuple[str, bool]:
    """The sentence as a link carries it: at most ``MAX_URL_TEXT_CHARS`` characters, cut at a space."""
    if len(text) <= MAX_URL_TEXT_CHARS:
        return text, False
    return text[: text.rfind(" ", 0, MAX_URL_TEXT_CHARS)], True


# ------------------------------------------------------------------------------------------ protocol phase


def median(values) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


async def open_session(server: TimedServer, page: str, num_tokens: int, step: int, sentences: Sentences):
    """A fresh session on ``page`` at ``step`` opened from a link with a sentence of ``num_tokens`` tokens."""
    student = Student(server.base)
    await student.connect()
    shown, cut = link_text(sentences.make(num_tokens))
    opened = await student.open(page, {"input": "text", "text": shown, "step": str(step)})
    if opened.error:
        raise RuntimeError(f"{server.name} /{page} step {step}: {opened.error}")
    if cut:  # the link could not carry T tokens: type them (the slider's range changes once, here)
        await student.edit(sentences.make(num_tokens))
    if not server.pages:
        server.pages = student.app_pages
    return student


async def timed_edits(server: TimedServer, student, num_tokens: int, repeats: int, sentences: Sentences) -> dict:
    """``repeats`` sentence changes, each a new sentence of ``num_tokens`` tokens, timed."""
    rows = []
    for _ in range(repeats):
        text = sentences.make(num_tokens)
        await asyncio.sleep(0.2)  # the previous run's post-run collection is over
        mark, load = server.mark(), loadavg()[0]
        run = await student.edit(text)
        timing = await server.timing_after(mark) or dict.fromkeys(("script_s", "after_s", "total_s"), float("nan"))
        seconds = {
            "script": timing["script_s"],
            "client": run.latency,
            "gc": timing["after_s"],
            "total": timing["total_s"],
        }
        rows.append({**seconds, "bytes": run.bytes, "charts": run.charts, "load": load, "error": run.error})
    ok = [r for r in rows if not r["error"]]
    return {
        **{f"{key}_ms": median(1000 * r[key] for r in ok) for key in ("script", "client", "gc", "total")},
        "bytes": median(r["bytes"] for r in ok),
        "bytes_max": max((r["bytes"] for r in ok), default=float("nan")),
        "charts": max((r["charts"] for r in rows), default=0),
        "load": [r["load"] for r in rows],
        "errors": [r["error"] for r in rows if r["error"]],
        "samples_ms": [round(1000 * r["script"], 1) for r in rows],
    }


async def measure(server: TimedServer, page: str, step: int, num_tokens: int, repeats: int, sentences) -> dict:
    student = await open_session(server, page, num_tokens, step, sentences)
    try:
        return {"steps": student.steps or 1, **await timed_edits(server, student, num_tokens, repeats, sentences)}
    finally:
        await student.close()


async def warm_up(app: TimedServer, baselines: dict, pages: list[str], sentences: Sentences) -> dict[str, int]:
    """Open every page and step once (and the bare and shell pages), so first-call costs are behind us."""
    steps: dict[str, int] = {}
    for server, page in (*((b, "") for b in baselines.values()), *((app, p) for p in pages)):
        student = await open_session(server, page, 64, 1, sentences)
        count = student.steps or 1
        await student.edit(sentences.make(64))
        await student.close()
        if server is app:
            steps[page] = count
            for step in range(2, count + 1):
                student = await open_session(server, page, 64, step, sentences)
                await student.edit(sentences.make(64))
                await student.close()
    return steps


async def server_phase(args, app: TimedServer, baselines: dict, pages: list[str], results: dict) -> None:
    sentences = Sentences(seed=args.seed)
    started = time.time()
    print(f"warming up (load {loadavg()[0]:.2f})", flush=True)
    steps = await warm_up(app, baselines, pages, sentences)
    titles = dict(app.pages)
    for num_tokens in args.sizes:
        baseline = {"bare": [], "shell": []}
        for page in pages:
            for name, server in baselines.items():
                baseline[name].append(await measure(server, "", 1, num_tokens, args.repeats, sentences))
            wanted = range(1, steps[page] + 1) if args.steps == "all" else [int(s) for s in args.steps.split(",")]
            for step in [s for s in wanted if 1 <= s <= steps[page]]:
                row = await measure(app, page, step, num_tokens, args.repeats, sentences)
                bare_ms = median(r["script_ms"] for r in baseline["bare"])
                bare_total = median(r["total_ms"] for r in baseline["bare"])
                row.update(
                    page=page,
                    title=titles.get(page, page),
                    step=step,
                    steps=steps[page],
                    T=num_tokens,
                    bare_ms=bare_ms,
                    ratio=row["script_ms"] / bare_ms,
                    total_ratio=row["total_ms"] / bare_total,
                    when=time.strftime("%Y-%m-%d %H:%M"),
                )
                results["server"][f"{page}|{step}|{num_tokens}"] = row
                print(
                    f"  T={num_tokens:5d} {page or '(default)':12s} step {step}/{steps[page]}: "
                    f"{row['script_ms']:7.1f} ms ({row['ratio']:4.1f}x bare {bare_ms:5.1f}), client "
                    f"{row['client_ms']:7.1f} ms, {row['bytes'] / 1024:7.1f} KiB, load {row['load'][0]:.2f}"
                    + (f", ERRORS {row['errors']}" if row["errors"] else ""),
                    flush=True,
                )
        for name, rows in baseline.items():
            results["baseline"][f"{name}|{num_tokens}"] = {
                "name": name,
                "T": num_tokens,
                **{key: median(r[key] for r in rows) for key in ("script_ms", "total_ms", "gc_ms", "bytes")},
                "load": [v for r in rows for v in r["load"]],
            }
        print(
            f"  T={num_tokens:5d} bare {results['baseline'][f'bare|{num_tokens}']['script_ms']:.1f} ms, shell "
            f"{results['baseline'][f'shell|{num_tokens}']['script_ms']:.1f} ms",
            flush=True,
        )
    results["server_run"] = {
        "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
        "minutes": (time.time() - started) / 60,
        "repeats": args.repeats,
        "problems": [p for server in (app, *baselines.values()) for p in server.log_problems()[:10]],
    }


# ------------------------------------------------------------------------------------------ browser phase

INIT_SCRIPT = """
window.__scale = {enter: null, runs: 0, finished: null, lastPlot: null, lastPaint: null, settled: null};
document.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && event.target.closest && event.target.closest('.st-key-w_text')) {
    window.__scale.enter = performance.now();
  }
}, true);
const inPlot = (node) => {
  const element = node && (node.nodeType === 1 ? node : node.parentElement);
  return !!(element && element.closest && element.closest('.js-plotly-plot'));
};
const hasPlot = (node) => node && node.nodeType === 1 &&
  (node.matches('.js-plotly-plot') || !!node.querySelector('.js-plotly-plot'));
new MutationObserver((records) => {
  let plot = false;
  for (const r of records) {
    if (r.type === 'attributes' && r.attributeName === 'data-test-script-state') {
      if (r.target.getAttribute('data-test-script-state') === 'notRunning' && r.oldValue !== 'notRunning') {
        window.__scale.runs += 1;
        window.__scale.finished = performance.now();
      }
      continue;
    }
    if (!plot && (inPlot(r.target) || [...r.addedNodes].some(hasPlot) || [...r.removedNodes].some(hasPlot))) {
      plot = true;
    }
  }
  if (plot) {
    window.__scale.lastPlot = performance.now();
    requestAnimationFrame(() => requestAnimationFrame(() => {
      window.__scale.lastPaint = Math.max(window.__scale.lastPaint || 0, performance.now());
    }));
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true});
"""

FIRST_HEATMAP = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  return [...main.querySelectorAll('.js-plotly-plot .hm image')].some(
    (i) => (i.getAttribute('href') || '').startsWith('data:image/'));
}"""


class BrowserTab:
    """One Chromium context on the app (its own Streamlit session), with the paint clock installed."""

    def __init__(self, browser, base: str) -> None:
        self.context = browser.new_context(viewport=VIEWPORT)
        self.context.set_default_timeout(300_000)
        self.page = self.context.new_page()
        self.page.add_init_script(INIT_SCRIPT)
        self.received = 0
        self.page.on("websocket", lambda ws: ws.on("framereceived", self._count))
        self.base = base

    def _count(self, payload) -> None:
        self.received += len(payload)

    def close(self) -> None:
        self.context.close()

    def settle(self, before_runs: int = -1) -> float:
        """Wait for a finished run (after ``before_runs``), settled, then no plot change for ``QUIET_MS``."""
        self.page.wait_for_function(
            f"() => window.__scale.runs > {before_runs} && ({SETTLED})() && "
            "(window.__scale.settled = window.__scale.settled || performance.now())",
            polling="raf",
            timeout=300_000,
        )
        self.page.wait_for_function(
            f"() => performance.now() - Math.max(window.__scale.lastPlot || 0, window.__scale.settled) > {QUIET_MS}",
            polling=100,
            timeout=60_000,
        )
        return self.page.evaluate("() => window.__scale.settled")

    def open(self, url_path: str, query: dict[str, str]) -> None:
        self.page.goto(f"{self.base}/{url_path}?{urllib.parse.urlencode(query)}", timeout=300_000)
        self.settle()

    def type_sentence(self, text: str) -> dict:
        """Fill the sidebar's Sentence, press Enter, wait until painted; the times in ms from the Enter."""
        self.page.evaluate(
            "() => Object.assign(window.__scale, {enter: null, lastPlot: null, lastPaint: null, settled: null})"
        )
        before = self.page.evaluate("() => window.__scale.runs")
        received = self.received
        box = self.page.locator('[data-testid="stSidebar"] .st-key-w_text input')
        box.fill(text)
        load = loadavg()[0]
        box.press("Enter")
        self.settle(before)
        s = self.page.evaluate("() => window.__scale")
        painted = max(s["lastPaint"] or 0, s["settled"])
        return {
            "painted_ms": painted - s["enter"],
            "finished_ms": s["finished"] - s["enter"],  # the run ended, as the browser saw it
            "settled_ms": s["settled"] - s["enter"],
            "received_bytes": self.received - received,
            "plots": self.page.evaluate(
                "() => document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot').length"
            ),
            "load": load,
        }


def heaviest_steps(results: dict, pages: list[str], steps: dict[str, int]) -> dict[str, int]:
    """Each page's step with the most bytes per rerun at the largest T measured, among the steps that draw a
    chart if any does (step 1 if the page was not measured)."""
    chosen = {}
    for page in pages:
        rows = [r for r in results["server"].values() if r["page"] == page]
        if not rows:
            chosen[page] = 1
            continue
        largest = [r for r in rows if r["T"] == max(r["T"] for r in rows)]
        drawn = [r for r in largest if r.get("charts", 0)] or largest
        chosen[page] = max(drawn, key=lambda r: r["bytes"])["step"]
    chosen.update(steps)
    return chosen


def browser_phase(args, app: TimedServer, pages: list[str], results: dict) -> None:
    from playwright.sync_api import sync_playwright

    sentences = Sentences(seed=args.seed + 1)
    forced = {}
    if args.browser_steps:
        for item in args.browser_steps.split(","):
            name, _, step = item.partition(":")
            forced[PAGE_ALIASES.get(name, name)] = int(step)
    chosen = heaviest_steps(results, pages, forced)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            for page in pages:
                for num_tokens in args.browser_sizes:
                    step = chosen[page]
                    tab = BrowserTab(browser, app.base)
                    try:
                        first = sentences.make(num_tokens)
                        shown, _ = link_text(first)
                        tab.open(page, {"input": "text", "text": shown, "step": str(step)})
                        tab.type_sentence(sentences.make(num_tokens))  # warm: the slider and figures exist
                        runs = [tab.type_sentence(sentences.make(num_tokens)) for _ in range(args.browser_repeats)]
                    finally:
                        tab.close()
                    row = {
                        "page": page,
                        "step": step,
                        "T": num_tokens,
                        "painted_ms": median(r["painted_ms"] for r in runs),
                        "finished_ms": median(r["finished_ms"] for r in runs),
                        "settled_ms": median(r["settled_ms"] for r in runs),
                        "received_bytes": median(r["received_bytes"] for r in runs),
                        "plots": runs[-1]["plots"],
                        "samples_ms": [round(r["painted_ms"]) for r in runs],
                        "load": [r["load"] for r in runs],
                        "when": time.strftime("%Y-%m-%d %H:%M"),
                    }
                    results["browser"][f"{page}|{step}|{num_tokens}"] = row
                    print(
                        f"  browser T={num_tokens:5d} {page or '(default)':12s} step {step}: Enter→painted "
                        f"{row['painted_ms']:7.0f} ms (run finished {row['finished_ms']:6.0f} ms), "
                        f"{row['plots']} plots, {row['received_bytes'] / 1024:.0f} KiB, load {runs[0]['load']:.2f}",
                        flush=True,
                    )
        finally:
            browser.close()


# ------------------------------------------------------------------------------------------ cold start


def cold_start_phase(args, results: dict) -> None:
    from playwright.sync_api import sync_playwright

    targets = [("", ""), ("tokens", "step=2")]
    rows = {}
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            for path, query in targets:
                samples = []
                for _ in range(args.cold_repeats):
                    load, server = loadavg()[0], AppServer(log=ARTIFACTS / "cold.log")
                    t0 = time.perf_counter()
                    with server as base:
                        healthy = time.perf_counter() - t0
                        context = browser.new_context(viewport=VIEWPORT)
                        context.set_default_timeout(300_000)
                        page = context.new_page()
                        page.goto(f"{base}/{path}" + (f"?{query}" if query else ""), wait_until="commit")
                        page.wait_for_function(f"() => ({FIRST_HEATMAP})() && ({SETTLED})()", polling="raf")
                        painted = time.perf_counter() - t0
                        context.close()
                    samples.append({"healthy_s": healthy, "painted_s": painted, "load": load})
                    print(
                        f"  cold start /{path}{'?' + query if query else ''}: healthy {healthy:.1f} s, "
                        f"first heatmap painted {painted:.1f} s, load {load:.2f}",
                        flush=True,
                    )
                rows[f"/{path}" + (f"?{query}" if query else "")] = {
                    "healthy_s": median(s["healthy_s"] for s in samples),
                    "painted_s": median(s["painted_s"] for s in samples),
                    "samples_s": [round(s["painted_s"], 1) for s in samples],
                    "load": [s["load"] for s in samples],
                }
        finally:
            browser.close()
    results["cold"] = {"rows": rows, "when": time.strftime("%Y-%m-%d %H:%M"), "repeats": args.cold_repeats}


def import_phase(results: dict, repeats: int = 3) -> None:
    """``python -X importtime -c "import attention"`` (largest costs) and the time to import explorer.compute."""
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_CACHE))}
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import attention"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    entries = []
    for line in out.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if found:
            entries.append((int(found[1]), int(found[2]), (len(found[3]) - 1) // 2, found[4]))
    top_level = sorted((e for e in entries if e[2] == 1), key=lambda e: -e[1])[:8]  # what attention imports
    by_self = sorted(entries, key=lambda e: -e[0])[:8]
    total = sum(e[1] for e in entries if e[2] == 0)

    def timed(code: str) -> list[float]:
        values = []
        for _ in range(repeats):
            program = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
            run = subprocess.run([sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True)
            values.append(float(run.stdout.strip().splitlines()[-1]))
        return values

    results["imports"] = {
        "importtime_total_ms": total / 1000,
        "top_level": [{"module": e[3], "cumulative_ms": e[1] / 1000, "self_ms": e[0] / 1000} for e in top_level],
        "by_self": [{"module": e[3], "self_ms": e[0] / 1000} for e in by_self],
        "attention_s": timed("import attention"),
        "explorer_compute_s": timed("import explorer.compute"),
        "streamlit_s": timed("import streamlit"),
        "load": loadavg(),
    }
    print(
        f"  import attention {median(results['imports']['attention_s']):.2f} s, explorer.compute "
        f"{median(results['imports']['explorer_compute_s']):.2f} s",
        flush=True,
    )


# ------------------------------------------------------------------------------------------ report


def _fmt_ms(value: float) -> str:
    return "–" if value != value else (f"{value:,.0f}" if value >= 100 else f"{value:.1f}")


def _load(values) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "–"
    low, high = min(values), max(values)
    return f"{low:.1f}" if abs(high - low) < 0.05 else f"{low:.1f}–{high:.1f}"


def _page_name(page: str, title: str = "") -> str:
    return f"`{page}`" if page else "default (`why_attention`)"


def page_summary(results: dict) -> list[dict]:
    """Per page and T: the worst step and the mean over steps of the rerun time and its ratio to the bare page."""
    by_page: dict[str, dict[int, list[dict]]] = {}
    for row in results["server"].values():
        by_page.setdefault(row["page"], {}).setdefault(row["T"], []).append(row)
    summary = []
    for page, sizes in by_page.items():
        for num_tokens, rows in sorted(sizes.items()):
            worst = max(rows, key=lambda r: r["ratio"])
            heaviest = max(rows, key=lambda r: r["bytes"])
            summary.append(
                {
                    "page": page,
                    "T": num_tokens,
                    "steps": len(rows),
                    "worst": worst,
                    "mean_ratio": statistics.fmean(r["ratio"] for r in rows),
                    "mean_ms": statistics.fmean(r["script_ms"] for r in rows),
                    "bytes": heaviest,
                    "load": [v for r in rows for v in r["load"]],
                }
            )
    return summary


def goal_for(num_tokens: int) -> float | None:
    if num_tokens <= 64:
        return GOALS["small"]
    if num_tokens == 1024:
        return GOALS["large"]
    return None


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def flag(value: float, goal: float | None) -> str:
    return "" if goal is None else (" ✅" if value <= goal else " ❌")


def server_tables(results: dict, summary: list[dict]) -> list[str]:
    """The tables of the server phase: time (× bare, then ms), the whole rerun, bytes, and every step."""
    base, server = results["baseline"], results["server"]
    sizes = sorted({s["T"] for s in summary})
    pages = list(dict.fromkeys(s["page"] for s in summary))
    found = {(s["page"], s["T"]): s for s in summary}
    names = {"bare": "bare page", "shell": "shell"}
    columns = [f"T = {t:,}" for t in sizes]
    align = row("---", *("---:" for _ in sizes))

    def loads(rows: list[dict]) -> str:
        return _load([v for r in rows for v in r["load"]])

    def per_page(cell, load: bool = False) -> list[str]:
        """One row per page: ``cell(summary)`` at each T, and the load of its runs if asked."""
        last = [loads([s for s in summary if s["page"] == p]) for p in pages] if load else [None] * len(pages)
        cells = [[cell(found[p, t]) if (p, t) in found else "–" for t in sizes] for p in pages]
        return [row(_page_name(p), *c, *filter(None, [x])) for p, c, x in zip(pages, cells, last, strict=True)]

    def per_baseline(cell, labels=names, load: bool = False) -> list[str]:
        """A row for the bare page and one for the shell: ``cell(baseline, T)`` at each T, and the load if asked."""
        lines = []
        for n in names:
            found_rows = [base.get(f"{n}|{t}") for t in sizes]
            cells = [cell(b, t) if b else "–" for b, t in zip(found_rows, sizes, strict=True)]
            lines.append(row(labels[n], *cells, *([loads([b for b in found_rows if b])] if load else [])))
        return lines

    repeats = {t: sorted({len(r["samples_ms"]) for r in server.values() if r["T"] == t}) for t in sizes}
    counts = ", ".join(f"{'/'.join(map(str, n))} at T = {t:,}" for t, n in repeats.items())
    if len({tuple(n) for n in repeats.values()}) == 1:
        counts = "/".join(map(str, next(iter(repeats.values()))))
    ratios = per_baseline(
        lambda b, t: f"{_fmt_ms(b['script_ms'])} ms ({b['script_ms'] / base[f'bare|{t}']['script_ms']:.2f}×)",
        {"bare": "bare page", "shell": "shell (entry script, empty page)"},
        load=True,
    )
    ratios += per_page(
        lambda s: (
            f"{s['worst']['ratio']:.1f}× ({s['worst']['step']}){flag(s['worst']['ratio'], goal_for(s['T']))}"
            f" · {s['mean_ratio']:.1f}×"
        ),
        load=True,
    )

    def whole(s: dict) -> str:
        rows = [r for r in server.values() if r["page"] == s["page"] and r["T"] == s["T"]]
        w = max(rows, key=lambda r: r["total_ratio"])
        mark = flag(w["total_ratio"], goal_for(s["T"]))
        return f"{_fmt_ms(w['total_ms'])} ({w['total_ratio']:.1f}×{mark}; GC {_fmt_ms(w['gc_ms'])})"

    def most_bytes(s: dict) -> str:
        most = s["bytes"]["bytes_max"]
        return f"{most / 1024:,.0f} ({s['bytes']['step']})" + (" ⚠️" if most > BYTES_GOAL else "")

    out = [
        "**Server time of a rerun after a sentence change** (script run timed inside the server; median of "
        f"{counts} new sentences per page and step). Each "
        "cell: the worst step's time as a multiple of the bare page at the same T (and its step), then the "
        "mean over all steps. Goals: ≤ 1.5× at T ≤ 64, ≤ 3× at T = 1,024.",
        "",
        row("page", *(f"{c}: worst (step) · mean" for c in columns), "load"),
        row("---", *("---:" for _ in sizes), "---"),
        *ratios,
        "",
        "The same, in milliseconds (worst step · mean over steps; client send → `script_finished` of the worst "
        "step in brackets):",
        "",
        row("page", *(f"{c} ms" for c in columns)),
        align,
        *per_page(
            lambda s: (
                f"{_fmt_ms(s['worst']['script_ms'])} · {_fmt_ms(s['mean_ms'])} ({_fmt_ms(s['worst']['client_ms'])})"
            )
        ),
        "",
        "The whole rerun as the user waits for it: the script *and* the post-run `gc.collect(2)`, which holds "
        "the GIL until `script_finished` has gone out (worst step's ms and × the bare page's, bare included; "
        "the collection's median ms in brackets):",
        "",
        row("page", *columns),
        align,
        *per_baseline(
            lambda b, t: (
                f"{_fmt_ms(b['total_ms'])} ({b['total_ms'] / base[f'bare|{t}']['total_ms']:.1f}×; "
                f"GC {_fmt_ms(b['gc_ms'])})"
            )
        ),
        *per_page(whole),
        "",
        "**Bytes sent to the browser per rerun** (websocket payloads of the rerun; the step with the most, in "
        "KiB; ⚠️ over 2 MB):",
        "",
        row("page", *columns),
        align,
        *per_baseline(lambda b, t: f"{b['bytes'] / 1024:,.0f}"),
        *per_page(most_bytes),
        "",
        "<details><summary>Every page and step: server ms (× bare) and KiB per rerun</summary>",
        "",
        row("page", "step", *columns, "load"),
        row("---", "---:", *("---:" for _ in sizes), "---"),
    ]
    for page in pages:
        for step in sorted({r["step"] for r in server.values() if r["page"] == page}):
            rows = [server.get(f"{page}|{step}|{t}") for t in sizes]
            cells = [
                f"{_fmt_ms(r['script_ms'])} ({r['ratio']:.1f}×) · {r['bytes'] / 1024:,.0f} KiB" if r else "–"
                for r in rows
            ]
            out.append(row(_page_name(page), str(step), *cells, loads([r for r in rows if r])))
    return [*out, "", "</details>", ""]


def report(results: dict) -> str:
    out: list[str] = []
    m = results.get("machine", {})
    out += [
        f"Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('ram_gib', '?')} GiB RAM; Python "
        f"{m.get('python')}, Streamlit {m.get('streamlit')}, plotly {m.get('plotly')}, torch {m.get('torch')}, "
        f"{m.get('chromium', '')}. The *load* columns are the 1-minute load average at each timed run "
        "(min–max); other developers share this machine.",
        "",
        "| phase | command | started | load average: 1/5/15 min at start → end, or the 1-min range of its timed runs |",
        "| --- | --- | --- | --- |",
    ]
    for name, phase in results.get("phases", {}).items():
        start = ", ".join(f"{v:.2f}" for v in phase["load_start"])
        end = ", ".join(f"{v:.2f}" for v in phase["load_end"])
        out.append(f"| {name} | `{phase['command']}` | {phase['when']} | {start} → {end} |")
    out.append("")
    summary = page_summary(results)
    if summary:
        out += server_tables(results, summary)
    browser = results.get("browser", {})
    if browser:
        out += [
            "**Enter to painted in Chromium** (median of "
            f"{len(next(iter(browser.values()))['samples_ms'])} sentences; the page's heaviest step; *run finished* is "
            "when the browser saw the script run end; KiB received over the websocket). Goal: T = 1,024 at most 3× "
            "T = 64.",
            "",
            "| page | step | T = 64: run finished · painted ms | T = 1,024: run finished · painted ms "
            "| painted 1,024 / 64 | plots | KiB at 1,024 | load |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for page in list(dict.fromkeys(r["page"] for r in browser.values())):
            small = next((r for r in browser.values() if r["page"] == page and r["T"] == 64), None)
            large = next((r for r in browser.values() if r["page"] == page and r["T"] == 1024), None)
            ratio = large["painted_ms"] / small["painted_ms"] if small and large else float("nan")
            flag = "" if ratio != ratio else (" ✅" if ratio <= GOALS["paint"] else " ❌")

            def cell(r):
                return "–" if r is None else f"{_fmt_ms(r['finished_ms'])} · {_fmt_ms(r['painted_ms'])}"

            step = (large or small)["step"]
            plots = (large or small)["plots"]
            kib = "–" if large is None else f"{large['received_bytes'] / 1024:,.0f}"
            loads = (small["load"] if small else []) + (large["load"] if large else [])
            out.append(
                f"| {_page_name(page)} | {step} | {cell(small)} | {cell(large)} | {ratio:.1f}×{flag} | {plots} "
                f"| {kib} | {_load(loads)} |"
            )
        out.append("")
    cold = results.get("cold")
    if cold:
        out += [
            f"**Cold start** (median of {cold['repeats']}; from launching `streamlit run streamlit_app.py` to the "
            "first heatmap painted in an already running Chromium; book input; files in the OS page cache):",
            "",
            "| URL | server answers /_stcore/health s | first heatmap painted s | samples s | load |",
            "| --- | ---: | ---: | --- | --- |",
        ]
        for url, r in cold["rows"].items():
            out.append(
                f"| `{url}` | {r['healthy_s']:.1f} | {r['painted_s']:.1f} | {', '.join(map(str, r['samples_s']))} "
                f"| {_load(r['load'])} |"
            )
        out.append("")
    imports = results.get("imports")
    if imports:
        top = ", ".join(f"`{e['module']}` {e['cumulative_ms']:,.0f} ms" for e in imports["top_level"][:6])
        own = ", ".join(f"`{e['module']}` {e['self_ms']:,.0f} ms" for e in imports["by_self"][:6])
        out += [
            f"Imports (median of {len(imports['attention_s'])} fresh processes, load {_load(imports['load'][:1])}): "
            f"`import attention` {median(imports['attention_s']):.2f} s, `import explorer.compute` "
            f"{median(imports['explorer_compute_s']):.2f} s, `import streamlit` "
            f"{median(imports['streamlit_s']):.2f} s. "
            f'`python -X importtime -c "import attention"`: {imports["importtime_total_ms"]:,.0f} ms in all; what '
            f"`attention` imports, largest first (cumulative): {top}; largest single modules (self): {own}.",
            "",
        ]
    out += verdicts(results)
    return "\n".join(out)


def verdicts(results: dict) -> list[str]:
    """One line per goal: met or not, with the measured numbers."""
    lines = ["**Goals** (computed from the tables above):", ""]
    summary = page_summary(results)
    for label, test, goal in (
        ("≤ 1.5× the bare page at T ≤ 64", lambda t: t <= 64, GOALS["small"]),
        ("≤ 3× the bare page at T = 1,024", lambda t: t == 1024, GOALS["large"]),
    ):
        rows = [s for s in summary if test(s["T"])]
        if not rows:
            continue
        missed = [s for s in rows if s["worst"]["ratio"] > goal]
        if not missed:
            lines.append(f"- {label}: **met** on every page (worst {max(s['worst']['ratio'] for s in rows):.1f}×).")
        else:
            worst = ", ".join(
                f"{_page_name(s['page'])} T={s['T']} step {s['worst']['step']} {s['worst']['ratio']:.1f}× "
                f"({_fmt_ms(s['worst']['script_ms'])} vs {_fmt_ms(s['worst']['bare_ms'])} ms)"
                for s in sorted(missed, key=lambda s: -s["worst"]["ratio"])[:6]
            )
            lines.append(
                f"- {label}: **not met** on {len({s['page'] for s in missed})} of {len({s['page'] for s in rows})} "
                f"pages; worst: {worst}."
            )
    big = [r for r in results["server"].values() if r["T"] == 1024]
    if big:
        over = [r for r in big if r["bytes_max"] > BYTES_GOAL]
        most = max(big, key=lambda r: r["bytes_max"])
        lines.append(
            f"- ≤ 2 MB per rerun at T = 1,024: **{'met' if not over else 'not met'}**; largest "
            f"{most['bytes_max'] / 1e6:.2f} MB ({_page_name(most['page'])} step {most['step']})"
            + ("; over: " + ", ".join(f"{_page_name(r['page'])} step {r['step']}" for r in over) + "." if over else ".")
        )
    browser = results.get("browser", {})
    pairs = []
    for r in browser.values():
        if r["T"] == 1024:
            small = browser.get(f"{r['page']}|{r['step']}|64")
            if small:
                pairs.append((r["page"], r["painted_ms"] / small["painted_ms"], r, small))
    if pairs:
        missed = [p for p in pairs if p[1] > GOALS["paint"]]
        worst = max(pairs, key=lambda p: p[1])
        lines.append(
            f"- Enter-to-painted at T = 1,024 ≤ 3× T = 64: **{'met' if not missed else 'not met'}** "
            f"(worst {_page_name(worst[0])}: {worst[1]:.1f}×, {_fmt_ms(worst[2]['painted_ms'])} vs "
            f"{_fmt_ms(worst[3]['painted_ms'])} ms)"
            + (f"; missed on {', '.join(_page_name(p[0]) for p in missed)}." if missed else ".")
        )
    errors = [(k, r["errors"]) for k, r in results["server"].items() if r["errors"]]
    if errors:
        lines.append(f"- Errors during the runs: {errors[:5]}")
    lines.append("")
    return lines


# ------------------------------------------------------------------------------------------ profile


async def profile_run(args) -> None:
    """One page, step and T under cProfile: open, warm up, then ``repeats`` timed sentence changes."""
    page = PAGE_ALIASES.get(args.page, args.page)
    stats_path = ARTIFACTS / f"profile-{page or 'default'}-{args.step}-{args.size}.pstats"
    server = TimedServer("streamlit_app.py", "profile", profile=stats_path)
    server.start()
    try:
        sentences = Sentences(seed=args.seed + 2)
        student = await open_session(server, page, args.size, args.step, sentences)
        await student.edit(sentences.make(args.size))
        await asyncio.sleep(0.5)
        server.proc.send_signal(signal.SIGUSR2)  # dump and clear: only the timed edits are profiled
        await asyncio.sleep(1.0)
        row = await timed_edits(server, student, args.size, args.repeats, sentences)
        await asyncio.sleep(0.5)
        server.proc.send_signal(signal.SIGUSR2)
        await asyncio.sleep(1.5)
        await student.close()
    finally:
        server.stop()
    print(f"/{page} step {args.step} T={args.size}: {row['script_ms']:.0f} ms per rerun under cProfile ({row})")
    buffer = io.StringIO()
    stats = pstats.Stats(str(stats_path), stream=buffer)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)
    print(buffer.getvalue())
    print(f"pstats: {stats_path}")


# ------------------------------------------------------------------------------------------ driver


def load_results(path: Path) -> dict:
    empty = {"server": {}, "baseline": {}, "browser": {}}
    if path.exists():
        with path.open() as f:
            return {**empty, **json.load(f)}
    return empty


def save_results(results: dict) -> None:
    path = Path(results["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        json.dump(results, f, indent=1, default=float)


def run_all(args) -> None:
    results = {"server": {}, "baseline": {}, "browser": {}} if args.fresh else load_results(Path(args.results))
    results["path"] = args.results
    results["machine"] = machine()
    results.setdefault("phases", {})
    command = " ".join(["python", "benchmarks/app_scale.py", *sys.argv[1:]])

    @contextlib.contextmanager
    def phase(name: str):
        entry = {"command": command, "when": time.strftime("%Y-%m-%d %H:%M"), "load_start": loadavg()}
        print(f"{name} (load {entry['load_start'][0]:.2f})", flush=True)
        yield
        results["phases"][name] = {**entry, "load_end": loadavg()}
        save_results(results)

    print(f"machine: {results['machine']}", flush=True)
    wanted = [PAGE_ALIASES.get(p, p) for p in args.pages.split(",")] if args.pages else None
    app = TimedServer("streamlit_app.py", "app")
    bare_path, shell_path = write_apps(Path(tempfile.mkdtemp(prefix="app_scale_")))
    baselines = {
        "bare": TimedServer(str(bare_path), "bare"),
        "shell": TimedServer(str(shell_path), "shell"),
    }
    try:
        if not args.no_server or not args.no_browser:
            app.start()
            print(f"app server {app.base}", flush=True)
            pages = asyncio.run(discover_pages(app))
            pages = [p for p in pages if wanted is None or p in wanted]
            if not args.no_server:
                for server in baselines.values():
                    server.start()
                with phase("server time and bytes"):
                    asyncio.run(server_phase(args, app, baselines, pages, results))
                for server in baselines.values():
                    server.stop()
            if not args.no_browser:
                with phase("Enter to painted"):
                    browser_phase(args, app, pages, results)
    finally:
        app.stop()
        for server in baselines.values():
            server.stop()
    if not args.no_cold:
        with phase("cold start and imports"):
            cold_start_phase(args, results)
            import_phase(results)
    save_results(results)
    finish(results, args)


async def discover_pages(app: TimedServer) -> list[str]:
    student = Student(app.base)
    await student.connect()
    await student.open("", {})
    await student.close()
    app.pages = student.app_pages
    return [path for path, _ in student.app_pages]


def finish(results: dict, args) -> None:
    tables = report(results)
    print(tables)
    if not args.no_markdown:
        replace_block(args.markdown, TABLES_START, TABLES_END, tables)
        print(f"updated {args.markdown}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "report", "profile"))
    parser.add_argument("--pages", help="comma-separated URL paths (default/why_attention for the first page)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="token counts T")
    parser.add_argument("--steps", default="all", help="'all' or comma-separated step numbers")
    parser.add_argument("--repeats", type=int, default=3, help="timed sentence changes per page, step and T")
    parser.add_argument("--no-server", action="store_true", help="skip the server-time and bytes measurement")
    parser.add_argument("--no-browser", action="store_true", help="skip Enter-to-painted in Chromium")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold start and import times")
    parser.add_argument("--browser-sizes", default=",".join(map(str, BROWSER_SIZES)))
    parser.add_argument("--browser-repeats", type=int, default=3)
    parser.add_argument("--browser-steps", help="page:step,... instead of each page's heaviest step")
    parser.add_argument("--cold-repeats", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="forget earlier results instead of updating them")
    parser.add_argument("--results", default=str(RESULTS), help="JSON file of results (updated, not replaced)")
    parser.add_argument("--markdown", default=str(MARKDOWN))
    parser.add_argument("--no-markdown", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--page", default="multihead", help="profile: the page")
    parser.add_argument("--step", type=int, default=1, help="profile: the step")
    parser.add_argument("--size", type=int, default=1024, help="profile: T")
    parser.add_argument("--top", type=int, default=30, help="profile: functions listed")
    args = parser.parse_args(argv)
    args.sizes = [int(v) for v in args.sizes.split(",")]
    args.browser_sizes = [int(v) for v in args.browser_sizes.split(",")]
    if args.command == "report":
        finish(load_results(Path(args.results)), args)
    elif args.command == "profile":
        asyncio.run(profile_run(args))
    else:
        run_all(args)


if __name__ == "__main__":
    main(sys.argv[1:])
