"""Causal mask: hiding future tokens with -inf before the softmax, and the book's tril-and-renormalize route."""

from dataclasses import replace

import numpy as np
import streamlit as st

import attention
from explorer import compute, figures, state, ui

settings = state.current()
st.title("Causal mask")
data = ui.guard(compute.mask_view, settings)
steps, pieces, mask = data.steps, data.pieces, data.steps.mask
num_tokens = len(pieces)
step = ui.stepper(
    "causal_mask",
    ["Unmasked weights", "The mask", "Scores with −∞", "Causal weights", "Two routes, same weights", "Context vectors"],
)
style = ui.style()
if num_tokens <= figures.TEXT_CELL_LIMIT:  # small matrices fit under the stepper at 1280×720
    style = replace(style, max_height=min(style.max_height, 470 if step != 4 else 370))


def draw(z, title, name, narrow=False, **options):
    """A query × key heatmap of this sentence; ``narrow`` ones lose their cell text beyond 8 tokens."""
    options.setdefault("value_name", "attention weight")
    cell_text = not (narrow and num_tokens > 8)
    ui.draw(figures.heatmap, name, z, pieces, pieces, title=title, style=style, cell_text=cell_text, **options)


if step == 4:
    st.markdown(
        "The book first masks the *ordinary* weights: multiply by `torch.tril(ones)` to zero the future, then "
        "divide each row by its new sum. The −∞ route does it in one step. Both give the same weights, "
        f"max |(a) − (b)| = **{data.max_abs_difference:.1e}**: renormalizing divides the future's share "
        "of the softmax denominator out again."
    )
    left, right = st.columns(2)
    with left:
        draw(data.weights_renormalized, "(a) softmax → tril → renormalize", "tril-route", narrow=True, masked=mask)
    with right:
        draw(data.weights_neg_inf, "(b) −∞ → softmax", "neg-inf-route", narrow=True, masked=mask)
    ui.show_code(attention.mask_by_renormalizing, attention.mask_with_neg_inf)
else:
    text, plot = st.columns([1, 2], gap="medium")
if step == 0:
    future_share = float(data.unmasked_weights[mask].sum()) / num_tokens
    text.markdown(
        "These are `CausalAttention`'s weights **before** masking: the softmax of the scaled scores. Every "
        "query attends to every key, including tokens that come after it. A language model predicts the next "
        f"token, so that is cheating: on average a query puts **{future_share:.1%}** of its weight on the future."
    )
    with plot:
        draw(data.unmasked_weights, "attn_weights without a mask", "unmasked-weights")
    with text:
        ui.show_code(attention.compare_masking)
elif step == 1:
    rows, cols = data.mask_buffer_shape
    text.markdown(
        f"`CausalAttention` builds its mask once, a buffer named `mask` of shape ({rows}, {cols}) "
        f"(context_length²), and each call slices `self.mask[:{num_tokens}, :{num_tokens}]`. True (1) is "
        f"above the diagonal, where the key comes after the query: **{int(mask.sum()):,}** of "
        f"{num_tokens * num_tokens:,} cells."
    )
    if data.truncated_from:
        text.info(f"The text has {data.truncated_from:,} tokens; the mask covers only the first {rows:,}.")
    with plot:
        title = f"mask[:{num_tokens}, :{num_tokens}] (1 = True = masked)"
        draw(mask.astype(float), title, "causal-mask", value_name="mask", meaning="1: a future key", decimals=0)
    with text:
        ui.show_code(attention.causal_mask, attention.CausalAttention.__init__)
elif step == 2:
    text.markdown(
        "`masked_fill(mask, -torch.inf)` sets the future scores to **−∞** (blank cells). Why not 0? A score "
        "of 0 would still get exp(0) = 1 in the softmax's numerator; exp(−∞) = **0**, so a masked key gets "
        "exactly nothing."
    )
    with plot:
        title = "masked_scores: scaled scores, −∞ where masked"
        draw(data.masked_scores, title, "masked-scores", value_name="scaled score", diverging=True, masked=mask)
    with text:
        ui.show_code(attention.mask_with_neg_inf)
elif step == 3:
    weights = steps.attn_weights[0, 0]
    worst = float(np.abs(weights.sum(axis=1) - 1).max())
    text.markdown(
        "After the softmax the masked weights are exactly 0, and each row still sums to 1 over the keys its "
        f"query may see (largest |row sum − 1| = {worst:.1e}). The first token sees only itself: its weight "
        f"is {weights[0, 0]:.4f}."
    )
    with plot:
        draw(weights, "attn_weights = softmax(masked_scores)", "causal-weights", masked=mask)
    with text:
        ui.show_code(attention.CausalAttention.steps)
elif step == 5:
    output = steps.output[0]
    book = settings.source == "book" and settings.seed == 123 and settings.d_out == 2
    text.markdown(
        "`context_vec = attn_weights @ values`: each token's context vector mixes only its own and earlier "
        f"tokens' values. First row: {ui.first_values(output)}"
        + (", the book's printed `CausalAttention` output (seed 123)." if book else ".")
    )
    if settings.training and settings.dropout > 0:
        text.caption("Dropout is on in the sidebar; this page shows eval mode (no dropout). See the Dropout page.")
    with plot:
        title = f"context_vec, shape ({num_tokens}, {output.shape[1]})"
        ui.token_vectors("causal-context", output, pieces, title=title, style=style)
    with text:
        ui.show_code(attention.CausalAttention)
