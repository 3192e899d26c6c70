"""The protocol client: a browser tab reduced to Streamlit's websocket protocol, and the sentences it types.

A simulated student (``Student``, or the more browser-like ``BrowserStudent``) speaks ``/_stcore/stream`` itself
(protobuf ``BackMsg`` out, ``ForwardMsg`` in), so the machine's time goes to the server, not to browsers. A run is
timed from the request to the ``script_finished`` that ends it, after everything drawn. Students type random words
(``sentence``) or exactly T GPT-2 tokens (``Sentences``), from a link if it can hold them (``open_typed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
import urllib.parse
from dataclasses import dataclass, field, replace

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput

TEXT_WIDGET_KEY = "w_text"  # the sidebar's sentence (explorer/session.py's WIDGETS)
RUN_TIMEOUT_S = 300.0  # a run that takes longer is an error
MAX_CACHED_HASHES = 500
STEP_RE = re.compile(r"Step (\d+) of (\d+)")
ROOM_RE = re.compile(r"Room <b>([A-Z2-9]{5})</b>")
SCALAR_STATES = {"text_input": "string_value", "text_area": "string_value", "number_input": "double_value",
                 "checkbox": "bool_value"}  # fmt: skip  # the WidgetState field of a one-value widget (and st.toggle)
WIDGET_ID_RE = re.compile(r"^\$\$ID-[0-9a-f]+-(.+)$")  # a keyed widget's id: "$$ID-<hash>-<key>"


def rerun_message(*, states: dict | None = None, trigger: str = "", cached_hashes=(), url: str = "", **fields) -> bytes:
    """A ``BackMsg`` asking for a script run, serialized as a browser sends it. ``fields`` are its ``query_string``,
    ``page_name`` (a link's URL path), ``page_script_hash`` (the page a session is on) and ``fragment_id``;
    ``states`` maps widget ids to (``WidgetState`` field, value), a value None sent as the id alone and the widgets
    not named keeping their values; ``trigger`` is a button's id, clicked in the fragment."""
    msg = BackMsg()
    state = msg.rerun_script
    for name, value in fields.items():
        setattr(state, name, value)
    for widget_id, (field_name, value) in (states or {}).items():
        widget = state.widget_states.widgets.add()
        widget.id = widget_id
        if value is not None and field_name.endswith("_array_value"):
            getattr(widget, field_name).data.extend(value)
        elif value is not None:
            setattr(widget, field_name, value)
    if trigger:
        widget = state.widget_states.widgets.add()
        widget.id, widget.trigger_value = trigger, True
    state.cached_message_hashes.extend(cached_hashes)
    if url:
        state.context_info.url, state.context_info.timezone, state.context_info.locale = url, "UTC", "en-US"
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
    chart: bool = False  # a new plotly chart
    chart_id: str = ""  # its widget id, when a selection on it reruns the page (``on_select``)
    cache_hash: str | None = None  # a message the client may cache (a browser's ForwardMsgCache)
    ref_hash: str | None = None  # the server points at a message the client said it had cached
    page_hashes: dict[str, str] | None = None  # URL path -> page script hash (from the navigation message)
    main_script_hash: str | None = None  # the entry script's hash (from the new session message)
    script_hash: str = ""  # the script that drew this element: the entry script or a page (active_script_hash)
    state: tuple[str, str, object, bool] | None = None  # a widget: (id, WidgetState field, value, set by server)
    button: tuple[str, str, bool] | None = None  # a keyed button: (key, id, disabled)
    fragment_id: str = ""  # the fragment an element was drawn in ("" outside any)
    step: tuple[int, int] | None = None  # the stepper's "Step k of n"
    max_cached_age: int | None = None  # global.maxCachedMessageAge, from the new session's config
    room: str | None = None  # a live room's code, as its teacher's sidebar shows it


def widget_state(element) -> tuple[str, str, object, bool] | None:
    """(id, WidgetState field, value, set by the server) of a widget element, the value as a browser that has
    touched nothing holds it (None: it has none, e.g. no option chosen); None for an element that is not a
    widget with a state."""
    kind = element.WhichOneof("type")
    w = getattr(element, kind) if kind else None
    if kind in SCALAR_STATES:
        held = "value" if w.set_value else "default"
        value = getattr(w, held) if kind == "checkbox" or w.HasField(held) else None
        if kind == "number_input" and w.data_type == NumberInput.INT:  # a browser sends an int_value
            return w.id, "int_value", None if value is None else int(value), w.set_value
        return w.id, SCALAR_STATES[kind], value, w.set_value
    if kind in ("radio", "selectbox"):  # Streamlit 1.67 sends the option's string
        if w.set_value:
            return w.id, "string_value", w.raw_value if w.HasField("raw_value") else None, True
        return w.id, "string_value", w.options[w.default] if w.HasField("default") else None, False
    if kind == "slider" and not w.options:
        return w.id, "double_array_value", list(w.value if w.set_value else w.default), w.set_value
    if kind == "button_group":  # st.segmented_control, st.pills
        chosen = list(w.raw_values) if w.set_value else [w.options[i].content for i in w.default]
        return w.id, "string_array_value", chosen, w.set_value
    return None


def read_reply(data: bytes) -> Reply:
    """What a student needs from one ``ForwardMsg``."""
    msg = ForwardMsg.FromString(data)
    kind = msg.WhichOneof("type") or ""
    reply = Reply(kind, cache_hash=msg.hash if msg.metadata.cacheable and msg.hash else None)
    reply.script_hash = msg.metadata.active_script_hash
    if kind == "ref_hash":
        reply.ref_hash = msg.ref_hash
    elif kind == "new_session":
        reply.max_cached_age = msg.new_session.config.max_cached_message_age
        reply.main_script_hash = msg.new_session.main_script_hash
    if kind == "script_finished":
        reply.finished, reply.final = msg.script_finished, msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
        if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
            reply.error = "script failed to compile"
    elif kind == "navigation":
        reply.page_script_hash, pages = msg.navigation.page_script_hash, msg.navigation.app_pages
        reply.page_url = next((p.url_pathname for p in pages if p.page_script_hash == reply.page_script_hash), None)
        reply.pages = [(p.url_pathname, p.page_name) for p in pages if not p.external_url]
        reply.page_hashes = {p.url_pathname: p.page_script_hash for p in pages if not p.external_url}
    elif kind == "page_info_changed":
        reply.query_string = msg.page_info_changed.query_string
    elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element, reply.fragment_id = msg.delta.new_element, msg.delta.fragment_id
        etype = element.WhichOneof("type")
        if etype == "exception":
            reply.error = f"exception: {element.exception.type}: {element.exception.message[:120]}"
        elif etype == "alert" and element.alert.format == Alert.ERROR:
            reply.error = f"error box: {element.alert.body[:120]}"
        elif etype == "alert" and element.alert.format == Alert.WARNING:
            reply.warning = element.alert.body[:120]
        elif etype == "alert" and element.alert.format == Alert.INFO:
            reply.notice = element.alert.body[:160]
        elif etype == "markdown":
            if match := STEP_RE.search(element.markdown.body):
                reply.step = (int(match.group(1)), int(match.group(2)))
            elif match := ROOM_RE.search(element.markdown.body):
                reply.room = match.group(1)
        elif etype == "plotly_chart":
            reply.chart, reply.chart_id = True, element.plotly_chart.id
        elif etype == "button":
            if match := WIDGET_ID_RE.match(element.button.id):
                reply.button = (match.group(1), element.button.id, element.button.disabled)
        else:
            reply.state = widget_state(element)
            if etype in ("text_input", "number_input"):
                widget = getattr(element, etype)
                if match := WIDGET_ID_RE.match(widget.id):
                    reply.widget = (match.group(1), widget.id, widget.value if widget.HasField("value") else None)
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
    bytes: int = 0
    charts: int = 0
    where: str = ""  # the page and step shown after the run (lessons), e.g. "multihead 3/7"


class Student:
    """One browser tab, reduced to the protocol: a session on one page of the app."""

    def __init__(self, base: str, cookie: str | None = None) -> None:
        self.base = base  # http://127.0.0.1:PORT
        self.cookie = cookie  # "name=value" sent when connecting (nginx's sticky-session cookie)
        self.upstream = ""  # the app process nginx chose
        self.ws = None
        self.page, self.query_string, self.page_script_hash = "", "", ""  # the page this tab shows
        self.widget_ids: dict[str, str] = {}  # widget key -> id, as the server named them
        self.cached: dict[str, None] = {}  # insertion-ordered set of cached message hashes
        self.steps: int | None = None
        self.app_pages: list[tuple[str, str]] = []

    @property
    def url(self) -> str:
        return f"{self.base}/{self.page}?{self.query_string}"

    async def connect(self) -> None:
        url = self.base.replace("http", "ws", 1) + "/_stcore/stream"
        headers = {"Cookie": self.cookie} if self.cookie else None
        self.ws = await websockets.connect(
            url, subprotocols=["streamlit"], max_size=None, ping_interval=None, additional_headers=headers
        )
        self.upstream = self.ws.response.headers.get("X-Upstream", "")

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()

    async def visit(self, page: str, query: dict[str, str]) -> Run:
        """Connect, then open a link to ``page``."""
        await self.connect()
        return await self.open(page, query)

    async def open(self, page: str, query: dict[str, str]) -> Run:
        """Open a link to ``page`` (a new tab): the first run of a new session."""
        self.page, self.query_string = page, urllib.parse.urlencode(query)
        message = self.request({"query_string": self.query_string, "page_name": page, "url": self.url})
        return await self.send("open", message, expect_text=query.get("text"), exact=False)

    async def edit(self, text: str | None = None) -> Run:
        """Type ``text`` into the sidebar's sentence and press Enter; without it, rerun the page as it is."""
        return await self.send("edit", self.message(text=text), expect_text=text)

    def message(self, *, text: str | None = None) -> bytes:
        """A rerun request of the page as it is, with only the sentence's new ``text`` if given."""
        if text is not None and TEXT_WIDGET_KEY not in self.widget_ids:
            raise RuntimeError("the sentence widget has not been seen yet")
        states = {} if text is None else {self.widget_ids[TEXT_WIDGET_KEY]: ("string_value", text)}
        return self.request(states=states)

    def request(self, where: dict[str, str] | None = None, **fields) -> bytes:
        """``rerun_message`` for ``where`` (by default the page and query this tab shows), with ``fields`` and the
        hashes of the messages this tab has cached."""
        where = where or {"query_string": self.query_string, "page_script_hash": self.page_script_hash, "url": self.url}
        return rerun_message(**where, **fields, cached_hashes=self.cached_hashes())

    def cached_hashes(self) -> list[str]:
        return list(self.cached)

    async def send(self, kind: str, message: bytes, expect_text: str | None, exact: bool = True) -> Run:
        """Send ``message`` and read until the run ends. The sidebar must then show ``expect_text``
        (or, with ``exact=False``, a beginning of it: a link's text is cut at 2,000 characters)."""
        run = Run(kind, time.perf_counter())
        seen: dict[str, str | None] = {}

        async def receive() -> None:
            while True:
                data = await self.ws.recv()
                run.bytes += len(data)
                reply = read_reply(data)
                self.note(reply, run, seen)
                if reply.final:
                    return

        try:
            await self.ws.send(message)
            await asyncio.wait_for(receive(), RUN_TIMEOUT_S)
        except asyncio.TimeoutError:
            run.error = f"timeout after {RUN_TIMEOUT_S:.0f} s"
        except websockets.ConnectionClosed as exc:
            run.error = f"connection closed: {exc}"
        run.latency = time.perf_counter() - run.sent
        shown, seen_text = seen.get("page"), seen.get("text")
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
        if reply.step and self.steps is None:
            self.steps = reply.step[1]
        if reply.warning:
            run.warnings.append(reply.warning)
        if reply.notice:
            run.notices.append(reply.notice)
        if reply.error and run.error is None:
            run.error = reply.error


class BrowserStudent(Student):
    """A ``Student`` that, like a browser tab, sends every widget's state with each rerun request (without
    them a page switch fails: ``st.session_state has no key``), presses keyed buttons in their fragment, and
    keeps a browser's message cache (for ``global.maxCachedMessageAge`` finished runs since last used). Like
    a browser, it forgets the widgets a run (or a fragment's rerun) did not draw again, and a page switch sends
    only the entry script's widgets (tests/e2e/test_protocol_replay.py compares it with Chromium)."""

    def __init__(self, base: str, cookie: str | None = None) -> None:
        super().__init__(base, cookie)
        self.states: dict[str, tuple[str, object]] = {}  # widget id -> (WidgetState field, value)
        self.buttons: dict[str, tuple[str, str, bool]] = {}  # key -> (id, fragment id, disabled)
        self.charts: dict[str, tuple[str, str]] = {}  # a selectable chart's key -> (id, fragment id)
        self.page_hashes: dict[str, str] = {}  # URL path -> page script hash
        self.step: tuple[int, int] | None = None  # the stepper's (k, n) as last drawn
        self.message_cache: dict[str, tuple[Reply, int]] = {}  # hash -> (what it said, finished runs when used)
        self.max_cached_age = 2  # Streamlit's default; the server's new_session message says
        self.finished_runs = 0
        self.main_script_hash = ""  # the entry script's (explorer_app.py: the sidebar)
        self.drawn_in: dict[str, tuple[str, str]] = {}  # widget id -> (script hash, fragment id) that drew it
        self.fragment = ""  # the fragment the run asked for reruns ("": the whole app)
        self._drawn: dict[str, tuple[str, str]] = {}  # drawn in the run being read: id -> (script, fragment)

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
            reply = replace(cached[0], script_hash=reply.script_hash)  # the reference says where it goes
        elif reply.cache_hash:
            self.message_cache[reply.cache_hash] = (reply, self.finished_runs)
        super().note(reply, run, seen)
        if reply.max_cached_age is not None:
            self.max_cached_age, self.main_script_hash = reply.max_cached_age, reply.main_script_hash
        if reply.page_hashes:
            self.page_hashes = reply.page_hashes
        if reply.step:
            self.step = reply.step
        if reply.state:
            widget_id, field_name, value, set_by_server = reply.state
            self._drawn[widget_id] = (reply.script_hash, reply.fragment_id)
            if set_by_server or widget_id not in self.states:
                self.states[widget_id] = (field_name, value)
        if reply.chart_id and (match := WIDGET_ID_RE.match(reply.chart_id)):
            self._drawn[reply.chart_id] = (reply.script_hash, reply.fragment_id)
            self.charts[match.group(1)] = (reply.chart_id, reply.fragment_id)
        if reply.button:
            key, widget_id, disabled = reply.button
            self._drawn[widget_id] = (reply.script_hash, reply.fragment_id)
            self.buttons[key] = (widget_id, reply.fragment_id, disabled)
            self.widget_ids[key] = widget_id
        if reply.final:
            self._finished(reply.finished)

    def _finished(self, status: int) -> None:
        """A run ended: age the message cache, and forget the widgets it did not draw (after a fragment's
        rerun, those of the fragment), as a browser's ``removeInactive`` does."""
        self.finished_runs += 1
        self.drawn_in |= self._drawn
        fresh = self.finished_runs - self.max_cached_age  # the oldest last use a cached message may have
        self.message_cache = {h: (r, used) for h, (r, used) in self.message_cache.items() if used >= fresh}
        fragment = self.fragment if status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY else None
        if status == ForwardMsg.FINISHED_SUCCESSFULLY or fragment:

            def kept(i: str) -> bool:
                return i in self._drawn or (fragment is not None and self.drawn_in.get(i, ("", ""))[1] != fragment)

            self.states = {i: v for i, v in self.states.items() if kept(i)}
            self.buttons = {k: v for k, v in self.buttons.items() if kept(v[0])}
        self._drawn = {}

    def cached_hashes(self) -> list[str]:
        return list(self.message_cache)

    def request(self, where: dict[str, str] | None = None, **fields) -> bytes:
        self.fragment = fields.get("fragment_id", "")
        return super().request(where, **fields)

    def message(self, *, page: str | None = None, text: str | None = None, click: str | None = None) -> bytes:
        """A rerun request with every widget's state: switching to ``page``, with a new ``text``, or a ``click``
        on the keyed button ``click`` (in its fragment, as a browser sends it)."""
        if text is not None:
            self.states[self.widget_ids[TEXT_WIDGET_KEY]] = ("string_value", text)
        where, states = None, self.states
        if page is not None:  # by its hash once the navigation named it; only the entry script's widgets
            by = "page_script_hash" if page in self.page_hashes else "page_name"
            where = {by: self.page_hashes.get(page, page), "url": f"{self.base}/{page}"}
            states = {i: v for i, v in states.items() if self.drawn_in.get(i, ("",))[0] == self.main_script_hash}
        trigger, fragment = (self.widget_ids[click], self.buttons.get(click, ("", "", False))[1]) if click else ("", "")
        return self.request(where, states=states, trigger=trigger, fragment_id=fragment)


async def warm(base: str, pages: list[str] | None = None, every_step: bool = False, make=None):
    """Open ``pages`` (by default the first, then every other page) from a link and edit the sentence once, at
    each step if ``every_step``, so imports and first runs are behind us; ``make()`` gives each sentence (random
    words by default). Returns the runs, the app's pages (URL path, title) and each page's step count."""
    rng = random.Random(0)
    make = make or (lambda: sentence(rng))
    runs, app_pages, steps = [], [], {}
    todo = [""] if pages is None else list(pages)
    while todo:
        page, step, count = todo.pop(0), 1, 1
        while step <= count:
            student = Student(base)
            query = {"input": "text", "text": make()} | ({"step": str(step)} if every_step else {})
            runs.append(await student.visit(page, query))
            if runs[-1].error and not app_pages:
                raise RuntimeError(f"{base}/{page} failed: {runs[-1].error}")
            runs.append(await student.edit(make()))
            await student.close()
            if pages is None and not app_pages:
                todo += [path for path, _ in student.app_pages if path]
            app_pages, count = app_pages or student.app_pages, (student.steps or 1) if every_step else 1
            steps[page], step = count, step + 1
    return runs, app_pages, steps


_PROSE = (
    "the a student reads every word of this long sentence about attention while her friend writes code on an old "
    "laptop near window morning light falls across desk and teacher asks why softmax makes each row sum to one because "
    "weights must share probability between tokens that came before so query looks at keys values heads mask future "
    "context vector grows small large quickly slowly bright quiet river mountain city garden music paper pencil coffee "
    "rain snow summer winter green blue red yellow cat dog bird fish tree flower house school library train station "
    "bridge story question answer idea number matrix column row dot product scale learn model layer input output "
    "embedding token journey starts with one step"
)
WORDS = tuple(_PROSE.split())
MAX_URL_TEXT_CHARS = 2_000  # explorer.settings: longer link texts are cut (with a notice)


def sentence(rng: random.Random, fewest: int = 10, most: int = 20) -> str:
    """``fewest`` to ``most`` random words; 5-34 words are about 6-40 GPT-2 tokens, in practice never typed before."""
    return " ".join(rng.choices(WORDS, k=rng.randint(fewest, most))).capitalize() + "."


class Sentences:
    """New sentences of exactly T GPT-2 tokens (``attention.tokenize``), never the same one twice."""

    def __init__(self, seed: int = 7) -> None:
        import attention

        self.tokenize, self.rng, self.seen = attention.tokenize, random.Random(seed), set()

    def make(self, num_tokens: int) -> str:
        for _ in range(200):
            text = " ".join(self.rng.choices(WORDS, k=num_tokens + 8)).capitalize()
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


async def open_typed(student, page: str, num_tokens: int, sentences: Sentences, **query: str):
    """``student`` (a ``protocol.Student``) opens ``page`` from a link with a new sentence of ``num_tokens`` tokens,
    and types it when it is too long for a link (the slider's range then changes once, here)."""
    shown, cut = link_text(sentences.make(num_tokens))
    opened = await student.visit(page, {"input": "text", "text": shown, **query})
    if opened.error:
        raise RuntimeError(f"{student.base}/{page} {query}: {opened.error}")
    if cut:
        await student.edit(sentences.make(num_tokens))
    return student
