"""The forward pass of ``MultiHeadAttention`` cut into five steps, and each step with one line changed.

The five steps are the book's lines: split into heads, build the mask, turn
scores into weights, dropout, merge the heads. Each mistaken twin differs from
its step in the line marked ``# Mistake``. ``forward`` runs the module's
weights through a chosen set of steps, so the right and a wrong pass share
everything but that line. ``mistakes`` names each mistake; ``mistake_measures``
measures what it does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .multihead import MultiHeadAttention

# The five steps of the forward pass, right.


def split_heads(mha: MultiHeadAttention, keys: torch.Tensor) -> torch.Tensor:
    """(b, num_tokens, d_out) → (b, num_heads, num_tokens, head_dim), as the book splits keys, queries, values."""
    b, num_tokens, d_out = keys.shape
    keys = keys.view(b, num_tokens, mha.num_heads, mha.head_dim)  # (b, num_tokens, num_heads, head_dim)
    keys = keys.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    return keys


def mask_buffer(context_length: int) -> torch.Tensor:
    """The ``mask`` buffer: 1 above the diagonal, the future each query must not see."""
    return torch.triu(torch.ones(context_length, context_length), diagonal=1)  # (context_length, context_length)


def weigh(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Masked, scaled softmax: scores (..., num_tokens, num_tokens) → attention weights, each row summing to 1."""
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (..., num_tokens, num_tokens)
    return attn_weights


def drop(attn_weights: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    """``self.dropout(attn_weights)`` with a given draw: ``keep`` is 1 where a weight survives, else 0."""
    dropped_weights = attn_weights * keep / (1 - p)  # (..., num_tokens, num_tokens)
    return dropped_weights


def merge_heads(mha: MultiHeadAttention, dropped_weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Each head's context vectors, concatenated per token: → (b, num_tokens, d_out), before ``out_proj``."""
    b, num_heads, num_tokens, head_dim = values.shape
    context_vec = (dropped_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
    context_vec = context_vec.contiguous().view(b, num_tokens, mha.d_out)  # (b, num_tokens, d_out)
    return context_vec


# Each mistake: the same step with one line changed.


def split_heads_without_transpose(mha: MultiHeadAttention, keys: torch.Tensor) -> torch.Tensor:
    b, num_tokens, d_out = keys.shape
    keys = keys.view(b, mha.num_heads, num_tokens, mha.head_dim)  # Mistake: the right shape, the wrong numbers
    return keys


def mask_buffer_tril(context_length: int) -> torch.Tensor:
    return torch.tril(torch.ones(context_length, context_length), diagonal=1)  # Mistake: the lower triangle


def mask_buffer_diagonal_0(context_length: int) -> torch.Tensor:
    return torch.triu(torch.ones(context_length, context_length), diagonal=0)  # Mistake: hides the diagonal too


def weigh_fill_zero(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, 0)  # Mistake: 0 in place of -inf
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (..., num_tokens, num_tokens)
    return attn_weights


def weigh_unscaled(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores, dim=-1)  # Mistake: no 1/sqrt(d_k)
    return attn_weights


def weigh_divided_by_d_k(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)  # Mistake: d_k, not sqrt(d_k)
    return attn_weights


def weigh_mask_after_softmax(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (..., num_tokens, num_tokens)
    attn_weights.masked_fill_(mask_bool, 0)  # Mistake: after the softmax, and no renormalizing
    return attn_weights


def weigh_wrong_dim(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)  # Mistake: normalizes columns
    return attn_weights


def drop_without_rescale(attn_weights: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    dropped_weights = attn_weights * keep  # Mistake: no 1/(1 - p)
    return dropped_weights


def merge_heads_without_transpose(
    mha: MultiHeadAttention, dropped_weights: torch.Tensor, values: torch.Tensor
) -> torch.Tensor:
    b, num_heads, num_tokens, head_dim = values.shape
    context_vec = dropped_weights @ values  # Mistake: (b, num_heads, num_tokens, head_dim), not transposed back
    context_vec = context_vec.contiguous().view(b, num_tokens, mha.d_out)  # (b, num_tokens, d_out)
    return context_vec


@dataclass(frozen=True)
class Steps:
    """The five steps of the forward pass that a mistake can change."""

    split: Callable = split_heads
    mask: Callable = mask_buffer
    weigh: Callable = weigh
    drop: Callable = drop
    merge: Callable = merge_heads


RIGHT = Steps()


@dataclass(frozen=True)
class Forward:
    """One forward pass: the weights after the softmax, after dropout (those multiply the values), and the output.

    Shapes: attn_weights, dropped_weights (b, num_heads, num_tokens, num_tokens); output (b, num_tokens, d_out).
    """

    attn_weights: torch.Tensor
    dropped_weights: torch.Tensor
    output: torch.Tensor


def forward(
    mha: MultiHeadAttention, x: torch.Tensor, steps: Steps = RIGHT, *, keep: torch.Tensor | None = None
) -> Forward:
    """``mha``'s forward pass, step by step, with ``steps`` in place of the book's.

    ``keep`` is a dropout draw, (b, num_heads, num_tokens, num_tokens) with 1
    where a weight survives; without one there is no dropout (eval mode).

    Shapes: x (b, num_tokens, d_in); see ``Forward``.
    """
    b, num_tokens, d_in = x.shape
    keys = steps.split(mha, mha.W_key(x))  # (b, num_heads, num_tokens, head_dim)
    queries = steps.split(mha, mha.W_query(x))  # (b, num_heads, num_tokens, head_dim)
    values = steps.split(mha, mha.W_value(x))  # (b, num_heads, num_tokens, head_dim)
    attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
    mask_bool = steps.mask(mha.mask.shape[0]).bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)
    attn_weights = steps.weigh(attn_scores, mask_bool, keys)  # (b, num_heads, num_tokens, num_tokens)
    dropped_weights = attn_weights if keep is None else steps.drop(attn_weights, keep, mha.dropout.p)
    context_vec = steps.merge(mha, dropped_weights, values)  # (b, num_tokens, d_out)
    return Forward(attn_weights, dropped_weights, mha.out_proj(context_vec))
