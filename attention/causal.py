"""Stage 5: causal attention, hiding future tokens (book section 3.5).

What is new: a language model predicts the next word, so a token may only
attend to itself and the tokens before it. The chapter masks the future in two
ways and shows they agree:

(a) take the ordinary softmax weights, zero everything above the diagonal
    with a lower-triangular mask, and divide each row by its new sum;
(b) set the scores above the diagonal to -inf *before* the softmax, so
    exp(-inf) = 0 gives the same rows in one step. This is what the modules use.

``CausalAttention`` also takes batches and applies dropout to the attention
weights (stage 6), through ``drop_with_mask``, which is
``self.dropout(attn_weights)`` that also says which weights it kept. Its mask
is a buffer (``register_buffer``) named ``mask``: it moves with the module
under ``.to(device)`` and is saved in its ``state_dict``, but it is never
trained. It is built once for
``context_length`` tokens as float 0/1 like the book's (so the book's state
dicts load), converted with ``.bool()`` and sliced to the real number of
tokens on each call.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .checks import MAX_CONTEXT_LENGTH, check_batch, check_sizes
from .dropout import drop_with_mask
from .trainable import AttentionSteps

_REEXPORTED = (MAX_CONTEXT_LENGTH,)  # still imported from here by attention/measuring/speed.py


def causal_mask(num_tokens: int) -> torch.Tensor:
    """True above the diagonal: the future tokens each query must not see.

    Shapes: returns (num_tokens, num_tokens), bool.
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)  # (num_tokens, num_tokens)


def mask_by_renormalizing(attn_weights: torch.Tensor) -> torch.Tensor:
    """Route (a): zero the future weights with ``torch.tril``, then renormalize each row.

    Shapes: (..., num_tokens, num_tokens) in and out.
    """
    num_tokens = attn_weights.shape[-1]
    mask_simple = torch.tril(torch.ones(num_tokens, num_tokens))  # (num_tokens, num_tokens)
    masked_simple = attn_weights * mask_simple  # (..., num_tokens, num_tokens)
    return masked_simple / masked_simple.sum(dim=-1, keepdim=True)  # (..., num_tokens, num_tokens)


def mask_with_neg_inf(scaled_scores: torch.Tensor) -> torch.Tensor:
    """Route (b): -inf above the diagonal before the softmax.

    Shapes: (..., num_tokens, num_tokens) in and out.
    """
    num_tokens = scaled_scores.shape[-1]
    masked = scaled_scores.masked_fill(causal_mask(num_tokens), -torch.inf)  # (..., num_tokens, num_tokens)
    return torch.softmax(masked, dim=-1)  # (..., num_tokens, num_tokens)


@dataclass(frozen=True)
class MaskingComparison:
    """Both masking routes side by side.

    Shapes: every tensor (num_tokens, num_tokens); ``max_abs_difference`` is a float.
    """

    unmasked_weights: torch.Tensor
    mask: torch.Tensor
    masked_scores: torch.Tensor
    weights_neg_inf: torch.Tensor
    weights_renormalized: torch.Tensor
    max_abs_difference: float


def compare_masking(scaled_scores: torch.Tensor) -> MaskingComparison:
    """Mask one head's scaled scores both ways and measure how far apart they are."""
    if scaled_scores.dim() != 2 or scaled_scores.shape[0] != scaled_scores.shape[1]:
        raise ValueError(f"Expected square scores (num_tokens, num_tokens), got {tuple(scaled_scores.shape)}.")
    mask = causal_mask(scaled_scores.shape[-1])  # (num_tokens, num_tokens)
    unmasked_weights = torch.softmax(scaled_scores, dim=-1)  # (num_tokens, num_tokens)
    weights_neg_inf = mask_with_neg_inf(scaled_scores)  # (num_tokens, num_tokens)
    weights_renormalized = mask_by_renormalizing(unmasked_weights)  # (num_tokens, num_tokens)
    return MaskingComparison(
        unmasked_weights=unmasked_weights,
        mask=mask,
        masked_scores=scaled_scores.masked_fill(mask, -torch.inf),
        weights_neg_inf=weights_neg_inf,
        weights_renormalized=weights_renormalized,
        max_abs_difference=(weights_neg_inf - weights_renormalized).abs().max().item(),
    )


class CausalAttention(nn.Module):
    """Single-head causal self-attention with dropout, for batches (the book's ``CausalAttention``).

    What is new relative to ``SelfAttention_v2``: the ``mask`` buffer and
    ``dropout``, and inputs of shape (b, num_tokens, d_in).

    Shapes: x (b, num_tokens, d_in) → (b, num_tokens, d_out).
    """

    def __init__(self, d_in: int, d_out: int, context_length: int, dropout: float, qkv_bias: bool = False):
        super().__init__()
        check_sizes(d_in, d_out, context_length=context_length, dropout=dropout)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)  # New
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))  # New

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.steps(x).output

    def steps(self, x: torch.Tensor) -> AttentionSteps:
        check_batch(x, self.d_in, batched=True, context_length=self.mask.shape[0])
        b, num_tokens, d_in = x.shape  # New: batch dimension b
        keys = self.W_key(x)  # (b, num_tokens, d_out)
        queries = self.W_query(x)  # (b, num_tokens, d_out)
        values = self.W_value(x)  # (b, num_tokens, d_out)
        attn_scores = queries @ keys.transpose(1, 2)  # New: transpose dims 1 and 2, (b, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)  # New: in place
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (b, num_tokens, num_tokens)
        dropped_weights, dropout_mask = drop_with_mask(self.dropout, attn_weights)  # New, (b, num_tokens, num_tokens)
        context_vec = dropped_weights @ values  # (b, num_tokens, d_out)
        return AttentionSteps(
            queries=queries, keys=keys, values=values, attn_scores=attn_scores, context_vec=context_vec,
            attn_weights=attn_weights, dropped_weights=dropped_weights, dropout_mask=dropout_mask, output=context_vec,
        )  # fmt: skip
