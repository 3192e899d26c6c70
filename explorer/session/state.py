"""Settings in the sidebar, mirrored in ``st.session_state`` and the URL.

One ``Settings`` object is the source of truth, and ``current_run`` makes the run's ``Run`` from it
once per change. The sidebar widgets edit it;
their ``on_change`` callback validates the new values and writes any
correction back into the widgets before the page runs, so the sidebar never
shows a value the pages do not use. The URL is rewritten after each run, so a
copied link reproduces the view; a link's parameters are read once, when a
session starts (``links``)."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from explorer.models.choice import effective, fit
from explorer.runtime.patches import ensure_entrypoint, tolerate_crafted_widgets
from explorer.session.keys import (
    CELL_CODE,
    CELL_PANELS_SHOWN,
    INITIAL_PARAMS,
    INITIAL_PARAMS_USED,
    LINK_PAGE,
    LINKED_KEYS,
    PHONE,
    PRESENTER,
    RUN_CELLS,
    RUN_FIGURES,
    RUN_KEY,
    RUN_SECTIONS,
    RUN_STEP,
    SET_HERE,
    SETTINGS,
    SETTINGS_NOTICES,
)
from explorer.settings import BOOK, TEXT, WEIGHTS, Settings, from_query_params, validate
from explorer.views.run import Run

WIDGETS = {  # Settings field -> widget key
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
_KINDS = {  # Settings field -> the check a widget's value must pass before it is used
    "source": lambda v: isinstance(v, str) and v in (BOOK, TEXT),
    "text": lambda v: isinstance(v, str),
    "dropout": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "training": lambda v: isinstance(v, bool),
    "weights": lambda v: isinstance(v, str) and v in WEIGHTS,
}
FIXED_BY_MODEL = ("d_in", "d_out", "num_heads", "context_length", "seed")  # disabled with a model's weights
_WHOLE = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731


def refill_widgets() -> bool:
    """Put the settings back into the settings widgets when Streamlit forgot their values (it clears the
    widgets' state when the server switches the page, as the live room does); True when it did."""
    state = st.session_state
    if all(key in state for key in WIDGETS.values()):
        return False
    _to_widgets(chosen())
    return True


def widgets_valid() -> bool:
    """Whether every settings widget holds a value of the kind its setting needs.

    A crafted websocket message can put any value in a widget (a string in a number input).
    """
    state = st.session_state
    return all(_KINDS.get(field, _WHOLE)(state.get(key)) for field, key in WIDGETS.items())


SHOWN_FROM_1 = ("head",)  # the sidebar counts heads from 1, as the pages' words do; Settings.head is an index


def _from_widgets() -> Settings:
    state = st.session_state
    values = {field: state[key] for field, key in WIDGETS.items()}
    values.update({field: values[field] - 1 for field in SHOWN_FROM_1})
    return Settings(**values)


def _to_widgets(settings: Settings) -> None:
    for field, key in WIDGETS.items():
        value = getattr(settings, field)
        st.session_state[key] = value + 1 if field in SHOWN_FROM_1 else value


def _fitted(settings: Settings, notices: list[str]) -> tuple[Settings, list[str]]:
    """Validated settings whose weights are available and whose layer and head the model has."""
    settings, more = fit(settings)
    return settings, notices + more


def on_change_of(field: str = "") -> None:
    settings, notices = _fitted(*validate(_from_widgets(), keep="num_heads" if field == "num_heads" else "d_out"))
    _to_widgets(settings)
    st.session_state[SETTINGS] = settings
    st.session_state[SETTINGS_NOTICES] = notices


def set_settings(**changes) -> None:
    """Change settings from a page's button (use as an ``on_click`` callback); the next run is the whole
    app's (``begin_run`` returns None), so the sidebar shows them."""
    settings, notices = _fitted(*validate(replace(chosen(), **changes)))
    _to_widgets(settings)
    st.session_state[SETTINGS] = settings
    st.session_state[SETTINGS_NOTICES] = notices
    st.session_state[SET_HERE] = True


def begin_run() -> Run | None:
    """Start a page's run: forget what the previous run drew and return this session's ``Run``. None when a
    page's button changed the settings since the sidebar last drew them: then only a run of the whole app
    redraws the sidebar (a click inside the page reruns the page alone)."""
    state = st.session_state
    if state.pop(SET_HERE, False):
        return None
    state[RUN_FIGURES] = []
    for key in (RUN_STEP, RUN_SECTIONS, RUN_CELLS, CELL_CODE, CELL_PANELS_SHOWN):
        state.pop(key, None)
    return current_run()


def chosen() -> Settings:
    """The settings as the sidebar and the link hold them."""
    return st.session_state.get(SETTINGS, Settings())


def current_run() -> Run:
    """This session's ``Run``: the validated settings with a trained model's sizes, and the sentence prepared
    for them. Made when the settings change and kept in the session, so a click inside a page (a fragment
    rerun) prepares nothing again. Pages call this first: a session's first run also makes sure the app
    script runs around the page (``ensure_entrypoint``)."""
    state = st.session_state
    chosen_now = state.get(SETTINGS) or Settings()
    kept = state.get(RUN_KEY)
    if kept is None or kept[0] is not chosen_now:
        ensure_entrypoint()
        kept = state[RUN_KEY] = (chosen_now, Run.of(effective(chosen_now)))
    return kept[1]


def current() -> Settings:
    """The validated settings of this session, with a trained model's sizes."""
    return current_run().settings


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
    """Whether the browser says it is a phone: "Mobi" in its User-Agent, as every phone browser writes (a
    tablet's is a desktop's). The charts are drawn on the server, so their text size is chosen here."""
    agent = st.context.headers.get("User-Agent")
    return isinstance(agent, str) and "Mobi" in agent


def open_link(params: dict[str, str]) -> None:
    """Open a link's parameters as a session that starts from it does: its settings, and the pages' state (the
    step, the query token, the head) started again from it. Call it before the sidebar's widgets are drawn."""
    state = st.session_state
    settings, notices = _fitted(*from_query_params(params))
    state[SETTINGS] = settings
    state[SETTINGS_NOTICES] = notices
    state[INITIAL_PARAMS] = dict(params)
    for key in state.pop(LINKED_KEYS, set()):
        state.pop(key, None)
    state.pop(INITIAL_PARAMS_USED, None)
    state.pop(LINK_PAGE, None)
    _to_widgets(settings)


def presenter() -> bool:
    """Presenter mode: large fonts, reduced chrome, for a projector (``?present=1``)."""
    start_session()
    return bool(st.session_state.get(PRESENTER))
