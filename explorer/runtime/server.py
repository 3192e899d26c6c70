"""A server shared by a classroom, with a fast first page. Importing this imports neither torch nor pandas.

One thread does the process's start (``Startup``): the first page's modules, then, after it has painted (the browser
says so at ``PAINTED_PATH``), pandas, torch and the package, one torch thread per run and a frozen heap. The browser
fetches the charts' code early (``page_routes``, ``preload_browser_code``). Measurements: BENCHMARKS.md, "What the
server's settings buy" and "Cost per action and first paint"."""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import streamlit as st

import attention
from explorer.runtime import patches

# Imported after the first run, before any other goes on: plotly reads pandas from ``sys.modules`` without importing
# it, and a half-imported one failed charts ("partially initialized module 'pandas' has no attribute 'Series'").
SETTLED_MODULES = ("pandas",)
# Imported after the first paint, for the pages that come later: Streamlit converts a table with pyarrow.
LATER_MODULES = ("pyarrow",)
# Imported as the server starts (``lifespan``): what the entry script and first page import, no torch among it.
FIRST_RUN_MODULES = tuple(f"explorer.{name}" for name in ("session", "views", "widgets", "models"))
FIRST_RUN_MODULES += ("attention.figures", "attention.prose.glossary")
# Imported after the first page has painted (``configure_server``): torch and the whole ``attention`` package.
APP_MODULES = ("torch", *(f"attention.{name}" for name in attention.SUBMODULES))
# While imports run in the background, the interpreter hands the GIL on every 0.5 ms instead of 5 ms.
IMPORT_SWITCH_INTERVAL_S = 0.0005
# Torch is imported when the browser says the first page has painted, or this long after the first run.
PAINT_WAIT_S = 4.0


@functools.cache
def machine_threads() -> int:
    """Torch's intra-op threads on this machine, read before script runs get one; the Speed page measures with all."""
    import torch

    return torch.get_num_threads()


class Startup:
    """The process's start, done in order by one thread (``_run``); steps, ``tell``-ed and awaited with ``wait``:
    "first run ready", "first run", "torch wanted", "pandas wanted", "painted", "settled" (pandas) and "warmed"."""

    def __init__(self) -> None:
        self._changed = threading.Condition()  # sessions, the browser's POST and the start thread tell each other
        self._done: set[str] = set()
        self._thread: threading.Thread | None = None
        self._first_run: threading.Thread | None = None
        self._settling = False  # the thread has begun importing SETTLED_MODULES: no run may go on until done

    def tell(self, step: str) -> None:
        with self._changed:
            self._done.add(step)
            self._changed.notify_all()

    def has(self, step: str) -> bool:
        return step in self._done

    def wait(self, *steps: str, timeout: float | None = None) -> bool:
        """Wait until one of ``steps`` is done, at most ``timeout`` seconds; whether one is."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._done.isdisjoint(steps), timeout)

    def first_run_began(self) -> bool:
        """Whether the calling script run is the first (or a rerun its thread took on); records it if none was and
        pandas is not being imported."""
        with self._changed:
            if self._first_run is threading.current_thread():
                return True
            if self._first_run is not None or self._settling:
                return False
            self._first_run = threading.current_thread()
            self.tell("first run")  # the condition's lock is reentrant (an RLock)
        return True

    def enter_run(self) -> None:
        """Let the calling run go on when no chart can meet a half-imported pandas: the first at once, others after."""
        if self.has("settled") or self.first_run_began():
            return
        self.tell("pandas wanted")
        self.wait("settled", timeout=120.0)

    def start(self, *, prepare: bool) -> None:
        """Start the thread, once per process; ``prepare``: it imports the first run's modules first."""
        with self._changed:
            if self._thread is not None:
                return
            # the imports run beside the server's answers and the script runs, which need them at most in part
            self._thread = threading.Thread(target=self._run, args=(prepare,), name="explorer-start", daemon=True)
        self._thread.start()

    def _run(self, prepare: bool) -> None:
        """The first run's modules; pandas once that run is over and painted (or ``PAINT_WAIT_S`` after, or when
        needed); then torch. Torch's import at the run's end delayed the paint (5.6 s against 4.1 s after 2.5 s)."""
        if prepare:
            prepare_first_run()
        self.tell("first run ready")
        self.wait("first run", "torch wanted", "pandas wanted")
        with self._changed:
            first_run, self._settling = self._first_run, True
        if first_run is not None:
            first_run.join(timeout=30.0)  # it ends with the run, and with any rerun it took on
        painted_by = time.monotonic() + PAINT_WAIT_S  # the paint and the imports share the cores
        self.wait("painted", "torch wanted", "pandas wanted", timeout=PAINT_WAIT_S)
        with _quick_switches():
            for name in SETTLED_MODULES:
                importlib.import_module(name)
        self.tell("settled")
        self.wait("painted", "torch wanted", timeout=max(0.0, painted_by - time.monotonic()))
        self.tell("painted")
        import_app()
        warm_up()
        self.tell("warmed")


STARTUP = Startup()


@contextlib.asynccontextmanager
async def lifespan(app):
    """``st.App``'s lifespan: the server answers at once while ``STARTUP``'s thread prepares the first run."""
    STARTUP.start(prepare=True)
    yield


@contextlib.contextmanager
def _quick_switches() -> Iterator[None]:
    """Hand the GIL on more often meanwhile, so that the browser's and pages' threads wait less behind an import."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(min(saved, IMPORT_SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(saved)


def prepare_first_run() -> None:
    """What the first run would do first, without torch: its modules, GPT-2's ranks, the emoji list, the browser
    chunks, a figure encoded (numpy.ma and orjson) and the stored first view."""
    with _quick_switches():
        for name in FIRST_RUN_MODULES:
            importlib.import_module(name)
        import numpy as np
        import plotly.graph_objects as go
        import plotly.io as pio

        from attention.tokens import load_bpe

        load_bpe()
        patches.warm_emoji_list()
        first_page_chunks()
        pio.to_json(go.Figure(go.Heatmap(z=np.zeros((2, 2)))), validate=False)
        # by name, as FIRST_RUN_MODULES: models is a layer above runtime, whose lazy torch and memory it imports
        stored = importlib.import_module("explorer.models")
        stored.stored_why_view(np.zeros((0, 0)), 0, 0)  # reads the stored first view


def start_importing_app() -> None:
    """Have ``STARTUP``'s thread import torch now, without waiting for a first page to paint."""
    STARTUP.tell("torch wanted")
    STARTUP.start(prepare=False)


def import_app() -> None:
    """Import torch and the ``attention`` package (``APP_MODULES``), and tune the process."""
    with _quick_switches():
        for name in APP_MODULES:
            importlib.import_module(name)
        _tune()


def _tune() -> None:
    """One torch thread per script run and the heap frozen (``configure_server`` says why)."""
    machine_threads()
    import torch

    torch.set_num_threads(1)
    gc.freeze()  # cheap without a collection: later full collections skip torch's objects


def configure_server() -> None:
    """Start the browser on the charts' code; have torch imported after the first page (its 1.1-2.2 s of CPU delayed
    the paint), or at once outside a run. One torch thread per run (with two, Why attention at T = 1,024 took
    3.1-10.9 s, not 1.2-1.4 s, on 2 busy cores); imports frozen (a full collection: 13-17 ms, not 124-212 ms)."""
    preload_browser_code()
    if not patches.in_a_run():  # a test or a tool: no page is waiting, and it may compute at once
        start_importing_app()
        STARTUP.wait("warmed", timeout=120.0)
        _tune()  # again: the caller may have changed torch's threads since the first tuning
        return
    STARTUP.start(prepare=False)  # when no lifespan started it (AppTest)
    STARTUP.enter_run()  # a run that comes while pandas is imported waits for it


def warm_up() -> None:
    """Import what later pages need, then freeze everything imported so far out of the collector's reach."""
    for name in LATER_MODULES:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()


# The browser's side: Streamlit's code (chunks ``<name>.<hash>.js``) for what every page draws, which it fetches only
# at the first such element: charts (Plotly, 4.7 MB), HTML in Markdown, widgets, buttons, downloads. Not the code
# panel's highlighter (1.6 MB): a closed panel sends no code, and evaluating it delayed the first chart.
FIRST_PAGE_CHUNKS = (
    *("PlotlyChart", "rehype-raw"),  # charts, HTML in Markdown
    *("Radio", "TextInput", "NumberInput", "Slider", "Checkbox", "ButtonGroup", "Button"),  # widgets, buttons
    *("DownloadButton", "Progress"),  # downloads, progress bars
)
STATIC_JS = Path(st.__file__).parent / "static" / "static" / "js"
PAINTED_PATH = "/api/explorer/painted"
# At a page's path (/generate) Streamlit's frontend first looks for the server there (/generate/_stcore/health and
# /host-config: two 404s in the console) and then one level up (its issue 7074). ``window.__streamlit``'s
# BACKEND_BASE_URL, which its frontend reads as it loads (its PR 11537), names the app's root: the page's folder.
AT_ROOT = (
    "<script>window.__streamlit = Object.assign({}, window.__streamlit, {BACKEND_BASE_URL: "
    'new URL(location.pathname.replace(/\\/+$/, "").replace(/[^/]*$/, ""), location.href).href});</script>'
)
paint_route = False  # the server answers PAINTED_PATH (``page_routes``)


def page_routes(pages: list[str]) -> list:
    """``st.App`` routes answering ``/`` and each page's path with Streamlit's page plus a low-priority preload link
    per chunk (after the frontend's ~40 modules) and, at a page's path, ``AT_ROOT``; starting torch's import for a
    link that ``needs_torch``; and ``PAINTED_PATH``. None with a ``server.baseUrlPath``."""
    global paint_route
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    chunks = first_page_chunks()
    if not chunks or st.get_option("server.baseUrlPath").strip("/"):
        return []
    paint_route = True
    index = (STATIC_JS.parents[1] / "index.html").read_text(encoding="utf-8")
    links = "".join(
        f'<link rel="modulepreload" crossorigin fetchpriority="low" href="./static/js/{name}">' for name in chunks
    )
    root = index.replace("</head>", links + "</head>", 1)
    deep = index.replace("<head>", "<head>" + AT_ROOT, 1).replace("</head>", links + "</head>", 1)

    async def streamlit_page(request):
        if needs_torch(request.url.path, request.query_params):  # its first run will: import while it loads
            start_importing_app()
        page = root if request.url.path.rstrip("/") == "" else deep
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    async def told_painted(request):
        STARTUP.tell("painted")
        return Response(status_code=204)

    paths = ["/", *(f"/{path}" for path in pages if path)]
    return [
        *(Route(path, streamlit_page, methods=["GET", "HEAD"]) for path in paths),
        Route(PAINTED_PATH, told_painted, methods=["POST"]),
    ]


def needs_torch(path: str, params) -> bool:
    """Whether a page opened at ``path?params`` needs torch in its first run: all but the default page and settings."""
    return path.rstrip("/") != "" or not set(params) <= {"present"}


@functools.cache
def first_page_chunks() -> tuple[str, ...]:
    """The file names of ``FIRST_PAGE_CHUNKS`` in this Streamlit's browser build (those it has)."""
    names = []
    for chunk in FIRST_PAGE_CHUNKS:  # one ``<chunk>.<hash>.js`` each, or none
        found = [p.name for p in STATIC_JS.glob(f"{chunk}.*.js") if re.fullmatch(rf"{chunk}\.[\w-]+\.js", p.name, re.A)]
        names += found if len(found) == 1 else []
    return tuple(names)


def preload_browser_code() -> None:
    """Have the browser import the chunks now, and until a first page has painted, say when this one has; the script
    takes no room (``st.toast``'s container); chunks sit beside ``index.*.js`` under any ``server.baseUrlPath``."""
    chunks, events = first_page_chunks(), patches.event_container()
    if not chunks or events is None or not patches.in_a_run():
        return
    tell = PAINT_SCRIPT % json.dumps(PAINTED_PATH) if paint_route and not STARTUP.has("painted") else ""
    events.html(
        "<script>(() => {"
        "const index = document.querySelector('script[src*=\"/static/js/index.\"]');"
        f"if (index) for (const chunk of {list(chunks)!r}) import(new URL(chunk, index.src).href).catch(() => {{}});"
        f"{tell}"
        "})();</script>",
        unsafe_allow_javascript=True,
    )


# Once per tab: when the run is over, nothing is loading and every chart has drawn, POST to the server's path.
PAINT_SCRIPT = """
if (!window.__explorerPainted) {
  window.__explorerPainted = true;
  const started = performance.now();
  const check = setInterval(() => {
    const app = document.querySelector('.stApp');
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    const drawn = app && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-testid="stSkeleton"]')
      && charts.every((chart) => chart.querySelector('.main-svg')
        && [...chart.querySelectorAll('.hm')].every((heatmap) => heatmap.querySelector('image')));
    if (drawn || performance.now() - started > 20000) {
      clearInterval(check);
      requestAnimationFrame(() => fetch(%s, {method: 'POST', keepalive: true}).catch(() => {}));
    }
  }, 50);
}
"""
