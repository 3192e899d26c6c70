"""Tolerances from the computation's float32 error, not from one machine.

The model is the standard forward-error bound for sums (Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., section 3.1): a sum of ``n``
products, computed in any order, is within ``γ_n · Σ|a_i b_i|`` of the exact
sum, with ``γ_n ≈ n · u`` and the unit roundoff ``u = eps / 2``. Two
implementations that sum in different orders (a cached step against a full
rerun, a fused kernel against the book's lines, AVX2 against AVX-512) therefore
differ by at most ``n · eps · Σ|a_i b_i|``.

A chain of products (projections, scores, weights @ values, feed-forward)
adds each step's error to first order, each measured against the result's own
scale: ``eps · scale · Σ n_k``. Softmax, LayerNorm and GELU each add a few eps
relative, far less than a product's ``n``; they are counted by the sums they
make (a LayerNorm's mean and variance are two sums of ``d``).

Comparisons whose two sides run the same code on the same numbers are
bit-identical and keep ``torch.equal`` or ``atol`` near 0. Comparisons with the
book's printed numbers use its 4 decimals (``BOOK_ATOL``), far above any float32
error here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention.after_chapter.generation import step_without_cache

EPS32 = torch.finfo(torch.float32).eps  # 1.19e-7: float32's spacing at 1
BOOK_ATOL = 5e-5  # the book prints 4 decimals: half the last digit


def summation_error(inner_sizes: int | list[int], scale, dtype: torch.dtype = torch.float32):
    """At most how far two summation orders of a chain of products can differ: ``eps · scale · Σ n_k``.

    ``inner_sizes``: each product's inner (summed) size along the path; ``scale``:
    ``Σ|a_i b_i|`` of the compared result (a number or a tensor, elementwise).
    """
    count = inner_sizes if isinstance(inner_sizes, int) else sum(inner_sizes)
    return count * torch.finfo(dtype).eps * scale


def matmul_error(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise, how far two summation orders of ``a @ b`` can differ: ``eps · n · (|a| @ |b|)``, n = a's last
    size, eps of a's dtype."""
    return summation_error(a.shape[-1], a.abs() @ b.abs(), a.dtype)


def within(found: torch.Tensor, expected: torch.Tensor, bound) -> bool:
    """Whether every element of ``found`` is within ``bound`` (a number or an elementwise tensor) of ``expected``."""
    return bool(((found - expected).abs() <= bound).all())


def attention_inner_sizes(d_in: int, head_dim: int, num_tokens: int, d_out: int) -> list[int]:
    """The sums in one multi-head attention, on the path to its output.

    Query/key/value projections (d_in), scores (head_dim), weights @ values
    (num_tokens), ``out_proj`` (d_out).
    """
    return [d_in, head_dim, num_tokens, d_out]


def gpt_block_inner_sizes(emb_dim: int, n_heads: int, num_tokens: int) -> list[int]:
    """The sums in one transformer block: two LayerNorms (mean and variance each), the attention, the
    feed-forward network (emb_dim into 4·emb_dim, then 4·emb_dim back)."""
    layer_norm = [emb_dim, emb_dim]
    attention = attention_inner_sizes(emb_dim, emb_dim // n_heads, num_tokens, emb_dim)
    return layer_norm + attention + layer_norm + [emb_dim, 4 * emb_dim]


def gpt_logits_inner_sizes(cfg, num_tokens: int) -> list[int]:
    """Every sum on the path from the embeddings to a logit: ``n_layers`` blocks, the final LayerNorm and
    the output head (emb_dim)."""
    blocks = gpt_block_inner_sizes(cfg.emb_dim, cfg.n_heads, num_tokens) * cfg.n_layers
    return [*blocks, cfg.emb_dim, cfg.emb_dim, cfg.emb_dim]


@dataclass(frozen=True)
class AttentionBounds:
    """How far two summation orders can move each stage of a multi-head attention (absolute, all elements).

    From the summation bound at the terms' largest scales: projections sum
    ``d_in`` terms; scores ``head_dim`` more; a softmax moves a weight by at
    most twice its row's largest score change; ``weights @ values`` sums
    ``num_tokens`` terms of at most the largest value (weights sum to 1, so
    their changes move it by at most twice the score change times it); ``out_proj`` sums
    ``d_out``.
    """

    projections: float  # queries, keys, values
    attn_weights: float
    context: float  # weights @ values, heads merged
    output: float  # after out_proj

    def close(self, stage: str) -> dict[str, float]:
        """``allclose`` keywords for ``stage``: the bound as ``atol``, ``rtol`` 0 (the error follows the
        terms' sizes, not the result's)."""
        return {"atol": getattr(self, stage), "rtol": 0.0}


def attention_bounds(module, x: torch.Tensor) -> AttentionBounds:
    """The bounds for ``module`` (``W_query``, ``W_key``, ``W_value``, ``out_proj``, ``head_dim``) on input
    x (b, num_tokens, d_in)."""

    def terms(linear):  # Σ|x_i w_i| + |bias| of a projection, (b, num_tokens, d_out)
        bias = 0.0 if linear.bias is None else linear.bias.abs()
        return x.abs() @ linear.weight.abs().T + bias

    with torch.no_grad():
        d_in, num_tokens, head_dim = x.shape[-1], x.shape[-2], module.head_dim
        q, k, v = (terms(getattr(module, n)) for n in ("W_query", "W_key", "W_value"))
        projections = summation_error(d_in, max(q.max(), k.max(), v.max()))
        q_heads = q.unflatten(-1, (-1, head_dim))  # ([b,] num_tokens, num_heads, head_dim)
        k_heads = k.unflatten(-1, (-1, head_dim))  # ([b,] num_tokens, num_kv_heads, head_dim)
        score_terms = torch.einsum("...thd,...sgd->...hgts", q_heads, k_heads).max()  # Σ|q_i k_i|, every pair of heads
        scores = summation_error([d_in, head_dim], score_terms / head_dim**0.5)
        v = float(v.max())
        attn_weights = 2 * scores
        context = attn_weights * v + summation_error([d_in, num_tokens], v)
        out = module.out_proj
        context_scale = float(out.weight.abs().sum(dim=1).max())  # Σ_i |w_i| of one output feature
        output = context * context_scale + summation_error(out.in_features, v * context_scale + out.bias.abs().max())
    return AttentionBounds(float(projections), float(attn_weights), float(context), float(output))


@dataclass(frozen=True)
class RoundingBounds:
    """How far two summation orders can move what a step computes for the last token of ``ids``.

    Shapes: logits (V,); rows[layer] (num_heads, 1); keys[layer] and values[layer] (num_heads, T, head_dim).
    """

    logits: torch.Tensor
    rows: list[torch.Tensor]
    keys: list[torch.Tensor]
    values: list[torch.Tensor]


def rounding_bounds(model, ids: list[int]) -> RoundingBounds:
    """The summation bound at the scales of one uncached pass over ``ids``.

    The pass records the terms' scales: the logits' ``|h| @ |W_out|`` (h after
    the final LayerNorm), each layer's keys' and values' ``|x| @ |W|``, and its
    scores' ``|q| · |k| / √head_dim``. A softmax moves a weight by at most twice
    the largest change of its row's scores. The eps is the model's dtype's.
    """
    return prefix_bounds(model, _scales(model, ids), len(ids))


def prefix_rounding_bounds(model, ids: list[int], lengths) -> list[RoundingBounds]:
    """``rounding_bounds(model, ids[:n])`` for each n in ``lengths``, from one pass over ``ids``: the model is
    causal, so position t's scales do not depend on the tokens after it (the same terms, summed in a product of
    more rows: equal up to rounding, far below the bound itself)."""
    scales = _scales(model, ids)
    return [prefix_bounds(model, scales, n) for n in lengths]


def _scales(model, ids: list[int]) -> dict:
    """One uncached pass over ``ids`` with hooks: per position, each projection's ``|x| @ |W|`` and ``|output|``,
    and ``|h|`` after the final LayerNorm. Shapes: (T, d) each."""
    seen = {}

    def record(key):
        def hook(module, inputs, output):
            seen[key] = (inputs[0][0].abs() @ module.weight.abs().T, output[0].abs())  # (T, d) each

        return hook

    hooks = [model.final_norm.register_forward_hook(lambda _m, _i, out: seen.update(h=out[0].abs()))]
    for layer, block in enumerate(model.trf_blocks):
        hooks += [
            getattr(block.att, n).register_forward_hook(record((layer, n))) for n in ("W_query", "W_key", "W_value")
        ]
    try:
        with torch.no_grad():
            step_without_cache(model, torch.tensor([ids]))
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def prefix_bounds(model, seen: dict, num_tokens: int) -> RoundingBounds:
    """The bounds for the last token of the first ``num_tokens`` positions of a pass's scales (``_scales``)."""
    cfg, dtype = model.cfg, model.out_head.weight.dtype
    head_dim, d = cfg.emb_dim // cfg.n_heads, cfg.emb_dim

    def heads(t: torch.Tensor) -> torch.Tensor:  # (T, d) → (num_heads, num_tokens, head_dim)
        return t[:num_tokens].reshape(num_tokens, cfg.n_heads, head_dim).transpose(0, 1)

    path = []  # every sum before the layer's attention input
    rows, keys, values = [], [], []
    for layer in range(cfg.n_layers):
        projection = [*path, d, d, d]  # norm1's mean and variance, then W_key or W_value
        keys.append(heads(summation_error(projection, seen[layer, "W_key"][0], dtype)))
        values.append(heads(summation_error(projection, seen[layer, "W_value"][0], dtype)))
        q = heads(seen[layer, "W_query"][1])[:, -1:]  # (num_heads, 1, head_dim)
        score_scale = (q * heads(seen[layer, "W_key"][1])).sum(-1) / head_dim**0.5  # (num_heads, T)
        scores = summation_error([*projection, head_dim], score_scale.amax(-1, keepdim=True), dtype)
        rows.append(2 * scores)  # (num_heads, 1)
        path += gpt_block_inner_sizes(d, cfg.n_heads, num_tokens)
    h = seen["h"][num_tokens - 1]  # (d,)
    logits = summation_error(gpt_logits_inner_sizes(cfg, num_tokens), h @ model.out_head.weight.abs().T, dtype)
    return RoundingBounds(logits, rows, keys, values)
