"""Drawing what the trained models show: what each head of a layer looks at (Multi-head attention's last
step) and Why attention's trained alignment and accuracy against length."""

from __future__ import annotations

import streamlit as st

import attention
from explorer import cells, figures
from explorer.cells import Notation
from explorer.models.heads import summaries
from explorer.page_text.glossary import term
from explorer.settings import Settings
from explorer.views.reversal import reversal_view
from explorer.widgets.basics import table
from explorer.widgets.charts import draw

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

    from explorer.figures.charts import head_summary_bars  # a submodule the package does not import itself

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
