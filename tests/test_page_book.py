"""Book mode through AppTest: with the default settings every matrix the chapter prints for its six-token
example is drawn on its page, equal to ``attention.book_values()`` to 4 decimals and captioned as the book's;
a changed setting makes the caption say the numbers are no longer the book's."""

from __future__ import annotations

import re

import numpy as np
import pytest
from apptest_support import (
    THE_BOOKS,
    answer_and_reveal,
    app,
    book_figures,
    captions,
    decode,
    figure_specs,
    markdown,
    next_step,
)

from attention.book import book_values

BOOK = book_values()
NO_LONGER = "These are no longer the book's numbers: "

PRINTED = book_figures()
ASKED_FIRST = {("simplified", 1)}  # steps that draw their chart once the question it would answer is revealed


def same_as_book(drawn: np.ndarray, book) -> None:
    """``drawn`` equals ``book`` to 4 decimals; a blank (masked or dropped) cell must hold 0 or −∞ in the book."""
    book = np.asarray(book, dtype=float)
    assert drawn.shape == book.shape
    blank = np.isnan(drawn)
    assert (book[blank] == 0).all() or np.isin(book[blank], (0.0, -np.inf)).all()
    assert np.isfinite(book[~blank]).all()
    np.testing.assert_allclose(drawn[~blank], book[~blank], atol=5e-5)


def drawn_matrix(spec: dict, expected) -> np.ndarray:
    """What the figure shows of ``expected``'s form (see ``PRINTED``), as a matrix."""
    if isinstance(expected, tuple) and expected[0] == "bars":
        name = expected[1]
        bars = [t for t in spec["data"] if t.get("type") == "bar" and (not name or t.get("name") == name)]
        return decode(bars[0]["y"])[None, :]
    z = decode(next(t for t in spec["data"] if t.get("type") == "heatmap")["z"])
    return z[expected[1] : expected[1] + 1] if isinstance(expected, tuple) else z


def stepper_text(at) -> str:
    return next(m.value for m in at.markdown if "<b>Step " in m.value)


def checked_steps(at, page: str) -> list[int]:
    """Walk the steps from the first; check each printed matrix and the caption; return the steps checked."""
    checked, current = [], 1
    for step, figures_expected in PRINTED[page].items():
        while current < step:
            next_step(at)
            current += 1
        assert f"<b>Step {step} of" in stepper_text(at)
        if (page, step) in ASKED_FIRST:
            answer_and_reveal(at)
        specs = figure_specs(at)
        for pattern, expected in figures_expected:
            matching = [s for s in specs if re.search(pattern, s["layout"].get("title", {}).get("text", ""))]
            assert matching, f"{page} step {step}: no figure titled like {pattern!r}"
            book = expected[2] if isinstance(expected, tuple) else expected
            same_as_book(drawn_matrix(matching[0], expected), np.asarray(book, dtype=float))
        assert THE_BOOKS in captions(at), f"{page} step {step}: no book caption"
        assert NO_LONGER not in captions(at)
        checked.append(step)
    return checked


@pytest.mark.parametrize("page", PRINTED)
def test_every_printed_matrix_is_drawn_and_captioned_in_book_mode(page):
    at = app(f"pages/{page}.py")
    assert not at.exception
    assert checked_steps(at, page) == list(PRINTED[page])


DEPARTED = {  # page -> (a link that departs from the book, the step it opens, what the caption must name)
    "simplified": ({"input": "text", "text": "Attention is all you need"}, 5, "your own sentence"),
    "qkv": ({"d_out": "4"}, 4, "d_out is 4, not 2"),
    "causal_mask": ({"seed": "7"}, 5, "seed 7, not 789"),
    "dropout": ({"p": "0.2", "mode": "train"}, 2, "dropout p 0.2 in training mode, not 0.5"),
    "batches": ({"p": "0.1", "mode": "train"}, 4, "dropout is on"),
    "multihead": ({"heads": "1"}, 6, "num_heads is 1, not 2"),
}


@pytest.mark.parametrize("page", DEPARTED)
def test_a_changed_setting_says_the_numbers_are_no_longer_the_books(page):
    params, step, reason = DEPARTED[page]
    at = app(f"pages/{page}.py", query_params={**params, "step": str(step)})
    assert not at.exception
    assert f"<b>Step {step} of" in stepper_text(at)
    assert NO_LONGER in captions(at) and reason in captions(at) and THE_BOOKS not in captions(at)


def test_changing_the_seed_in_the_sidebar_leaves_the_book():
    at = app("pages/causal_mask.py", query_params={"step": "zero-and-renormalize"})
    assert THE_BOOKS in captions(at)
    at.number_input(key="w_seed").set_value(7).run()
    assert not at.exception
    assert NO_LONGER in captions(at) and "seed 7, not 789" in captions(at)
    renormalized = decode(figure_specs(at)[1]["data"][0]["z"])
    assert not np.allclose(renormalized[1, :2], BOOK.causal_renormalized[1, :2].numpy(), atol=1e-3)


def test_the_dropout_page_opens_in_the_books_setting_and_follows_a_changed_sidebar():
    at = app("pages/dropout.py", query_params={"step": "one-draw"})
    assert not at.exception
    text = markdown(at)
    assert "The book's setting: **training mode** · dropout p = **0.50** · seed **123**" in text
    assert "Nothing is dropped" not in text and at.button(key="book_dropout").disabled
    assert at.number_input(key="w_dropout").value == 0.0 and not at.toggle(key="w_training").value

    at.number_input(key="w_dropout").set_value(0.2).run()  # eval mode with p = 0.2: the sidebar takes over
    text = markdown(at)
    assert "Sidebar: **eval mode** · dropout p = **0.20**" in text and "Nothing is dropped" in text
    assert NO_LONGER in captions(at)

    at.button(key="book_dropout").click().run()
    assert at.number_input(key="w_dropout").value == 0.0 and not at.toggle(key="w_training").value
    assert "The book's setting: **training mode**" in markdown(at)
    same_as_book(decode(figure_specs(at)[0]["data"][0]["z"]), BOOK.dropout_weights.numpy())
