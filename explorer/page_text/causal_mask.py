"""The Causal mask page's step text that quotes this input's numbers."""

from __future__ import annotations

from .glossary import term

TRIL_LEGEND = {"False (0): visible": "0: a future key, zeroed", "True (1): masked, a future key": "1: kept"}


def unmasked_text(seed: int, future_share: float, *, trained_head: str = "") -> str:
    """Step 1: every query sees the future, and how much weight it puts there on average; ``trained_head`` names
    the trained layer's head the module holds (empty for the chapter's seeded weight matrices)."""
    built = (
        f"holding {trained_head}"
        if trained_head
        else f"built after `torch.manual_seed({seed})`"
        + (", which has the book's `SelfAttention_v2` weight matrices" if seed == 789 else "")
    )
    return (
        f"These are the weights **before** masking of a `CausalAttention` {built}"
        + ": the softmax of attn_scores / √d_k. Every query attends to every key, including tokens that come "
        "after it. A language model predicts the next token, so that is cheating: on average a query puts "
        f"**{future_share:.1%}** of its weight on the future. A {term('causal_mask')} hides it."
    )


def mask_text(buffer_shape: tuple[int, int], num_tokens: int, masked_cells: int, book: bool) -> str:
    """Step 2: the ``mask`` buffer, sliced to this input, against the book's ``torch.tril``; ``book``: the
    book's preset, whose buffer the book builds for its six tokens (its ``context_length`` is 6)."""
    rows, cols = buffer_shape
    size = (
        f"The book passes context_length = {num_tokens}, so its mask is ({num_tokens}, {num_tokens})."
        if book
        else f"Here {term('context_length')} = {rows:,}, so it is ({rows}, {cols})."
    )
    return (
        f"`CausalAttention` builds its mask once, as a {term('buffer', 'buffer')} named `mask` of shape "
        f"(context_length, context_length). {size} Each call slices `self.mask[:{num_tokens}, :{num_tokens}]`.\n\n"
        "A buffer moves with the module under `.to(device)` and is saved with it, but training never changes "
        f"it. True (1) is above the diagonal, where the key comes after the query: **{masked_cells:,}** of "
        f"{num_tokens * num_tokens:,} cells. The book starts from the opposite picture, `mask_simple = "
        f"torch.tril(torch.ones({num_tokens}, {num_tokens}))`: 1 where the query may look."
    )


def two_routes_text(worst_row_sum: float, first_weight: float, max_abs_difference: float) -> str:
    """Step 5: the −∞ route and the tril route give the same weights."""
    return (
        "The −∞ route does it in one step (right): after the softmax the masked weights are exactly 0. Each row "
        f"sums to 1 over the keys its query may see (largest |row sum − 1| = {worst_row_sum:.1e}); the first token "
        f"sees only itself, with weight {first_weight:.4f}. The book's first route (left) gives the same weights, "
        f"max |left − right| = **{max_abs_difference:.1e}**: renormalizing divides the future's share of the softmax "
        "denominator out again."
    )
