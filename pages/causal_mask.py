"""Causal mask: hiding future tokens with -inf before the softmax, and the book's tril-and-renormalize route."""

import numpy as np
import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import models, views, widgets
from explorer.page_text import first_values, questions
from explorer.page_text.even_weights import even_note

run = widgets.page("Causal mask")
settings = run.settings
seed = views.module_seed(settings, "causal")  # the book's 789 while the sidebar's seed is the default
data = widgets.guard(views.mask_view, run, seed)
pieces, mask = data.pieces, data.steps.mask
num_tokens = len(pieces)
steps = widgets.Steps("causal_mask")


def style(compact: bool = False, share: float = figures.COLUMN_SHARES["beside"]):
    """The page's heatmap style: small matrices fit under the stepper at 1280×720, ``compact`` ones two abreast; a
    chart takes ``share`` of the page's width (beside the step's words unless told)."""
    return widgets.style(at_most=None if num_tokens > figures.TEXT_CELL_LIMIT else 400 if compact else 470, share=share)


def draw(z, title, name, explain, compact=False, share=figures.COLUMN_SHARES["beside"], **options):
    """A query × key heatmap, its cells explained by ``explain`` (or None), with the cell values that fit ``share``."""
    options.setdefault("value_name", "attention weight")
    options.update(title=title, style=style(compact, share))
    widgets.draw(figures.heatmap, name, z, pieces, pieces, explain=explain, **options)


def pair(*panels):
    """Two (matrix, title, name, masked, cells) heatmaps side by side."""
    for column, (z, title, name, hidden, explain) in zip(st.columns(2), panels, strict=True):
        with column:
            draw(z, title, name, explain, compact=True, share=figures.COLUMN_SHARES[2], masked=hidden)


row = min(1, num_tokens - 1)  # the book's example row: query 2
first = data.steps.first_head()  # the one sentence's one head, (T, ·) arrays


def tril_route():
    """The book's first route's result, which two steps show: (matrix, title, name, masked, cells)."""
    code, notation = "return masked_simple / masked_simple.sum(", Notation("masked_simple_norm")
    explain = cells.renormalized(data.masked_simple, data.mask, pieces, code=code, notation=notation)
    return data.weights_renormalized, "masked_simple_norm = masked_simple / row_sums", "tril-route", mask, explain


@steps.add("Unmasked weights", attention.compare_masking)
def unmasked_weights():
    text, plot = steps.beside()
    future_share = float(data.unmasked_weights[mask].sum()) / num_tokens
    trained_head = models.head_name(settings)  # the trained layer's head the module holds, or ""
    book = ", which has the book's `SelfAttention_v2` weight matrices" if seed == 789 else ""
    built = f"holding {trained_head}" if trained_head else f"built after `torch.manual_seed({seed})`{book}"
    text.markdown(
        f"These are the attention weights **before** masking of a `CausalAttention` {built}"
        + ": the softmax of attn_scores / √d_k. Every query attends to every key, including tokens that come "
        "after it. A language model predicts the next token, so that is cheating: on average a query puts "
        f"**{future_share:.1%}** of its weight on the future. A {term('causal_mask')} hides it."
    )
    widgets.book_caption(settings, "causal", where=text)
    gap = views.near_even(data.unmasked_weights)
    widgets.even_note(even_note(gap, num_tokens, settings, masked=False), where=text)
    code, notation = "unmasked_weights = torch.softmax(", Notation("attn_weights", scaled=True)
    explain = cells.weights(first.scaled_scores, pieces, code=code, notation=notation)
    with plot:
        draw(data.unmasked_weights, "attn_weights without a mask", "unmasked-weights", explain)


@steps.add("The mask", attention.causal_mask, attention.CausalAttention.__init__)
def the_mask():
    text, plot = steps.beside()
    rows = data.mask_buffer_shape[0]
    book = views.is_book(settings, "causal")  # the book builds its mask for its six tokens
    size = (
        f"The book passes context_length = {num_tokens}, so its mask is ({num_tokens}, {num_tokens})."
        if book
        else f"Here context_length = {rows:,}, so it is ({rows}, {data.mask_buffer_shape[1]})."
    )
    text.markdown(
        f"`CausalAttention` builds its mask once, as a {term('buffer', 'buffer')} named `mask` of shape "
        f"(context_length, context_length), where {term('context_length')} is the most tokens it accepts. {size} "
        f"Each call slices `self.mask[:{num_tokens}, :{num_tokens}]`.\n\n"
        "A buffer moves with the module under `.to(device)` and is saved with it, but training never changes "
        f"it. True (1) is above the diagonal, where the key comes after the query: **{int(mask.sum()):,}** of "
        f"{num_tokens * num_tokens:,} cells. The book starts from the opposite picture, `mask_simple = "
        f"torch.tril(torch.ones({num_tokens}, {num_tokens}))`: 1 where the query may look."
    )
    widgets.book_caption(settings, "causal", where=text)
    if data.truncated_from:
        text.info(f"The text has {data.truncated_from:,} tokens; the mask covers only the first {rows:,}.")
    options = dict(value_name="mask", decimals=0, kind="mask")
    buffer, simple = plot.columns(2)
    quarter = figures.COLUMN_SHARES["beside"] * figures.COLUMN_SHARES[2]  # two columns beside the words
    with buffer:
        title = f"mask[:{num_tokens}, :{num_tokens}] (1 = masked)"
        draw(mask.astype(float), title, "causal-mask", None, share=quarter, meaning="1: a future key", **options)
    with simple:
        title = "mask_simple = torch.tril(ones)"
        names = {"False (0): visible": "0: a future key, zeroed", "True (1): masked, a future key": "1: kept"}
        shown = dict(title=title, style=style(share=quarter), legend_names=names, **options)
        widgets.draw(figures.heatmap, "mask-simple", data.mask_simple, pieces, pieces, **shown)
    with text:
        question = questions.masked_second_row(data.unmasked_weights, data.weights_renormalized, pieces)
        widgets.ask(question, settings)  # the next step shows it


@steps.add("× mask, ÷ row sums", attention.mask_by_renormalizing)
def zero_and_renormalize():
    st.markdown(
        "The book's first route masks the *ordinary* weights: `masked_simple = attn_weights * mask_simple` zeroes "
        "the future (left). Then `masked_simple_norm = masked_simple / row_sums`, with `row_sums = "
        "masked_simple.sum(dim=-1, keepdim=True)`, makes each row sum to 1 again (right). "
        f"Row {row + 1}, query x^({row + 1}), is Python's row `[{row}]`: "
        + first_values(data.weights_renormalized[row:], 2)
    )
    widgets.book_caption(settings, "causal")
    code, notation = "masked_simple = attn_weights * mask_simple", Notation("masked_simple")
    explain = cells.masked_weights(data.unmasked_weights, data.mask_simple, pieces, code=code, notation=notation)
    pair((data.masked_simple, "masked_simple = attn_weights · mask_simple", "tril-masked", None, explain), tril_route())


@steps.add("Scores with −∞", attention.CausalAttention.steps)
def scores_with_minus_infinity():
    text, plot = steps.beside()
    text.markdown(
        "The −∞ route instead masks the scores: `attn_scores.masked_fill(mask.bool(), -torch.inf)` sets the future "
        "scores to **−∞** (gray cells), with `mask = torch.triu(torch.ones(...), diagonal=1)`. The division by √d_k "
        "comes next, inside the softmax. Why not 0? A score of 0 would still get exp(0) = 1 in the softmax's "
        "numerator; exp(−∞) = **0**, so a masked key gets exactly nothing."
    )
    widgets.book_caption(settings, "causal", where=text)
    code, notation = "attn_scores.masked_fill_(", Notation("masked")
    with plot:
        title = "masked = attn_scores, −∞ where masked"
        explain = cells.scores(first.queries, first.keys, pieces, code=code, notation=notation, mask=data.mask)
        draw(data.masked_scores, title, "masked-scores", explain, value_name="score", kind="signed", masked=mask)


@steps.add("Two routes, same weights", attention.CausalAttention.steps, attention.mask_by_renormalizing)
def two_routes():
    attn_weights = data.steps.attn_weights[0, 0]
    worst = float(np.abs(attn_weights.sum(axis=1) - 1).max())
    st.markdown(
        "The −∞ route does it in one step (right): after the softmax the masked weights are exactly 0. Each row "
        f"sums to 1 over the keys its query may see (largest |row sum − 1| = {worst:.1e}); the first token "
        f"sees only itself, with weight {attn_weights[0, 0]:.4f}. The book's first route (left) gives the same "
        f"weights, max |left − right| = **{data.max_abs_difference:.1e}**: renormalizing divides the future's "
        "share of the softmax denominator out again."
    )
    widgets.book_caption(settings, "causal")
    code, notation = "attn_weights = torch.softmax(", Notation("attn_weights", scaled=True)
    explain = cells.weights(first.scaled_scores, pieces, masked=data.mask, code=code, notation=notation)
    pair(tril_route(), (attn_weights, "attn_weights = softmax(masked / √d_k)", "causal-weights", mask, explain))
    widgets.even_note(even_note(views.near_even(attn_weights, mask), num_tokens, settings, masked=True))


@steps.add("Context vectors", attention.CausalAttention)
def context_vectors():
    text, plot = steps.beside()
    output = data.steps.output[0]
    text.markdown(
        "`context_vec = attn_weights @ values`: each token's context vector mixes only its own and earlier "
        f"tokens' values. First row: {first_values(output)}."
    )
    text.caption(
        "Section 3.5.1 stops at the weights. Section 3.5.3 builds `CausalAttention` after `torch.manual_seed(123)` "
        "and prints its output's shape; its values are the first two columns of section 3.6.1's output. See the "
        "Batches page."
    )
    if settings.training and settings.dropout > 0:
        text.caption("Dropout is on in the sidebar; this page shows eval mode (no dropout). See the Dropout page.")
    code, notation = "context_vec = dropped_weights @ values", Notation("context_vec", right="v")
    columns = cells.dims(first.values.shape[1])
    explain = cells.context(first.attn_weights, first.values, pieces, columns, code=code, notation=notation)
    with plot:
        title = f"context_vec, shape ({num_tokens}, {output.shape[1]})"
        widgets.token_vectors("causal-context", output, pieces, title=title, style=style(), explain=explain)


steps.show()
