"""Drawing what the trained models show: what each head of a layer looks at (Multi-head attention's last
step) and Why attention's trained alignment and accuracy against length.

At the end, every layer and head of a trained model at a glance (``show_every_head``).
"""

from __future__ import annotations

import streamlit as st

import attention
from explorer import cells, figures
from explorer.cells import Notation
from explorer.figures.charts import every_head_grid, head_summary_bars, labels_fit
from explorer.models import every_head, summaries
from explorer.page_text import head_grid as words
from explorer.page_text.glossary import term
from explorer.session.keys import PHONE
from explorer.session.state import set_settings
from explorer.settings import TRAINED, Settings
from explorer.views.chapter import reversal_view
from explorer.widgets.basics import table
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
        f"Layer {settings.layer}'s heads on this sentence, each row's attention weights averaged over queries 2 to T "
        "(query 1 sees only itself). The bars show how much goes to **the token just before** and to **the first "
        f"token**. They also show how spread out a row is: its {term('entropy', 'entropy')} as a share of spreading "
        "evenly (1 is uniform, 0 is one token)."
    )
    shares = {
        "on the previous token": found.previous_token,
        "on the first token": found.first_token,
        "entropy ÷ uniform": found.entropy_share,
    }
    draw(
        head_summary_bars,
        "head-summaries",
        shares,
        title=f"What each head of layer {settings.layer} looks at",
    )
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
        "any sentence backwards (each token id becomes one of 16 symbols). Output step i must copy input token "
        "T + 1 − i, counting both from 1.\n\n"
        "Two changes from Bahdanau's model make that the only way: the context sums the input embeddings, not "
        "the encoder states, and the output is read from the context alone. Its attention learned to look "
        f"there: each step's largest weight averages **{view.mean_max_weight:.3f}** "
        f"(untrained: {view.untrained_mean_max_weight:.3f}; uniform 1/{count} = {1 / count:.3f}), "
        f"and the weight on the right token averages {view.on_anti_diagonal:.3f}. It writes {int(view.right.sum())} of "
        f"{count} symbols right."
    )
    written = [pieces[count - 1 - i] for i in range(count)]  # row i: the token output step i must write
    code, notation = "weights = torch.softmax(", Notation("alignment")
    explain = cells.reversal(ids, written, list(pieces), code=code, notation=notation)
    draw(
        figures.heatmap_grid,
        "reversal-alignment",
        view.weights,
        ["untrained", "trained to reverse"],
        written,
        list(pieces),
        title="Bahdanau weights: rows write the sentence backwards, columns are the input",
        columns=2,
        max_row_height=480,
        explain=explain,
    )
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
    st.markdown(words.grid_text(name, num_layers, num_heads, found.shown, found.num_tokens))
    layer, head = settings.layer, settings.head + 1  # both from 1
    suffix = f":{layer}:{head}"  # new widgets once the settings change, so each starts from them
    labels, details = words.head_labels(found.summaries)
    title = words.grid_title(num_layers, num_heads)
    hidden = num_heads > words.SHORT_ABOVE or st.session_state.get(PHONE)  # on a phone they would be 9 px
    key = CHART_KEY + ("_wide" if hidden else "") + suffix  # css.py: a phone hides these (hover has them)
    options = dict(title=title, current=(layer, head), key=key, on_select=on_pick(key, open_head))
    draw(every_head_grid, "every-head", found.weights, labels, details, found.pieces, **options)
    st.markdown(words.open_text(layer, head))
    with st.form(f"every_head_form{suffix}", border=False, enter_to_submit=False):
        pick_layer, pick_head, go = st.columns([2, 2, 1], vertical_alignment="bottom")
        pick_layer.selectbox("Layer", range(1, num_layers + 1), index=layer - 1, key=LAYER_KEY + suffix)
        pick_head.selectbox("Head", range(1, num_heads + 1), index=head - 1, key=HEAD_KEY + suffix)
        go.form_submit_button("Open", on_click=_open_chosen, args=(suffix,), key=OPEN_KEY, width="stretch")
    links = st.columns(len(words.LINK_PAGES))
    for column, (page, page_title) in zip(links, words.LINK_PAGES, strict=True):
        column.page_link(page, label=f"{page_title}: layer {layer}, head {head}", icon=":material/arrow_forward:")
    st.caption(words.label_text(num_heads, written=labels_fit(num_layers, style())))
