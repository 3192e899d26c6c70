"""The link to what is on screen: a page's own state (step, query token, head) recorded for this run's URL,
a link's parameters read once, and the link that reproduces the view (``widgets.downloads.finish_run`` writes it
into the URL and the "Copy link to this view" popover after each run)."""

from __future__ import annotations

import functools
import urllib.parse

import streamlit as st

from explorer.session.keys import INITIAL_PARAMS, INITIAL_PARAMS_USED, LINK_PAGE, LINKED_KEYS, PAGE_PARAMS
from explorer.settings import Settings, to_query_params


def page_param(name: str, value) -> None:
    """Record a page's own state (step, query token, head) for the URL of this run."""
    st.session_state.setdefault(PAGE_PARAMS, {})[name] = str(value)


def initial_param(name: str, page: str, key: str | None = None) -> str | None:
    """A page parameter from the link that opened this session, used once by ``page``; ``key`` is the state key
    the page starts from it, which a link opened later (``state.open_link``) starts again."""
    if key is not None:
        st.session_state.setdefault(LINKED_KEYS, set()).add(key)
    used = st.session_state.setdefault(INITIAL_PARAMS_USED, set())
    params = st.session_state.get(INITIAL_PARAMS, {})
    if page != "any":  # "any": a parameter that belongs to no page in particular
        link_page = st.session_state.setdefault(LINK_PAGE, page)  # the page the link opened
        if page != link_page:
            return None
    if (page, name) in used or name not in params:
        return None
    used.add((page, name))
    return params[name]


@functools.lru_cache(maxsize=1024)
def view_link(
    settings: Settings, step: tuple | None, page_params: tuple, presenter: bool, base_url: str | None, url_path: str
) -> tuple[dict[str, str], str]:
    """The query parameters that reproduce a view, and its whole link: the settings, the step (``RUN_STEP``),
    what the page recorded (``page_param``: a query token, a head, a cell) and presenter mode."""
    params = dict(to_query_params(settings))  # a copy: the cached dict is shared
    if step is not None:
        params["step"] = step[3] if len(step) > 3 else str(step[1] + 1)  # the step's name
    params.update(page_params)
    if presenter:
        params["present"] = "1"
    parts = urllib.parse.urlsplit(base_url or "http://localhost:8501/")
    query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    return params, urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + url_path, query, ""))
