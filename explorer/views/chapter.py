"""The chapter's views up to trainable weights: one module's trace, simplified attention, Q, K, V with the
scaling lab, and Why attention's RNN encoder–decoder.

Each turns a ``Run`` into the numbers one page draws, by calling the ``attention`` package and converting
its tensors to numpy: a frozen dataclass from ``results``. No attention math happens here: it selects,
slices and converts. Moving between pages or steps recomputes nothing that is unchanged."""

from __future__ import annotations

import numpy as np

import attention
from explorer.models.first_view import stored_why_view
from explorer.models.modules import module_for
from explorer.results import QkvView, ScalingView, SimplifiedView, TraceArrays, WhyView, from_tensors
from explorer.runtime.caching import CACHE_ENTRIES, VIEW_ENTRIES, shared_view
from explorer.runtime.lazy import torch
from explorer.views.run import Run, budgeted, run_view


def _inputs_tensor(run: Run) -> torch.Tensor:
    return torch.tensor(run.ready().inputs)  # (num_tokens, d_in), a copy of a shared read-only array


def trace_arrays(trace: attention.Trace) -> TraceArrays:
    """A trace's tensors as numpy arrays, ready to cache and draw."""
    return from_tensors(TraceArrays, trace)


@budgeted("trace")
def module_trace(run: Run, name: str, module_seed: int | None = None) -> TraceArrays:
    """Every intermediate of one module on the sentence, batch size 1, with the settings' dropout.

    The module is built after ``torch.manual_seed(module_seed)`` (default: the settings' seed);
    dropout draws use the settings' seed."""
    settings = run.settings
    trace = attention.trace(
        module_for(name, settings, module_seed),
        _inputs_tensor(run),
        training=settings.training,
        seed=settings.seed,
    )
    return trace_arrays(trace)


@budgeted("simplified")
def simplified_view(run: Run, query: int) -> SimplifiedView:
    """Section 3.3 on the sentence: scores, weights, context vectors, and one query's details."""
    inputs = _inputs_tensor(run)  # (num_tokens, d_in)
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
def qkv_view(run: Run, v2_seed: int | None = None) -> QkvView:
    """Section 3.4 on the sentence: ``SelfAttention_v1``'s weights and every step, and v1 = v2.

    ``steps`` holds the trace's arrays for the one sentence and one head: (num_tokens, ·).
    ``SelfAttention_v2`` is built after ``torch.manual_seed(v2_seed)`` (default: the settings'
    seed; the book uses 789), and a v1 given its weights.
    """
    settings = run.settings
    inputs = _inputs_tensor(run)  # (num_tokens, d_in)
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


@shared_view(max_entries=CACHE_ENTRIES)
def scaling_view(d_ks: tuple[int, ...], num_keys: int, temperature: float, seed: int) -> ScalingView:
    """The scaling lab: softmax saturation against d_k, with and without 1/sqrt(d_k)."""
    lab = attention.scaling_lab(d_ks=d_ks, num_keys=num_keys, temperature=temperature, seed=seed)
    return from_tensors(ScalingView, lab)


WHY_HIDDEN_SIZE = 16  # the GRU's hidden state that Why attention opens with


@run_view(max_entries=VIEW_ENTRIES)
def why_view(run: Run, hidden_size: int) -> WhyView:
    """Sections 3.1–3.2 on the sentence (``computed_why_view``). The book's example at the first page's
    defaults is stored (``first_view``): a new server draws it before it has imported torch."""
    inputs, settings = run.ready().inputs, run.settings  # (num_tokens, d_in)
    stored = stored_why_view(inputs, settings.seed, hidden_size)
    return stored if stored is not None else computed_why_view(inputs, settings.seed, hidden_size)


def computed_why_view(inputs: np.ndarray, seed: int, hidden_size: int) -> WhyView:
    """A seeded GRU encoder–decoder with Bahdanau attention on ``inputs`` (num_tokens, d_in), the bottleneck
    measured by autograd, and the same sequence attending to itself."""
    inputs = torch.tensor(inputs)  # a copy of a shared read-only array
    run = attention.encoder_decoder(inputs, hidden_size=hidden_size, seed=seed)
    contrast = attention.self_attention_contrast(inputs, seed=seed)
    return from_tensors(WhyView, run, contrast)


def seq2seq_parts(inputs: np.ndarray, seed: int, hidden_size: int):
    """The trace and weights of ``attention.encoder_decoder`` on ``inputs`` (num_tokens, d_in), as ``why_view``
    ran it: what a GRU or Bahdanau cell of Why attention reads (``explorer.cells.encoder_states``). The view
    keeps no decoder states (a first visit's is stored), so this runs once per sentence, when a first cell is
    asked for, never at a page's run."""
    x = np.ascontiguousarray(inputs, dtype=np.float32)
    return _seq2seq_parts(x.tobytes(), x.shape, seed, hidden_size)


@shared_view(max_entries=CACHE_ENTRIES)
def _seq2seq_parts(inputs: bytes, shape: tuple[int, int], seed: int, hidden_size: int):
    x = torch.tensor(np.frombuffer(inputs, dtype=np.float32).reshape(shape))  # (num_tokens, d_in)
    trace = attention.encoder_decoder(x, hidden_size=hidden_size, seed=seed)
    return trace, attention.seq2seq_weights(shape[1], hidden_size, None, seed)
