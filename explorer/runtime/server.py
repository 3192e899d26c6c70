"""Process-wide settings for a server shared by a classroom, made once by ``configure_server``.

Nothing here happens on import, and importing this module imports neither torch nor pandas. As the
server starts, ``lifespan`` imports the first page's modules in a thread (``FIRST_RUN_MODULES``, by name:
none of them imports torch). The app script calls ``configure_server()`` first; on the first run it has
torch and the whole package imported once the browser says the page has painted (``first_paint``), then
gives each script run one torch thread and freezes the heap out of the collector's reach.

BENCHMARKS.md, "Where the time goes" and "Cost per action and first paint", has the measurements.
Tests that need the tuning call ``configure_server()`` themselves, outside a script run: then it
imports and tunes at once.

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
from collections.abc import Iterator
from pathlib import Path

import streamlit as st

import attention
from explorer.figures.layout import pandas_settled
from explorer.runtime import patches

# Imported after the first paint, for the pages that come later: pandas for their tables (Streamlit
# converts a DataFrame with pyarrow). The first page needs neither.
LATER_MODULES = ("pandas", "pyarrow")
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
# What has been started once per process; read and changed under ``_ONCE``.
_first_run_ready: threading.Thread | None = None
_app_import: threading.Thread | None = None
_tuned = False  # ``_tune`` has run
_warming = False  # the first configure_server has started the warm-up
_warm_up_started = False  # ``warm_up`` has begun
_switches_users = 0
_switches_saved = 0.0
# Sessions run on their own threads, and the imports run on others: what starts once is decided under this.
_ONCE = threading.Lock()
# Set once torch and the later modules are imported and the heap frozen; a second ``warm_up`` waits for it.
warmed = threading.Event()


@functools.cache
def machine_threads() -> int:
    """The intra-op threads torch would use on this machine; the Speed page measures with all of them.

    Read before ``configure_server`` gives script runs one thread."""
    import torch

    return torch.get_num_threads()


def __getattr__(name: str):
    if name == "MACHINE_THREADS":  # read on first use, so that importing this module does not import torch
        return machine_threads()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@contextlib.asynccontextmanager
async def lifespan(app):
    """``st.App``'s lifespan (``streamlit_app.py``): as the server starts, prepare what the first run needs.

    The server answers at once; ``prepare_first_run`` runs in a thread while the first browser loads
    Streamlit's page and code. It imports no torch: the first page is drawn first, and torch is
    imported after it (``configure_server``)."""
    start_preparing_first_run()
    yield


def start_preparing_first_run() -> None:
    """Run ``prepare_first_run`` in a thread, once per process (not if the server is already configured)."""
    global _first_run_ready
    with _ONCE:
        if _first_run_ready is not None or _warming:
            return
        # the imports run while the server answers the browser's first requests
        _first_run_ready = threading.Thread(target=prepare_first_run, name="explorer-first-run", daemon=True)
    _first_run_ready.start()


@contextlib.contextmanager
def _quick_switches() -> Iterator[None]:
    """Hand the GIL on every ``IMPORT_SWITCH_INTERVAL_S`` meanwhile, so that the threads serving the browser
    and running pages wait less behind a background import. Threads may overlap: the last one out puts
    the interval back."""
    global _switches_users, _switches_saved
    with _ONCE:
        if _switches_users == 0:
            _switches_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switches_saved, IMPORT_SWITCH_INTERVAL_S))
        _switches_users += 1
    try:
        yield
    finally:
        with _ONCE:
            _switches_users -= 1
            if _switches_users == 0:
                sys.setswitchinterval(_switches_saved)


def prepare_first_run() -> None:
    """Import what the first run imports (``FIRST_RUN_MODULES``) and do once per process what it would do
    first (``_warm_first_run``): no torch."""
    with _quick_switches():
        for name in FIRST_RUN_MODULES:
            importlib.import_module(name)
        _warm_first_run()


def start_importing_app() -> threading.Thread:
    """Run ``import_app`` in a thread, once per process; the thread."""
    global _app_import
    with _ONCE:
        if _app_import is None:
            # torch's import (1-2 s) runs beside the script runs, which import it only when they need it first
            _app_import = threading.Thread(target=import_app, name="explorer-import-app", daemon=True)
            _app_import.start()
        return _app_import


def import_app() -> None:
    """Import torch and what every page imports (``APP_MODULES``), and tune the process (``_tune``)."""
    with _quick_switches():
        for name in APP_MODULES:
            importlib.import_module(name)
        _tune()


def _warm_first_run() -> None:
    """Read GPT-2's ranks, load Streamlit's emoji list (``st.set_page_config``'s icon), find the browser
    chunks, encode a figure as plotly does (imports numpy.ma and orjson) and read the stored first view:
    each once per process, none with torch."""
    import numpy as np
    import plotly.graph_objects as go
    import plotly.io as pio

    from attention.tokens import load_bpe

    load_bpe()
    patches.warm_emoji_list()
    first_page_chunks()
    pandas_settled()  # a link that needs torch may have started the later imports, pandas among them
    pio.to_json(go.Figure(go.Heatmap(z=np.zeros((2, 2)))), validate=False)
    stored = importlib.import_module("explorer.models")  # imported by name, as every app module here
    stored.stored_why_view(np.zeros((0, 0)), 0, 0)  # reads the stored first view


def _tune() -> None:
    """One torch thread per script run and the heap frozen (``configure_server``); once per process, after
    torch is imported."""
    global _tuned
    with _ONCE:
        if _tuned:
            return
        _tuned = True
    machine_threads()
    import torch

    torch.set_num_threads(1)
    gc.freeze()  # cheap without a collection: later full collections skip torch's objects


def configure_server() -> None:
    """Start this run's browser on the charts' code; on the first call, have torch imported and the process
    tuned after this run (right away outside a script run: a test or a tool).

    * **Charts' code first.** Streamlit's browser code fetches Plotly (4.7 MB of JavaScript), and the
      code of each kind of widget, only when the first such element arrives. Asking for them at the
      start of every run lets the browser fetch and compile them meanwhile (``preload_browser_code``).
    * **Torch after the first page.** The first run at the defaults imports no torch: its modules take
      torch lazily (``explorer.runtime.torch``) and its numbers are stored (``first_view``). Importing
      torch took 1.1-2.2 s of CPU here, under the interpreter lock the browser's files are served with, so
      it waits until the first run is over (``_warm_up_after``). A run that needs torch sooner imports it itself.
    * One torch thread per script run: sessions already run side by side on their own
      threads, and two intra-op threads per run on a busy 2-core server made Why attention
      at T = 1,024 take 3.1-10.9 s instead of 1.2-1.4 s. torch reads this when each new
      script thread first computes.
    * The objects that importing torch, plotly and pandas made are frozen out of the garbage
      collector's reach, so a full collection goes through only what runs create (124-212 ms ->
      13-17 ms, when Streamlit still ran one after every script run; ``.streamlit/config.toml`` now
      turns that off, ``runner.postScriptGC``, and Python's own full collections are what is left).
    """
    global _warming
    preload_browser_code()
    in_a_run = patches.in_a_run()
    if _warming and in_a_run:
        return
    if _first_run_ready is not None:
        _first_run_ready.join()  # the same modules imported by two threads at once could meet in the import locks
    if not in_a_run:  # a test or a tool: no page is waiting, and it may compute at once
        _warming = True
        import_app()
        warm_up()
        return
    with _ONCE:
        if _warming:
            return
        _warming = True
    first_run = threading.current_thread()
    # waits for the first run to end and its page to paint, then imports torch: the run is not kept waiting
    threading.Thread(target=_warm_up_after, args=(first_run,), name="explorer-warm-up", daemon=True).start()


def _warm_up_after(first_run: threading.Thread) -> None:
    """``import_app`` and ``warm_up`` once the first run is over (its thread ends with it, and with any rerun
    it took on) and its browser has painted the page, or ``PAINT_WAIT_S`` after the run.

    Started as the run ended, the import took CPU from the browser's paint: 5.6 against 4.1 s to the
    first page painted when it waited 2.5 s (BENCHMARKS.md, "Cost per action and first paint").

    Not later: a second tab opened just after the first page painted waited for pandas and for the
    collector when this paused 2 s first (BENCHMARKS.md, "Cost per action and first paint"). Not at all
    if a link that needs torch has been opened (``page_routes``): the import started then."""
    first_run.join(timeout=30.0)
    if _app_import is None:  # no page has asked for torch: let the browser paint first
        painted.wait(PAINT_WAIT_S)  # the browser's paint and torch's import share this machine's cores
    painted.set()
    start_importing_app().join()
    warm_up()


def warm_up() -> None:
    """Import what later pages need, then freeze everything imported so far out of the collector's reach.

    Safe from any thread and at any time; a later call waits for the first one's end, then does nothing."""
    global _warm_up_started
    with _ONCE:
        started, _warm_up_started = _warm_up_started, True
    if started:
        warmed.wait(timeout=60.0)  # the first call's imports take 1-2 s
        return
    for name in LATER_MODULES:
        importlib.import_module(name)
    import plotly.graph_objects  # noqa: F401  Streamlit imported it at start; frozen with the others
    import torch  # noqa: F401

    gc.collect()
    gc.freeze()
    warmed.set()


# The browser's side of a fast first page: its charts' code fetched early, and a word when it has painted.
#
# ``page_routes`` answers ``/`` and each page's path with Streamlit's page plus ``modulepreload`` links for
# the chunks the first page needs (``FIRST_PAGE_CHUNKS``), and a path (``PAINTED_PATH``) the page's script
# posts to once every heatmap has its image; ``preload_browser_code`` asks for the same chunks in every run,
# for a page opened otherwise. ``painted`` is set then, and the server imports torch (``configure_server``).


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
painted = threading.Event()  # a browser's first page has painted (or nothing waits for one any more)
paint_route = False  # the server answers PAINTED_PATH (``page_routes``)


def page_routes(pages: list[str]) -> list:
    """Routes that answer ``/`` and each page's path (``pages``: URL paths) with Streamlit's own page
    plus a ``modulepreload`` link for each of ``FIRST_PAGE_CHUNKS``, for ``st.App(routes=...)``.

    The browser then fetches and compiles the charts' and widgets' code while Streamlit's frontend
    starts, instead of after the first run has begun (``preload_browser_code``, which stays for
    pages opened otherwise). The links ask for a low priority, so that the frontend's own ~40 modules
    come before 7 MB of chunks on the browser's six connections to the server. A link whose first run
    needs torch (``needs_torch``) starts torch's import as its page is asked for, so that the import runs
    while the browser loads. With a ``server.baseUrlPath`` there are none: Streamlit answers (and torch is
    imported after the first run)."""
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
        painted.set()
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
    until a first page has painted, have it say when this page has (``PAINTED_PATH``).

    The script goes in Streamlit's event container (where ``st.toast`` draws), so it takes no room
    on the page. The chunks sit beside Streamlit's own ``index.*.js``, whose URL already holds any
    ``server.baseUrlPath``. Without the chunks or the container (another Streamlit) it does nothing.
    """
    chunks, events = first_page_chunks(), patches.event_container()
    if not chunks or events is None or not patches.in_a_run():
        return
    tell = PAINT_SCRIPT % json.dumps(PAINTED_PATH) if paint_route and not painted.is_set() else ""
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
