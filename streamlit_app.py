"""Attention Explorer's entry point: ``streamlit run streamlit_app.py``.

Streamlit finds ``app`` below and serves ``explorer_app.py`` (the sidebar, the navigation and the pages) as an
``st.App``. Its lifespan imports the first page's modules when the server starts (they need no torch: torch is imported
after the first page has painted), and its routes give the browser the charts' code to fetch with the page
(``explorer/runtime/server.py``; BENCHMARKS.md, "Cost per action and first paint").

Run as a script instead (``AppTest.from_file("streamlit_app.py")``, or a Streamlit that runs the entry file as the app),
it runs ``explorer_app.py`` itself, so the app is the same either way.
"""

import runpy
from pathlib import Path

import streamlit as st

from explorer.runtime import patches
from explorer.runtime.server import lifespan, page_routes

APP_SCRIPT = Path(__file__).with_name("explorer_app.py")
PAGE_PATHS = sorted(path.stem for path in (Path(__file__).parent / "pages").glob("*.py"))

if not patches.in_a_run():  # imported by `streamlit run`, which serves the st.App
    app = st.App(APP_SCRIPT.name, lifespan=lifespan, routes=page_routes(PAGE_PATHS))
else:  # a script run of this file: be the app
    runpy.run_path(str(APP_SCRIPT), run_name="__main__")
