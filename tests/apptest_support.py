"""Helpers for driving the app with Streamlit's ``AppTest``.

``app()`` keeps the app in ``st.navigation`` mode across AppTest's reruns, as a real server
does once the entry script has run: ``explorer.runtime.patches.ensure_entrypoint`` explains why a
``pages/`` folder makes that necessary. (AppTest resets the flag before every run.)

Every AppTest shares one component registry, scanned once per process, as a server's sessions share
its runtime's: AppTest otherwise scans every installed package for components on each new app's
first run (0.18 s here, about a third of a short page test).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
from streamlit.components.v2.component_manager import BidiComponentManager
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


@functools.cache
def _components_scanned_once() -> BidiComponentManager:
    manager = BidiComponentManager()
    manager.discover_and_register_components(start_file_watching=False)
    manager.discover_and_register_components = lambda **_: None  # the installed packages do not change
    return manager


app_test_module.BidiComponentManager = _components_scanned_once


def app(page: str | None = None, *, query_params: dict | None = None, timeout: float = 30) -> AppTest:
    """An AppTest of the whole app, opened on ``page`` (e.g. "pages/tokens.py") as a link would open it,
    with ``query_params`` in the URL."""
    at = AppTest.from_file(ENTRY, default_timeout=timeout)
    if query_params:
        at.query_params.update(query_params)
    if page is not None:
        at.switch_page(page)
    return at.run()


def runs_recorded(monkeypatch) -> list:
    """The record (``session.this_run()``) of every page run from now on, last one last: what a run handed its
    downloads, link and panels, which it keeps out of the session."""
    from explorer import session

    records, begin = [], session.begin_run

    def begin_and_record():
        found = begin()
        records.append(session.this_run())
        return found

    monkeypatch.setattr(session, "begin_run", begin_and_record)
    return records


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


def share_link(at: AppTest) -> str:
    """The sidebar's "Copy link to this view": the one link on the page."""
    links = [c.value for c in at.code if c.value.startswith("http")]
    assert len(links) == 1, "exactly one share link is on the page"
    return links[0]


def previous_step(at: AppTest) -> AppTest:
    """Press the stepper's Previous; the step it opens must run without an exception."""
    stepper_button(at, "prev").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def reveal_button(at: AppTest):
    """The Reveal button of the page's predict-then-reveal question (``explorer.widgets.questions``): there is one."""
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


THE_BOOKS = "These are the book's numbers: section "  # how a step's caption begins while its numbers are the book's


@functools.cache
def book_figures() -> dict[str, dict[int, list[tuple]]]:
    """Where each matrix chapter 3 prints for its six-token example is drawn, with the default settings.

    Page stem -> {step (1-based): [(figure title pattern, what it must show)]}; what it must show is the book's
    matrix (a heatmap), ("bars", trace name or "" for the first, the book's row) or ("row", index, the book's row
    of a heatmap). A function, so that importing this module imports no torch (``test_server_first_paint``).
    """
    from attention.book import book_values

    book = book_values()
    query_2 = np.array([[0.4306, 1.4551]])  # section 3.4.1's query_2 = x_2 @ W_query, seed 123
    return {
        "simplified": {
            1: [(r"^attn_scores_2: x\^\(2\) · x\^\(j\)$", ("bars", "", book.simplified_scores[1:2]))],
            2: [(r"^attn_weights_2, three ways$", ("bars", "torch.softmax", book.simplified_weights[1:2]))],
            5: [(r"^attn_scores$", book.simplified_scores), (r"^attn_weights$", book.simplified_weights)],
            6: [(r"^all_context_vecs = attn_weights @ inputs$", book.simplified_context)],
        },
        "qkv": {
            2: [(r"^queries$", ("row", 1, query_2))],
            4: [(r"^context_vec = attn_weights @ values$", book.v1_context)],
            7: [(r"^SelfAttention_v1 with v2's weights$", book.v2_context), (r"^SelfAttention_v2$", book.v2_context)],
        },
        "causal_mask": {
            1: [(r"^attn_weights without a mask$", book.causal_unmasked_weights)],
            2: [(r"^mask_simple = torch\.tril", book.causal_mask_simple)],
            3: [
                (r"^masked_simple = attn_weights", book.causal_masked_simple),
                (r"^masked_simple_norm = masked_simple / row_sums", book.causal_renormalized),
            ],
            4: [(r"^masked = attn_scores", book.causal_masked_scores)],
            5: [
                (r"^masked_simple_norm = masked_simple / row_sums", book.causal_renormalized),
                (r"^attn_weights = softmax", book.causal_weights),
            ],
        },
        "dropout": {
            1: [(r"^Dropout\(0\.5\) on torch\.ones\(6, 6\)$", book.dropout_ones)],
            2: [(r"^attn_weights after dropout$", book.dropout_weights)],
        },
        "batches": {4: [(r"^batch\[0\]: copy 1 · \(6, 2\)$", book.causal_attention_context)]},
        "multihead": {
            3: [(r"^context_vecs, shape \(6, 4\)$", book.wrapper_context)],
            6: [(r"^out_proj → output \(6, 2\)$", book.multihead_context)],
        },
    }


def answer_and_reveal(at: AppTest) -> AppTest:
    """Answer the page's predict-then-reveal question with its first choice (or 1) and press Reveal: a step that
    asks before drawing the chart that would give the answer away (Simplified step 1) draws it then."""
    (box,) = [w for w in (*at.radio, *at.number_input) if w.key.startswith("predict_")]
    if hasattr(box, "options"):  # a radio shows its choices lettered and through the Markdown escaper: undo both
        shown = re.sub(r"^\*\*[A-Z]\.\*\* ", "", box.options[0])
        box.set_value(re.sub(r"\\(.)", r"\1", shown).replace("\u2060", "")).run()
    else:
        box.set_value(1).run()
    return reveal(at)
