"""Stepping with the keyboard: ← → and PageUp/PageDown (presentation clickers), never while typing."""

from __future__ import annotations

import pytest
from e2e_support import app_pages

pytestmark = pytest.mark.browser

TOKENS = next(spec for spec in app_pages() if spec.stem == "tokens")


def press(tab, key: str) -> None:
    """Press ``key`` on the page and wait for the rerun it asks for."""
    runs, requests = tab.answers(), tab.requests()
    tab.page.keyboard.press(key)
    tab.wait_for_answer(runs)
    assert tab.requests() > requests  # the signal the Sentence box test watches for


def test_keys_move_the_stepper(app_page):
    app_page.goto(TOKENS.url_path)
    app_page.page.locator('[data-testid="stMain"] h1').first.click()  # focus on the page, not in a field
    assert app_page.step() == (1, 2)
    for key, step in (("ArrowRight", 2), ("ArrowLeft", 1), ("PageDown", 2), ("PageUp", 1)):
        press(app_page, key)
        assert app_page.step() == (step, 2), f"{key} should move to step {step}"


def test_keys_typed_in_the_sentence_box_do_not_step(app_page):
    app_page.goto(TOKENS.url_path)
    app_page.type_sentence("Keys in a text box move the caret")
    box = app_page.sentence_input()
    for step, keys in ((1, ("ArrowRight", "PageDown")), (2, ("ArrowLeft", "PageUp"))):
        if app_page.step()[0] != step:
            app_page.next()
        box.click()
        for key in keys:
            before = app_page.requests()
            box.press(key)
            app_page.assert_no_rerun_requested(before)
            assert app_page.step()[0] == step, f"{key} in the Sentence box changed the step"
    box.press("End")
    box.press("ArrowLeft")
    box.type("!")  # the arrow moved the caret inside the text, as it should
    assert box.input_value() == "Keys in a text box move the caret"[:-1] + "!t"
