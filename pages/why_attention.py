"""Why attention: the RNN encoder–decoder bottleneck and Bahdanau attention (sections 3.1–3.2)."""

import streamlit as st

import attention
from explorer import compute, figures, reversal, state, ui
from explorer.weights import outside_model

state.current()
st.title("Why attention")
settings = outside_model(state.chosen())  # the RNN is no part of the GPT: the sidebar's Weights skip it
data = ui.guard(compute.prepared, settings)
hidden_size = st.session_state.setdefault("why_hidden", 16)
view = ui.guard(compute.why_view, settings, hidden_size)
pieces, num_tokens = data.pieces, len(data.pieces)

step = ui.stepper(
    "why_attention",
    [
        "The encoder reads",
        "One vector for everything",
        "Bahdanau looks back",
        "What each one sees",
        "Trained: the right word",
        "Trained: the bottleneck in numbers",
        "To self-attention",
    ],
)
steps_dims = [f"h{k}" for k in range(hidden_size)]
if step not in (4, 5):  # the two trained steps say what they were trained on
    st.caption(attention.UNTRAINED_NOTE)

if step == 0:
    text, control = st.columns([3, 1])
    text.markdown(
        "Before attention, translation used an **RNN encoder–decoder**. The encoder (here a GRU) reads the "
        f"sentence one token at a time and updates a **hidden state** of {hidden_size} numbers; row *j* is the "
        "state after reading tokens 1..*j*."
    )
    control.slider(
        "hidden_size",
        4,
        attention.bahdanau.MAX_HIDDEN_SIZE,
        value=hidden_size,
        key="w_why_hidden",
        on_change=lambda: st.session_state.update(why_hidden=st.session_state["w_why_hidden"]),
        help="Size of the GRU's hidden state (bounded for a shared server).",
    )
    title = "encoder_states: the hidden state after each token"
    options = dict(title=title, value_name="hidden state", row_title="after token", col_title="hidden unit")
    ui.token_vectors("encoder-states", view.encoder_states, pieces, steps_dims, decimals=2, **options)
elif step == 1:
    share = view.final_state_share
    st.markdown(
        "A plain decoder gets only the **last** hidden state, and that brings two separate problems. The "
        f"**bottleneck**: the whole sentence, however long, must fit in one vector of {hidden_size} numbers. "
        "**Fading**: each update passes the previous state through the recurrent weights and gates, so an early "
        "token's influence on the final state tends to shrink with every later token (the gradients that train "
        "the encoder shrink along the same path). Autograd measures the fading: the norm of ∂final_state/∂x_j "
        f"for every token j, as shares of the total. Here the first token keeps **{share[0]:.1%}** and the last "
        f"**{share[-1]:.1%}**."
    )
    series = {"share of the final state's dependence": share}
    options = dict(title="Influence of each token on the final state", value_name="share")
    options.update(meaning="norm of ∂final_state/∂x_j, as a share of all tokens")
    ui.draw(figures.bars, "final-state-influence", series, pieces, **options)
elif step == 2:
    weights = view.bahdanau_weights
    st.markdown(
        "Bahdanau attention (2014) lets the decoder **look back at every encoder state**. At each decoder "
        "step an additive network scores each state, score(s, h_j) = vᵀ tanh(W s + U h_j), and a softmax "
        "turns the scores into weights over the input positions. Untrained, the network scores all states "
        f"almost alike: the largest weight is {weights.max():.3f}, against 1/{num_tokens} = {1 / num_tokens:.3f}."
    )
    options = dict(title="bahdanau_weights", value_name="attention weight", row_tokens=False, decimals=3)
    options.update(row_title="decoder step", col_title="encoder token")
    options.update(meaning="how much this decoder step reads this encoder state")
    decoder_steps = [f"step {i}" for i in range(weights.shape[0])]
    ui.draw(figures.heatmap, "bahdanau-weights", weights, decoder_steps, pieces, **options)
elif step == 3:
    final, context = view.final_state_share, view.attention_context_share
    st.markdown(
        "The context vector reads every encoder state directly, so early tokens are not lost: the first "
        f"token keeps **{context[0]:.1%}** of the context's dependence, against **{final[0]:.1%}** of the final "
        f"state's (an even share would be {1 / num_tokens:.1%}). Try a longer sentence in the sidebar."
    )
    series = {"final state": final, "attention context": context}
    title = "Each token's share: final state vs attention context"
    ui.draw(figures.bars, "final-vs-context", series, pieces, title=title, value_name="share")
elif step == 4:
    reversal.show_alignment(pieces, data.ids)
elif step == 5:
    reversal.show_bottleneck()
else:
    st.markdown(
        "Chapter 3 drops the RNN: the sequence **attends to itself**, and the score is a plain **dot "
        f"product**, with no network to run for every pair (the additive one here has "
        f"{view.additive_num_parameters:,} untrained weights). Left: dot-product weights, as on the next "
        "page. Right: the same pairs scored by the additive network."
    )
    left, right = st.columns(2)
    with left:
        title = "dot product: softmax(x·xᵀ)"
        ui.draw(
            figures.heatmap,
            "dot-product-weights",
            view.dot_product_weights,
            pieces,
            pieces,
            title=title,
            value_name="attention weight",
        )
    with right:
        title = "additive: vᵀ tanh(W xᵢ + U xⱼ)"
        ui.draw(
            figures.heatmap,
            "additive-weights",
            view.additive_weights,
            pieces,
            pieces,
            title=title,
            value_name="attention weight",
        )
    st.page_link("pages/simplified.py", label="Next: simplified self-attention", icon=":material/arrow_forward:")
ui.show_code(attention.encoder_decoder, attention.gru_step, attention.additive_scores)
