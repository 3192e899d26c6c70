"""Process-wide settings for a server shared by a classroom, made once by ``configure_server``, and a
fast first paint after a cold start (issue 15).

Nothing here happens on import, and importing this module imports neither torch nor pandas.
``streamlit run streamlit_app.py`` serves the app as an ``st.App`` whose ``lifespan`` imports torch and
the explorer in a thread as the server starts, and whose ``page_routes`` have the browser fetch the
charts' code with the page; the app script calls ``configure_server()`` first, which asks the browser
for that code again and waits for those imports (BENCHMARKS.md, "Where the time goes" and "Cost per
action and first paint", has the measurements). Tests that need the tuning call it themselves.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import re
import sys
import threading
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

# Imported after the first paint, for the pages that come later: pandas for their tables (Streamlit
# converts a DataFrame with pyarrow). The first page needs neither.
LATER_MODULES = ("pandas", "pyarrow")
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
# Imported when the server starts (``lifespan``): what the entry script and the first page import.
APP_MODULES = (
    "torch",
    "attention",
    "explorer.state",
    "explorer.turns",
    "explorer.ui",
    "explorer.compute",
    "explorer.figures",
    "explorer.reversal",
    "explorer.weights",
    "explorer.pages_support.why_attention",
)
# While they run, the interpreter hands the GIL on every 0.5 ms instead of 5 ms.
IMPORT_SWITCH_INTERVAL_S = 0.0005
_app_imports: threading.Thread | None = None
_configured = threading.Event()
warmed = threading.Event()  # set once the later modules are imported and the heap frozen
_warming = threading.Event()  # set by the first configure_server, which starts the warm-up
_configure_lock = threading.Lock()
_warm_lock = threading.Lock()


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
    """``st.App``'s lifespan (``streamlit_app.py``): start importing the app as the server starts.

    The server answers at once; ``import_app`` runs in a thread while the first browser loads
    Streamlit's page and code, and the first run waits for it (``configure_server``)."""
    start_importing_app()
    yield


def start_importing_app() -> None:
    """Run ``import_app`` in a thread, once per process (not if the server is already configured)."""
    global _app_imports
    with _configure_lock:
        if _app_imports is not None or _configured.is_set():
            return
        _app_imports = threading.Thread(target=import_app, name="explorer-import-app", daemon=True)
    _app_imports.start()


def import_app() -> None:
    """Import what the entry script and the first page import (``APP_MODULES``), do what their first run
    would do once per process (``_warm_first_run``), and tune the process (``_tune``).

    While this runs the interpreter hands the GIL on every ``IMPORT_SWITCH_INTERVAL_S``, so the event loop
    serving the browser's files waits less behind the imports."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, IMPORT_SWITCH_INTERVAL_S))
    try:
        for name in APP_MODULES:
            importlib.import_module(name)
        _warm_first_run()
        _tune()
    finally:
        sys.setswitchinterval(interval)


def _warm_first_run() -> None:
    """Read GPT-2's ranks, load Streamlit's emoji list (``st.set_page_config``'s icon), find the browser
    chunks, and encode a figure as plotly does (imports numpy.ma and orjson): each once per process."""
    import numpy as np
    import plotly.graph_objects as go
    import plotly.io as pio
    from streamlit import string_util

    from attention.tokens import load_bpe

    load_bpe()
    string_util.is_emoji("🔍")
    first_page_chunks()
    pio.to_json(go.Figure(go.Heatmap(z=np.zeros((2, 2)))), validate=False)


def _tune() -> None:
    """One torch thread per script run and the heap frozen (``configure_server``); once per process."""
    with _configure_lock:
        if _configured.is_set():
            return
        machine_threads()
        import torch

        torch.set_num_threads(1)
        gc.freeze()  # cheap without a collection: later full collections skip torch's objects
        _configured.set()


def configure_server() -> None:
    """Start this run's browser on the charts' code; tune the process once, on the first call (after the
    server-start imports, ``lifespan``, if they are running).

    * **Charts' code first.** Streamlit's browser code fetches Plotly (4.7 MB of JavaScript), and the
      code of each kind of widget, only when the first such element arrives, after the server has
      imported torch and computed. Asking for them at the start of every run lets the browser fetch
      and compile them meanwhile (``preload_browser_code``).
    * One torch thread per script run: sessions already run side by side on their own
      threads, and two intra-op threads per run on a busy 2-core server made Why attention
      at T = 1,024 take 3.1-10.9 s instead of 1.2-1.4 s. torch reads this when each new
      script thread first computes.
    * The objects that importing torch, plotly and pandas made are frozen out of the garbage
      collector's reach, so a full collection goes through only what runs create (124-212 ms ->
      13-17 ms, when Streamlit still ran one after every script run; ``.streamlit/config.toml`` now
      turns that off, ``runner.postScriptGC``, and Python's own full collections are what is left).
      The first call freezes at once, without collecting first (a collection here is on the first
      page's path); the imports only later pages need, a collection and a second freeze wait until
      the first run is over (``warm_up``).
    """
    preload_browser_code()
    if _warming.is_set():
        return
    if _app_imports is not None:
        _app_imports.join()  # the same modules imported by two threads at once could meet in the import locks
    with _warm_lock:
        if _warming.is_set():
            return
        _warming.set()
    _tune()
    if get_script_run_ctx() is None:  # a test or a tool: no page is waiting
        warm_up()
        return
    first_run = threading.current_thread()
    threading.Thread(target=_warm_up_after, args=(first_run,), name="explorer-warm-up", daemon=True).start()


def _warm_up_after(first_run: threading.Thread) -> None:
    """``warm_up`` once the first run is over: its thread ends with it (and with any rerun it took on).

    Not later: a second tab opened just after the first page painted waited for pandas and for the
    collector when this paused 2 s first (BENCHMARKS.md, "Cost per action and first paint")."""
    first_run.join(timeout=30.0)
    warm_up()


def warm_up() -> None:
    """Import what later pages need, then freeze everything imported so far out of the collector's reach.

    Safe from any thread and at any time; the second and later calls do nothing."""
    with _warm_lock:
        if warmed.is_set():
            return
        for name in LATER_MODULES:
            importlib.import_module(name)
        import plotly.graph_objects  # noqa: F401  Streamlit imported it at start; frozen with the others
        import torch  # noqa: F401

        gc.collect()
        gc.freeze()
        warmed.set()


def page_routes(pages: list[str]) -> list:
    """Routes that answer ``/`` and each page's path (``pages``: URL paths) with Streamlit's own page
    plus a ``modulepreload`` link for each of ``FIRST_PAGE_CHUNKS``, for ``st.App(routes=...)``.

    The browser then fetches and compiles the charts' and widgets' code while Streamlit's frontend
    starts, instead of after the first run has begun (``preload_browser_code``, which stays for
    pages opened otherwise). The links ask for a low priority, so that the frontend's own ~40 modules
    come before 7 MB of chunks on the browser's six connections to the server. With a
    ``server.baseUrlPath`` there are none: Streamlit answers."""
    from starlette.responses import HTMLResponse
    from starlette.routing import Route
    from streamlit import config

    chunks = first_page_chunks()
    if not chunks or config.get_option("server.baseUrlPath").strip("/"):
        return []
    index = (STATIC_JS.parents[1] / "index.html").read_text(encoding="utf-8")
    links = "".join(
        f'<link rel="modulepreload" crossorigin fetchpriority="low" href="./static/js/{name}">' for name in chunks
    )
    page = index.replace("</head>", links + "</head>", 1)

    async def streamlit_page(request):
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    paths = ["/", *(f"/{path}" for path in pages if path)]
    return [Route(path, streamlit_page, methods=["GET", "HEAD"]) for path in paths]


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
    """Have the browser import Streamlit's code for charts and widgets now, as it would at the first of each.

    The script goes in Streamlit's event container (where ``st.toast`` draws), so it takes no room
    on the page. The chunks sit beside Streamlit's own ``index.*.js``, whose URL already holds any
    ``server.baseUrlPath``. Without the chunks or the container (another Streamlit) it does nothing.
    """
    chunks, events = first_page_chunks(), getattr(st, "_event", None)
    if not chunks or events is None or get_script_run_ctx() is None:
        return
    events.html(
        "<script>(() => {"
        "const index = document.querySelector('script[src*=\"/static/js/index.\"]');"
        f"if (index) for (const chunk of {list(chunks)!r}) import(new URL(chunk, index.src).href).catch(() => {{}});"
        "})();</script>",
        unsafe_allow_javascript=True,
    )
