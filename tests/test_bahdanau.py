"""Stage 0: the RNN encoder–decoder, Bahdanau attention and the bottleneck measure, with untrained weights."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import matmul_error, summation_error, within
from torch import nn

from attention import BOOK_INPUTS, embed_tokens, simplified_attention
from attention.before_chapter.bahdanau import (
    MAX_HIDDEN_SIZE,
    MAX_NUM_TOKENS,
    QUERY_BLOCK,
    additive_scores,
    encoder_decoder,
    gru_input_part,
    gru_step,
    self_attention_contrast,
    seq2seq_weights,
)

# GPT-2 ids of "The cat sat on the mat because it was tired", as tokenize() gives them.
TYPED_IDS = (464, 3797, 3332, 319, 262, 2603, 780, 340, 373, 10032)
SEEDS = range(10)


def assert_distributions(weights: torch.Tensor) -> None:
    assert (weights >= 0).all()
    sums = float(summation_error(2 * weights.shape[-1] + 3, 1.0))  # the softmax's rounding of n weights, then their sum
    assert torch.allclose(weights.sum(dim=-1), torch.ones(weights.shape[:-1]), atol=sums, rtol=0)


def gru_bound(cell, inputs: torch.Tensor, steps: int) -> float:
    """How far ``steps`` GRU steps summed in another order (torch's fused kernels) may drift: each step's
    pre-activations sum d_in + H + 2 terms, n's inner W_hn h + b_hn H + 1 more, then two products; |h| ≤ 1
    (a convex mix of tanh), and the error of one step carries into the next at most once."""
    d_in, hidden = cell.weight_ih.shape[1], cell.weight_hh.shape[1]
    terms = cell.weight_ih.abs() @ inputs.abs().amax(0) + cell.weight_hh.abs().sum(1) + cell.bias_ih.abs()
    scale = max(float((terms + cell.bias_hh.abs()).max()), 1.0)  # Σ|terms| of the largest pre-activation
    return float(summation_error([d_in + hidden + 2, hidden + 1, 2] * steps, scale))


def torch_grus(weights) -> tuple[nn.GRU, nn.GRUCell]:
    """``nn.GRU`` and ``nn.GRUCell`` holding the encoder's and the decoder's weights."""
    hidden_size, d_in = weights.encoder.weight_hh.shape[1], weights.encoder.weight_ih.shape[1]
    with torch.random.fork_rng(devices=[]):
        encoder, decoder = nn.GRU(d_in, hidden_size), nn.GRUCell(hidden_size, hidden_size)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(encoder, name + "_l0").copy_(getattr(weights.encoder, name))
            getattr(decoder, name).copy_(getattr(weights.decoder, name))
    return encoder, decoder


def reference_seq2seq(x: torch.Tensor, weights, num_steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The same model from torch's own GRU modules and the additive score written out in full.

    Returns the final encoder state (hidden_size,) and the contexts (num_steps, hidden_size).
    """
    encoder, decoder = torch_grus(weights)
    encoder_states, _ = encoder(x)  # (num_tokens, hidden_size)
    s = encoder_states[-1]
    contexts = []
    for _ in range(num_steps):
        scores = torch.stack(
            [weights.v_a @ torch.tanh(weights.W_a @ s + weights.U_a @ h_j) for h_j in encoder_states]
        )  # (num_tokens,)
        context = torch.softmax(scores, dim=0) @ encoder_states  # (hidden_size,)
        s = decoder(context.unsqueeze(0), s.unsqueeze(0)).squeeze(0)
        contexts.append(context)
    return encoder_states[-1], torch.stack(contexts)


def sentence(num_tokens: int, seed: int, d_in: int = 8) -> torch.Tensor:
    return embed_tokens(list(range(1000 * seed, 1000 * seed + num_tokens)), d_in, seed)


@functools.cache
def seeded_trace(num_tokens: int, seed: int):
    """The default encoder–decoder on a seeded sentence, with weights from the same seed."""
    return encoder_decoder(sentence(num_tokens, seed), seed=seed)


def mean_share(num_tokens: int, field: str, positions: slice) -> float:
    """A field's share for some token positions, averaged over positions and ``SEEDS``."""
    shares = [getattr(seeded_trace(num_tokens, s), field)[positions].mean() for s in SEEDS]
    return torch.stack(shares).mean().item()


# Shapes and distributions


def test_shapes_for_the_book_inputs():
    t = encoder_decoder(BOOK_INPUTS, hidden_size=8)
    assert t.inputs.shape == (6, 3)
    assert t.encoder_states.shape == (6, 8)
    assert t.final_state.shape == (8,)
    assert t.decoder_states.shape == (6, 8)
    assert t.bahdanau_scores.shape == t.bahdanau_weights.shape == (6, 6)
    assert t.attention_contexts.shape == (6, 8)
    assert t.final_state_influence.shape == t.attention_context_influence.shape == (6,)
    assert torch.equal(t.final_state, t.encoder_states[-1])


def test_num_decoder_steps_sets_the_rows():
    t = encoder_decoder(BOOK_INPUTS, hidden_size=4, num_decoder_steps=3, attention_size=5)
    assert t.decoder_states.shape == (3, 4)
    assert t.bahdanau_weights.shape == (3, 6)
    assert t.attention_contexts.shape == (3, 4)


def test_book_inputs_give_distributions_and_shares():
    t = encoder_decoder(BOOK_INPUTS)
    assert_distributions(t.bahdanau_weights)
    assert_distributions(t.final_state_share)
    assert_distributions(t.attention_context_share)
    expected, bound = t.bahdanau_weights @ t.encoder_states, matmul_error(t.bahdanau_weights, t.encoder_states)
    assert within(t.attention_contexts, expected, bound)


def test_a_typed_sentence_works_at_any_d_in():
    x = embed_tokens(TYPED_IDS, 768, seed=7)
    t = encoder_decoder(x, hidden_size=16, seed=7)
    assert t.bahdanau_weights.shape == (10, 10)
    assert_distributions(t.bahdanau_weights)
    assert torch.isfinite(t.final_state_influence).all()
    assert (t.attention_context_influence > 0).all()


@settings(max_examples=25, deadline=None)
@given(
    num_tokens=st.integers(1, 12),
    d_in=st.integers(1, 8),
    hidden_size=st.integers(1, 8),
    num_steps=st.integers(1, 5),
    seed=st.integers(0, 2**31),
    scale=st.floats(0.01, 100.0),
)
def test_bahdanau_weights_are_distributions_over_encoder_positions(
    num_tokens, d_in, hidden_size, num_steps, seed, scale
):
    x = torch.randn(num_tokens, d_in, generator=torch.Generator().manual_seed(seed)) * scale
    t = encoder_decoder(x, hidden_size, num_steps, seed=seed)
    assert t.bahdanau_weights.shape == (num_steps, num_tokens)
    assert_distributions(t.bahdanau_weights)
    assert torch.isfinite(t.final_state_influence).all()
    assert torch.isfinite(t.attention_context_influence).all()


# Oracles: torch's own GRU and autograd's Jacobian


def test_encoder_and_decoder_match_torch_gru_modules():
    x = embed_tokens(TYPED_IDS, 5, seed=3)
    t = encoder_decoder(x, hidden_size=6, num_decoder_steps=4, seed=3)
    encoder, decoder = torch_grus(seq2seq_weights(5, 6, seed=3))
    with torch.no_grad():
        expected_states, _ = encoder(x)
        previous = torch.cat([t.final_state.unsqueeze(0), t.decoder_states[:-1]])  # s_{i-1} for each step
        expected_decoder = decoder(t.attention_contexts, previous)
    weights = seq2seq_weights(5, 6, seed=3)  # torch's fused GRU sums in its own order
    encoder_bound = gru_bound(weights.encoder, x, len(x))
    assert torch.allclose(t.encoder_states, expected_states, atol=encoder_bound, rtol=0)
    decoder_bound = gru_bound(weights.decoder, t.attention_contexts, 1)  # one step from t's own contexts, states
    assert torch.allclose(t.decoder_states, expected_decoder, atol=decoder_bound, rtol=0)


def test_bahdanau_scores_are_v_tanh_of_w_s_plus_u_h():
    t = encoder_decoder(BOOK_INPUTS, hidden_size=5, num_decoder_steps=3, attention_size=7, seed=11)
    weights = seq2seq_weights(3, 5, 7, seed=11)
    previous = torch.cat([t.final_state.unsqueeze(0), t.decoder_states[:-1]])
    for i, s in enumerate(previous):
        for j, h_j in enumerate(t.encoder_states):
            expected = weights.v_a @ torch.tanh(weights.W_a @ s + weights.U_a @ h_j)
            inside = float((weights.W_a.abs() @ s.abs() + weights.U_a.abs() @ h_j.abs()).max())  # tanh's Σ|terms|
            bound = summation_error([s.numel() + h_j.numel(), len(weights.v_a)], weights.v_a.abs().sum() * inside)
            assert torch.isclose(t.bahdanau_scores[i, j], expected, atol=float(bound), rtol=0)
    assert torch.allclose(t.bahdanau_weights, torch.softmax(t.bahdanau_scores, dim=-1))  # one softmax: a few eps


@pytest.mark.parametrize("influence_step", [0, 2])
def test_influence_is_the_norm_of_autograds_jacobian(influence_step):
    x = embed_tokens(TYPED_IDS[:7], 4, seed=5)
    t = encoder_decoder(x, hidden_size=6, influence_step=influence_step, seed=5)
    weights = seq2seq_weights(4, 6, seed=5)
    jacobian_final = torch.autograd.functional.jacobian(lambda v: reference_seq2seq(v, weights, 1)[0], x)
    jacobian_context = torch.autograd.functional.jacobian(
        lambda v: reference_seq2seq(v, weights, influence_step + 1)[1][-1], x
    )  # (hidden_size, num_tokens, d_in)
    assert torch.allclose(t.final_state_influence, jacobian_final.pow(2).sum(dim=(0, 2)).sqrt(), rtol=1e-4)
    assert torch.allclose(t.attention_context_influence, jacobian_context.pow(2).sum(dim=(0, 2)).sqrt(), rtol=1e-4)


def test_gru_step_matches_gru_cell_for_one_step():
    weights = seq2seq_weights(4, 4, seed=2)
    x, h = torch.linspace(0, 1, 4), torch.linspace(-1, 1, 4)
    _, cell = torch_grus(seq2seq_weights(4, 4, seed=2))  # the decoder cell: 4 inputs, 4 hidden
    with torch.no_grad():
        expected = cell(x.unsqueeze(0), h.unsqueeze(0)).squeeze(0)
    bound = gru_bound(weights.decoder, x.unsqueeze(0), 1)  # GRUCell's fused kernel sums in its own order
    assert torch.allclose(
        gru_step(weights.decoder, gru_input_part(weights.decoder, x), h), expected, atol=bound, rtol=0
    )


def test_weights_use_nn_linears_fan_in_ranges():
    weights = seq2seq_weights(768, 16, 4, seed=0)
    bounds = {
        "encoder input": (weights.encoder.weight_ih, 768),
        "encoder hidden": (weights.encoder.weight_hh, 16),
        "decoder input": (weights.decoder.weight_ih, 16),
        "W_a": (weights.W_a, 16),
        "U_a": (weights.U_a, 16),
        "v_a": (weights.v_a, 4),
    }
    for tensor, fan_in in bounds.values():
        bound = 1 / math.sqrt(fan_in)
        assert tensor.abs().max() <= bound
        assert tensor.abs().max() > 0.9 * bound  # the whole range is used, not a narrower one


# Determinism


def test_same_seed_same_trace_and_the_global_generator_is_untouched():
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first = encoder_decoder(BOOK_INPUTS, seed=42)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(1)
    second = encoder_decoder(BOOK_INPUTS, seed=42)
    for name in ("encoder_states", "decoder_states", "bahdanau_weights", "final_state_influence"):
        assert torch.equal(getattr(first, name), getattr(second, name))
    assert torch.equal(first.attention_context_influence, second.attention_context_influence)


def test_works_under_no_grad_and_inference_mode_and_leaves_the_inputs_alone():
    expected = encoder_decoder(BOOK_INPUTS)
    with torch.no_grad():
        under_no_grad = encoder_decoder(BOOK_INPUTS)
    with torch.inference_mode():
        under_inference_mode = encoder_decoder(BOOK_INPUTS * 1.0)
    assert torch.equal(under_no_grad.final_state_influence, expected.final_state_influence)
    assert torch.equal(under_inference_mode.attention_context_influence, expected.attention_context_influence)
    expected.inputs[0, 0] = 5.0
    assert BOOK_INPUTS[0, 0] == pytest.approx(0.43)


def test_different_seeds_give_different_weights():
    first = encoder_decoder(BOOK_INPUTS, seed=1)
    second = encoder_decoder(BOOK_INPUTS, seed=2)
    assert not torch.allclose(first.encoder_states, second.encoder_states)
    assert not torch.allclose(first.bahdanau_weights, second.bahdanau_weights)


# The bottleneck: what the page may claim, averaged over seeds


def test_the_final_states_share_of_the_first_token_shrinks_as_the_sentence_grows():
    shares = [mean_share(n, "final_state_share", slice(0, 1)) for n in (4, 6, 12, 24)]
    assert shares == sorted(shares, reverse=True)
    assert shares[-1] < shares[1] / 100  # measured: about 0.03 at 6 tokens, 3e-5 at 24


def test_in_a_long_sentence_the_final_state_depends_on_early_tokens_far_less_than_on_late_ones():
    first_quarter = mean_share(24, "final_state_share", slice(0, 6))
    last_quarter = mean_share(24, "final_state_share", slice(18, 24))
    assert first_quarter < last_quarter / 100  # measured: about 7e-5 against 0.16


def test_each_token_further_back_keeps_about_two_thirds_of_the_next_ones_influence():
    log_ratios = []
    for s in SEEDS:
        influence = seeded_trace(24, s).final_state_influence
        log_ratios.append((influence[:-1].log() - influence[1:].log()).mean())
    factor = torch.stack(log_ratios).mean().exp().item()
    assert 0.5 < factor < 0.8  # measured: about 0.66


def test_the_attention_context_keeps_about_an_equal_share_for_early_tokens():
    context_first = mean_share(24, "attention_context_share", slice(0, 6))
    final_first = mean_share(24, "final_state_share", slice(0, 6))
    assert 0.5 / 24 < context_first < 2 / 24  # measured: about 0.044; uniform is 0.042
    assert context_first > 100 * final_first


def test_the_context_depends_on_the_first_token_more_than_the_final_state_does_for_every_seed():
    for num_tokens in (4, 24):
        for s in SEEDS:
            t = seeded_trace(num_tokens, s)
            assert t.attention_context_influence[0] > t.final_state_influence[0]


def test_untrained_bahdanau_weights_are_close_to_uniform():
    t = seeded_trace(24, 0)
    assert torch.allclose(t.bahdanau_weights, torch.full((24, 24), 1 / 24), atol=0.01)


# Self-attention: the same sequence attending to itself


def test_self_attention_contrast_shapes_and_distributions():
    c = self_attention_contrast(BOOK_INPUTS, attention_size=4)
    for tensor in (c.dot_product_scores, c.dot_product_weights, c.additive_scores, c.additive_weights):
        assert tensor.shape == (6, 6)
    assert_distributions(c.dot_product_weights)
    assert_distributions(c.additive_weights)
    assert c.additive_num_parameters == 2 * 4 * 3 + 4


def test_dot_product_half_is_simplified_attention():
    c = self_attention_contrast(BOOK_INPUTS)
    book = simplified_attention(BOOK_INPUTS)
    assert torch.equal(c.dot_product_weights, book.attn_weights)
    assert torch.isclose(c.dot_product_scores[1, 0], torch.tensor(0.9544))  # the book's x^2 · x^1


def test_additive_half_is_additive_scores_row_by_row_and_seeded():
    x = embed_tokens(TYPED_IDS, 6, seed=1)
    c = self_attention_contrast(x, attention_size=3, seed=9)
    generator = torch.Generator().manual_seed(9)
    W_a, U_a = ((torch.rand(3, 6, generator=generator) * 2 - 1) / math.sqrt(6) for _ in range(2))
    v_a = (torch.rand(3, generator=generator) * 2 - 1) / math.sqrt(3)
    expected = torch.stack([additive_scores(W_a @ x_i, x @ U_a.T, v_a) for x_i in x])
    inside = float((x.abs() @ W_a.abs().T).max() + (x.abs() @ U_a.abs().T).max())  # tanh's Σ|terms|
    bound = float(summation_error([2 * x.shape[1], len(v_a)], v_a.abs().sum() * inside))  # blocks sum in other orders
    assert torch.allclose(c.additive_scores, expected, atol=bound, rtol=0)
    assert torch.equal(self_attention_contrast(x, attention_size=3, seed=9).additive_weights, c.additive_weights)
    assert not torch.allclose(
        self_attention_contrast(x, attention_size=3, seed=10).additive_weights, c.additive_weights
    )


def test_additive_half_in_query_blocks_equals_one_query_at_a_time():
    num_tokens = 2 * QUERY_BLOCK + 5  # two full blocks and a short one
    x = embed_tokens(list(range(1000, 1000 + num_tokens)), 3, seed=2)
    c = self_attention_contrast(x, attention_size=4, seed=3)
    generator = torch.Generator().manual_seed(3)
    W_a, U_a = ((torch.rand(4, 3, generator=generator) * 2 - 1) / math.sqrt(3) for _ in range(2))
    v_a = (torch.rand(4, generator=generator) * 2 - 1) / 2
    expected = torch.stack([additive_scores(W_a @ x_i, x @ U_a.T, v_a) for x_i in x])
    inside = float((x.abs() @ W_a.abs().T).max() + (x.abs() @ U_a.abs().T).max())  # tanh's Σ|terms|
    bound = float(summation_error([2 * x.shape[1], len(v_a)], v_a.abs().sum() * inside))  # blocks sum in other orders
    assert c.additive_scores.shape == (num_tokens, num_tokens)
    assert torch.allclose(c.additive_scores, expected, atol=bound, rtol=0)


@settings(max_examples=25, deadline=None)
@given(num_tokens=st.integers(1, 10), d_in=st.integers(1, 6), seed=st.integers(0, 2**31), scale=st.floats(0.01, 100.0))
def test_self_attention_rows_are_distributions(num_tokens, d_in, seed, scale):
    x = torch.rand(num_tokens, d_in, generator=torch.Generator().manual_seed(seed)) * scale
    c = self_attention_contrast(x, attention_size=4, seed=seed)
    assert_distributions(c.dot_product_weights)
    assert_distributions(c.additive_weights)


# Bad input


@pytest.mark.parametrize(
    "inputs",
    [
        torch.empty(0, 3),
        torch.rand(3),
        torch.rand(1, 3, 3),
        [[0.1, 0.2]],
        torch.tensor([[1, 2, 3]]),
        torch.tensor([[0.1, float("nan")]]),
        torch.rand(MAX_NUM_TOKENS + 1, 2),
        torch.rand(2, 0),
    ],
    ids=["empty", "1-d", "3-d", "list", "token-ids", "nan", "too-long", "no-dimensions"],
)
def test_bad_inputs_raise_a_value_error(inputs):
    with pytest.raises(ValueError):
        encoder_decoder(inputs)
    with pytest.raises(ValueError):
        self_attention_contrast(inputs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"hidden_size": 0},
        {"hidden_size": MAX_HIDDEN_SIZE + 1},
        {"hidden_size": 2.5},
        {"hidden_size": True},
        {"attention_size": 0},
        {"num_decoder_steps": 0},
        {"num_decoder_steps": MAX_NUM_TOKENS + 1},
        {"influence_step": -1},
        {"influence_step": 6},
        {"num_decoder_steps": 2, "influence_step": 2},
        {"influence_step": True},
        {"seed": -1},
        {"seed": 1.5},
        {"seed": True},
        {"seed": 2**63},
    ],
)
def test_bad_settings_raise_a_value_error(kwargs):
    with pytest.raises(ValueError):
        encoder_decoder(BOOK_INPUTS, **kwargs)


def test_error_messages_speak_to_a_learner():
    with pytest.raises(ValueError, match="embed_tokens"):
        encoder_decoder(torch.tensor([[464, 3797]]))
    with pytest.raises(ValueError, match="at least one token"):
        encoder_decoder(torch.empty(0, 3))
    with pytest.raises(ValueError, match=f"between 1 and {MAX_HIDDEN_SIZE}"):
        self_attention_contrast(BOOK_INPUTS, attention_size=MAX_HIDDEN_SIZE + 1)
