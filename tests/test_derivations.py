"""Any cell of a chapter-3 matrix written out term by term: each value is the package's own cell, each term
an independent torch computation, and the terms add up to the total."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import rounding_bounds, summation_error
from torch import nn

import attention
from attention import BOOK_INPUTS, MISTAKES, CausalAttention, MultiHeadAttention, SelfAttention_v1, build, trace
from attention.before_chapter.bahdanau import (
    GRUWeights,
    encoder_decoder,
    gru_input_part,
    gru_step,
    self_attention_contrast,
    seq2seq_weights,
)
from attention.before_chapter.reversal import load_reversal, trained_alignment, untrained_reversal
from attention.derivations import (
    Derivation,
    additive_score,
    bahdanau_context,
    bahdanau_score,
    bahdanau_weight,
    cache_entry,
    contrast_score,
    dot_product,
    dropped_weight,
    encoder_state,
    gru_state,
    merge,
    mistake_cell,
    out_projection,
    projection,
    reversal_weight,
    score,
    weight,
    weighted_sum,
    window_mask_entry,
)
from attention.mistake_steps import merge_heads_without_transpose, split_heads_without_transpose

CELL = 1e-4  # a GRU state's float32 cell against its float64 derivation: gates through σ, tanh (not derived)
NUM_TOKENS = len(BOOK_INPUTS)
CELLS = [(i, j) for i in range(NUM_TOKENS) for j in range(NUM_TOKENS)]


def assert_adds_up(found: Derivation) -> None:
    """Each term is the product of its factors (a softmax term: the exp of its score less the row's largest),
    and the terms add up to the total."""
    for term in found.terms:
        if found.kind == "weight":
            shifted = math.exp(term.factors[0] - found.details["row_max"]) if not term.masked else 0.0
            assert term.value == pytest.approx(shifted, rel=1e-12)
        else:
            assert term.value == pytest.approx(math.prod(term.factors), abs=1e-12)
    assert math.fsum(term.value for term in found.terms) == pytest.approx(found.total, abs=1e-9)


def cell_bound(found: Derivation) -> float:
    """How far the float32 cell may be from the float64 derivation of the same float32 inputs: float32 rounds
    the last step's sum of n terms (n · eps · Σ|terms|) and a few more times (products, the last ÷ or ×)."""
    scale = math.fsum(abs(term.value) for term in found.terms) + abs(found.details.get("bias", 0.0))
    if found.kind == "weight":  # exp / Σ exps: each rounding is relative to the weight itself
        scale = abs(found.value)
    if found.kind == "gru_state":  # gates through σ and tanh: a chain not derived here
        return CELL
    return float(summation_error(len(found.terms) + 3, max(scale, abs(found.value))))


def assert_cell(found: Derivation, cell) -> None:
    assert_adds_up(found)
    assert found.value == pytest.approx(float(cell), abs=cell_bound(found))


# The stages before multi-head attention: score, scaled score, weight, dropout, context, projection.


@functools.cache
def causal_trace(training: bool = False) -> attention.Trace:
    """The book's CausalAttention (seed 123) on its six tokens; with ``training``, dropout p = 0.5."""
    module = build(CausalAttention, 123, 3, 2, NUM_TOKENS, 0.5)
    return trace(module, BOOK_INPUTS, training=training, seed=123)


@pytest.mark.parametrize(("row", "col"), CELLS)
def test_score_and_scaled_score_are_the_traces_cells(row, col):
    found = causal_trace()
    queries, keys = found.queries[0, 0], found.keys[0, 0]  # (T, 2)
    plain, scaled = score(queries, keys, row, col), score(queries, keys, row, col, scaled=True)
    assert_cell(plain, found.attn_scores[0, 0, row, col])
    assert_cell(scaled, found.scaled_scores[0, 0, row, col])
    exact = queries[row].double() * keys[col].double()  # a product of two float32 numbers is exact in float64
    assert [t.value for t in plain.terms] == exact.tolist()
    assert scaled.total == plain.total
    assert scaled.details["d_k"] == 2 and scaled.value == pytest.approx(plain.total / math.sqrt(2))


@pytest.mark.parametrize("row", range(NUM_TOKENS))
def test_a_weight_with_masked_keys_is_the_softmax_cell(row):
    found = causal_trace()
    for col in range(NUM_TOKENS):
        by_flag = weight(found.scaled_scores[0, 0, row], col, row=row, masked=found.mask[row])
        by_inf = weight(found.masked_scores[0, 0, row], col, row=row)
        unshifted = weight(found.masked_scores[0, 0, row], col, row=row, subtract_max=False)
        for derived in (by_flag, by_inf, unshifted):
            assert_cell(derived, found.attn_weights[0, 0, row, col])
        exps = torch.exp(found.masked_scores[0, 0, row].double())  # (T,), exp(−∞) = 0
        assert [t.value for t in unshifted.terms] == pytest.approx(exps.tolist(), rel=1e-12)
        assert [t.masked for t in by_flag.terms] == found.mask[row].tolist()
        assert all(t.value == 0 for t in by_flag.terms if t.masked)


def test_a_row_with_every_key_masked_has_no_softmax():
    with pytest.raises(ValueError, match="every key"):
        weight(torch.zeros(3), 0, masked=torch.ones(3, dtype=torch.bool))


@pytest.mark.parametrize(("row", "col"), CELLS)
def test_dropped_weights_and_context_entries_are_the_traces_cells(row, col):
    found = causal_trace(training=True)
    kept = bool(found.dropout_mask[0, 0, row, col])
    dropped = dropped_weight(float(found.attn_weights[0, 0, row, col]), kept, 0.5, row=row, col=col)
    assert_cell(dropped, found.dropped_weights[0, 0, row, col])
    assert dropped.details["scale"] == 2.0
    if col < 2:
        entry = weighted_sum(found.dropped_weights[0, 0, row], found.values[0, 0], col, row=row)
        assert_cell(entry, found.context[0, row, col])
        products = found.dropped_weights[0, 0, row].double() * found.values[0, 0, :, col].double()  # exact, (T,)
        assert [t.value for t in entry.terms] == products.tolist()


def test_projection_is_x_at_W_with_and_without_a_bias():
    v1 = build(SelfAttention_v1, 123, 3, 2)
    linear = build(nn.Linear, 1, 3, 2)
    with torch.no_grad():
        queries = BOOK_INPUTS @ v1.W_query  # (T, 2)
        outputs = linear(BOOK_INPUTS)  # (T, 2)
    for row in range(NUM_TOKENS):
        for col in range(2):
            assert_cell(projection(BOOK_INPUTS[row], v1.W_query, col, row=row), queries[row, col])
            biased = projection(BOOK_INPUTS[row], linear.weight.T, col, bias=linear.bias, row=row)
            assert_cell(biased, outputs[row, col])
            assert biased.value == pytest.approx(biased.total + linear.bias[col].item())


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 8), st.data())
def test_any_softmax_row_and_dot_product(seed, num_tokens, data):
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(num_tokens, generator=generator) * 5  # (T,)
    hidden = torch.tensor(data.draw(st.lists(st.booleans(), min_size=num_tokens, max_size=num_tokens)))
    hidden[data.draw(st.integers(0, num_tokens - 1))] = False  # at least one key is seen
    expected = torch.softmax(scores.double().masked_fill(hidden, -math.inf), dim=-1)  # (T,)
    found = [weight(scores, col, masked=hidden) for col in range(num_tokens)]
    assert [f.value for f in found] == pytest.approx(expected.tolist(), abs=1e-12)
    assert math.fsum(f.value for f in found) == pytest.approx(1.0)
    left, right = torch.randn(2, num_tokens, generator=generator)  # (T,), (T,)
    product = dot_product(left, right)
    assert_adds_up(product)
    assert product.value == pytest.approx(float(left.double() @ right.double()))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: score(torch.ones(3, 2), torch.ones(3, 2), 3, 0), "query 3 is out of range"),
        (lambda: score(torch.ones(3, 2), torch.ones(3, 2), 0, -1), "key -1 is out of range"),
        (lambda: score(torch.ones(3), torch.ones(3, 2), 0, 0), "expected a matrix"),
        (lambda: dot_product(torch.ones(3), torch.ones(2)), "one length"),
        (lambda: weight(torch.ones(3), 5), "key 5"),
        (lambda: dropped_weight(0.5, True, 1.0), "p must be"),
        (lambda: weighted_sum(torch.ones(3), torch.ones(4, 2), 0), "3 weights for 4"),
        (lambda: weighted_sum(torch.ones(3), torch.ones(3, 2), 2), "column 2"),
        (lambda: projection(torch.ones(3), torch.ones(2, 2), 0), "matrix with 2 rows"),
    ],
)
def test_bad_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Multi-head attention: the merge and out_proj.


@functools.cache
def multihead_traces() -> tuple[MultiHeadAttention, attention.Trace, attention.Trace]:
    """The efficient module (d_out 4, two heads of 2) in eval mode, and the wrapper (two heads of 2) with dropout."""
    mha = build(MultiHeadAttention, 123, 3, 4, NUM_TOKENS, 0.0, num_heads=2)
    wrapper = build(attention.MultiHeadAttentionWrapper, 123, 3, 2, NUM_TOKENS, 0.5, num_heads=2)
    return mha, trace(mha, BOOK_INPUTS), trace(wrapper, BOOK_INPUTS, training=True, seed=123)


@pytest.mark.parametrize("module", ["MultiHeadAttention", "MultiHeadAttentionWrapper"])
def test_merged_columns_come_from_their_head(module):
    mha, efficient, wrapper = multihead_traces()
    found = efficient if module == "MultiHeadAttention" else wrapper
    weights, values = found.dropped_weights[0], found.values[0]  # (h, T, T), (h, T, 2)
    for row in range(NUM_TOKENS):
        for col in range(4):
            entry = merge(weights, values, row, col)
            assert_cell(entry, found.context[0, row, col])
            head, head_col = col // 2, col % 2
            assert (entry.details["head"], entry.details["head_col"], entry.details["token"]) == (head, head_col, row)
            products = weights[head, row].double() * values[head, :, head_col].double()  # exact in float64, (T,)
            assert [t.value for t in entry.terms] == products.tolist()


def test_merge_without_transpose_reads_the_memory_head_first():
    mha, found, _ = multihead_traces()
    weights, values = found.dropped_weights, found.values  # (1, h, T, T), (1, h, T, 2)
    scrambled = merge_heads_without_transpose(mha, weights, values)[0]  # (T, 4)
    for row in range(NUM_TOKENS):
        for col in range(4):
            entry = merge(weights[0], values[0], row, col, transposed=False)
            assert_cell(entry, scrambled[row, col])
            flat = row * 4 + col
            assert (
                entry.details["head"] == flat // (NUM_TOKENS * 2) and entry.details["token"] == flat // 2 % NUM_TOKENS
            )


def test_out_proj_entries_mix_the_heads():
    mha, found, _ = multihead_traces()
    weight_out, bias = mha.out_proj.weight, mha.out_proj.bias  # (4, 4), (4,)
    for row in range(NUM_TOKENS):
        for col in range(4):
            entry = out_projection(found.context[0, row], weight_out, col, num_heads=2, bias=bias, row=row)
            assert_cell(entry, found.output[0, row, col])
            products = found.context[0, row].double() * weight_out[col].double()  # exact in float64, (4,)
            assert [t.value for t in entry.terms] == products.tolist()
            assert [t.head for t in entry.terms] == [0, 0, 1, 1]
            assert sum(entry.details["head_totals"]) + entry.details["bias"] == pytest.approx(entry.value)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 4), st.integers(1, 6), st.integers(1, 3))
def test_any_merge_and_out_proj(seed, num_heads, num_tokens, head_dim):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.rand(num_heads, num_tokens, num_tokens, generator=generator)  # (h, T, T)
    values = torch.randn(num_heads, num_tokens, head_dim, generator=generator)  # (h, T, hd)
    d_out = num_heads * head_dim
    heads = weights @ values  # (h, T, hd)
    merged = heads.transpose(0, 1).reshape(num_tokens, d_out)  # (T, d_out)
    scrambled = heads.reshape(num_tokens, d_out)  # (T, d_out)
    weight_out = torch.randn(d_out, d_out, generator=generator)  # (d_out, d_out)
    output = merged @ weight_out.T  # (T, d_out)
    for row in range(num_tokens):
        for col in range(d_out):
            assert_cell(merge(weights, values, row, col), merged[row, col])
            assert_cell(merge(weights, values, row, col, transposed=False), scrambled[row, col])
            mixed = out_projection(merged[row], weight_out, col, num_heads=num_heads, row=row)
            assert mixed.value == pytest.approx(float(output[row, col]), abs=cell_bound(mixed))
            assert math.fsum(mixed.details["head_totals"]) == pytest.approx(mixed.total)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: merge(torch.ones(2, 3, 3), torch.ones(2, 3, 2), 0, 4), "column 4"),
        (lambda: merge(torch.ones(2, 3, 3), torch.ones(2, 3, 2), 3, 0), "token 3"),
        (lambda: merge(torch.ones(3, 3), torch.ones(2, 3, 2), 0, 0), "one matrix per head"),
        (lambda: merge(torch.ones(2, 4, 4), torch.ones(2, 3, 2), 0, 0), "do not fit"),
        (lambda: out_projection(torch.ones(4), torch.ones(4, 4), 0, num_heads=3), "split evenly into 3"),
        (lambda: out_projection(torch.ones(4), torch.ones(4, 4), 4, num_heads=2), "column 4"),
    ],
)
def test_bad_multihead_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Why attention: Bahdanau's additive attention and the GRU encoder.


@functools.cache
def seq2seq(hidden_size: int = 8, seed: int = 5):
    return encoder_decoder(BOOK_INPUTS, hidden_size=hidden_size, seed=seed), seq2seq_weights(3, hidden_size, None, seed)


def gate_bound(weights: GRUWeights, x: torch.Tensor, h: torch.Tensor) -> float:
    """How far float32's gates (and the terms they make, each at most 1 in size) may be from float64's: a
    pre-activation sums d_in + H + 2 terms, n's inner W_hn h + b_hn H + 1 more, then two products (sigmoid's
    slope is at most 1/4, tanh's 1)."""
    terms = weights.weight_ih.abs() @ x.abs() + weights.bias_ih.abs() + weights.weight_hh.abs() @ h.abs()
    scale = float((terms + weights.bias_hh.abs()).max())  # Σ|terms| of the largest pre-activation
    return float(summation_error([x.numel() + h.numel() + 2, h.numel() + 1, 2], max(scale, 1.0)))


def torch_gates(weights: GRUWeights, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """z and n of one GRU step, from the per-gate slices of the weights (nn.GRUCell's equations)."""
    w_ir, w_iz, w_in = weights.weight_ih.chunk(3)  # 3 x (H, input_size)
    w_hr, w_hz, w_hn = weights.weight_hh.chunk(3)  # 3 x (H, H)
    b_ir, b_iz, b_in = weights.bias_ih.chunk(3)  # 3 x (H,)
    b_hr, b_hz, b_hn = weights.bias_hh.chunk(3)  # 3 x (H,)
    r = torch.sigmoid(w_ir @ x + b_ir + w_hr @ h + b_hr)  # (H,)
    z = torch.sigmoid(w_iz @ x + b_iz + w_hz @ h + b_hz)  # (H,)
    return z, torch.tanh(w_in @ x + b_in + r * (w_hn @ h + b_hn))  # (H,), (H,)


@pytest.mark.parametrize("token", range(NUM_TOKENS))
def test_encoder_states_are_gru_steps(token):
    found, weights = seq2seq()
    h_prev = torch.zeros(8) if token == 0 else found.encoder_states[token - 1]  # (H,)
    z, n = torch_gates(weights.encoder, BOOK_INPUTS[token], h_prev)
    bound = gate_bound(weights.encoder, BOOK_INPUTS[token], h_prev)
    for unit in range(8):
        entry = encoder_state(found, weights, token, unit)
        assert_cell(entry, found.encoder_states[token, unit])
        expected = [(1 - z[unit]) * n[unit], z[unit] * h_prev[unit]]
        assert [t.value for t in entry.terms] == pytest.approx([float(e) for e in expected], abs=bound)
        assert (entry.details["z"], entry.details["n"]) == pytest.approx((float(z[unit]), float(n[unit])), abs=bound)


def test_gru_state_agrees_with_nn_grucell():
    _, weights = seq2seq()
    cell = nn.GRUCell(3, 8)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(weights.encoder, name))
        h = torch.linspace(-1, 1, 8)  # (H,)
        expected = cell(BOOK_INPUTS[2], h)  # (H,)
    for unit in range(8):
        assert_cell(gru_state(weights.encoder, BOOK_INPUTS[2], h, unit), expected[unit])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 5), st.integers(1, 6))
def test_any_gru_state_is_gru_steps_entry(seed, input_size, hidden_size):
    generator = torch.Generator().manual_seed(seed)
    shapes = ((3 * hidden_size, input_size), (3 * hidden_size, hidden_size), (3 * hidden_size,), (3 * hidden_size,))
    weights = GRUWeights(*(torch.randn(shape, generator=generator) for shape in shapes))
    x, h = torch.randn(input_size, generator=generator), torch.randn(hidden_size, generator=generator)
    expected = gru_step(weights, gru_input_part(weights, x), h)  # (hidden_size,)
    for unit in range(hidden_size):
        assert_cell(gru_state(weights, x, h, unit), expected[unit])


@pytest.mark.parametrize("step", range(NUM_TOKENS))
def test_bahdanau_scores_weights_and_contexts_are_the_traces_cells(step):
    found, weights = seq2seq()
    s = found.final_state if step == 0 else found.decoder_states[step - 1]  # (H,)
    for token in range(NUM_TOKENS):
        score_found = bahdanau_score(found, weights, step, token)
        assert_cell(score_found, found.bahdanau_scores[step, token])
        h = found.encoder_states[token]  # (H,)
        terms = weights.v_a * torch.tanh(weights.W_a @ s + weights.U_a @ h)  # (attention,)
        inside = weights.W_a.abs() @ s.abs() + weights.U_a.abs() @ h.abs()  # Σ|terms| inside the tanh
        bound = float(summation_error(s.numel() + h.numel() + 1, (weights.v_a.abs() * inside).max()))
        assert [t.value for t in score_found.terms] == pytest.approx(terms.tolist(), abs=bound)
        assert_cell(bahdanau_weight(found, step, token), found.bahdanau_weights[step, token])
    for col in range(8):
        assert_cell(bahdanau_context(found, step, col), found.attention_contexts[step, col])


def test_the_first_decoder_step_scores_from_the_final_encoder_state():
    found, weights = seq2seq()
    assert bahdanau_score(found, weights, 0, 0).details["query_state"] == "final encoder state"
    assert bahdanau_score(found, weights, 3, 0).details["query_state"] == "decoder state 2"


def test_the_self_attention_contrast_cells():
    contrast = self_attention_contrast(BOOK_INPUTS, seed=7)
    for row, col in CELLS:
        assert_cell(contrast_score(BOOK_INPUTS, row, col, seed=7), contrast.additive_scores[row, col])
        assert_cell(weight(contrast.additive_scores[row], col, row=row), contrast.additive_weights[row, col])
        assert_cell(score(BOOK_INPUTS, BOOK_INPUTS, row, col), contrast.dot_product_scores[row, col])
        assert_cell(weight(contrast.dot_product_scores[row], col, row=row), contrast.dot_product_weights[row, col])


TYPED_IDS = (464, 3797, 3332, 319, 262, 2603, 780, 340, 373, 10032)  # "The cat sat on the mat because it was tired"


@pytest.mark.parametrize("trained", [True, False])
def test_the_reversal_alignment_cells(trained):
    model = load_reversal(True) if trained else untrained_reversal()
    found = trained_alignment(TYPED_IDS)
    shown = found.trained_weights if trained else found.untrained_weights  # (T, T)
    for step in range(len(TYPED_IDS)):
        for token in range(len(TYPED_IDS)):
            cell = reversal_weight(model, TYPED_IDS, step, token)
            assert_cell(cell, shown[step, token])
            assert_adds_up(cell.details["score"])
            assert cell.details["score"].value == pytest.approx(cell.terms[token].factors[0], rel=1e-5, abs=1e-5)
    assert not model.W_a._forward_hooks and not model.U_a._forward_hooks  # the shared model is left as it was


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 6), st.integers(1, 6), st.integers(1, 6))
def test_any_additive_score(seed, query_size, key_size, attention_size):
    generator = torch.Generator().manual_seed(seed)
    s, h = torch.randn(query_size, generator=generator), torch.randn(key_size, generator=generator)
    W_a = torch.randn(attention_size, query_size, generator=generator)  # (attention_size, query_size)
    U_a = torch.randn(attention_size, key_size, generator=generator)  # (attention_size, key_size)
    v_a = torch.randn(attention_size, generator=generator)  # (attention_size,)
    found = additive_score(s, h, W_a, U_a, v_a)
    expected = attention.additive_scores(W_a @ s, (U_a @ h).unsqueeze(0), v_a)  # (1,)
    assert_adds_up(found)
    # the float32 sums W_a s + U_a h reach the score through tanh (slope ≤ 1), times |v_a|
    inner = summation_error(query_size + key_size + 1, W_a.abs() @ s.abs() + U_a.abs() @ h.abs())
    assert found.value == pytest.approx(float(expected[0]), abs=cell_bound(found) + float(v_a.abs() @ inner))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bahdanau_score(*seq2seq(), NUM_TOKENS, 0), "decoder step 6"),
        (lambda: bahdanau_score(*seq2seq(), 0, -1), "encoder token -1"),
        (lambda: bahdanau_score(seq2seq()[0], seq2seq(4)[1], 0, 0), "do not belong"),
        (lambda: encoder_state(*seq2seq(), 0, 8), "hidden unit 8"),
        (lambda: bahdanau_weight(seq2seq()[0], 0, 6), "key 6"),
        (lambda: bahdanau_context(seq2seq()[0], 0, 8), "column 8"),
        (lambda: gru_state(seq2seq()[1].encoder, torch.ones(4), torch.zeros(8), 0), "input of 4"),
        (
            lambda: gru_state(
                GRUWeights(*[torch.ones(4, 2)] * 2, *[torch.ones(4)] * 2), torch.ones(2), torch.ones(2), 0
            ),
            "3 × 2",
        ),
        (
            lambda: additive_score(torch.ones(2), torch.ones(2), torch.ones(3, 2), torch.ones(3, 3), torch.ones(3)),
            "U_a",
        ),
        (lambda: contrast_score(BOOK_INPUTS, 0, 6), "key 6"),
        (lambda: reversal_weight(load_reversal(False), TYPED_IDS, 0, 0), "with attention"),
        (lambda: reversal_weight(load_reversal(True), TYPED_IDS, 10, 0), "decoder step 10"),
        (lambda: reversal_weight(load_reversal(True), [], 0, 0), "at least one token"),
    ],
)
def test_bad_bahdanau_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Break it: each mistake's cell beside the right one.


@functools.cache
def mistake_module() -> MultiHeadAttention:
    """Two heads of head_dim 2, so √d_k, d_k and 1 all differ; p = 0.5 for the dropout mistake."""
    return build(MultiHeadAttention, 123, 3, 4, NUM_TOKENS, 0.5, num_heads=2)


@functools.cache
def mistake_run(name: str) -> attention.MistakeRun:
    return attention.run_mistake(name, mistake_module(), BOOK_INPUTS, dropout_samples=10)


@functools.cache
def mistake_cells(name: str) -> dict[tuple[int, int], tuple[Derivation, Derivation]]:
    return {cell: mistake_cell(mistake_run(name), mistake_module(), BOOK_INPUTS, *cell) for cell in CELLS}


def assert_same_or_both_nan(found: Derivation, cell) -> None:
    if math.isnan(float(cell)):
        assert math.isnan(found.value) and found.details["all_masked"] and found.total == 0
    else:
        assert_cell(found, cell)


@pytest.mark.parametrize("name", MISTAKES)
def test_each_mistakes_cells_are_the_runs_cells(name):
    run = mistake_run(name)
    for (row, col), (right, wrong) in mistake_cells(name).items():
        assert_cell(right, run.right_weights[row, col])
        assert_same_or_both_nan(wrong, run.wrong_weights[row, col])


def wrong_row(name: str, row: int) -> list[Derivation]:
    return [mistake_cells(name)[row, col][1] for col in range(NUM_TOKENS)]


def test_fill_zero_leaves_the_hidden_keys_an_exp_of_their_own():
    right, wrong = mistake_cells("fill_zero")[0, 3]
    assert right.terms[3].masked and right.terms[3].value == 0
    assert wrong.details["filled_with_0"] == (1, 2, 3, 4, 5)
    assert all(t.value > 0 for t in wrong.terms) and wrong.value > 0 and right.value == 0


@pytest.mark.parametrize(("name", "divisor"), [("no_scaling", 1.0), ("divide_by_d_k", 2.0)])
def test_the_scaling_mistakes_record_their_divisor(name, divisor):
    right, wrong = mistake_cells(name)[4, 2]
    assert right.details["divisor"] == pytest.approx(math.sqrt(2)) and wrong.details["divisor"] == divisor
    assert right.details["score"].total == wrong.details["score"].total
    assert wrong.details["score"].value == pytest.approx(wrong.details["score"].total / divisor)
    assert wrong.terms[2].factors[0] == pytest.approx(wrong.details["score"].value)


def test_softmax_over_the_wrong_dim_sums_a_column():
    right, wrong = mistake_cells("softmax_wrong_dim")[3, 1]
    assert wrong.details["dim"] == -2 and right.details["dim"] == -1
    assert [t.masked for t in wrong.terms] == [True, False, False, False, False, False]  # query 0 may not see key 1
    column = [mistake_cells("softmax_wrong_dim")[i, 1][1].value for i in range(NUM_TOKENS)]
    assert math.fsum(column) == pytest.approx(1.0)


@pytest.mark.parametrize(("name", "nan_rows"), [("tril_mask", [4, 5]), ("diagonal_0", [0])])
def test_a_mask_that_hides_a_whole_row_leaves_0_over_0(name, nan_rows):
    for row in range(NUM_TOKENS):
        all_masked = [found.details.get("all_masked", False) for found in wrong_row(name, row)]
        assert all(all_masked) == (row in nan_rows)


def test_masking_after_the_softmax_keeps_the_later_keys_in_the_sum():
    right, wrong = mistake_cells("mask_after_softmax")[1, 4]
    assert wrong.value == 0 and wrong.details["before_zeroing"] > 0
    assert not any(t.masked for t in wrong.terms) and right.terms[4].masked
    kept = mistake_cells("mask_after_softmax")[1, 0][1]
    assert kept.value < mistake_cells("mask_after_softmax")[1, 0][0].value  # the same exp over a larger sum


def test_dropout_without_rescale_misses_the_factor_1_over_1_minus_p():
    run = mistake_run("dropout_without_rescale")
    for right, wrong in mistake_cells("dropout_without_rescale").values():
        assert right.details["kept"] == wrong.details["kept"] == bool(run.dropout_keep[right.row, right.col])
        assert right.value == pytest.approx(2 * wrong.value)
        assert wrong.details["scale"] == 1.0 and right.details["scale"] == 2.0
        assert right.details["weight"].value == pytest.approx(wrong.details["weight"].value)


def test_view_without_transpose_scores_other_tokens_numbers():
    mha = mistake_module()
    with torch.no_grad():
        queries = split_heads_without_transpose(mha, mha.W_query(BOOK_INPUTS.unsqueeze(0)))[0, 0]  # (T, 2)
        keys = split_heads_without_transpose(mha, mha.W_key(BOOK_INPUTS.unsqueeze(0)))[0, 0]  # (T, 2)
    right, wrong = mistake_cells("view_without_transpose")[5, 3]
    exact = queries[5].double() * keys[3].double()  # a product of two float32 numbers is exact in float64
    assert [t.value for t in wrong.details["score"].terms] == exact.tolist()
    assert (wrong.details["query_token"], wrong.details["key_token"]) == (2, 1)  # row i holds token i // 2's numbers


def test_merge_without_transpose_leaves_the_weights_alone():
    for right, wrong in mistake_cells("merge_without_transpose").values():
        assert right == wrong


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mistake_cell("fill_zero", mistake_module(), BOOK_INPUTS, 0, 0), "what run_mistake"),
        (lambda: mistake_cell(mistake_run("fill_zero"), nn.Linear(3, 4), BOOK_INPUTS, 0, 0), "MultiHeadAttention"),
        (lambda: mistake_cell(mistake_run("fill_zero"), mistake_module(), BOOK_INPUTS[:4], 0, 0), r"\(6, 3\)"),
        (lambda: mistake_cell(mistake_run("fill_zero"), mistake_module(), BOOK_INPUTS, 6, 0), "query 6"),
        (lambda: mistake_cell(mistake_run("fill_zero"), mistake_module(), BOOK_INPUTS + 1, 3, 0), "not made with"),
    ],
)
def test_bad_mistake_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# After the chapter: a cached key beside the same key recomputed, and a sliding window's mask.


@functools.cache
def grown_and_recomputed_keys() -> tuple[torch.Tensor, torch.Tensor]:
    """The small GPT's keys of the book's sentence and four greedy tokens, as the cache grew them (the prompt,
    then one token at a time) and from one pass over the whole text: each (n_layers, n_heads, T, head_dim)."""
    gpt = attention.load_trained_gpt()
    prompt = list(attention.tokenize(attention.BOOK_SENTENCE).ids)
    ids = attention.generate(gpt, prompt, 4).ids
    cached_model = attention.GPTWithCache(gpt)
    with torch.no_grad():
        grown = cached_model.step(torch.tensor([ids[: len(prompt)]]))  # (1, prompt tokens)
        for position in range(len(prompt), len(ids)):
            grown = cached_model.step(torch.tensor([ids[position : position + 1]]), grown.caches)  # (1, 1)
        at_once = cached_model.step(torch.tensor([ids]))  # (1, T)
    return tuple(torch.stack([c.keys[0] for c in step.caches]) for step in (grown, at_once))


@functools.cache
def cache_key_bounds() -> list[torch.Tensor]:
    """How far the grown and recomputed keys may differ by rounding: float32's summation bound, per layer
    (n_heads, T, head_dim)."""
    gpt = attention.load_trained_gpt()
    ids = attention.generate(gpt, list(attention.tokenize(attention.BOOK_SENTENCE).ids), 4).ids
    return rounding_bounds(gpt, list(ids)).keys


def test_a_cached_key_and_its_recomputation_are_the_arrays_cells():
    cached, recomputed = grown_and_recomputed_keys()
    layers, heads, tokens, head_dim = cached.shape
    for layer, head, token, dim in [(0, 0, 0, 0), (layers - 1, heads - 1, tokens - 1, head_dim - 1), (1, 2, 7, 5)]:
        for shown, array in (("cached", cached), ("recomputed", recomputed)):
            found = cache_entry(cached, recomputed, layer, head, token, dim, shown=shown)
            assert (found.row, found.col, found.details["layer"], found.details["head"]) == (token, dim, layer, head)
            assert found.value == float(array[layer, head, token, dim])  # the array's own number, widened exactly
            assert [t.value for t in found.terms] == [
                float(cached[layer, head, token, dim]),
                float(recomputed[layer, head, token, dim]),
            ]
            assert found.total == abs(found.terms[0].value - found.terms[1].value)  # the same float64 subtraction
            bound = float(cache_key_bounds()[layer][head, token, dim])  # two summation orders of one key
            assert found.total <= bound, "the cache holds the keys the whole text makes again"


def test_a_cache_entry_reads_numpy_arrays_as_the_explorer_keeps_them():
    cached, recomputed = (keys.numpy() for keys in grown_and_recomputed_keys())
    cached.flags.writeable = False  # a view's arrays are read-only
    found = cache_entry(cached, recomputed, 2, 1, 3, 4, shown="recomputed")
    assert found.value == float(recomputed[2, 1, 3, 4])  # the array's own number, widened exactly


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda k: cache_entry(k[0], k[1][:, :, :3], 0, 0, 0, 0), "must have one shape"),
        (lambda k: cache_entry(k[0][0], k[1][0], 0, 0, 0, 0), r"n_layers, n_heads, num_tokens, head_dim"),
        (lambda k: cache_entry(k[0], k[1], 0, 0, 99, 0), "token 99 is out of range"),
        (lambda k: cache_entry(k[0], k[1], 0, 0, 0, 0, shown="both"), "cached"),
    ],
)
def test_bad_cache_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call(grown_and_recomputed_keys())


@pytest.mark.parametrize("num_tokens", [1, 6, 9])
@pytest.mark.parametrize("window", [None, 1, 2, 3, 6, 10])
def test_a_window_mask_entry_is_the_masks_own(num_tokens, window):
    mask = attention.sliding_window_mask(num_tokens, window)  # (num_tokens, num_tokens)
    for i in range(num_tokens):
        for j in range(num_tokens):
            found = window_mask_entry(num_tokens, window, i, j)
            assert found.value == float(mask[i, j]) == found.total, (i, j)
            assert found.details["future"] == (j > i) and found.details["back"] == i - j
            assert found.details["too_far"] == (None if window is None else i - j >= window)
            assert len(found.terms) == (1 if window is None else 2)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: window_mask_entry(6, 0, 0, 0), "window must be between 1"),
        (lambda: window_mask_entry(0, 3, 0, 0), "num_tokens must be a whole number"),
        (lambda: window_mask_entry(6, 3, 6, 0), "query 6 is out of range"),
        (lambda: window_mask_entry(6, None, 0, -1), "key -1 is out of range"),
    ],
)
def test_bad_window_mask_input_says_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()
