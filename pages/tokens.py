"""Tokens & embeddings: the sentence as GPT-2 token ids, then as the input matrix attention works on."""

import pandas as pd
import streamlit as st

import attention
from explorer import figures, session, widgets
from explorer.models import choice

run = session.current_run()
settings = run.settings
st.title("Tokens & embeddings")
widgets.weights_caption(settings)
data = widgets.guard(run.ready)
widgets.truncation_notice(data.truncated_from, settings.context_length)
if not data.tokenizer.startswith("GPT-2"):
    st.warning(f"Tokenizer: {data.tokenizer}. Token ids are not GPT-2's.", icon=":material/wifi_off:")

step = widgets.stepper("tokens", ["Text → token ids", "Token ids → embedding vectors"])
labels = [figures.visible_token(p) for p in data.pieces]

if step == 0:
    st.markdown(
        "GPT-2 splits text into **tokens** with byte-pair encoding: common words are one token, rare words "
        "several. A leading space belongs to the token (shown as ␣). Each token has an **id**, its row in "
        "GPT-2's vocabulary of 50,257 entries."
    )
    table = pd.DataFrame({"token": labels, "id": list(data.ids)})
    table.index.name = "position"
    widgets.table(table, width="content", height=min(35 * (len(table) + 1) + 3, 460))
    st.caption(f"{len(data.ids)} tokens · tokenizer: {data.tokenizer}")
    widgets.show_code(attention.tokenize)
else:
    if settings.weights != "random":
        st.markdown(choice.input_text(settings))
    elif settings.source == "book":
        st.markdown(
            "Chapter 3 starts from six hand-picked **3-dimensional embedding vectors**, one per token. "
            "Each row below is one token's vector: the book counts from 1, $x^{(1)}$ to $x^{(6)}$, and Python "
            "from 0, so $x^{(i)}$ is `inputs[i - 1]`. These exact numbers produce every value printed in the chapter."
        )
    else:
        st.markdown(
            f"An untrained model's embedding layer is random. Here each token id gets a **{settings.effective_d_in}"
            f"-dimensional vector** drawn from a generator seeded by (seed, id), so a token that occurs twice "
            "has the same vector both times, in any sentence."
        )
    dims = [f"dim {k}" for k in range(data.inputs.shape[1])]
    widgets.draw(
        figures.heatmap,
        "input-embeddings",
        data.inputs,
        data.pieces,
        dims,
        title=f"Input embeddings, shape ({len(data.pieces)}, {data.inputs.shape[1]})",
        value_name="embedding value",
        meaning="one coordinate of this token's input vector",
        row_title="token",
        col_title="dimension",
        col_tokens=False,
    )
    widgets.show_code(attention.embed_tokens, attention.token_vector)
