"""After chapter 3: a KV cache, so that a GPT reads each token once while it generates.

Chapter 3's ``MultiHeadAttention`` reads a whole text at once. To generate,
chapter 4's ``generate_text_simple`` runs the whole text through the model again
for every new token, although the earlier tokens' keys and values have not
changed: in a causal model, token i's key and value depend only on tokens 0..i.
A KV cache keeps them (Hugging Face calls it ``past_key_values``).

What is new relative to ``MultiHeadAttention`` (the ``# New`` lines of
``CachedMultiHeadAttention.steps``):

* ``forward`` takes the cache of the tokens seen so far and returns a new one,
  with the new tokens' keys and values appended;
* queries are made only for the new tokens: the earlier tokens have had their turn;
* the causal mask's rows are offset by the cache length: new token i sits at
  position start + i and sees keys 0 .. start + i.

``sliding_window_mask`` also hides keys ``window`` or more tokens back, as
Mistral does, so that each token sees itself and the ``window - 1`` tokens
before it; a window of at least num_tokens is the plain causal mask. The cache
here still keeps every key: a rolling cache that drops keys outside the window
would save memory too, and is not done here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..checks import MAX_CONTEXT_LENGTH, check_batch
from ..multihead import MultiHeadAttention


def check_window(window: int | None) -> None:
    """``window`` is ``None`` (no window) or a whole number of tokens, at least 1."""
    if window is None:
        return
    if isinstance(window, bool) or not isinstance(window, int):
        raise ValueError(f"window must be a whole number of tokens, or None for no window; got {window!r}.")
    if not 1 <= window <= MAX_CONTEXT_LENGTH:
        raise ValueError(
            f"window must be between 1 and {MAX_CONTEXT_LENGTH}, got {window}: each token sees itself "
            "and the window - 1 tokens before it, so a window of 1 means each token sees only itself."
        )


def sliding_window_mask(num_tokens: int, window: int | None, *, start: int = 0) -> torch.Tensor:
    """True where a query must not look: future keys, and keys ``window`` or more tokens back.

    The queries are tokens ``start`` .. ``start + num_tokens - 1`` (the new
    tokens after a cache of ``start``); the keys are every token up to the last
    of them. With ``start=0`` and ``window=None`` (or ``window >= num_tokens``)
    this is ``causal.causal_mask(num_tokens)``.

    Shapes: returns (num_tokens, start + num_tokens), bool.
    """
    check_window(window)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start (the number of cached tokens) must be a whole number, at least 0; got {start!r}.")
    query_pos = torch.arange(start, start + num_tokens).unsqueeze(1)  # (num_tokens, 1)
    key_pos = torch.arange(start + num_tokens).unsqueeze(0)  # (1, start + num_tokens)
    future = key_pos > query_pos  # (num_tokens, start + num_tokens)
    if window is None:
        return future
    return future | (key_pos <= query_pos - window)  # (num_tokens, start + num_tokens)


@dataclass(frozen=True)
class KVCache:
    """The keys and values of every token one attention layer has read so far, in order.

    Frozen: attending returns a new cache, so an old one can be used again
    (to time one step twice, or to try two different next tokens).

    Shapes: keys and values (b, num_kv_heads, num_tokens, head_dim).
    num_kv_heads is num_heads for ``CachedMultiHeadAttention`` and
    num_kv_groups for ``gqa.GroupedQueryAttention``.
    """

    keys: torch.Tensor
    values: torch.Tensor

    def __post_init__(self):
        for name in ("keys", "values"):
            tensor = getattr(self, name)
            if not isinstance(tensor, torch.Tensor) or tensor.dim() != 4:
                raise ValueError(
                    f"A KVCache's {name} must be a tensor of shape (b, num_kv_heads, num_tokens, head_dim)."
                )
        if self.keys.shape != self.values.shape:
            raise ValueError(
                f"A KVCache's keys and values must have the same shape, got {tuple(self.keys.shape)} "
                f"and {tuple(self.values.shape)}."
            )

    @property
    def num_tokens(self) -> int:
        """How many tokens the cache holds."""
        return self.keys.shape[2]

    @property
    def nbytes(self) -> int:
        """Memory the keys and values take, in bytes."""
        return self.keys.nbytes + self.values.nbytes


def check_cache(
    cache: KVCache | None, *, batch_size: int, num_kv_heads: int, head_dim: int, num_tokens: int, context_length: int
) -> int:
    """The number of tokens ``cache`` holds (0 for ``None``), or a ``ValueError`` saying why it does not fit."""
    if cache is None:
        start = 0
    elif not isinstance(cache, KVCache):
        raise ValueError("cache must be the KVCache an earlier call returned, or None for the first call.")
    else:
        cached_batch, cached_heads, start, cached_head_dim = cache.keys.shape
        if cached_batch != batch_size:
            raise ValueError(
                f"The cache was made for a batch of {cached_batch} texts, but the input has {batch_size}. "
                "Pass the cache that this batch returned, or None to start again."
            )
        if (cached_heads, cached_head_dim) != (num_kv_heads, head_dim):
            raise ValueError(
                f"The cache holds {cached_heads} heads of {cached_head_dim} dimensions, but this layer makes "
                f"{num_kv_heads} of {head_dim}: it comes from a different layer or model."
            )
    if start + num_tokens > context_length:
        raise ValueError(
            f"The cache holds {start} tokens and the input adds {num_tokens}, more than context_length "
            f"({context_length}): the causal mask only covers context_length positions."
        )
    return start


@dataclass(frozen=True)
class CachedSteps:
    """What one call with a cache computed, named as in the book.

    Shapes: ``queries`` (b, num_heads, num_tokens, head_dim), for the new
    tokens only; ``keys`` and ``values`` (b, num_heads, start + num_tokens,
    head_dim), cached and new; ``attn_scores`` and ``attn_weights`` (b,
    num_heads, num_tokens, start + num_tokens), one row per new token;
    ``context_vec`` and ``output`` (b, num_tokens, d_out); ``cache`` the new
    ``KVCache`` with start + num_tokens tokens.
    """

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    attn_scores: torch.Tensor
    attn_weights: torch.Tensor
    context_vec: torch.Tensor
    output: torch.Tensor
    cache: KVCache


class CachedMultiHeadAttention(MultiHeadAttention):
    """The chapter's ``MultiHeadAttention`` that takes and returns a ``KVCache``.

    The parameters and the ``mask`` buffer are ``MultiHeadAttention``'s, with
    the same names, so a ``MultiHeadAttention``'s state dict loads into it, and
    ``sharing(mha)`` runs a trained model's own layers with a cache.
    ``window`` (optional) hides keys ``window`` or more tokens back.

    The first call passes ``cache=None`` and the whole prompt; each later call
    passes the cache it got back and only the new token(s). The outputs equal
    ``MultiHeadAttention``'s rows for those tokens.

    Shapes: x (b, num_tokens, d_in) and a cache of start tokens →
    (b, num_tokens, d_out) and a cache of start + num_tokens tokens.
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
        window: int | None = None,
    ):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        check_window(window)
        self.window = window

    @classmethod
    def sharing(cls, mha: MultiHeadAttention, window: int | None = None) -> CachedMultiHeadAttention:
        """A ``CachedMultiHeadAttention`` that uses ``mha``'s own layers and mask, not copies.

        Its own freshly made parameters are replaced at once (inside
        ``fork_rng``, so nobody's random numbers change): 0.2 s for GPT-2
        small's 12 layers, 5 ms for the small GPT's 4.
        """
        with torch.random.fork_rng(devices=[]):
            cached = cls(mha.d_in, mha.d_out, mha.mask.shape[0], mha.dropout.p, mha.num_heads, window=window)
        cached.W_query, cached.W_key, cached.W_value = mha.W_query, mha.W_key, mha.W_value
        cached.out_proj, cached.dropout, cached.mask = mha.out_proj, mha.dropout, mha.mask
        cached.training = mha.training
        return cached

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        steps = self.steps(x, cache)
        return steps.output, steps.cache

    def steps(self, x: torch.Tensor, cache: KVCache | None = None) -> CachedSteps:
        check_batch(x, self.d_in, batched=True)
        b, num_tokens, d_in = x.shape
        start = check_cache(
            cache,
            batch_size=b,
            num_kv_heads=self.num_heads,
            head_dim=self.head_dim,
            num_tokens=num_tokens,
            context_length=self.mask.shape[0],
        )  # New: how many tokens came before these
        keys = self.W_key(x)  # (b, num_tokens, d_out), the new tokens only
        queries = self.W_query(x)  # New: queries only for the new tokens, (b, num_tokens, d_out)
        values = self.W_value(x)  # (b, num_tokens, d_out)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, num_tokens, num_heads, head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, num_tokens, num_heads, head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, num_tokens, num_heads, head_dim)

        keys = keys.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
        queries = queries.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
        values = values.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)

        if cache is not None:  # New: append the new keys and values to the cached ones
            keys = torch.cat([cache.keys, keys], dim=2)  # New: (b, num_heads, start + num_tokens, head_dim)
            values = torch.cat([cache.values, values], dim=2)  # New: (b, num_heads, start + num_tokens, head_dim)

        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, start + num_tokens)
        mask_bool = self.mask.bool()[start : start + num_tokens, : start + num_tokens]  # New: rows after the cache
        if self.window is not None:
            mask_bool = sliding_window_mask(num_tokens, self.window, start=start)  # New: and keys too far back
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1] ** 0.5, dim=-1
        )  # (b, num_heads, num_tokens, start + num_tokens)
        dropped_weights = self.dropout(attn_weights)  # (b, num_heads, num_tokens, start + num_tokens)

        context_vec = (dropped_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # (b, num_tokens, d_out)
        output = self.out_proj(context_vec)  # (b, num_tokens, d_out)
        return CachedSteps(
            queries, keys, values, attn_scores, attn_weights, context_vec, output, KVCache(keys, values)
        )  # New: the cache for the next call
