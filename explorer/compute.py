"""The cached calls pages make into the ``attention`` package.

Each function here turns validated ``Settings`` into the numbers one page
draws, by calling the package and converting its tensors to numpy: a frozen
dataclass from ``results``. No attention math happens here: it selects, slices
and converts. How each result is cached is declared where it is produced
(``caching`` explains the kinds). Moving between pages or steps recomputes
nothing that is unchanged.

Before a view is computed, ``budget`` estimates its bytes from the settings: a view too large for
the server computes only its first tokens, with a notice that says which setting to lower, or is
refused. A heavy view waits for a place among ``budget.HEAVY_SLOTS`` computations, with a notice.
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import streamlit as st

import attention

from . import budget, first_view, weights
from .caching import CACHE_ENTRIES, CACHE_TTL_S, VIEW_ENTRIES, shared_view
from .inputs import module_for, prepared, trace_arrays
from .lazy import torch
from .results import (
    BatchView,
    DropoutView,
    MaskView,
    MultiheadView,
    QkvView,
    ScalingView,
    SimplifiedView,
    TraceArrays,
    WhyView,
)
from .settings import Settings
from .shapes import line_shapes
from .turns import budgeted


def _inputs_tensor(settings: Settings) -> torch.Tensor:
    return torch.tensor(prepared(settings).inputs)  # (num_tokens, d_in), a copy of a shared read-only array


@budgeted("trace")
def module_trace(settings: Settings, name: str, module_seed: int | None = None) -> TraceArrays:
    """Every intermediate of one module on the sentence, batch size 1, with the settings' dropout.

    The module is built after ``torch.manual_seed(module_seed)`` (default: the settings' seed);
    dropout draws use the settings' seed."""
    trace = attention.trace(
        module_for(name, settings, module_seed),
        _inputs_tensor(settings),
        training=settings.training,
        seed=settings.seed,
    )
    return trace_arrays(trace)


@budgeted("simplified")
def simplified_view(settings: Settings, query: int) -> SimplifiedView:
    """Section 3.3 on the sentence: scores, weights, context vectors, and one query's details."""
    inputs = _inputs_tensor(settings)  # (num_tokens, d_in)
    result = attention.simplified_attention(inputs)
    row = result.attn_scores[query]  # (num_tokens,)
    normalized = attention.compare_normalizations(row)
    overflow = attention.overflow_demo(row)
    loop = attention.attention_loop(inputs) if inputs.shape[0] <= 64 else None
    return SimplifiedView(
        inputs=inputs.numpy(),
        attn_scores=result.attn_scores.numpy(),
        attn_weights=result.attn_weights.numpy(),
        context_vecs=result.context_vecs.numpy(),
        by_sum=normalized.by_sum.numpy(),
        naive_softmax=normalized.naive_softmax.numpy(),
        torch_softmax=normalized.torch_softmax.numpy(),
        naive_vs_torch_max_difference=float((normalized.naive_softmax - normalized.torch_softmax).abs().max()),
        overflow_scores=overflow.attn_scores.numpy(),
        overflow_naive=overflow.naive_softmax.numpy(),
        overflow_torch=overflow.torch_softmax.numpy(),
        contributions=attention.context_contributions(inputs, result.attn_weights, query).numpy(),
        loop_max_difference=None if loop is None else float((loop.context_vecs - result.context_vecs).abs().max()),
    )


@budgeted("qkv")
def qkv_view(settings: Settings, v2_seed: int | None = None) -> QkvView:
    """Section 3.4 on the sentence: ``SelfAttention_v1``'s weights and every step, and v1 = v2.

    ``steps`` holds the trace's arrays for the one sentence and one head: (num_tokens, ·).
    ``SelfAttention_v2`` is built after ``torch.manual_seed(v2_seed)`` (default: the settings'
    seed; the book uses 789), and a v1 given its weights.
    """
    inputs = _inputs_tensor(settings)  # (num_tokens, d_in)
    sa_v1 = module_for("SelfAttention_v1", settings)
    steps = trace_arrays(attention.trace(sa_v1, inputs)).first_head()
    sa_v2 = module_for("SelfAttention_v2", settings, v2_seed)
    copy = attention.build(attention.SelfAttention_v1, settings.seed, settings.effective_d_in, settings.d_out)
    attention.load_v2_weights_into_v1(copy, sa_v2)
    with torch.no_grad():
        v1_out = copy(inputs)  # (num_tokens, d_out)
        v2_out = sa_v2(inputs)  # (num_tokens, d_out)
    return QkvView(
        W_query=sa_v1.W_query.detach().numpy().copy(),
        W_key=sa_v1.W_key.detach().numpy().copy(),
        W_value=sa_v1.W_value.detach().numpy().copy(),
        steps=steps,
        v1_output=v1_out.numpy(),
        v2_output=v2_out.numpy(),
        v1_v2_max_difference=float((v1_out - v2_out).abs().max()),
    )


@st.cache_data(max_entries=CACHE_ENTRIES, ttl=CACHE_TTL_S, show_spinner=False)
def scaling_view(d_ks: tuple[int, ...], num_keys: int, temperature: float, seed: int) -> ScalingView:
    """The scaling lab: softmax saturation against d_k, with and without 1/sqrt(d_k)."""
    lab = attention.scaling_lab(d_ks=d_ks, num_keys=num_keys, temperature=temperature, seed=seed)
    return ScalingView(**{field.name: getattr(lab, field.name).numpy() for field in fields(ScalingView)})


@budgeted("mask")
def mask_view(settings: Settings, module_seed: int | None = None) -> MaskView:
    """Section 3.5.1 on the sentence: ``CausalAttention``'s scores masked both ways.

    The module is built after ``torch.manual_seed(module_seed)`` (default: the settings'
    seed); with 789 its ``W_query`` and ``W_key`` are those of the book's ``SelfAttention_v2``
    in this section. The trace runs in eval mode, so the context vectors are the masked
    weights times the values; dropout has its own page.
    """
    steps = module_trace(replace(settings, training=False), "CausalAttention", module_seed)
    scaled_scores = torch.tensor(steps.scaled_scores[0, 0])  # (num_tokens, num_tokens), a copy of a read-only array
    comparison = attention.compare_masking(scaled_scores)
    future = comparison.mask.numpy()  # (num_tokens, num_tokens), True = masked
    unmasked = comparison.unmasked_weights.numpy()  # (num_tokens, num_tokens)
    return MaskView(
        pieces=prepared(settings).pieces,
        truncated_from=prepared(settings).truncated_from,
        steps=steps,
        mask_buffer_shape=tuple(module_for("CausalAttention", settings, module_seed).mask.shape),
        unmasked_weights=unmasked,
        mask=future,
        mask_simple=(~future).astype(unmasked.dtype),
        masked_simple=np.where(future, 0.0, unmasked).astype(unmasked.dtype),
        masked_scores=np.where(future, -np.inf, steps.attn_scores[0, 0]).astype(unmasked.dtype),
        weights_neg_inf=comparison.weights_neg_inf.numpy(),
        weights_renormalized=comparison.weights_renormalized.numpy(),
        max_abs_difference=comparison.max_abs_difference,
    )


def dropout_sample_limit(num_tokens: int) -> int:
    """The most draws one average may take: all of them up to 64 tokens, fewer for longer inputs."""
    most = attention.dropout.MAX_DROPOUT_SAMPLES
    return max(1, min(most, most * 64 * 64 // num_tokens**2))  # at most most * 64 * 64 weights drawn per average


@budgeted("dropout")
def dropout_view(settings: Settings, num_samples: int, module_seed: int | None = None) -> DropoutView:
    """Section 3.5.2: one dropout draw on the causal weights, and the average of many draws.

    The causal weights come from a ``CausalAttention`` built after ``torch.manual_seed(module_seed)``
    (default: the settings' seed; the book's weights are SelfAttention_v2's, seed 789); the draws
    use the settings' seed, as ``torch.manual_seed(seed)`` before ``Dropout``. In eval mode nothing
    is dropped, so the average uses p = 0 too. ``num_samples`` is capped at
    ``dropout_sample_limit`` (returned as ``max_samples``).
    """
    steps = module_trace(replace(settings, training=False), "CausalAttention", module_seed)
    weights = torch.tensor(steps.attn_weights[0, 0])  # (num_tokens, num_tokens), a copy of a read-only array
    draw = attention.apply_dropout(weights, settings.dropout, seed=settings.seed, training=settings.training)
    active = settings.training and settings.dropout > 0
    max_samples = dropout_sample_limit(weights.shape[0])
    num_samples = min(num_samples, max_samples)
    average = attention.dropout_average(
        weights, settings.dropout if active else 0.0, num_samples=num_samples, seed=settings.seed
    )
    return DropoutView(
        pieces=prepared(settings).pieces,
        mask=steps.mask,
        active=active,
        scale=1 / (1 - settings.dropout) if active else 1.0,
        attn_weights=weights.numpy(),
        keep=draw.keep.numpy(),
        dropped_weights=draw.dropped_weights.numpy(),
        row_sums=draw.row_sums.numpy(),
        max_samples=max_samples,
        mean_weights=average.mean_weights.numpy(),
        num_samples=average.num_samples.numpy(),
        max_abs_error=average.max_abs_error.numpy(),
        ones_demo=attention.apply_dropout(torch.ones(6, 6), 0.5, seed=123).dropped_weights.numpy(),
    )


PAD_TOKEN = "<|endoftext|>"  # noqa: S105 (a token, not a password)


@budgeted("batch")
def batch_view(settings: Settings, second_text: str | None) -> BatchView:
    """Section 3.5.3: two sentences as one batch (b=2) through ``CausalAttention``.

    ``second_text=None`` (or blank) repeats the first sentence, as the book does. A
    shorter sentence is padded at the end with ``<|endoftext|>`` (GPT-2's pad
    token); ``unpadded_max_difference`` measures that padding at the end does
    not change the real tokens' outputs, because the causal mask hides it
    (nan while dropout is active, since the dropout draws differ).

    Shapes: ``inputs`` (2, T, d_in); ``mask`` (T, T); ``weights`` (2, T, T),
    after dropout when it is active; ``output`` (2, T, d_out).
    """
    first = prepared(settings)
    if second_text is None or not second_text.strip():
        second = first
    else:
        second = prepared(replace(settings, source="text", text=second_text))
    lengths = (len(first.pieces), len(second.pieces))
    num_tokens = max(lengths)
    pad_vector = attention.token_vector(attention.tokens.ENDOFTEXT_ID, settings.effective_d_in, settings.seed)
    rows, pieces = [], []
    for item in (first, second):
        item_inputs = torch.tensor(item.inputs)  # (T_item, d_in), a copy of a shared read-only array
        padding = num_tokens - item_inputs.shape[0]
        if settings.weights != weights.RANDOM and padding:  # the model reads the pad tokens too
            padded_ids = item.ids + (attention.tokens.ENDOFTEXT_ID,) * padding
            item_inputs = weights.layer_inputs(settings, padded_ids)[item_inputs.shape[0] :]  # (padding, d_in)
            item_inputs = torch.cat([torch.from_numpy(item.inputs), item_inputs])  # (num_tokens, d_in)
            padding = 0
        rows.append(torch.cat([item_inputs, pad_vector.expand(padding, -1)]))  # (num_tokens, d_in)
        pieces.append(tuple(item.pieces) + (PAD_TOKEN,) * padding)
    batch = torch.stack(rows)  # (2, num_tokens, d_in)
    ca = module_for("CausalAttention", settings)
    trace = attention.trace(ca, batch, training=settings.training, seed=settings.seed)
    differences = []
    for item, length in enumerate(lengths):
        alone = attention.trace(ca, batch[item, :length], training=False).output[0]  # (length, d_out)
        batched = trace.output[item, :length]  # (length, d_out)
        differences.append(float((alone - batched).abs().max()) if trace.dropout_mask is None else float("nan"))
    return BatchView(
        pieces=tuple(pieces),
        lengths=lengths,
        truncated_from=(first.truncated_from, second.truncated_from),
        batch_shape=tuple(batch.shape),
        mask_buffer_shape=tuple(ca.mask.shape),
        inputs=batch.numpy(),
        mask=trace.mask.numpy(),
        weights=trace.dropped_weights[:, 0].numpy(),
        dropout_active=trace.dropout_mask is not None,
        output=trace.output.numpy(),
        unpadded_max_difference=tuple(differences),
    )


SHARED_D_OUT_LIMIT = budget.SHARED_D_OUT_LIMIT  # the largest d_out a MultiHeadAttention may have here


@budgeted("multihead")
def multihead_view(settings: Settings) -> MultiheadView:
    """Section 3.6: the wrapper of heads, the efficient module, and their agreement on shared weights.

    The wrapper's heads each have ``d_out`` outputs (``num_heads * d_out`` in
    all, as in the book); the efficient module splits ``d_out`` into
    ``num_heads`` heads of ``head_dim``. The agreement check builds a
    ``MultiHeadAttention`` of ``num_heads * d_out`` outputs from the wrapper's
    weights, in eval mode; it is None when that exceeds ``SHARED_D_OUT_LIMIT``.

    Shapes: ``mask`` (T, T); ``*_weights`` (num_heads, T, T), after dropout when
    it is active; ``wrapper_head_context`` (num_heads, T, d_out);
    ``wrapper_output`` (T, num_heads * d_out); ``efficient_context`` (T, d_out), the
    heads merged, before ``out_proj``; ``efficient_output`` (T, d_out);
    ``shape_rows`` each line of ``MultiHeadAttention.steps`` with the shape it made here.
    """
    inputs = _inputs_tensor(settings).unsqueeze(0)  # (1, num_tokens, d_in)
    wrapper = module_for("MultiHeadAttentionWrapper", settings)
    efficient = module_for("MultiHeadAttention", settings)
    wrapper_trace = attention.trace(wrapper, inputs, training=settings.training, seed=settings.seed)
    efficient_trace = attention.trace(efficient, inputs, training=settings.training, seed=settings.seed)
    shared_d_out = wrapper_trace.output.shape[-1]  # num_heads * the wrapper's d_out
    agreement = outputs = None
    if shared_d_out <= SHARED_D_OUT_LIMIT:
        shared = attention.multihead_from_wrapper(wrapper).eval()
        with torch.no_grad():
            reference = wrapper(inputs) if settings.training else wrapper_trace.output  # (1, num_tokens, h * d_out)
            fused = shared(inputs)  # (1, num_tokens, h * d_out)
            agreement = float((fused - reference).abs().max())
            outputs = (reference[0].numpy(), fused[0].numpy())
    return MultiheadView(
        pieces=prepared(settings).pieces,
        truncated_from=prepared(settings).truncated_from,
        mask=efficient_trace.mask.numpy(),
        dropout_active=efficient_trace.dropout_mask is not None,
        wrapper_weights=wrapper_trace.dropped_weights[0].numpy(),
        wrapper_head_context=wrapper_trace.head_context[0].numpy(),
        wrapper_output=wrapper_trace.output[0].numpy(),
        efficient_weights=efficient_trace.dropped_weights[0].numpy(),
        efficient_context=efficient_trace.context[0].numpy(),
        efficient_output=efficient_trace.output[0].numpy(),
        shape_rows=line_shapes(attention.MultiHeadAttention.steps, efficient, inputs),
        shared_d_out=shared_d_out,
        wrapper_vs_efficient_max_difference=agreement,
        agreement_outputs=outputs,
    )


WHY_HIDDEN_SIZE = 16  # the GRU's hidden state that Why attention opens with


@shared_view(max_entries=VIEW_ENTRIES)
def why_view(settings: Settings, hidden_size: int) -> WhyView:
    """Sections 3.1–3.2 on the sentence (``computed_why_view``). The book's example at the first page's
    defaults is stored (``first_view``): a new server draws it before it has imported torch."""
    inputs = prepared(settings).inputs  # (num_tokens, d_in)
    stored = first_view.why_view(inputs, settings.seed, hidden_size)
    return stored if stored is not None else computed_why_view(inputs, settings.seed, hidden_size)


def computed_why_view(inputs: np.ndarray, seed: int, hidden_size: int) -> WhyView:
    """A seeded GRU encoder–decoder with Bahdanau attention on ``inputs`` (num_tokens, d_in), the bottleneck
    measured by autograd, and the same sequence attending to itself."""
    inputs = torch.tensor(inputs)  # a copy of a shared read-only array
    run = attention.encoder_decoder(inputs, hidden_size=hidden_size, seed=seed)
    contrast = attention.self_attention_contrast(inputs, seed=seed)
    return WhyView(
        encoder_states=run.encoder_states.numpy(),
        final_state=run.final_state.numpy(),
        bahdanau_weights=run.bahdanau_weights.numpy(),
        final_state_share=run.final_state_share.numpy(),
        attention_context_share=run.attention_context_share.numpy(),
        final_state_influence=run.final_state_influence.numpy(),
        attention_context_influence=run.attention_context_influence.numpy(),
        dot_product_weights=contrast.dot_product_weights.numpy(),
        additive_weights=contrast.additive_weights.numpy(),
        additive_num_parameters=contrast.additive_num_parameters,
    )
