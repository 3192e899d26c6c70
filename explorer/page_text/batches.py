"""The Batches page's step text: what stacking, padding and one shared mask mean for this batch
(a ``compute.batch_view``)."""

from __future__ import annotations

from .glossary import term


def padding_text(lengths, num_tokens: int, padding: list[int]) -> str:
    """Step 1, when the sentences differ in length: the shorter one is padded at the end."""
    short = padding.index(max(padding))
    return (
        f"Sentence {short + 1} has {lengths[short]} tokens, sentence {2 - short} has {num_tokens}. To stack them, "
        f"the shorter one is **padded at the end** with {padding[short]} × `<|endoftext|>`. GPT-2 has no padding "
        "token of its own; the book's later chapters reuse this one, id 50256, and so does this page."
    )


def mask_text(buffer_shape: tuple[int, int], b: int, num_tokens: int, *, book: bool = False) -> str:
    """Step 2: one registered buffer, one slice of it, applied to every item of the batch; ``book``: the book's
    preset, for which the book passes context_length = 6 and so builds a (6, 6) buffer."""
    rows, cols = buffer_shape
    books = " (the book passes context_length = 6, so its buffer is (6, 6))" if book and rows != 6 else ""
    return (
        f"`__init__` registers `self.mask`, shape **({rows}, {cols})** (context_length × context_length){books}, as a "
        f"{term('buffer', '**buffer**')}: a tensor the module owns but never trains. It moves with the module "
        "under `.to(device)` and "
        f"is saved with it. `forward` slices its corner, `self.mask[:{num_tokens}, :{num_tokens}]`."
        f" That one ({num_tokens}, {num_tokens}) slice masks **every** item of `attn_scores`, shape ({b}, "
        f"{num_tokens}, {num_tokens}): `masked_fill` repeats it along the batch dimension "
        f"({term('broadcast', 'broadcasting')}), "
        "without copying it."
    )


def weights_text(b: int, num_tokens: int, d_out: int, same: bool, padded: bool, dropout: float | None) -> str:
    """Step 3: each item's weights; ``dropout`` is p when dropout is on, else None."""
    notes = [
        "Each item gets its own `attn_weights` from its own queries and keys, all in one batched matrix "
        f"multiplication: shape ({b}, {num_tokens}, {num_tokens}).",
        "`queries @ keys.transpose(1, 2)` swaps only the last two dimensions of keys: (b, num_tokens, d_out) = "
        f"({b}, {num_tokens}, {d_out}) becomes ({b}, {d_out}, {num_tokens}), each item's keys transposed.",
        "Both items are the same sentence, so their weights are the same." if same else "",
        "Every real token comes before the padding, so no real token's row puts weight on a padding column: those "
        "cells are in its future, masked. The padding rows attend to everything up to themselves, real "
        "tokens and earlier padding alike."
        if padded
        else "",
        f"Dropout is on: these are the weights after one draw (survivors × 1/(1−{dropout}))."
        if dropout is not None
        else "",
    ]
    return " ".join(note for note in notes if note)


TRANSPOSE_QUESTION = "Why `keys.transpose(1, 2)` and not `keys.T`?"


def transpose_text(b: int, num_tokens: int, d_out: int) -> str:
    """Step 3, under ``TRANSPOSE_QUESTION``: what ``keys.T`` does once there is a batch dimension."""
    return (
        f"`keys.T` would reverse all three dimensions, to (d_out, num_tokens, b) = ({d_out}, {num_tokens}, {b}): "
        "`keys.T[0]` would hold every item's first key dimension, not item 1's keys. PyTorch warns that `.T` on a "
        "tensor that is not 2-D is deprecated."
    )


def context_text(data, first_row: str, padded: bool) -> str:
    """Step 4: the batch's context vectors, and whether each sentence alone gives the same ones."""
    b, num_tokens, d_in = data.batch_shape
    if data.dropout_active:
        alone = (
            "Dropout is on, so a batch and a sentence run alone draw different dropout masks: the comparison "
            "with each sentence alone is skipped (nan). Switch training off to measure it."
        )
    else:
        measured = ", ".join(f"{d:.1e} (sentence {i + 1})" for i, d in enumerate(data.unpadded_max_difference))
        alone = (
            "Each sentence run **alone** (a batch of one, no padding) gives its real tokens the same context "
            f"vectors: max |batched − alone| = {measured}."
            + (" Padding at the end changed nothing: the causal mask hides it." if padded else "")
        )
    return (
        f"`context_vecs = ca(batch)`: ({b}, {num_tokens}, {d_in}) → **{tuple(data.output.shape)}**, that is "
        f"(b, num_tokens, d_in) → (b, num_tokens, d_out). First row: {first_row}. " + alone
    )
