"""A click inside a page reruns only the page (issue 15): Next asks for a fragment rerun, the sidebar is not
sent again, and the step, the address bar and the share link still follow; a page's button that changes the
settings reruns the whole app, so the sidebar shows them."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

SIDEBAR_WIDGETS = {"text_input", "number_input", "radio", "checkbox"}  # the settings the sidebar draws


def test_next_reruns_only_the_page(app_page):
    app_page.goto("causal_mask")
    assert app_page.step() == (1, 6)
    fragments_before = app_page.events.fragment_requests
    app_page.events.drawn.clear()
    app_page.next()
    assert app_page.step() == (2, 6)
    assert app_page.events.fragment_requests == fragments_before + 1, "Next should ask for a fragment rerun"
    assert ("main", "plotly_chart") in app_page.events.drawn, "the step's figures are drawn"
    sidebar = {kind for where, kind in app_page.events.drawn if where == "sidebar"}
    assert not SIDEBAR_WIDGETS & sidebar, f"the sidebar's settings were drawn again: {sorted(sidebar)}"
    assert re.search(r"[?&]step=the-mask\b", app_page.page.url), app_page.page.url
    app_page.page.get_by_text("Copy link to this view").click()
    link = app_page.page.locator('[data-testid="stPopoverBody"] code').first.inner_text()
    assert re.search(r"/causal_mask\?.*step=the-mask\b", link), link


def test_a_page_button_that_changes_settings_redraws_the_sidebar(app_page):
    app_page.goto("dropout")
    app_page.set_number("w_dropout", 0.2)
    dropout = app_page.page.locator('[data-testid="stSidebar"] .st-key-w_dropout input')
    assert dropout.input_value() == "0.20"
    app_page.press_and_wait(app_page.page.get_by_role("button", name=re.compile("Back to the book's p")))
    app_page.page.wait_for_function(
        """() => document.querySelector('[data-testid="stSidebar"] .st-key-w_dropout input').value === '0.00'""",
        timeout=15_000,
    )
    assert "The book's setting" in app_page.page.locator('[data-testid="stMain"]').inner_text()
