"""Why attention: the RNN encoder–decoder bottleneck and Bahdanau attention (sections 3.1–3.2)."""

import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import session, views, widgets

session.ensure_entrypoint()  # a deep link opened first after a start runs this page alone
st.title("Why attention")
run = widgets.outside_model()  # the RNN is no part of the GPT: the sidebar's Weights skip it
settings, data = run.settings, widgets.guard(run.ready)
hidden_size = st.session_state.setdefault(session.WHY_HIDDEN, views.WHY_HIDDEN_SIZE)
view = widgets.guard(views.why_view, run, hidden_size)
pieces, num_tokens = data.pieces, len(data.pieces)

steps_dims = [f"h_t[{k}]" for k in range(hidden_size)]  # entry k of a state h_t, as the cell panel writes it
SCORE_CODE = "return torch.tanh(query_part.unsqueeze(-2) + key_parts) @ v_a"  # additive_scores: Bahdanau's score
steps = widgets.Steps("why_attention")


def seq2seq_parts():
    """The encoder–decoder's trace and weights for the GRU and Bahdanau cells: run only when a cell is asked for."""
    return views.seq2seq_parts(data.inputs, settings.seed, hidden_size)


def untrained_note() -> None:
    """Under the stepper on every step but the two trained ones, which say what they were trained on."""
    st.caption(attention.UNTRAINED_NOTE)


@steps.add("The encoder reads")
def encoder_reads():
    untrained_note()
    text, control = st.columns([3, 1])
    text.markdown(
        "Chapter 3 opens with translation. Word by word it fails, because languages order words differently, so a "
        "model must read the whole sentence before it writes. Before attention that model was an "
        f"**{term('encoder_decoder', 'RNN encoder–decoder')}**.\n\nThe encoder (here a one-way GRU, a common kind of "
        f"RNN, which reads left to right) reads one token at a time and updates a **{term('hidden_state')}** of "
        f"{hidden_size} numbers. Row *j* is the state after reading tokens 1 to *j*."
    )
    explained = "Size of the GRU's hidden state, in numbers (bounded for a shared server)."
    kept = session.kept_widget(session.WHY_HIDDEN, "w_why_hidden", hidden_size)  # kept while another step shows
    control.slider("hidden_size", 4, attention.constants.MAX_HIDDEN_SIZE, help=explained, **kept)
    title = "encoder_states: the hidden state after each token"
    options = dict(title=title, value_name="hidden state", row_title="after token", col_title="hidden unit")
    options.update(style=widgets.style(shorter=40))  # under 2 paragraphs
    code, notation = "return (1 - z) * n + z * h", Notation("encoder_states")
    options["explain"] = cells.encoder_states(seq2seq_parts, pieces, steps_dims, code=code, notation=notation)
    widgets.token_vectors("encoder-states", view.encoder_states, pieces, steps_dims, decimals=2, **options)


@steps.add("One vector for everything")
def one_vector():
    untrained_note()
    share = view.final_state_share
    st.markdown(
        "A plain decoder gets only the **last** hidden state, and that brings two separate problems. The "
        f"**bottleneck**: the whole sentence, however long, must fit in one vector of {hidden_size} numbers. "
        f"**Fading**: each update passes the previous state through the GRU's weight matrices and {term('gates')}, "
        "so an early token's influence on the final state tends to shrink with every later token.\n\n"
        "PyTorch's autograd measures the fading: the size (norm) of ∂final_state/∂x^(j), how much the final state "
        f"changes with token j (a {term('gradient')} for each of its numbers), as shares of the total. Here the "
        f"first token keeps **{share[0]:.1%}** and the last **{share[-1]:.1%}**."
    )
    series = {"share of the final state's dependence": share}
    options = dict(title="Influence of each token on the final state", value_name="share")
    options.update(meaning="norm of ∂final_state/∂x^(j), as a share of all tokens")
    widgets.draw(figures.bars, "final-state-influence", series, pieces, **options)


@steps.add("Bahdanau looks back")
def bahdanau_looks_back():
    untrained_note()
    weights = view.bahdanau_weights
    st.markdown(
        f"{term('bahdanau')} (2014) lets the decoder **look back at every encoder state**. At each decoder step a "
        "small network scores each encoder state h_j against s, the decoder's state: "
        f"e_j = v_aᵀ tanh(W_a s + U_a h_j). A {term('softmax')} turns the scores into {term('attention_weights')} "
        "over the input tokens. Untrained, the network scores all states "
        f"almost alike: the largest weight is {weights.max():.3f}, against 1/{num_tokens} = {1 / num_tokens:.3f}."
    )
    options = dict(title="bahdanau_weights", value_name="attention weight", row_tokens=False, decimals=3)
    options.update(row_title="decoder step", col_title="encoder token")
    options.update(meaning="how much this decoder step reads this encoder state")
    decoder_steps = [f"step {i + 1}" for i in range(weights.shape[0])]  # counted from 1, like the tokens
    notation = Notation("bahdanau_weights")  # the softmax runs in the decoder's loop, which the page does not show
    options["explain"] = cells.bahdanau(seq2seq_parts, decoder_steps, pieces, code=SCORE_CODE, notation=notation)
    widgets.draw(figures.heatmap, "bahdanau-weights", weights, decoder_steps, pieces, **options)


@steps.add("What each one sees")
def what_each_sees():
    untrained_note()
    final, context = view.final_state_share, view.attention_context_share
    st.markdown(
        f"The {term('context_vector')}, the encoder states summed with the attention weights, reads every state "
        f"directly, so early tokens are not lost. The first token keeps **{context[0]:.1%}** of the context's "
        f"dependence, against **{final[0]:.1%}** of the final state's (an even share would be "
        f"{1 / num_tokens:.1%}). Try a longer sentence in the sidebar."
    )
    series = {"final state": final, "attention context": context}
    title = "Each token's share: final state vs attention context"
    widgets.draw(figures.bars, "final-vs-context", series, pieces, title=title, value_name="share")


@steps.add("Trained: the right word")
def trained_alignment():
    widgets.show_alignment(pieces, data.ids)


@steps.add("Trained: the bottleneck in numbers")
def trained_bottleneck():
    widgets.show_bottleneck()


@steps.add("To self-attention")
def to_self_attention():
    untrained_note()
    st.markdown(
        f"Chapter 3 drops the RNN: in {term('self_attention')} the sequence **attends to itself**, and the score "
        f"is a plain **{term('dot_product')}**, with no network to run for every pair. The additive network here "
        f"has {view.additive_num_parameters:,} untrained parameters. Left: dot-product attention weights, as on the "
        "Simplified attention page (section 3.3). Right: the same pairs scored by the additive network."
    )
    panels = (
        ("dot-product-weights", view.dot_product_weights, "dot product: softmax(x·xᵀ)"),
        ("additive-weights", view.additive_weights, "additive: v_aᵀ tanh(W_a x^(i) + U_a x^(j))"),
    )
    for column, (name, weights, title) in zip(st.columns(2), panels, strict=True):
        additive = name.startswith("additive")
        code = SCORE_CODE if additive else "inputs @ inputs.T"
        notation = Notation("additive_weights" if additive else "dot_product_weights")
        explain = cells.contrast(data.inputs, settings.seed, pieces, additive=additive, code=code, notation=notation)
        with column:
            options = dict(title=title, value_name="attention weight", explain=explain)
            options.update(style=widgets.style(share=figures.COLUMN_SHARES[2]))
            widgets.draw(figures.heatmap, name, weights, pieces, pieces, **options)
    widgets.explain_cell()
    following = "Next: Tokens & embeddings, the vectors self-attention reads"
    st.page_link("pages/tokens.py", label=following, icon=":material/arrow_forward:")


steps.show()
widgets.show_code("attention.encoder_decoder", "attention.gru_step", "attention.additive_scores")  # under every step
