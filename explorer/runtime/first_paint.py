"""The browser's side of a fast first page: its charts' code fetched early, and a word when it has painted.

``page_routes`` answers ``/`` and each page's path with Streamlit's page plus ``modulepreload`` links for
the chunks the first page needs (``FIRST_PAGE_CHUNKS``), and a path (``PAINTED_PATH``) the page's script
posts to once every heatmap has its image; ``preload_browser_code`` asks for the same chunks in every run,
for a page opened otherwise. ``painted`` is set then, and the server imports torch (``server``)."""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from explorer.runtime import patches

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


def page_routes(pages: list[str], on_torch_page: Callable[[], object]) -> list:
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
            on_torch_page()
        return HTMLResponse(page, headers={"Cache-Control": "no-cache"})

    async def first_paint(request):
        painted.set()
        return Response(status_code=204)

    paths = ["/", *(f"/{path}" for path in pages if path)]
    return [
        *(Route(path, streamlit_page, methods=["GET", "HEAD"]) for path in paths),
        Route(PAINTED_PATH, first_paint, methods=["POST"]),
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
