"""Every patch of Streamlit's internals sits in ``explorer/runtime/patches.py``, written for one Streamlit."""

import inspect
import re
from pathlib import Path

import pytest
import streamlit as st
from packaging.requirements import Requirement
from streamlit.runtime.pages_manager import PagesManager

from explorer.runtime import patches


def test_the_installed_streamlit_is_the_one_the_patches_were_written_for():
    patches.check_version()  # raises, naming what to re-check, after an upgrade past STREAMLIT_VERSION


def test_another_streamlit_fails_with_what_to_recheck():
    with pytest.raises(RuntimeError, match=re.escape("written for Streamlit 1.67 and Streamlit 1.99.0 is installed")):
        patches.check_version("1.99.0")
    patches.check_version(patches.STREAMLIT_VERSION + ".5")  # a patch release of the same minor is fine


def test_requirements_allow_only_the_streamlit_the_patches_were_written_for():
    lines = (Path(__file__).resolve().parents[1] / "requirements.txt").read_text().splitlines()
    (allowed,) = [Requirement(line).specifier for line in lines if line.startswith("streamlit")]
    major, minor = (int(n) for n in patches.STREAMLIT_VERSION.split("."))
    assert f"{major}.{minor}.0" in allowed and f"{major}.{minor}.9" in allowed
    assert f"{major}.{minor + 1}.0" not in allowed, "requirements.txt allows a Streamlit the patches were not tested on"
    assert f"{major}.{minor - 1}.9" not in allowed


def test_the_private_names_the_patches_use_are_still_there():
    assert hasattr(PagesManager, "uses_pages_directory")
    assert "self._can_be_called" in inspect.getsource(type(st.Page("pages/tokens.py")).run)  # run_page sets it


def test_the_private_names_the_run_and_session_reads_use_are_still_there():
    """``in_a_run``, ``session_id``, ``current_fragment_id``, ``rerun_session``, ``event_container`` and
    ``warm_emoji_list`` read these; the browser test ``test_room`` also wakes a real session through them."""
    from streamlit import string_util
    from streamlit.runtime import Runtime
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

    assert get_script_run_ctx() is None and not patches.in_a_run() and patches.session_id() is None
    assert callable(ThreadState.get) and patches.current_fragment_id() is None
    assert "self._session_mgr" in inspect.getsource(Runtime.__init__)
    for name in ("_client_state", "_call_soon_on_event_loop", "has_fragment", "request_rerun"):
        assert name in inspect.getsource(AppSession), name
    assert patches.event_container() is not None and callable(string_util.is_emoji)
    assert not patches.session_active("no such session")
