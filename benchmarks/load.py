"""Load benchmark: many students on one Attention Explorer server, or on several behind nginx.

Each simulated student is a lightweight client that speaks Streamlit's own
websocket protocol (``/_stcore/stream``, protobuf ``BackMsg``/``ForwardMsg``),
so the machine's time goes to the server rather than to browsers. A student
opens the heaviest page with a sentence of their own (the link a browser would
open), then repeatedly types a new sentence into the sidebar and waits until
the page has been redrawn, thinking for a random time (exponential, mean 3 s)
between edits.

Usage (the commands behind the "Load" section of BENCHMARKS.md)::

    python benchmarks/load.py pages                      # time every page and step with one student
    python benchmarks/load.py classroom --students 1,30,100 --duration 60 --modes default,nofreeze,nogc
    python benchmarks/load.py burst --students 30,100 --waves 3 --modes default,nofreeze,nogc
    python benchmarks/load.py soak --students 30 --duration 600 --modes default
    python benchmarks/load.py report --markdown BENCHMARKS.md   # tables from artifacts/load/results.jsonl

Issue 15's lessons, with browser-like students (``BrowserStudent``: every widget's state with each
request, stepper clicks in their fragment, a browser's message cache)::

    python benchmarks/load.py class --students 1,100 --servers 1,2 --duration 120
    python benchmarks/load.py typing --students 1,30 --servers 1,2 --duration 120
    python benchmarks/load.py typing --students 30 --duration 600      # the soak: RSS slope

``class``: each action is a stepper click (60%: Next, or Previous once Next is disabled at the last
step, and Next again from step 1), a page switch (20%: to another chapter page, not Speed and not
"Break it", ``LEFT_OUT_PAGES``) or a new sentence (20%: picked from ``CLASS_SENTENCES``, ten sentences
of 6-40 GPT-2 tokens that the whole class shares, as from the teacher's slides). ``typing``: every
action is a sentence of the student's own (``typed_sentence``, never typed before: every cache
misses). Students open the class's link (``--page`` with the first pool sentence) at random times
over ``--spread`` seconds, then think (exponential, mean ``--think``) before each action, until
``--duration`` seconds after the first arrival. ``--servers 1`` is ``streamlit run streamlit_app.py``
(``launch.AppServer``), students connecting directly; ``--servers N`` (N > 1) is N such processes
behind nginx (``deploy/run_cluster.py``), each student with its own sticky-session cookie. Both get
``MALLOC_ARENA_MAX`` (``--arena-max``, 2 as deployed; 0 leaves it unset). Reported per action kind
(open, next, previous, switch, sentence) and over all actions but opening: p50/p95/max latency (from
the request to its ``script_finished``, fragment runs included), errors (exception or error element,
stale sidebar or stepper, wrong page, timeout, dropped connection), throughput, the CPU (cores and ms
per run) and RSS of every app process and nginx, and the client's own CPU.

RSS is reported as a straight line through every 1-s sample (whole run and second half) and as its
*floor* slope: the line through each minute's lowest sample (``floor_slope_mib_per_min``), which runs in
flight tilt less. It is a diagnostic, not the number to judge by: it depends on how often RSS is sampled
(one soak gave -0.15 MiB a minute from 1-s samples and +2.88 from 10-s ones). With ``--memory-log`` (one
server) the server runs under ``serve.py --memory-log``, the same Streamlit server sampling its own
memory by kind every ``--memory-every`` seconds: glibc's arenas (in use, free), CPython's arenas, the
shared caches' entries and bytes (``SHARED``, ``FIGURES``), sessions, download callables; each field's
trend over the run is printed and kept in the JSON line (``server_memory``), so that a cache filling to
its cap, a leak and the allocator's free memory can be told apart. ``--malloc-trim S`` (one server)
calls ``malloc_trim(0)`` every S seconds in the server, an experiment (``serve.py``)::

    python benchmarks/load.py typing --students 30 --duration 600 --memory-log

Every scenario starts its own server (``launch.AppServer`` under
``benchmarks/serve.py``, which is ``streamlit run streamlit_app.py`` plus
measuring options) on a free port, warms it up by opening every page once, runs, and appends one JSON line
to ``artifacts/load/results.jsonl``. Server modes (``--modes``):

* ``default``: the app as shipped: Streamlit's full ``gc.collect(2)`` after every
  script run (``runner.postScriptGC``, on unless turned off), and the app's
  ``gc.freeze()`` once its imports are done (``explorer/ui.py``).
* ``nofreeze``: the app's ``gc.freeze()`` skipped (``serve.py --no-app-freeze``),
  as the app was before it had one.
* ``nogc``: ``--runner.postScriptGC false``.
* ``slotsK`` (K = 1, 2, ...): at most K script runs at a time; the others
  wait for a slot instead of sharing the GIL (``serve.py --run-slots``).
* Parts combine with ``+``: ``nogc+nofreeze``, ``default+slots1``.

What a measurement is:

* **latency**: from sending the ``rerun_script`` BackMsg (the sentence's new
  widget value) to the ``script_finished`` ForwardMsg that ends that run,
  everything the page draws having arrived before it.
* **throughput**: page runs finished per second, during the timed window.
* **errors**: an exception element, an error box, a script that failed to
  compile, a run whose sidebar does not show the sentence sent (stale), a run
  that timed out, or a dropped connection.
* **RSS**: the server process's ``VmRSS``, sampled every second.
* **CPU**: the server's user+system CPU time per run; "other load" is the CPU
  every other process on the machine used during the scenario, in cores.
* **GC**: collections and the time spent in them, per generation, counted in
  the server by ``gc.callbacks``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import re
import signal
import statistics
import sys
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.launch import AppServer  # noqa: E402 (after the path is set)

RESULTS = os.path.join(ROOT, "artifacts", "load", "results.jsonl")
TEXT_WIDGET_KEY = "w_text"  # the sidebar's sentence (explorer/state.py)
RUN_TIMEOUT_S = 300.0
FINISHED_EARLY_FOR_RERUN = ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN
FINISHED_WITH_COMPILE_ERROR = ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR
FINISHED_SUCCESSFULLY = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY
MAX_CACHED_HASHES = 500
SCAN_PAUSE_S = 1.0
STEP_RE = re.compile(r"Step (\d+) of (\d+)")
WIDGET_ID_RE = re.compile(r"^\$\$ID-[0-9a-f]+-(.+)$")  # a keyed widget's id: "$$ID-<hash>-<key>"

_PROSE = (
    "the a student reads every word of this long sentence about attention while her friend writes code on "
    "an old laptop near window morning light falls across desk and teacher asks why softmax makes each row "
    "sum to one because weights must share probability between tokens that came before so query looks at "
    "keys values heads mask future context vector grows small large quickly slowly bright quiet river "
    "mountain city garden music paper pencil coffee rain snow summer winter green blue red yellow cat dog "
    "bird fish tree flower house school library train station bridge story question answer idea number "
    "matrix column row dot product scale learn model layer input output embedding token journey starts "
    "with one step"
)
WORDS = tuple(_PROSE.split())


# --------------------------------------------------------------------------- protocol


def rerun_message(
    *,
    query_string: str = "",
    page_name: str = "",
    page_script_hash: str = "",
    strings: dict[str, str] | None = None,
    ints: dict[str, int] | None = None,
    cached_hashes: list[str] | tuple[str, ...] = (),
    url: str = "",
) -> bytes:
    """A ``BackMsg`` asking for a script run, serialized as a browser sends it.

    ``page_name`` is the page's URL path (a link's first request);
    ``page_script_hash`` the page the session is on (every later request).
    ``strings`` and ``ints`` map widget ids to new values (a text input's
    ``string_value``, an integer number input's ``int_value``); widgets not
    named keep the values the session already holds.
    """
    msg = BackMsg()
    state = msg.rerun_script
    state.query_string = query_string
    state.page_name = page_name
    state.page_script_hash = page_script_hash
    for widget_id, value in (strings or {}).items():
        widget = state.widget_states.widgets.add()
        widget.id = widget_id
        widget.string_value = value
    for widget_id, number in (ints or {}).items():
        widget = state.widget_states.widgets.add()
        widget.id = widget_id
        widget.int_value = number
    state.cached_message_hashes.extend(cached_hashes)
    if url:
        state.context_info.url = url
        state.context_info.timezone = "UTC"
        state.context_info.locale = "en-US"
    return msg.SerializeToString()


@dataclass
class Reply:
    """What one ``ForwardMsg`` means to a student."""

    kind: str  # the ForwardMsg's type
    finished: int | None = None  # script_finished status
    final: bool = False  # ends the run (any script_finished but "finished early for a rerun")
    page_script_hash: str | None = None  # the page this run shows (from the navigation message)
    page_url: str | None = None  # and its URL path ("" for the default page)
    pages: list[tuple[str, str]] | None = None  # every page of the app: (URL path, title)
    query_string: str | None = None
    widget: tuple[str, str, object] | None = None  # (widget key, id, value the server set, or None)
    error: str | None = None
    warning: str | None = None
    notice: str | None = None  # an info box (the app's "this value was changed" notices)
    markdown: str | None = None
    chart: bool = False  # a new plotly chart
    cache_hash: str | None = None  # a message the client may cache (a browser's ForwardMsgCache)
    ref_hash: str | None = None  # the server points at a message the client said it had cached
    page_hashes: dict[str, str] | None = None  # URL path -> page script hash (from the navigation message)
    state: tuple[str, str, object, bool] | None = None  # a widget: (id, WidgetState field, value, set by server)
    button: tuple[str, str, bool] | None = None  # a keyed button: (key, id, disabled)
    fragment_id: str = ""  # the fragment an element was drawn in ("" outside any)
    step: tuple[int, int] | None = None  # the stepper's "Step k of n"
    max_cached_age: int | None = None  # global.maxCachedMessageAge, from the new session's config


def widget_state(element) -> tuple[str, str, object, bool] | None:
    """(id, WidgetState field, value, set by the server) of a widget element, the value as a browser that has
    touched nothing holds it; None for an element that is not a widget with a state."""
    kind = element.WhichOneof("type")
    w = getattr(element, kind) if kind else None
    if kind in ("text_input", "text_area"):
        return w.id, "string_value", w.value if w.set_value else w.default, w.set_value
    if kind == "number_input":
        return w.id, "double_value", w.value if w.set_value else w.default, w.set_value
    if kind == "checkbox":  # st.toggle too
        return w.id, "bool_value", w.value if w.set_value else w.default, w.set_value
    if kind in ("radio", "selectbox"):  # Streamlit 1.67 sends the option's string
        if w.set_value:
            return w.id, "string_value", w.raw_value, True
        return (w.id, "string_value", w.options[w.default], False) if w.HasField("default") else None
    if kind == "slider" and not w.options:
        return w.id, "double_array_value", list(w.value if w.set_value else w.default), w.set_value
    if kind == "button_group":  # st.segmented_control, st.pills
        chosen = list(w.raw_values) if w.set_value else [w.options[i].content for i in w.default]
        return w.id, "string_array_value", chosen, w.set_value
    return None


def read_reply(data: bytes) -> Reply:
    """What a student needs from one ``ForwardMsg``: one parse, and only the fields read below."""
    msg = ForwardMsg.FromString(data)
    kind = msg.WhichOneof("type") or ""
    reply = Reply(kind)
    if msg.metadata.cacheable and msg.hash:
        reply.cache_hash = msg.hash
    if kind == "ref_hash":
        reply.ref_hash = msg.ref_hash
    elif kind == "new_session":
        reply.max_cached_age = msg.new_session.config.max_cached_message_age
    if kind == "script_finished":
        reply.finished = msg.script_finished
        reply.final = msg.script_finished != FINISHED_EARLY_FOR_RERUN
        if msg.script_finished == FINISHED_WITH_COMPILE_ERROR:
            reply.error = "script failed to compile"
    elif kind == "navigation":
        reply.page_script_hash = msg.navigation.page_script_hash
        reply.pages, reply.page_hashes = [], {}
        for page in msg.navigation.app_pages:
            if page.page_script_hash == msg.navigation.page_script_hash:
                reply.page_url = page.url_pathname
            if not page.external_url:
                reply.pages.append((page.url_pathname, page.page_name))
                reply.page_hashes[page.url_pathname] = page.page_script_hash
    elif kind == "page_info_changed":
        reply.query_string = msg.page_info_changed.query_string
    elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        etype = element.WhichOneof("type")
        reply.fragment_id = msg.delta.fragment_id
        if etype == "exception":
            reply.error = f"exception: {element.exception.type}: {element.exception.message[:120]}"
        elif etype == "alert" and element.alert.format == Alert.ERROR:
            reply.error = f"error box: {element.alert.body[:120]}"
        elif etype == "alert" and element.alert.format == Alert.WARNING:
            reply.warning = element.alert.body[:120]
        elif etype == "alert" and element.alert.format == Alert.INFO:
            reply.notice = element.alert.body[:160]
        elif etype == "markdown":
            reply.markdown = element.markdown.body
            if match := STEP_RE.search(reply.markdown):
                reply.step = (int(match.group(1)), int(match.group(2)))
        elif etype == "plotly_chart":
            reply.chart = True
        elif etype == "button":
            if match := WIDGET_ID_RE.match(element.button.id):
                reply.button = (match.group(1), element.button.id, element.button.disabled)
        else:
            reply.state = widget_state(element)
            if etype in ("text_input", "number_input"):
                widget = getattr(element, etype)
                value = widget.value if widget.HasField("value") else None
                if match := WIDGET_ID_RE.match(widget.id):
                    reply.widget = (match.group(1), widget.id, value)
    return reply


@dataclass
class Run:
    kind: str  # "open" or "edit"
    sent: float  # time.perf_counter() when the BackMsg left
    latency: float = float("nan")
    ok: bool = False
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    messages: int = 0
    bytes: int = 0
    charts: int = 0
    where: str = ""  # the page and step shown after the run (lessons), e.g. "multihead 3/7"

    @property
    def done(self) -> float:
        return self.sent + self.latency


class Student:
    """One browser tab, reduced to the protocol: a session on one page of the app."""

    def __init__(self, base: str) -> None:
        self.base = base  # http://127.0.0.1:PORT
        self.ws = None
        self.page_script_hash = ""
        self.query_string = ""
        self.page = ""
        self.widget_ids: dict[str, str] = {}  # widget key -> id, as the server named them
        self.cached: dict[str, None] = {}  # insertion-ordered set of cached message hashes
        self.steps: int | None = None
        self.app_pages: list[tuple[str, str]] = []
        self.timeout_s = RUN_TIMEOUT_S  # a run that takes longer is an error

    async def connect(self) -> None:
        url = self.base.replace("http", "ws", 1) + "/_stcore/stream"
        self.ws = await websockets.connect(url, subprotocols=["streamlit"], max_size=None, ping_interval=None)

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()

    async def open(self, page: str, query: dict[str, str]) -> Run:
        """Open a link to ``page`` (a new tab): the first run of a new session."""
        self.page = page
        self.query_string = urllib.parse.urlencode(query)
        message = rerun_message(
            query_string=self.query_string,
            page_name=page,
            url=f"{self.base}/{page}?{self.query_string}",
            cached_hashes=list(self.cached),
        )
        return await self._run("open", message, expect_text=query.get("text"), exact=False)

    async def edit(self, text: str, **numbers: int) -> Run:
        """Type ``text`` into the sidebar's sentence and press Enter; ``numbers`` sets number inputs by key too."""
        if TEXT_WIDGET_KEY not in self.widget_ids:
            raise RuntimeError("the sentence widget has not been seen yet")
        message = rerun_message(
            query_string=self.query_string,
            page_script_hash=self.page_script_hash,
            strings={self.widget_ids[TEXT_WIDGET_KEY]: text},
            ints={self.widget_ids[key]: value for key, value in numbers.items()},
            url=f"{self.base}/{self.page}?{self.query_string}",
            cached_hashes=list(self.cached),
        )
        return await self._run("edit", message, expect_text=text)

    async def _run(self, kind: str, message: bytes, expect_text: str | None, exact: bool = True) -> Run:
        """Send ``message`` and read until the run ends. The sidebar must then show ``expect_text``
        (or, with ``exact=False``, a beginning of it: a link's text is cut at 2,000 characters)."""
        run = Run(kind, time.perf_counter())
        seen: dict[str, str | None] = {}

        async def receive() -> None:
            while True:
                data = await self.ws.recv()
                run.messages += 1
                run.bytes += len(data)
                reply = read_reply(data)
                self.note(reply, run, seen)
                if reply.final:
                    return

        try:
            await self.ws.send(message)
            await asyncio.wait_for(receive(), self.timeout_s)
        except asyncio.TimeoutError:
            run.error = f"timeout after {self.timeout_s:.0f} s"
        except websockets.ConnectionClosed as exc:
            run.error = f"connection closed: {exc}"
        run.latency = time.perf_counter() - run.sent
        seen_text = seen.get("text")
        shown = seen.get("page")
        if run.error is None and shown not in (None, self.page):
            run.error = f"wrong page: {shown!r} instead of {self.page!r}"
        if run.error is None and expect_text is not None and isinstance(seen_text, str):
            shows_it = seen_text == expect_text if exact else expect_text.startswith(seen_text)
            if not shows_it:
                run.error = "stale: the sidebar does not show the sentence sent"
        run.ok = run.error is None
        return run

    def note(self, reply: Reply, run: Run, seen: dict[str, str | None]) -> None:
        """Take in one reply of ``run``: what the page now shows, and what went wrong."""
        run.charts += reply.chart
        if reply.cache_hash:
            self.cached[reply.cache_hash] = None
            while len(self.cached) > MAX_CACHED_HASHES:
                self.cached.pop(next(iter(self.cached)))
        if reply.page_script_hash:
            self.page_script_hash = reply.page_script_hash
            seen["page"] = reply.page_url
            self.app_pages = reply.pages or self.app_pages
        if reply.query_string is not None:
            self.query_string = reply.query_string
        if reply.widget:
            self.widget_ids[reply.widget[0]] = reply.widget[1]
            if reply.widget[0] == TEXT_WIDGET_KEY:
                seen["text"] = reply.widget[2]
        if reply.markdown and self.steps is None and (match := STEP_RE.search(reply.markdown)):
            self.steps = int(match.group(2))
        if reply.warning:
            run.warnings.append(reply.warning)
        if reply.notice:
            run.notices.append(reply.notice)
        if reply.error and run.error is None:
            run.error = reply.error


class BrowserStudent(Student):
    """A ``Student`` that, like a browser tab, sends every widget's state with each rerun request.

    It keeps the value a browser would hold for every widget the server draws (``widget_state``) and
    forgets the widgets a full run no longer draws; it learns keyed buttons (the stepper's Next and
    Previous) with the fragment they are drawn in, to press them as a click does; and it keeps a
    browser's message cache: messages the server marks cacheable, for ``global.maxCachedMessageAge``
    finished runs since last used, their hashes sent with each request and a ``ref_hash`` reply read
    from it. Without every widget's state, a page switch fails (``st.session_state has no key``).
    """

    def __init__(self, base: str, cookie: str | None = None) -> None:
        super().__init__(base)
        self.cookie = cookie  # "name=value" sent when connecting (nginx's sticky-session cookie)
        self.upstream = ""
        self.states: dict[str, tuple[str, object]] = {}  # widget id -> (WidgetState field, value)
        self.buttons: dict[str, tuple[str, str, bool]] = {}  # key -> (id, fragment id, disabled)
        self.page_hashes: dict[str, str] = {}  # URL path -> page script hash
        self.step: tuple[int, int] | None = None  # the stepper's (k, n) as last drawn
        self.message_cache: dict[str, tuple[Reply, int]] = {}  # hash -> (what it said, finished runs when used)
        self.max_cached_age = 2  # Streamlit's default; the server's new_session message says
        self.finished_runs = 0
        self._drawn: set[str] = set()  # widget ids drawn in the run being read

    async def connect(self) -> None:
        url = self.base.replace("http", "ws", 1) + "/_stcore/stream"
        headers = {"Cookie": self.cookie} if self.cookie else None
        self.ws = await websockets.connect(
            url, subprotocols=["streamlit"], max_size=None, ping_interval=None, additional_headers=headers
        )
        self.upstream = self.ws.response.headers.get("X-Upstream", "")  # the app process nginx chose

    def observe(self, data: bytes) -> None:
        """Take in one ``ForwardMsg`` outside a timed run."""
        self.note(read_reply(data), Run("observe", time.perf_counter()), {})

    def note(self, reply: Reply, run: Run, seen: dict[str, str | None]) -> None:
        if reply.ref_hash is not None:
            cached = self.message_cache.get(reply.ref_hash)
            if cached is None:
                run.error = run.error or "the server referred to a message the client does not hold"
                return
            self.message_cache[reply.ref_hash] = (cached[0], self.finished_runs)
            reply = cached[0]
        elif reply.cache_hash:
            self.message_cache[reply.cache_hash] = (reply, self.finished_runs)
        super().note(reply, run, seen)
        if reply.max_cached_age is not None:
            self.max_cached_age = reply.max_cached_age
        if reply.page_hashes:
            self.page_hashes = reply.page_hashes
        if reply.step:
            self.step = reply.step
        if reply.state:
            widget_id, field_name, value, set_by_server = reply.state
            self._drawn.add(widget_id)
            if set_by_server or widget_id not in self.states:
                self.states[widget_id] = (field_name, value)
        if reply.button:
            key, widget_id, disabled = reply.button
            self._drawn.add(widget_id)
            self.buttons[key] = (widget_id, reply.fragment_id, disabled)
            self.widget_ids[key] = widget_id
        if reply.final:
            self._finished(reply.finished)

    def _finished(self, status: int) -> None:
        """A run ended: age the message cache, and after a full run forget the widgets it did not draw."""
        self.finished_runs += 1
        self.message_cache = {
            h: (r, used)
            for h, (r, used) in self.message_cache.items()
            if self.finished_runs - used <= self.max_cached_age
        }
        if status == FINISHED_SUCCESSFULLY:
            self.states = {i: v for i, v in self.states.items() if i in self._drawn}
            self.buttons = {k: v for k, v in self.buttons.items() if v[0] in self._drawn}
        self._drawn = set()

    def message(self, *, page: str | None = None, text: str | None = None, click: str | None = None) -> bytes:
        """A rerun request with every widget's state: switching to ``page``, with a new ``text``, or a ``click``
        on the keyed button ``click`` (in its fragment, as a browser sends it)."""
        if text is not None:
            self.states[self.widget_ids[TEXT_WIDGET_KEY]] = ("string_value", text)
        if page is None:
            url = f"{self.base}/{self.page}?{self.query_string}"
            msg = BackMsg.FromString(
                rerun_message(query_string=self.query_string, page_script_hash=self.page_script_hash, url=url)
            )
        elif page in self.page_hashes:
            msg = BackMsg.FromString(rerun_message(page_script_hash=self.page_hashes[page], url=f"{self.base}/{page}"))
        else:
            msg = BackMsg.FromString(rerun_message(page_name=page, url=f"{self.base}/{page}"))
        widgets = msg.rerun_script.widget_states.widgets
        for widget_id, (field_name, value) in self.states.items():
            widget = widgets.add()
            widget.id = widget_id
            if field_name.endswith("_array_value"):
                getattr(widget, field_name).data.extend(value)
            else:
                setattr(widget, field_name, value)
        if click is not None:
            widget = widgets.add()
            widget.id, fragment = self.widget_ids[click], self.buttons.get(click, ("", "", False))[1]
            widget.trigger_value = True
            if fragment:
                msg.rerun_script.fragment_id = fragment
        msg.rerun_script.cached_message_hashes.extend(self.message_cache)
        return msg.SerializeToString()


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(10, 20))
    return " ".join(words).capitalize() + "."


# --------------------------------------------------------------------------- the server


TICK = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / TICK


def loadavg() -> float:
    return os.getloadavg()[0]


def parse_mode(mode: str) -> dict:
    parts = set(mode.split("+"))
    slots = [p for p in parts if re.fullmatch(r"slots\d+", p)]
    unknown = parts - {"default", "nogc", "nofreeze", *slots}
    if unknown or len(slots) > 1:
        raise SystemExit(f"unknown mode part(s): {sorted(unknown or slots)}")
    return {
        "post_script_gc": "nogc" not in parts,
        "app_freeze": "nofreeze" not in parts,
        "run_slots": int(slots[0][5:]) if slots else None,
    }


class Server(AppServer):
    """The app under ``serve.py``, in one of the modes, counting its garbage collections."""

    def __init__(self, mode: str, log_path: str) -> None:
        self.mode, self.options = mode, parse_mode(mode)
        self.stats_path = log_path + ".gc.json"
        serve = ["--stats", self.stats_path]
        if not self.options["app_freeze"]:
            serve.append("--no-app-freeze")
        if self.options["run_slots"]:
            serve += ["--run-slots", str(self.options["run_slots"])]
        post_script_gc = "true" if self.options["post_script_gc"] else "false"
        super().__init__(
            log=Path(log_path), serve_options=serve, streamlit_options=("--runner.postScriptGC", post_script_gc)
        )
        self.pages: list[str] = []  # URL paths, "" for the default page (from warm_up)
        self.titles: dict[str, str] = {}

    async def gc_stats(self) -> dict | None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.stats_path)
        self.proc.send_signal(signal.SIGUSR2)
        for _ in range(100):
            await asyncio.sleep(0.1)
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError), open(self.stats_path) as f:
                return json.load(f)
        return None


async def warm(base: str) -> tuple[list[Run], list[tuple[str, str]]]:
    """Open every page of the server at ``base`` once and edit its sentence once, so the imports and first runs
    are behind us; returns the runs and the app's pages (URL path, title), read from the first run's navigation."""
    rng = random.Random(0)
    runs = []
    first = Student(base)
    await first.connect()
    runs.append(await first.open("", {"input": "text", "text": sentence(rng)}))
    if runs[0].error:
        raise RuntimeError(f"the app's first page failed at {base}: {runs[0].error}")
    runs.append(await first.edit(sentence(rng)))
    await first.close()
    for page, _ in first.app_pages:
        if page == "":
            continue
        student = Student(base)
        await student.connect()
        runs.append(await student.open(page, {"input": "text", "text": sentence(rng)}))
        runs.append(await student.edit(sentence(rng)))
        await student.close()
    return runs, first.app_pages


async def warm_up(server: Server) -> list[Run]:
    """``warm`` the server, keeping its pages in ``server.pages`` (URL paths, "" for the default page)."""
    runs, app_pages = await warm(server.base)
    server.pages = [path for path, _ in app_pages]
    server.titles = dict(app_pages)
    return runs


# --------------------------------------------------------------------------- statistics


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def summarize(runs: list[Run]) -> dict:
    latencies = [r.latency for r in runs if r.ok]
    errors: dict[str, int] = {}
    for r in runs:
        if r.error:
            errors[r.error] = errors.get(r.error, 0) + 1
    warnings: dict[str, int] = {}
    for r in runs:
        for w in r.warnings:
            warnings[w] = warnings.get(w, 0) + 1
    return {
        "runs": len(runs),
        "ok": len(latencies),
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "warning_kinds": warnings,
        "p50_s": percentile(latencies, 50),
        "p95_s": percentile(latencies, 95),
        "max_s": max(latencies) if latencies else float("nan"),
        "mean_s": statistics.fmean(latencies) if latencies else float("nan"),
        "kib_per_run": statistics.fmean(r.bytes for r in runs) / 1024 if runs else float("nan"),
    }


def slope_mib_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) samples, in MiB per minute."""
    if len(samples) < 3:
        return float("nan")
    xs, ys = [s[0] for s in samples], [s[1] for s in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else float("nan")


def floor_slope_mib_per_min(samples: list[tuple[float, float]], window_s: float = 60.0) -> float:
    """Least-squares slope, per minute, through the lowest sample of each whole ``window_s`` window.

    What a server holds for good is its floor; runs in flight lift the samples above it by what they hold
    for the moment (tens of MiB with 30 students), and a straight line through every sample then tilts with
    whatever happened to be running near the ends. The floor grows only if what is kept grows."""
    if not samples:
        return float("nan")
    first = samples[0][0]
    windows: dict[int, list[tuple[float, float]]] = {}
    for t, value in samples:
        windows.setdefault(int((t - first) // window_s), []).append((t, value))
    lows = [  # a window counts when its samples span most of it (not the run's last few seconds)
        (first + (k + 0.5) * window_s, min(v for _, v in w))
        for k, w in sorted(windows.items())
        if w[-1][0] - w[0][0] >= 0.75 * window_s
    ]
    return slope_mib_per_min(lows)


def family(pid: int) -> list[int]:
    """``pid`` and its children's pids."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
        return [pid, *(int(child) for child in f.read().split())]
    return [pid]


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its living children (nginx's worker), 0 once it is gone."""
    total = 0.0
    for one in family(pid):
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{one}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def process_rss_mib(pid: int, field: str = "VmRSS") -> float:
    """``VmRSS`` (or another field of ``/proc/PID/status``, e.g. ``RssAnon``: the process's own memory, not the
    files it maps) of process ``pid`` and its living children, in MiB."""
    total = 0
    for one in family(pid):
        with contextlib.suppress(OSError), open(f"/proc/{one}/status") as f:
            total += next((int(line.split()[1]) for line in f if line.startswith(field + ":")), 0)
    return total / 1024


class Meter:
    """Server RSS every ``every`` seconds, and CPU accounting between start and stop.

    The server's figures are ``server.cpu_s()`` and ``server.rss_mib()`` (every app process together).
    When the server has ``processes()`` (name -> pid: the app processes and nginx), each is
    measured on its own too; with ``gc_stats()`` (``serve.py --stats``), its collections are counted.
    The client's CPU is this process's.
    """

    def __init__(self, server, every: float = 1.0) -> None:
        self.server = server
        self.every = every
        self.samples: list[tuple[float, float]] = []
        self.procs: dict[str, int] = server.processes() if hasattr(server, "processes") else {}
        self.proc_samples: dict[str, list[tuple[float, float]]] = {name: [] for name in self.procs}
        self.anon_samples: dict[str, list[tuple[float, float]]] = {name: [] for name in self.procs}
        self._task = None

    async def _gc_stats(self) -> dict | None:
        return await self.server.gc_stats() if hasattr(self.server, "gc_stats") else None

    async def __aenter__(self):
        self.t0 = time.perf_counter()
        self.load_start = loadavg()
        self.cpu0 = self.server.cpu_s()
        self.proc_cpu0 = {name: process_cpu_s(pid) for name, pid in self.procs.items()}
        self.self0 = sum(os.times()[:2])
        self.busy0 = machine_busy_s()
        self.gc0 = await self._gc_stats()
        self._task = asyncio.create_task(self._sample())
        return self

    def _take_sample(self) -> None:
        now = time.perf_counter() - self.t0
        self.samples.append((now, self.server.rss_mib()))
        for name, pid in self.procs.items():
            self.proc_samples[name].append((now, process_rss_mib(pid)))
            self.anon_samples[name].append((now, process_rss_mib(pid, "RssAnon")))

    async def _sample(self) -> None:
        while True:
            self._take_sample()
            await asyncio.sleep(self.every)

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._take_sample()
        self.elapsed = time.perf_counter() - self.t0
        self.server_cpu = self.server.cpu_s() - self.cpu0
        self.proc_cpu = {name: process_cpu_s(pid) - self.proc_cpu0[name] for name, pid in self.procs.items()}
        self.client_cpu = sum(os.times()[:2]) - self.self0
        measured = sum(self.proc_cpu.values()) if self.procs else self.server_cpu
        self.other_cores = max(0.0, (machine_busy_s() - self.busy0 - measured - self.client_cpu) / self.elapsed)
        self.load_end = loadavg()
        self.gc1 = await self._gc_stats()

    def report(self, runs: int) -> dict:
        rss = [s[1] for s in self.samples]
        gc = {}
        if self.gc0 and self.gc1:
            generations = [(self.gc0["generations"][g], self.gc1["generations"][g]) for g in "012"]
            gc = {
                "collections": [b["collections"] - a["collections"] for a, b in generations],
                "max_pause_s": self.gc1["generations"]["2"]["max_seconds"],
                "tracked_objects": self.gc1["tracked"],
                "frozen_objects": self.gc1["frozen"],
            }
            for key, field_name in (("gc_ms_per_run", "seconds"), ("gc_cpu_ms_per_run", "cpu_seconds")):
                gc[key] = 1000 * sum(b[field_name] - a[field_name] for a, b in generations) / max(runs, 1)
        processes = {}
        for name, samples in self.proc_samples.items():
            values = [s[1] for s in samples]
            processes[name] = {
                "cpu_s": self.proc_cpu[name],
                "cpu_cores": self.proc_cpu[name] / self.elapsed,
                "rss_start_mib": values[0],
                "rss_end_mib": values[-1],
                "rss_max_mib": max(values),
                "rss_slope_mib_per_min": slope_mib_per_min(samples),
                "rss_slope_second_half_mib_per_min": slope_mib_per_min(
                    [x for x in samples if x[0] >= self.elapsed / 2]
                ),
                "anon_start_mib": self.anon_samples[name][0][1],
                "anon_end_mib": self.anon_samples[name][-1][1],
                "anon_slope_mib_per_min": slope_mib_per_min(self.anon_samples[name]),
                "rss_floor_slope_mib_per_min": floor_slope_mib_per_min(samples),
            }
        return {
            "elapsed_s": self.elapsed,
            "rss_start_mib": rss[0],
            "rss_end_mib": rss[-1],
            "rss_max_mib": max(rss),
            "rss_slope_mib_per_min": slope_mib_per_min(self.samples),
            "rss_slope_second_half_mib_per_min": slope_mib_per_min(
                [x for x in self.samples if x[0] >= self.elapsed / 2]
            ),
            "rss_floor_slope_mib_per_min": floor_slope_mib_per_min(self.samples),
            "rss_floor_slope_after_2_min_mib_per_min": floor_slope_mib_per_min(
                [x for x in self.samples if x[0] >= 120]
            ),
            "server_cpu_s": self.server_cpu,
            "server_cpu_cores": self.server_cpu / self.elapsed,
            "server_cpu_ms_per_run": 1000 * self.server_cpu / runs if runs else float("nan"),
            "client_cpu_s": self.client_cpu,
            "client_cpu_cores": self.client_cpu / self.elapsed,
            "client_cpu_ms_per_run": 1000 * self.client_cpu / runs if runs else float("nan"),
            "other_load_cores": self.other_cores,
            "loadavg_start": self.load_start,
            "loadavg_end": self.load_end,
            "processes": processes,
            "gc": gc,
        }


# --------------------------------------------------------------------------- scenarios


async def join(students: list[Student], page: str, step: int, rng: random.Random, spread_s: float) -> list[Run]:
    """Every student opens the page with a sentence of their own, arriving over ``spread_s`` seconds."""

    async def one(student: Student, delay: float) -> Run:
        await asyncio.sleep(delay)
        await student.connect()
        return await student.open(page, {"input": "text", "text": sentence(rng), "step": str(step)})

    return await asyncio.gather(*(one(s, rng.uniform(0, spread_s)) for s in students))


async def classroom(server: Server, n: int, duration: float, think_s: float, page: str, step: int, seed: int) -> dict:
    """``n`` students edit and think, for ``duration`` seconds."""
    rng = random.Random(seed)
    students = [Student(server.base) for _ in range(n)]
    joins = await join(students, page, step, rng, spread_s=min(10.0, 0.1 * n))
    runs: list[Run] = []
    async with Meter(server) as meter:
        start = time.perf_counter()
        end = start + duration

        async def student_loop(student: Student, own: random.Random) -> None:
            await asyncio.sleep(own.expovariate(1 / think_s))
            while time.perf_counter() < end:
                runs.append(await student.edit(sentence(own)))
                await asyncio.sleep(own.expovariate(1 / think_s))

        await asyncio.gather(*(student_loop(s, random.Random(seed * 1000 + i)) for i, s in enumerate(students)))
    finished = [r for r in runs if start <= r.done <= end]
    for s in students:
        await s.close()
    result = {
        "joins": summarize(joins),
        "edits": summarize(runs),
        "throughput_runs_per_s": len(finished) / duration,
        **meter.report(len(runs)),
    }
    result["rss_samples"] = meter.samples[:: max(1, int(10 / meter.every))]
    return result


async def burst(server: Server, n: int, waves: int, pause_s: float, page: str, step: int, seed: int) -> dict:
    rng = random.Random(seed)
    students = [Student(server.base) for _ in range(n)]
    joins = await join(students, page, step, rng, spread_s=min(10.0, 0.1 * n))
    wave_results = []
    all_runs: list[Run] = []
    async with Meter(server) as meter:
        for _ in range(waves):
            await asyncio.sleep(pause_s)
            texts = [sentence(rng) for _ in students]
            go = asyncio.Event()

            async def send(student: Student, text: str, go: asyncio.Event = go) -> Run:
                await go.wait()
                return await student.edit(text)

            tasks = [asyncio.create_task(send(s, t)) for s, t in zip(students, texts, strict=True)]
            await asyncio.sleep(0)
            fired = time.perf_counter()
            go.set()
            runs = await asyncio.gather(*tasks)
            span = max(r.done for r in runs) - fired
            wave_results.append({**summarize(runs), "span_s": span, "throughput_runs_per_s": n / span})
            all_runs.extend(runs)
    for s in students:
        await s.close()
    pooled = summarize(all_runs)
    return {
        "joins": summarize(joins),
        "edits": pooled,
        "waves": wave_results,
        "throughput_runs_per_s": statistics.fmean(w["throughput_runs_per_s"] for w in wave_results),
        **meter.report(len(all_runs)),
    }


async def pages_scan(server: Server, edits: int, seed: int) -> dict:
    """One student on each page and step: open it, edit once to warm up, then time ``edits`` edits.

    The heaviest page and step is the one whose runs cost the server the most
    CPU time; on a busy machine that is steadier than their latency. The
    student pauses ``SCAN_PAUSE_S`` after each run, as a student reading the
    page would, so each run's CPU time includes its own post-run collection
    and its latency does not include the previous run's.
    """
    rng = random.Random(seed)
    table = []
    load_start = loadavg()
    for page in server.pages:
        probe = Student(server.base)
        await probe.connect()
        await probe.open(page, {"input": "text", "text": sentence(rng)})
        steps = probe.steps or 1
        await probe.close()
        for step in range(1, steps + 1):
            student = Student(server.base)
            await student.connect()
            await student.open(page, {"input": "text", "text": sentence(rng), "step": str(step)})
            await student.edit(sentence(rng))
            runs = []
            await asyncio.sleep(SCAN_PAUSE_S)
            cpu0 = server.cpu_s()
            for _ in range(edits):
                runs.append(await student.edit(sentence(rng)))
                await asyncio.sleep(SCAN_PAUSE_S)  # the collection after the run is counted, and not in the next
            cpu = server.cpu_s() - cpu0  # an idle server uses next to no CPU in the pauses
            await student.close()
            row = {"page": page, "title": server.titles.get(page, ""), "step": step, "steps": steps, **summarize(runs)}
            row["server_cpu_ms_per_run"] = 1000 * cpu / edits
            table.append(row)
            print(
                f"  {page or '(default)':12s} step {step}/{steps}: p50 {row['p50_s'] * 1000:7.1f} ms, "
                f"cpu {row['server_cpu_ms_per_run']:6.1f} ms/run, {row['kib_per_run']:6.1f} KiB, "
                f"errors {row['errors']}",
                flush=True,
            )
    heaviest = max(table, key=lambda r: r["server_cpu_ms_per_run"])
    return {
        "table": table,
        "heaviest": {"page": heaviest["page"], "step": heaviest["step"]},
        "loadavg_start": load_start,
        "loadavg_end": loadavg(),
    }


# --------------------------------------------------------------------------- lessons: browser-like students


@dataclass(frozen=True)
class Mix:
    """How a student's actions divide: stepper clicks (Next or Previous), page switches, new sentences."""

    step: float
    switch: float
    sentence: float

    def pick(self, rng: random.Random) -> str:
        """One action, "step", "switch" or "sentence", with the mix's probabilities."""
        draw = rng.random() * (self.step + self.switch + self.sentence)
        if draw < self.step:
            return "step"
        return "switch" if draw < self.step + self.switch else "sentence"


MIXES = {"class": Mix(step=0.6, switch=0.2, sentence=0.2), "typing": Mix(step=0.0, switch=0.0, sentence=1.0)}
SLOWEST = 12  # the slowest actions a lesson's result lists, with the page and step they ended on
LEFT_OUT_PAGES = ("speed", "mistakes")  # not chapter pages: the Speed page's timing lab, and the "Break it" exercise
# What a class types: the sentences a teacher's slides and a class's chat would offer, 6-40 GPT-2 tokens.
CLASS_SENTENCES = (
    "Your journey starts with one step",
    "The cat sat on the mat because it was tired.",
    "Attention lets every word look back at the words that came before it.",
    "I went to the bank to sit by the river and watch the boats go by.",
    "The trophy did not fit in the suitcase because it was too big.",
    "A small language model reads a sentence one token at a time and guesses the next word.",
    "The teacher asked why softmax makes each row of weights sum to one, and nobody answered at first.",
    "Alice gave Bob the book she had borrowed from the library last week, and he promised to bring it back "
    "before Friday.",
    "Transformers replaced recurrent networks for translation because they can look at the whole sentence at "
    "once, instead of squeezing everything the encoder read into one hidden state.",
    "In the morning the students opened their laptops, typed their own sentences into the sidebar, and watched "
    "the attention weights change as each new word arrived.",
)


def typed_sentence(rng: random.Random) -> str:
    """A student's own new sentence: 5-34 random words (about 6-40 GPT-2 tokens), in practice never typed before."""
    return " ".join(rng.choices(WORDS, k=rng.randint(5, 34))).capitalize() + "."


def chapter_pages(app_pages: list[tuple[str, str]]) -> list[str]:
    """The URL paths a class moves between: every page of the app but ``LEFT_OUT_PAGES``."""
    return [path for path, _ in app_pages if path not in LEFT_OUT_PAGES]


def stepper_click(buttons: dict[str, tuple[str, str, bool]], direction: int) -> tuple[str, str, int] | None:
    """The stepper button a student walking in ``direction`` (+1 forward, -1 back) presses: (action, key,
    direction); at the last step Next is disabled, so they turn and press Previous (and at step 1, Next)."""
    for way in (direction, -direction):
        prefix, action = ("next:", "next") if way > 0 else ("prev:", "previous")
        for key, (_, _, disabled) in buttons.items():
            if key.startswith(prefix) and not disabled:
                return action, key, way
    return None


class LessonStudent(BrowserStudent):
    """A browser-like student in a lesson: walks the stepper, switches pages and types sentences."""

    def __init__(self, base: str, cookie: str | None, rng: random.Random) -> None:
        super().__init__(base, cookie)
        self.rng = rng
        self.direction = 1  # a class walks forward, and back from the last step

    async def act(self, action: str, pages: list[str], typing: bool) -> Run:
        """Do ``action`` (``Mix.pick``) and wait for the page; the run's kind says what was done."""
        run = await self._act(action, pages, typing)
        run.where = f"{self.page or '/'} {self.step[0]}/{self.step[1]}" if self.step else self.page or "/"
        return run

    async def _act(self, action: str, pages: list[str], typing: bool) -> Run:
        if action == "switch":
            self.page = self.rng.choice([p for p in pages if p != self.page])
            return await self._run("switch", self.message(page=self.page), expect_text=None)
        if action == "sentence":
            current = self.states.get(self.widget_ids.get(TEXT_WIDGET_KEY, ""), ("", ""))[1]
            others = [s for s in CLASS_SENTENCES if s != current]
            text = typed_sentence(self.rng) if typing else self.rng.choice(others)
            return await self._run("sentence", self.message(text=text), expect_text=text)
        click = stepper_click(self.buttons, self.direction)
        if click is None or self.step is None:
            run = Run("next", time.perf_counter(), latency=0.0, error=f"no stepper button on /{self.page}")
            return run
        kind, key, self.direction = click
        before = self.step
        run = await self._run(kind, self.message(click=key), expect_text=None)
        wanted = (before[0] + self.direction, before[1])
        if run.error is None and self.step != wanted:
            run.error = f"stale: the stepper shows step {self.step}, not {wanted}"
            run.ok = False
        return run


class OneServer(AppServer):
    """``streamlit run streamlit_app.py`` as shipped, one process; the students connect to it directly."""

    proxied = False

    def __init__(
        self, log_path: str, env: dict[str, str], memory_log: str | None = None, every: float = 5.0, trim_s: float = 0
    ) -> None:
        serve = ["--memory-log", memory_log, "--memory-every", str(every)] if memory_log else []
        serve += ["--malloc-trim", str(trim_s)] if trim_s else []
        super().__init__(log=Path(log_path), env=env, serve_options=serve or None)
        self.app_bases = [self.base]
        self.memory_log = memory_log  # with it, under serve.py: the same server, sampling its memory by kind

    def processes(self) -> dict[str, int]:
        return {"app": self.proc.pid}


class ClusterServer:
    """``servers`` app processes behind nginx with sticky sessions (``deploy/run_cluster.py``)."""

    proxied = True
    memory_log = None

    def __init__(self, servers: int, log_path: str, env: dict[str, str]) -> None:
        from deploy.run_cluster import Cluster

        self.cluster = Cluster(servers, app_env=env)
        self.base = self.cluster.url
        self.app_bases = [f"http://127.0.0.1:{port}" for port in self.cluster.app_ports]
        self.log_dir = Path(log_path).with_suffix("")

    def command(self) -> list[str]:
        return ["python", "deploy/run_cluster.py", "--processes", str(len(self.app_bases))]

    def start(self) -> str:
        return self.cluster.start()

    def stop(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name in [f"app-{port}.log" for port in self.cluster.app_ports] + ["nginx.log"]:
            (self.log_dir / name).write_text(self.cluster.log(name))
        self.cluster.stop()

    def processes(self) -> dict[str, int]:
        apps = {f"app:{port}": app.pid for port, app in zip(self.cluster.app_ports, self.cluster.apps, strict=True)}
        return {**apps, "nginx": self.cluster.proxy.pid}

    def cpu_s(self) -> float:
        return sum(process_cpu_s(app.pid) for app in self.cluster.apps)

    def rss_mib(self) -> float:
        return sum(process_rss_mib(app.pid) for app in self.cluster.apps)

    def log_problems(self) -> list[str]:
        lines = [line for port in self.cluster.app_ports for line in self.cluster.log(f"app-{port}.log").splitlines()]
        return [line[:200] for line in lines if "Traceback" in line or " ERROR " in line or "Exception" in line]


def lesson_target(
    servers: int, log_path: str, arena_max: int, memory_log: str | None = None, every: float = 5.0, trim_s: float = 0
):
    """One app server (``servers`` = 1, no proxy) or ``servers`` of them behind nginx.

    With ``memory_log`` the one server runs under ``serve.py --memory-log`` (the same Streamlit server, in
    that process), which samples its memory by kind every ``every`` seconds into that file; with ``trim_s``,
    under ``serve.py --malloc-trim``, giving glibc's free memory back every ``trim_s`` seconds."""
    env = {"MALLOC_ARENA_MAX": str(arena_max)} if arena_max else {}
    if servers != 1:
        if memory_log or trim_s:
            raise SystemExit("--memory-log and --malloc-trim are for one server: use --servers 1")
        return ClusterServer(servers, log_path, env)
    return OneServer(log_path, env, memory_log, every, trim_s)


MEMORY_COUNTS = {  # fields of a memory sample that are counts (or seconds), not bytes
    "t",
    "wall",
    "py_blocks",
    "gc_tracked",
    "sessions",
    "media_files",
    "deferred_downloads",
    "pymalloc.arenas",
    "pymalloc.arenas_highwater",
    "caches.SHARED.entries",
    "caches.FIGURES.entries",
    "trimming.trims",
    "trimming.seconds",
    "trimming.max_seconds",
}


def _flat(sample: dict, prefix: str = "") -> dict[str, float]:
    """``sample``'s numbers by dotted name: ``{"a": {"b": 1}, "c": [{"d": 2}]}`` -> ``{"a.b": 1, "c.0.d": 2}``."""
    out = {}
    for key, value in sample.items():
        if isinstance(value, list):
            value = dict(enumerate(value))
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def memory_trends(samples: list[dict], start: float, end: float, settled_s: float = 120.0) -> dict:
    """Each field of the server's memory samples (``serve.py --memory-log``) taken between wall times ``start``
    and ``end``: first, last, min and max, and its slope per minute over the window, over its second half and
    from ``settled_s`` on (once the bounded caches could have filled). Bytes are given in MiB, counts as counts."""
    rows = [_flat(s) for s in samples if start <= s["wall"] <= end]
    trends = {}
    for key in sorted({k for row in rows for k in row} - {"t", "wall"}):
        scale = 1 if key in MEMORY_COUNTS else 1 / 2**20
        points = [(row["wall"] - start, row[key] * scale) for row in rows if key in row]
        if not points:
            continue
        values = [v for _, v in points]
        trends[key] = {
            "first": values[0],
            "last": values[-1],
            "min": min(values),
            "max": max(values),
            "slope_per_min": slope_mib_per_min(points),
            "slope_second_half_per_min": slope_mib_per_min([p for p in points if p[0] >= (end - start) / 2]),
            "slope_settled_per_min": slope_mib_per_min([p for p in points if p[0] >= settled_s]),
            "floor_slope_settled_per_min": floor_slope_mib_per_min([p for p in points if p[0] >= settled_s]),
        }
    return trends


def read_memory_log(path: str) -> list[dict]:
    with contextlib.suppress(FileNotFoundError), open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
    return []


def memory_lines(trends: dict) -> str:
    """``memory_trends`` as one line per field."""
    return "\n".join(
        f"   {key:28} {t['first']:10.1f} -> {t['last']:10.1f} (min {t['min']:.1f}, max {t['max']:.1f}); per min "
        f"{t['slope_per_min']:+.2f}, second half {t['slope_second_half_per_min']:+.2f}, "
        f"settled {t['slope_settled_per_min']:+.2f} (floor {t['floor_slope_settled_per_min']:+.2f})"
        for key, t in trends.items()
    )


def summarize_lesson(runs: list[Run], start: float, end: float) -> dict:
    """Latency per action kind and over every action (opening the link apart), and the throughput of the window."""
    actions = [r for r in runs if r.kind != "open"]
    kinds = sorted({r.kind for r in runs}, key=lambda k: ("open", "next", "previous", "switch", "sentence").index(k))
    finished = [r for r in actions if start <= r.done <= end]
    slowest = sorted((r for r in actions if r.ok), key=lambda r: -r.latency)[:SLOWEST]
    return {
        "actions": summarize(actions),
        "by_kind": {kind: summarize([r for r in runs if r.kind == kind]) for kind in kinds},
        "slowest": [{"kind": r.kind, "where": r.where, "latency_s": r.latency} for r in slowest],
        "throughput_runs_per_s": len(finished) / (end - start) if end > start else float("nan"),
    }


async def lesson(target, scenario: str, n: int, duration: float, think_s: float, spread_s: float, page: str, seed: int):
    """``n`` students open the class's link over ``spread_s`` seconds, then act and think until ``duration`` is up.

    The link is ``page`` with the class's first sentence; each action is drawn from ``MIXES[scenario]``,
    with an exponential think time of mean ``think_s`` before it. Students of a ``class`` pick new
    sentences from ``CLASS_SENTENCES``; in ``typing`` each types a sentence of their own.
    """
    rng = random.Random(seed)
    mix, typing = MIXES[scenario], scenario == "typing"
    pages = chapter_pages(target.app_pages)
    link = {"input": "text", "text": CLASS_SENTENCES[0]}
    runs: list[Run] = []
    students = []
    for i in range(n):
        cookie = f"explorer_route={rng.getrandbits(64):016x}" if target.proxied else None  # as nginx gives one
        students.append(LessonStudent(target.base, cookie, random.Random(seed * 1000 + i)))

    async def attend(student: LessonStudent, delay: float, end: float) -> None:
        await asyncio.sleep(delay)
        try:
            await student.connect()
        except (OSError, websockets.InvalidHandshake) as exc:
            runs.append(Run("open", time.perf_counter(), latency=0.0, error=f"connection refused: {exc}"))
            return
        opened = await student.open(page, link)
        runs.append(opened)
        while opened.ok and time.perf_counter() < end:
            await asyncio.sleep(student.rng.expovariate(1 / think_s))
            if time.perf_counter() >= end:
                break
            run = await student.act(mix.pick(student.rng), pages, typing)
            runs.append(run)
            if run.error and run.error.startswith("connection closed"):
                break

    async with Meter(target) as meter:
        start, wall_start = time.perf_counter(), time.time()
        end = start + duration
        await asyncio.gather(*(attend(s, rng.uniform(0, spread_s), end) for s in students))
    for s in students:
        await s.close()
    memory = {}
    if target.memory_log:
        memory = memory_trends(read_memory_log(target.memory_log), wall_start, wall_start + duration)
    return {
        **summarize_lesson(runs, start, end),
        "server_memory": memory,
        "joined": sum(1 for r in runs if r.kind == "open" and r.ok),
        "students_per_server": dict(Counter(s.upstream or "direct" for s in students)),
        "pages": pages,
        **meter.report(len(runs)),
        "rss_samples": meter.samples[:: max(1, int(10 / meter.every))],
    }


# --------------------------------------------------------------------------- driver


def machine() -> dict:
    model = platform.processor()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    import streamlit
    import torch

    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "ram_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "streamlit": streamlit.__version__,
        "torch": torch.__version__,
        "kernel": platform.release(),
    }


def record(entry: dict, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


async def one_scenario(args, scenario: str, mode: str, n: int | None) -> dict:
    label = f"{scenario}-{mode}" + (f"-{n}" if n else "")
    server = Server(mode, os.path.join(os.path.dirname(args.results), "logs", label + ".log"))
    print(f"== {label}: starting server on {server.base} (load {loadavg():.2f})", flush=True)
    server.start()
    try:
        warm = await warm_up(server)
        warm_errors = [r.error for r in warm if r.error]
        print(f"   warmed up ({len(warm)} runs, errors: {warm_errors or 'none'}), RSS {server.rss_mib():.0f} MiB")
        if scenario == "pages":
            result = await pages_scan(server, args.edits, args.seed)
        elif scenario == "classroom":
            result = await classroom(server, n, args.duration, args.think, args.page, args.step, args.seed)
        elif scenario == "burst":
            result = await burst(server, n, args.waves, args.pause, args.page, args.step, args.seed)
        elif scenario == "soak":
            result = await classroom(server, n, args.duration, args.think, args.page, args.step, args.seed)
        else:
            raise ValueError(scenario)
        result["server_log_problems"] = server.log_problems()[:20]
        result["warm_up_errors"] = warm_errors
    finally:
        server.stop()
    entry = {
        "scenario": scenario,
        "mode": mode,
        "students": n,
        "page": args.page,
        "step": args.step,
        "think_s": args.think,
        "duration_s": args.duration if scenario in ("classroom", "soak") else None,
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(["python", "benchmarks/load.py", *sys.argv[1:]]),
        "server_command": " ".join(server.command()),
        "machine": machine(),
        **result,
    }
    record(entry, args.results)
    print(summary_line(entry), flush=True)
    return entry


async def one_lesson(args, scenario: str, servers: int, n: int) -> dict:
    """A ``class`` or ``typing`` run of ``n`` students on ``servers`` app processes (behind nginx if more than one)."""
    label = f"{scenario}-{servers}server-{n}"
    log_path = os.path.join(os.path.dirname(args.results), "logs", label + ".log")
    memory_log = log_path + ".memory.jsonl" if args.memory_log else None
    if memory_log and os.path.exists(memory_log):
        os.remove(memory_log)
    target = lesson_target(servers, log_path, args.arena_max, memory_log, args.memory_every, args.malloc_trim)
    print(f"== {label}: starting {servers} app server(s), students connect to {target.base} (load {loadavg():.2f})")
    target.start()
    try:
        warm_errors = []
        for base in target.app_bases:
            runs, target.app_pages = await warm(base)
            warm_errors += [r.error for r in runs if r.error]
        print(f"   warmed up {len(target.app_bases)} server(s), errors: {warm_errors or 'none'}", flush=True)
        result = await lesson(target, scenario, n, args.duration, args.think, args.spread, args.page, args.seed)
        result["server_log_problems"] = target.log_problems()[:20]
        result["warm_up_errors"] = warm_errors
    finally:
        target.stop()
    entry = {
        "scenario": scenario,
        "mode": f"{servers} server" + ("s behind nginx" if servers > 1 else ""),
        "servers": servers,
        "students": n,
        "page": args.page,
        "think_s": args.think,
        "spread_s": args.spread,
        "duration_s": args.duration,
        "malloc_arena_max": args.arena_max,
        "malloc_trim_s": args.malloc_trim,
        "memory_log": memory_log,
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(["python", "benchmarks/load.py", *sys.argv[1:]]),
        "server_command": " ".join(target.command()),
        "machine": machine(),
        **result,
    }
    record(entry, args.results)
    print(lesson_line(entry), flush=True)
    if entry["server_memory"]:
        print(f"   server memory (MiB unless a count; {memory_log}):", flush=True)
        print(memory_lines(entry["server_memory"]), flush=True)
    return entry


def lesson_line(e: dict) -> str:
    a, opened = e["actions"], e["by_kind"].get("open", {})
    kinds = ", ".join(
        f"{kind} {k['runs']}× p50 {k['p50_s'] * 1000:.0f} p95 {k['p95_s'] * 1000:.0f} max {k['max_s'] * 1000:.0f}"
        for kind, k in e["by_kind"].items()
    )
    return (
        f"   {e['scenario']} on {e['mode']}, N={e['students']} ({e['joined']} joined, per server "
        f"{sorted(e['students_per_server'].values())}): actions {a['runs']}, "
        f"p50 {a['p50_s'] * 1000:.0f} ms, p95 {a['p95_s'] * 1000:.0f} ms, max {a['max_s'] * 1000:.0f} ms, "
        f"{e['throughput_runs_per_s']:.2f} actions/s, errors {a['errors'] + opened.get('errors', 0)} "
        f"{a['error_kinds'] or ''}\n   ms: {kinds}\n"
        f"   server CPU {e['server_cpu_cores']:.2f} cores ({e['server_cpu_ms_per_run']:.0f} ms/run), client CPU "
        f"{e['client_cpu_cores']:.2f} cores ({e['client_cpu_ms_per_run']:.1f} ms/run), other "
        f"{e['other_load_cores']:.2f} cores, RSS {e['rss_start_mib']:.0f}->{e['rss_end_mib']:.0f} "
        f"(max {e['rss_max_mib']:.0f}) MiB, slope "
        f"{e['rss_slope_mib_per_min']:+.2f} MiB/min (second half {e['rss_slope_second_half_mib_per_min']:+.2f}; "
        f"floor {e.get('rss_floor_slope_mib_per_min', math.nan):+.2f}, "
        f"from minute 2 {e.get('rss_floor_slope_after_2_min_mib_per_min', math.nan):+.2f}), "
        f"loadavg {e['loadavg_start']:.2f}->{e['loadavg_end']:.2f}\n   slowest: "
        + ", ".join(f"{r['kind']} to {r['where']} {r['latency_s'] * 1000:.0f} ms" for r in e.get("slowest", [])[:6])
        + "\n   per process: "
        + "; ".join(
            f"{name} {p['cpu_cores']:.2f} cores, RSS {p['rss_start_mib']:.0f}->{p['rss_end_mib']:.0f} MiB "
            f"({p['rss_slope_mib_per_min']:+.2f} MiB/min; anonymous {p['anon_start_mib']:.0f}->"
            f"{p['anon_end_mib']:.0f}, {p['anon_slope_mib_per_min']:+.2f} MiB/min)"
            for name, p in e["processes"].items()
        )
    )


def summary_line(e: dict) -> str:
    if e["scenario"] == "pages":
        return f"   heaviest: {e['heaviest']}"
    ed = e["edits"]
    return (
        f"   {e['scenario']} {e['mode']} N={e['students']}: runs {ed['runs']}, p50 {ed['p50_s'] * 1000:.0f} ms, "
        f"p95 {ed['p95_s'] * 1000:.0f} ms, max {ed['max_s'] * 1000:.0f} ms, "
        f"{e['throughput_runs_per_s']:.2f} runs/s, errors {ed['errors']}, RSS {e['rss_start_mib']:.0f}->"
        f"{e['rss_end_mib']:.0f} (max {e['rss_max_mib']:.0f}) MiB, server CPU {e['server_cpu_ms_per_run']:.0f} ms/run, "
        f"GC {e['gc'].get('gc_cpu_ms_per_run', float('nan')):.1f} ms CPU/run, "
        f"other load {e['other_load_cores']:.2f} cores, "
        f"loadavg {e['loadavg_start']:.2f}->{e['loadavg_end']:.2f}"
    )


# --------------------------------------------------------------------------- report


def _page(row: dict) -> str:
    return f"`{row['page']}`" if row["page"] else f"default ({row.get('title', '')})"


def _ms(seconds: float) -> str:
    return "–" if seconds != seconds else f"{seconds * 1000:,.0f}"


def _scenario_row(e: dict) -> str:
    ed = e["edits"]
    return (
        f"| {e['mode']} | {e['students']} | {ed['runs']} | {_ms(ed['p50_s'])} | {_ms(ed['p95_s'])} "
        f"| {_ms(ed['max_s'])} | {e['throughput_runs_per_s']:.2f} | {ed['errors']} "
        f"| {e['rss_start_mib']:.0f}→{e['rss_end_mib']:.0f} ({e['rss_max_mib']:.0f}) "
        f"| {e['rss_slope_mib_per_min']:+.2f} | {e['server_cpu_ms_per_run']:.0f} "
        f"| {e['gc'].get('gc_cpu_ms_per_run', float('nan')):.1f} | {e['other_load_cores']:.2f} "
        f"| {e['loadavg_start']:.2f}→{e['loadavg_end']:.2f} |"
    )


def _lesson_row(e: dict, one: dict | None) -> str:
    """A table row; ``one`` is the same scenario on the same servers with one student (issue 15's yardstick)."""
    a, kinds = e["actions"], e["by_kind"]
    p95 = " | ".join(_ms(kinds[k]["p95_s"]) if k in kinds else "–" for k in ("next", "previous", "switch", "sentence"))
    errors = a["errors"] + kinds.get("open", {}).get("errors", 0)
    ratio = f"{a['p95_s'] / one['actions']['p95_s']:.1f}×" if one else "–"
    return (
        f"| {e['servers']} | {e['students']} | {e['duration_s']:g} | {a['runs']} | {_ms(a['p50_s'])} "
        f"| **{_ms(a['p95_s'])}** | {ratio} | {_ms(a['max_s'])} | {p95} | {_ms(kinds['open']['p95_s'])} "
        f"| {e['throughput_runs_per_s']:.2f} | {errors} "
        f"| {e['server_cpu_cores']:.2f} ({e['server_cpu_ms_per_run']:.0f}) | {e['client_cpu_cores']:.2f} "
        f"| {e['rss_start_mib']:.0f}→{e['rss_end_mib']:.0f} | {e['rss_slope_mib_per_min']:+.2f} "
        f"({e['rss_slope_second_half_mib_per_min']:+.2f}) | {e['loadavg_start']:.2f}→{e['loadavg_end']:.2f} |"
    )


def lesson_report(rows: list[dict]) -> list[str]:
    """One table per lesson scenario: overall and per-action latency, p95 against one student's, CPU and memory."""
    out = []
    for scenario in ("class", "typing"):
        mine = sorted(
            (e for e in rows if e["scenario"] == scenario), key=lambda e: (e["servers"], e["students"], e["duration_s"])
        )
        if not mine:
            continue
        first = mine[0]
        ones = {e["servers"]: e for e in mine if e["students"] == 1}
        out += [
            f"**{scenario}** (first page `{first['page'] or '/'}`, think time exponential with mean "
            f"{first['think_s']:g} s, students arriving over {first['spread_s']:g} s, "
            f"MALLOC_ARENA_MAX={first['malloc_arena_max'] or 'unset'}; latencies in ms; p95 × is against one "
            "student's p95 on as many servers; RSS of the app processes together, slope over the run "
            "(second half))",
            "",
            "| servers | students | s timed | actions | p50 | p95 | p95 × | max | p95 Next | p95 Previous | p95 switch "
            "| p95 sentence | p95 open | actions/s | errors | server CPU cores (ms/run) | client CPU cores "
            "| RSS start→end MiB | RSS MiB/min | load avg |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "| --- | ---: | --- | --- | --- |",
            *(_lesson_row(e, ones.get(e["servers"]) if e["students"] > 1 else None) for e in mine),
            "",
        ]
    return out


def report(results: list[dict]) -> str:
    """Markdown tables of the latest result for each scenario, mode and class size."""
    latest: dict[tuple, dict] = {}
    for e in results:
        latest[(e["scenario"], e["mode"], e["students"], e.get("duration_s"))] = e
    by_scenario: dict[str, list[dict]] = {}
    for key, e in latest.items():
        by_scenario.setdefault(key[0], []).append(e)
    out = []
    for e in by_scenario.get("pages", [])[-1:]:
        out += [
            f"One student on each page and step (mode `{e['mode']}`, {e['when']}, load average "
            f"{e['loadavg_start']:.2f}→{e['loadavg_end']:.2f}): median latency of {e['table'][0]['runs']} edits.",
            "",
            "| page | step | p50 ms | server CPU ms/run | KiB/run | errors |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for r in e["table"]:
            out.append(
                f"| {_page(r)} | {r['step']}/{r['steps']} | {_ms(r['p50_s'])} | {r['server_cpu_ms_per_run']:.0f} "
                f"| {r['kib_per_run']:.0f} | {r['errors']} |"
            )
        heaviest = e["heaviest"]
        out += ["", f"Heaviest (most server CPU per run): `{heaviest['page']}` step {heaviest['step']}.", ""]
    for scenario in ("classroom", "burst", "soak"):
        rows = sorted(by_scenario.get(scenario, []), key=lambda e: (e["mode"], e["students"]))
        if not rows:
            continue
        first = rows[0]
        where = f"page `{first['page']}` step {first['step']}"
        if scenario == "burst":
            where += f", {len(first['waves'])} waves per row, pooled"
        else:
            where += f", think time exponential with mean {first['think_s']:g} s, {first['duration_s']:g} s timed"
        out += [
            f"**{scenario}** ({where})",
            "",
            "| mode | students | runs | p50 ms | p95 ms | max ms | runs/s | errors | RSS start→end (max) MiB "
            "| RSS slope MiB/min | server CPU ms/run | GC CPU ms/run | other load (cores) | load avg |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |",
        ]
        out += [_scenario_row(e) for e in rows]
        out.append("")
    out += lesson_report([e for e in latest.values() if e["scenario"] in MIXES])
    return "\n".join(out)


BEGIN, END = "<!-- load-tables:begin -->", "<!-- load-tables:end -->"


def replace_block(path: str, begin: str, end: str, text: str) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` in ``path``; the rest of the file stays."""
    with open(path) as f:
        whole = f.read()
    if begin not in whole or end not in whole:
        raise SystemExit(f"{path} has no {begin} ... {end} block to fill")
    head, rest = whole.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")


def read_results(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


async def amain(args) -> None:
    if args.scenario == "report":
        tables = report(read_results(args.results))
        if args.markdown:
            replace_block(args.markdown, BEGIN, END, tables)
        print(tables)
        return
    if args.scenario in MIXES:
        for n in [int(n) for n in args.students.split(",")]:
            for servers in [int(k) for k in args.servers.split(",")]:
                await one_lesson(args, args.scenario, servers, n)
        return
    modes = args.modes.split(",")
    sizes = [int(n) for n in args.students.split(",")] if args.scenario != "pages" else [None]
    for n in sizes:  # modes inside: the rows to compare run minutes apart, under similar outside load
        for mode in modes:
            await one_scenario(args, args.scenario, mode, n)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", choices=("pages", "classroom", "burst", "soak", *MIXES, "report"))
    parser.add_argument("--modes", default="default", help="comma-separated server modes (see the docstring)")
    parser.add_argument("--students", default="1,30,100", help="comma-separated class sizes")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of timed editing (classroom, soak)")
    parser.add_argument("--think", type=float, default=3.0, help="mean think time between edits, seconds")
    parser.add_argument("--waves", type=int, default=3, help="bursts per run (burst)")
    parser.add_argument("--pause", type=float, default=3.0, help="seconds of quiet before each burst")
    parser.add_argument("--page", default="multihead", help="the page every student views (URL path)")
    parser.add_argument("--step", type=int, default=1, help="the step of that page")
    parser.add_argument("--edits", type=int, default=5, help="timed edits per page and step (pages)")
    parser.add_argument("--servers", default="1", help="class, typing: comma-separated app process counts (2+: nginx)")
    parser.add_argument("--spread", type=float, default=5.0, help="class, typing: seconds over which students arrive")
    parser.add_argument("--arena-max", type=int, default=2, help="class, typing: MALLOC_ARENA_MAX (0: unset)")
    parser.add_argument(
        "--memory-log",
        action="store_true",
        help="class, typing, one server: sample the server's memory by kind (serve.py --memory-log) and report trends",
    )
    parser.add_argument("--memory-every", type=float, default=5.0, help="seconds between --memory-log samples")
    parser.add_argument(
        "--malloc-trim", type=float, default=0, help="class, typing, one server: malloc_trim every this many seconds"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", default=RESULTS, help="JSON lines file the results are appended to")
    parser.add_argument("--markdown", help="report: fill the generated block of this Markdown file")
    args = parser.parse_args(argv)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
