"""What a KV cache costs and saves, as pure functions of a model's shape (no torch needed).

* ``cache_bytes_per_token``: every generated token adds one key and one value
  vector per key/value head per layer to the cache:
  2 (K and V) × num_layers × num_kv_heads × head_dim × bytes per element.
  Multi-head attention (MHA) has num_kv_heads = num_heads; grouped-query
  attention (GQA) fewer; multi-query attention (MQA) one.
* ``macs_per_new_token``: the multiply-adds of the matrix products that one
  new token costs, with the cache (one token through every layer, attending
  over all cached keys) and without it (the whole text again, as chapter 4's
  ``generate_text_simple`` does, including the logits of every row). LayerNorm,
  GELU, softmax and bias additions are left out: they are not matrix products
  and cost far less.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..constants import GPT2_SMALL, VERDICT_CONFIG, GPTConfig

KV = 2  # a key and a value per head


def cache_bytes_per_token(num_layers: int, num_kv_heads: int, head_dim: int, bytes_per_element: int) -> int:
    """Bytes the cache grows by with every token: 2 × num_layers × num_kv_heads × head_dim × bytes_per_element."""
    for name, value in (
        ("num_layers", num_layers),
        ("num_kv_heads", num_kv_heads),
        ("head_dim", head_dim),
        ("bytes_per_element", bytes_per_element),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number, at least 1; got {value!r}.")
    return KV * num_layers * num_kv_heads * head_dim * bytes_per_element


@dataclass(frozen=True)
class CacheShape:
    """One model's attention, as far as the cache is concerned."""

    model: str
    num_layers: int
    num_heads: int  # query heads
    num_kv_heads: int  # key/value heads: num_heads for MHA, 1 for MQA, in between for GQA
    head_dim: int
    dtype: str  # what each number is stored as
    bytes_per_element: int

    @property
    def kind(self) -> str:
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    @property
    def bytes_per_token(self) -> int:
        return cache_bytes_per_token(self.num_layers, self.num_kv_heads, self.head_dim, self.bytes_per_element)


def shapes_for(
    model: str, num_layers: int, num_heads: int, head_dim: int, gqa_kv_heads: int, dtype: str, bytes_per_element: int
) -> tuple[CacheShape, CacheShape, CacheShape]:
    """The same model with MHA, with GQA of ``gqa_kv_heads`` key/value heads, and with MQA."""
    if num_heads % gqa_kv_heads != 0:
        raise ValueError(f"gqa_kv_heads={gqa_kv_heads} must divide num_heads={num_heads}.")
    return tuple(
        CacheShape(model, num_layers, num_heads, kv_heads, head_dim, dtype, bytes_per_element)
        for kv_heads in (num_heads, gqa_kv_heads, 1)
    )


def _from_config(model: str, cfg: GPTConfig, gqa_kv_heads: int) -> tuple[CacheShape, CacheShape, CacheShape]:
    return shapes_for(model, cfg.n_layers, cfg.n_heads, cfg.emb_dim // cfg.n_heads, gqa_kv_heads, "float32", 4)


# GPT-2 small and the small GPT as this package runs them (float32); Llama 3 8B as it is released (bfloat16),
# whose real attention is the GQA row: 32 query heads share 8 key/value heads.
CACHE_SHAPES: tuple[CacheShape, ...] = (
    *_from_config("GPT-2 small", GPT2_SMALL, gqa_kv_heads=4),
    *shapes_for("Llama-3-8B-style", 32, 32, 128, 8, "bfloat16", 2),
    *_from_config("small GPT (The Verdict)", VERDICT_CONFIG, gqa_kv_heads=2),
)


@dataclass(frozen=True)
class MacCount:
    """Multiply-adds of the matrix products for one new token, by where they happen."""

    projections: int  # W_query, W_key, W_value and out_proj, every layer
    attention: int  # queries @ keys.T and attn_weights @ values, every layer
    feed_forward: int  # the two linear layers of every block's FeedForward
    output_head: int  # out_head: a score for every vocabulary token

    @property
    def total(self) -> int:
        return self.projections + self.attention + self.feed_forward + self.output_head


def macs_per_new_token(
    cfg: GPTConfig, num_tokens: int, *, use_cache: bool, num_kv_heads: int | None = None
) -> MacCount:
    """Multiply-adds to get the next token when the text has ``num_tokens`` tokens, the newest included.

    With the cache, only the newest token goes through the model. Per layer it costs:

    * d × d for its query, and d × d for the output projection;
    * d × kv_dim for its key and for its value (kv_dim = num_kv_heads × head_dim);
    * 8 d² for the feed-forward layer;
    * 2 × num_tokens × d to score the cached keys and mix their values.

    Then d × vocab_size gives its logits. Without the cache all ``num_tokens`` rows go
    through every product. The attention matrix is num_tokens × num_tokens (the masked
    half is computed too), and every row gets logits.
    """
    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
        raise ValueError(f"num_tokens must be a whole number, at least 1; got {num_tokens!r}.")
    num_kv_heads = cfg.n_heads if num_kv_heads is None else num_kv_heads
    if num_kv_heads < 1 or cfg.n_heads % num_kv_heads != 0:
        raise ValueError(f"num_kv_heads={num_kv_heads} must divide the model's {cfg.n_heads} heads.")
    d, layers = cfg.emb_dim, cfg.n_layers
    kv_dim = num_kv_heads * (d // cfg.n_heads)
    rows = 1 if use_cache else num_tokens  # the tokens that go through the model
    return MacCount(
        projections=layers * rows * (2 * d * d + 2 * d * kv_dim),
        attention=layers * 2 * rows * num_tokens * d,
        feed_forward=layers * rows * 8 * d * d,
        output_head=rows * d * cfg.vocab_size,
    )
