"""The Dropout page's step text: each sentence quotes this draw (a ``compute.dropout_view``) or says,
when dropout is idle, that nothing was dropped."""

from __future__ import annotations

import numpy as np

from ..figures import visible_token
from .glossary import term

IDLE = "Nothing is dropped: dropout acts only in **training mode with p > 0**. "


def ones_text(ones) -> str:
    """Step 1: the book's ``Dropout(0.5)`` on ``torch.ones(6, 6)``."""
    return (
        f"{term('dropout', '**Dropout**')} zeroes randomly chosen values while training, so the model cannot "
        "rely on a few of them; this "
        "reduces overfitting (fitting the training data too closely). It is switched off afterwards. "
        "The book's first demo: `torch.manual_seed(123)`, then `torch.nn.Dropout(0.5)` on `torch.ones(6, 6)`. "
        f"**{int((ones == 0).sum())}** of 36 entries were dropped to 0; the others became "
        f"**{ones.max():.0f}** = 1/(1 − 0.5), so each entry's expected value stays 1."
    )


WHERE = (
    "The book notes that attention can apply dropout in two places: to the {weights}, or after multiplying them "
    "by the values. It takes the first, the more common variant in practice: after the softmax, before the values. "
)


def draw_text(data, seed: int, p: float) -> str:
    """Step 2: where the book drops, and how many of the visible weights this draw dropped."""
    where = WHERE.format(weights=term("attention_weights"))
    if not data.active:
        return IDLE + where + "The weights are the causal weights (Causal mask page), unchanged."
    lost, visible = int((~data.keep & ~data.mask).sum()), int((~data.mask).sum())
    return (
        where + f"Here the causal weights (Causal mask page), again after `torch.manual_seed({seed})`. Each weight is "
        f"dropped with probability p = {p:.2f}: this draw dropped **{lost}** of the {visible} the mask left visible."
    )


def example_cell(data) -> tuple[int, int]:
    """The (query, key) of the last weight that survived this draw, else the last row's first key."""
    survivors = np.argwhere(data.keep & ~data.mask)
    return tuple(survivors[-1]) if len(survivors) else (len(data.pieces) - 1, 0)


def survivors_text(data) -> str:
    """Step 3: survivors are scaled by 1/(1 − p)."""
    if not data.active:
        return IDLE + "Every weight survives, unscaled (factor 1):"
    return (
        f"Survivors are multiplied by 1/(1 − p) = **{data.scale:.4f}**, so over many draws each weight w "
        "averages (1 − p) · w/(1 − p) = w. One survivor:"
    )


def survivor_row(data, query: int, key: int) -> dict[str, list[str]]:
    """One survivor's query, key and weight before and after dropout, as a one-row table."""
    pieces, weights, dropped = data.pieces, data.attn_weights, data.dropped_weights
    example = {"query": pieces[query], "key": pieces[key], "before": weights[query, key], "after": dropped[query, key]}
    return {k: [visible_token(v) if isinstance(v, str) else f"{v:.4f}"] for k, v in example.items()}


def row_sums_text(data) -> str:
    """Step 4: the rows no longer sum to 1 after dropout."""
    sums = data.row_sums
    if not data.active:
        return IDLE + f"Every row still sums to 1 (from {sums.min():.4f} to {sums.max():.4f})."
    return (
        f"After dropout the rows no longer sum to 1: here they range from **{sums.min():.4f}** to "
        f"**{sums.max():.4f}**. A row's weights mix the values, so in this draw some context vectors come out "
        "larger and some smaller than without dropout."
    )


def average_text(data, seed: int) -> str:
    """Steps 5 and 6: the mean of many draws approaches the undropped weights, and its rows sum to about 1."""
    same = "Every draw equals the weights, so their mean does too (up to float rounding). "
    idle = "" if data.active else IDLE + same
    sums = np.asarray(data.mean_weights, dtype=np.float64).sum(axis=-1)  # (num_tokens,)
    return (
        idle + f"The mean of {data.num_samples[-1]:,} draws (seeds {seed}, {seed + 1}, …) approaches the "
        f"undropped weights: the largest |mean − weight| is **{data.max_abs_error[-1]:.4f}**. Its rows sum to "
        f"{sums.min():.3f} to {sums.max():.3f}: the 1/(1 − p) scaling keeps each weight's average."
    )
