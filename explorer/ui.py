"""Small Streamlit pieces every page shares: the stepper, the code panel, charts (their
downloads are in ``exports``), and friendly handling of bad input."""

from __future__ import annotations

import contextlib
import dataclasses
import html
import importlib
import inspect
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import streamlit as st

from . import compute, exports, figures, shared_figures, state
from .exports import begin_run as begin_run  # the entry script and benchmarks call ui.begin_run
from .exports import step_exports as step_exports
from .settings import parse_position, parse_range, quoted

WINDOW_THRESHOLD = 48  # above this many tokens the sidebar offers a token window
WINDOW_KEY = "w_window"


def style() -> figures.FigureStyle:
    """The figure style for this session: presenter mode makes everything larger, and
    the sidebar's token window narrows token axes to the tokens chosen there."""
    base = figures.PRESENTER if st.session_state.get("presenter") else figures.DEFAULT_STYLE
    window = st.session_state.get("token_window")
    return dataclasses.replace(base, token_window=window) if window else base


def run_page(page) -> None:
    """Run the page ``st.navigation`` returned, also when only the fragment around it reruns: Streamlit's
    ``Page.run`` allows one call per run of the entry script, and a fragment rerun does not run that script."""
    page._can_be_called = True  # Streamlit's own guard, which is set again at its first call
    page.run()


def token_window_control(settings) -> None:
    """For long inputs, a sidebar slider that picks which tokens the heatmaps show cell by cell.

    Without it, a long sentence is drawn whole as block means (see ``figures.fit_matrix``).
    """
    st.session_state.pop("token_window", None)
    try:
        num_tokens = len(compute.prepared(settings).ids)
    except ValueError:
        return
    if num_tokens <= WINDOW_THRESHOLD:
        return
    window = st.session_state.get(WINDOW_KEY)  # a crafted message can put anything here
    valid = isinstance(window, tuple | list) and len(window) == 2 and all(type(v) is int for v in window)
    if not valid or st.session_state.get("window_tokens") != num_tokens:
        linked = state.initial_param("win", "any")
        start, stop = parse_range(linked, num_tokens) or (0, num_tokens)
        if linked is not None and parse_range(linked, num_tokens) is None:
            state.notice(f"win={quoted(linked)} in the link is not a token range such as 0-40; showing all.")
        st.session_state[WINDOW_KEY] = (start, max(stop, start + 1))
        st.session_state["window_tokens"] = num_tokens
    with st.sidebar:
        start, stop = st.slider(
            "Tokens shown in heatmaps",
            0,
            num_tokens,
            key=WINDOW_KEY,
            help=f"{num_tokens:,} tokens are too many to read cell by cell: the full range is drawn as "
            "block means; narrow it to inspect single cells (hover shows the token positions).",
        )
    if (start, stop) != (0, num_tokens):
        st.session_state["token_window"] = (start, max(stop, start + 1))
        state.page_param("win", f"{start}-{stop}")


# display: none takes the clicker buttons out of the layout, the tab order and the accessibility
# tree, so screen readers do not read them; their keyboard shortcuts still work.
CLICKER_CSS = """<style>
[class*="st-key-clicker_"] {display: none;}
</style>"""


def stepper(page: str, steps: Sequence[str]) -> int:
    """Previous / Next buttons and a step indicator; returns the step index.

    The ← and → keys press Previous and Next; PageUp and PageDown, which
    presentation clickers send, do the same.
    """
    key = f"step:{page}"
    if key not in st.session_state:
        linked = state.initial_param("step", page)
        start = (parse_position(linked) or 1) - 1
        if linked is not None and parse_position(linked) is None:
            state.notice(f"step={quoted(linked)} in the link is not a step number; starting at step 1.")
        st.session_state[key] = min(max(start, 0), len(steps) - 1)
    st.session_state[key] = min(max(st.session_state[key], 0), len(steps) - 1)

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, 0), len(steps) - 1)

    index = st.session_state[key]
    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    # No arrow icons: Streamlit already shows each shortcut (← and →) beside the label.
    previous.button(
        "Previous",
        key=f"prev:{page}",
        on_click=move,
        args=(-1,),
        disabled=index == 0,
        shortcut="Left",
        width="stretch",
    )
    following.button(
        "Next",
        key=f"next:{page}",
        on_click=move,
        args=(1,),
        disabled=index == len(steps) - 1,
        shortcut="Right",
        width="stretch",
        type="primary",
    )
    # Presentation clickers send PageDown/PageUp: two more shortcuts, on buttons kept off screen.
    st.html(CLICKER_CSS)
    for name, delta, shortcut in (("clicker_next", 1, "PageDown"), ("clicker_prev", -1, "PageUp")):
        st.button(f"{name} {page}", key=f"{name}_{page}", on_click=move, args=(delta,), shortcut=shortcut)
    middle.markdown(
        f"<div style='text-align:center'><b>Step {index + 1} of {len(steps)}</b> · {html.escape(steps[index])}</div>",
        unsafe_allow_html=True,
    )
    middle.progress((index + 1) / len(steps))
    state.page_param("step", index + 1)
    st.session_state["run_step"] = (page, index, steps[index])
    return index


_SOURCES: dict[Callable | type, str] = {}
_SOURCES_LOCK = threading.Lock()


def code_panel_key(title: str = "Show the code") -> str:
    """The session-state key of a page's code panel (``show_code``): True while it is open."""
    return f"code-panel:{title}"


def _named(obj: Callable | type | str) -> Callable | type:
    """``obj``, or the object its dotted name names (``"attention.gru_step"``)."""
    if not isinstance(obj, str):
        return obj
    module, _, name = obj.rpartition(".")
    return getattr(importlib.import_module(module), name)


def source_of(obj: Callable | type) -> str:
    """``inspect.getsource(obj)``, read once per process and by one thread at a time.

    For a class, ``getsource`` parses its whole module with ``ast.parse``. On Python 3.11,
    two threads doing that at once can fail with "SystemError: AST constructor recursion
    depth mismatch": the load benchmark's 30 students hit it once in 552 runs.
    """
    with _SOURCES_LOCK:
        if obj not in _SOURCES:
            _SOURCES[obj] = inspect.getsource(obj)
        return _SOURCES[obj]


def show_code(*objects: Callable | type | str, title: str = "Show the code") -> None:
    """The package source that computed what is on screen, read with ``inspect.getsource``.

    The code is sent only while the panel is open: opening it reruns the page's fragment. A closed
    panel then costs the browser no syntax highlighter (1.6 MB of JavaScript, about a quarter of a
    second of its main thread before the first chart was drawn) and each run no source text. The
    panel keeps its state from step to step of a page, by its key. An object may be given by its
    dotted name (``"attention.gru_step"``), looked up only when the panel is open: the first page's
    closed panel then imports nothing (its first run needs no torch, ``server``)."""
    panel = st.expander(title, icon=":material/code:", key=code_panel_key(title), on_change="rerun")
    if not panel.open:
        return
    with panel:
        for obj in map(_named, objects):
            module = inspect.getmodule(obj)
            where = f"{module.__name__}.{obj.__qualname__}" if module else obj.__qualname__
            st.caption(f"`{where}`")
            st.code(source_of(obj), language="python")


def chart(fig, name: str, *, key: str | None = None, cell_text: bool = True) -> None:
    """Draw a plotly figure built for this run (``draw`` draws shared ones): the toolbar downloads PNG
    (3× resolution) or SVG, named for the view; heatmaps get a CSV download, and the numbers join this
    step's JSON export.

    ``cell_text=False`` drops the numbers printed in cells, for heatmaps drawn too narrow for them.
    """
    show(shared_figures.prepare(fig, cell_text=cell_text), name, key=key)


def show(drawn: shared_figures.Drawn, name: str, *, key: str | None = None) -> None:
    """Draw a prepared figure, with its downloads."""
    figures.layout.pandas_settled()  # st.plotly_chart encodes the figure with plotly's JSON encoder too
    image_format = st.session_state.get(exports.IMAGE_FORMAT, "png")
    file_name = exports.export_name(name)
    config = figures.export_config(file_name, image_format=image_format)
    st.plotly_chart(drawn.encoded(), key=key, config=config, width="stretch")
    exports.figure_downloads(drawn.tables, drawn.title, name, file_name, key=f"csv:{key or name}")


TEXT_COLUMNS = {1: figures.TEXT_CELL_LIMIT, 2: 8, 3: 4}  # widest heatmap whose cell values fit, by figures per row


@dataclasses.dataclass(frozen=True)
class Panel:
    """A figure to draw beside others: ``builder(*args, **options)`` (a ``figures`` function), shown as ``name``."""

    name: str
    builder: Callable
    args: tuple
    options: dict

    def columns(self) -> int:
        """How many columns of cells the panel's heatmap shows (0 for any other figure): its matrix's,
        or those inside the token window when its columns are tokens (``figures.fit_matrix``)."""
        if self.builder is not figures.heatmap:
            return 0
        columns, window = int(np.shape(self.args[0])[1]), self.options["style"].token_window
        if window is not None and self.options.get("col_tokens", True):
            columns = len(range(columns)[window[0] : window[1]])
        return columns


def panel(name: str, builder: Callable, *args, **options) -> Panel:
    """A ``Panel`` for ``side_by_side``, in this session's ``style`` unless ``options`` name one."""
    options.setdefault("style", style())
    return Panel(name, builder, args, options)


def side_by_side(*panels: Panel) -> None:
    """Panels in columns, each built once for every session that draws the same (``draw``). A heatmap too
    wide for its column loses its cell values (hover still has them). An underscore in a name becomes a
    hyphen in its file name; the key keeps it."""
    widest = TEXT_COLUMNS[len(panels)]
    for column, shown in zip(st.columns(len(panels)), panels, strict=True):
        with column:
            cell_text = shown.columns() <= widest
            drawn = shared_figures.shared(shown.builder, *shown.args, cell_text=cell_text, **shown.options)
            show(drawn, shown.name.replace("_", "-"), key=shown.name)


def draw(builder: Callable, name: str, *args, key: str | None = None, cell_text: bool = True, **options) -> None:
    """Draw the figure ``builder`` (a ``figures`` function) makes in this session's ``style``, keyed by ``key``
    or else ``name``. The figure is built once for every session that draws the same (``shared_figures``)."""
    options.setdefault("style", style())
    show(shared_figures.shared(builder, *args, cell_text=cell_text, **options), name, key=key or name)


def token_vectors(name: str, vectors, pieces: Sequence[str], cols: Sequence[str] | None = None, **options) -> None:
    """One vector per token as a heatmap: token rows, dimension columns ("dim k" unless ``cols``), signed
    values on the diverging scale, 4 decimals as the book prints them up to 4 columns, else 2."""
    dims = np.shape(vectors)[1]
    cols = [f"dim {k}" for k in range(dims)] if cols is None else cols
    shown = dict(row_title="token", col_title="dimension", col_tokens=False, diverging=True, value_name="context value")
    shown.update(decimals=4 if dims <= 4 else 2)
    shown.update(options)
    draw(figures.heatmap, name, vectors, pieces, cols, **shown)


@contextlib.contextmanager
def progress(text: str, *, every_s: float = 0.25) -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar for a long computation; yields ``report(done, total, label)`` to move it.

    The bar moves a few times a second at most, so redrawing it does not slow what it
    measures; ``total`` 0 shows ``label`` alone. The bar is removed when the block ends.
    """
    bar = st.progress(0.0, text=text)
    shown = [0.0]

    def report(done: int, total: int, label: str) -> None:
        if total == 0:
            bar.progress(0.0, text=label)
        elif time.monotonic() - shown[0] >= every_s or done == total:
            shown[0] = time.monotonic()
            bar.progress(done / total, text=f"{label} ({done}/{total})")

    try:
        yield report
    finally:
        bar.empty()


def truncation_notice(truncated_from: int | None, context_length: int, *, subject: str = "The text") -> None:
    """Say that only the first ``context_length`` tokens are used, when the input had more."""
    if truncated_from:
        st.info(
            f"{subject} has {truncated_from:,} tokens; only the first {context_length:,} (context_length) are used.",
            icon=":material/content_cut:",
        )


def first_values(matrix, count: int = 4) -> str:
    """A matrix's first row as the book prints it: "[0.3190, 0.4858]", with "…" when there are more."""
    row = np.asarray(matrix)[0]
    return "[" + ", ".join(f"{v:.4f}" for v in row[:count]) + (", …]" if row.size > count else "]")


def table(data, *, where=None, **options) -> None:
    """A table: an interactive ``st.dataframe``, or in presenter mode an HTML table whose text is at least
    18 px (a dataframe draws on a canvas at a fixed small size). ``options`` go to ``st.dataframe``."""
    where = where or st
    if not st.session_state.get("presenter"):
        where.dataframe(data, **options)
        return
    where.table(data.style.hide(axis="index") if options.get("hide_index") else data)


def show_error(error: ValueError) -> None:
    """A bad input explained, never a traceback."""
    st.warning(str(error), icon=":material/edit_note:")


def guard(function: Callable, *args, **kwargs):
    """Call ``function``; a ``ValueError`` becomes a friendly warning and stops the page."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        show_error(error)
        st.stop()


# Presenter mode: every text in the main area at least 18 px (code 16 px), less chrome. 1.125rem is 18 px.
PRESENTER_CSS = """
<style>
[data-testid="stHeader"], [data-testid="stToolbar"], [data-testid="stDecoration"] {display: none;}
[data-testid="stMainBlockContainer"] {padding-top: 0.6rem; padding-bottom: 0.5rem; max-width: 100%;}
[data-testid="stMainBlockContainer"] h1 {font-size: 1.75rem; padding: 0 0 0.1rem 0;}
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] :is(p, li, div) {
  font-size: 1.2rem; line-height: 1.35;
}
[data-testid="stMainBlockContainer"] :is([data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] *,
  [data-testid="stWidgetLabel"] *, [data-testid="stExpander"] summary *, [data-testid="stMetricLabel"] *,
  [data-testid="stTable"] *, [data-testid="stAlertContentInfo"] *, [data-testid="stAlertContentWarning"] *,
  [data-baseweb="select"] *, [data-baseweb="tab"] *, [data-testid="stRadio"] *, [data-testid="stSlider"] *,
  [data-testid="stButtonGroup"] *, button, button *, input, label, label *) {font-size: 1.125rem;}
[data-testid="stMainBlockContainer"] :is(button p, [data-testid="stExpander"] summary p) {font-size: 1.2rem;}
[data-testid="stMainBlockContainer"] [data-testid="stMetricValue"] * {font-size: 1.6rem;}
[data-testid="stMainBlockContainer"] :is([data-testid="stCode"] *, code, code *) {font-size: 1rem;}
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p code {font-size: 1.1rem;}
[data-testid="stMainBlockContainer"] .katex {font-size: 1.35em;}
[data-testid="stMainBlockContainer"] [data-testid="stTable"] td,
[data-testid="stMainBlockContainer"] [data-testid="stTable"] th {padding: 0.15rem 0.5rem;}
</style>
"""


# The main area starts close under Streamlit's header, so the header must not paint over it (it hid the
# query picker's label); the menu button in its corner stays clickable.
BASE_CSS = """<style>
[data-testid="stMainBlockContainer"] {padding-top: 2.2rem; padding-bottom: 1rem;}
[data-testid="stHeader"] {background: transparent; pointer-events: none;}
[data-testid="stHeader"] [data-testid="stToolbar"] {pointer-events: auto;}
</style>"""


def base_css() -> None:
    """Less empty space above the title, so a step fits a 1280×720 screen."""
    st.html(BASE_CSS)


def presenter_css() -> None:
    """Larger text and less chrome for projection."""
    st.html(PRESENTER_CSS)
