"""Every page in the navigation, in Chromium: default input and a typed sentence, every step.

At each step the plots must have painted, no exception may show, and every
number read back from the drawn plots (``.js-plotly-plot`` ``.data``) must equal
what the app computed for the same settings in ``AppTest``; figures with a known
title must also equal what the ``attention`` package computes directly. Each
step leaves a 1280×720 screenshot in ``artifacts/e2e/``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from e2e_support import (
    KNOWN_FIGURES,
    AppReference,
    Inputs,
    app_pages,
    assert_same_plots,
    check_known_figures,
    eventually,
    stepped_pages,
)

import attention

pytestmark = pytest.mark.browser

PAGES = app_pages()
TOKENS = next(spec for spec in PAGES if spec.stem == "tokens")
SENTENCE = "Attention lets every token look back at the tokens before it."


def test_navigation_lists_the_tested_pages(app_page):
    """The sidebar's navigation has exactly the pages these tests are parametrized with, in order."""
    app_page.goto()
    links = app_page.page.locator('[data-testid="stSidebarNav"] a')
    hrefs = [href.removeprefix(app_page.base_url).strip("/") for href in links.evaluate_all("a => a.map(e => e.href)")]
    titles = links.all_inner_texts()  # icon name and title, e.g. "text_fieldsTokens & embeddings"
    assert hrefs == [spec.url_path for spec in PAGES]
    for spec in PAGES:
        assert any(spec.title in t for t in titles), f"{spec.title!r} is not in the navigation {titles}"


def walk(app_page, reference, spec, inputs: Inputs, label: str, seen: set[str]) -> int:
    """Check the current step, then press Next until it is disabled; returns the number of steps."""
    while True:
        step, total = app_page.step()
        where = f"{spec.stem} ({label}) step {step}/{total}"

        def same(where=where):
            browser = app_page.plots()
            assert_same_plots(browser, reference.plots(), where)
            return browser

        drawn = eventually(same)
        for plot in drawn:
            for trace in plot.heatmaps():
                assert trace["z"] is not None and trace["z"].size > 0, f"{where}: {plot.title!r} has no data"
        check_known_figures(spec.stem, app_page.step_name(), drawn, inputs, seen)
        app_page.screenshot(f"{spec.stem}-{label}-step{step}")
        if step == total:
            assert app_page.button("next").is_disabled(), f"{where}: Next is enabled on the last step"
            return total
        app_page.next()
        reference.next()
        # The stepper's label, not the run's end: the browser may draw the run a moment after it ended (seen in CI
        # on 2 cores at Multi-head step 3, whose next step draws a table; the click had moved the step).
        app_page.wait_for_step(step + 1)
        log = "".join(f"\n  {at} {way} {what}" for at, way, what in app_page.events.log)
        assert app_page.step() == (step + 1, total), f"{where}: Next did not move one step; last messages:{log}"


def assert_known_figures_seen(spec, seen: set[str]) -> None:
    expected = {known.title for known in KNOWN_FIGURES.get(spec.stem, [])}
    assert expected <= seen, f"{spec.stem}: no figure titled like {sorted(expected - seen)} was drawn"


@pytest.mark.parametrize("spec", stepped_pages(), ids=lambda s: s.stem)
def test_page_with_the_books_example(app_page, spec):
    app_page.goto(spec.url_path)
    reference = AppReference(spec)
    assert app_page.step()[0] == 1
    assert app_page.button("prev").is_disabled()
    seen: set[str] = set()
    total = walk(app_page, reference, spec, Inputs(), "book", seen)
    assert total >= 1
    assert_known_figures_seen(spec, seen)


@pytest.mark.parametrize("spec", stepped_pages(), ids=lambda s: s.stem)
def test_page_with_a_typed_sentence(app_page, spec):
    app_page.goto(spec.url_path)
    reference = AppReference(spec)
    app_page.type_sentence(SENTENCE)
    reference.type_sentence(SENTENCE)
    assert app_page.sentence_input().input_value() == SENTENCE
    seen: set[str] = set()
    total = walk(app_page, reference, spec, Inputs(text=SENTENCE), "sentence", seen)
    assert_known_figures_seen(spec, seen)
    for back in range(total - 1, 0, -1):  # and back again with Previous
        app_page.previous()
        reference.previous()
        app_page.wait_for_step(back)
    assert app_page.step() == (1, total)
    assert app_page.button("prev").is_disabled()
    assert_same_plots(app_page.plots(), reference.plots(), f"{spec.stem} back at step 1")


def test_tokens_page_shows_the_books_embeddings_then_the_sentence(app_page):
    """The Tokens page's input matrix is ``BOOK_INPUTS``, then ``embed_tokens`` of the typed sentence."""
    app_page.goto(TOKENS.url_path, "step=embeddings")
    (heatmap,) = [t for p in app_page.plots() for t in p.heatmaps()]
    np.testing.assert_array_equal(heatmap["z"], attention.BOOK_INPUTS.numpy())
    assert app_page.tick_labels("y")[0] == list(attention.BOOK_TOKENS)
    app_page.type_sentence(SENTENCE)
    tokens = attention.tokenize(SENTENCE)
    (heatmap,) = [t for p in app_page.plots() for t in p.heatmaps()]
    np.testing.assert_allclose(heatmap["z"], attention.embed_tokens(tokens.ids, 3, 123).numpy(), atol=1e-7)
    assert app_page.tick_labels("y")[0] == Inputs(text=SENTENCE).labels()


SPEED = next((spec for spec in PAGES if spec.stem == "speed"), None)


@pytest.mark.skipif(SPEED is None, reason="no Speed page in the navigation")
def test_speed_page_measures_when_asked(app_page):
    """Timings differ run to run, so they cannot equal AppTest's: they must be drawn, finite and positive,
    and the computed reference line must be b·num_heads·T²·4 bytes at the sizes shown."""
    app_page.goto(SPEED.url_path)
    label = app_page.page.locator('[data-testid="stMain"] [data-testid="stPopover"]').filter(has_text="Sizes")
    listed = [int(t) for t in re.search(r"T = ([\d, ]+) ·", label.inner_text()).group(1).split(", ")]
    app_page.press_and_wait(app_page.page.locator('[data-testid="stMain"] .st-key-speed_run button'))
    assert "did not fit" not in app_page.page.inner_text('[data-testid="stMain"]')
    app_page.next()
    timings = app_page.plots()
    assert timings and all(np.all(np.isfinite(t["y"]) & (t["y"] > 0)) for p in timings for t in p.traces)
    drawn = app_page.page.evaluate("() => document.querySelector('.js-plotly-plot').data[0].x")
    assert drawn == listed  # the default run measured every size its label lists, and only those
    app_page.screenshot("speed-measured-step2")
    app_page.next()
    (memory,) = app_page.plots()
    sizes = dict(re.findall(r"(\w+) = (\d+)", memory.title))
    num_tokens = np.array(app_page.page.evaluate("() => document.querySelector('.js-plotly-plot').data[0].x"))
    computed = next(t for t in memory.traces if t["name"].startswith("one (b, num_heads, T, T) tensor"))
    expected = int(sizes["b"]) * int(sizes["num_heads"]) * num_tokens**2 * 4 / 2**20  # float32 bytes → MiB
    np.testing.assert_allclose(computed["y"], expected, rtol=1e-9)
    assert all(np.all(np.isfinite(t["y"]) & (t["y"] > 0)) for t in memory.traces)
    app_page.screenshot("speed-measured-step3")


def test_a_deep_link_finds_the_server_at_once(app_page):
    """Issue 54: opened at /glossary, Streamlit's frontend asked /glossary/_stcore/health and /host-config first (two
    404s in the console) before the root. Now the page names the root, and moving to another page keeps its path."""
    missing = []
    app_page.page.on("response", lambda reply: reply.status == 404 and missing.append(reply.url))
    app_page.goto("glossary", "present=1")
    app_page.goto("dropout", "step=2")
    assert missing == []
    app_page.page.locator('[data-testid="stSidebarNav"]').get_by_text("Tokens & embeddings").click()
    app_page.page.wait_for_url(re.compile(r"/tokens(\?|$)"))
    app_page.settle()
    assert missing == []
