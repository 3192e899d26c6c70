"""The chapter's modules for a run: built like the book (``torch.manual_seed(seed)`` then the constructor),
or holding one layer of a trained model, sliced into the chapter's classes (``head_module``,
``wrapper_of_layer``, ``layer_copy``). ``module_for`` picks between them. Shared and read-only."""

from __future__ import annotations

import attention
from explorer.models.choice import MODEL_ENTRIES, fit, model, version
from explorer.runtime import torch
from explorer.runtime.caching import CACHE_ENTRIES, shared_view
from explorer.settings import RANDOM, Settings

MODULES = ("SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention")


@shared_view(max_entries=CACHE_ENTRIES)
def chapter_module(name: str, seed: int, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int):
    """A module built like the book: ``torch.manual_seed(seed)`` then the constructor. Shared, read-only."""
    if name not in MODULES:
        raise ValueError(f"no chapter-3 module named {name!r}")
    cls = getattr(attention, name)
    if name in ("SelfAttention_v1", "SelfAttention_v2"):
        return attention.build(cls, seed, d_in, d_out)
    if name == "CausalAttention":
        return attention.build(cls, seed, d_in, d_out, context_length, dropout)
    return attention.build(cls, seed, d_in, d_out, context_length, dropout, num_heads=num_heads)


def module_for(name: str, settings: Settings, seed: int | None = None):
    """The module ``name`` for ``settings``, built after ``torch.manual_seed(seed)`` (default: the settings' seed),
    or holding the settings' layer of a trained model."""
    if settings.weights != RANDOM:
        return layer_module(name, settings)
    return chapter_module(
        name,
        settings.seed if seed is None else seed,
        settings.effective_d_in,
        settings.d_out,
        settings.context_length,
        settings.dropout,
        settings.num_heads,
    )


def head_module(mha: attention.MultiHeadAttention, head: int, name: str, dropout: float = 0.0) -> torch.nn.Module:
    """``SelfAttention_v1``, ``SelfAttention_v2`` or ``CausalAttention`` holding head ``head`` of ``mha``.

    ``MultiHeadAttention`` projects to d_out and views the result as num_heads heads of
    head_dim, so head i's ``W_query`` is rows i·head_dim to (i+1)·head_dim − 1 of the fused
    one (and likewise for keys, values and biases). ``SelfAttention_v1`` has no bias, so it can
    hold a head only of a model without one.
    """
    if not 0 <= head < mha.num_heads:
        raise ValueError(f"head must be 0 to {mha.num_heads - 1}, got {head}.")
    has_bias = mha.W_query.bias is not None
    if name == "SelfAttention_v1":
        if has_bias:
            raise ValueError(
                "This model's W_query, W_key and W_value have a bias, and SelfAttention_v1 has none, so it cannot "
                "hold them; SelfAttention_v2 (qkv_bias=True) can."
            )
        single = attention.build(attention.SelfAttention_v1, 0, mha.d_in, mha.head_dim)
        attention.load_v2_weights_into_v1(single, head_module(mha, head, "SelfAttention_v2"))
        return single
    if name == "SelfAttention_v2":
        single = attention.build(attention.SelfAttention_v2, 0, mha.d_in, mha.head_dim, qkv_bias=has_bias)
    elif name == "CausalAttention":
        context_length = mha.mask.shape[0]
        single = attention.build(
            attention.CausalAttention, 0, mha.d_in, mha.head_dim, context_length, dropout, qkv_bias=has_bias
        )
    else:
        raise ValueError(f"{name} is not a single-head module.")
    rows = slice(head * mha.head_dim, (head + 1) * mha.head_dim)
    with torch.no_grad():
        for projection in ("W_query", "W_key", "W_value"):
            getattr(single, projection).weight.copy_(getattr(mha, projection).weight[rows])  # (head_dim, d_in)
            if has_bias:
                getattr(single, projection).bias.copy_(getattr(mha, projection).bias[rows])  # (head_dim,)
    return single


def wrapper_of_layer(mha: attention.MultiHeadAttention, dropout: float = 0.0) -> attention.MultiHeadAttentionWrapper:
    """``MultiHeadAttentionWrapper`` whose head i is ``head_module(mha, i, "CausalAttention")``.

    Its output is ``mha``'s heads side by side, before ``out_proj``.
    """
    has_bias = mha.W_query.bias is not None
    args = (mha.d_in, mha.head_dim, mha.mask.shape[0], dropout, mha.num_heads)
    wrapper = attention.build(attention.MultiHeadAttentionWrapper, 0, *args, qkv_bias=has_bias)
    with torch.no_grad():
        for index, head in enumerate(wrapper.heads):
            head.load_state_dict(head_module(mha, index, "CausalAttention", dropout).state_dict())
    return wrapper


def layer_copy(mha: attention.MultiHeadAttention, dropout: float = 0.0) -> attention.MultiHeadAttention:
    """A copy of the layer's ``MultiHeadAttention`` with dropout ``dropout`` (the model itself stays untouched)."""
    has_bias = mha.W_query.bias is not None
    args = (mha.d_in, mha.d_out, mha.mask.shape[0], dropout)
    copy = attention.build(attention.MultiHeadAttention, 0, *args, num_heads=mha.num_heads, qkv_bias=has_bias)
    copy.load_state_dict(mha.state_dict())
    return copy.eval()


@shared_view(max_entries=MODEL_ENTRIES)
def _layer_module(name: str, kind: str, layer: int, head: int, dropout: float, loaded: int) -> torch.nn.Module:
    mha = model(kind).trf_blocks[layer - 1].att
    if name == "MultiHeadAttention":
        return layer_copy(mha, dropout)
    if name == "MultiHeadAttentionWrapper":
        return wrapper_of_layer(mha, dropout)
    return head_module(mha, head, name, dropout)


def layer_module(name: str, settings: Settings) -> torch.nn.Module:
    """The chapter's class ``name`` with the settings' layer (and head) of their model. Shared: read-only."""
    settings = fit(settings)[0]
    loaded = version(settings.weights)
    return _layer_module(name, settings.weights, settings.layer, settings.head, settings.dropout, loaded)
