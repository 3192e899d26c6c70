"""Attention Explorer's entry point: ``streamlit run streamlit_app.py``.

Streamlit finds ``app`` below and serves ``explorer_app.py`` (the sidebar, the navigation and the
pages) as an ``st.App``. Its lifespan starts importing torch and the explorer when the server starts,
and its routes give the browser the charts' code to fetch with the page, so the first visitor's page
waits for neither (``explorer/server.py``; BENCHMARKS.md, "Cost per action and first paint").
"""

from pathlib import Path

import streamlit as st

from explorer.server import lifespan, page_routes

PAGE_PATHS = sorted(path.stem for path in (Path(__file__).parent / "pages").glob("*.py"))

app = st.App("explorer_app.py", lifespan=lifespan, routes=page_routes(PAGE_PATHS))
