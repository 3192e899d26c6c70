"""Stage 6, dropout: the book's printed draws, ``F.dropout``'s exact draws from a private generator,
the 1/(1-p) scaling, and the average of many draws converging to the undropped weights."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import EPS32, summation_error
from torch import nn

from attention import (
    CausalAttention,
    MultiHeadAttention,
    apply_dropout,
    causal_mask,
    drop_with_mask,
    dropout_average,
    dropout_keep_mask,
    mask_with_neg_inf,
    trace,
)

BOOK = {"atol": 1e-4, "rtol": 0}
BOOK_DROPPED_ONES = torch.tensor(
    [
        [2.0, 2.0, 0.0, 2.0, 2.0, 0.0],
        [0.0, 0.0, 0.0, 2.0, 0.0, 2.0],
        [2.0, 2.0, 2.0, 2.0, 0.0, 2.0],
        [0.0, 2.0, 2.0, 0.0, 0.0, 2.0],
        [0.0, 2.0, 0.0, 2.0, 0.0, 2.0],
        [0.0, 2.0, 2.0, 2.0, 2.0, 0.0],
    ]
)
BOOK_DROPPED_WEIGHTS = torch.tensor(
    [
        [2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.7599, 0.6194, 0.6206, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.4921, 0.4925, 0.0000, 0.0000, 0.0000],
        [0.0000, 0.3966, 0.0000, 0.3775, 0.0000, 0.0000],
        [0.0000, 0.3327, 0.3331, 0.3084, 0.3331, 0.0000],
    ]
)
DROPOUT_P = st.floats(0.05, 0.9)


def causal_weights(seed: int, num_tokens: int) -> torch.Tensor:
    """Random rows of causal attention weights, (num_tokens, num_tokens)."""
    scores = torch.randn(num_tokens, num_tokens, generator=torch.Generator().manual_seed(seed))
    return mask_with_neg_inf(scores)


def test_book_dropout_of_ones():
    torch.manual_seed(123)
    book = nn.Dropout(0.5)(torch.ones(6, 6))
    draw = apply_dropout(torch.ones(6, 6), 0.5, seed=123)

    assert torch.equal(book, BOOK_DROPPED_ONES)
    assert torch.equal(draw.dropped_weights, BOOK_DROPPED_ONES)
    assert torch.equal(draw.keep, BOOK_DROPPED_ONES != 0)


def test_book_dropout_of_causal_weights(book_scaled_scores):
    draw = apply_dropout(mask_with_neg_inf(book_scaled_scores), 0.5, seed=123)

    assert torch.allclose(draw.dropped_weights, BOOK_DROPPED_WEIGHTS, **BOOK)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 7), batch=st.integers(1, 3), p=DROPOUT_P)
def test_draws_equal_f_dropout_bitwise(random_tensor, seed, num_tokens, batch, p):
    weights = random_tensor(seed, batch, num_tokens, num_tokens)  # (b, T, T)
    torch.manual_seed(seed)
    expected = F.dropout(weights, p, training=True)

    assert torch.equal(apply_dropout(weights, p, seed=seed).dropped_weights, expected)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 7), batch=st.integers(1, 3), p=DROPOUT_P)
def test_drop_with_mask_is_nn_dropout_draw_for_draw_and_returns_its_keep_mask(
    random_tensor, seed, num_tokens, batch, p
):
    weights = random_tensor(seed, batch, num_tokens, num_tokens)  # (b, T, T)
    torch.manual_seed(seed)
    expected = nn.Dropout(p)(weights)
    after_expected = torch.get_rng_state()
    torch.manual_seed(seed)

    dropped, keep = drop_with_mask(nn.Dropout(p), weights)

    assert torch.equal(dropped, expected)
    assert torch.equal(torch.get_rng_state(), after_expected)  # the same draws, no more
    assert torch.equal(keep, dropout_keep_mask(tuple(weights.shape), p, seed))


def test_drop_with_mask_draws_nothing_in_eval_mode_or_with_zero_p():
    weights = torch.rand(2, 4, 4)
    before = torch.get_rng_state()

    assert drop_with_mask(nn.Dropout(0.5).eval(), weights) == (weights, None)
    assert drop_with_mask(nn.Dropout(0.0), weights) == (weights, None)
    assert torch.equal(torch.get_rng_state(), before)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 7), p=DROPOUT_P)
def test_survivors_are_scaled_by_one_over_one_minus_p(seed, num_tokens, p):
    weights = causal_weights(seed, num_tokens)
    draw = apply_dropout(weights, p, seed=seed)

    assert draw.keep.dtype == torch.bool
    assert torch.allclose(draw.dropped_weights[draw.keep], weights[draw.keep] / (1 - p), rtol=1e-6, atol=0)
    assert (draw.dropped_weights[~draw.keep] == 0).all()
    assert torch.allclose(draw.row_sums, draw.dropped_weights.sum(dim=-1))
    assert draw.p == p and draw.training


def test_same_seed_same_draw_other_seed_other_draw():
    weights = torch.full((8, 8), 0.125)

    first, again = apply_dropout(weights, 0.5, seed=1), apply_dropout(weights, 0.5, seed=1)
    other = apply_dropout(weights, 0.5, seed=2)

    assert torch.equal(first.keep, again.keep)
    assert not torch.equal(first.keep, other.keep)


def test_seeded_draws_leave_the_global_random_state_alone():
    before = torch.get_rng_state()
    apply_dropout(torch.ones(4, 4), 0.5, seed=3)
    dropout_average(torch.ones(4, 4), 0.5, num_samples=5)

    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.parametrize(("p", "training"), [(0.5, False), (0.0, True)])
def test_eval_mode_or_zero_p_leaves_the_weights_untouched(p, training):
    weights = causal_weights(0, 5)
    draw = apply_dropout(weights, p, seed=123, training=training)

    assert torch.equal(draw.dropped_weights, weights)
    assert draw.keep.all()
    sums = float(summation_error(2 * 5 + 3, 1.0))  # the softmax's rounding of 5 weights, then their sum: 1.5e-6
    assert torch.allclose(draw.row_sums, torch.ones(5), atol=sums, rtol=0)


def test_a_row_no_longer_sums_to_one_after_dropout():
    draw = apply_dropout(causal_weights(0, 6), 0.5, seed=123)

    assert not torch.allclose(draw.row_sums, torch.ones(6))


def test_keep_mask_keeps_about_one_minus_p():
    keep = dropout_keep_mask((100, 100), 0.3, seed=0)

    assert keep.dtype == torch.bool and keep.shape == (100, 100)
    assert math.isclose(keep.float().mean().item(), 0.7, abs_tol=0.03)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 5), p=DROPOUT_P, cls=st.sampled_from(["ca", "mha"]))
def test_module_in_train_mode_draws_what_a_seeded_trace_draws(random_tensor, seed, num_tokens, p, cls):
    torch.manual_seed(seed)
    module = CausalAttention(4, 4, 5, p) if cls == "ca" else MultiHeadAttention(4, 4, 5, p, num_heads=2)
    x = random_tensor(seed, 2, num_tokens, 4)
    module.train()
    torch.manual_seed(seed)
    expected = module(x)

    steps = trace(module, x, training=True, seed=seed)

    assert torch.equal(steps.output, expected)  # forward is steps().output, with the same draws
    assert steps.dropout_mask is not None
    # ÷ (1 − p) against × 1/(1 − p): four roundings of eps/2 in all, and a little for the check's own arithmetic
    rescaled = steps.attn_weights * steps.dropout_mask / (1 - p)
    assert torch.allclose(steps.dropped_weights, rescaled, rtol=3 * EPS32, atol=0)


def test_average_of_many_draws_converges_to_the_weights(book_scaled_scores):
    weights = mask_with_neg_inf(book_scaled_scores)  # (6, 6)
    average = dropout_average(weights, 0.5, num_samples=1000)

    assert average.num_samples[0] == 1 and average.num_samples[-1] == 1000
    assert (average.num_samples.diff() > 0).all()
    assert average.max_abs_error.shape == average.num_samples.shape
    assert average.max_abs_error[-1] < average.max_abs_error[0] / 10
    assert average.max_abs_error[-1] < 0.05
    assert torch.allclose(average.mean_weights, weights, atol=0.05)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 6), p=st.floats(0.1, 0.6))
def test_dropout_mean_over_many_seeds_approaches_the_eval_weights(seed, num_tokens, p):
    weights = causal_weights(seed, num_tokens)
    num_samples = 400
    average = dropout_average(weights, p, num_samples=num_samples, seed=seed)
    # Each entry's mean has standard deviation w * sqrt(p / (1 - p) / n); allow six of them.
    bound = 6 * weights.max().item() * math.sqrt(p / (1 - p) / num_samples)

    assert average.max_abs_error[-1] < bound
    assert (average.mean_weights[causal_mask(num_tokens)] == 0).all()


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_p_outside_zero_to_one_is_a_clear_error(p):
    for call in (
        lambda: apply_dropout(torch.ones(2, 2), p),
        lambda: dropout_keep_mask((2, 2), p),
        lambda: dropout_average(torch.ones(2, 2), p),
    ):
        with pytest.raises(ValueError, match="dropout must be at least 0 and below 1"):
            call()


@pytest.mark.parametrize("num_samples", [0, 5000])
def test_dropout_average_rejects_a_bad_number_of_samples(num_samples):
    with pytest.raises(ValueError, match="num_samples"):
        dropout_average(torch.ones(2, 2), 0.5, num_samples=num_samples)


@pytest.mark.parametrize("p", [0.0, 0.2, 0.5])
def test_dropout_average_sums_the_same_draws_as_apply_dropout(p):
    """Its own generator gives draw k exactly ``apply_dropout(..., seed=seed + k - 1)``'s, and the global
    generator is left alone (no turn under the process-wide seeding lock per draw)."""
    weights = torch.softmax(torch.randn(2, 7, 7, generator=torch.Generator().manual_seed(5)), dim=-1)
    total = torch.zeros_like(weights, dtype=torch.float64)
    for k in range(20):
        total += apply_dropout(weights, p, seed=40 + k).dropped_weights
    before = torch.random.get_rng_state()
    average = dropout_average(weights, p, num_samples=20, seed=40)
    assert torch.equal(average.mean_weights, (total / 20).to(weights.dtype))
    assert torch.equal(torch.random.get_rng_state(), before)
