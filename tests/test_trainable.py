"""Stage 4, trainable weights: the book's v1 and v2 numbers, v2's weights in v1, the 1/sqrt(d_k)
scaling, and what ``scaling_lab`` measures."""

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import attention_bounds, summation_error
from torch import nn

from attention import (
    BOOK_INPUTS,
    SelfAttention_v1,
    SelfAttention_v2,
    load_v2_weights_into_v1,
    scaling_lab,
    trace,
)

BOOK = {"atol": 1e-4, "rtol": 0}
V1_FIRST_ROWS = torch.tensor([[0.2996, 0.8053], [0.3061, 0.8210]])
V2_OUTPUT = torch.tensor(
    [
        [-0.0739, 0.0713],
        [-0.0748, 0.0703],
        [-0.0749, 0.0702],
        [-0.0760, 0.0685],
        [-0.0763, 0.0679],
        [-0.0754, 0.0693],
    ]
)
QUERY_2 = torch.tensor([0.4306, 1.4551])
ATTN_SCORES_2 = torch.tensor([1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440])
ATTN_WEIGHTS_2 = torch.tensor([0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820])


def test_book_v1_context_vectors():
    torch.manual_seed(123)
    sa_v1 = SelfAttention_v1(3, 2)

    output = sa_v1(BOOK_INPUTS)

    assert output.shape == (6, 2)
    assert torch.allclose(output[:2], V1_FIRST_ROWS, **BOOK)


def test_book_v1_intermediates_for_journey():
    torch.manual_seed(123)
    steps = trace(SelfAttention_v1(3, 2), BOOK_INPUTS)

    assert torch.allclose(steps.queries[0, 0, 1], QUERY_2, **BOOK)
    assert torch.allclose(steps.attn_scores[0, 0, 1], ATTN_SCORES_2, **BOOK)
    assert torch.allclose(steps.attn_weights[0, 0, 1], ATTN_WEIGHTS_2, **BOOK)


def test_book_v2_context_vectors():
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)

    assert torch.allclose(sa_v2(BOOK_INPUTS), V2_OUTPUT, **BOOK)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_tokens=st.integers(1, 6),
    d_in=st.integers(1, 5),
    d_out=st.integers(1, 5),
)
def test_v2_weights_in_v1_give_the_same_output(random_tensor, seed, num_tokens, d_in, d_out):
    torch.manual_seed(seed)
    sa_v1, sa_v2 = SelfAttention_v1(d_in, d_out), SelfAttention_v2(d_in, d_out)
    x = random_tensor(seed, num_tokens, d_in)

    assert load_v2_weights_into_v1(sa_v1, sa_v2) is sa_v1
    assert torch.allclose(sa_v1(x), sa_v2(x), atol=1e-6)


def test_loading_book_v2_into_v1_reproduces_v2s_numbers():
    torch.manual_seed(789)
    sa_v2 = SelfAttention_v2(3, 2)
    sa_v1 = load_v2_weights_into_v1(SelfAttention_v1(3, 2), sa_v2)

    assert torch.allclose(sa_v1(BOOK_INPUTS), V2_OUTPUT, **BOOK)


def test_v2_with_bias_cannot_be_loaded_into_v1():
    with pytest.raises(ValueError, match="qkv_bias=False"):
        load_v2_weights_into_v1(SelfAttention_v1(3, 2), SelfAttention_v2(3, 2, qkv_bias=True))


def test_v2_of_another_size_cannot_be_loaded_into_v1():
    with pytest.raises(ValueError, match="same sizes"):
        load_v2_weights_into_v1(SelfAttention_v1(3, 2), SelfAttention_v2(3, 4))


@pytest.mark.parametrize("cls", [SelfAttention_v1, SelfAttention_v2])
def test_scores_are_scaled_by_one_over_sqrt_head_dim(random_tensor, cls):
    torch.manual_seed(1)
    steps = trace(cls(3, 5), random_tensor(2, 4, 3))

    assert steps.head_dim == 5
    assert torch.equal(steps.scaled_scores, steps.attn_scores / math.sqrt(5))  # the trace's own division
    assert not torch.allclose(steps.scaled_scores, steps.attn_scores)
    assert torch.allclose(steps.attn_weights, torch.softmax(steps.scaled_scores, dim=-1), atol=1e-6)


def as_linears(module) -> SimpleNamespace:
    """What attention_bounds reads, for v1 (x @ W) or v2 (nn.Linear); out_proj is unused by its context bound."""

    def linear(w):
        return w if isinstance(w, nn.Linear) else SimpleNamespace(weight=w.T, bias=None)

    d_out = linear(module.W_query).weight.shape[0]
    parts = {name: linear(getattr(module, name)) for name in ("W_query", "W_key", "W_value")}
    return SimpleNamespace(**parts, head_dim=d_out, out_proj=nn.Linear(d_out, d_out))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_tokens=st.integers(1, 6),
    d_out=st.integers(1, 6),
    cls=st.sampled_from([SelfAttention_v1, SelfAttention_v2]),
)
def test_steps_equal_torch_scaled_dot_product_attention(random_tensor, seed, num_tokens, d_out, cls):
    torch.manual_seed(seed)
    module = cls(3, d_out)
    x = random_tensor(seed, num_tokens, 3)

    with torch.no_grad():
        steps = module.steps(x)
        expected = F.scaled_dot_product_attention(steps.queries, steps.keys, steps.values)  # (num_tokens, d_out)

    # the fused kernel sums scores and weights @ values in its own orders: the context's summation bound
    bound = attention_bounds(as_linears(module), x).context
    assert torch.allclose(steps.context_vec, expected, atol=bound, rtol=0)
    assert torch.equal(module(x), steps.output)


@pytest.mark.parametrize("cls", [SelfAttention_v1, SelfAttention_v2])
def test_steps_are_named_as_in_the_book(cls):
    torch.manual_seed(123)
    steps = cls(3, 2).steps(BOOK_INPUTS)

    assert torch.equal(steps.attn_scores, steps.queries @ steps.keys.T)
    assert torch.equal(steps.attn_weights, torch.softmax(steps.attn_scores / 2**0.5, dim=-1))
    assert steps.dropped_weights is steps.attn_weights  # no dropout before the causal stage
    assert steps.output is steps.context_vec


@pytest.mark.parametrize("cls", [SelfAttention_v1, SelfAttention_v2])
def test_a_batch_is_a_clear_error_as_the_book_takes_one_sentence(cls):
    with pytest.raises(ValueError, match="one sentence at a time"):
        cls(3, 2)(torch.stack([BOOK_INPUTS, BOOK_INPUTS]))


@pytest.fixture(scope="module")
def lab():
    return scaling_lab()


def test_scaling_lab_shapes(lab):
    num_d_ks = len(lab.d_ks)

    assert lab.d_ks.tolist() == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for name in ("unscaled_entropy", "scaled_entropy", "unscaled_max_weight", "scaled_max_weight"):
        assert getattr(lab, name).shape == (num_d_ks,)
    assert lab.example_unscaled.shape == lab.example_scaled.shape == (8,)
    sums = float(summation_error(2 * 8 + 3, 1.0))  # the softmax's rounding of 8 weights, then their sum: 2.3e-6
    assert math.isclose(lab.example_scaled.sum().item(), 1.0, abs_tol=sums)


def test_scaling_lab_at_d_k_1_scaling_changes_nothing(lab):
    assert lab.unscaled_entropy[0] == lab.scaled_entropy[0]
    assert lab.unscaled_grad_norm[0] == lab.scaled_grad_norm[0]


def test_scaled_entropy_stays_near_flat_as_d_k_grows(lab):
    spread = (lab.scaled_entropy.max() - lab.scaled_entropy.min()).item()

    assert spread < 0.25
    assert lab.scaled_entropy[-1] > 0.85 * lab.scaled_entropy[0]
    assert lab.scaled_max_weight[-1] < 0.5


def test_unscaled_softmax_saturates_and_its_gradient_vanishes(lab):
    assert lab.unscaled_entropy[-1] < 0.25 * lab.unscaled_entropy[0]
    assert lab.unscaled_max_weight[-1] > 0.9
    assert lab.unscaled_grad_norm[-1] < 0.25 * lab.unscaled_grad_norm[0]
    assert lab.scaled_grad_norm[-1] > 0.5 * lab.scaled_grad_norm[0]
    assert lab.example_unscaled.max() > lab.example_scaled.max()


def test_a_higher_temperature_flattens_the_unscaled_softmax():
    cold, warm = scaling_lab(d_ks=(64,), temperature=1.0), scaling_lab(d_ks=(64,), temperature=8.0)

    assert warm.unscaled_entropy[0] > cold.unscaled_entropy[0]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"d_ks": ()}, "at least one d_k"),
        ({"d_ks": (0, 4)}, "d_k must be between"),
        ({"temperature": 0.0}, "temperature must be a positive number"),
        ({"temperature": float("nan")}, "temperature must be a positive number"),
        ({"num_keys": 0}, "num_keys"),
    ],
)
def test_scaling_lab_rejects_bad_settings(kwargs, words):
    with pytest.raises(ValueError, match=words):
        scaling_lab(**kwargs)


@pytest.mark.parametrize("cls", [SelfAttention_v1, SelfAttention_v2])
def test_bad_inputs_are_clear_errors(cls):
    module = cls(3, 2)

    with pytest.raises(ValueError, match="d_in=3 numbers, but the input has 4"):
        module(torch.ones(6, 4))
    with pytest.raises(ValueError, match="empty"):
        module(torch.ones(0, 3))
    with pytest.raises(ValueError, match="num_tokens, d_in"):
        module(torch.ones(3))
    with pytest.raises(ValueError, match="d_out must be between"):
        cls(3, 0)
    with pytest.raises(ValueError, match="d_in must be a whole number"):
        cls(2.5, 2)
