"""Stage 7: multi-head attention (book section 3.6).

What is new: several causal attention heads run side by side, each with its
own projections, and their context vectors are concatenated. The chapter
builds this twice:

* ``MultiHeadAttentionWrapper`` stacks ``num_heads`` separate
  ``CausalAttention`` modules and concatenates their outputs, giving
  ``num_heads * d_out`` features: (2, 6, 4) for the book's batch of two, with
  d_out = 2 and two heads. Easy to read, but the heads run one by one.
* ``MultiHeadAttention`` does one projection of size ``d_out`` per Q/K/V,
  splits it into heads with ``view`` and ``transpose``, attends in all heads
  at once by batched matrix multiplication, merges the heads back and mixes
  them with ``out_proj``. Here ``d_out`` is the total, ``head_dim = d_out // num_heads``,
  and the scores are divided by √head_dim (``keys.shape[-1]`` after the split).

Why several heads: each has its own projections, so each can attend to a
different kind of relation (the book: different representation subspaces).
This module is the attention layer that chapter 4's GPT stacks; GPT-2 small
has 12 heads, d_in = d_out = 768 and a context of 1,024 tokens.

``multihead_from_wrapper`` and ``to_torch_multihead`` copy weights between
these and ``torch.nn.MultiheadAttention`` so their outputs can be compared.
``heads_product`` is section 3.6.2's check that one batched matmul over the
heads equals each head's own product.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .causal import CausalAttention
from .checks import MAX_HEADS, check_batch, check_heads, check_size, check_sizes
from .dropout import drop_with_mask
from .trainable import AttentionSteps


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` ``CausalAttention`` heads, built one after another, outputs concatenated.

    Shapes: x (b, num_tokens, d_in) → (b, num_tokens, num_heads * d_out).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ):
        super().__init__()
        check_size("num_heads", num_heads, upper=MAX_HEADS)
        self.d_in, self.d_out, self.num_heads = d_in, d_out, num_heads
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([head(x) for head in self.heads], dim=-1)  # (b, num_tokens, num_heads * d_out)


class MultiHeadAttention(nn.Module):
    """Efficient multi-head causal attention: one projection per Q/K/V, split into heads.

    ``transpose(1, 2)`` swaps only the token and head dimensions; ``.T`` would
    reverse all four, batch included. ``view`` needs memory in the order it
    reads, which a transpose does not give, so ``contiguous()`` copies first.

    Parameters are created in the book's order, ``W_query``, ``W_key``,
    ``W_value``, ``out_proj``, so ``torch.manual_seed(123)`` before construction
    reproduces the chapter's printed outputs.

    Shapes: x (b, num_tokens, d_in) → (b, num_tokens, d_out).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ):
        super().__init__()
        check_sizes(d_in, d_out, context_length=context_length, dropout=dropout)
        check_heads(d_out, num_heads)
        self.d_in, self.d_out, self.num_heads = d_in, d_out, num_heads
        self.head_dim = d_out // num_heads  # New: reduce the projection dim to match the output dim
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # New: a linear layer to combine head outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.steps(x).output

    def steps(self, x: torch.Tensor) -> AttentionSteps:
        check_batch(x, self.d_in, batched=True, context_length=self.mask.shape[0])
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, num_tokens, d_out)
        queries = self.W_query(x)  # (b, num_tokens, d_out)
        values = self.W_value(x)  # (b, num_tokens, d_out)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)  # New: (b, num_tokens, num_heads, head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, num_tokens, num_heads, head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, num_tokens, num_heads, head_dim)

        keys = keys.transpose(1, 2)  # New: (b, num_heads, num_tokens, head_dim)
        queries = queries.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
        values = values.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)

        attn_scores = queries @ keys.transpose(2, 3)  # New: per head, (b, num_heads, num_tokens, num_tokens)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1] ** 0.5, dim=-1
        )  # (b, num_heads, num_tokens, num_tokens)
        dropped_weights, dropout_mask = drop_with_mask(self.dropout, attn_weights)  # (b, num_heads, T, T)

        context_vec = (dropped_weights @ values).transpose(1, 2)  # New: (b, num_tokens, num_heads, head_dim)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # New: (b, num_tokens, d_out)
        output = self.out_proj(context_vec)  # New: optional projection, (b, num_tokens, d_out)
        return AttentionSteps(
            queries=queries, keys=keys, values=values, attn_scores=attn_scores, context_vec=context_vec,
            attn_weights=attn_weights, dropped_weights=dropped_weights, dropout_mask=dropout_mask, output=output,
        )  # fmt: skip


def multihead_from_wrapper(wrapper: MultiHeadAttentionWrapper) -> MultiHeadAttention:
    """An efficient ``MultiHeadAttention`` that computes exactly what ``wrapper`` does.

    Head i's (d_out, d_in) weights become rows i*d_out to (i+1)*d_out of each
    fused projection, and ``out_proj`` is the identity, since the wrapper
    only concatenates. Shapes: the result maps (b, num_tokens, d_in) to
    (b, num_tokens, num_heads * d_out).
    """
    first = wrapper.heads[0]
    has_bias = first.W_query.bias is not None
    mha = MultiHeadAttention(
        wrapper.d_in,
        wrapper.num_heads * wrapper.d_out,
        first.mask.shape[0],
        first.dropout.p,
        wrapper.num_heads,
        qkv_bias=has_bias,
    )
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            fused = getattr(mha, name)
            fused.weight.copy_(torch.cat([getattr(h, name).weight for h in wrapper.heads], dim=0))  # (h*d_out, d_in)
            if has_bias:
                fused.bias.copy_(torch.cat([getattr(h, name).bias for h in wrapper.heads], dim=0))  # (h*d_out,)
        mha.out_proj.weight.copy_(torch.eye(mha.d_out))  # (h*d_out, h*d_out)
        mha.out_proj.bias.zero_()
    return mha.train(wrapper.training)


def to_torch_multihead(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """``torch.nn.MultiheadAttention`` with ``mha``'s weights, for checking against PyTorch.

    PyTorch's module maps ``embed_dim`` to ``embed_dim``, so ``mha`` needs
    ``d_in == d_out``. Call it with ``attn_mask=causal_mask(num_tokens)``.
    """
    if mha.d_in != mha.d_out:
        raise ValueError(f"torch.nn.MultiheadAttention needs d_in == d_out, got d_in={mha.d_in}, d_out={mha.d_out}.")
    torch_mha = nn.MultiheadAttention(mha.d_out, mha.num_heads, dropout=mha.dropout.p, bias=True, batch_first=True)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(
            torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight], dim=0)
        )  # (3*d_out, d_in)
        if mha.W_query.bias is None:
            torch_mha.in_proj_bias.zero_()
        else:
            torch_mha.in_proj_bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]))  # (3*d_out,)
        torch_mha.out_proj.weight.copy_(mha.out_proj.weight)  # (d_out, d_out)
        torch_mha.out_proj.bias.copy_(mha.out_proj.bias)  # (d_out,)
    return torch_mha.train(mha.training)


# Section 3.6.2's example tensor a: (b, num_heads, num_tokens, head_dim) = (1, 2, 3, 4).
HEADS_EXAMPLE = torch.tensor(
    [
        [
            [[0.2745, 0.6584, 0.2775, 0.8573], [0.8993, 0.0390, 0.9268, 0.7388], [0.7179, 0.7058, 0.9156, 0.4340]],
            [[0.0772, 0.3565, 0.1479, 0.5331], [0.4066, 0.2318, 0.4545, 0.9737], [0.4606, 0.5159, 0.4220, 0.5786]],
        ]
    ]
)


@dataclass(frozen=True)
class HeadsProduct:
    """Section 3.6.2's check: ``a @ a.transpose(2, 3)`` against each head's ``head @ head.T``.

    ``max_difference`` is the largest |batched − per_head|.

    Shapes: a (b, num_heads, num_tokens, head_dim); batched, per_head (b, num_heads, num_tokens, num_tokens).
    """

    a: torch.Tensor
    batched: torch.Tensor
    per_head: torch.Tensor
    max_difference: float


def heads_product(a: torch.Tensor = HEADS_EXAMPLE) -> HeadsProduct:
    """One batched matmul over every (item, head) beside a loop of each head's own, as section 3.6.2 checks.

    The book prints ``a @ a.transpose(2, 3)``, then ``first_head = a[0, 0, :, :]`` and
    ``first_head @ first_head.T`` (and the second head's): the same numbers. This is why
    ``MultiHeadAttention`` computes every head's scores with one ``queries @ keys.transpose(2, 3)``.
    """
    if not isinstance(a, torch.Tensor) or a.dim() != 4:
        raise ValueError("heads_product() needs a 4-D tensor (b, num_heads, num_tokens, head_dim).")
    batched = a @ a.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
    per_head = torch.stack([torch.stack([head @ head.T for head in item]) for item in a])  # (b, h, T, T)
    return HeadsProduct(a, batched, per_head, (batched - per_head).abs().max().item())
