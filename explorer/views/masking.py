"""Section 3.5's views: the causal mask two ways, dropout on the causal weights, and a batch of two
sentences through ``CausalAttention``; each from the run's prepared sentence, budgeted once (``run``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import attention
from explorer.models.inputs import layer_inputs, prepared
from explorer.models.modules import module_for
from explorer.results import BatchView, DropoutView, MaskView
from explorer.runtime.lazy import torch
from explorer.settings import RANDOM
from explorer.views.chapter import module_trace
from explorer.views.run import Run, budgeted, eval_mode


@budgeted("mask")
def mask_view(run: Run, module_seed: int | None = None) -> MaskView:
    """Section 3.5.1 on the sentence: ``CausalAttention``'s scores masked both ways.

    The module is built after ``torch.manual_seed(module_seed)`` (default: the settings'
    seed); with 789 its ``W_query`` and ``W_key`` are those of the book's ``SelfAttention_v2``
    in this section. The trace runs in eval mode, so the context vectors are the masked
    weights times the values; dropout has its own page.
    """
    settings = run.settings
    steps = module_trace(eval_mode(run), "CausalAttention", module_seed)
    scaled_scores = torch.tensor(steps.scaled_scores[0, 0])  # (num_tokens, num_tokens), a copy of a read-only array
    comparison = attention.compare_masking(scaled_scores)
    future = comparison.mask.numpy()  # (num_tokens, num_tokens), True = masked
    unmasked = comparison.unmasked_weights.numpy()  # (num_tokens, num_tokens)
    return MaskView(
        pieces=run.prepared.pieces,
        truncated_from=run.prepared.truncated_from,
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
def dropout_view(run: Run, num_samples: int, module_seed: int | None = None) -> DropoutView:
    """Section 3.5.2: one dropout draw on the causal weights, and the average of many draws.

    The causal weights come from a ``CausalAttention`` built after ``torch.manual_seed(module_seed)``
    (default: the settings' seed; the book's weights are SelfAttention_v2's, seed 789); the draws
    use the settings' seed, as ``torch.manual_seed(seed)`` before ``Dropout``. In eval mode nothing
    is dropped, so the average uses p = 0 too. ``num_samples`` is capped at
    ``dropout_sample_limit`` (returned as ``max_samples``).
    """
    settings = run.settings
    steps = module_trace(eval_mode(run), "CausalAttention", module_seed)
    weights = torch.tensor(steps.attn_weights[0, 0])  # (num_tokens, num_tokens), a copy of a read-only array
    draw = attention.apply_dropout(weights, settings.dropout, seed=settings.seed, training=settings.training)
    active = settings.training and settings.dropout > 0
    max_samples = dropout_sample_limit(weights.shape[0])
    num_samples = min(num_samples, max_samples)
    average = attention.dropout_average(
        weights, settings.dropout if active else 0.0, num_samples=num_samples, seed=settings.seed
    )
    return DropoutView(
        pieces=run.prepared.pieces,
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


PAD_TOKEN = "<|endoftext|>"  # noqa: S105 (a token, not a password): GPT-2 has no padding token; the book reuses this one


@budgeted("batch")
def batch_view(run: Run, second_text: str | None) -> BatchView:
    """Section 3.5.3: two sentences as one batch (b=2) through ``CausalAttention``.

    ``second_text=None`` (or blank) repeats the first sentence, as the book does. A
    shorter sentence is padded at the end with ``<|endoftext|>``, id 50256 (GPT-2
    has no padding token; the book's later chapters reuse this one).
    ``unpadded_max_difference`` measures that padding at the end does not change
    the real tokens' outputs, because the causal mask hides it (nan while
    dropout is active, since the dropout draws differ).

    Shapes: ``inputs`` (2, T, d_in); ``mask`` (T, T); ``weights`` (2, T, T),
    after dropout when it is active; ``output`` (2, T, d_out).
    """
    settings, first = run.settings, run.prepared
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
        if settings.weights != RANDOM and padding:  # the model reads the pad tokens too
            padded_ids = item.ids + (attention.tokens.ENDOFTEXT_ID,) * padding
            item_inputs = layer_inputs(settings, padded_ids)[item_inputs.shape[0] :]  # (padding, d_in)
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
    weights = trace.dropped_weights[:, 0].numpy()  # (2, num_tokens, num_tokens)
    return BatchView(
        pieces=tuple(pieces),
        lengths=lengths,
        truncated_from=(first.truncated_from, second.truncated_from),
        batch_shape=tuple(batch.shape),
        mask_buffer_shape=tuple(ca.mask.shape),
        inputs=batch.numpy(),
        mask=trace.mask.numpy(),
        weights=weights,
        dropout_active=trace.dropout_mask is not None,
        output=trace.output.numpy(),
        unpadded_max_difference=tuple(differences),
        scaled_scores=trace.scaled_scores[:, 0].numpy(),
        attn_weights=trace.attn_weights[:, 0].numpy(),
        keep=np.ones(weights.shape, bool) if trace.dropout_mask is None else trace.dropout_mask[:, 0].numpy(),
        values=trace.values[:, 0].numpy(),
    )
