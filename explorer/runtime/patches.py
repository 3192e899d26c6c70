"""Every change this app makes to Streamlit's internals, in one place, for the Streamlit it was written for.

* ``tolerate_crafted_widgets``: eight widget deserializers read a value they cannot parse as "not sent".
* ``ensure_entrypoint``: ``PagesManager.uses_pages_directory`` is turned off, so a deep link runs the app script.
* ``run_page``: ``Page._can_be_called`` is set again, so a fragment rerun can run the page.

And every read of Streamlit's state that no public call gives, so that no other module imports a private name:

* ``in_a_run``, ``session_id``, ``current_fragment_id``: the script run the calling code is in, if any;
* ``session_active``, ``rerun_session``: another session, by id (the live room's wake-up);
* ``event_container``: where ``st.toast`` draws, for a script that takes no room on the page;
* ``warm_emoji_list``: Streamlit's emoji list loaded before a first page needs it.

Each relies on a private name that a new Streamlit may move. ``STREAMLIT_VERSION`` is the version they were
written and tested for; ``check_version`` (run by ``tests/test_patches.py``) fails, saying what to re-check,
when the installed Streamlit's minor version differs.
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
            "is installed: re-check the widget Serde classes' "
            "deserialize, PagesManager.uses_pages_directory and Page._can_be_called, get_script_run_ctx, "
            "ThreadState, the runtime's _session_mgr, AppSession._client_state, st._event and string_util, then update "
            "STREAMLIT_VERSION."
        )


# Session id -> notices about widget values Streamlit could not read. No lock: a session's list is used only by
# its own script thread, and each change to the dict (setdefault, pop, clear) is one step for the interpreter.
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
    return _UNREADABLE.pop(session_id, []) if session_id else []


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


def run_page(page) -> None:
    """Run the page ``st.navigation`` returned, also when only the fragment around it reruns: Streamlit's
    ``Page.run`` allows one call per run of the entry script, and a fragment rerun does not run that script."""
    page._can_be_called = True  # Streamlit's own guard, which is set again at its first call
    page.run()


# Streamlit's run and session state, read where no public call gives it.


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
    """The session's ``AppSession`` while its browser is connected (the browser test ``test_room`` fails if
    these names change)."""
    from streamlit import runtime

    if not runtime.exists():
        return None
    sessions = getattr(runtime.get_instance(), "_session_mgr", None)  # None in a test's stand-in runtime
    info = None if sessions is None else sessions.get_active_session_info(session_id)
    return None if info is None else info.session


def session_active(session_id: str) -> bool:
    return _session(session_id) is not None


def rerun_session(session_id: str, fragment_id: str = "") -> None:
    """Rerun a Streamlit session from another thread, as a changed source file does with ``runOnSave``: on
    the server's event loop, with the client state of the session's last run (its page and query string; its
    widget values are kept in its session state). With ``fragment_id``, only that fragment reruns, if the
    session still has it."""
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
    """The container where ``st.toast`` draws (``st._event``), or None in another Streamlit: a script put there
    takes no room on the page."""
    return getattr(st, "_event", None)


def warm_emoji_list() -> None:
    """Load Streamlit's emoji list (``st.set_page_config``'s icon reads it) once, before a first page waits on it."""
    from streamlit import string_util

    string_util.is_emoji("🔍")
