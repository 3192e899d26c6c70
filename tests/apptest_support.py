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


def function_app(script, *, presenter: bool = False, **kwargs) -> AppTest:
    """An AppTest of ``script`` alone (a function, called with ``kwargs``), in presenter mode if asked."""
    at = AppTest.from_function(script, kwargs=kwargs, default_timeout=30)
    at.session_state["presenter"] = presenter
    return at.run()


def type_sentence(at: AppTest, text: str) -> AppTest:
    """Choose "My own sentence" in the sidebar and type ``text``, as a learner would."""
    at.radio(key="w_source").set_value("text").run()
    return at.text_input(key="w_text").input(text).run()


def stepper_button(at: AppTest, kind: str):
    """The stepper's "next" or "prev" button (key ``next:<page>`` or ``prev:<page>``)."""
    buttons = [b for b in at.button if b.key and b.key.startswith(f"{kind}:")]
    assert len(buttons) == 1, f"expected one {kind} button, found {[b.key for b in at.button]}"
    return buttons[0]


def next_step(at: AppTest) -> AppTest:
    """Press the stepper's Next; the step it opens must run without an exception."""
    stepper_button(at, "next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def previous_step(at: AppTest) -> AppTest:
    """Press the stepper's Previous; the step it opens must run without an exception."""
    stepper_button(at, "prev").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def reveal_button(at: AppTest):
    """The Reveal button of the page's predict-then-reveal question (``explorer.predict``): there is one."""
    (button,) = [b for b in at.button if b.label == "Reveal"]
    return button


def reveal(at: AppTest) -> AppTest:
    """Press Reveal on the page's predict-then-reveal question."""
    return reveal_button(at).click().run()


def markdown(at) -> str:
    """The text of every markdown element in ``at`` (the page, or a part of it such as ``at.sidebar``)."""
    return "\n".join(m.value for m in at.markdown)


def captions(at) -> str:
    """The text of every caption in ``at`` (the page, or a part of it such as ``at.sidebar``)."""
    return "\n".join(c.value for c in at.caption)


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


def zs(at: AppTest) -> list[np.ndarray]:
    """The first trace's ``z`` of every figure on the page: each figure's (first) heatmap."""
    return [decode(spec["data"][0]["z"]) for spec in figure_specs(at)]
