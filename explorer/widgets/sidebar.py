"""The sidebar: presenter mode, the input, the Weight matrices choice with its layer and head, the chapter's sizes,
dropout, the figure format, and for long inputs a window of tokens to inspect cell by cell. Its widgets
edit ``session``'s settings; this module only draws them."""

from __future__ import annotations

import streamlit as st

from attention.constants import CHECKPOINT_VARIABLE, VERDICT_CONFIG
from explorer.models import NAMES, effective, gpt2_checkpoint, model
from explorer.runtime.patches import session_id, unreadable_notices
from explorer.session import (
    FIXED_BY_MODEL,
    LINK_SLOT,
    ROOM_SLOT,
    SET_HERE,
    SETTINGS,
    SETTINGS_NOTICES,
    TOKEN_WINDOW,
    WIDGETS,
    WINDOW_TOKENS,
    current_run,
    initial_param,
    notice,
    on_change_of,
    refill_widgets,
    start_session,
    widgets_valid,
)
from explorer.settings import BOOK, GPT2, LIMITS, RANDOM, TEXT, WEIGHTS, parse_range, quoted
from explorer.views import Run
from explorer.widgets import SCROLL_REGIONS
from explorer.widgets.charts import TOUCH_HOVER

_NUMBERS = ("d_in", "d_out", "num_heads", "context_length", "dropout", "seed")  # Settings fields, in two columns


def sidebar() -> None:
    """Draw the shared settings; ``session`` keeps them validated (``current_run``)."""
    start_session()
    state = st.session_state
    state.pop(SET_HERE, None)  # this run draws the settings a page's button set
    if not refill_widgets() and not widgets_valid():
        on_change_of()
    unreadable = unreadable_notices(session_id())
    with st.sidebar:
        st.session_state[ROOM_SLOT] = st.container(key="room_panel", gap="xsmall")  # seen unscrolled
        st.toggle(
            "Presenter mode",
            key="presenter",
            help="Large fonts and figures for a projector; also opens with ?present=1 in the link.",
        )
        st.session_state[LINK_SLOT] = st.container()
        book_label = "The book's example (6 tokens, 3-d)"
        if state[SETTINGS].weights != RANDOM:  # a model reads the sentence's tokens, not the book's vectors
            book_label = "The book's sentence (6 tokens)"
        st.radio(
            "Input",
            (BOOK, TEXT),
            key="w_source",
            format_func=lambda s: "My own sentence" if s != BOOK else book_label,
            on_change=on_change_of,
        )
        st.text_input(
            "Sentence",
            key="w_text",
            on_change=on_change_of,
            disabled=state["w_source"] == BOOK,
            help="Any text: it is tokenized with GPT-2's BPE. Press Enter to apply.",
        )
        model = _weights_controls()
        columns = st.columns(2)
        for index, field in enumerate(_NUMBERS):
            limit, whole = LIMITS[field], field != "dropout"
            span = f"{limit.low:,.0f}–{limit.high:,.0f}" if whole else f"0–{limit.high}"
            columns[index % 2].number_input(
                field if whole else "dropout p",  # each labelled with its Settings field
                min_value=int(limit.low) if whole else limit.low,
                max_value=int(limit.high) if whole else limit.high,
                step=1 if whole else 0.05,
                format="%d" if whole else "%.2f",
                key=WIDGETS[field],
                on_change=on_change_of,
                args=(field,),
                disabled=(field == "d_in" and state["w_source"] == BOOK) or (model and field in FIXED_BY_MODEL),
                help=f"{limit.help} ({span})",
            )
        st.toggle(
            "Training mode",
            key="w_training",
            on_change=on_change_of,
            help="In training mode dropout zeroes each attention weight with probability p (none when p = 0) and "
            "scales the rest by 1 / (1 − p). In eval mode it does nothing.",
        )
        for text in [*unreadable, *state.get(SETTINGS_NOTICES, [])]:
            notice(text)
        st.segmented_control(
            "Figure download format",
            ("png", "svg"),
            default="png",
            key="w_image_format",
            format_func=str.upper,
            help="What the camera button in each figure's toolbar downloads; PNG is 3× the on-screen size.",
        )
        st.html(TOUCH_HOVER + SCROLL_REGIONS, unsafe_allow_javascript=True)  # once a page, not every rerun
    token_window_control(current_run())


def _weights_controls() -> bool:
    """The Weights choice, and the layer and head of a model's; whether a model's weights are on."""
    checkpoint = gpt2_checkpoint()
    names = dict(NAMES)
    if not checkpoint.ok:
        names[GPT2] = "GPT-2 (not available on this server)"
    st.radio(
        "Weight matrices",
        WEIGHTS,
        key="w_weights",
        format_func=names.__getitem__,
        on_change=on_change_of,
        help="Where W_query, W_key and W_value come from (the trainable parameters, not the attention weights). "
        "Random: the chapter's seeded ones, with the book's numbers. Trained: one layer of a small GPT trained "
        "on The Verdict, on the input the model feeds that layer. GPT-2: the checkpoint the server's operator "
        f"named in {CHECKPOINT_VARIABLE}. " + ("" if checkpoint.ok else checkpoint.message),
    )
    settings = effective(st.session_state[SETTINGS])
    found = model(settings.weights)
    cfg = found.cfg if found is not None else VERDICT_CONFIG
    layer, head = st.columns(2)
    layer.number_input(
        "layer", 1, cfg.n_layers, step=1, key="w_layer", on_change=on_change_of, disabled=found is None,
        help=f"Which of the model's {cfg.n_layers} layers (transformer blocks) the pages show, counted from 1.",
    )  # fmt: skip
    head.number_input(
        "layer's head", 1, cfg.n_heads, step=1, key="w_head", on_change=on_change_of, disabled=found is None,
        help="The head the single-head pages hold, counted from 1 (head 1 is index 0 in code): in "
        "SelfAttention_v1 and v2 on Q, K, V, in one CausalAttention on Causal mask, Dropout and Batches.",
    )  # fmt: skip
    if found is not None:
        st.caption(
            f"The model fixes d_in = {settings.d_in}, num_heads = {settings.num_heads} and context_length = "
            f"{settings.context_length}. d_out here is one head's size, head_dim = {settings.d_out}; the layer's "
            f"`MultiHeadAttention` has d_out = {settings.num_heads * settings.d_out}. The seed stays at "
            f"{settings.seed} and only picks the dropout draws."
        )
    return found is not None


WINDOW_THRESHOLD = 48  # above this many tokens the sidebar offers a token window
WINDOW_KEY = "w_window"


def token_window_control(run: Run) -> None:
    """For long inputs, a sidebar slider that picks which tokens the heatmaps show cell by cell; without it, a long
    sentence is drawn whole as block means (``figures.fit_matrix``)."""
    st.session_state.pop(TOKEN_WINDOW, None)
    num_tokens = run.num_tokens
    if num_tokens <= WINDOW_THRESHOLD:
        return
    window = st.session_state.get(WINDOW_KEY)  # a crafted message can put anything here
    valid = isinstance(window, tuple | list) and len(window) == 2 and all(type(v) is int for v in window)
    if not valid or st.session_state.get(WINDOW_TOKENS) != num_tokens:
        linked = initial_param("win", "any")
        start, stop = parse_range(linked, num_tokens) or (0, num_tokens)
        if linked is not None and parse_range(linked, num_tokens) is None:
            notice(f"win={quoted(linked)} in the link is not a token range such as 0-40; showing all.")
        st.session_state[WINDOW_KEY] = (start, max(stop, start + 1))
        st.session_state[WINDOW_TOKENS] = num_tokens
    with st.sidebar:
        start, stop = st.slider(
            "Tokens shown in heatmaps",
            0,
            num_tokens,
            key=WINDOW_KEY,
            help=f"{num_tokens:,} tokens are too many to read cell by cell: the full range is drawn as "
            "block means; narrow it to inspect single cells. The range is a Python slice, start to stop: 0-40 "
            "shows tokens 1 to 40.",
        )
    if (start, stop) != (0, num_tokens):
        st.session_state[TOKEN_WINDOW] = (start, max(stop, start + 1))  # and the link's win= (``finish_run``)
