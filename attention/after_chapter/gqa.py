"""After chapter 3: grouped-query attention, fewer key and value heads for a smaller KV cache.

A KV cache (``kv_cache``) keeps every earlier token's keys and values, for
every head of every layer. Grouped-query attention (GQA, used by Llama 3 and
Mistral) lets several query heads share one key/value head, so the cache
shrinks by the group size while each head still asks its own question.

What is new relative to ``kv_cache.CachedMultiHeadAttention`` (the ``# New`` lines):

* ``W_key`` and ``W_value`` project to ``num_kv_groups * head_dim`` instead of
  ``d_out``: one key and one value head per group;
* the cache holds those ``num_kv_groups`` heads only;
* before the scores, each key/value head is repeated (``repeat_interleave``)
  for the ``num_heads // num_kv_groups`` query heads of its group: query
  heads 0, 1, ... of group 0 come first, then group 1's.

``num_kv_groups == num_heads`` is multi-head attention (nothing is shared);
``num_kv_groups == 1`` is multi-query attention (MQA): every query head reads
the same single key/value head.
"""

from __future__ import annotations

import torch
from torch import nn

from ..checks import MAX_HEADS, check_batch, check_heads, check_size, check_sizes
from .kv_cache import CachedSteps, KVCache, check_cache, check_window, sliding_window_mask


def check_kv_groups(num_heads: int, num_kv_groups: int) -> None:
    """``num_kv_groups`` must be a whole number that divides ``num_heads``."""
    check_size("num_kv_groups", num_kv_groups, upper=MAX_HEADS)
    if num_heads % num_kv_groups != 0:
        raise ValueError(
            f"num_heads must be divisible by num_kv_groups, so that every group has the same number of query "
            f"heads; num_heads={num_heads} and num_kv_groups={num_kv_groups} do not divide. "
            f"Use num_kv_groups=num_heads for multi-head attention, or 1 for multi-query attention."
        )


class GroupedQueryAttention(nn.Module):
    """Causal attention whose ``num_heads`` query heads share ``num_kv_groups`` key/value heads.

    Parameters are created in ``MultiHeadAttention``'s order and with its
    names, so with ``num_kv_groups=num_heads`` the same seed gives the same
    weights and a ``MultiHeadAttention``'s state dict loads into it.
    ``window`` (optional) hides keys ``window`` or more tokens back.

    Like ``CachedMultiHeadAttention``, ``forward`` takes and returns a
    ``KVCache``; pass ``cache=None`` for the first call.

    Shapes: x (b, num_tokens, d_in) and a cache of start tokens →
    (b, num_tokens, d_out) and a cache (b, num_kv_groups, start + num_tokens, head_dim).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        num_kv_groups: int,
        qkv_bias: bool = False,
        window: int | None = None,
    ):
        super().__init__()
        check_sizes(d_in, d_out, context_length=context_length, dropout=dropout)
        check_heads(d_out, num_heads)
        check_kv_groups(num_heads, num_kv_groups)
        check_window(window)
        self.d_in, self.d_out, self.num_heads = d_in, d_out, num_heads
        self.head_dim = d_out // num_heads
        self.num_kv_groups = num_kv_groups  # New
        self.group_size = num_heads // num_kv_groups  # New: query heads per key/value head
        self.window = window
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)  # New: one head per group
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=qkv_bias)  # New: one head per group
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        steps = self.steps(x, cache)
        return steps.output, steps.cache

    def steps(self, x: torch.Tensor, cache: KVCache | None = None) -> CachedSteps:
        check_batch(x, self.d_in, batched=True)
        b, num_tokens, d_in = x.shape
        start = check_cache(
            cache,
            batch_size=b,
            num_kv_heads=self.num_kv_groups,
            head_dim=self.head_dim,
            num_tokens=num_tokens,
            context_length=self.mask.shape[0],
        )
        keys = self.W_key(x)  # New: (b, num_tokens, num_kv_groups * head_dim)
        queries = self.W_query(x)  # (b, num_tokens, d_out)
        values = self.W_value(x)  # New: (b, num_tokens, num_kv_groups * head_dim)

        keys = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim)  # New: (b, num_tokens, groups, head_dim)
        values = values.view(b, num_tokens, self.num_kv_groups, self.head_dim)  # New: (b, num_tokens, groups, head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, num_tokens, num_heads, head_dim)

        keys = keys.transpose(1, 2)  # (b, num_kv_groups, num_tokens, head_dim)
        queries = queries.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
        values = values.transpose(1, 2)  # (b, num_kv_groups, num_tokens, head_dim)

        if cache is not None:
            keys = torch.cat([cache.keys, keys], dim=2)  # (b, num_kv_groups, start + num_tokens, head_dim)
            values = torch.cat([cache.values, values], dim=2)  # (b, num_kv_groups, start + num_tokens, head_dim)
        new_cache = KVCache(keys, values)  # New: the cache keeps num_kv_groups heads, not num_heads

        keys = keys.repeat_interleave(self.group_size, dim=1)  # New: (b, num_heads, start + num_tokens, head_dim)
        values = values.repeat_interleave(self.group_size, dim=1)  # New: (b, num_heads, start + num_tokens, head_dim)

        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, start + num_tokens)
        mask_bool = self.mask.bool()[start : start + num_tokens, : start + num_tokens]  # (num_tokens, start + T)
        if self.window is not None:
            mask_bool = sliding_window_mask(num_tokens, self.window, start=start)  # (num_tokens, start + T)
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1] ** 0.5, dim=-1
        )  # (b, num_heads, num_tokens, start + num_tokens)
        dropped_weights = self.dropout(attn_weights)  # (b, num_heads, num_tokens, start + num_tokens)

        context_vec = (dropped_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # (b, num_tokens, d_out)
        output = self.out_proj(context_vec)  # (b, num_tokens, d_out)
        return CachedSteps(queries, keys, values, attn_scores, attn_weights, context_vec, output, new_cache)
