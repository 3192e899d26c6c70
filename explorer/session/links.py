"""The link to what is on screen: a page's own state (step, query token, head) recorded for this run's URL,
a link's parameters read once, and the URL and "Copy link to this view" written after each run."""

from __future__ import annotations

import urllib.parse

import streamlit as st

from explorer.session.state import RUN_STEP, chosen
from explorer.settings import MAX_URL_TEXT_CHARS, TEXT, to_query_params

PAGE_PARAMS = "page_params"
LINK_SLOT = "link_slot"  # query parameters a page adds for this run (step, query token, head)


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


def publish_link(url_path: str) -> None:
    """Write this run's view into the URL, so the address bar is a deep link, and offer it as "Copy link to
    this view" in the sidebar slot ``widgets.sidebar`` reserved. The link holds the settings, the step
    (``RUN_STEP``), what the page recorded (``page_param``: a query token, a head) and presenter mode."""
    state = st.session_state
    settings = state.get("settings") or chosen()  # ``chosen``, not entered at each run
    params = dict(to_query_params(settings))  # a copy: the cached dict is shared
    step = state.get(RUN_STEP)
    if step is not None:
        params["step"] = str(step[1] + 1)
    params.update(state.pop(PAGE_PARAMS, {}))
    if state.get("presenter"):
        params["present"] = "1"
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)
    parts = urllib.parse.urlsplit(st.context.url or "http://localhost:8501/")
    query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    link = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + url_path, query, ""))
    slot = st.session_state.get(LINK_SLOT) or st.sidebar
    with slot.popover("Copy link to this view", icon=":material/link:", width="stretch"):
        st.caption("Opens this page, step and settings with the same numbers. Click the copy icon.")
        st.code(link, language=None, wrap_lines=True)
        if settings.source == TEXT and len(settings.text) > MAX_URL_TEXT_CHARS:
            st.warning(f"Sentences over {MAX_URL_TEXT_CHARS:,} characters are not put in links.")
