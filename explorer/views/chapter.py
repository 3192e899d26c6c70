"""The chapter's views, in its order: each turns a ``Run`` into the numbers one page draws, a frozen dataclass of
numpy arrays from the ``attention`` package (no attention math here: it selects, slices and converts). Then book mode
and the Multi-head page's shape table, recorded line by line from a real run."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import textwrap
from dataclasses import dataclass, fields, replace

import numpy as np

import attention
from attention.constants import BOOK_SECTIONS as SECTIONS
from attention.constants import BOOK_SEEDS
from explorer.models import WhyView, from_tensors, layer_inputs, module_for, prepared, stored_why_view
from explorer.runtime import torch
from explorer.runtime.memory import CACHE_ENTRIES, SHARED_D_OUT_LIMIT, TurnQueue, shared_view
from explorer.settings import BOOK, DEFAULTS, RANDOM, Settings
from explorer.views import Run, budgeted, run_view

# Results, shared read-only between sessions (``memory.read_only``). Shapes: T = num_tokens, h = num_heads.


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
        arrays = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(self, **{k: v[(0,) * (v.ndim - 2)] for k, v in arrays.items() if v is not None and v.ndim >= 3})


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
    """Section 3.5.1: ``CausalAttention``'s eval-mode trace and the masking comparison, (T, T) each. ``mask`` is True
    above the diagonal; ``mask_simple`` the book's ``torch.tril(torch.ones(T, T))``; ``masked_scores`` unscaled."""

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
    """Section 3.5.2: one draw on the causal weights, (T, T) each, and the average of many draws, whose convergence
    ``num_samples`` and ``max_abs_error`` (len(counts),) trace."""

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
    """Section 3.5.3: ``inputs`` (2, T, d_in); ``mask`` (T, T); ``weights`` (2, T, T), after dropout when active;
    ``output`` (2, T, d_out); per item ``pieces``, ``lengths`` and ``unpadded_max_difference`` (nan under dropout)."""

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
    """Section 3.6. ``*_weights``, ``*_scores`` (scaled, −∞ where masked) and ``*_keep`` (None without dropout) are
    (h, T, T); ``*_values`` (h, T, head_dim); ``wrapper_output`` (T, h * d_out); ``efficient_*`` (T, d_out)."""

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
    """Section 3.6.2's check (``attention.HeadsProduct``) as numpy: ``a`` (b, h, T, head_dim), products (b, h, T, T)."""

    a: np.ndarray
    batched: np.ndarray
    per_head: np.ndarray
    max_difference: float


@dataclass(frozen=True)
class ReversalView:
    """``weights`` (2, T, T): untrained, then trained, row i = output step i; ``right`` (T,) bools."""

    weights: np.ndarray
    right: np.ndarray
    mean_max_weight: float
    untrained_mean_max_weight: float
    on_anti_diagonal: float


def _inputs_tensor(run: Run) -> torch.Tensor:
    return torch.tensor(run.ready().inputs)  # (num_tokens, d_in), a copy of a shared read-only array


@budgeted("trace")
def module_trace(run: Run, name: str, module_seed: int | None = None) -> TraceArrays:
    """Every intermediate of one module on the sentence, batch size 1, with the settings' dropout; the module is built
    after ``torch.manual_seed(module_seed)`` (default: the settings' seed), the draws use the settings' seed."""
    s = run.settings
    trace = attention.trace(module_for(name, s, module_seed), _inputs_tensor(run), training=s.training, seed=s.seed)
    return from_tensors(TraceArrays, trace)


@budgeted("simplified")
def simplified_view(run: Run, query: int) -> SimplifiedView:
    """Section 3.3 on the sentence: scores, weights, context vectors, and one query's details."""
    inputs = _inputs_tensor(run)  # (num_tokens, d_in)
    result = attention.simplified_attention(inputs)
    row = result.attn_scores[query]  # (num_tokens,)
    normalized = attention.compare_normalizations(row)
    overflow = attention.overflow_demo(row)
    loop = attention.attention_loop(inputs) if inputs.shape[0] <= 64 else None
    return from_tensors(
        SimplifiedView,
        result,  # attn_scores, attn_weights, context_vecs
        normalized,  # by_sum, naive_softmax, torch_softmax
        inputs=inputs.numpy(),
        naive_vs_torch_max_difference=float((normalized.naive_softmax - normalized.torch_softmax).abs().max()),
        overflow_scores=overflow.attn_scores.numpy(),
        overflow_naive=overflow.naive_softmax.numpy(),
        overflow_torch=overflow.torch_softmax.numpy(),
        contributions=attention.context_contributions(inputs, result.attn_weights, query).numpy(),
        loop_max_difference=None if loop is None else float((loop.context_vecs - result.context_vecs).abs().max()),
    )


@budgeted("qkv")
def qkv_view(run: Run, v2_seed: int | None = None) -> QkvView:
    """Section 3.4: ``SelfAttention_v1``'s weights and every step, and v1 = v2, ``SelfAttention_v2`` built after
    ``torch.manual_seed(v2_seed)`` (default: the settings' seed; the book uses 789) beside a v1 given its weights."""
    settings = run.settings
    inputs = _inputs_tensor(run)  # (num_tokens, d_in)
    sa_v1 = module_for("SelfAttention_v1", settings)
    steps = from_tensors(TraceArrays, attention.trace(sa_v1, inputs)).first_head()
    sa_v2 = module_for("SelfAttention_v2", settings, v2_seed)
    blank_v1 = attention.build(attention.SelfAttention_v1, settings.seed, settings.effective_d_in, settings.d_out)
    copy = attention.load_v2_weights_into_v1(blank_v1, sa_v2)
    with torch.no_grad():
        v1_out = copy(inputs)  # (num_tokens, d_out)
        v2_out = sa_v2(inputs)  # (num_tokens, d_out)
    return QkvView(
        **{name: getattr(sa_v1, name).detach().numpy().copy() for name in ("W_query", "W_key", "W_value")},
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


@run_view
def why_view(run: Run, hidden_size: int) -> WhyView:
    """Sections 3.1–3.2 on the sentence (``computed_why_view``), stored for the book's example at the defaults."""
    args = (run.ready().inputs, run.settings.seed, hidden_size)  # inputs (num_tokens, d_in)
    return stored_why_view(*args) or computed_why_view(*args)


def computed_why_view(inputs: np.ndarray, seed: int, hidden_size: int) -> WhyView:
    """A seeded GRU encoder–decoder with Bahdanau attention on ``inputs`` (num_tokens, d_in), and the same sequence
    attending to itself."""
    inputs = torch.tensor(inputs)  # a copy of a shared read-only array
    run = attention.encoder_decoder(inputs, hidden_size=hidden_size, seed=seed)
    return from_tensors(WhyView, run, attention.self_attention_contrast(inputs, seed=seed))


def seq2seq_parts(inputs: np.ndarray, seed: int, hidden_size: int):
    """The trace and weights of ``attention.encoder_decoder`` on ``inputs`` (num_tokens, d_in), as ``why_view`` ran
    it: what a cell of Why attention reads, computed when a first cell is asked for, never at a page's run."""
    x = np.ascontiguousarray(inputs, dtype=np.float32)
    return _seq2seq_parts(x.tobytes(), x.shape, seed, hidden_size)


@shared_view(max_entries=CACHE_ENTRIES)
def _seq2seq_parts(inputs: bytes, shape: tuple[int, int], seed: int, hidden_size: int):
    x = torch.tensor(np.frombuffer(inputs, dtype=np.float32).reshape(shape))  # (num_tokens, d_in)
    trace = attention.encoder_decoder(x, hidden_size=hidden_size, seed=seed)
    return trace, attention.seq2seq_weights(shape[1], hidden_size, None, seed)


@shared_view(max_entries=CACHE_ENTRIES)
def reversal_view(ids: tuple[int, ...]) -> ReversalView:
    """Why attention's trained part: the shipped reversal models on the sentence's token ``ids``."""
    found = attention.trained_alignment(ids)
    weights = np.stack([found.untrained_weights.numpy(), found.trained_weights.numpy()])  # (2, T, T)
    return from_tensors(ReversalView, found, weights=weights, right=(found.output == found.expected).numpy())


@budgeted("mask")
def mask_view(run: Run, module_seed: int | None = None) -> MaskView:
    """Section 3.5.1: ``CausalAttention``'s scores masked both ways, in eval mode (dropout has its own page); built
    after ``torch.manual_seed(module_seed)``, with 789 its weights are the book's ``SelfAttention_v2``'s."""
    steps = module_trace(run.but(training=False), "CausalAttention", module_seed)
    scaled_scores = torch.tensor(steps.scaled_scores[0, 0])  # (num_tokens, num_tokens), a copy of a read-only array
    comparison = attention.compare_masking(scaled_scores)
    future = comparison.mask.numpy()  # (num_tokens, num_tokens), True = masked
    unmasked = comparison.unmasked_weights.numpy()  # (num_tokens, num_tokens)
    return from_tensors(
        MaskView,
        comparison,  # unmasked_weights, mask, weights_neg_inf, weights_renormalized, max_abs_difference
        pieces=run.prepared.pieces,
        truncated_from=run.prepared.truncated_from,
        steps=steps,
        mask_buffer_shape=tuple(module_for("CausalAttention", run.settings, module_seed).mask.shape),
        mask_simple=(~future).astype(unmasked.dtype),
        masked_simple=np.where(future, 0.0, unmasked).astype(unmasked.dtype),
        masked_scores=np.where(future, -np.inf, steps.attn_scores[0, 0]).astype(unmasked.dtype),
    )


def dropout_sample_limit(num_tokens: int) -> int:
    """The most draws one average may take: all of them up to 64 tokens, fewer for longer inputs."""
    most = attention.dropout.MAX_DROPOUT_SAMPLES
    return max(1, min(most, most * 64 * 64 // num_tokens**2))  # at most most * 64 * 64 weights drawn per average


@budgeted("dropout")
def dropout_view(run: Run, num_samples: int, module_seed: int | None = None) -> DropoutView:
    """Section 3.5.2: one dropout draw (seeded with the settings' seed) on ``mask_view``'s causal weights, and the
    average of ``num_samples`` draws, capped at ``dropout_sample_limit``; in eval mode nothing is dropped."""
    settings = run.settings
    steps = module_trace(run.but(training=False), "CausalAttention", module_seed)
    weights = torch.tensor(steps.attn_weights[0, 0])  # (num_tokens, num_tokens), a copy of a read-only array
    draw = attention.apply_dropout(weights, settings.dropout, seed=settings.seed, training=settings.training)
    active = settings.training and settings.dropout > 0
    max_samples = dropout_sample_limit(weights.shape[0])
    p = settings.dropout if active else 0.0
    average = attention.dropout_average(weights, p, num_samples=min(num_samples, max_samples), seed=settings.seed)
    return from_tensors(
        DropoutView,
        draw,  # keep, dropped_weights, row_sums
        average,  # mean_weights, num_samples, max_abs_error
        pieces=run.prepared.pieces,
        mask=steps.mask,
        active=active,
        scale=1 / (1 - settings.dropout) if active else 1.0,
        attn_weights=weights.numpy(),
        max_samples=max_samples,
        ones_demo=attention.apply_dropout(torch.ones(6, 6), 0.5, seed=123).dropped_weights.numpy(),
    )


PAD_TOKEN = "<|endoftext|>"  # noqa: S105 (a token, not a password): GPT-2 has no padding token; the book reuses this one


@budgeted("batch")
def batch_view(run: Run, second_text: str | None) -> BatchView:
    """Section 3.5.3: two sentences as one batch through ``CausalAttention``; a blank ``second_text`` repeats the
    first, as the book does. The shorter one is padded at the end, which the causal mask hides from the real tokens."""
    settings, first = run.settings, run.prepared
    blank = second_text is None or not second_text.strip()  # the book's batch: the first sentence twice
    second = first if blank else prepared(replace(settings, source="text", text=second_text))
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


@budgeted("multihead")
def multihead_view(run: Run) -> MultiheadView:
    """Section 3.6: the wrapper of heads (``d_out`` each), the efficient module (``d_out`` split into heads), and their
    agreement: a ``MultiHeadAttention`` given the wrapper's weights, None above ``SHARED_D_OUT_LIMIT`` outputs."""
    settings = run.settings
    inputs = _inputs_tensor(run).unsqueeze(0)  # (1, num_tokens, d_in)
    wrapper = module_for("MultiHeadAttentionWrapper", settings)
    efficient = module_for("MultiHeadAttention", settings)
    wrapper_trace, efficient_trace = (
        attention.trace(module, inputs, training=settings.training, seed=settings.seed)
        for module in (wrapper, efficient)
    )
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
        **_heads("wrapper", wrapper_trace),
        **_heads("efficient", efficient_trace),
        wrapper_head_context=wrapper_trace.head_context[0].numpy(),
        wrapper_output=wrapper_trace.output[0].numpy(),
        efficient_context=efficient_trace.context[0].numpy(),
        efficient_output=efficient_trace.output[0].numpy(),
        out_weight=efficient.out_proj.weight.detach().numpy(),
        out_bias=efficient.out_proj.bias.detach().numpy(),
        shape_rows=line_shapes(attention.MultiHeadAttention.steps, efficient, inputs),
        shared_d_out=shared_d_out,
        wrapper_vs_efficient_max_difference=agreement,
        agreement_outputs=outputs,
    )


def _heads(module: str, trace) -> dict[str, np.ndarray | None]:
    """The first sequence's ``{module}_weights``, ``_scores``, ``_keep`` (None without dropout) and ``_values``."""
    keep = None if trace.dropout_mask is None else trace.dropout_mask[0].numpy()  # (h, T, T), True = kept
    arrays = {"weights": trace.dropped_weights[0], "scores": trace.masked_scores[0], "values": trace.values[0]}
    return {f"{module}_{name}": array.numpy() for name, array in arrays.items()} | {f"{module}_keep": keep}


@shared_view(max_entries=CACHE_ENTRIES)
def heads_product_view() -> HeadsProductView:
    """Section 3.6.2's check on the book's tensor ``a``: ``a @ a.transpose(2, 3)`` beside each head's product."""
    return from_tensors(HeadsProductView, attention.heads_product())


# Book mode: which of chapter 3's printed numbers a page shows, and with which seed it builds its module. The chapter
# changes seeds as it goes (``attention.book``); the sidebar's default seed, 123, stands for "the book's seeds", any
# other is used on every page. Its dropout defaults to off, as in every printed output but section 3.5.2's p = 0.5 in
# training mode, which the Dropout page uses until the learner changes p or the mode. ``note_of`` says it in words.
pure = functools.lru_cache(maxsize=4096)  # for functions pure in frozen settings: a rerun recomputes nothing
BOOK_NUM_TOKENS = 6  # the book's example: "Your journey starts with one step", six 3-d vectors
BOOK_DROPOUT = 0.5  # section 3.5.2's Dropout(0.5), in training mode
BOOK_DRAW_SEED = BOOK_SEEDS["dropout"]  # section 3.5.2's torch.manual_seed before the dropout draws


@dataclass(frozen=True)
class Setup:
    """What the book used for one section's printed numbers."""

    seed: int | None = None  # torch.manual_seed before the module is built; None: no module
    d_out: int | None = None  # None: the section's numbers do not depend on it
    num_heads: int | None = None
    dropout: bool = False  # True: the module's dropout matters (the book's output has none)


TITLES = {
    **SECTIONS,
    "one_query": "3.3.1 A simple self-attention mechanism without trainable weights",
    "qkv_steps": f"3.4.1 Computing the attention weights step by step (seed {BOOK_SEEDS['qkv_steps']})",
}
SETUPS = {
    "one_query": Setup(),
    "simplified": Setup(),
    "qkv_steps": Setup(seed=BOOK_SEEDS["qkv_steps"], d_out=2),
    "v1": Setup(seed=BOOK_SEEDS["v1"], d_out=2),
    "v2": Setup(seed=BOOK_SEEDS["v2"], d_out=2),
    "causal": Setup(seed=BOOK_SEEDS["causal"], d_out=2),
    "dropout": Setup(seed=BOOK_SEEDS["causal"], d_out=2),  # the causal weights of section 3.5.1's SelfAttention_v2
    "causal_class": Setup(seed=BOOK_SEEDS["causal_class"], d_out=2, dropout=True),
    "wrapper": Setup(seed=BOOK_SEEDS["wrapper"], d_out=2, num_heads=2, dropout=True),
    "multihead": Setup(seed=BOOK_SEEDS["multihead"], d_out=2, num_heads=2, dropout=True),
}


@pure
def module_seed(settings: Settings, section: str) -> int:
    """The seed a page builds its module with: the book's for ``section`` while the sidebar's seed is the default."""
    book_seed = SETUPS[section].seed
    return book_seed if settings.seed == DEFAULTS.seed and book_seed is not None else settings.seed


@pure
def dropout_settings(settings: Settings) -> Settings:
    """The Dropout page's settings: the book's p = 0.5 in training mode while the sidebar's dropout is untouched."""
    untouched = settings.dropout == DEFAULTS.dropout and settings.training == DEFAULTS.training
    return replace(settings, dropout=BOOK_DROPOUT, training=True) if untouched else settings


@pure
def departures(settings: Settings, section: str) -> tuple[str, ...]:
    """What in ``settings`` makes ``section``'s numbers differ from the book's, in words (empty: none)."""
    setup, reasons = SETUPS[section], []
    if settings.weights != "random":
        return (f"{settings.weights} weight matrices of layer {settings.layer}, not the chapter's random ones",)
    if settings.source != BOOK:
        reasons.append("your own sentence, not the book's six 3-d vectors")
    elif settings.context_length < BOOK_NUM_TOKENS:
        reasons.append(f"context_length {settings.context_length} cuts the book's six tokens")
    if setup.d_out is not None and settings.d_out != setup.d_out:
        reasons.append(f"d_out is {settings.d_out}, not {setup.d_out}")
    if setup.num_heads is not None and settings.num_heads != setup.num_heads:
        reasons.append(f"num_heads is {settings.num_heads}, not {setup.num_heads}")
    if section == "dropout":
        used = dropout_settings(settings)
        if settings.seed != BOOK_DRAW_SEED:
            reasons.append(f"seed {settings.seed}, not 789 for the weight matrices and {BOOK_DRAW_SEED} for the draws")
        if used.dropout != BOOK_DROPOUT or not used.training:
            mode = "training" if used.training else "eval"
            reasons.append(f"dropout p {used.dropout:g} in {mode} mode, not {BOOK_DROPOUT} in training mode")
        return reasons
    if setup.seed is not None and module_seed(settings, section) != setup.seed:
        reasons.append(f"seed {settings.seed}, not {setup.seed}")
    if setup.dropout and settings.training and settings.dropout > 0:
        reasons.append(f"dropout is on (p {settings.dropout:g}, training mode), and the book's output has none")
    return tuple(reasons)


@pure
def is_book(settings: Settings, section: str | None = None) -> bool:
    """Whether ``section``'s numbers on screen are the ones the book prints; without ``section``, every page's."""
    sections = SETUPS if section is None else (section,)
    return not any(departures(settings, name) for name in sections)


# What a section prints of its numbers, where that is not the numbers themselves.
PRINTED = {
    "causal_class": "Section 3.5.3 prints only their shape; section 3.6.1 prints them as the wrapper output's first "
    "two columns.",
}


@functools.lru_cache(maxsize=256)  # a page's rerun writes the same caption
def note_of(settings: Settings, section: str, also: tuple[str, ...] = ()) -> str:
    """Sentences saying whether ``section``'s numbers are the book's; ``also`` adds a page's own departures."""
    reasons = [*departures(settings, section), *also]
    printed = f" {PRINTED[section]}" if section in PRINTED else ""
    if not reasons:
        return f"These are the book's numbers: section {TITLES[section]}.{printed}"
    more = f" Also: {'; '.join(reasons[1:])}." if len(reasons) > 1 else ""
    return (
        f"These are no longer the book's numbers: {reasons[0]}.{more} The app's defaults reproduce section "
        f"{TITLES[section]}.{printed}"
    )


# The Multi-head page's shape table: each line of the package's source (read with ``inspect``) beside the shape its
# tensor had when the line ran, so the table cannot drift from the code.
SHAPE_COMMENT = re.compile(r"\([\w, *]*\)")  # "(b, num_tokens, d_out)" in a comment
# On Python 3.11, two threads in ``ast.parse`` at once can fail ("AST constructor recursion depth mismatch"), as 4 of
# 1,766 new sentences did under 30 students typing: sources are parsed one thread at a time.
PARSING = TurnQueue(slots=1)


def source_of(obj) -> str:
    """``inspect.getsource(obj)``, read once per process, one thread at a time (a class's parses its module)."""
    with PARSING.turn():
        return _source(obj)


@functools.cache  # a function's source, read once per process
def _source(obj) -> str:
    return inspect.getsource(obj)


@functools.cache  # a function's statements, parsed once per process
def _parsed(function) -> dict[int, tuple[str, str]]:
    """Each source line number of ``function`` → its statement's code (comment removed) and shape comment."""
    lines, first = inspect.getsourcelines(function)
    source = textwrap.dedent("".join(lines))
    numbered = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt) or isinstance(node, ast.FunctionDef):
            continue
        code = ast.get_source_segment(source, node) or ""
        comment = numbered[node.end_lineno - 1].partition("#")[2]
        shapes = SHAPE_COMMENT.findall(comment)
        for number in range(node.lineno, node.end_lineno + 1):
            found[number + first - 1] = (" ".join(code.split()), shapes[-1] if shapes else "")
    return found


def line_shapes(function, *args, **kwargs) -> tuple[ShapeRow, ...]:
    """Call ``function(*args, **kwargs)`` and record, after each of its statements, the shape of every tensor that
    statement bound to a local name. In-place changes add no row."""
    with PARSING.turn():
        statements = _parsed(function)
    code = inspect.unwrap(function).__code__
    rows: list[ShapeRow] = []
    seen: dict[str, torch.Tensor] = {}
    running = [None]  # the statement whose effects are recorded at the next event

    def record(frame) -> None:
        for name, value in frame.f_locals.items():
            if isinstance(value, torch.Tensor) and seen.get(name) is not value:
                seen[name] = value
                if running[0] is not None:
                    line, names = statements[running[0]]
                    rows.append(ShapeRow(line=line, names=names, shape=tuple(value.shape)))

    def in_function(frame, event, arg):
        if event in ("line", "return"):
            record(frame)
            running[0] = frame.f_lineno if statements.get(frame.f_lineno) else None
        return in_function

    def on_call(frame, event, arg):
        return in_function if frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        with torch.no_grad():
            function(*args, **kwargs)
    finally:
        sys.settrace(previous)
    return tuple(rows)


# How far a page's attention weights are from spreading evenly: random 3-d inputs and weight matrices often give
# weights within a few hundredths of 1/n, which the fixed 0–1 colour scale shows as one colour (issue 54).


EVEN_TOLERANCE = 0.03  # weights within this of an even share differ by at most 0.06: one colour on the 0–1 scale


def near_even(weights, masked=None) -> float | None:
    """The largest |w − 1/n| over ``weights`` (..., num_tokens, num_tokens), n the keys each query may see (those
    not ``masked``), when it is at most ``EVEN_TOLERANCE``: the weights are near-uniform. None when they are not."""
    found = np.asarray(weights, dtype=np.float64)
    visible = np.ones(found.shape[-2:], dtype=bool) if masked is None else ~np.asarray(masked, dtype=bool)
    keys = np.maximum(visible.sum(axis=-1, keepdims=True), 1)  # (num_tokens, 1): n for each query
    gap = float(np.abs(np.where(visible, found - 1.0 / keys, 0.0)).max()) if found.size else 0.0
    return gap if gap <= EVEN_TOLERANCE else None
