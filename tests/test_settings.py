"""Settings: validation at the boundary, and the URL round trip that deep links rely on."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.settings import (
    BOOK,
    DEFAULTS,
    LIMITS,
    MAX_TEXT_CHARS,
    MAX_URL_TEXT_CHARS,
    TEXT,
    Settings,
    from_query_params,
    to_query_params,
    validate,
)


def test_defaults_are_the_books_example():
    assert DEFAULTS.source == BOOK
    assert (DEFAULTS.d_out, DEFAULTS.num_heads, DEFAULTS.seed, DEFAULTS.dropout) == (2, 2, 123, 0.0)
    assert DEFAULTS.effective_d_in == 3
    assert to_query_params(DEFAULTS) == {}


def test_round_trip_of_a_full_view():
    view = Settings(
        source=TEXT,
        text="Hello, <b>world</b> & 🙂",
        d_in=16,
        d_out=12,
        num_heads=3,
        context_length=64,
        dropout=0.25,
        seed=7,
        training=True,
    )
    params = to_query_params(view)
    restored, notices = from_query_params(params)
    assert restored == view
    assert notices == []


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=200),
    d_in=st.integers(1, 1024),
    heads=st.integers(1, 16),
    per_head=st.integers(1, 64),
    ctx=st.integers(1, 1024),
    p=st.floats(0, 0.9).map(lambda x: round(x, 4)),
    seed=st.integers(0, 2**31 - 1),
    training=st.booleans(),
)
def test_round_trip_property(text, d_in, heads, per_head, ctx, p, seed, training):
    view = Settings(TEXT, text, d_in, heads * per_head, heads, ctx, p, seed, training)
    view, _ = validate(view)
    restored, notices = from_query_params(to_query_params(view))
    assert restored == view
    assert notices == []


@pytest.mark.parametrize(
    ("params", "field", "expected"),
    [
        ({"d_in": "999999999999"}, "d_in", LIMITS["d_in"].high),
        ({"d_in": "-5"}, "d_in", 1),
        ({"heads": "1e9"}, "num_heads", DEFAULTS.num_heads),
        ({"p": "nan"}, "dropout", 0.0),
        ({"p": "inf"}, "dropout", 0.0),
        ({"p": "1.5"}, "dropout", LIMITS["dropout"].high),
        ({"seed": "abc"}, "seed", DEFAULTS.seed),
        ({"ctx": "0"}, "context_length", 1),
        ({"mode": "sideways"}, "training", False),
        ({"input": "<script>"}, "source", BOOK),
    ],
)
def test_hostile_parameters_fall_back_with_a_notice(params, field, expected):
    restored, notices = from_query_params(params)
    assert getattr(restored, field) == expected
    assert notices, "every correction must be explained"


def test_unknown_keys_are_ignored():
    restored, notices = from_query_params({"evil": "1", "__class__": "x"})
    assert restored == DEFAULTS
    assert notices == []


def test_a_100kb_sentence_in_a_link_is_cut_with_a_notice():
    restored, notices = from_query_params({"text": "a " * 50_000})
    assert restored.source == TEXT
    assert len(restored.text) == MAX_URL_TEXT_CHARS
    assert any("links carry at most" in n for n in notices)


def test_long_typed_text_is_kept_up_to_the_cap_and_not_put_in_links():
    long_text = "word " * 12_000  # 60,000 characters
    view, notices = validate(replace(DEFAULTS, source=TEXT, text=long_text + "extra"))
    assert len(view.text) == MAX_TEXT_CHARS
    assert notices
    assert "text" not in to_query_params(view)


def test_heads_that_do_not_divide_d_out_are_fixed_on_the_other_field():
    changed_d_out, notices = validate(replace(DEFAULTS, d_out=7, num_heads=2), keep="d_out")
    assert (changed_d_out.d_out, changed_d_out.num_heads) == (7, 1)
    assert notices
    changed_heads, notices = validate(replace(DEFAULTS, d_out=7, num_heads=2), keep="num_heads")
    assert (changed_heads.d_out, changed_heads.num_heads) == (8, 2)
    assert notices
    at_cap, _ = validate(replace(DEFAULTS, d_out=1023, num_heads=16), keep="num_heads")
    assert at_cap.d_out % at_cap.num_heads == 0 and at_cap.d_out <= LIMITS["d_out"].high
