"""The session layer: one visitor's settings in ``st.session_state`` and the URL, the ``Run`` made from them,
the state a page keeps across reruns, and the link that reproduces a view.

It may import ``views``, ``models``, ``runtime`` and the bottom modules, never ``widgets`` or pages.
"""

from explorer.runtime.patches import ensure_entrypoint
from explorer.session.keys import RUN_FIGURES, RUN_SECTIONS, RUN_STEP
from explorer.session.state import (
    begin_run,
    chosen,
    current,
    current_run,
    initial_param,
    kept_index,
    kept_widget,
    notice,
    page_param,
    presenter,
    set_settings,
    start_session,
    view_link,
    whole_state,
)

__all__ = [
    "RUN_FIGURES",
    "RUN_SECTIONS",
    "RUN_STEP",
    "begin_run",
    "chosen",
    "current",
    "current_run",
    "ensure_entrypoint",
    "initial_param",
    "kept_index",
    "kept_widget",
    "notice",
    "page_param",
    "presenter",
    "set_settings",
    "start_session",
    "view_link",
    "whole_state",
]
