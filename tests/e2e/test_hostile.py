"""Hostile and odd sentences, typed into the running app in Chromium.

Each must end in readable, literal labels (what was typed, with whitespace and
invisible characters made visible), no script execution (any dialog fails the
test), no traceback, and the user's text preserved in the Sentence box.
"""

from __future__ import annotations

import numpy as np
import pytest
from e2e_support import (
    AppReference,
    Inputs,
    PageSpec,
    app_pages,
    assert_same_plots,
    causal_page_seed,
    causal_weights,
    eventually,
    open_page,
)

import attention

pytestmark = pytest.mark.browser

HOSTILE = {
    "img-onerror": "<img src=x onerror=alert(1)>",
    "bold-tag": "<b>bold</b>",
    "line-break-tag": "one<br>two",
    "javascript-link": '<a href="javascript:alert(1)">x</a>',
    "entity": "fish &amp; chips",
    "markdown-bold": "**x** and __x__",
    "markdown-link": "[x](javascript:alert(1))",
    "endoftext": "first<|endoftext|>second",
    "emoji": "I ❤️ 🤖 and 👩‍👩‍👧 🇫🇷",
    "right-to-left": "hello שלום world مرحبا بالعالم",
    "bidi-override": "abc\u202edef\u202cghi",
    "zero-width": "a\u200bb\u200cc\u200dd\ufeffe\u2060f",
    "control-characters": "bell\x07 escape\x1b tab\t delete\x7f",
    "template-syntax": "%{z} {{7*7}} ${alert(1)} $x^2$",
}
TOKENS_PAGE = next(spec for spec in app_pages() if spec.stem == "tokens")
EMBEDDINGS = r"^Input embeddings"


@pytest.fixture(scope="module")
def tab(server, browser):
    """One tab for the module, on the Tokens page's embedding step with "My own sentence" selected."""
    context, app_page = open_page(browser, server)
    try:
        app_page.goto(TOKENS_PAGE.url_path, "step=embeddings")
        app_page.choose_own_sentence()
        yield app_page
    finally:
        context.close()


@pytest.fixture
def tokens_tab(tab):
    """The module's tab on the embedding step, whatever the previous test left; checked for dialogs and errors."""
    if not tab.has_stepper():  # an empty sentence shows only a prompt
        tab.type_sentence("Back to a sentence")
    if tab.step()[0] != 2:
        tab.next()
    yield tab
    problems = tab.events.problems()
    tab.events.clear()
    assert not problems, "the browser reported:\n" + "\n".join(problems)


def assert_literal(app_page, text: str) -> None:
    """The Sentence box holds ``text`` and the plot shows its tokens, literally, with their embeddings."""
    expected = Inputs(text=text)
    assert app_page.sentence_input().input_value() == text
    eventually(lambda: _labels_are(app_page, expected.labels()))
    trace = app_page.heatmap_of(EMBEDDINGS)
    np.testing.assert_allclose(trace["z"], expected.embeddings().numpy(), atol=1e-7)
    assert app_page.injected_markup() == []
    app_page.assert_no_exception()


def _labels_are(app_page, labels: list[str]) -> None:
    plots = app_page.tick_labels("y")
    assert len(plots) == 1 and plots[0] == labels


@pytest.mark.parametrize(("name", "text"), HOSTILE.items(), ids=HOSTILE.keys())
def test_hostile_sentence_on_the_tokens_page(tokens_tab, name, text):
    tokens_tab.type_sentence(text)
    assert_literal(tokens_tab, text)
    tokens_tab.screenshot(f"hostile-{name}")
    tokens_tab.previous()  # the token table
    eventually(lambda: _table_shows(tokens_tab, text))
    assert tokens_tab.injected_markup() == []
    tokens_tab.assert_no_exception()


def _table_shows(app_page, text: str) -> None:
    """The token table's rendered rows (the grid draws only what is scrolled into view) are literal."""
    labels, ids = Inputs(text=text).labels(), attention.tokenize(text).ids
    rows = app_page.table_rows()
    assert len(rows) >= min(len(labels), 10), f"only {len(rows)} rows of {len(labels)} are drawn"
    for position, token, token_id in rows:
        index = int(position) - 1  # the table counts tokens from 1, as the book does
        assert (token, token_id) == (labels[index], str(ids[index])), f"row {position}"


def test_empty_and_blank_sentences_get_a_prompt(tokens_tab):
    for text in ("", "   \t  "):
        tokens_tab.type_sentence(text)
        alert = tokens_tab.page.locator('[data-testid="stMain"] [data-testid="stAlert"]')
        assert "Type a sentence" in alert.first.inner_text()
        assert tokens_tab.sentence_input().input_value() == text
        assert tokens_tab.plots() == []
        tokens_tab.assert_no_exception()
    tokens_tab.type_sentence("back to normal")
    assert_literal(tokens_tab, "back to normal")


def test_a_50000_character_paste(tokens_tab):
    """A long paste is kept whole in the box, cut to context_length tokens, and drawn like the app computes it."""
    text = ("The quick brown fox <b>jumps</b> over the lazy dog & naps. " * 900)[:50_000]
    tokens_tab.type_sentence(text)
    assert len(tokens_tab.sentence_input().input_value()) == 50_000
    assert tokens_tab.sentence_input().input_value() == text
    main = tokens_tab.page.locator('[data-testid="stMain"]')
    assert "only the first 1,024" in main.inner_text()
    reference = AppReference(TOKENS_PAGE)
    reference.type_sentence(text)
    reference.next()
    eventually(lambda: assert_same_plots(tokens_tab.plots(), reference.plots(), "50,000 characters"))
    (figure,) = reference.plots()
    assert tokens_tab.tick_labels("y")[0] == figure.y_ticks  # what the app labelled, shown literally
    assert tokens_tab.injected_markup() == []
    tokens_tab.assert_no_exception()


def test_rapid_repeated_edits_end_with_the_last_sentence(tokens_tab):
    sentences = [f"Edit number {k} of five, typed fast." for k in range(1, 5)] + ["The last one wins."]
    for text in sentences:
        tokens_tab.type_sentence(text, wait=False)
    eventually(lambda: _labels_are(tokens_tab, Inputs(text=sentences[-1]).labels()), timeout=120)
    tokens_tab.settle()
    assert_literal(tokens_tab, sentences[-1])


ATTENTION_PAGES = {  # page stem -> a heatmap title (regular expression) with tokens on both axes
    "causal_mask": r"^attn_weights = softmax\(masked / √d_k\)$",
    "multihead": r"^head \d+: attn_weights",
}


@pytest.mark.parametrize("stem", ATTENTION_PAGES)
def test_hostile_sentences_on_attention_pages(app_page, stem):
    spec: PageSpec = next(s for s in app_pages() if s.stem == stem)
    app_page.goto(spec.url_path)
    app_page.step_to_heatmap(ATTENTION_PAGES[stem])
    for text in (HOSTILE["img-onerror"], HOSTILE["bold-tag"], HOSTILE["markdown-link"], HOSTILE["right-to-left"]):
        app_page.type_sentence(text)
        labels = Inputs(text=text).labels()
        trace = eventually(lambda labels=labels: _matrix_with_labels(app_page, stem, labels))
        if stem == "causal_mask":
            expected = causal_weights(Inputs(text=text), causal_page_seed(Inputs(text=text)))
            np.testing.assert_allclose(trace["z"], expected, atol=1e-6, rtol=1e-5)
        assert app_page.sentence_input().input_value() == text
        assert app_page.injected_markup() == []
        app_page.assert_no_exception()
    app_page.screenshot(f"hostile-{stem}")


def _matrix_with_labels(app_page, stem: str, labels: list[str]) -> dict:
    trace = app_page.heatmap_of(ATTENTION_PAGES[stem])
    assert trace is not None and trace["z"].shape == (len(labels), len(labels))
    for axis in ("x", "y"):  # labels may be thinned to fit the plot (figures), never changed or reordered
        ticks = app_page.tick_labels(axis)[trace["plot"]]
        remaining = iter(labels)
        assert ticks and all(tick in remaining for tick in ticks), f"{axis} ticks {ticks} are not in {labels}"
    return trace


FOREIGN_LINKS = {  # a link's values that a notice quotes, or that pages draw
    "mode-link": ("", "mode=" + "%5BLog%20in%20here%5D(https://evil.example/x)"),
    "input-image": ("", "input=" + "!%5Bx%5D(https://evil.example/p.png)"),
    "text-image": (
        "tokens",
        "input=text&text=" + "!%5Bx%5D(https://evil.example/p.png)%20%3Cimg%20src=https://evil.example/i.png%3E",
    ),
    "bare-url": ("", "seed=https://evil.example/y"),
    "step-superscript": ("causal_mask", "step=%C2%B2"),
    "query-superscript": ("simplified", "query=%C2%B2"),
    "head-superscript": ("multihead", "head=%C2%B3"),
    "window-superscript": ("tokens", "input=text&text=" + "word%20" * 60 + "&win=%C2%B2-40"),
}
FOREIGN_NAMES = ("evil.example",)


def block_foreign(page) -> list[str]:
    """Abort every request that is not to 127.0.0.1, and return the list they are recorded in."""
    foreign: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        if url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            request_route.continue_()
        else:
            foreign.append(url)
            request_route.abort()

    page.route("**/*", route)
    return foreign


@pytest.mark.parametrize(("url_path", "query"), FOREIGN_LINKS.values(), ids=FOREIGN_LINKS.keys())
def test_hostile_links_render_nothing_foreign_and_raise_nothing(open_app, url_path, query):
    app_page = open_app()
    foreign = block_foreign(app_page.page)
    app_page.goto(url_path, query)
    app_page.settle()
    app_page.assert_no_exception()
    links = app_page.page.evaluate(
        "() => [...document.querySelectorAll('a[href], img[src], image, link[href]')]"
        ".map(e => e.getAttribute('href') || e.getAttribute('src') || e.getAttribute('xlink:href') || '')"
    )
    assert not [link for link in links if any(name in link for name in FOREIGN_NAMES)], links
    assert not [url for url in foreign if any(name in url for name in FOREIGN_NAMES)], foreign
    text = app_page.page.locator("body").inner_text().replace("\u2060", "")  # untrusted.literal's word joiners
    if query.startswith(("mode=", "input=!", "seed=")):  # the bad value is quoted, literally, in a notice
        assert "evil.example" in text
    if "%C2%B" in query:
        assert "is not a" in text
    assert app_page.injected_markup() == []
