"""Stage 4: self-attention with trainable weights (book section 3.4).

What is new: the inputs are first projected into *queries*, *keys* and
*values* by three weight matrices, ``W_query``, ``W_key`` and ``W_value``,
and the scores are divided by sqrt(d_k) before the softmax. Without that
scaling, large dot products push the softmax towards a one-hot row whose
gradient is almost zero (``scaling_lab`` measures this). d_k is
``keys.shape[-1]``, here d_out. Vaswani et al. (2017) named this "scaled
dot-product attention", as the book notes.

Each class's ``steps(x)`` is the book's ``forward``, in the book's names,
with an input check (``check_batch``) first; it returns what it computed as
``AttentionSteps`` instead of only the context vectors, and ``forward``
returns ``steps(x).output``. So ``trace`` and ``module(x)`` run one code
path. From stage 6 on, where the book writes ``attn_weights =
self.dropout(attn_weights)``, ``steps`` keeps both tensors:
``drop_with_mask`` gives the same dropped weights as ``dropped_weights``,
and which weights the draw kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .checks import check_batch, check_size, check_sizes


@dataclass(frozen=True)
class AttentionSteps:
    """What one forward pass computed, in the book's names.

    ``attn_scores`` is ``queries @ keys.T`` as the book leaves it: from the
    causal stage on, with -inf where the mask hides the future, and not yet
    scaled. ``attn_weights`` are the softmax weights, ``dropped_weights`` the
    same after dropout (the same tensor when dropout is off), and
    ``dropout_mask`` which weights that dropout kept (True = kept; None when
    nothing was dropped). ``context_vec`` is each token's weighted sum of
    values (the heads concatenated, for multi-head attention) and ``output``
    what ``forward`` returns.

    Shapes: queries, keys, values (..., num_tokens, head_dim); attn_scores,
    attn_weights, dropped_weights (..., num_tokens, num_tokens); context_vec,
    output (..., num_tokens, d_out). For ``MultiHeadAttention`` "..." is
    (b, num_heads); context_vec is (b, num_tokens, d_out), before ``out_proj``.
    """

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    attn_scores: torch.Tensor
    attn_weights: torch.Tensor
    dropped_weights: torch.Tensor
    dropout_mask: torch.Tensor | None
    context_vec: torch.Tensor
    output: torch.Tensor


class SelfAttention_v1(nn.Module):  # noqa: N801 (the book's name)
    """Self-attention with three trainable matrices, applied as ``x @ W``.

    ``W_query``, ``W_key`` and ``W_value`` are ``nn.Parameter(torch.rand(d_in, d_out))``,
    exactly as in the book, so ``torch.manual_seed(123)`` before construction
    reproduces its printed context vectors.

    Shapes: x (num_tokens, d_in) → (num_tokens, d_out), one sentence as in the book.
    """

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        check_sizes(d_in, d_out)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.steps(x).output

    def steps(self, x: torch.Tensor) -> AttentionSteps:
        check_batch(x, self.d_in, batched=False)
        keys = x @ self.W_key  # (num_tokens, d_out)
        queries = x @ self.W_query  # (num_tokens, d_out)
        values = x @ self.W_value  # (num_tokens, d_out)
        attn_scores = queries @ keys.T  # omega, (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (num_tokens, num_tokens)
        context_vec = attn_weights @ values  # (num_tokens, d_out)
        return AttentionSteps(
            queries=queries, keys=keys, values=values, attn_scores=attn_scores, context_vec=context_vec,
            attn_weights=attn_weights, dropped_weights=attn_weights, dropout_mask=None, output=context_vec,
        )  # fmt: skip


class SelfAttention_v2(nn.Module):  # noqa: N801 (the book's name)
    """Self-attention with ``nn.Linear`` projections instead of raw matrices.

    What is new relative to v1: ``nn.Linear`` stores its weight transposed,
    as (d_out, d_in), initializes it with a better-scaled random range, and can
    add a bias (``qkv_bias``). ``load_v2_weights_into_v1`` shows that the two
    compute the same thing.

    Shapes: x (num_tokens, d_in) → (num_tokens, d_out), one sentence as in the book.
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        check_sizes(d_in, d_out)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.steps(x).output

    def steps(self, x: torch.Tensor) -> AttentionSteps:
        check_batch(x, self.d_in, batched=False)
        keys = self.W_key(x)  # New: nn.Linear, (num_tokens, d_out)
        queries = self.W_query(x)  # New, (num_tokens, d_out)
        values = self.W_value(x)  # New, (num_tokens, d_out)
        attn_scores = queries @ keys.T  # (num_tokens, num_tokens)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (num_tokens, num_tokens)
        context_vec = attn_weights @ values  # (num_tokens, d_out)
        return AttentionSteps(
            queries=queries, keys=keys, values=values, attn_scores=attn_scores, context_vec=context_vec,
            attn_weights=attn_weights, dropped_weights=attn_weights, dropout_mask=None, output=context_vec,
        )  # fmt: skip


def load_v2_weights_into_v1(sa_v1: SelfAttention_v1, sa_v2: SelfAttention_v2) -> SelfAttention_v1:
    """Copy v2's weights into v1 so both give the same output (the book's exercise 3.1).

    ``nn.Linear`` computes ``x @ weight.T``, so v1 gets the transposed weights.
    v2 must have no bias, since v1 has none.
    """
    if sa_v2.W_query.bias is not None:
        raise ValueError("SelfAttention_v1 has no bias, so only a v2 built with qkv_bias=False can be copied into it.")
    if (sa_v1.d_in, sa_v1.d_out) != (sa_v2.d_in, sa_v2.d_out):
        raise ValueError(
            f"Both modules need the same sizes: v1 is d_in={sa_v1.d_in}, d_out={sa_v1.d_out}; "
            f"v2 is d_in={sa_v2.d_in}, d_out={sa_v2.d_out}."
        )
    with torch.no_grad():
        sa_v1.W_query.copy_(sa_v2.W_query.weight.T)  # (d_in, d_out)
        sa_v1.W_key.copy_(sa_v2.W_key.weight.T)  # (d_in, d_out)
        sa_v1.W_value.copy_(sa_v2.W_value.weight.T)  # (d_in, d_out)
    return sa_v1


@dataclass(frozen=True)
class ScalingLab:
    """How the softmax of one score row saturates as d_k grows, with and without scaling.

    For each ``d_k`` in ``d_ks``: the query and keys have d_k entries drawn from
    a standard normal (mean 0, variance 1), so their dot products have a
    spread of about sqrt(d_k). (The book's ``torch.rand`` weight matrices make
    every entry positive, and then the scores grow in proportion to d_k.) ``*_entropy`` is the row's
    entropy in nats (log(num_keys) is uniform, 0 is one-hot);
    ``*_max_weight`` the largest weight; ``*_grad_norm`` the norm of the
    gradient of the weighted value sum at the softmax's input (the scores after
    any scaling), measured by autograd. Scaling keeps all three flat; without
    it that gradient vanishes.

    Shapes: every field is (len(d_ks),); ``example_*`` are (num_keys,) rows at
    the largest d_k.
    """

    d_ks: torch.Tensor
    unscaled_entropy: torch.Tensor
    scaled_entropy: torch.Tensor
    unscaled_max_weight: torch.Tensor
    scaled_max_weight: torch.Tensor
    unscaled_grad_norm: torch.Tensor
    scaled_grad_norm: torch.Tensor
    example_unscaled: torch.Tensor
    example_scaled: torch.Tensor


def _softmax_stats(scores: torch.Tensor, values: torch.Tensor) -> tuple[float, float, float]:
    scores = scores.detach().requires_grad_(True)  # (num_samples, num_keys)
    weights = torch.softmax(scores, dim=-1)  # (num_samples, num_keys)
    (weights * values).sum().backward()
    entropy = -(weights * torch.log(weights.clamp_min(1e-30))).sum(dim=-1)  # (num_samples,)
    return (
        entropy.mean().item(),
        weights.max(dim=-1).values.mean().item(),
        scores.grad.norm(dim=-1).mean().item(),
    )


def scaling_lab(
    d_ks: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    num_keys: int = 8,
    temperature: float = 1.0,
    num_samples: int = 64,
    seed: int = 123,
) -> ScalingLab:
    """Measure softmax saturation against d_k, with and without the 1/sqrt(d_k) scaling.

    ``temperature`` divides the scores too (a larger temperature flattens the
    softmax). Results are averages over ``num_samples`` random rows.
    """
    if not d_ks:
        raise ValueError("Give at least one d_k.")
    for d_k in d_ks:
        check_size("d_k", d_k)
    check_size("num_keys", num_keys, upper=1024)
    check_size("num_samples", num_samples, upper=4096)
    if not (isinstance(temperature, int | float) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}.")
    generator = torch.Generator().manual_seed(seed)
    columns: dict[str, list[float]] = {key: [] for key in ("ue", "se", "um", "sm", "ug", "sg")}
    example_unscaled = example_scaled = torch.empty(0)
    for d_k in d_ks:
        queries = torch.randn(num_samples, 1, d_k, generator=generator)  # (num_samples, 1, d_k)
        keys = torch.randn(num_samples, num_keys, d_k, generator=generator)  # (num_samples, num_keys, d_k)
        values = torch.randn(num_samples, num_keys, generator=generator)  # (num_samples, num_keys)
        attn_scores = (queries @ keys.transpose(-2, -1)).squeeze(1) / temperature  # (num_samples, num_keys)
        scaled_scores = attn_scores / d_k**0.5  # (num_samples, num_keys)
        ue, um, ug = _softmax_stats(attn_scores, values)
        se, sm, sg = _softmax_stats(scaled_scores, values)
        for key, value in zip(("ue", "um", "ug", "se", "sm", "sg"), (ue, um, ug, se, sm, sg), strict=True):
            columns[key].append(value)
        example_unscaled = torch.softmax(attn_scores[0], dim=-1)  # (num_keys,)
        example_scaled = torch.softmax(scaled_scores[0], dim=-1)  # (num_keys,)
    as_tensor = torch.tensor
    return ScalingLab(
        d_ks=as_tensor(d_ks),
        unscaled_entropy=as_tensor(columns["ue"]),
        scaled_entropy=as_tensor(columns["se"]),
        unscaled_max_weight=as_tensor(columns["um"]),
        scaled_max_weight=as_tensor(columns["sm"]),
        unscaled_grad_norm=as_tensor(columns["ug"]),
        scaled_grad_norm=as_tensor(columns["sg"]),
        example_unscaled=example_unscaled,
        example_scaled=example_scaled,
    )
