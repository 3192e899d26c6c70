"""Two learners on one server: each browser context is its own Streamlit session and sees only its own numbers."""

from __future__ import annotations

import numpy as np
import pytest
from e2e_support import KNOWN_FIGURES, Inputs, app_pages, multihead_output

pytestmark = pytest.mark.browser

ALICE = Inputs(text="Alice likes green apples.", seed=1)
BOB = Inputs(text="Bob builds big wooden boats on Sundays", seed=2, d_out=4)
OUTPUT = KNOWN_FIGURES["multihead"][0].title  # the multi-head page's efficient MultiHeadAttention output
EMBEDDINGS = r"^Input embeddings"
PAGES = {spec.stem: spec for spec in app_pages()}


def assert_sees_only(tab, mine: Inputs, theirs: Inputs, pattern: str, expected) -> None:
    trace = tab.heatmap_of(pattern)
    assert trace is not None, f"no heatmap titled like {pattern!r}"
    np.testing.assert_allclose(trace["z"], expected(mine), atol=1e-6, rtol=1e-5)
    assert tab.tick_labels("y")[trace["plot"]] == mine.labels()
    shown = {label for axis in ("x", "y") for plot in tab.tick_labels(axis) for label in plot}
    assert not (set(theirs.labels()) - set(mine.labels())) & shown, "the other session's tokens are shown"
    sidebar = tab.page.locator('[data-testid="stSidebar"]')
    assert sidebar.locator(".st-key-w_seed input").input_value() == str(mine.seed)
    assert sidebar.locator(".st-key-w_d_out input").input_value() == str(mine.d_out)
    assert tab.sentence_input().input_value() == mine.text


def both(tabs, action) -> None:
    """Start ``action`` in every tab before waiting for any, so the two sessions' runs overlap."""
    before = [tab.answers() for tab in tabs]
    for tab in tabs:
        action(tab)
    for tab, answered in zip(tabs, before, strict=True):
        tab.wait_for_answer(answered)


def test_two_sessions_never_see_each_others_numbers(open_app):
    alice, bob = open_app(), open_app()
    multihead = PAGES["multihead"].url_path
    for tab in (alice, bob):
        tab.goto(multihead)
        tab.choose_own_sentence()

    alice.type_sentence(ALICE.text)
    before = bob.runs()
    bob.type_sentence(BOB.text)
    alice.set_number("w_seed", ALICE.seed)
    bob.set_number("w_seed", BOB.seed)
    runs = alice.runs()
    bob.set_number("w_d_out", BOB.d_out)
    assert alice.runs() == runs  # Bob's change did not rerun Alice's session
    assert bob.runs() > before

    while alice.heatmap_of(OUTPUT) is None or bob.heatmap_of(OUTPUT) is None:
        assert alice.step()[0] < alice.step()[1], f"no heatmap titled like {OUTPUT!r} on the multi-head page"
        both([tab for tab in (alice, bob) if tab.heatmap_of(OUTPUT) is None], lambda tab: tab.button("next").click())
    assert alice.step() == bob.step()
    assert_sees_only(alice, ALICE, BOB, OUTPUT, multihead_output)
    assert_sees_only(bob, BOB, ALICE, OUTPUT, multihead_output)
    assert alice.heatmap_of(OUTPUT)["z"].shape != bob.heatmap_of(OUTPUT)["z"].shape

    # A reload starts a new session from the URL, which holds each tab's own settings and step.
    for tab in (alice, bob):
        tab.page.reload(wait_until="commit")
    for tab in (alice, bob):
        tab.settle()
    assert_sees_only(alice, ALICE, BOB, OUTPUT, multihead_output)
    assert_sees_only(bob, BOB, ALICE, OUTPUT, multihead_output)

    # Same sessions, another page: the sidebar's navigation keeps each one's settings.
    link = '[data-testid="stSidebarNav"] a'
    both([alice, bob], lambda tab: tab.page.locator(link).filter(has_text=PAGES["tokens"].title).click())
    both([alice, bob], lambda tab: tab.button("next").click())
    assert_sees_only(alice, ALICE, BOB, EMBEDDINGS, lambda i: i.embeddings().numpy())
    assert_sees_only(bob, BOB, ALICE, EMBEDDINGS, lambda i: i.embeddings().numpy())
