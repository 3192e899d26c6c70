"""Stage 3: simplified self-attention, with no trainable weights (book section 3.3).

Each token's *attention scores* are dot products of its vector with every
input vector; the *attention weights* normalize those scores so a row sums to
1; the *context vector* is the weighted sum of the inputs. The chapter first
writes this with for loops for the query x^(2) (``inputs[1]``), then for all
queries at once: two matrix products with a softmax between them. It also
contrasts two naive normalizations with ``torch.softmax``, which is the one to
use because it does not overflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SimplifiedAttention:
    """Scores, weights and context vectors of simplified self-attention.

    Shapes: ``attn_scores`` and ``attn_weights`` (num_tokens, num_tokens),
    ``context_vecs`` (num_tokens, d_in).
    """

    attn_scores: torch.Tensor
    attn_weights: torch.Tensor
    context_vecs: torch.Tensor


def check_inputs(inputs: torch.Tensor) -> None:
    """Raise a clear ``ValueError`` unless ``inputs`` is a (num_tokens, d_in) matrix."""
    if not isinstance(inputs, torch.Tensor):
        raise ValueError("inputs must be a torch tensor of shape (num_tokens, d_in).")
    if inputs.dim() != 2:
        raise ValueError(f"inputs must have shape (num_tokens, d_in), got {tuple(inputs.shape)}.")
    if inputs.shape[0] == 0:
        raise ValueError("inputs is empty: there must be at least one token.")


def normalize_by_sum(attn_scores: torch.Tensor) -> torch.Tensor:
    """The chapter's first, naive normalization: divide each score by its row's sum.

    It can give negative "weights" and misbehaves when a row sums to zero.
    Shapes: any (..., num_tokens) in, same shape out.
    """
    return attn_scores / attn_scores.sum(dim=-1, keepdim=True)  # (..., num_tokens)


def softmax_naive(attn_scores: torch.Tensor) -> torch.Tensor:
    """Softmax written out as exp(x) / sum(exp(x)), as in the chapter.

    Every weight is positive, but ``exp`` overflows to ``inf`` for scores above
    about 88.7 in float32, and ``inf / inf`` is ``nan``.
    Shapes: any (..., num_tokens) in, same shape out.
    """
    exp_scores = torch.exp(attn_scores)  # (..., num_tokens)
    return exp_scores / exp_scores.sum(dim=-1, keepdim=True)  # (..., num_tokens)


@dataclass(frozen=True)
class NormalizationComparison:
    """One score row normalized three ways. All shapes (num_tokens,)."""

    attn_scores: torch.Tensor
    by_sum: torch.Tensor
    naive_softmax: torch.Tensor
    torch_softmax: torch.Tensor


def compare_normalizations(attn_scores: torch.Tensor) -> NormalizationComparison:
    """Normalize one score row with the sum, the naive softmax and ``torch.softmax``."""
    return NormalizationComparison(
        attn_scores=attn_scores,
        by_sum=normalize_by_sum(attn_scores),
        naive_softmax=softmax_naive(attn_scores),
        torch_softmax=torch.softmax(attn_scores, dim=-1),
    )


def overflow_demo(attn_scores: torch.Tensor, factor: float = 100.0) -> NormalizationComparison:
    """Where the naive softmax breaks: the same row scaled by ``factor``.

    With the book's scores for "journey" and ``factor=100`` the largest score is
    149.5; ``exp(149.5)`` is ``inf`` in float32, so ``softmax_naive`` returns
    ``nan``. ``torch.softmax`` subtracts the row maximum first and is fine.
    """
    return compare_normalizations(attn_scores * factor)


def attention_loop(inputs: torch.Tensor) -> SimplifiedAttention:
    """Simplified self-attention with for loops: the chapter's nested loops for the scores, then, for every
    query, the weighted sum it writes for ``context_vec_2``.

    Shapes: inputs (num_tokens, d_in).
    """
    check_inputs(inputs)
    num_tokens = inputs.shape[0]
    attn_scores = torch.empty(num_tokens, num_tokens)  # (num_tokens, num_tokens)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    attn_weights = torch.softmax(attn_scores, dim=-1)  # (num_tokens, num_tokens)
    context_vecs = torch.zeros_like(inputs)  # (num_tokens, d_in)
    for i in range(num_tokens):
        for j, x_j in enumerate(inputs):
            context_vecs[i] += attn_weights[i, j] * x_j
    return SimplifiedAttention(attn_scores, attn_weights, context_vecs)


def simplified_attention(inputs: torch.Tensor) -> SimplifiedAttention:
    """Simplified self-attention for all queries at once, by matrix multiplication.

    Shapes: inputs (num_tokens, d_in).
    """
    check_inputs(inputs)
    attn_scores = inputs @ inputs.T  # (num_tokens, num_tokens)
    attn_weights = torch.softmax(attn_scores, dim=-1)  # (num_tokens, num_tokens)
    context_vecs = attn_weights @ inputs  # (num_tokens, d_in)
    return SimplifiedAttention(attn_scores, attn_weights, context_vecs)


def context_contributions(inputs: torch.Tensor, attn_weights: torch.Tensor, query: int) -> torch.Tensor:
    """Each input's share of one query's context vector: ``attn_weights[query, j] * inputs[j]``.

    Summing the rows gives the context vector. Shapes: returns (num_tokens, d_in).
    """
    check_inputs(inputs)
    if not 0 <= query < inputs.shape[0]:
        raise ValueError(f"query must be a token index from 0 to {inputs.shape[0] - 1}, got {query}.")
    return attn_weights[query].unsqueeze(-1) * inputs  # (num_tokens, d_in)
