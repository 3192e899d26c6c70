"""Process-wide settings for a server shared by a classroom, made once by ``configure_server``.

Nothing starts on import, and importing this module imports neither torch nor pandas. One thread does
the process's start (``Startup``): as the server starts, ``lifespan`` has it import the first page's
modules (``FIRST_RUN_MODULES``, none of which imports torch). After the first run, once the browser says the
page has painted, it imports pandas (other runs wait meanwhile), then torch and the whole package, gives each
script run one torch thread and freezes the heap out of the collector's reach. BENCHMARKS.md, "Where the time
goes" and "Cost per action and first paint", has the measurements.

Then the browser's side of a fast first page (``page_routes``, ``preload_browser_code``): its charts' code
fetched early, and a word when it has painted (``PAINTED_PATH``)."""

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

# Imported after the first run, before any other run goes on (``Startup._run``): plotly looks pandas up in
# ``sys.modules`` without importing it, and took a module another thread was still importing for a whole one
# ("partially initialized module 'pandas' has no attribute 'Series'"), so no run builds a chart meanwhile.
SETTLED_MODULES = ("pandas",)
# Imported after the first paint, for the pages that come later: Streamlit converts a table with pyarrow.
LATER_MODULES = ("pyarrow",)
# Imported as the server starts (``lifespan``): what the entry script and the first page import. None of it
# imports torch (tests/test_first_paint.py).
FIRST_RUN_MODULES = (
    "explorer.session",
    "explorer.views",
    "explorer.widgets",
    "explorer.figures",
    "explorer.models",
    "explorer.page_text.glossary",
)
# Imported after the first page has painted (``configure_server``): torch and the whole ``attention`` package.
APP_MODULES = ("torch", *(f"attention.{name}" for name in attention.SUBMODULES))
# While imports run in the background, the interpreter hands the GIL on every 0.5 ms instead of 5 ms.
IMPORT_SWITCH_INTERVAL_S = 0.0005
# The browser tells the server when the first page has painted (``PAINTED_PATH``); torch is imported then, or
# this long after the first run if no browser says so (a page without a chart, another client).
PAINT_WAIT_S = 4.0


@functools.cache
def machine_threads() -> int:
    """The intra-op threads torch would use on this machine (read before ``configure_server`` gives script runs
    one); the Speed page measures with all of them."""
    import torch

    return torch.get_num_threads()


class Startup:
    """What this process has done of its start, and the one thread that does it, in order (``_run``). Steps,
    told with ``tell`` and awaited with ``wait``: "first run ready" (its modules imported), "first run" (a script
    run has begun), "torch wanted" (by a link, a test or a tool), "pandas wanted" (by a waiting run), "painted"
    (or nothing waits for it any more), "settled" (pandas imported) and "warmed" (torch imported, tuned)."""

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
        """Record the calling script run as the first, unless one was already recorded or pandas is being
        imported; whether it is the first (a rerun its thread took on is too)."""
        with self._changed:
            if self._first_run is threading.current_thread():
                return True
            if self._first_run is not None or self._settling:
                return False
            self._first_run = threading.current_thread()
            self._done.add("first run")
            self._changed.notify_all()
        return True

    def enter_run(self) -> None:
        """Let the calling script run go on when no chart it builds can meet a half-imported pandas: the first
        run goes on at once (pandas is imported after its thread ends), any other waits until pandas is."""
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
        """The first run's modules; pandas once the first run is over and its page has painted (or
        ``PAINT_WAIT_S`` after, or at once when a run or a link needs it); then torch and the later modules.
        Started as the run ended, torch's import took CPU from the browser's paint: 5.6 s to the first page
        painted, against 4.1 s when it waited 2.5 s. Before the first run, pandas' 0.3 s delayed the first chart
        as much."""
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
    """``st.App``'s lifespan (``streamlit_app.py``): the server answers at once, while ``STARTUP``'s thread
    prepares what the first run needs (``prepare_first_run``, no torch) as the first browser loads."""
    STARTUP.start(prepare=True)
    yield


@contextlib.contextmanager
def _quick_switches() -> Iterator[None]:
    """Hand the GIL on every ``IMPORT_SWITCH_INTERVAL_S`` meanwhile, so that the threads serving the browser
    and running pages wait less behind a background import (only ``STARTUP``'s thread imports this way)."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(min(saved, IMPORT_SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(saved)


def prepare_first_run() -> None:
    """Do once per process what the first run would do first, none of it with torch: import its modules
    (``FIRST_RUN_MODULES``), read GPT-2's ranks, load Streamlit's emoji list (``st.set_page_config``'s icon),
    find the browser chunks, encode a figure as plotly does (imports numpy.ma and orjson) and read the stored
    first view."""
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
        stored = importlib.import_module("explorer.models")  # imported by name, as every app module here
        stored.stored_why_view(np.zeros((0, 0)), 0, 0)  # reads the stored first view


def start_importing_app() -> None:
    """Have ``STARTUP``'s thread import torch now, without waiting for a first page to paint."""
    STARTUP.tell("torch wanted")
    STARTUP.start(prepare=False)


def import_app() -> None:
    """Import torch and what every page imports (``APP_MODULES``), and tune the process (``_tune``)."""
    with _quick_switches():
        for name in APP_MODULES:
            importlib.import_module(name)
        _tune()


def _tune() -> None:
    """One torch thread per script run and the heap frozen (``configure_server``); once per process, after
    torch is imported (``STARTUP``'s thread)."""
    machine_threads()
    import torch

    torch.set_num_threads(1)
    gc.freeze()  # cheap without a collection: later full collections skip torch's objects


def configure_server() -> None:
    """Start this run's browser on the charts' code (``preload_browser_code``: Plotly's 4.7 MB and each
    widget's code are otherwise fetched at the first such element); on the first call, have torch imported and
    the process tuned after this run (right away outside a script run: a test or a tool).

    * **Torch after the first page.** The first run at the defaults imports no torch (lazy modules and a stored
      ``first_view``). Importing torch took 1.1-2.2 s of CPU, under the interpreter lock the browser's files
      are served with, so ``STARTUP`` waits for the first paint; a run that needs torch sooner imports it.
    * One torch thread per script run: two intra-op threads per run on a busy 2-core server made Why attention
      at T = 1,024 take 3.1-10.9 s instead of 1.2-1.4 s.
    * The objects that importing torch, plotly and pandas made are frozen out of the collector's reach: a full
      collection then took 13-17 ms instead of 124-212 ms."""
    preload_browser_code()
    if not patches.in_a_run():  # a test or a tool: no page is waiting, and it may compute at once
        start_importing_app()
        STARTUP.wait("warmed", timeout=120.0)
        _tune()  # again: the caller may have changed torch's threads since the first tuning
        return
    STARTUP.start(prepare=False)  # when no lifespan started it (AppTest)
    STARTUP.enter_run()  # a run that comes while pandas is imported waits for it


def warm_up() -> None:
    """Import what later pages need, then freeze everything imported so far out of the collector's reach
    (``STARTUP``'s thread, once)."""
    for name in LATER_MODULES:
        importlib.import_module(name)
    import plotly.graph_objects  # noqa: F401  Streamlit imported it at start; frozen with the others
    import torch  # noqa: F401

    gc.collect()
    gc.freeze()


# The browser's side of a fast first page: its charts' code fetched early (``page_routes``, and
# ``preload_browser_code`` for a page opened otherwise), and a POST to ``PAINTED_PATH`` once every heatmap has
# its image, which tells ``STARTUP`` "painted".


# Streamlit's browser code for the elements every page draws, which it fetches only when the first such
# element arrives: charts (Plotly, 4.7 MB), HTML in Markdown, the sidebar's widgets, the stepper's
# buttons, the downloads. Each is a chunk ``<name>.<hash>.js``. Not the code panel's highlighter (1.6 MB):
# a closed panel sends no code (``ui.show_code``), and evaluating it delayed the first chart.
FIRST_PAGE_CHUNKS = (
    "PlotlyChart",
    "rehype-raw",
    "Radio",
    "TextInput",
    "NumberInput",
    "Slider",
    "Checkbox",
    "ButtonGroup",
    "Button",
    "DownloadButton",
    "Progress",
)
STATIC_JS = Path(st.__file__).parent / "static" / "static" / "js"
PAINTED_PATH = "/api/explorer/painted"
paint_route = False  # the server answers PAINTED_PATH (``page_routes``)


def page_routes(pages: list[str]) -> list:
    """Routes for ``st.App(routes=...)`` that answer ``/`` and each page's path (``pages``: URL paths) with
    Streamlit's own page plus a low-priority ``modulepreload`` link for each of ``FIRST_PAGE_CHUNKS`` (the
    frontend's own ~40 modules come first on the browser's six connections). A link whose first run
    ``needs_torch`` starts torch's import as its page is asked for. None with a ``server.baseUrlPath``."""
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
    page = index.replace("</head>", links + "</head>", 1)

    async def streamlit_page(request):
        if needs_torch(request.url.path, request.query_params):  # its first run will: import while it loads
            start_importing_app()
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
    """Whether a page opened at URL ``path`` with query ``params`` needs torch in its first run: all but the
    default page at the default settings (``first_view``), in presenter mode or not."""
    return path.rstrip("/") != "" or not set(params) <= {"present"}


@functools.cache
def first_page_chunks() -> tuple[str, ...]:
    """The file names of ``FIRST_PAGE_CHUNKS`` in this Streamlit's browser build (those it has)."""
    names = []
    for chunk in FIRST_PAGE_CHUNKS:
        pattern = re.compile(re.escape(chunk) + r"\.[A-Za-z0-9_-]+\.js")
        found = [path.name for path in STATIC_JS.glob(f"{chunk}.*.js") if pattern.fullmatch(path.name)]
        names += found[:1] if len(found) == 1 else []
    return tuple(names)


def preload_browser_code() -> None:
    """Have the browser import Streamlit's code for charts and widgets now, as it would at the first of each;
    until a first page has painted, have it say when this page has (``PAINTED_PATH``). The script goes in
    Streamlit's event container (where ``st.toast`` draws), taking no room; the chunks sit beside Streamlit's
    ``index.*.js``, whose URL holds any ``server.baseUrlPath``."""
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
