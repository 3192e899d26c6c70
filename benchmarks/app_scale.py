"""The app at GPT-2 scale: server time, bytes and browser paint time of a rerun, at T = 6 … 1,024 tokens.

Usage (the command behind the "App at scale" section of BENCHMARKS.md)::

    python benchmarks/app_scale.py                               # everything, about 15 minutes on 2 cores
    python benchmarks/app_scale.py --pages causal_mask,multihead --sizes 64,1024 --no-browser --no-cold
    python benchmarks/app_scale.py profile --page multihead --step 1 --size 1024   # where a rerun's time goes
    python benchmarks/app_scale.py report                        # the tables again, from the saved results

What it measures (results in ``artifacts/app_scale/results.json``, tables in BENCHMARKS.md):

1. **Server time of a rerun after a sentence change**, for every page, every step and
   T = 6, 64, 256, 1,024 GPT-2 tokens. A fresh session opens the page from a link
   (``?input=text&text=<T tokens>&step=k``); then the sidebar's sentence is replaced by a new
   sentence of the same T (``repeats`` times, each one new, so every cache misses) and the
   run is timed *inside the server*: the app runs under a small launcher (this file's
   ``_serve`` mode, ``streamlit run`` in-process) that times ``ScriptRunner._run_script`` up
   to ``_on_script_finished``, i.e. the script's run without the post-run garbage collection.
   The protocol client's send → ``script_finished`` latency (``benchmarks/load.py``'s
   ``Student``; client and server on one machine) and the server process's CPU time per
   rerun are recorded next to it. Streamlit sends ``script_finished`` and then runs
   ``gc.collect(2)`` (``runner.postScriptGC``) holding the GIL, so the client sees the end of
   the run only after that collection: the report gives the ratio both without it (the
   script) and with it (the whole rerun).
2. **The bare page**, in the same run: a second server runs a generated app (``BARE_APP``) with
   *the same widgets* as the explorer and nothing else: ``st.navigation`` over one page; in the
   sidebar the presenter toggle, the share-link slot, the Input radio, the Sentence box, the six
   number inputs in two columns (d_in, d_out, num_heads, context_length, dropout p, seed), the
   training toggle and the figure-format control, with the same keys and ``on_change``
   callbacks; above 48 tokens the token-window slider with the same range (the sentence is
   tokenized with tiktoken's ``r50k_base`` to size it); on the page the title and the
   stepper's widgets (Previous and Next with shortcuts, the two off-screen clicker buttons, the
   step label and progress bar); the "Copy link to this view" popover and the URL sync. It
   imports Streamlit and tiktoken only (no torch, pandas or plotly), so it is the floor
   Streamlit itself sets for these widgets. A third server runs ``SHELL_APP``: the explorer's
   entry script exactly (``explorer.state.sidebar``, ``ui.token_window_control``, which
   tokenizes *and embeds* the sentence, ``ui.begin_run``, ``ui.step_exports``,
   ``state.share_link``, ``state.sync_url``) around an empty page with the same title and
   stepper: its cost over the bare page is the explorer's shell and imported heap (the
   post-run garbage collection scans torch's, plotly's and pandas' objects), and a page's cost
   over the shell is its own content. Bare and shell sessions are timed before every page, so
   they see the same machine load; a page's ratio uses the median of the bare sessions timed
   so far at the same T.
3. **Bytes sent to the browser per rerun**: the sum of the websocket messages of that rerun
   (protobuf payloads; ``server.enableWebsocketCompression`` is off by default, so this is
   what goes on the wire, less framing).
4. **Enter to painted, in Chromium**: on each page's heaviest step (most bytes at the largest
   T measured among the steps that draw a chart, or ``--browser-steps``) at T = 64 and 1,024,
   the sentence is typed into the sidebar and Enter pressed; the time runs from the ``keydown``
   of Enter (page clock) to the frame after the last mutation inside any ``.js-plotly-plot``, once the run has finished,
   nothing is stale, every heatmap has its image (the browser tests' ``SETTLED``) and no plot
   has changed for ``QUIET_MS``.
5. **Cold start**: from launching ``streamlit run streamlit_app.py`` to the first heatmap
   painted in Chromium (already running), on ``/`` and on ``/tokens?step=2``; and
   ``python -X importtime -c "import attention"``'s largest costs, and the time to import
   ``explorer.compute``.

The load average is recorded at every timed run; other developers share this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
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
import threading
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

ARTIFACTS = ROOT / "artifacts" / "app_scale"
RESULTS = ARTIFACTS / "results.json"
MARKDOWN = ROOT / "BENCHMARKS.md"
SECTION_START, SECTION_END = "<!-- app-scale:start -->", "<!-- app-scale:end -->"
TABLES_START, TABLES_END = "<!-- app-scale:tables:start -->", "<!-- app-scale:tables:end -->"
TIKTOKEN_CACHE = Path("/work/shared/tiktoken_cache")
CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 720}
SIZES = (6, 64, 256, 1024)
BROWSER_SIZES = (64, 1024)
MAX_URL_TEXT_CHARS = 2_000  # explorer.settings: longer link texts are cut (with a notice)
BYTES_GOAL = 2 * 10**6
GOALS = {"small": 1.5, "large": 3.0, "paint": 3.0}
QUIET_MS = 800  # the browser measurement ends once no plot has changed for this long
PAGE_ALIASES = {"default": "", "why_attention": "", "": ""}


# ------------------------------------------------------------------------------------------ the launcher
#
# ``python benchmarks/app_scale.py _serve --timings PATH [--profile PATH] -- run APP.py --server.port ...``
# runs Streamlit's own command line in this process (as benchmarks/serve.py does) and appends one JSON line
# per script run to PATH: the wall and thread-CPU time from the start of ``ScriptRunner._run_script`` to its
# ``_on_script_finished`` (the page's run; reruns the script asks for, such as ``ensure_entrypoint``'s, are
# included), and the time after it (the post-run ``gc.collect(2)``).


def _serve(argv: list[str]) -> None:
    split = argv.index("--")
    options, streamlit_args = argv[:split], argv[split + 1 :]
    timings = options[options.index("--timings") + 1]
    profile_path = options[options.index("--profile") + 1] if "--profile" in options else None

    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    from streamlit.web import cli

    original_run, original_finished = ScriptRunner._run_script, ScriptRunner._on_script_finished
    local = threading.local()
    lock = threading.Lock()
    profiler = cProfile.Profile() if profile_path else None

    def on_script_finished(self, *args, **kwargs):
        local.finished = (time.perf_counter(), time.thread_time())
        return original_finished(self, *args, **kwargs)

    def run_script(self, rerun_data):
        local.finished = None
        start, cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            return original_run(self, rerun_data)
        finally:
            if profiler is not None:
                profiler.disable()
            end, end_cpu = time.perf_counter(), time.thread_time()
            finished, finished_cpu = local.finished or (end, end_cpu)
            line = {
                "session": getattr(self, "_session_id", ""),
                "script_s": finished - start,
                "script_cpu_s": finished_cpu - cpu,
                "after_s": end - finished,
                "total_s": end - start,
            }
            with lock, open(timings, "a") as f:
                f.write(json.dumps(line) + "\n")

    ScriptRunner._run_script = run_script
    ScriptRunner._on_script_finished = on_script_finished
    if "--freeze" in options:  # the gc.freeze() experiment: the heavy imports out of every collection's way
        import gc

        import pandas  # noqa: F401
        import plotly.graph_objects  # noqa: F401

        import explorer.compute
        import explorer.figures
        import explorer.ui  # noqa: F401

        gc.collect()
        gc.freeze()
    if profiler is not None:

        def dump(signum=None, frame=None) -> None:
            profiler.dump_stats(profile_path)
            profiler.clear()

        signal.signal(signal.SIGUSR2, dump)
    sys.argv = ["streamlit", *streamlit_args]
    cli.main(prog_name="streamlit")


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


# ------------------------------------------------------------------------------------------ machine, load


def loadavg() -> tuple[float, float, float]:
    with open("/proc/loadavg") as f:
        one, five, fifteen = (float(v) for v in f.read().split()[:3])
    return one, five, fifteen


def machine() -> dict:
    model = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        found = re.search(r"Model name:\s*(.+)", out)
        model = found.group(1).strip() if found else ""
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    import platform

    import plotly
    import streamlit
    import torch

    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "ram_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "streamlit": streamlit.__version__,
        "plotly": plotly.__version__,
        "torch": torch.__version__,
        "chromium": _chromium_version(),
    }


def _chromium_version() -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    return ""


def server_env() -> dict:
    env = dict(os.environ)
    if "TIKTOKEN_CACHE_DIR" not in env and TIKTOKEN_CACHE.is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE)
    env.pop("STREAMLIT_SERVER_PORT", None)
    return env


# ------------------------------------------------------------------------------------------ servers


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_args(script: str, port: int) -> list[str]:
    return [
        "run",
        script,
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
    ]


def wait_healthy(base: str, proc: subprocess.Popen, log: Path, timeout: float = 180.0, every: float = 0.3) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {log}")
        with contextlib.suppress(OSError), urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
            if r.status == 200:
                return
        time.sleep(every)
    raise RuntimeError(f"server did not answer /_stcore/health in {timeout:.0f} s; see {log}")


def stop_process(proc: subprocess.Popen | None) -> None:
    """Stop a server this script started (its own process group)."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(20)


class TimedServer:
    """``streamlit run SCRIPT`` under this file's ``_serve`` launcher, which times every script run."""

    def __init__(
        self,
        script: str,
        name: str,
        profile: Path | None = None,
        extra: list[str] | None = None,
        freeze: bool = False,
        env: dict[str, str] | None = None,
    ) -> None:
        self.env = env or {}
        self.script = script
        self.extra = extra or []
        self.freeze = freeze
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.log = ARTIFACTS / f"{name}.log"
        self.timings = ARTIFACTS / f"{name}.timings.jsonl"
        self.profile = profile
        self.proc: subprocess.Popen | None = None
        self.pages: list[tuple[str, str]] = []

    def command(self) -> list[str]:
        launcher = [sys.executable, str(Path(__file__).resolve()), "_serve", "--timings", str(self.timings)]
        if self.profile:
            launcher += ["--profile", str(self.profile)]
        if self.freeze:
            launcher.append("--freeze")
        return [*launcher, "--", *streamlit_args(self.script, self.port), *self.extra]

    def start(self) -> None:
        self.timings.write_text("")
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                env={**server_env(), **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_healthy(self.base, self.proc, self.log)

    def stop(self) -> None:
        stop_process(self.proc)

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

    def cpu_s(self) -> float:
        ticks = os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    def log_problems(self) -> list[str]:
        text = self.log.read_text(errors="replace").splitlines()
        return [line[:200] for line in text if "Traceback" in line or " ERROR " in line or "Exception" in line]


# ------------------------------------------------------------------------------------------ sentences


class Sentences:
    """New sentences of exactly T GPT-2 tokens (``attention.tokenize``), never the same one twice."""

    def __init__(self, seed: int = 7) -> None:
        from load import WORDS

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


_ELEMENTS = {"plotly_chart": 0}


def count_charts() -> None:
    """Count the plotly charts each run sends: wrap ``load.read_reply``, which ``Student`` calls per message."""
    import load
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    if getattr(load.read_reply, "counts_charts", False):
        return
    original = load.read_reply

    def read_reply(data: bytes):
        reply = original(data)
        if reply.kind == "delta":
            msg = ForwardMsg.FromString(data)
            if msg.delta.WhichOneof("type") == "new_element" and msg.delta.new_element.WhichOneof("type") == (
                "plotly_chart"
            ):
                _ELEMENTS["plotly_chart"] += 1
        return reply

    read_reply.counts_charts = True
    load.read_reply = read_reply


def median(values) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


async def open_session(server: TimedServer, page: str, num_tokens: int, step: int, sentences: Sentences):
    """A fresh session on ``page`` at ``step`` opened from a link with a sentence of ``num_tokens`` tokens."""
    from load import Student

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
        mark, cpu0, load = server.mark(), server.cpu_s(), loadavg()[0]
        _ELEMENTS["plotly_chart"] = 0
        run = await student.edit(text)
        charts = _ELEMENTS["plotly_chart"]
        timing = await server.timing_after(mark)
        rows.append(
            {
                "client_s": run.latency,
                "script_s": timing["script_s"] if timing else float("nan"),
                "script_cpu_s": timing["script_cpu_s"] if timing else float("nan"),  # the script thread's CPU
                "gc_s": timing["after_s"] if timing else float("nan"),
                "total_s": timing["total_s"] if timing else float("nan"),
                "server_cpu_s": server.cpu_s() - cpu0,
                "bytes": run.bytes,
                "messages": run.messages,
                "charts": charts,
                "load": load,
                "error": run.error,
                "warnings": run.warnings[:3],
            }
        )
    ok = [r for r in rows if not r["error"]]
    return {
        "script_ms": median(1000 * r["script_s"] for r in ok),
        "client_ms": median(1000 * r["client_s"] for r in ok),
        "script_cpu_ms": median(1000 * r["script_cpu_s"] for r in ok),
        "cpu_ms": median(1000 * r["server_cpu_s"] for r in ok),
        "gc_ms": median(1000 * r["gc_s"] for r in ok),
        "total_ms": median(1000 * r["total_s"] for r in ok),
        "bytes": median(r["bytes"] for r in ok),
        "bytes_max": max((r["bytes"] for r in ok), default=float("nan")),
        "messages": median(r["messages"] for r in ok),
        "charts": max((r["charts"] for r in rows), default=0),
        "load": [r["load"] for r in rows],
        "errors": [r["error"] for r in rows if r["error"]],
        "warnings": sorted({w for r in rows for w in r["warnings"]}),
        "samples_ms": [round(1000 * r["script_s"], 1) for r in rows],
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
    count_charts()
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
                shell_ms = median(r["script_ms"] for r in baseline["shell"])
                bare_total = median(r["total_ms"] for r in baseline["bare"])
                bare_client = median(r["client_ms"] for r in baseline["bare"])
                row.update(
                    page=page,
                    title=titles.get(page, page),
                    step=step,
                    steps=steps[page],
                    T=num_tokens,
                    bare_ms=bare_ms,
                    shell_ms=shell_ms,
                    bare_total_ms=bare_total,
                    bare_client_ms=bare_client,
                    ratio=row["script_ms"] / bare_ms,
                    cpu_ratio=row["script_cpu_ms"] / median(r["script_cpu_ms"] for r in baseline["bare"]),
                    total_ratio=row["total_ms"] / bare_total,
                    client_ratio=row["client_ms"] / bare_client,
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
                "script_ms": median(r["script_ms"] for r in rows),
                "script_ms_range": [
                    min(r["script_ms"] for r in rows),
                    max(r["script_ms"] for r in rows),
                ],
                "client_ms": median(r["client_ms"] for r in rows),
                "script_cpu_ms": median(r["script_cpu_ms"] for r in rows),
                "total_ms": median(r["total_ms"] for r in rows),
                "gc_ms": median(r["gc_ms"] for r in rows),
                "cpu_ms": median(r["cpu_ms"] for r in rows),
                "bytes": median(r["bytes"] for r in rows),
                "load": [v for r in rows for v in r["load"]],
                "samples": len(rows) * args.repeats,
                "errors": [e for r in rows for e in r["errors"]],
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

SETTLED = """() => {
  const app = document.querySelector('.stApp');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')) return false;
  if (document.querySelector('[data-testid="stStatusWidget"] [data-testid="stSpinner"]')) return false;
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main || !main.querySelector('[data-testid="stHeading"], [data-testid="stAlert"]')) return false;
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    if (!plot._fullData || !plot._fullLayout || !plot.querySelector('.main-svg')) return false;
    const heatmaps = plot._fullData.filter((t) => t.type === 'heatmap' && t.visible === true).length;
    const images = [...plot.querySelectorAll('.hm image')];
    if (images.filter((i) => (i.getAttribute('href') || '').startsWith('data:image/')).length < heatmaps) return false;
  }
  return true;
}"""

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
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
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
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for path, query in targets:
                samples = []
                for _ in range(args.cold_repeats):
                    port = free_port()
                    base = f"http://127.0.0.1:{port}"
                    log = ARTIFACTS / "cold.log"
                    load = loadavg()[0]
                    command = [sys.executable, "-m", "streamlit", *streamlit_args("streamlit_app.py", port)]
                    with log.open("w") as out:
                        t0 = time.perf_counter()
                        proc = subprocess.Popen(
                            command,
                            cwd=ROOT,
                            env=server_env(),
                            stdout=out,
                            stderr=subprocess.STDOUT,
                            start_new_session=True,
                        )
                    try:
                        wait_healthy(base, proc, log, every=0.05)
                        healthy = time.perf_counter() - t0
                        context = browser.new_context(viewport=VIEWPORT)
                        context.set_default_timeout(300_000)
                        page = context.new_page()
                        page.goto(f"{base}/{path}" + (f"?{query}" if query else ""), wait_until="commit")
                        page.wait_for_function(f"() => ({FIRST_HEATMAP})() && ({SETTLED})()", polling="raf")
                        painted = time.perf_counter() - t0
                        context.close()
                    finally:
                        stop_process(proc)
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
    env = server_env()
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
    sizes = sorted({s["T"] for s in summary})
    pages = list(dict.fromkeys(s["page"] for s in summary))
    if summary:
        base = results["baseline"]
        repeats = {t: sorted({len(r["samples_ms"]) for r in results["server"].values() if r["T"] == t}) for t in sizes}
        counts = ", ".join(f"{'/'.join(map(str, n))} at T = {t:,}" for t, n in repeats.items())
        if len({tuple(n) for n in repeats.values()}) == 1:
            counts = "/".join(map(str, next(iter(repeats.values()))))
        out += [
            "**Server time of a rerun after a sentence change** (script run timed inside the server; median of "
            f"{counts} new sentences per page and step). Each "
            "cell: the worst step's time as a multiple of the bare page at the same T (and its step), then the "
            "mean over all steps. Goals: ≤ 1.5× at T ≤ 64, ≤ 3× at T = 1,024.",
            "",
            "| page | " + " | ".join(f"T = {t:,}: worst (step) · mean" for t in sizes) + " | load |",
            "| --- | " + " | ".join("---:" for _ in sizes) + " | --- |",
        ]
        for name in ("bare", "shell"):
            cells = []
            for t in sizes:
                b = base.get(f"{name}|{t}")
                cells.append(
                    "–"
                    if not b
                    else f"{_fmt_ms(b['script_ms'])} ms ({b['script_ms'] / base[f'bare|{t}']['script_ms']:.2f}×)"
                )
            loads = [v for t in sizes for v in base.get(f"{name}|{t}", {}).get("load", [])]
            label = "bare page" if name == "bare" else "shell (entry script, empty page)"
            out.append(f"| {label} | " + " | ".join(cells) + f" | {_load(loads)} |")
        for page in pages:
            cells, loads = [], []
            for t in sizes:
                s = next((s for s in summary if s["page"] == page and s["T"] == t), None)
                if s is None:
                    cells.append("–")
                    continue
                goal = goal_for(t)
                flag = "" if goal is None else (" ✅" if s["worst"]["ratio"] <= goal else " ❌")
                cells.append(f"{s['worst']['ratio']:.1f}× ({s['worst']['step']}){flag} · {s['mean_ratio']:.1f}×")
                loads += s["load"]
            out.append(f"| {_page_name(page)} | " + " | ".join(cells) + f" | {_load(loads)} |")
        out += [
            "",
            "The same, in milliseconds (worst step · mean over steps; client send → `script_finished` of the worst "
            "step in brackets):",
            "",
            "| page | " + " | ".join(f"T = {t:,} ms" for t in sizes) + " |",
            "| --- | " + " | ".join("---:" for _ in sizes) + " |",
        ]
        for page in pages:
            cells = []
            for t in sizes:
                s = next((s for s in summary if s["page"] == page and s["T"] == t), None)
                cells.append(
                    "–"
                    if s is None
                    else f"{_fmt_ms(s['worst']['script_ms'])} · {_fmt_ms(s['mean_ms'])} "
                    f"({_fmt_ms(s['worst']['client_ms'])})"
                )
            out.append(f"| {_page_name(page)} | " + " | ".join(cells) + " |")
        out += [
            "",
            "The whole rerun as the user waits for it: the script *and* the post-run `gc.collect(2)`, which holds "
            "the GIL until `script_finished` has gone out (worst step's ms and × the bare page's, bare included; "
            "the collection's median ms in brackets):",
            "",
            "| page | " + " | ".join(f"T = {t:,}" for t in sizes) + " |",
            "| --- | " + " | ".join("---:" for _ in sizes) + " |",
        ]
        for name in ("bare", "shell"):
            cells = []
            for t in sizes:
                b = base.get(f"{name}|{t}")
                ratio = b["total_ms"] / base[f"bare|{t}"]["total_ms"] if b else float("nan")
                cells.append("–" if not b else f"{_fmt_ms(b['total_ms'])} ({ratio:.1f}×; GC {_fmt_ms(b['gc_ms'])})")
            out.append(f"| {'bare page' if name == 'bare' else 'shell'} | " + " | ".join(cells) + " |")
        for page in pages:
            cells = []
            for t in sizes:
                rows_t = [r for r in results["server"].values() if r["page"] == page and r["T"] == t]
                if not rows_t:
                    cells.append("–")
                    continue
                worst = max(rows_t, key=lambda r: r["total_ratio"])
                goal = goal_for(t)
                flag = "" if goal is None else (" ✅" if worst["total_ratio"] <= goal else " ❌")
                cells.append(
                    f"{_fmt_ms(worst['total_ms'])} ({worst['total_ratio']:.1f}×{flag}; GC {_fmt_ms(worst['gc_ms'])})"
                )
            out.append(f"| {_page_name(page)} | " + " | ".join(cells) + " |")
        out += [
            "",
            "**Bytes sent to the browser per rerun** (websocket payloads of the rerun; the step with the most, in "
            "KiB; ⚠️ over 2 MB):",
            "",
            "| page | " + " | ".join(f"T = {t:,}" for t in sizes) + " |",
            "| --- | " + " | ".join("---:" for _ in sizes) + " |",
        ]
        for name in ("bare", "shell"):
            cells = [f"{base[f'{name}|{t}']['bytes'] / 1024:,.0f}" if f"{name}|{t}" in base else "–" for t in sizes]
            out.append(f"| {'bare page' if name == 'bare' else 'shell'} | " + " | ".join(cells) + " |")
        for page in pages:
            cells = []
            for t in sizes:
                s = next((s for s in summary if s["page"] == page and s["T"] == t), None)
                if s is None:
                    cells.append("–")
                    continue
                b = s["bytes"]["bytes_max"]
                cells.append(f"{b / 1024:,.0f} ({s['bytes']['step']})" + (" ⚠️" if b > BYTES_GOAL else ""))
            out.append(f"| {_page_name(page)} | " + " | ".join(cells) + " |")
        out += [
            "",
            "<details><summary>Every page and step: server ms (× bare) and KiB per rerun</summary>",
            "",
            "| page | step | " + " | ".join(f"T = {t:,}" for t in sizes) + " | load |",
            "| --- | ---: | " + " | ".join("---:" for _ in sizes) + " | --- |",
        ]
        rows = sorted(results["server"].values(), key=lambda r: (pages.index(r["page"]), r["step"], r["T"]))
        for page in pages:
            for step in sorted({r["step"] for r in rows if r["page"] == page}):
                cells, loads = [], []
                for t in sizes:
                    r = results["server"].get(f"{page}|{step}|{t}")
                    if r is None:
                        cells.append("–")
                        continue
                    cells.append(f"{_fmt_ms(r['script_ms'])} ({r['ratio']:.1f}×) · {r['bytes'] / 1024:,.0f} KiB")
                    loads += r["load"]
                out.append(f"| {_page_name(page)} | {step} | " + " | ".join(cells) + f" | {_load(loads)} |")
        out += ["", "</details>", ""]
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


SECTION_TEMPLATE = f"""{SECTION_START}
## App at scale

Generated by `benchmarks/app_scale.py` (see its docstring for the method); the tables between the markers
below are rewritten on every run, the text around them is not.

{TABLES_START}
{TABLES_END}
{SECTION_END}
"""


def update_markdown(path: Path, tables: str) -> None:
    """Fill this section's generated block in ``path``, creating the file or the section if missing."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if SECTION_START not in text:
        text = text.rstrip("\n") + "\n\n" + SECTION_TEMPLATE
    head, rest = text.split(SECTION_START, 1)
    section, tail = rest.split(SECTION_END, 1)
    if TABLES_START not in section:
        section = section.rstrip("\n") + f"\n\n{TABLES_START}\n{TABLES_END}\n"
    before, after = section.split(TABLES_START, 1)
    _, after = after.split(TABLES_END, 1)
    section = f"{before}{TABLES_START}\n{tables}\n{TABLES_END}{after}"
    path.write_text(f"{head}{SECTION_START}{section}{SECTION_END}{tail}")


# ------------------------------------------------------------------------------------------ profile


async def profile_run(args) -> None:
    """One page, step and T under cProfile: open, warm up, then ``repeats`` timed sentence changes."""
    page = PAGE_ALIASES.get(args.page, args.page)
    stats_path = ARTIFACTS / f"profile-{page or 'default'}-{args.step}-{args.size}.pstats"
    extra = args.server_args.split() if args.server_args else []
    env = dict(item.split("=", 1) for item in args.server_env.split(",")) if args.server_env else {}
    server = TimedServer("streamlit_app.py", "profile", profile=stats_path, extra=extra, freeze=args.freeze, env=env)
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
    frozen = " (app and shell: gc.freeze() after imports)" if args.freeze else ""
    results["server_args"] = " ".join(filter(None, [args.server_args, args.server_env])) + frozen
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
    extra = args.server_args.split() if args.server_args else []
    env = dict(item.split("=", 1) for item in args.server_env.split(",")) if args.server_env else {}
    app = TimedServer("streamlit_app.py", "app", extra=extra, freeze=args.freeze, env=env)
    bare_path, shell_path = write_apps(Path(tempfile.mkdtemp(prefix="app_scale_")))
    baselines = {  # the bare page is never frozen: it is Streamlit's floor
        "bare": TimedServer(str(bare_path), "bare", extra=extra, env=env),
        "shell": TimedServer(str(shell_path), "shell", extra=extra, freeze=args.freeze, env=env),
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
    from load import Student

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
        update_markdown(Path(args.markdown), tables)
        print(f"updated {args.markdown}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["_serve"]:
        _serve(argv[1:])
        return
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
    parser.add_argument(
        "--server-args", help="extra Streamlit options for every server, e.g. '--runner.postScriptGC false'"
    )
    parser.add_argument(
        "--freeze", action="store_true", help="experiment: gc.freeze() after the app's imports, before Streamlit starts"
    )
    parser.add_argument("--server-env", help="environment for every server, KEY=VALUE,...: 'OMP_NUM_THREADS=1'")
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
