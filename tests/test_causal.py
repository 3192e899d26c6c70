"""Stage 5, causal attention: the book's masked weights, both masking routes, the ``mask`` buffer,
and an oracle test against the book's own ``CausalAttention``."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import summation_error

from attention import (
    CausalAttention,
    causal_mask,
    compare_masking,
    mask_by_renormalizing,
    mask_with_neg_inf,
    trace,
)
from tests.book_listings import CausalAttention as BookCausalAttention

BOOK = {"atol": 1e-4, "rtol": 0}
BOOK_MASKED_WEIGHTS = torch.tensor(
    [
        [1.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.5517, 0.4483, 0.0000, 0.0000, 0.0000, 0.0000],
        [0.3800, 0.3097, 0.3103, 0.0000, 0.0000, 0.0000],
        [0.2758, 0.2460, 0.2462, 0.2319, 0.0000, 0.0000],
        [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0000],
        [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529],
    ]
)
BOOK_CAUSAL_OUTPUT = torch.tensor(
    [
        [-0.4519, 0.2216],
        [-0.5874, 0.0058],
        [-0.6300, -0.0632],
        [-0.5675, -0.0843],
        [-0.5526, -0.0981],
        [-0.5299, -0.1081],
    ]
)


def test_causal_mask_hides_the_future():
    expected = torch.tensor([[False, True, True], [False, False, True], [False, False, False]])

    assert torch.equal(causal_mask(3), expected)


def test_book_masked_weights_by_both_routes(book_scaled_scores):
    comparison = compare_masking(book_scaled_scores)

    assert torch.allclose(comparison.weights_neg_inf, BOOK_MASKED_WEIGHTS, **BOOK)
    assert torch.allclose(comparison.weights_renormalized, BOOK_MASKED_WEIGHTS, **BOOK)
    assert torch.allclose(mask_with_neg_inf(book_scaled_scores), BOOK_MASKED_WEIGHTS, **BOOK)
    assert torch.allclose(mask_by_renormalizing(torch.softmax(book_scaled_scores, -1)), BOOK_MASKED_WEIGHTS, **BOOK)
    assert comparison.max_abs_difference < 1e-6


def test_compare_masking_fields(book_scaled_scores):
    comparison = compare_masking(book_scaled_scores)
    upper = causal_mask(6)

    assert torch.equal(comparison.mask, upper)
    assert torch.equal(comparison.unmasked_weights, torch.softmax(book_scaled_scores, dim=-1))
    assert torch.isneginf(comparison.masked_scores[upper]).all()
    assert torch.equal(comparison.masked_scores[~upper], book_scaled_scores[~upper])


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 8), spread=st.floats(0.1, 5.0))
def test_both_masking_routes_agree(seed, num_tokens, spread):
    scores = torch.randn(num_tokens, num_tokens, generator=torch.Generator().manual_seed(seed)) * spread
    comparison = compare_masking(scores)
    upper = causal_mask(num_tokens)

    # A softmax of n scores rounds n + 2 times; renormalizing adds a row sum (n) and a division (1).
    assert comparison.max_abs_difference <= summation_error(2 * num_tokens + 3, 1.0)
    for weights in (comparison.weights_neg_inf, comparison.weights_renormalized):
        assert (weights[upper] == 0).all()
        sums = summation_error(2 * num_tokens + 3, 1.0)  # the weights' own rounding, then their sum
        assert torch.allclose(weights.sum(dim=-1), torch.ones(num_tokens), atol=sums, rtol=0)


def test_compare_masking_needs_square_scores():
    with pytest.raises(ValueError, match="square"):
        compare_masking(torch.ones(2, 3))


def test_book_causal_attention_output(book_batch):
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)

    context_vecs = ca(book_batch)

    assert context_vecs.shape == (2, 6, 2)
    assert torch.allclose(context_vecs[0], BOOK_CAUSAL_OUTPUT, **BOOK)
    assert torch.allclose(context_vecs[1], BOOK_CAUSAL_OUTPUT, **BOOK)


def test_mask_is_a_registered_buffer_named_mask():
    ca = CausalAttention(3, 2, 5, 0.0)

    assert "mask" in ca.state_dict()
    assert "mask" in dict(ca.named_buffers())
    assert "mask" not in dict(ca.named_parameters())
    assert torch.equal(ca.mask, causal_mask(5))


def test_mask_is_sliced_to_the_number_of_tokens(random_tensor):
    steps = trace(CausalAttention(3, 2, 8, 0.0), random_tensor(0, 2, 3, 3))

    assert torch.equal(steps.mask, causal_mask(3))
    assert steps.attn_weights.shape == (2, 1, 3, 3)


def test_weights_are_zero_above_the_diagonal(book_batch):
    steps = trace(CausalAttention(3, 2, 6, 0.0), book_batch)
    upper = causal_mask(6)

    assert (steps.attn_weights[..., upper] == 0).all()
    assert torch.isneginf(steps.masked_scores[..., upper]).all()
    sums = float(summation_error(2 * 6 + 3, 1.0))  # the softmax's rounding of 6 weights, then their sum: 1.8e-6
    assert torch.allclose(steps.attn_weights.sum(dim=-1), torch.ones(2, 1, 6), atol=sums, rtol=0)


def test_same_seed_same_parameters_as_the_book():
    torch.manual_seed(123)
    book = BookCausalAttention(3, 2, 6, 0.0)
    torch.manual_seed(123)
    ours = CausalAttention(3, 2, 6, 0.0)

    assert dict(ours.named_parameters()).keys() == dict(book.named_parameters()).keys()
    for name, parameter in book.named_parameters():
        assert torch.equal(ours.get_parameter(name), parameter)


@pytest.mark.parametrize("dropout", [0.0, 0.5])
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_book_state_dict_loads_and_gives_the_books_output(book_batch, dropout, qkv_bias):
    book = BookCausalAttention(3, 4, 6, dropout, qkv_bias)
    ours = CausalAttention(3, 4, 6, dropout, qkv_bias)
    ours.load_state_dict(book.state_dict())  # the book's mask is float 0/1

    assert torch.equal(ours.mask, causal_mask(6))
    for mode in ("eval", "train"):
        getattr(book, mode)()
        getattr(ours, mode)()
        torch.manual_seed(7)
        expected = book(book_batch)
        torch.manual_seed(7)
        assert torch.allclose(ours(book_batch), expected, atol=1e-6), mode


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(2, 6), data=st.data())
def test_future_tokens_never_change_past_outputs(future_changed, seed, num_tokens, data):
    t = data.draw(st.integers(1, num_tokens - 1), label="first changed position")
    torch.manual_seed(seed)
    ca = CausalAttention(4, 3, 6, 0.0).eval()
    x, changed = future_changed(seed, t, 2, num_tokens, 4)

    before, after = ca(x), ca(changed)

    # a past row sums the same terms in the same order; a masked future key adds exactly 0 (weight 0 × value)
    assert torch.equal(before[:, :t], after[:, :t])
    assert not torch.allclose(before[:, t:], after[:, t:])


def test_more_tokens_than_context_length_is_a_clear_error(book_batch):
    with pytest.raises(ValueError, match="6 tokens but context_length is 4"):
        CausalAttention(3, 2, 4, 0.0)(book_batch)


@pytest.mark.parametrize(
    ("x", "words"),
    [
        (torch.ones(2, 6, 4), "d_in=3"),
        (torch.ones(2, 0, 3), "empty"),
        (torch.ones(6, 3), "unsqueeze"),
        (torch.ones(3), r"\(b, num_tokens, d_in\)"),
    ],
    ids=["wrong-embedding-size", "empty", "unbatched", "one-dimensional"],
)
def test_bad_inputs_are_clear_errors(x, words):
    with pytest.raises(ValueError, match=words):
        CausalAttention(3, 2, 6, 0.0)(x)


@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5, float("nan"), True])
def test_dropout_outside_zero_to_one_is_a_clear_error(dropout):
    with pytest.raises(ValueError, match="dropout"):
        CausalAttention(3, 2, 6, dropout)


def test_context_length_must_be_positive():
    with pytest.raises(ValueError, match="context_length"):
        CausalAttention(3, 2, 0, 0.0)
