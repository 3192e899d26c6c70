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
    OLD_NAMES,
    TEXT,
    TRAINED,
    Settings,
    from_query_params,
    index_from_link,
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


@pytest.mark.parametrize("raw", ["²", "٣", "1_000", "1e3", " ", "", "0x10", "12.5", "1" * 13, "3²", "+", None, True])
def test_whole_numbers_are_ascii_digits_only(raw):
    from explorer.settings import parse_whole

    assert parse_whole(raw) is None


@pytest.mark.parametrize(("raw", "value"), [("42", 42), (" 7 ", 7), ("-3", -3), (5, 5), (8.0, 8)])
def test_whole_numbers_parse(raw, value):
    from explorer.settings import parse_whole

    assert parse_whole(raw) == value


@pytest.mark.parametrize("raw", ["²", "٠.٥", "nan", "inf", "1e-3", "0.5.1", "½", [0.5]])
def test_decimals_are_ascii_only_and_finite(raw):
    from explorer.settings import parse_decimal

    assert parse_decimal(raw) is None


def test_positions_and_ranges_from_links():
    from explorer.settings import parse_position, parse_range

    assert parse_position("3") == 3
    assert [parse_position(raw) for raw in ("²", "³", "1234567", "-1", "", None)] == [None] * 6
    assert parse_range("40-2", 100) == (2, 40)
    assert parse_range("5-5000", 100) == (5, 100)
    assert parse_range("7-7", 100) == (7, 8)
    assert [parse_range(raw, 100) for raw in ("²-40", "1-٣", "1-2-3", "-40", "1234567-2", None)] == [None] * 6


# Every index in a link counts from 1, as the book counts; an old link's name for it counted from 0 (``OLD_NAMES``).


def test_a_link_counts_the_layers_head_from_1_and_an_old_link_from_0():
    head_2 = Settings(weights=TRAINED, layer=3, head=1)  # Settings.head is an index: layer 3's head 2
    assert to_query_params(head_2) == {"weights": "trained", "layer": "3", "layer_head_n": "2"}
    assert from_query_params({"weights": "trained", "layer": "3", "layer_head_n": "2"}) == (head_2, [])
    assert from_query_params({"weights": "trained", "layer": "3", "layer_head": "1"}) == (head_2, [])  # an old link
    both = {"weights": "trained", "layer": "3", "layer_head_n": "2", "layer_head": "3"}
    assert from_query_params(both) == (head_2, [])  # the name that counts from 1 wins


@pytest.mark.parametrize("raw", ["0", "26", "-1", "²", "x"])
def test_a_head_from_1_that_is_no_head_opens_head_1_with_a_notice(raw):
    settings, notices = from_query_params({"weights": "trained", "layer_head_n": raw})
    assert settings.head == 0
    assert notices == [f"layer_head_n='{raw}' is not a head from 1 to 25; using head 1."]


@pytest.mark.parametrize("name", sorted(OLD_NAMES))
def test_a_pages_index_counts_from_1_and_its_old_name_from_0(name):
    assert index_from_link(name, "2", None) == (1, "")  # the second: query x^(2), head 2, new token 2, layer 2
    assert index_from_link(name, None, "1") == (1, "")  # an old link's 1 was the second too
    assert index_from_link(name, "2", "5") == (1, "")  # the name that counts from 1 wins
    assert index_from_link(name, None, None) == (None, "")
    assert index_from_link(name, "0", None) == (None, f"{name}='0' in the link is not a number from 1")
    assert index_from_link(name, None, "²") == (None, f"{OLD_NAMES[name]}='²' in the link is not a position")


def test_every_new_name_ends_in_n_and_no_old_name_is_a_settings_link_name():
    from explorer.settings import LINK_NAMES

    assert all(new == old + "_n" for new, old in OLD_NAMES.items())
    assert LINK_NAMES["head"] == "layer_head_n" and not set(OLD_NAMES.values()) & set(LINK_NAMES.values())


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"d_in": "²"}, "d_in"),
        ({"heads": "٣"}, "num_heads"),
        ({"ctx": "1_000"}, "context_length"),
        ({"p": "٠.٥"}, "dropout"),
        ({"seed": "9" * 40}, "seed"),
    ],
)
def test_non_ascii_numbers_in_links_fall_back_with_a_notice(params, name):
    settings_, notices = from_query_params(params)
    assert getattr(settings_, name) in (getattr(DEFAULTS, name), LIMITS[name].high)
    assert len(notices) == 1
    assert len(notices[0]) < 120  # the bad value is quoted, cut short


def test_crafted_widget_values_fall_back_with_notices():
    crafted = Settings(source="evil", text=["x"], d_in="abc", d_out=2.5, num_heads=True, dropout="nan", training="1")
    fixed, notices = validate(crafted)
    assert fixed == replace(DEFAULTS, d_in=DEFAULTS.d_in)
    assert len(notices) == 7


def test_notices_quote_bad_values_short():
    from explorer.settings import quoted

    assert quoted("[Log in here](https://evil.example/x)") == "'[Log in here](https://evil.example/x)'"
    assert quoted("x" * 100) == "'" + "x" * 40 + "…'"
    assert quoted(object()) == "'object'"


LONG_TEXT = " ".join(f"word{k}" for k in range(60))  # over ui.WINDOW_THRESHOLD tokens, so the window slider shows


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/causal_mask.py", {"step": "²"}),
        ("pages/simplified.py", {"query": "²"}),
        ("pages/simplified.py", {"query_n": "²"}),
        ("pages/multihead.py", {"head": "³"}),
        ("pages/multihead.py", {"head_n": "³"}),
        ("pages/tokens.py", {"input": "text", "text": LONG_TEXT, "win": "²-40"}),
    ],
)
def test_superscript_digits_in_links_give_a_notice_not_an_exception(page, params):
    from apptest_support import app

    at = app(page, query_params=params)
    assert not at.exception
    name = next(iter(k for k in params if k not in ("input", "text")))
    assert any(f"{name}=" in info.value.replace("\\", "").replace("\u2060", "") for info in at.info), [
        i.value for i in at.info
    ]


def test_link_text_in_notices_is_literal_markdown():
    from apptest_support import app

    at = app(
        query_params={"mode": "[Log in here](https://evil.example/x)", "input": "![x](https://evil.example/p.png)"}
    )
    assert not at.exception
    bodies = [info.value for info in at.info if "evil" in info.value]
    assert len(bodies) == 2
    assert all("](" not in body and "\\]\\(" in body for body in bodies)


def crafted_run(at, key: str, **value) -> None:
    """Rerun ``at`` as a client that sends widget ``key`` a value of its own choosing, as a crafted websocket
    message can (``value``: one WidgetState field, e.g. ``string_value="abc"``)."""
    states = at._tree.get_widget_states()
    widget = next(node for node in at.get("number_input") + at.get("text_input") + at.get("radio")
                  + at.get("toggle") + at.get("slider") if getattr(node, "key", None) == key)  # fmt: skip
    for state in states.widgets:
        if state.id == widget.id:
            state.ClearField("value")
            for field, item in value.items():
                getattr(state, field).extend(item) if isinstance(item, list) else setattr(state, field, item)
    at._run(states)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("w_d_in", {"string_value": "abc"}),
        ("w_seed", {"string_value": "²"}),
        ("w_dropout", {"string_value": "0.5"}),
        ("w_source", {"string_value": "evil"}),
        ("w_text", {"double_value": 42.0}),
        ("w_training", {"string_value": "yes"}),  # Streamlit reads it as True
        ("w_window", {"string_value": "0-5"}),  # the window is reset to all tokens
    ],
)
def test_crafted_widget_messages_give_a_notice_not_an_exception(key, value):
    from apptest_support import app

    at = app("pages/tokens.py", query_params={"input": "text", "text": LONG_TEXT, "d_in": "8"})
    crafted_run(at, key, **value)
    assert not at.exception, at.exception
    notices = [info.value.replace("\\", "").replace("\u2060", "") for info in at.info]
    at.run()  # the session goes on
    assert not at.exception, at.exception
    assert at.title[0].value == "Tokens & embeddings"
    if key in ("w_training", "w_window"):
        assert isinstance(at.session_state[key], bool | tuple | list)
    else:
        assert any(str(next(iter(value.values()))).removesuffix(".0") in notice for notice in notices), notices


@pytest.mark.parametrize(
    ("page", "key", "value"),
    [
        ("multihead", "multihead:head", "abab"),
        ("simplified", "simplified:query", "x"),
        ("dropout", "dropout_samples", "many"),
        ("qkv", "qkv:temperature", "hot"),
    ],
)
def test_crafted_page_state_gives_a_notice_not_an_exception(page, key, value):
    """What a page keeps in plain state comes from its widgets' callbacks, so a crafted message can set it too."""
    from apptest_support import app

    step = {"qkv": "saturation", "simplified": "scores-to-weights", "dropout": "one-draw"}.get(page, "2")
    at = app(f"pages/{page}.py", query_params={"step": step})
    at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    assert any(value in info.value.replace("\\", "").replace("\u2060", "") for info in at.info), [
        i.value for i in at.info
    ]
    at.run()
    assert not at.exception


def test_the_token_window_stays_in_the_link_after_a_click_that_reruns_only_the_page():
    """The sidebar writes the window; a Next click reruns the page alone, whose link must still carry ``win=``."""
    from apptest_support import app, next_step

    at = app("pages/causal_mask.py", query_params={"input": "text", "text": LONG_TEXT, "win": "2-12"})
    param = lambda name: "".join(at.query_params[name])  # noqa: E731 (a str, or a list of one)
    assert not at.exception and param("win") == "2-12"
    first_step = param("step")
    next_step(at)
    assert not at.exception
    assert param("win") == "2-12" and param("step") != first_step
