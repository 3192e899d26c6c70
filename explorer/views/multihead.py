"""Section 3.6's view: the wrapper of heads, the efficient ``MultiHeadAttention``, and their agreement."""

from __future__ import annotations

import numpy as np

import attention
from explorer.models.modules import module_for
from explorer.results import HeadsProductView, MultiheadView, from_tensors
from explorer.runtime.caching import CACHE_ENTRIES, shared_view
from explorer.runtime.lazy import torch
from explorer.runtime.memory import SHARED_D_OUT_LIMIT
from explorer.views.chapter import _inputs_tensor
from explorer.views.run import Run, budgeted
from explorer.views.shapes import line_shapes

SHARED_D_OUT_LIMIT = SHARED_D_OUT_LIMIT  # the largest d_out a MultiHeadAttention may have here


@budgeted("multihead")
def multihead_view(run: Run) -> MultiheadView:
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
    ``shape_rows`` each line of ``MultiHeadAttention.steps`` with the shape it made here. What the cell
    panel reads: ``*_scores`` (num_heads, T, T), scaled, −∞ where masked; ``*_keep`` (num_heads, T, T), True =
    kept by dropout, or None; ``*_values`` (num_heads, T, head_dim); ``out_weight`` (d_out, d_out) and
    ``out_bias`` (d_out,), ``out_proj``'s, as ``nn.Linear`` stores them.
    """
    settings = run.settings
    inputs = _inputs_tensor(run).unsqueeze(0)  # (1, num_tokens, d_in)
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
        pieces=run.prepared.pieces,
        truncated_from=run.prepared.truncated_from,
        mask=efficient_trace.mask.numpy(),
        dropout_active=efficient_trace.dropout_mask is not None,
        wrapper_weights=wrapper_trace.dropped_weights[0].numpy(),
        wrapper_head_context=wrapper_trace.head_context[0].numpy(),
        wrapper_output=wrapper_trace.output[0].numpy(),
        efficient_weights=efficient_trace.dropped_weights[0].numpy(),
        efficient_context=efficient_trace.context[0].numpy(),
        efficient_output=efficient_trace.output[0].numpy(),
        wrapper_scores=wrapper_trace.masked_scores[0].numpy(),
        wrapper_keep=_kept(wrapper_trace),
        wrapper_values=wrapper_trace.values[0].numpy(),
        efficient_scores=efficient_trace.masked_scores[0].numpy(),
        efficient_keep=_kept(efficient_trace),
        efficient_values=efficient_trace.values[0].numpy(),
        out_weight=efficient.out_proj.weight.detach().numpy(),
        out_bias=efficient.out_proj.bias.detach().numpy(),
        shape_rows=line_shapes(attention.MultiHeadAttention.steps, efficient, inputs),
        shared_d_out=shared_d_out,
        wrapper_vs_efficient_max_difference=agreement,
        agreement_outputs=outputs,
    )


def _kept(trace) -> np.ndarray | None:
    """The first sequence's dropout draw, (num_heads, T, T), True = kept; None when dropout is off."""
    return None if trace.dropout_mask is None else trace.dropout_mask[0].numpy()


@shared_view(max_entries=CACHE_ENTRIES)
def heads_product_view() -> HeadsProductView:
    """Section 3.6.2's check on the book's tensor ``a``: ``a @ a.transpose(2, 3)`` beside each head's product."""
    return from_tensors(HeadsProductView, attention.heads_product())
