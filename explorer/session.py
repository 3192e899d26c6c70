"""The session layer: one visitor's settings in ``st.session_state`` and the URL, the ``Run`` made from them,
the state a page keeps across reruns, and the link that reproduces a view.

First every key the app keeps in ``st.session_state`` besides its widgets' own (``tests/test_architecture.py``
fails on one written as a string elsewhere). One ``Settings`` object is the source of truth: the sidebar's
callbacks validate new values and write corrections back into the widgets before the page runs; ``current_run``
makes the ``Run`` once per change. A link's parameters are read once per session (``initial_param``).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import urllib.parse
from dataclasses import dataclass, replace

import streamlit as st

from attention import figures
from attention.prose import literal
from explorer.models import effective, fit
from explorer.runtime.patches import ensure_entrypoint, tolerate_crafted_widgets
from explorer.settings import (
    CHOICES,
    OLD_NAMES,
    Settings,
    from_query_params,
    index_from_link,
    quoted,
    to_query_params,
    validate,
)
from explorer.views import Run

# The settings and how this session sees the app (below)
SETTINGS = "settings"  # the chosen Settings, as the sidebar and the link hold them
SETTINGS_NOTICES = "settings_notices"  # why the settings differ from what was asked (clamped, unreadable), shown once
SET_HERE = "settings_set_by_page"  # a page's button changed the settings; the sidebar has not drawn them yet
RUN_KEY = "run"  # (the chosen settings, their Run): made once per change of the settings
PRESENTER = "presenter"  # presenter mode (``?present=1``): larger text and charts for a projector
PHONE = "phone"  # the browser is a phone's: narrower charts
TOKEN_WINDOW = "token_window"  # noqa: S105 (a key, not a password): (start, stop), the tokens pages show
WINDOW_TOKENS = "window_tokens"  # how many tokens the window was made for: another text starts it again

# The link that opened this session, and the one this run writes (below)
INITIAL_PARAMS = "initial_params"  # the link's query parameters a page has not read yet (each is read once)
LINK_PAGE = "link_page"  # the page the link opened: another page does not read its parameters
LINKED_KEYS = "linked_keys"  # the state keys a link started (a step, a query token): a new link starts them again
LINK_SLOT = "link_slot"  # where the "Copy link" popover goes (the sidebar's container)


@dataclass
class ThisRun:
    """What one page run drew, for the parts of the same run that come after it: the step's downloads, its link,
    its cell panel and its code panel. ``begin_run`` makes it; ``this_run()`` reaches it. It never outlives the
    run, so it is not in ``st.session_state``."""

    step: tuple | None = None  # (page, step index, step title, step slug): the step shown, for file names and link
    figures: list[dict] = dataclasses.field(default_factory=list)  # the figures drawn, for the step's JSON export
    sections: list[dict] = dataclasses.field(default_factory=list)  # the book sections its captions named, likewise
    cells: list[tuple] = dataclasses.field(default_factory=list)  # the panels whose cells can be picked: (name, Cells)
    cell_code: str | None = None  # the code line that made the selected cell's matrix, for ``show_code``
    cell_panels_shown: int | None = None  # how many of ``cells`` the cell panel had when drawn (``Steps.show``)
    aside: object = None  # the step's column of words (``Steps.beside``), if any: its JSON download goes there
    params: dict[str, str] = dataclasses.field(default_factory=dict)  # the page's part of the link (query, head, cell)


_RUNS = threading.local()  # each session's script runs on its own thread, one run at a time


def this_run() -> ThisRun:
    """The page run under way on this thread (an empty one before any)."""
    found = getattr(_RUNS, "run", None)
    if found is None:
        found = _RUNS.run = ThisRun()
    return found


def step_key(page: str) -> str:
    """The step index (from 0) a page's stepper is on."""
    return f"step:{page}"


def cell_key(page: str, index: int) -> str:
    """The cell selected on a page's step (``widgets.charts``): {"panel", "row", "col", …} or None."""
    return f"cell:{page}:{index}"


def question_keys(question: str) -> tuple[str, str, str]:
    """A predict-then-reveal question's answer kept for the session, whether it is revealed, and its widget's key."""
    return f"{question}_answer", f"{question}_revealed", f"{question}_widget"


# Pages' own (besides their widgets'): what a page keeps while the widget that sets it is not drawn
WHY_HIDDEN = "why_hidden"  # Why attention's hidden_size
SIMPLIFIED_QUERY = "simplified:query"  # Simplified attention's query token (an index from 0)
QKV_TEMPERATURE = "qkv:temperature"  # Q, K, V & scaling's lab: the temperature that divides every score,
QKV_NUM_KEYS = "qkv:num_keys"  # and how many keys a row has
MULTIHEAD_HEAD = "multihead:head"  # Multi-head attention's inspected head (an index from 0)
DROPOUT_SAMPLES = "dropout_samples"  # Dropout's number of draws to average (also its slider's key)
MISTAKE = "mistakes:mistake"  # Break it's chosen mistake
SPEED_RESULT = "speed:result"  # Speed's last measurement this session asked for; reruns only redraw it
GENERATE_NEW = "generate:new"  # Generate's settings: how many new tokens,
GENERATE_TEMPERATURE = "generate:temperature"  # the sampling temperature (0: greedy),
GENERATE_TOP_K = "generate:top_k"  # top-k (0: all tokens),
GENERATE_SEED = "generate:seed"  # and the seed of the draws
GENERATE_TOKEN, GENERATE_LAYER = "generate:token", "generate:layer"  # the new token and layer inspected
GENERATE_HEAD = "generate:head"  # and the head (indices from 0)
GENERATE_WINDOW = "generate:window"  # the sliding window's size, in tokens
GENERATE_TIMES = "generate:times"  # Generate's timing of one new token both ways, until the next press


# The live room (``explorer.room``)
CODE, TOKEN, STUDENT = "room_code", "room_token", "room_student"  # the room joined; a teacher's token; a student's id
FOLLOWING = "room_following"  # a student follows the teacher (True) or explores on their own
SEEN = "room_seen"  # a student's last read: (version, position, revealed questions, the teacher's step)
APPLIED = "room_applied"  # the teacher's position this student last moved to
PUBLISHED = "room_published"  # the position this teacher last published
MESSAGE = "room_message"  # why this session left its room (or could not join), until dismissed
COOKIE_HELD = "room_cookie_held"  # what this session believes the teacher's browser holds in its room cookie
VOTER_HELD = "room_voter_held"  # the id the student's browser sent when this session connected
ROOM_LINK_READ = "room_link_read"  # the link's ?room= was read (once per session)
ROOM_COOKIE_READ = "room_cookie_read"  # the browser's room cookies were read (once per session)
ROOM_SLOT = "room_slot"  # the sidebar's first container: a presenter's room, under the pages
RESUMED = "room_resumed"  # this session took back its browser's room: said once, in the room's panel


def notice(text: str, *, where=None) -> None:
    """A notice that may quote user input, drawn literally (``literal``)."""
    (where or st).info(literal(text), icon=":material/info:")


# The link to what is on screen (``widgets.steps.finish_run`` writes it after each run).


def page_param(name: str, value) -> None:
    """Record a page's own state (step, query token, head) for the URL of this run."""
    this_run().params[name] = str(value)


def initial_param(name: str, page: str, key: str | None = None) -> str | None:
    """A page parameter from the link that opened this session, used once by ``page``; ``key`` is the state key
    the page starts from it, which a link opened later (``open_link``) starts again."""
    if key is not None:
        st.session_state.setdefault(LINKED_KEYS, set()).add(key)
    if page != "any" and page != st.session_state.setdefault(LINK_PAGE, page):  # "any": no page in particular
        return None  # the link opened another page
    return st.session_state.get(INITIAL_PARAMS, {}).pop(name, None)


@functools.lru_cache(maxsize=1024)
def view_link(
    settings: Settings, step: tuple | None, page_params: tuple, presenter: bool, base_url: str | None, url_path: str
) -> tuple[dict[str, str], str]:
    """The query parameters that reproduce a view (settings, step, ``page_param``s, presenter mode), and its link."""
    params = dict(to_query_params(settings))  # a copy: the cached dict is shared
    if step is not None:
        params["step"] = step[3]  # the step's name
    params.update(page_params)
    if presenter:
        params["present"] = "1"
    parts = urllib.parse.urlsplit(base_url or "http://localhost:8501/")
    query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    return params, urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + url_path, query, ""))


# The settings: one ``Settings`` object, edited by the sidebar's widgets and validated in their callbacks.


FIXED_BY_MODEL = ("d_in", "d_out", "num_heads", "context_length", "seed")  # disabled with a model's weights
# Settings field -> widget key
WIDGETS = {f: f"w_{f}" for f in ("source", "text", *FIXED_BY_MODEL, "dropout", "training", "weights", "layer", "head")}
_WHOLE = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731


def refill_widgets() -> bool:
    """Put the settings back into the widgets when Streamlit forgot them (a page switched by the server, as the
    live room does); True when it did."""
    state = st.session_state
    if all(key in state for key in WIDGETS.values()):
        return False
    state.update(_shown(chosen()))
    return True


def widgets_valid() -> bool:
    """Whether every settings widget holds a value of its setting's kind and ``CHOICES``: a crafted websocket
    message can put any value in a widget."""
    state = st.session_state
    kinds = all(type(state.get(key)) is type(value) for key, value in _shown(chosen()))
    return kinds and all(state[WIDGETS[field]] in choices for field, (choices, _) in CHOICES.items() if choices)


def _shown(settings: Settings):
    """(widget key, value it shows) for each setting: the sidebar counts heads from 1, as the pages' words do."""
    for field, key in WIDGETS.items():
        yield key, settings.head + 1 if field == "head" else getattr(settings, field)


def _use(settings: Settings, notices: list[str]) -> None:
    """Make validated ``settings`` the session's, fitted to the model (``fit``), and put them in the widgets."""
    settings, more = fit(settings)
    st.session_state.update(_shown(settings))
    st.session_state[SETTINGS] = settings
    st.session_state[SETTINGS_NOTICES] = notices + more


def on_change_of(field: str = "") -> None:
    values = {name: st.session_state[key] for name, key in WIDGETS.items()}
    values["head"] -= 1  # Settings.head is an index
    _use(*validate(Settings(**values), keep="num_heads" if field == "num_heads" else "d_out"))


def set_settings(**changes) -> None:
    """Change settings from a page's button (an ``on_click``); the next run is the whole app's, to show them."""
    _use(*validate(replace(chosen(), **changes)))
    st.session_state[SET_HERE] = True


def begin_run() -> Run | None:
    """Start a page's run: a new ``this_run()``, and this session's ``Run``; None when a
    page's button changed the settings, which only the whole app's run redraws in the sidebar."""
    _RUNS.run = ThisRun()
    if st.session_state.pop(SET_HERE, False):
        return None
    return current_run()


def chosen() -> Settings:
    """The settings as the sidebar and the link hold them."""
    return st.session_state.get(SETTINGS, Settings())


def current_run() -> Run:
    """This session's ``Run`` (settings with a trained model's sizes, and the sentence prepared), made once per
    change of the settings; a session's first also makes sure the app script runs around the page."""
    state, chosen_now = st.session_state, chosen()
    kept = state.get(RUN_KEY)
    if kept is None or kept[0] is not chosen_now:
        ensure_entrypoint()
        kept = state[RUN_KEY] = (chosen_now, Run.of(effective(chosen_now)))
    return kept[1]


def start_session() -> None:
    """Read the URL once per session into the settings and the pages' initial state."""
    tolerate_crafted_widgets()
    state = st.session_state
    if SETTINGS in state:
        return
    params = st.query_params.to_dict()
    open_link(params)
    state[PRESENTER] = params.get("present", "").lower() in ("1", "true", "yes", "on")
    state[PHONE] = on_a_phone()


def on_a_phone() -> bool:
    """Whether the browser is a phone's: "Mobi" in its User-Agent, as every phone's browser (not a tablet's) writes."""
    agent = st.context.headers.get("User-Agent")
    return isinstance(agent, str) and "Mobi" in agent


def open_link(params: dict[str, str]) -> None:
    """Open a link's settings and pages' state as a session starting from it does, before the sidebar is drawn."""
    state = st.session_state
    _use(*from_query_params(params))
    state[INITIAL_PARAMS] = dict(params)
    for key in state.pop(LINKED_KEYS, set()):
        state.pop(key, None)
    state.pop(LINK_PAGE, None)


def presenter() -> bool:
    """Presenter mode: large fonts, reduced chrome, for a projector (``?present=1``)."""
    start_session()
    return bool(st.session_state.get(PRESENTER))


# State a page keeps across reruns and steps (the inspected head, the query token, a sample count), started
# from the link, checked against what a crafted message may have left there, and written into the URL.


def kept_index(key: str, name: str, page: str, *, default: int, count: int) -> int:
    """An index (from 0) a page keeps under ``key`` across reruns and steps: started from the link's ``name``
    parameter, which counts from 1 as the book does (``name`` ends in "_n"; an old link's name, ``OLD_NAMES``,
    counted from 0 and still opens what it opened), or ``default``; clamped below ``count``; written into the URL
    as ``name``, from 1."""
    if key not in st.session_state:
        new, old = initial_param(name, page, key), initial_param(OLD_NAMES[name], page, key)
        index, why = index_from_link(name, new, old)
        if why:
            notice(f"{why}; using {default + 1}.")
        st.session_state[key] = default if index is None else index
    value = st.session_state[key]
    if not _WHOLE(value) or value < 0:
        notice(f"{name}={quoted(value)} is not a position; using {default + 1}.")
        value = default
    index = st.session_state[key] = max(0, min(value, count - 1))
    page_param(name, index + 1)
    return index


def whole_state(key: str, default: int) -> int:
    """A page's own whole number (>= 1) under ``key``, else ``default`` with a notice (a crafted message)."""
    value = st.session_state.get(key, default)
    if not _WHOLE(value) or value < 1:
        notice(f"{quoted(value)} is not a count; using {default}.")
        value = st.session_state[key] = default
    return value


def kept_widget(key: str, widget: str, default) -> dict:
    """Arguments for a ``widget`` whose value is kept under ``key`` while it is off screen (Streamlit forgets it)."""
    value = st.session_state.setdefault(key, default)
    if type(value) is not type(default) and not (_WHOLE(value) and isinstance(default, float)):
        notice(f"{quoted(value)} is not a value this control takes; using {default}.")
        st.session_state[key] = default
    st.session_state[widget] = st.session_state[key]
    return {"key": widget, "on_change": lambda: st.session_state.update({key: st.session_state[widget]})}


def figure_style(*, at_most: int | None = None, shorter: int = 0, share: float = 1.0) -> figures.FigureStyle:
    """This session's figure style: presenter mode's, a phone's or the default, narrowed to the token window; a step
    that fits a chart under its words lowers its height to ``at_most`` pixels or by ``shorter``; a chart in a column
    gets its ``share`` of the page's width (``figures.COLUMN_SHARES``), which its cell numbers must fit."""
    state = st.session_state
    base = figures.PRESENTER if state.get(PRESENTER) else figures.PHONE if state.get(PHONE) else figures.DEFAULT_STYLE
    changes = {"token_window": state[TOKEN_WINDOW]} if state.get(TOKEN_WINDOW) else {}
    if share != 1.0:
        changes["share"] = share
    if at_most is not None or shorter:
        changes["max_height"] = min(base.max_height, at_most or base.max_height) - shorter
    return replace(base, **changes) if changes else base
