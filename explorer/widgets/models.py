"""Drawing what the trained models show: what each head of a layer looks at (Multi-head attention's last
step) and Why attention's trained alignment and accuracy against length.

At the end, every layer and head of a trained model at a glance (``show_every_head``), then its words: the
grid's title, its labels (a head's summary in a word and a number) and the text around it.
"""

from __future__ import annotations

import streamlit as st

import attention
from attention import figures
from attention.figures.charts import every_head_grid, head_summary_bars, labels_fit
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer.models import every_head, summaries
from explorer.session import PHONE, set_settings
from explorer.settings import TRAINED, Settings
from explorer.views.chapter import reversal_view
from explorer.widgets import table
from explorer.widgets.charts import draw, on_pick, style

SINK_NOTE = (
    "Why the first token? A common explanation: softmax must hand out a whole 1.0 of weight in every row, and "
    "the first token is the one key every query can see. A head with nothing useful to find may then park its "
    f"weight there (an {term('attention_sink', 'attention sink')}). That costs little if the first token's value "
    "vector is small."
)


def value_text(ratios) -> str:
    """What the last column measured: the first token's value vector beside the others', over the heads."""
    low, high = float(min(ratios)), float(max(ratios))
    return (
        f"Measured here, head by head, the first token's value vector is {low:.2f} to {high:.2f} times the mean "
        "length of the others' (last column)."
    )


def show_summaries(settings: Settings) -> None:
    """The Multi-head page's last step with a model's weights: what each head of the layer looks at."""
    import pandas as pd  # here, not at the top: the first page after a cold start needs no table (issue 15)

    found = summaries(settings)
    if found is None:
        st.info("With one token there is no previous token to look at; type a longer sentence.")
        return
    st.markdown(
        f"Layer {settings.layer}'s heads on this sentence, each row's attention weights averaged over queries 2 to "
        "num_tokens (query 1 sees only itself). The bars show how much goes to **the token just before** and to "
        f"**the first token**. They also show how spread out a row is: its {term('entropy', 'entropy')} as a share "
        "of spreading evenly (1 is uniform, 0 is one token)."
    )
    shares = {
        "on the previous token": found.previous_token,
        "on the first token": found.first_token,
        "entropy ÷ uniform": found.entropy_share,
    }
    draw(head_summary_bars, "head-summaries", shares, title=f"What each head of layer {settings.layer} looks at")
    columns = {
        "previous token": found.previous_token,
        "first token": found.first_token,
        "entropy (nats)": found.entropy,
        "entropy ÷ uniform": found.entropy_share,
        "mean distance back": found.mean_distance,
        "first token's |value| ÷ others'": found.first_value_ratio,
    }
    rows = {"head": [f"head {k + 1}" for k in range(len(found.previous_token))]}  # counted from 1
    rows.update({name: [f"{v:.2f}" for v in values] for name, values in columns.items()})
    table(pd.DataFrame(rows), hide_index=True)
    uniform = f"Spreading evenly over the tokens a query sees would give {found.uniform_entropy:.3f} nats."
    st.caption(f"{uniform} {SINK_NOTE} {value_text(found.first_value_ratio)}")


def show_alignment(pieces, ids) -> None:
    """The trained alignment beside the untrained one, on the page's sentence."""
    view = reversal_view(tuple(ids))
    count = len(pieces)
    st.markdown(
        "Now **trained**: a GRU encoder–decoder that reads in both directions, as Bahdanau's did, taught to write "
        "any sentence backwards (each token id becomes one of 16 symbols). With num_tokens tokens, output step i "
        "must copy input token num_tokens + 1 − i, counting both from 1.\n\n"
        "Two changes from Bahdanau's model leave attention as the only way to copy the right token: the context "
        "sums the input embeddings, not the encoder states, and the output is read from the context alone. Its "
        f"attention learned to find that token: each step's largest weight averages **{view.mean_max_weight:.3f}** "
        f"(untrained: {view.untrained_mean_max_weight:.3f}; uniform 1/{count} = {1 / count:.3f}), "
        f"and the weight on the right token averages {view.on_anti_diagonal:.3f}. It writes {int(view.right.sum())} of "
        f"{count} symbols right."
    )
    written = [pieces[count - 1 - i] for i in range(count)]  # row i: the token output step i must write
    code, notation = "weights = torch.softmax(", Notation("alignment")
    explain = cells.reversal(ids, written, list(pieces), code=code, notation=notation)
    title = "Bahdanau weights: rows write the sentence backwards, columns are the input"
    grid = (view.weights, ["untrained", "trained to reverse"], written, list(pieces))
    draw(figures.heatmap_grid, "reversal-alignment", *grid, title=title, columns=2, max_row_height=480, explain=explain)
    st.caption(attention.TRAINED_NOTE)


def show_bottleneck() -> None:
    """Accuracy against sentence length with and without attention, as ``scripts/train.py`` measured it."""
    curve = attention.bottleneck_curve()
    st.markdown(
        "The bottleneck in numbers. Bahdanau et al. measured translation quality against sentence length; here "
        "the task is reversal. A model of the same design without attention must squeeze the sentence into the "
        "encoder's final states, and it falls behind as sentences grow: "
        f"{curve.without_attention[-1]:.0%} of symbols right at {curve.lengths[-1]} tokens. **With** attention "
        f"the model stays at {min(curve.with_attention):.1%} or more at every length."
    )
    series = {"with attention": curve.with_attention, "without attention": curve.without_attention}
    options = dict(title="Symbols right, by sentence length", x_title="tokens", y_title="share right")
    options.update(y_range=(0, 1.05))  # a share: the whole 0–1 range
    draw(figures.lines, "reversal-accuracy", list(curve.lengths), series, **options)
    st.caption("Measured by `scripts/train.py` on 200 random sentences per length; `attention.bottleneck_curve()`.")


# Multi-head attention's last step with a model's weights: every layer and head at a glance, and the ways to
# open one of them on the chapter pages (a click on its small multiple, or a layer and head picked from the
# keyboard), which set the sidebar's layer and head through ``session.set_settings``.


CHART_KEY = "every_head"  # the chart's key: the settings' layer and head are appended (a fresh selection each)
LAYER_KEY, HEAD_KEY, OPEN_KEY = "every_head_layer", "every_head_head", "every_head_open"


def open_head(layer: int, head: int) -> None:
    """Open ``layer`` and ``head`` (both from 1, as the sidebar counts) on the chapter pages."""
    set_settings(layer=layer, head=head - 1)


def _open_chosen(suffix: str) -> None:
    open_head(st.session_state[LAYER_KEY + suffix], st.session_state[HEAD_KEY + suffix])


def show_every_head(settings: Settings) -> None:
    """The grid of every layer's and head's attention weights, the keyboard route, and links to the pages."""
    found = every_head(settings)
    if found is None:
        st.info("With one token there is no previous token to look at; type a longer sentence.")
        return
    num_layers, num_heads = found.weights.shape[:2]
    name = "the small GPT" if settings.weights == TRAINED else "GPT-2"
    st.markdown(grid_text(name, num_layers, num_heads, found.shown, found.num_tokens))
    layer, head = settings.layer, settings.head + 1  # both from 1
    suffix = f":{layer}:{head}"  # new widgets once the settings change, so each starts from them
    labels, details = head_labels(found.summaries)
    title = grid_title(num_layers, num_heads)
    hidden = num_heads > SHORT_ABOVE or st.session_state.get(PHONE)  # on a phone they would be 9 px
    key = CHART_KEY + ("_wide" if hidden else "") + suffix  # css.py: a phone hides these (hover has them)
    options = dict(title=title, current=(layer, head), key=key, on_select=on_pick(key, open_head))
    draw(every_head_grid, "every-head", found.weights, labels, details, found.pieces, **options)
    st.markdown(open_text(layer, head))
    with st.form(f"every_head_form{suffix}", border=False, enter_to_submit=False):
        pick_layer, pick_head, go = st.columns([2, 2, 1], vertical_alignment="bottom")
        pick_layer.selectbox("Layer", range(1, num_layers + 1), index=layer - 1, key=LAYER_KEY + suffix)
        pick_head.selectbox("Head", range(1, num_heads + 1), index=head - 1, key=HEAD_KEY + suffix)
        go.form_submit_button("Open", on_click=_open_chosen, args=(suffix,), key=OPEN_KEY, width="stretch")
    links = st.columns(len(LINK_PAGES))
    for column, (page, page_title) in zip(links, LINK_PAGES, strict=True):
        column.page_link(page, label=f"{page_title}: layer {layer}, head {head}", icon=":material/arrow_forward:")
    st.caption(label_text(num_heads, written=labels_fit(num_layers, style())))


# The words of Multi-head attention's "Every layer and head" step: the grid's title, its labels (a head's
# summary in a word and a number), the text around it, and why it needs a model's weights.


MOSTLY = 0.5  # a head is labelled "prev" or "first" when that token gets at least this share on average
LINK_PAGES = (  # (page script, its title): the chapter pages that show one head of the layer
    ("pages/qkv.py", "Q, K, V & scaling"),
    ("pages/causal_mask.py", "Causal mask"),
    ("pages/dropout.py", "Dropout"),
)
SHORT_ABOVE = 6  # more heads than this side by side get the short labels ("P 0.62")


def head_label(previous: float, first: float, spread: float, *, short: bool = False) -> str:
    """A head's summary in a word and a number: "prev 0.62", "first 0.80", or else "spread 0.71";
    ``short``: the word's first letter ("P 0.62"), for narrow small multiples."""
    if previous >= MOSTLY and previous >= first:
        word, value = "prev", previous
    elif first >= MOSTLY:
        word, value = "first", first
    else:
        word, value = "spread", spread
    return f"{word[0].upper() if short else word} {value:.2f}"


def head_labels(summaries) -> tuple[list[list[str]], list[list[str]]]:
    """Each head's label and its hover text with all three numbers, layer by layer, from (L, h) ``summaries``."""
    short = summaries.previous_token.shape[-1] > SHORT_ABOVE
    trios = zip(summaries.previous_token, summaries.first_token, summaries.entropy_share, strict=True)
    layers = [list(zip(*trio, strict=True)) for trio in trios]  # a layer's (previous, first, spread) of each head
    labels = [[head_label(*values, short=short) for values in layer] for layer in layers]
    details = [[f"prev {p:.2f} · first {f:.2f} · spread {s:.2f}" for p, f, s in layer] for layer in layers]
    return labels, details


def grid_title(num_layers: int, num_heads: int) -> str:
    return f"attn_weights: {num_layers} layers × {num_heads} heads"


def grid_text(model_name: str, num_layers: int, num_heads: int, shown: int, num_tokens: int) -> str:
    """What the grid shows, before it."""
    tokens, cut = f"its {shown} tokens", ""
    if shown < num_tokens:
        tokens = f"its first {shown} of {num_tokens} tokens"
        cut = " The tokens after them would change none of these weights: the causal mask hides them."
    return (
        f"Every head of every layer of {model_name} on {tokens}: {num_layers * num_heads} "
        f"{term('attention_weights', 'attention-weight')} matrices as small multiples (same-sized charts on "
        f"one 0–1 scale). Rows are layers, columns heads.{cut}"
    )


def label_text(num_heads: int, *, written: bool = True) -> str:
    """How to read a label, after the grid; ``written``: whether the labels are printed in the small multiples."""
    legend = (
        "P = most weight on the previous token, F = on the first token, S = spread: the rows' entropy ÷ that "
        "of even weights. "
        if num_heads > SHORT_ABOVE
        else ""
    )
    where = "Here the labels would cover the weights, so only the hover shows them. "
    if written:
        where = "On a phone only the hover shows them. " if num_heads > SHORT_ABOVE else ""
    return (
        f"{where}{legend}A label says **prev** or **first** when the token just before, or the first token, gets "
        f"at least {MOSTLY:.0%} of a row's weight on average (queries 2 to num_tokens). Otherwise it says "
        f"**spread**: the rows' {term('entropy', 'entropy')} as a share of spreading evenly (1 is even, 0 is one "
        "token)."
    )


def open_text(layer: int, head: int) -> str:
    """Above the keyboard route and the page links: what the chapter pages hold now."""
    return (
        f"Click anywhere in a small multiple, or pick it below, to open that layer and head on the chapter pages. "
        f"They hold **layer {layer}, head {head}** now (outlined)."
    )
