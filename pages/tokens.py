"""Tokens & embeddings: the sentence as GPT-2 token ids, then as the input matrix attention works on."""

import pandas as pd
import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import models, widgets

run = widgets.page("Tokens & embeddings")
settings = run.settings
data = widgets.guard(run.ready)
widgets.truncation_notice(data.truncated_from, settings.context_length)
if not data.tokenizer.startswith("GPT-2"):
    st.warning(f"Tokenizer: {data.tokenizer}. Token ids are not GPT-2's.", icon=":material/wifi_off:")

labels = [figures.visible_token(p) for p in data.pieces]
steps = widgets.Steps("tokens")


@steps.add("Text → token ids", attention.tokenize)
def token_ids():
    st.markdown(
        f"GPT-2 splits text into **{term('token', 'tokens')}** with byte-pair encoding: common words are one token, "
        "rare words several. A leading space belongs to the token (shown as ␣). Each token has an **id**, its row "
        "in GPT-2's vocabulary of 50,257 entries. Tokens are counted from 1, as the book counts them."
    )
    table = pd.DataFrame({"token": labels, "id": list(data.ids)}, index=range(1, len(labels) + 1))
    table.index.name = "token"  # counted from 1; Python's index is one less
    widgets.table(table, width="content", height=min(35 * (len(table) + 1) + 3, 460))
    st.caption(f"{len(data.ids)} tokens · tokenizer: {data.tokenizer}")


@steps.add("Token ids → embedding vectors", attention.embed_tokens, attention.token_vector)
def embeddings():
    if settings.weights != "random":
        st.markdown(models.input_text(settings))
    elif settings.source == "book":
        st.markdown(
            f"Chapter 3 starts from six hand-picked 3-dimensional **{term('embedding', 'embedding vectors')}**, one "
            f"per token, so {term('d_in')} = 3. Each row below is one token's vector. The book counts from 1, x^(1) "
            "to x^(6), and Python from 0, so x^(i) is `inputs[i - 1]`. The chapter's printed numbers all start here."
        )
    else:
        st.markdown(
            f"An untrained model's {term('embedding')} layer is random. Here each token id gets a "
            f"**{settings.effective_d_in}-dimensional vector** ({term('d_in')} = {settings.effective_d_in}) drawn "
            "from a generator seeded by (seed, id). A token that occurs twice has the same vector both times, in "
            "any sentence. Rows count tokens from 1; Python's `inputs[i - 1]` holds x^(i)."
        )
    dims = [f"dim {k}" for k in range(data.inputs.shape[1])]
    code = "torch.rand(d_in, generator=generator)"  # token_vector's draw
    explain = cells.embeddings(data.inputs, data.ids, data.pieces, settings, code=code, notation=Notation("inputs"))
    title = f"Input embeddings, shape ({len(data.pieces)}, {data.inputs.shape[1]})"
    options = dict(title=title, value_name="embedding value", meaning="one coordinate of this token's input vector")
    options.update(row_title="token", col_title=figures.DIMENSION, col_tokens=False, explain=explain)
    widgets.draw(figures.heatmap, "input-embeddings", data.inputs, data.pieces, dims, **options)


steps.show()
