"""Batches & CausalAttention: two sentences stacked into one (b, num_tokens, d_in) tensor, one mask for both."""

import dataclasses

import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import session, views, widgets
from explorer.page_text import first_values, questions
from explorer.settings import BOOK, MAX_TEXT_CHARS, MAX_URL_TEXT_CHARS

run = widgets.page("Batches & CausalAttention")
settings = run.settings
second_text = None
if settings.source == BOOK:
    st.caption("The book stacks two copies of its six vectors. Choose “My own sentence” to batch two sentences.")
else:
    linked = session.initial_param("second", "batches")
    if linked is not None and "second_text" not in st.session_state:
        st.session_state["second_text"] = linked[:MAX_URL_TEXT_CHARS]
    placeholder = "Empty: the same as the first sentence, as in the book"
    explained = "Tokenized like the first; the shorter sentence is padded at the end. Press Enter to apply."
    options = dict(max_chars=MAX_TEXT_CHARS, placeholder=placeholder, help=explained, persist_state="session")
    second_text = st.text_input("Second sentence of the batch", key="second_text", **options)
    second_text = second_text if second_text and second_text.strip() else None
    if second_text and len(second_text) <= MAX_URL_TEXT_CHARS:
        session.page_param("second", second_text)
data = widgets.guard(views.batch_view, run, second_text)
pieces, lengths, mask, dropout_on = data.pieces, data.lengths, data.mask, data.dropout_active
b, num_tokens, d_in = data.batch_shape
padding = [num_tokens - length for length in lengths]
for index, cut in enumerate(data.truncated_from):
    widgets.truncation_notice(cut, settings.context_length, subject=f"Sentence {index + 1}")

item_names = [f"batch[{i}]: sentence {i + 1}" if second_text else f"batch[{i}]: copy {i + 1}" for i in range(b)]
DIMENSIONS = {"col_tokens": False, "row_title": "token", "col_title": figures.DIMENSION}
p = settings.dropout if dropout_on else None
steps = widgets.Steps("batches")


def side_by_side(matrices, title, name, explain, **options):
    """One heatmap per batch item on one colour scale; ``explain(i)`` makes item i's cells (None: none to explain)."""
    kind = options["kind"] = options.get("kind") or figures.infer_kind(matrices, options.get("value_name", ""))
    options.update(value_range=figures.shared_range(matrices, kind=kind))
    share = figures.COLUMN_SHARES.get(b, 1 / b)  # each item's column: its cell values are those that fit it
    options.update(style=dataclasses.replace(options.get("style") or widgets.style(), share=share))
    for i, column in enumerate(st.columns(b)):
        cols = [f"dim {k}" for k in range(matrices.shape[-1])] if "col_tokens" in options else pieces[i]
        with column:
            explained = None if explain is None else explain(i)
            shown = dict(options, title=f"{item_names[i]} · {title}", explain=explained)
            widgets.draw(figures.heatmap, f"{name}-{i}", matrices[i], pieces[i], cols, **shown)


@steps.add("Stack into a batch", views.batch_view, attention.token_vector)
def stack_into_batch():
    st.markdown(
        "`CausalAttention` takes a **batch**: b sentences of equal length stacked into one (b, num_tokens, d_in) "
        "tensor. The book stacks two copies of its input, `batch = torch.stack((inputs, inputs))`, shape "
        f"(2, 6, 3). Here `batch.shape` is **{data.batch_shape}**."
    )
    if any(padding):  # the shorter sentence is padded at the end
        short = padding.index(max(padding))
        st.info(
            f"Sentence {short + 1} has {lengths[short]} tokens, sentence {2 - short} has {num_tokens}. To stack them, "
            f"the shorter one is **padded at the end** with {padding[short]} × `<|endoftext|>`: padding tokens, "
            "fillers that are not part of the sentence (its own tokens are its real tokens). GPT-2 has no padding "
            "token of its own; the book's later chapters reuse this one, id 50256, and so does this page.",
            icon=":material/space_bar:",
        )
    title = f"({num_tokens}, {d_in})"
    side_by_side(data.inputs, title, "batch-inputs", None, value_name="embedding", **DIMENSIONS)


@steps.add("One mask slice", attention.CausalAttention.__init__, attention.causal_mask)
def mask_slice():
    rows, cols = data.mask_buffer_shape
    book_buffer = settings.source == BOOK and rows != 6  # the book passes context_length = 6
    books = " (the book passes context_length = 6, so its buffer is (6, 6))" if book_buffer else ""
    st.markdown(
        f"`__init__` registers `self.mask`, shape **({rows}, {cols})** (context_length × context_length){books}, as a "
        f"{term('buffer', '**buffer**')}: a tensor the module owns but never trains. It moves with the module "
        "under `.to(device)` and is saved with it. `forward` slices its corner, "
        f"`self.mask[:{num_tokens}, :{num_tokens}]`. That one ({num_tokens}, {num_tokens}) slice masks **every** item "
        f"of `attn_scores`, shape ({b}, {num_tokens}, {num_tokens}): `masked_fill` repeats it along the batch "
        f"dimension ({term('broadcast', 'broadcasting')}), without copying it."
    )
    positions = [str(i + 1) for i in range(num_tokens)]  # tokens counted from 1, as the book counts them
    axes = dict(row_tokens=False, col_tokens=False, row_title="query token", col_title="key token")
    axes.update(meaning="1: this key is in the query's future", value_name="mask", decimals=0, kind="mask")
    title = f"self.mask[:{num_tokens}, :{num_tokens}] (1 = masked)"
    axes.update(style=widgets.style(shorter=40))  # under the text
    widgets.draw(figures.heatmap, "batch-mask-slice", mask.astype(float), positions, positions, title=title, **axes)
    if second_text is None:  # one sentence twice: what the slice masks (steps 3 and 4 show it)
        question = questions.masked_in_batch(mask, b)
    else:  # two sentences: whether the batch, or its padding, changes them (step 4 measures it)
        question = questions.padding_changes(data.unpadded_max_difference, any(padding))
    widgets.ask(question, settings)


@steps.add("Each item's weights", attention.CausalAttention.steps)
def item_weights():
    d_out = data.output.shape[-1]
    notes = [
        "Each item gets its own `attn_weights` from its own queries and keys, all in one batched matrix "
        f"multiplication: shape ({b}, {num_tokens}, {num_tokens}).",
        "`queries @ keys.transpose(1, 2)` swaps only the last two dimensions of keys: (b, num_tokens, d_out) = "
        f"({b}, {num_tokens}, {d_out}) becomes ({b}, {d_out}, {num_tokens}), each item's keys transposed.",
        "Both items are the same sentence, so their weights are the same." if second_text is None else "",
        "Every real token comes before the padding, so no real token's row puts weight on a padding column: those "
        "cells are in its future, masked. The padding rows attend to everything up to themselves, real "
        "tokens and earlier padding alike."
        if any(padding)
        else "",
        f"Dropout is on: these are the weights after one draw (survivors × 1/(1−{p}))." if p is not None else "",
    ]
    st.markdown(" ".join(note for note in notes if note))
    title = "attn_weights" + (" after dropout" if dropout_on else "")

    def explain(item: int) -> cells.Cells:
        """Item ``item``'s weights, after dropout when it is on."""
        if dropout_on:
            code, notation = "dropped_weights, dropout_mask = drop_with_mask(", Notation("dropped_weights", item=item)
            weights, keep = data.attn_weights[item], data.keep[item]
            return cells.dropped(weights, keep, p, pieces[item], code=code, notation=notation)
        code, notation = "attn_weights = torch.softmax(", Notation("attn_weights", scaled=True, item=item)
        return cells.weights(data.scaled_scores[item], pieces[item], masked=mask, code=code, notation=notation)

    side_by_side(data.weights, title, "batch-weights", explain, masked=mask, value_name="attention weight")
    with st.expander("Why `keys.transpose(1, 2)` and not `keys.T`?"):  # under the charts: they fit a projector
        st.markdown(
            f"`keys.T` would reverse all three dimensions, to (d_out, num_tokens, b) = ({d_out}, {num_tokens}, {b}): "
            "`keys.T[0]` would hold every item's first key dimension, not item 1's keys. PyTorch warns that `.T` on "
            "a tensor that is not 2-D is deprecated."
        )


@steps.add("Context vectors", attention.CausalAttention.steps)
def context_vectors():
    output = data.output
    d_out = output.shape[-1]
    if data.dropout_active:
        alone = (
            "Dropout is on, so a batch and a sentence run alone draw different dropout masks: the comparison "
            "with each sentence alone is skipped (nan). Switch training off to measure it."
        )
    else:
        unit = "sentence" if second_text else "copy"  # as the charts' titles name the items
        measured = ", ".join(f"{d:.1e} ({unit} {i + 1})" for i, d in enumerate(data.unpadded_max_difference))
        alone = (
            f"Each {unit} run **alone** (a batch of one, no padding) gives its "
            + ("real tokens" if any(padding) else "tokens")
            + f" the same context vectors: max |batched − alone| = {measured}."
            + (" Padding at the end changed nothing: the causal mask hides it." if any(padding) else "")
        )
    st.markdown(
        f"`context_vecs = ca(batch)`: ({b}, {num_tokens}, {d_in}) → **{tuple(output.shape)}**, that is "
        f"(b, num_tokens, d_in) → (b, num_tokens, d_out). First row: {first_values(output[0])}. " + alone
    )
    widgets.book_caption(settings, "causal_class")
    short = widgets.style(at_most=310)  # under the text, on a 720 px screen
    options = dict(kind="signed", decimals=4 if d_out <= 4 else 2, style=short, **DIMENSIONS)

    def explain(item: int) -> cells.Cells:
        """Item ``item``'s context vectors."""
        code, notation = "context_vec = dropped_weights @ values", Notation("context_vec", right="v", item=item)
        columns = cells.dims(data.values.shape[-1])
        return cells.context(data.weights[item], data.values[item], pieces[item], columns, code=code, notation=notation)

    side_by_side(output, f"({num_tokens}, {d_out})", "batch-context", explain, **options)


steps.show()
