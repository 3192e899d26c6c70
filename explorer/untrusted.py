"""Untrusted input made harmless: what a link or a websocket message sends is shown literally and
never breaks a session.

Notices quote values a visitor chose (``settings.quoted``) and draw them with every Markdown
character escaped (``literal``). A widget value Streamlit cannot parse is read as "not sent", with
a notice for that session (``tolerate_crafted_widgets``, ``unreadable_notices``).
"""

from __future__ import annotations

import threading

import streamlit as st
from streamlit.elements.widgets import (
    button_group,
    checkbox,
    multiselect,
    number_input,
    select_slider,
    selectbox,
    slider,
)
from streamlit.runtime.scriptrunner import get_script_run_ctx

from .settings import quoted

# Every ASCII punctuation character, which Markdown lets a backslash make literal.
_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()<>#+-.!|~:$&\"'=/^%;,?@")


def literal(text: str) -> str:
    """``text`` escaped so that Markdown shows it as it is: no link, image, emphasis or HTML.

    Notices quote what a link or a message sent (``settings.quoted``); Streamlit draws
    ``st.info``'s body as Markdown, so ``[Log in](https://evil.example)`` would be a link and
    ``![x](https://evil.example/p.png)`` a fetched image. A backslash makes every punctuation
    character literal. Bare addresses ("https://…", "www.…", "a@b.c") are linked after parsing,
    from the text itself, so an invisible word joiner (U+2060) before each ":", "." and "@" breaks
    them; the notice reads the same.
    """
    escaped = "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in str(text))
    return escaped.replace("\\:", "\u2060\\:").replace("\\.", "\u2060\\.").replace("\\@", "\u2060\\@")


def notice(text: str, *, where=None) -> None:
    """A notice that may quote user input, drawn literally (``literal``)."""
    (where or st).info(literal(text), icon=":material/info:")


_UNREADABLE: dict[str, list[str]] = {}  # session id -> notices about widget values Streamlit could not read
_UNREADABLE_LOCK = threading.Lock()


def _record_unreadable(ui_value) -> None:
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    with _UNREADABLE_LOCK:
        if len(_UNREADABLE) > 1000:  # sessions that never drew their notices
            _UNREADABLE.clear()
        notices = _UNREADABLE.setdefault(ctx.session_id, [])
        if len(notices) < 5:
            notices.append(f"A control was sent {quoted(ui_value)}, which it does not take; it keeps its value.")


def tolerate_crafted_widgets() -> None:
    """Make Streamlit's widgets read a value they cannot parse as "no value sent" (their current value),
    and record a notice for the session; once per process.

    A browser sends each widget a value of its kind, but a crafted websocket message can send a
    number input the string "abc". Streamlit's own ``int("abc")`` then raises before any of this
    app's code runs, and the session shows an exception until it reloads.
    """
    for serde in (
        number_input.NumberInputSerde,
        slider.SliderSerde,
        select_slider.SelectSliderSerde,
        selectbox.SelectboxSerde,
        checkbox.CheckboxSerde,
        button_group._SingleSelectButtonGroupSerde,
        button_group._MultiSelectButtonGroupSerde,
        multiselect.MultiSelectSerde,
    ):
        original = serde.deserialize
        if getattr(original, "tolerant", False):
            continue

        def deserialize(self, ui_value, original=original):
            try:
                return original(self, ui_value)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError):
                _record_unreadable(ui_value)
                return original(self, None)

        deserialize.tolerant = True
        serde.deserialize = deserialize


def unreadable_notices(session_id: str | None) -> list[str]:
    """The notices recorded for this session's unreadable widget values, taken once."""
    with _UNREADABLE_LOCK:
        return _UNREADABLE.pop(session_id, []) if session_id else []
