"""Going faster: the fused kernel when no one needs the attention weights, and a trace with one T × T
tensor fewer when someone does; both measured in ``speed``.

What is new: nothing in the math. ``fast_multihead(mha, x)`` runs the same
``MultiHeadAttention`` parameters through the same steps, with two changes
for speed:

* the scaled dot-product step is PyTorch's fused
  ``F.scaled_dot_product_attention`` (``is_causal=True``): one operation for
  the scores, the mask, the softmax and the weighted sum of the values. Which
  kernel runs depends on the backend PyTorch picks for the device, dtype and
  sizes. A flash-attention kernel works on blocks of queries and keys, skips
  the blocks above the diagonal and never stores a (num_tokens, num_tokens)
  weight matrix; the plain fallback computes and stores every score. nanoGPT
  calls this path "flash attention";
* the three projections are one matrix product: ``W_query``, ``W_key`` and
  ``W_value`` stacked into one (3 * d_out, d_in) weight, which is how
  ``torch.nn.MultiheadAttention`` stores them (``in_proj_weight``) and what
  nanoGPT calls ``c_attn``. Stacking copies the weights on every call, and
  one large product still beats three: 7 to 10% of the whole call at GPT-2
  scale. ``MultiHeadAttention`` itself keeps the book's three layers, where
  the saving was within the noise of measurement.

At GPT-2 scale (b=8, T=1024, d=768, h=12) it takes half the time of
``mha(x)`` on a 2-core CPU and a quarter of the memory (see BENCHMARKS.md).

When to use which:

* ``mha(x)`` or ``trace(mha, x)`` to *see* the attention weights, or to
  reproduce the book's seeded dropout draws. With dropout off, ``trace`` runs
  ``multihead_steps``: ``mha.steps(x)`` bit for bit, without the book's
  separate tensor of scaled scores;
* ``fast_multihead(mha, x)`` when only the outputs matter, e.g. to generate
  text or to time a model. In eval mode it equals ``mha(x)`` to about 1e-6.
  In training mode the kernel drops weights with its own random draws, so
  they differ from ``F.dropout``'s.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..checks import check_batch
from ..multihead import MultiHeadAttention
from ..trainable import AttentionSteps


def fast_multihead(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """``mha(x)`` through ``F.scaled_dot_product_attention``: the same outputs, no weights kept.

    Dropout is applied only while ``mha`` is in training mode, as in ``mha(x)``.

    Shapes: x (b, num_tokens, d_in) → (b, num_tokens, d_out).
    """
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"fast_multihead() needs a MultiHeadAttention, got {type(mha).__name__}.")
    check_batch(x, mha.d_in, batched=True, context_length=mha.mask.shape[0])
    b, num_tokens, d_in = x.shape
    projections = (mha.W_query, mha.W_key, mha.W_value)
    qkv_weight = torch.cat([p.weight for p in projections])  # (3 * d_out, d_in)
    qkv_bias = None if mha.W_query.bias is None else torch.cat([p.bias for p in projections])  # (3 * d_out,)
    qkv = F.linear(x, qkv_weight, qkv_bias)  # (b, num_tokens, 3 * d_out)
    qkv = qkv.view(b, num_tokens, 3, mha.num_heads, mha.head_dim)  # (b, num_tokens, 3, num_heads, head_dim)
    queries, keys, values = qkv.permute(2, 0, 3, 1, 4)  # each (b, num_heads, num_tokens, head_dim)
    context_vec = F.scaled_dot_product_attention(
        queries,
        keys,
        values,
        dropout_p=mha.dropout.p if mha.training else 0.0,
        is_causal=True,
    )  # (b, num_heads, num_tokens, head_dim)
    context_vec = context_vec.transpose(1, 2).reshape(b, num_tokens, mha.d_out)  # (b, num_tokens, d_out)
    return mha.out_proj(context_vec)  # (b, num_tokens, d_out)


def multihead_steps(mha: MultiHeadAttention, x: torch.Tensor) -> AttentionSteps:
    """``mha.steps(x)`` with dropout off, bit for bit, keeping one (b, num_heads, T, T) tensor fewer.

    The book's ``torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)`` makes the scaled scores in a
    tensor of their own, then the weights in another, while the masked ``attn_scores`` are kept: three at
    once. Here the division writes into the weights' tensor and the softmax runs there in place: the same
    two operations on the same numbers, two tensors. At GPT-2 scale (b=8, T=1024, h=12) each is 384 MiB.

    Shapes: x (b, num_tokens, d_in); the fields as in ``mha.steps(x)``.
    """
    if mha.training and mha.dropout.p > 0:
        raise ValueError("multihead_steps() computes the steps with dropout off: call mha.eval() first.")
    check_batch(x, mha.d_in, batched=True, context_length=mha.mask.shape[0])
    b, num_tokens, _ = x.shape
    heads = (b, num_tokens, mha.num_heads, mha.head_dim)
    keys = mha.W_key(x).view(heads).transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    queries = mha.W_query(x).view(heads).transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    values = mha.W_value(x).view(heads).transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
    attn_scores.masked_fill_(mha.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
    attn_weights = torch.div(attn_scores, keys.shape[-1] ** 0.5)  # the scaled scores, in the weights' tensor
    torch.softmax(attn_weights, dim=-1, out=attn_weights)  # (b, num_heads, num_tokens, num_tokens), in place
    context_vec = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, mha.d_out)
    return AttentionSteps(
        queries=queries, keys=keys, values=values, attn_scores=attn_scores, context_vec=context_vec,
        attn_weights=attn_weights, dropped_weights=attn_weights, dropout_mask=None, output=mha.out_proj(context_vec),
    )  # fmt: skip
