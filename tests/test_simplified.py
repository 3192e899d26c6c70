"""Stage 3, simplified self-attention: the book's printed numbers, the loop against the matrix form,
and the three normalizations."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import summation_error

from attention import (
    BOOK_INPUTS,
    attention_loop,
    compare_normalizations,
    context_contributions,
    normalize_by_sum,
    overflow_demo,
    simplified_attention,
    softmax_naive,
)

BOOK = {"atol": 1e-4, "rtol": 0}
SCORES_2 = torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
BY_SUM_2 = torch.tensor([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])
SOFTMAX_2 = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
CONTEXT_VEC_2 = torch.tensor([0.4419, 0.6515, 0.5683])
ALL_CONTEXT_VECS = torch.tensor(
    [
        [0.4421, 0.5931, 0.5790],
        [0.4419, 0.6515, 0.5683],
        [0.4431, 0.6496, 0.5671],
        [0.4304, 0.6298, 0.5510],
        [0.4671, 0.5910, 0.5266],
        [0.4177, 0.6503, 0.5645],
    ]
)


@pytest.mark.parametrize("attend", [attention_loop, simplified_attention])
def test_book_scores_weights_and_context_vector_for_journey(attend):
    result = attend(BOOK_INPUTS)

    assert torch.allclose(result.attn_scores[1], SCORES_2, **BOOK)
    assert torch.allclose(result.attn_weights[1], SOFTMAX_2, **BOOK)
    assert torch.allclose(result.context_vecs[1], CONTEXT_VEC_2, **BOOK)


@pytest.mark.parametrize("attend", [attention_loop, simplified_attention])
def test_book_context_vectors_for_all_tokens(attend):
    assert torch.allclose(attend(BOOK_INPUTS).context_vecs, ALL_CONTEXT_VECS, **BOOK)


def test_book_normalizations_of_journeys_scores():
    comparison = compare_normalizations(SCORES_2)

    assert torch.allclose(normalize_by_sum(SCORES_2), BY_SUM_2, **BOOK)
    assert torch.allclose(softmax_naive(SCORES_2), SOFTMAX_2, **BOOK)
    assert torch.allclose(comparison.by_sum, BY_SUM_2, **BOOK)
    assert torch.allclose(comparison.naive_softmax, SOFTMAX_2, **BOOK)
    assert torch.allclose(comparison.torch_softmax, SOFTMAX_2, **BOOK)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 7), d_in=st.integers(1, 5))
def test_loop_equals_matrix_form(random_tensor, seed, num_tokens, d_in):
    inputs = random_tensor(seed, num_tokens, d_in)  # (num_tokens, d_in)
    loop, matrix = attention_loop(inputs), simplified_attention(inputs)

    assert torch.allclose(loop.attn_scores, matrix.attn_scores, atol=1e-6)
    assert torch.allclose(loop.attn_weights, matrix.attn_weights, atol=1e-6)
    assert torch.allclose(loop.context_vecs, matrix.context_vecs, atol=1e-6)
    assert torch.allclose(matrix.attn_weights.sum(dim=-1), torch.ones(num_tokens), atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), num_tokens=st.integers(1, 8), scale=st.floats(0.1, 20.0))
def test_naive_normalizations_on_moderate_scores(seed, num_tokens, scale):
    scores = torch.randn(3, num_tokens, generator=torch.Generator().manual_seed(seed)) * scale  # (3, num_tokens)
    positive = scores.abs() + 0.1  # (3, num_tokens)

    assert torch.allclose(softmax_naive(scores), torch.softmax(scores, dim=-1), atol=1e-6)
    assert torch.allclose(normalize_by_sum(positive).sum(dim=-1), torch.ones(3), atol=1e-6)
    # ÷ then × the row sum (n positive terms, maybe summed in another order): relative roundings only
    rescaled = normalize_by_sum(positive) * positive.sum(dim=-1, keepdim=True)
    assert torch.allclose(rescaled, positive, rtol=float(summation_error(num_tokens + 2, 1.0)), atol=0)


def test_normalize_by_sum_gives_negative_weights_for_negative_scores():
    assert (normalize_by_sum(torch.tensor([2.0, -1.0, 0.5])) < 0).any()


def test_overflow_breaks_the_naive_softmax_but_not_torch_softmax():
    demo = overflow_demo(SCORES_2)

    assert math.isclose(demo.attn_scores.max().item(), 149.5, abs_tol=0.01)
    assert torch.isnan(demo.naive_softmax).any()
    assert torch.isfinite(demo.torch_softmax).all()
    sums = float(summation_error(2 * 6 + 3, 1.0))  # the softmax's rounding of 6 weights, then their sum: 1.8e-6
    assert math.isclose(demo.torch_softmax.sum().item(), 1.0, abs_tol=sums)
    assert demo.torch_softmax.argmax().item() == 1  # "journey" attends most to itself
    assert torch.allclose(demo.by_sum, BY_SUM_2, **BOOK)  # the factor cancels


def test_overflow_demo_keeps_every_torch_softmax_row_finite():
    scores = simplified_attention(BOOK_INPUTS).attn_scores  # (6, 6)
    demo = overflow_demo(scores, factor=1000.0)

    assert torch.isnan(demo.naive_softmax).any()
    assert torch.isfinite(demo.torch_softmax).all()
    assert torch.allclose(demo.torch_softmax.sum(dim=-1), torch.ones(6), atol=1e-6)


@pytest.mark.parametrize("query", range(6))
def test_context_contributions_sum_to_the_context_vector(query):
    result = simplified_attention(BOOK_INPUTS)
    contributions = context_contributions(BOOK_INPUTS, result.attn_weights, query)

    assert contributions.shape == (6, 3)
    assert torch.allclose(contributions[2], result.attn_weights[query, 2] * BOOK_INPUTS[2])
    assert torch.allclose(contributions.sum(dim=0), result.context_vecs[query], atol=1e-6)


@pytest.mark.parametrize("query", [-1, 6])
def test_context_contributions_reject_a_query_outside_the_sentence(query):
    with pytest.raises(ValueError, match="query must be a token index from 0 to 5"):
        context_contributions(BOOK_INPUTS, simplified_attention(BOOK_INPUTS).attn_weights, query)


@pytest.mark.parametrize("attend", [attention_loop, simplified_attention])
def test_empty_or_misshapen_inputs_are_clear_errors(attend):
    with pytest.raises(ValueError, match="empty"):
        attend(torch.empty(0, 3))
    with pytest.raises(ValueError, match="num_tokens, d_in"):
        attend(torch.ones(3))
    with pytest.raises(ValueError, match="torch tensor"):
        attend([[0.1, 0.2]])
