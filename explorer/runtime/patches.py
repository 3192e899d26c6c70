"""Every change this app makes to Streamlit's internals (widget deserializers, the entry point, a page's run) and
every read of its state that no public call gives (the run, a session by id, the event container, the emoji list).

Each relies on a private name that a new Streamlit may move: ``check_version`` (run by ``tests/test_patches.py``)
fails, saying what to re-check, when the installed minor version is not ``STREAMLIT_VERSION``.
"""

from __future__ import annotations

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

from explorer.settings import quoted

STREAMLIT_VERSION = "1.67"  # the major.minor these patches were written for


def check_version(installed: str = st.__version__) -> None:
    """Raise ``RuntimeError`` naming each patch to re-check when ``installed`` is not ``STREAMLIT_VERSION``."""
    if ".".join(installed.split(".")[:2]) != STREAMLIT_VERSION:
        raise RuntimeError(
            f"explorer/runtime/patches.py was written for Streamlit {STREAMLIT_VERSION} and Streamlit {installed} "
            "is installed: re-check the widget Serde classes' deserialize, PagesManager.uses_pages_directory and "
            "Page._can_be_called, get_script_run_ctx, ThreadState, the runtime's _session_mgr, "
            "AppSession._client_state, st._event and string_util, then update STREAMLIT_VERSION."
        )


# Session id -> notices of widget values Streamlit could not read. No lock: a session's list is used by its own
# script thread only, and each change to the dict is one step for the interpreter.
_UNREADABLE: dict[str, list[str]] = {}


def _record_unreadable(ui_value) -> None:
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    if len(_UNREADABLE) > 1000:  # sessions that never drew their notices
        _UNREADABLE.clear()
    notices = _UNREADABLE.setdefault(ctx.session_id, [])
    if len(notices) < 5:
        notices.append(f"A control was sent {quoted(ui_value)}, which it does not take; it keeps its value.")


def tolerate_crafted_widgets() -> None:
    """Make eight widgets read a value they cannot parse (a crafted message's "abc" for a number, which raised before
    any app code ran, until a reload) as "none sent", with a notice for the session."""
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
    return _UNREADABLE.pop(session_id, []) if session_id else []


def ensure_entrypoint() -> None:
    """Make the app script (sidebar, navigation) run around every page: a deep link as a server's first request ran
    the page alone, in the old ``pages/`` mode, until ``st.navigation`` was called. This switches mode and reruns."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def run_page(page) -> None:
    """Run the page ``st.navigation`` returned, also when only the fragment around it reruns: Streamlit's
    ``Page.run`` allows one call per run of the entry script, and a fragment rerun does not run that script."""
    page._can_be_called = True  # Streamlit's own guard, which is set again at its first call
    page.run()


def in_a_run() -> bool:
    """The calling code runs in a script run (a page), not in a test, a tool or a server thread."""
    return get_script_run_ctx() is not None


def session_id() -> str | None:
    """The id of the session whose script run the calling code is in; None outside a run."""
    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def current_fragment_id() -> str | None:
    """The id of the fragment the calling code runs in (Streamlit keeps it in a private per-thread state)."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        return ThreadState.get().fragment_id
    except (ImportError, AttributeError, RuntimeError):
        return None


def _session(session_id: str):
    """The session's ``AppSession`` while its browser is connected (the browser test ``test_room`` checks these)."""
    from streamlit import runtime

    if not runtime.exists():
        return None
    sessions = getattr(runtime.get_instance(), "_session_mgr", None)  # None in a test's stand-in runtime
    info = None if sessions is None else sessions.get_active_session_info(session_id)
    return None if info is None else info.session


def session_active(session_id: str) -> bool:
    return _session(session_id) is not None


def rerun_session(session_id: str, fragment_id: str = "") -> None:
    """Rerun a session from another thread as ``runOnSave`` does: on the event loop, with its last run's page and
    query string; with ``fragment_id``, only that fragment, if the session still has it."""
    session = _session(session_id)
    if session is None:
        return

    def rerun() -> None:
        from streamlit.proto.ClientState_pb2 import ClientState

        if not session._client_state.page_script_hash:  # its first run has not ended: it reads the room itself
            return  # (a rerun now would replace that run by one without the link's parameters)
        state = ClientState()
        state.CopyFrom(session._client_state)
        state.fragment_id = fragment_id if fragment_id and session.has_fragment(fragment_id) else ""
        session.request_rerun(state)

    session._call_soon_on_event_loop(rerun)


def event_container():
    """The container where ``st.toast`` draws (``st._event``; a script there takes no room), or None."""
    return getattr(st, "_event", None)


def warm_emoji_list() -> None:
    """Load Streamlit's emoji list (``st.set_page_config``'s icon reads it) once, before a first page waits on it."""
    from streamlit import string_util

    string_util.is_emoji("🔍")
