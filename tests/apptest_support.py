"""Helpers for driving the app with Streamlit's ``AppTest``.

``app()`` keeps the app in ``st.navigation`` mode across AppTest's reruns, as a real server
does once the entry script has run: ``explorer.state.ensure_entrypoint`` explains why a
``pages/`` folder makes that necessary. (AppTest resets the flag before every run.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as app_test_module

ROOT = Path(__file__).resolve().parents[1]
ENTRY = str(ROOT / "streamlit_app.py")  # run as a script, it runs explorer_app.py (what st.App serves)


class _NavigationPagesManager(PagesManager):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        PagesManager.uses_pages_directory = False


app_test_module.PagesManager = _NavigationPagesManager


def app(page: str | None = None, *, query_params: dict | None = None, timeout: float = 30) -> AppTest:
    """An AppTest of the whole app, opened on ``page`` (e.g. "pages/tokens.py") as a link would open it,
    with ``query_params`` in the URL."""
    at = AppTest.from_file(ENTRY, default_timeout=timeout)
    if query_params:
        at.query_params.update(query_params)
    if page is not None:
        at.switch_page(page)
    return at.run()


def figure_specs(at: AppTest) -> list[dict]:
    """The JSON of every plotly chart on the page."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def decode(value) -> np.ndarray:
    """A plotly array from figure JSON: a plain list or a base64 typed array."""
    if isinstance(value, dict) and "bdata" in value:
        import base64

        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            array = array.reshape([int(s) for s in str(value["shape"]).split(",")])
        return array
    return np.array(value, dtype=float)
