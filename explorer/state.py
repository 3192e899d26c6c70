"""Settings in the sidebar, mirrored in ``st.session_state`` and the URL.

One ``Settings`` object is the source of truth. The sidebar widgets edit it;
their ``on_change`` callback validates the new values and writes any
correction back into the widgets before the page runs, so the sidebar never
shows a value the pages do not use. The URL is rewritten after each run, so a
copied link reproduces the view; a link's parameters are read once, when a
session starts.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import replace

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from attention.constants import CHECKPOINT_VARIABLE, VERDICT_CONFIG

from . import weights
from .settings import (
    BOOK,
    LIMITS,
    MAX_URL_TEXT_CHARS,
    TEXT,
    Settings,
    from_query_params,
    parse_position,
    quoted,
    to_query_params,
    validate,
)
from .untrusted import notice, tolerate_crafted_widgets, unreadable_notices

_WIDGETS = {  # Settings field -> widget key
    "source": "w_source",
    "text": "w_text",
    "d_in": "w_d_in",
    "d_out": "w_d_out",
    "num_heads": "w_num_heads",
    "context_length": "w_context_length",
    "dropout": "w_dropout",
    "seed": "w_seed",
    "training": "w_training",
    "weights": "w_weights",
    "layer": "w_layer",
    "head": "w_head",
}
_NUMBERS = (  # (Settings field, label) of the sidebar's number inputs, in two columns
    ("d_in", "d_in"),
    ("d_out", "d_out"),
    ("num_heads", "num_heads"),
    ("context_length", "context_length"),
    ("dropout", "dropout p"),
    ("seed", "seed"),
)
_KINDS = {  # Settings field -> the check a widget's value must pass before it is used
    "source": lambda v: isinstance(v, str) and v in (BOOK, TEXT),
    "text": lambda v: isinstance(v, str),
    "dropout": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "training": lambda v: isinstance(v, bool),
    "weights": lambda v: isinstance(v, str) and v in weights.CHOICES,
}
FIXED_BY_MODEL = ("d_in", "d_out", "num_heads", "context_length", "seed")  # disabled with a model's weights
_WHOLE = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
PAGE_PARAMS = "page_params"
LINK_SLOT = "link_slot"  # query parameters a page adds for this run (step, query token, head)
SET_HERE = "settings_set_by_page"  # a page's button changed the settings; the sidebar has not drawn them yet


def _widgets_valid() -> bool:
    """Whether every settings widget holds a value of the kind its setting needs.

    A crafted websocket message can put any value in a widget (a string in a number input).
    """
    state = st.session_state
    return all(_KINDS.get(field, _WHOLE)(state.get(key)) for field, key in _WIDGETS.items())


def _from_widgets() -> Settings:
    state = st.session_state
    return Settings(**{field: state[key] for field, key in _WIDGETS.items()})


def _to_widgets(settings: Settings) -> None:
    for field, key in _WIDGETS.items():
        st.session_state[key] = getattr(settings, field)


def _fitted(settings: Settings, notices: list[str]) -> tuple[Settings, list[str]]:
    """Validated settings whose weights are available and whose layer and head the model has."""
    settings, more = weights.fit(settings)
    return settings, notices + more


def _on_change(field: str = "") -> None:
    settings, notices = _fitted(*validate(_from_widgets(), keep="num_heads" if field == "num_heads" else "d_out"))
    _to_widgets(settings)
    st.session_state["settings"] = settings
    st.session_state["settings_notices"] = notices


def set_settings(**changes) -> None:
    """Change settings from a page's button (use as an ``on_click`` callback); the next run is the whole
    app's (``settings_changed_here``), so the sidebar shows them."""
    settings, notices = _fitted(*validate(replace(chosen(), **changes)))
    _to_widgets(settings)
    st.session_state["settings"] = settings
    st.session_state["settings_notices"] = notices
    st.session_state[SET_HERE] = True


def settings_changed_here() -> bool:
    """Whether a page's button changed the settings since the sidebar last drew them (then only a run of the
    whole app redraws the sidebar: a click inside the page reruns the page alone)."""
    return bool(st.session_state.pop(SET_HERE, False))


def ensure_entrypoint() -> None:
    """Make sure the app script (``explorer_app.py``: sidebar and navigation) runs around every page.

    Streamlit treats an app with a ``pages/`` folder as an old-style
    multipage app until the entry script has called ``st.navigation`` once in
    the server process. If the first request after a start is a deep link
    (``/causal_mask?step=3``), it runs that page file alone, without the
    sidebar, and stays in that mode. Pages call this first: it switches the
    process to ``st.navigation`` mode and reruns, so the entry script runs.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def chosen() -> Settings:
    """The settings as the sidebar and the link hold them."""
    return st.session_state.get("settings", Settings())


def current() -> Settings:
    """The validated settings of this session, with a trained model's sizes (pages call this first)."""
    ensure_entrypoint()
    return weights.effective(chosen())


def start_session() -> None:
    """Read the URL once per session into the settings and the pages' initial state."""
    tolerate_crafted_widgets()
    state = st.session_state
    if "settings" in state:
        return
    params = st.query_params.to_dict()
    settings, notices = _fitted(*from_query_params(params))
    state["settings"] = settings
    state["settings_notices"] = notices
    state["initial_params"] = params
    state["presenter"] = params.get("present", "").lower() in ("1", "true", "yes", "on")
    _to_widgets(settings)


def presenter() -> bool:
    """Presenter mode: large fonts, reduced chrome, for a projector (``?present=1``)."""
    start_session()
    return bool(st.session_state.get("presenter"))


def sidebar() -> Settings:
    """Draw the shared settings and return the validated ``Settings``."""
    start_session()
    state = st.session_state
    state.pop(SET_HERE, None)  # this run draws the settings a page's button set
    if not _widgets_valid():
        _on_change()
    ctx = get_script_run_ctx()
    unreadable = unreadable_notices(ctx.session_id if ctx else None)
    with st.sidebar:
        st.toggle(
            "Presenter mode",
            key="presenter",
            help="Large fonts and figures for a projector; also opens with ?present=1 in the link.",
        )
        st.session_state[LINK_SLOT] = st.container()
        book_label = "The book's example (6 tokens, 3-d)"
        if state["settings"].weights != weights.RANDOM:  # a model reads the sentence's tokens, not the book's vectors
            book_label = "The book's sentence (6 tokens)"
        st.radio(
            "Input",
            (BOOK, TEXT),
            key="w_source",
            format_func=lambda s: "My own sentence" if s != BOOK else book_label,
            on_change=_on_change,
        )
        st.text_input(
            "Sentence",
            key="w_text",
            on_change=_on_change,
            disabled=state["w_source"] == BOOK,
            help="Any text: it is tokenized with GPT-2's BPE. Press Enter to apply.",
        )
        model = _weights_controls()
        columns = st.columns(2)
        for index, (field, label) in enumerate(_NUMBERS):
            limit = LIMITS[field]
            whole = field != "dropout"
            columns[index % 2].number_input(
                label,
                min_value=int(limit.low) if whole else limit.low,
                max_value=int(limit.high) if whole else limit.high,
                step=1 if whole else 0.05,
                format="%d" if whole else "%.2f",
                key=_WIDGETS[field],
                on_change=_on_change,
                args=(field,),
                disabled=(field == "d_in" and state["w_source"] == BOOK) or (model and field in FIXED_BY_MODEL),
                help=f"{limit.help} ({limit.low:,.0f}–{limit.high:,.0f})"
                if whole
                else f"{limit.help} (0–{limit.high})",
            )
        st.toggle(
            "Training mode (dropout on)",
            key="w_training",
            on_change=_on_change,
            help="In eval mode dropout does nothing; in training mode it drops attention weights.",
        )
        for text in [*unreadable, *state.get("settings_notices", [])]:
            notice(text)
        st.segmented_control(
            "Figure download format",
            ("png", "svg"),
            default="png",
            key="w_image_format",
            format_func=str.upper,
            help="What the camera button in each figure's toolbar downloads; PNG is 3× the on-screen size.",
        )
    return weights.effective(state["settings"])


def _weights_controls() -> bool:
    """The Weights choice, and the layer and head of a model's; whether a model's weights are on."""
    checkpoint = weights.gpt2_checkpoint()
    names = dict(weights.NAMES)
    if not checkpoint.ok:
        names[weights.GPT2] = "GPT-2 (not available on this server)"
    st.radio(
        "Weights",
        weights.CHOICES,
        key="w_weights",
        format_func=names.__getitem__,
        on_change=_on_change,
        help="Random: the chapter's seeded weights, with the book's numbers. Trained: one layer of a small GPT "
        "trained on The Verdict, on the input the model feeds that layer. GPT-2: the checkpoint the server's "
        f"operator named in {CHECKPOINT_VARIABLE}. " + ("" if checkpoint.ok else checkpoint.message),
    )
    settings = weights.effective(st.session_state["settings"])
    found = weights.model(settings.weights)
    cfg = found.cfg if found is not None else VERDICT_CONFIG
    layer, head = st.columns(2)
    layer.number_input(
        "layer", 1, cfg.n_layers, step=1, key="w_layer", on_change=_on_change, disabled=found is None,
        help=f"Which of the model's {cfg.n_layers} layers (transformer blocks) the pages show, from 1.",
    )  # fmt: skip
    head.number_input(
        "layer's head", 0, cfg.n_heads - 1, step=1, key="w_head", on_change=_on_change, disabled=found is None,
        help="The head that Q, K, V, Causal mask, Dropout and Batches hold as one CausalAttention, from 0.",
    )  # fmt: skip
    if found is not None:
        st.caption(
            f"The model fixes d_in = {settings.d_in}, d_out = head_dim = {settings.d_out}, num_heads = "
            f"{settings.num_heads} and context_length = {settings.context_length}; seed does not apply."
        )
    return found is not None


def page_param(name: str, value) -> None:
    """Record a page's own state (step, query token, head) for the URL of this run."""
    st.session_state.setdefault(PAGE_PARAMS, {})[name] = str(value)


def initial_param(name: str, page: str) -> str | None:
    """A page parameter from the link that opened this session, used once by ``page``."""
    used = st.session_state.setdefault("initial_params_used", set())
    params = st.session_state.get("initial_params", {})
    if page != "any":  # "any": a parameter that belongs to no page in particular
        link_page = st.session_state.setdefault("link_page", page)  # the page the link opened
        if page != link_page:
            return None
    if (page, name) in used or name not in params:
        return None
    used.add((page, name))
    return params[name]


def kept_index(key: str, name: str, page: str, *, default: int, count: int) -> int:
    """An index a page keeps across reruns and steps (the inspected head, the query token).

    It starts from the link's ``name`` parameter (or ``default``), lives in plain state under
    ``key`` so that it outlives the widgets that change it, is clamped below ``count``, and is
    written into this run's URL.
    """
    if key not in st.session_state:
        linked = initial_param(name, page)
        number = parse_position(linked)
        if linked is not None and number is None:
            notice(f"{name}={quoted(linked)} in the link is not a position; using {default}.")
            number = None
        st.session_state[key] = default if number is None else number
    value = st.session_state[key]
    if not _WHOLE(value) or value < 0:
        notice(f"{name}={quoted(value)} is not a position; using {default}.")
        value = default
    index = st.session_state[key] = max(0, min(value, count - 1))
    page_param(name, index)
    return index


def whole_state(key: str, default: int) -> int:
    """A page's own whole number (>= 1) in ``st.session_state``, or ``default`` with a notice when a
    crafted message left something else there."""
    value = st.session_state.get(key, default)
    if not _WHOLE(value) or value < 1:
        notice(f"{quoted(value)} is not a count; using {default}.")
        value = st.session_state[key] = default
    return value


def kept_widget(key: str, widget: str, default) -> dict:
    """Arguments for a widget whose value is kept under ``key`` while the widget is off screen
    (Streamlit forgets a widget's state when a rerun does not draw it)."""
    value = st.session_state.setdefault(key, default)
    if type(value) is not type(default) and not (_WHOLE(value) and isinstance(default, float)):
        notice(f"{quoted(value)} is not a value this control takes; using {default}.")
        st.session_state[key] = default
    st.session_state[widget] = st.session_state[key]
    return {"key": widget, "on_change": lambda: st.session_state.update({key: st.session_state[widget]})}


def view_params() -> dict[str, str]:
    """The query parameters that reproduce what is on screen now."""
    params = to_query_params(chosen())
    params.update(st.session_state.get(PAGE_PARAMS, {}))
    if st.session_state.get("presenter"):
        params["present"] = "1"
    return params


def share_link(url_path: str) -> None:
    """The "Copy link to this view" control, in the sidebar slot ``sidebar()`` reserved."""
    parts = urllib.parse.urlsplit(st.context.url or "http://localhost:8501/")
    query = urllib.parse.urlencode(view_params(), quote_via=urllib.parse.quote)
    link = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + url_path, query, ""))
    slot = st.session_state.get(LINK_SLOT) or st.sidebar
    with slot.popover("Copy link to this view", icon=":material/link:", width="stretch"):
        st.caption("Opens this page, step and settings with the same numbers. Click the copy icon.")
        st.code(link, language=None, wrap_lines=True)
        if current().source == TEXT and len(current().text) > MAX_URL_TEXT_CHARS:
            st.warning(f"Sentences over {MAX_URL_TEXT_CHARS:,} characters are not put in links.")


def sync_url() -> None:
    """Write the current view into the URL, so the address bar is a deep link."""
    params = view_params()
    st.session_state.pop(PAGE_PARAMS, None)
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
