"""Stage 4: self-attention with trainable weights (book section 3.4).

What is new: the inputs are first projected into *queries*, *keys* and
*values* by three weight matrices, ``W_query``, ``W_key`` and ``W_value``,
and the scores are divided by sqrt(d_k) before the softmax. Without that
scaling, large dot products push the softmax towards a one-hot row whose
gradient is almost zero (``scaling_lab`` measures this).

``attend`` is the scaled dot-product step that every later module shares.
The causal mask (stage 5) and dropout (stage 6) are its optional arguments;
passing a ``record`` dict makes it keep each named intermediate for ``trace``.
Hugging Face and nanoGPT call the same computation "scaled dot-product
attention".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


def check_size(name: str, value: int, upper: int = 4096) -> None:
    """Raise a ``ValueError`` unless ``value`` is a whole number in [1, upper]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if not 1 <= value <= upper:
        raise ValueError(f"{name} must be between 1 and {upper}, got {value}.")


def check_batch(x: torch.Tensor, d_in: int, *, batched: bool) -> None:
    """Check the embedding matrix a module receives, with a message a learner understands."""
    expected = "(b, num_tokens, d_in)" if batched else "(num_tokens, d_in) or (b, num_tokens, d_in)"
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"The input must be a torch tensor of shape {expected}.")
    if x.dim() not in ((3,) if batched else (2, 3)):
        hint = " Wrap a single sentence as a batch with x.unsqueeze(0)." if batched and x.dim() == 2 else ""
        raise ValueError(f"The input must have shape {expected}, got {tuple(x.shape)}.{hint}")
    if x.numel() == 0:
        raise ValueError(f"The input is empty (shape {tuple(x.shape)}): there must be at least one token.")
    if not x.is_floating_point():
        raise ValueError(f"The input must hold floating-point embeddings, got {x.dtype}; use x.float().")
    if x.shape[-1] != d_in:
        raise ValueError(
            f"Each token's embedding must have d_in={d_in} numbers, but the input has "
            f"{x.shape[-1]} (shape {tuple(x.shape)})."
        )


def attend(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    *,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
    generator: torch.Generator | None = None,
    record: dict | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention, the step shared by every module from here on.

    ``mask`` (True = masked) hides future tokens (stage 5). In training mode
    with ``dropout_p > 0`` the weights are dropped and the survivors scaled by
    1/(1-p), drawing exactly what ``F.dropout`` would from ``generator`` (or
    the global generator when it is None) (stage 6).

    Speed: a trace keeps every step, so there each step gets a tensor of its
    own. Without a ``record`` no one else reads the steps, so they overwrite
    the (..., num_tokens, num_tokens) buffer that the first product made:
    ``out=`` says where each step writes. (Not while autograd records: the
    softmax's gradient needs its output kept.) At GPT-2 scale such a tensor
    is 384 MiB, and a new one costs more than the arithmetic: on a 2-core
    CPU, dividing the scores in place takes 25 ms, into a new tensor 127 ms,
    most of it the first touch of fresh memory pages. The forward pass takes
    0.6 of the time it took with a new tensor per step (see BENCHMARKS.md).
    The mask is *added*: -inf where masked, 0 elsewhere, which is the book's
    ``masked_fill`` with -inf (x + -inf = -inf, x + 0 = x) in one pass over
    the scores instead of a copy and a fill. Both paths compute the same
    numbers bit for bit, so ``trace(m, x).output`` equals ``m(x)`` exactly.
    Dropout costs nothing outside training.

    Shapes: queries, keys, values (..., num_tokens, head_dim); mask
    (num_tokens, num_tokens); returns the context vectors (..., num_tokens, head_dim).
    """
    attn_scores = queries @ keys.transpose(-2, -1)  # (..., num_tokens, num_tokens)
    in_place = record is None and not attn_scores.requires_grad
    out = attn_scores if in_place else None  # each step overwrites the scores, or makes a new tensor
    scaled_scores = torch.div(attn_scores, keys.shape[-1] ** 0.5, out=out)  # (..., num_tokens, num_tokens)
    masked_scores = scaled_scores
    if mask is not None:
        additive_mask = torch.zeros_like(mask, dtype=scaled_scores.dtype)  # (num_tokens, num_tokens)
        additive_mask.masked_fill_(mask, -torch.inf)  # -inf where masked, 0 elsewhere
        masked_scores = torch.add(scaled_scores, additive_mask, out=out)  # (..., num_tokens, num_tokens)
    attn_weights = torch.softmax(masked_scores, dim=-1, out=out)  # (..., num_tokens, num_tokens)
    keep_scaled = None
    dropped_weights = attn_weights
    if training and dropout_p > 0:
        keep = torch.empty_like(attn_weights).bernoulli_(1 - dropout_p, generator=generator)  # 1 = kept
        keep_scaled = keep.div_(1 - dropout_p)  # (..., num_tokens, num_tokens): 0 or 1/(1-p)
        dropped_weights = attn_weights * keep_scaled  # (..., num_tokens, num_tokens)
    context = dropped_weights @ values  # (..., num_tokens, head_dim)
    if record is not None:
        record.update(
            queries=queries,
            keys=keys,
            values=values,
            attn_scores=attn_scores,
            scaled_scores=scaled_scores,
            mask=mask,
            masked_scores=masked_scores,
            attn_weights=attn_weights,
            dropout_mask=None if keep_scaled is None else keep_scaled != 0,
            dropped_weights=dropped_weights,
            head_context=context,
        )
    return context


class SelfAttention_v1(nn.Module):  # noqa: N801 (the book's name)
    """Self-attention with three trainable matrices, applied as ``x @ W``.

    ``W_query``, ``W_key`` and ``W_value`` are ``nn.Parameter(torch.rand(d_in, d_out))``,
    exactly as in the book, so ``torch.manual_seed(123)`` before construction
    reproduces its printed context vectors.

    Shapes: x (num_tokens, d_in) or (b, num_tokens, d_in) → (..., num_tokens, d_out).
    """

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        check_size("d_in", d_in)
        check_size("d_out", d_out)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_steps(x)

    def forward_steps(self, x, *, training=False, generator=None, record=None):
        """The forward pass; ``trace`` calls it with a ``record`` to keep every step."""
        check_batch(x, self.d_in, batched=False)
        keys = x @ self.W_key  # (..., num_tokens, d_out)
        queries = x @ self.W_query  # (..., num_tokens, d_out)
        values = x @ self.W_value  # (..., num_tokens, d_out)
        return attend(queries, keys, values, record=record)  # (..., num_tokens, d_out)


class SelfAttention_v2(nn.Module):  # noqa: N801 (the book's name)
    """Self-attention with ``nn.Linear`` projections instead of raw matrices.

    What is new relative to v1: ``nn.Linear`` stores its weight transposed,
    as (d_out, d_in), initializes it with a better-scaled random range, and can
    add a bias (``qkv_bias``). ``load_v2_weights_into_v1`` shows that the two
    compute the same thing.

    Shapes: x (num_tokens, d_in) or (b, num_tokens, d_in) → (..., num_tokens, d_out).
    """

    def __init__(self, d_in: int, d_out: int, qkv_bias: bool = False):
        super().__init__()
        check_size("d_in", d_in)
        check_size("d_out", d_out)
        self.d_in, self.d_out = d_in, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_steps(x)

    def forward_steps(self, x, *, training=False, generator=None, record=None):
        """The forward pass; ``trace`` calls it with a ``record`` to keep every step."""
        check_batch(x, self.d_in, batched=False)
        keys = self.W_key(x)  # (..., num_tokens, d_out)
        queries = self.W_query(x)  # (..., num_tokens, d_out)
        values = self.W_value(x)  # (..., num_tokens, d_out)
        return attend(queries, keys, values, record=record)  # (..., num_tokens, d_out)


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
    a standard normal, as projections of random inputs do, so their dot
    products have a spread of about sqrt(d_k). ``*_entropy`` is the row's
    entropy in nats (log(num_keys) is uniform, 0 is one-hot);
    ``*_max_weight`` the largest weight; ``*_grad_norm`` the norm of the
    gradient of the weighted value sum with respect to the scores, measured by
    autograd. Scaling keeps all three flat; without it the gradient vanishes.

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
