"""What ``compute`` hands the pages: frozen dataclasses of numpy arrays, one per view.

Results shared between sessions have their arrays made read-only (``memory.read_only``).
Shapes use the book's names: T = num_tokens, h = num_heads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np


def from_tensors(cls, *sources, **given):
    """A ``cls`` (a dataclass here) whose fields are ``given`` or else read from the first source that has them,
    each tensor as a numpy array (anything with ``.numpy()``); other values (None, numbers) as they are."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in given:
            values[field.name] = given[field.name]
            continue
        value = getattr(next(s for s in sources if hasattr(s, field.name)), field.name)
        values[field.name] = value.numpy() if hasattr(value, "numpy") else value
    return cls(**values)


@dataclass(frozen=True)
class Prepared:
    """The sentence as the pages see it: tokens and their embeddings.

    ``inputs`` is (num_tokens, d_in). ``truncated_from`` is the token count
    before truncation to ``context_length``, or None.
    """

    pieces: tuple[str, ...]
    ids: tuple[int, ...]
    inputs: np.ndarray
    tokenizer: str
    truncated_from: int | None


@dataclass(frozen=True)
class TraceArrays:
    """``attention.Trace``'s tensors as numpy arrays, with the same names and shapes (None where absent)."""

    inputs: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    attn_scores: np.ndarray
    scaled_scores: np.ndarray
    mask: np.ndarray | None
    masked_scores: np.ndarray
    attn_weights: np.ndarray
    dropout_mask: np.ndarray | None
    dropped_weights: np.ndarray
    head_context: np.ndarray
    context: np.ndarray
    output: np.ndarray

    def first_head(self) -> TraceArrays:
        """The first batch item's first head: (b, h, T, ·) arrays become (T, ·), (b, T, ·) ones (T, ·)."""
        picked = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if value is not None and value.ndim >= 3:
                value = value[0, 0] if value.ndim == 4 else value[0]
            picked[field.name] = value
        return TraceArrays(**picked)


@dataclass(frozen=True)
class SimplifiedView:
    """Section 3.3: (T, T) ``attn_scores``/``attn_weights``, (T, d_in) ``inputs``/``context_vecs``;
    one query's normalizations and overflow demo (T,), and its ``contributions`` (T, d_in)."""

    inputs: np.ndarray
    attn_scores: np.ndarray
    attn_weights: np.ndarray
    context_vecs: np.ndarray
    by_sum: np.ndarray
    naive_softmax: np.ndarray
    torch_softmax: np.ndarray
    naive_vs_torch_max_difference: float
    overflow_scores: np.ndarray
    overflow_naive: np.ndarray
    overflow_torch: np.ndarray
    contributions: np.ndarray
    loop_max_difference: float | None  # None above 64 tokens, where the loops are skipped


@dataclass(frozen=True)
class QkvView:
    """Section 3.4: the (d_in, d_out) weights, one head's ``steps`` (T, ·), and v1 = v2 (T, d_out)."""

    W_query: np.ndarray
    W_key: np.ndarray
    W_value: np.ndarray
    steps: TraceArrays
    v1_output: np.ndarray
    v2_output: np.ndarray
    v1_v2_max_difference: float


@dataclass(frozen=True)
class ScalingView:
    """The scaling lab (``attention.ScalingLab`` as numpy): every field (len(d_ks),), ``example_*`` (num_keys,)."""

    d_ks: np.ndarray
    unscaled_entropy: np.ndarray
    scaled_entropy: np.ndarray
    unscaled_max_weight: np.ndarray
    scaled_max_weight: np.ndarray
    unscaled_grad_norm: np.ndarray
    scaled_grad_norm: np.ndarray
    example_unscaled: np.ndarray
    example_scaled: np.ndarray


@dataclass(frozen=True)
class MaskView:
    """Section 3.5.1: ``CausalAttention``'s eval-mode trace and the masking comparison, (T, T) each.

    ``mask`` is True above the diagonal (the module's buffer); ``mask_simple`` is the book's
    ``torch.tril(torch.ones(T, T))``, 1 where a query may look; ``masked_simple`` the unmasked
    weights times it; ``masked_scores`` the unscaled scores with −∞ where masked, as the book's
    ``attn_scores.masked_fill(mask.bool(), -torch.inf)``."""

    pieces: tuple[str, ...]
    truncated_from: int | None
    steps: TraceArrays
    mask_buffer_shape: tuple[int, int]
    unmasked_weights: np.ndarray
    mask: np.ndarray
    mask_simple: np.ndarray
    masked_simple: np.ndarray
    masked_scores: np.ndarray
    weights_neg_inf: np.ndarray
    weights_renormalized: np.ndarray
    max_abs_difference: float


@dataclass(frozen=True)
class DropoutView:
    """Section 3.5.2: one draw on the causal weights, (T, T) each, and the average of many draws.

    ``num_samples`` and ``max_abs_error`` (len(counts),) trace the average's convergence.
    """

    pieces: tuple[str, ...]
    mask: np.ndarray
    active: bool
    scale: float
    attn_weights: np.ndarray
    keep: np.ndarray
    dropped_weights: np.ndarray
    row_sums: np.ndarray
    max_samples: int
    mean_weights: np.ndarray
    num_samples: np.ndarray
    max_abs_error: np.ndarray
    ones_demo: np.ndarray  # (6, 6): the book's Dropout(0.5) on torch.ones


@dataclass(frozen=True)
class BatchView:
    """Section 3.5.3: ``inputs`` (2, T, d_in); ``mask`` (T, T); ``weights`` (2, T, T), after
    dropout when it is active; ``output`` (2, T, d_out); per item ``pieces``, ``lengths``,
    ``truncated_from`` and ``unpadded_max_difference`` (nan while dropout is active)."""

    pieces: tuple[tuple[str, ...], ...]
    lengths: tuple[int, int]
    truncated_from: tuple[int | None, int | None]
    batch_shape: tuple[int, int, int]
    mask_buffer_shape: tuple[int, int]
    inputs: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    dropout_active: bool
    output: np.ndarray
    unpadded_max_difference: tuple[float, float]
    scaled_scores: np.ndarray  # (2, T, T), unmasked: the cell panel's softmax rows (issue 25)
    attn_weights: np.ndarray  # (2, T, T), before dropout
    keep: np.ndarray  # (2, T, T), True = kept by the dropout draw (all True while dropout is off)
    values: np.ndarray  # (2, T, d_out)


@dataclass(frozen=True)
class ShapeRow:
    """One source line of a method and the shape of the tensor it made, in a real run."""

    line: str  # the code, without its comment
    names: str  # the line's shape comment, in the book's names: "(b, num_tokens, d_out)"
    shape: tuple[int, ...]


@dataclass(frozen=True)
class MultiheadView:
    """Section 3.6. ``mask`` (T, T); ``*_weights`` (h, T, T), after dropout when it is active;
    ``wrapper_head_context`` (h, T, d_out); ``wrapper_output`` (T, h * d_out); ``efficient_context``
    (T, d_out), the heads merged before ``out_proj``; ``efficient_output`` (T, d_out);
    ``shape_rows`` the efficient module's lines with their live shapes (b = 1). For the cell panel:
    ``*_scores`` (h, T, T) scaled, −∞ where masked; ``*_keep`` (h, T, T) the dropout draw or None;
    ``*_values`` (h, T, head_dim); ``out_weight`` (d_out, d_out), ``out_bias`` (d_out,)."""

    pieces: tuple[str, ...]
    truncated_from: int | None
    mask: np.ndarray
    dropout_active: bool
    wrapper_weights: np.ndarray
    wrapper_head_context: np.ndarray
    wrapper_output: np.ndarray
    efficient_weights: np.ndarray
    efficient_context: np.ndarray
    efficient_output: np.ndarray
    shape_rows: tuple[ShapeRow, ...]
    shared_d_out: int
    wrapper_scores: np.ndarray
    wrapper_keep: np.ndarray | None
    wrapper_values: np.ndarray
    efficient_scores: np.ndarray
    efficient_keep: np.ndarray | None
    efficient_values: np.ndarray
    out_weight: np.ndarray
    out_bias: np.ndarray
    wrapper_vs_efficient_max_difference: float | None  # None when the fused module would be too large
    agreement_outputs: tuple[np.ndarray, np.ndarray] | None = None  # (wrapper, fused module), (T, h * d_out) each


@dataclass(frozen=True)
class HeadsProductView:
    """Section 3.6.2's check (``attention.HeadsProduct``) as numpy: ``a`` (b, h, T, head_dim); ``batched`` and
    ``per_head`` (b, h, T, T)."""

    a: np.ndarray
    batched: np.ndarray
    per_head: np.ndarray
    max_difference: float


@dataclass(frozen=True)
class WhyView:
    """Sections 3.1–3.2: ``encoder_states`` (T, hidden_size), ``bahdanau_weights`` (steps, T),
    each token's ``*_share``/``*_influence`` (T,), and the (T, T) self-attention contrast."""

    encoder_states: np.ndarray
    final_state: np.ndarray
    bahdanau_weights: np.ndarray
    final_state_share: np.ndarray
    attention_context_share: np.ndarray
    final_state_influence: np.ndarray
    attention_context_influence: np.ndarray
    dot_product_weights: np.ndarray
    additive_weights: np.ndarray
    additive_num_parameters: int


@dataclass(frozen=True)
class SpeedView:
    """Every implementation's median time and peak memory against T: ``num_tokens`` and
    ``one_weights_mib`` (len(T),); ``time_ms`` and ``peak_memory_mib`` name → (len(T),)."""

    implementations: tuple[str, ...]
    num_tokens: np.ndarray
    time_ms: Mapping[str, np.ndarray]
    peak_memory_mib: Mapping[str, np.ndarray]
    time_exponent: Mapping[str, float]
    memory_exponent: Mapping[str, float]
    max_abs_difference: Mapping[str, float]
    one_weights_mib: np.ndarray
    sizes: Mapping[str, int]  # b, d_model, num_heads, repeats
    device: str
    rounds: tuple[int, ...] = ()  # timing rounds run at each T; fewer than repeats when the budget ran out
    skipped_tokens: tuple[int, ...] = ()  # the T not measured because they would not fit in the budget


@dataclass(frozen=True)
class ReversalView:
    """``weights`` (2, T, T): untrained, then trained, row i = output step i; ``right`` (T,) bools."""

    weights: np.ndarray
    right: np.ndarray
    mean_max_weight: float
    untrained_mean_max_weight: float
    on_anti_diagonal: float
