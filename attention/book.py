"""Every matrix chapter 3 prints for its six-token example, made as the book makes it.

The chapter changes modules and seeds as it goes: ``SelfAttention_v1`` after
``torch.manual_seed(123)``, ``SelfAttention_v2`` after ``torch.manual_seed(789)``
(and the causal-mask section reuses that v2), dropout after
``torch.manual_seed(123)``, and the batched classes after
``torch.manual_seed(123)`` again. ``book_values()`` replays those steps, so a
page in book mode can show the numbers the reader sees printed, and say which
section printed them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import nn

from .causal import CausalAttention
from .constants import BOOK_SECTIONS as SECTIONS  # noqa: F401  (exported here too)
from .constants import BOOK_SEEDS
from .embeddings import BOOK_INPUTS
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from .seeding import seeded
from .simplified import simplified_attention
from .tracing import build
from .trainable import SelfAttention_v1, SelfAttention_v2


@dataclass(frozen=True)
class BookValues:
    """The chapter's printed matrices for "Your journey starts with one step".

    Shapes: every (6, 6) matrix is (query, key); ``*_context`` are (6, d_out).
    The batched outputs are for the book's batch of the sentence twice; one copy is kept.
    """

    simplified_scores: torch.Tensor  # (6, 6): inputs @ inputs.T
    simplified_weights: torch.Tensor  # (6, 6)
    simplified_context: torch.Tensor  # (6, 3)
    v1_context: torch.Tensor  # (6, 2)
    v2_context: torch.Tensor  # (6, 2)
    causal_unmasked_weights: torch.Tensor  # (6, 6): v2's weights before the mask
    causal_mask_simple: torch.Tensor  # (6, 6): torch.tril(torch.ones(6, 6))
    causal_masked_simple: torch.Tensor  # (6, 6): weights * mask_simple
    causal_renormalized: torch.Tensor  # (6, 6): each row divided by its sum
    causal_masked_scores: torch.Tensor  # (6, 6): scores with -inf above the diagonal
    causal_weights: torch.Tensor  # (6, 6): softmax of the -inf scores / sqrt(d_k)
    dropout_ones: torch.Tensor  # (6, 6): Dropout(0.5) of torch.ones(6, 6)
    dropout_weights: torch.Tensor  # (6, 6): Dropout(0.5) of causal_weights
    causal_attention_context: torch.Tensor  # (6, 2)
    wrapper_context: torch.Tensor  # (6, 4)
    multihead_context: torch.Tensor  # (6, 2)


@functools.cache
def book_values() -> BookValues:
    """Replay the chapter's steps on its six tokens; computed once per process."""
    with torch.no_grad():
        simplified = simplified_attention(BOOK_INPUTS)
        v1 = build(SelfAttention_v1, BOOK_SEEDS["v1"], 3, 2)
        sa_v2 = build(SelfAttention_v2, BOOK_SEEDS["v2"], 3, 2)
        queries, keys = sa_v2.W_query(BOOK_INPUTS), sa_v2.W_key(BOOK_INPUTS)  # (6, 2) each
        attn_scores = queries @ keys.T  # (6, 6)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (6, 6)
        mask_simple = torch.tril(torch.ones(6, 6))  # (6, 6)
        masked_simple = attn_weights * mask_simple  # (6, 6)
        masked_simple_norm = masked_simple / masked_simple.sum(dim=-1, keepdim=True)  # (6, 6)
        mask = torch.triu(torch.ones(6, 6), diagonal=1)  # (6, 6)
        masked = attn_scores.masked_fill(mask.bool(), -torch.inf)  # (6, 6)
        causal_weights = torch.softmax(masked / keys.shape[-1] ** 0.5, dim=-1)  # (6, 6)
        dropout = nn.Dropout(0.5)
        with seeded(BOOK_SEEDS["dropout"]):
            dropout_ones = dropout(torch.ones(6, 6))  # (6, 6)
        with seeded(BOOK_SEEDS["dropout"]):
            dropout_weights = dropout(causal_weights)  # (6, 6)
        batch = torch.stack((BOOK_INPUTS, BOOK_INPUTS))  # (2, 6, 3)
        causal_class = build(CausalAttention, BOOK_SEEDS["causal_class"], 3, 2, 6, 0.0)
        wrapper = build(MultiHeadAttentionWrapper, BOOK_SEEDS["wrapper"], 3, 2, 6, 0.0, num_heads=2)
        multihead = build(MultiHeadAttention, BOOK_SEEDS["multihead"], 3, 2, 6, 0.0, num_heads=2)
        return BookValues(
            simplified_scores=simplified.attn_scores,
            simplified_weights=simplified.attn_weights,
            simplified_context=simplified.context_vecs,
            v1_context=v1(BOOK_INPUTS),
            v2_context=sa_v2(BOOK_INPUTS),
            causal_unmasked_weights=attn_weights,
            causal_mask_simple=mask_simple,
            causal_masked_simple=masked_simple,
            causal_renormalized=masked_simple_norm,
            causal_masked_scores=masked,
            causal_weights=causal_weights,
            dropout_ones=dropout_ones,
            dropout_weights=dropout_weights,
            causal_attention_context=causal_class(batch)[0],
            wrapper_context=wrapper(batch)[0],
            multihead_context=multihead(batch)[0],
        )
