"""``explorer.views.chapter``: which sections' numbers are the book's, with which seeds, and what the captions say."""

from dataclasses import replace

import pytest

from explorer.settings import DEFAULTS, TEXT, Settings
from explorer.views import chapter


def test_the_default_settings_are_book_mode_on_every_section():
    assert chapter.is_book(DEFAULTS)
    for section in chapter.SETUPS:
        assert chapter.is_book(DEFAULTS, section), section
        assert chapter.note_of(DEFAULTS, section).startswith("These are the book's numbers: section ")


def test_the_default_seed_means_the_books_seed_for_each_section():
    assert chapter.module_seed(DEFAULTS, "v1") == 123
    assert chapter.module_seed(DEFAULTS, "v2") == 789
    assert chapter.module_seed(DEFAULTS, "causal") == 789
    assert chapter.module_seed(DEFAULTS, "dropout") == 789
    assert chapter.module_seed(DEFAULTS, "multihead") == 123
    seven = replace(DEFAULTS, seed=7)
    assert {chapter.module_seed(seven, section) for section in chapter.SETUPS} == {7}


def test_an_explicit_seed_789_is_the_books_where_the_book_uses_it():
    seeded = replace(DEFAULTS, seed=789)
    assert chapter.is_book(seeded, "v2") and chapter.is_book(seeded, "causal")
    assert not chapter.is_book(seeded, "v1") and not chapter.is_book(seeded, "multihead")
    assert not chapter.is_book(seeded, "dropout")  # the book draws its dropout after seed 123
    assert not chapter.is_book(seeded)


@pytest.mark.parametrize(
    ("changes", "section", "reason"),
    [
        ({"source": TEXT}, "simplified", "your own sentence"),
        ({"context_length": 4}, "simplified", "context_length 4 cuts"),
        ({"d_out": 4}, "causal", "d_out is 4, not 2"),
        ({"num_heads": 1}, "multihead", "num_heads is 1, not 2"),
        ({"seed": 5}, "causal", "seed 5, not 789"),
        ({"seed": 5}, "dropout", "seed 5, not 789 for the weight matrices and 123 for the draws"),
        ({"dropout": 0.1, "training": True}, "causal_class", "dropout is on (p 0.1, training mode)"),
        ({"dropout": 0.3}, "dropout", "dropout p 0.3 in eval mode, not 0.5 in training mode"),
        ({"training": True}, "dropout", "dropout p 0 in training mode"),
    ],
)
def test_a_departure_is_named_in_the_note(changes, section, reason):
    settings = replace(DEFAULTS, **changes)
    assert not chapter.is_book(settings, section) and not chapter.is_book(settings)
    text = chapter.note_of(settings, section)
    assert text.startswith("These are no longer the book's numbers: ") and reason in text
    assert chapter.TITLES[section] in text


def test_settings_a_section_does_not_use_leave_it_the_books():
    other = replace(DEFAULTS, d_out=4, num_heads=4, seed=5, dropout=0.2, training=True)
    assert chapter.is_book(other, "simplified") and chapter.is_book(other, "one_query")
    assert chapter.is_book(replace(DEFAULTS, num_heads=1), "causal")
    assert chapter.is_book(replace(DEFAULTS, dropout=0.2, training=True), "causal")  # that page is in eval mode
    assert chapter.is_book(replace(DEFAULTS, dropout=0.2), "multihead")  # eval mode: no dropout


def test_the_dropout_page_uses_the_books_setting_until_the_sidebar_dropout_changes():
    used = chapter.dropout_settings(DEFAULTS)
    assert (used.dropout, used.training, used.seed) == (0.5, True, 123)
    mine = Settings(dropout=0.2, training=True)
    assert chapter.dropout_settings(mine) == mine  # unchanged (a cached call may return an equal earlier object)
    assert chapter.is_book(Settings(dropout=0.5, training=True), "dropout")  # the book's own values, typed in


def test_a_page_can_add_its_own_departure():
    text = chapter.note_of(DEFAULTS, "one_query", also=("query x^(3), not the book's x^(2)",))
    assert text.startswith("These are no longer the book's numbers: query x^(3)")
