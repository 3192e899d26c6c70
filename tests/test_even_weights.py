"""The note under near-uniform attention weights (issue 54): ``views.near_even`` decides from the numbers, every
weight within ``EVEN_TOLERANCE`` of an even share of the keys its query may see; ``page_text.even_weights`` says
so, why, and which setting to try, in the sidebar's own words."""

import re

import numpy as np
import pytest

from explorer.models import NAMES
from explorer.page_text.even_weights import TRAINED_CHOICE, even_note, within
from explorer.settings import TEXT, TRAINED, Settings
from explorer.views.chapter import EVEN_TOLERANCE, near_even

MASK = np.triu(np.ones((4, 4), dtype=bool), 1)
SENTENCE = Settings(source=TEXT, text="The cat sat on the mat because it was tired")


def test_even_rows_are_near_even_and_a_row_that_prefers_a_key_is_not():
    even = np.full((10, 10), 0.1)
    assert near_even(even) == pytest.approx(0.0)
    tilted = even + np.array([0.02] * 5 + [-0.02] * 5)  # rows still sum to 1
    assert near_even(tilted) == pytest.approx(0.02)
    leaning = even + np.array([EVEN_TOLERANCE + 0.01, -(EVEN_TOLERANCE + 0.01)] + [0.0] * 8)
    assert near_even(leaning) is None


def test_a_masked_query_is_measured_against_the_keys_it_may_see():
    causal = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]  # 1, 1/2, 1/3, 1/4: even over the visible keys
    assert near_even(causal, MASK) == pytest.approx(0.0)
    assert near_even(causal) is None  # against 1/4 everywhere, row 1's weight 1 is far from even
    heads = np.stack([causal, causal])  # a grid of heads: every head must be near even
    assert near_even(heads, MASK) == pytest.approx(0.0)
    heads[1, 1] = [0.9, 0.1, 0.0, 0.0]
    assert near_even(heads, MASK) is None


def test_the_bound_said_is_never_smaller_than_the_gap():
    assert within(0.0131) == "0.014" and within(0.02) == "0.020" and within(0.0) == "0.000" and within(1e-5) == "0.001"


def sentences(text: str) -> list[str]:
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("**", "")  # links and bold as a learner reads them
    return [s for s in re.split(r"(?<=\.)\s+(?=[A-Z])", plain) if s]


@pytest.mark.parametrize("projected", [True, False])
def test_the_note_says_what_why_and_what_to_try_in_short_sentences(projected):
    note = even_note(0.0131, 10, SENTENCE, masked=False, projected=projected)
    assert "Every weight here is within **0.014** of an even share, 1/10 = 0.10" in note
    assert ("W_query and W_key" in note) is projected and ("no [weight matrices]" in note) is not projected
    assert "3-d" in note and TRAINED_CHOICE in note
    assert all(len(s.split()) <= 35 for s in sentences(note)), sentences(note)


def test_the_note_names_the_setting_as_the_sidebar_does():
    assert TRAINED_CHOICE == "**Trained** under **Weight matrices** in the sidebar"
    assert NAMES[TRAINED].startswith("Trained (")  # the radio's option; its label is checked in test_page_causal_mask


def test_no_note_for_weights_that_are_not_near_even_and_another_for_a_trained_head():
    assert even_note(None, 10, SENTENCE, masked=True) == ""
    trained = even_note(0.01, 10, Settings(source=TEXT, text="a b", weights=TRAINED), masked=True)
    assert "1/n for n keys" in trained and "Trained" not in trained and "another layer or head" in trained
