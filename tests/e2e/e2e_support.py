"""Driving the running app in Chromium: pages, settling, read-back of plots, and the package's own numbers.

The browser tests start ``streamlit run streamlit_app.py`` once (``conftest.py``)
and give each test a fresh browser context wrapped in an ``AppPage``. An
``AppPage`` waits on conditions, never on sleeps: after an action, until the
server reports the script run finished (read from the websocket), the page
shows nothing stale and every plot has painted. Figures are read back from
plotly's own ``.data`` on each ``.js-plotly-plot`` element, which is what the
learner sees drawn.

Playwright is imported only by the fixtures, so that collecting these tests on
a machine without it gives a one-line skip instead of an import error.
"""

from __future__ import annotations

import ast
import contextlib
import html
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from apptest_support import app, decode, figure_specs, next_step, previous_step, type_sentence
from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

import attention
from attention import figures
from benchmarks.launch import SETTLED, VIEWPORT  # one definition for the browser tests, benchmarks and scripts
from explorer.runtime import server as app_server
from explorer.settings import Settings
from explorer.views import chapter

CUT_SHORT = ForwardMsg.FINISHED_EARLY_FOR_RERUN  # a run interrupted by a newer rerun (fastReruns)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "e2e"
TIMEOUT_MS = 180_000  # a page load can take 20+ s on a busy 2-core machine; a cold first load longer
NEGATIVE_WAIT_MS = 1_500  # how long to watch for a rerun request that must not be sent


@dataclass(frozen=True)
class PageSpec:
    """One ``st.Page`` of the entry script: its file, title and URL path ("" for the default page)."""

    file: str
    title: str
    url_path: str

    @property
    def stem(self) -> str:
        return Path(self.file).stem


REFERENCE_PAGES = ("glossary",)  # pages of text to look things up in: no stepper, no charts


def stepped_pages() -> list[PageSpec]:
    """``app_pages`` but the reference pages: the pages a learner steps through, each with charts."""
    return [spec for spec in app_pages() if spec.stem not in REFERENCE_PAGES]


def app_pages() -> list[PageSpec]:
    """The pages the app script ``explorer_app.py`` passes to ``st.navigation`` (its ``PAGES``), read from its source.

    Tests are parametrized with these at collection time;
    ``test_navigation_lists_the_tested_pages`` checks them against the running app's sidebar, so a page added to the
    entry script is covered without editing the tests.
    """
    tree = ast.parse((ROOT / "explorer_app.py").read_text(encoding="utf-8"))
    pages = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(target, "id", "") == "PAGES" for target in node.targets)
    )
    specs = []
    for file, title, _icon, options in pages:
        url_path = options.get("url_path", Path(file).stem)
        specs.append(PageSpec(file, title, "" if options.get("default") else url_path))
    return specs


# ---------------------------------------------------------------------------------------------- console errors


@dataclass(frozen=True)
class Harmless:
    """A console error that is expected and harmless, and why."""

    text: str  # regular expression on the message
    url: str  # regular expression on the URL the message is about (console location or failed request)
    why: str


HARMLESS_CONSOLE_ERRORS = (
    # The page icon (":material/grid_on:") is a Material Symbols SVG that Streamlit's frontend loads
    # from Google's font CDN for the favicon. The test machine has no network; the tab just has no icon.
    Harmless(
        r"^Failed to load resource: net::ERR_",
        r"^https://fonts\.gstatic\.com/",
        "favicon from fonts.gstatic.com, unreachable without network",
    ),
    # Opened at a deep link (/causal_mask?step=3) that the app's page routes do not answer (with a
    # server.baseUrlPath), Streamlit's frontend does not know the app's base path yet: it probes
    # /causal_mask/_stcore/health and /host-config (404), then finds the app at the root. The page routes'
    # pages name the root (explorer/runtime/server.py, AT_ROOT; test_pages.py checks there is no 404).
    Harmless(
        r"^Failed to load resource: the server responded with a status of 404",
        r"^http://127\.0\.0\.1:\d+/[^/?#]+/_stcore/(health|host-config)$",
        "Streamlit probing the page path as a base URL before the root",
    ),
)


def is_harmless(text: str, url: str) -> bool:
    return any(re.search(h.text, text) and re.search(h.url, url or "") for h in HARMLESS_CONSOLE_ERRORS)


# --------------------------------------------------------------------------------------------------- the page

INJECTED = """() => {
  const found = [];
  for (const img of document.querySelectorAll('img')) {
    if ((img.getAttribute('src') || '') === 'x') found.push('img src=x');
  }
  for (const a of document.querySelectorAll('a[href], a[*|href]')) {
    const href = (a.getAttribute('href') || a.getAttribute('xlink:href') || '').trim().toLowerCase();
    if (href.startsWith('javascript:')) found.push('javascript link: ' + a.outerHTML.slice(0, 80));
  }
  for (const el of document.querySelectorAll('b, strong, em')) {
    if (['bold', 'x'].includes(el.textContent.trim())) found.push(el.tagName + ': ' + el.textContent);
  }
  const ticks = document.querySelectorAll('.js-plotly-plot .xtick text, .js-plotly-plot .ytick text');
  for (const tick of ticks) {
    // plotly turns <b>, <i>, <br>, <a> ... into tspan or a elements; a literal label is plain text
    if (tick.querySelector('*')) found.push('markup in a tick label: ' + tick.innerHTML.slice(0, 80));
  }
  return found;
}"""

READ_PLOTS = """() => {
  const plain = (v) => {
    if (v === null || v === undefined) return null;
    if (v._inputArray !== undefined) return plain(v._inputArray);
    if (ArrayBuffer.isView(v)) return Array.from(v);
    if (Array.isArray(v)) return v.map(plain);
    return v;
  };
  const main = document.querySelector('[data-testid="stMain"]');
  return [...main.querySelectorAll('.js-plotly-plot')].map((plot) => ({
    title: (plot.layout && plot.layout.title && plot.layout.title.text) || '',
    traces: plot.data.map((t) => ({
      type: t.type || 'scatter',
      name: t.name || '',
      title: (t.meta && t.meta.title) || '',
      z: t.type === 'heatmap' ? plain(t.z) : null,
      y: t.type === 'heatmap' ? null : plain(t.y),
    })),
  }));
}"""


@dataclass
class Plot:
    """One figure as drawn in the browser (or as sent by the server, for ``AppReference``)."""

    title: str
    traces: list[dict]
    y_ticks: list[str] | None = None  # the server's y tick labels, unescaped (what plotly should show)

    def heatmaps(self) -> list[dict]:
        return [t for t in self.traces if t["type"] == "heatmap"]


def _values(raw) -> np.ndarray | None:
    """A plotly data array (plain nested lists with None for gaps, or base64 typed array) as floats, or None."""
    if raw is None:
        return None
    if isinstance(raw, dict):
        return np.asarray(decode(raw), dtype=float) if "bdata" in raw else None
    filled = _fill_none(raw)
    flat = np.ravel(np.array(filled, dtype=object))
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in flat):
        return None  # categories or text, not numbers
    return np.array(filled, dtype=float)


def _fill_none(value):
    if isinstance(value, list):
        return [_fill_none(v) for v in value]
    return np.nan if value is None else value


def plots_from_browser(raw: list[dict]) -> list[Plot]:
    """``READ_PLOTS``' result as ``Plot``s."""
    return [
        Plot(
            html.unescape(re.sub(r"</?b>", "", entry["title"])),  # Streamlit's frontend wraps titles in <b>
            [
                {"type": t["type"], "name": t["name"], "title": t["title"], "z": _values(t["z"]), "y": _values(t["y"])}
                for t in entry["traces"]
            ],
        )
        for entry in raw
    ]


def plots_from_specs(specs: list[dict]) -> list[Plot]:
    """The figure JSON the server sends (AppTest) as ``Plot``s."""
    plots = []
    for spec in specs:
        traces = []
        for t in spec["data"]:
            kind = t.get("type", "scatter")
            meta = t.get("meta") if isinstance(t.get("meta"), dict) else {}
            traces.append(
                {
                    "type": kind,
                    "name": t.get("name", ""),
                    "title": meta.get("title", ""),
                    "z": _values(t.get("z")) if kind == "heatmap" else None,
                    "y": None if kind == "heatmap" else _values(t.get("y")),
                }
            )
        layout = spec.get("layout", {})
        ticks = layout.get("yaxis", {}).get("ticktext")
        y_ticks = None if ticks is None else [html.unescape(str(t)) for t in ticks]
        plots.append(Plot(html.unescape(layout.get("title", {}).get("text", "")), traces, y_ticks))
    return plots


def assert_same_plots(browser: list[Plot], server: list[Plot], where: str) -> None:
    """Every trace's numbers drawn in the browser equal those the app computed (AppTest)."""
    assert [p.title for p in browser] == [p.title for p in server], f"{where}: figure titles differ"
    for drawn, sent in zip(browser, server, strict=True):
        assert [t["type"] for t in drawn.traces] == [t["type"] for t in sent.traces], f"{where}: {drawn.title!r}"
        for a, b in zip(drawn.traces, sent.traces, strict=True):
            for name in ("z", "y"):
                if b[name] is None:
                    continue
                assert a[name] is not None, f"{where}: {drawn.title!r} has no {name} in the browser"
                np.testing.assert_array_equal(a[name], b[name], err_msg=f"{where}: {drawn.title!r} {name}")


SIDEBAR_ROOT = 1  # the first index of an element's delta path: 0 is the main area, 1 the sidebar


@dataclass
class Events:
    """What a page reported that a test must see: dialogs and unexpected console errors."""

    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    runs: int = 0  # script runs the server reported finished (not those cut short by a newer rerun)
    requests: int = 0  # reruns the page asked for (a widget changed, a button or shortcut pressed)
    fragment_requests: int = 0  # of those, reruns of one fragment only (a click inside ``st.fragment``)
    # Runs that answered this tab's own request: started after the request left the browser, and finished. A run
    # already going when the user clicked (a room's wake-up, say) may finish just after the click; it is not the
    # click's run, and a test that took it for one would read the page before the click's run even began.
    answered: int = 0
    asking: bool = False  # a request is out and no run has started since
    started_after_asking: bool = False  # a run started after the last request, and has not finished yet
    drawn: list[tuple[str, str]] = field(default_factory=list)  # (where, kind) of each element sent since cleared
    # The last messages each way, for a record when something goes wrong: (seconds, "sent" or "got", what).
    log: deque = field(default_factory=lambda: deque(maxlen=60))

    def clear(self) -> None:
        self.dialogs.clear()
        self.errors.clear()

    def problems(self) -> list[str]:
        return [f"dialog: {d}" for d in self.dialogs] + [f"console: {e}" for e in self.errors]


def _decoded(payload, kind):
    """A websocket frame as a ``kind`` (``ForwardMsg`` or ``BackMsg``) message, or None: a text frame, or one that
    is not such a message."""
    if isinstance(payload, str):
        return None
    try:
        return kind.FromString(bytes(payload))
    except DecodeError:
        return None


def watch(page) -> Events:
    """Record dialogs (dismissing them) and console errors of ``page``, and count finished script runs.

    Runs are counted from the server's messages on the websocket: the
    ``data-test-script-state`` attribute cannot be used for that, because React
    may render a fast run's "running" and "notRunning" as one update.
    """
    events = Events()

    def on_dialog(dialog) -> None:
        events.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message) -> None:
        if message.type != "error":
            return
        url = (message.location or {}).get("url", "")
        (events.allowed if is_harmless(message.text, url) else events.errors).append(f"{message.text} [{url}]")

    def on_frame(payload) -> None:
        message = _decoded(payload, ForwardMsg)
        if message is None:
            return
        kind = message.WhichOneof("type")
        if kind != "delta":
            detail = f" {message.script_finished}" if kind == "script_finished" else ""
            events.log.append((round(time.monotonic(), 3), "got", kind + detail))
        if message.WhichOneof("type") == "new_session" and events.asking:
            events.asking, events.started_after_asking = False, True
        elif message.WhichOneof("type") == "script_finished" and message.script_finished != CUT_SHORT:
            events.runs += 1
            if events.started_after_asking:
                events.answered += 1
                events.started_after_asking = False
        elif message.WhichOneof("type") == "delta" and message.delta.WhichOneof("type") == "new_element":
            where = "sidebar" if message.metadata.delta_path[:1] == [SIDEBAR_ROOT] else "main"
            events.drawn.append((where, message.delta.new_element.WhichOneof("type")))

    def on_sent(payload) -> None:
        message = _decoded(payload, BackMsg)
        if message is None:
            return
        if message.WhichOneof("type") == "rerun_script":
            rerun = message.rerun_script
            pressed = [w.id.rsplit("-", 1)[-1] for w in rerun.widget_states.widgets if w.trigger_value]
            what = f"rerun fragment={rerun.fragment_id or '-'} pressed={pressed} page={rerun.page_script_hash[:8]}"
            events.log.append((round(time.monotonic(), 3), "sent", what))
            events.requests += 1
            events.fragment_requests += bool(message.rerun_script.fragment_id)
            events.asking, events.started_after_asking = True, False

    def on_socket(socket) -> None:
        socket.on("framereceived", on_frame)
        socket.on("framesent", on_sent)

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    page.on("pageerror", lambda error: events.errors.append(f"pageerror: {error}"))
    page.on("websocket", on_socket)
    return events


PHONE = {"width": 390, "height": 844}
PHONE_AGENT = (  # a phone's browser says "Mobile"; the app then draws its charts' text at 16 px
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile "
    "Safari/537.36"
)


def open_page(browser, base_url: str, *, phone: bool = False):
    """A new browser context (its own Streamlit session) and an ``AppPage`` in it; close the context after. A
    ``phone`` context is 390×844 and sends a phone's User-Agent."""
    options = {"viewport": PHONE, "user_agent": PHONE_AGENT} if phone else {"viewport": VIEWPORT}
    context = browser.new_context(**options)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    return context, AppPage(page, base_url, watch(page))


class AppPage:
    """A browser tab on the app, with waits that follow Streamlit's script runs."""

    def __init__(self, page, base_url: str, events: Events):
        self.page = page
        self.base_url = base_url
        self.events = events

    # -- navigation and waiting
    def goto(self, url_path: str = "", query: str = "") -> AppPage:
        self.page.goto(f"{self.base_url}/{url_path}" + (f"?{query}" if query else ""), timeout=TIMEOUT_MS)
        self.settle()
        return self

    def settle(self) -> None:
        """Wait until the current script run has finished and every plot has painted."""
        self.page.wait_for_function(SETTLED, timeout=TIMEOUT_MS, polling=200)
        self.assert_no_exception()

    def runs(self) -> int:
        """How many script runs of this tab have finished so far."""
        return self.events.runs

    def _count_exceeds(self, counter: str, before: int, timeout_ms: int) -> bool:
        """Whether ``events.<counter>`` goes above ``before`` within ``timeout_ms``."""
        deadline = time.monotonic() + timeout_ms / 1000
        while getattr(self.events, counter) <= before:
            if time.monotonic() > deadline:
                return False
            self.page.wait_for_timeout(50)  # lets playwright deliver the websocket events
        return True

    def answers(self) -> int:
        """How many runs answering this tab's own requests (a click, a key, a typed value) have finished so far."""
        return self.events.answered

    def wait_for_answer(self, before: int) -> None:
        """Wait for the run answering this tab's latest request to finish (``answers()`` returned ``before``
        before the request), then settle."""
        finished = self._count_exceeds("answered", before, TIMEOUT_MS)
        assert finished, f"no run answering the page's request finished in {TIMEOUT_MS / 1000:.0f} s"
        self.settle()

    def requests(self) -> int:
        """How many reruns this tab has asked the server for so far."""
        return self.events.requests

    def assert_no_rerun_requested(self, before: int) -> None:
        """Watch for a while: the page may not ask for a rerun (e.g. after a key that must do nothing).

        The request leaves the browser at once, so a short watch is enough even on a busy machine.
        """
        asked = self._count_exceeds("requests", before, NEGATIVE_WAIT_MS)
        assert not asked, "the page asked the server for a rerun; it should not have"

    def assert_no_exception(self) -> None:
        exceptions = self.page.locator('[data-testid="stException"]')
        assert exceptions.count() == 0, f"Streamlit shows an exception: {exceptions.first.inner_text()[:500]}"
        text = self.page.locator('[data-testid="stMain"]').inner_text()
        assert "Traceback" not in text, "a traceback is shown"
        assert not self.events.dialogs, f"a dialog opened: {self.events.dialogs}"

    # -- the stepper
    def _step_label(self):
        return self.page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] b').filter(
            has_text=re.compile(r"^Step \d+ of \d+$")
        )

    def has_stepper(self) -> bool:
        return self._step_label().count() == 1

    def step(self) -> tuple[int, int]:
        """(current step, number of steps), both from the stepper's "Step k of n" label."""
        assert self.has_stepper(), "the page has no stepper (Previous, Step k of n, Next)"
        found = re.match(r"Step (\d+) of (\d+)", self._step_label().inner_text())
        return int(found[1]), int(found[2])

    def wait_for_step(self, number: int, timeout_ms: int = TIMEOUT_MS) -> tuple[int, int]:
        """Wait until the stepper shows step ``number``; return (step, number of steps). The run that moved it
        can have ended before the browser drew it: its ``script_finished`` arrives on the websocket before the
        page has rendered the run's elements (seen in CI: a step with a table showed the old step for a moment)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        wanted = self._step_label().filter(has_text=re.compile(rf"^Step {number} of \d+$"))
        with contextlib.suppress(PlaywrightTimeout):  # the caller's assertion on ``step()`` says what it shows instead
            wanted.wait_for(timeout=timeout_ms)
        return self.step()

    def step_name(self) -> str:
        """The current step's name, as the stepper shows it after "Step k of n · "."""
        label = self.page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] div').filter(
            has_text=re.compile(r"^Step \d+ of \d+ · ")
        )
        return label.first.inner_text().split(" · ", 1)[1].strip()

    def button(self, kind: str):
        """The stepper's "next" or "prev" button (keys ``next:<page>`` / ``prev:<page>``)."""
        return self.page.locator(f'[data-testid="stMain"] [class*="st-key-{kind}-"] button').first

    def press_and_wait(self, locator) -> None:
        before = self.answers()
        locator.click()
        self.wait_for_answer(before)

    def next(self) -> None:
        self.press_and_wait(self.button("next"))

    def previous(self) -> None:
        self.press_and_wait(self.button("prev"))

    # -- settings in the sidebar
    def sentence_input(self):
        return self.page.locator('[data-testid="stSidebar"] .st-key-w_text input')

    def choose_own_sentence(self) -> None:
        if self.sentence_input().is_enabled():
            return
        self.press_and_wait(self.page.locator(".st-key-w_source label").filter(has_text="My own sentence"))
        self.sentence_input().wait_for(state="visible")
        self.page.wait_for_function(
            """() => !document.querySelector('.st-key-w_text input').disabled""", timeout=TIMEOUT_MS
        )

    def type_sentence(self, text: str, *, wait: bool = True) -> None:
        """Select "My own sentence", fill the Sentence box and press Enter (a paste: no per-key events)."""
        self.choose_own_sentence()
        box = self.sentence_input()
        changed = box.input_value() != text
        before = self.answers()
        box.fill(text)
        box.press("Enter")
        if wait and changed:
            self.wait_for_answer(before)

    def set_number(self, key: str, value) -> None:
        box = self.page.locator(f'[data-testid="stSidebar"] .st-key-{key} input')
        before = self.answers()
        box.fill(str(value))
        box.press("Enter")
        self.wait_for_answer(before)

    # -- what is on screen
    def plots(self) -> list[Plot]:
        return plots_from_browser(self.page.evaluate(READ_PLOTS))

    def captions(self) -> str:
        """The text of every caption in the main area, one caption a line."""
        shown = self.page.locator('[data-testid="stMain"] [data-testid="stCaptionContainer"]')
        return "\n".join(shown.all_inner_texts())

    def tick_labels(self, axis: str = "y") -> list[list[str]]:
        """Each plot's tick label texts on ``axis`` ("x" or "y"), as the learner reads them."""
        return self.page.evaluate(
            """(axis) => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')].map(
                 (plot) => [...plot.querySelectorAll(`.${axis}tick text`)].map((t) => t.textContent))""",
            axis,
        )

    def table_rows(self) -> list[list[str]]:
        """The first dataframe's cells, from its accessible table (the rows the grid has rendered)."""
        return self.page.evaluate(
            """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"] table tbody tr')]
                 .map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent))"""
        )

    def heatmap_of(self, pattern: str) -> dict | None:
        """The first drawn heatmap whose title matches ``pattern`` (with ``plot``: its figure's index), or None."""
        for index, plot in enumerate(self.plots()):
            for trace in plot.heatmaps():
                if re.search(pattern, trace["title"]):
                    return {**trace, "plot": index}
        return None

    def step_to_heatmap(self, pattern: str) -> dict:
        """Press Next until a heatmap titled like ``pattern`` is drawn; returns it."""
        while (trace := self.heatmap_of(pattern)) is None:
            step, total = self.step()
            assert step < total, f"no heatmap titled like {pattern!r} on any step"
            self.next()
        return trace

    def injected_markup(self) -> list[str]:
        """Elements that only exist if user text was interpreted as HTML or markdown somewhere."""
        return self.page.evaluate(INJECTED)

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


def eventually(check, timeout: float = 15.0):
    """Call ``check`` until it stops raising ``AssertionError`` (a plot can update just after a run ends)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


# ----------------------------------------------------------------------------------------- the app, in-process


class AppReference:
    """The same page in Streamlit's ``AppTest``, kept on the same step and input as the browser."""

    def __init__(self, spec: PageSpec):
        self.spec = spec
        # Tuned as the app's server is, one torch thread per run, before the first run and whatever an earlier
        # test left: a GRU's float32 sums on two threads differ from one thread's in the last bit, and this run's
        # numbers must equal the browser's.
        app_server.configure_server()
        torch.set_num_threads(1)
        self.at = app(spec.file, timeout=120)
        self._check()

    def _check(self) -> None:
        assert not self.at.exception, f"AppTest: {[e.value for e in self.at.exception]}"

    def next(self) -> None:
        next_step(self.at)

    def previous(self) -> None:
        previous_step(self.at)

    def type_sentence(self, text: str) -> None:
        type_sentence(self.at, text)
        self._check()

    def plots(self) -> list[Plot]:
        return plots_from_specs(figure_specs(self.at))


# ------------------------------------------------------------------------------------- the package's numbers


@dataclass(frozen=True)
class Inputs:
    """What the sidebar holds, for computing a page's numbers with the package directly."""

    text: str | None = None  # None: the book's example
    d_in: int = 3
    d_out: int = 2
    num_heads: int = 2
    context_length: int = 1024
    seed: int = 123

    def pieces(self) -> tuple[str, ...]:
        if self.text is None:
            return attention.BOOK_TOKENS
        return attention.tokenize(self.text).pieces[: self.context_length]

    def embeddings(self) -> torch.Tensor:
        """(num_tokens, d_in): the book's six vectors, or the seeded embedding of the sentence."""
        if self.text is None:
            return attention.BOOK_INPUTS
        ids = attention.tokenize(self.text).ids[: self.context_length]
        return attention.embed_tokens(ids, self.d_in, self.seed)

    def labels(self) -> list[str]:
        return [figures.visible_token(p) for p in self.pieces()]


def _seeded(cls, seed: int, *args, **kwargs):
    torch.manual_seed(seed)  # as the book does before building a module
    return cls(*args, **kwargs).eval()


def causal_page_seed(inputs: Inputs) -> int:
    """The Causal mask page's module seed: the book's 789 while the sidebar's seed is the default (``book_mode``)."""
    return chapter.module_seed(Settings(seed=inputs.seed), "causal")


def causal_weights(inputs: Inputs, seed: int | None = None) -> np.ndarray:
    """(T, T) causal attention weights of ``CausalAttention``'s projections, computed here by hand; the module
    is built after ``torch.manual_seed(seed)`` (default: the sidebar's)."""
    x = inputs.embeddings()  # (T, d_in)
    seed = inputs.seed if seed is None else seed
    ca = _seeded(attention.CausalAttention, seed, x.shape[1], inputs.d_out, inputs.context_length, 0.0)
    with torch.no_grad():
        queries, keys = ca.W_query(x), ca.W_key(x)  # (T, d_out)
        scores = queries @ keys.T  # (T, T)
        future = torch.triu(torch.ones_like(scores, dtype=torch.bool), diagonal=1)  # (T, T)
        weights = torch.softmax(scores.masked_fill(future, -torch.inf) / keys.shape[-1] ** 0.5, dim=-1)  # (T, T)
    return np.where(future.numpy(), np.nan, weights.numpy())


def causal_context(inputs: Inputs, seed: int | None = None) -> np.ndarray:
    x = inputs.embeddings()  # (T, d_in)
    seed = inputs.seed if seed is None else seed
    ca = _seeded(attention.CausalAttention, seed, x.shape[1], inputs.d_out, inputs.context_length, 0.0)
    with torch.no_grad():
        return ca(x.unsqueeze(0))[0].numpy()  # (T, d_out)


def multihead_output(inputs: Inputs) -> np.ndarray:
    x = inputs.embeddings()  # (T, d_in)
    mha = _seeded(
        attention.MultiHeadAttention,
        inputs.seed,
        x.shape[1],
        inputs.d_out,
        inputs.context_length,
        0.0,
        num_heads=inputs.num_heads,
    )
    with torch.no_grad():
        return mha(x.unsqueeze(0))[0].numpy()  # (T, d_out)


def simplified_weights(inputs: Inputs) -> np.ndarray:
    x = inputs.embeddings()  # (T, d_in)
    return torch.softmax(x @ x.T, dim=-1).numpy()  # (T, T)


def simplified_context(inputs: Inputs) -> np.ndarray:
    x = inputs.embeddings()  # (T, d_in)
    return (torch.softmax(x @ x.T, dim=-1) @ x).numpy()  # (T, d_in)


def self_attention_v1_output(inputs: Inputs) -> np.ndarray:
    x = inputs.embeddings()  # (T, d_in)
    sa_v1 = _seeded(attention.SelfAttention_v1, inputs.seed, x.shape[1], inputs.d_out)
    with torch.no_grad():
        return sa_v1(x).numpy()  # (T, d_out)


@dataclass(frozen=True)
class Known:
    """A heatmap identified by its title, the package's value for it, and the book's printed first row."""

    title: str  # regular expression on the heatmap's title
    compute: Callable[[Inputs], np.ndarray]
    book_first_row: tuple[float, ...] | None = None  # with the default settings
    step: str = ""  # regular expression on the step's name, where the title alone is ambiguous


# page stem -> heatmaps that must equal what the package computes directly; each must appear on its page.
KNOWN_FIGURES = {
    "tokens": [Known(r"^Input embeddings", lambda i: i.embeddings().numpy(), (0.43, 0.15, 0.89))],
    "simplified": [
        Known(r"^attn_weights$", simplified_weights),
        Known(r"^all_context_vecs = attn_weights @ inputs$", simplified_context, (0.4421, 0.5931, 0.5790)),
    ],
    "qkv": [Known(r"^context_vec = attn_weights @ values$", self_attention_v1_output, (0.2996, 0.8053))],
    "causal_mask": [
        Known(r"^attn_weights = softmax\(masked / √d_k\)$", lambda i: causal_weights(i, causal_page_seed(i))),
        Known(r"^context_vec, shape", lambda i: causal_context(i, causal_page_seed(i))),
    ],
    "batches": [
        Known(r"^batch\[\d\]: copy \d · \(\d+, \d+\)$", causal_context, (-0.4519, 0.2216), step="^Context vectors$")
    ],
    "multihead": [Known(r"(^|\s)output \(\d+, \d+\)$", multihead_output, (0.3190, 0.4858))],
}


def check_known_figures(stem: str, step: str, plots: list[Plot], inputs: Inputs, seen: set[str]) -> None:
    """Heatmaps with a known title (on the step named ``step``) equal what the package computes directly."""
    for known in KNOWN_FIGURES.get(stem, []):
        if not re.search(known.step, step):
            continue
        for plot in plots:
            for trace in plot.heatmaps():
                if not re.search(known.title, trace["title"]):
                    continue
                where = f"{stem}: {trace['title']}"
                np.testing.assert_allclose(trace["z"], known.compute(inputs), atol=1e-6, rtol=1e-5, err_msg=where)
                if inputs == Inputs() and known.book_first_row is not None:
                    np.testing.assert_allclose(trace["z"][0], known.book_first_row, atol=5e-5, err_msg=where)
                seen.add(known.title)
