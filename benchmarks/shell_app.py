"""The shell for ``benchmarks.app_scale``: the app's own entry code, ``explorer_app.run``, with ``st.navigation``
given one empty page instead of the app's for the run, so *page − shell* is a page's own cost (BENCHMARKS.md, "App
at scale"). The benchmark times one session at a time on this server, and runs this file beside a link to
``pages/`` (``app_scale.shell_script``)."""

import streamlit as st

import explorer_app
from explorer import session, widgets


def empty() -> None:
    session.current_run()
    st.title("Shell")
    steps = widgets.Steps("shell")
    for title in ("one", "two", "three", "four", "five"):

        def step() -> None:
            """An empty step; a step's name in the URL is its function's, so each gets its title."""

        step.__name__ = title
        steps.add(title)(step)
    steps.show()


def empty_navigation(pages, **options):
    return empty_navigation.real([st.Page(empty, title="Shell", url_path="shell", default=True)], **options)


empty_navigation.real = getattr(st.navigation, "real", st.navigation)
st.navigation = empty_navigation
try:
    explorer_app.run()
finally:
    st.navigation = empty_navigation.real
