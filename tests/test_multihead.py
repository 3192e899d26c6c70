"""Stage 7, multi-head attention: the book's numbers, oracle tests against the book's listing,
``torch.nn.MultiheadAttention`` and ``F.scaled_dot_product_attention``, and the wrapper conversion."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import attention_bounds

from attention import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    build,
    causal_mask,
    multihead_from_wrapper,
    to_torch_multihead,
    trace,
)
from tests.book_listings import MultiHeadAttention as BookMultiHeadAttention

BOOK = {"atol": 1e-4, "rtol": 0}
BOOK_WRAPPER_OUTPUT = torch.tensor(
    [
        [-0.4519, 0.2216, 0.4772, 0.1063],
        [-0.5874, 0.0058, 0.5891, 0.3257],
        [-0.6300, -0.0632, 0.6202, 0.3860],
        [-0.5675, -0.0843, 0.5478, 0.3589],
        [-0.5526, -0.0981, 0.5321, 0.3428],
        [-0.5299, -0.1081, 0.5077, 0.3493],
    ]
)
BOOK_MHA_OUTPUT = torch.tensor(
    [
        [0.3190, 0.4858],
        [0.2943, 0.3897],
        [0.2856, 0.3593],
        [0.2693, 0.3873],
        [0.2639, 0.3928],
        [0.2575, 0.4028],
    ]
)


@pytest.mark.parametrize(
    ("cls", "book_output"),
    [(MultiHeadAttentionWrapper, BOOK_WRAPPER_OUTPUT), (MultiHeadAttention, BOOK_MHA_OUTPUT)],
    ids=["wrapper", "multihead"],
)
def test_book_output(book_batch, cls, book_output):
    torch.manual_seed(123)
    module = cls(3, 2, 6, 0.0, num_heads=2)

    context_vecs = module(book_batch)

    assert context_vecs.shape == (2, 6, book_output.shape[1])
    assert torch.allclose(context_vecs[0], book_output, **BOOK)
    assert torch.allclose(context_vecs[1], book_output, **BOOK)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_parameters_are_created_in_the_books_order(qkv_bias):
    names = [name for name, _ in MultiHeadAttention(3, 4, 6, 0.0, num_heads=2, qkv_bias=qkv_bias).named_parameters()]
    modules = list(dict.fromkeys(name.split(".")[0] for name in names))

    assert modules == ["W_query", "W_key", "W_value", "out_proj"]
    assert names[0] == "W_query.weight"


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_same_seed_same_parameters_as_the_book(qkv_bias):
    torch.manual_seed(123)
    book = BookMultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias)
    torch.manual_seed(123)
    ours = MultiHeadAttention(3, 4, 6, 0.0, 2, qkv_bias)

    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in book.named_parameters()]
    for name, parameter in book.named_parameters():
        assert torch.equal(ours.get_parameter(name), parameter)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_book_listing_gives_the_same_output_and_dropout_draws(book_batch, mode):
    book = BookMultiHeadAttention(3, 4, 6, 0.5, 2)
    ours = MultiHeadAttention(3, 4, 6, 0.5, 2)
    ours.load_state_dict(book.state_dict())  # the book's mask is float 0/1
    getattr(book, mode)()
    getattr(ours, mode)()

    torch.manual_seed(11)
    expected = book(book_batch)
    torch.manual_seed(11)

    assert torch.allclose(ours(book_batch), expected, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_heads=st.integers(2, 8),
    head_dim=st.integers(2, 4),
    num_tokens=st.integers(1, 6),
    batch=st.integers(1, 3),
    qkv_bias=st.booleans(),
)
def test_agrees_with_torch_multihead_attention(random_tensor, seed, num_heads, head_dim, num_tokens, batch, qkv_bias):
    d_model = num_heads * head_dim
    mha = build(MultiHeadAttention, seed, d_model, d_model, 6, 0.0, num_heads=num_heads, qkv_bias=qkv_bias)
    torch_mha = to_torch_multihead(mha)
    x = random_tensor(seed, batch, num_tokens, d_model)  # (b, T, d_model)

    expected, expected_weights = torch_mha(
        x, x, x, attn_mask=causal_mask(num_tokens), need_weights=True, average_attn_weights=False
    )  # (b, T, d_model), (b, h, T, T)
    steps = trace(mha, x)

    assert not torch_mha.training
    bounds = attention_bounds(mha, x)
    assert torch.allclose(mha(x), expected, **bounds.close("output"))
    assert torch.allclose(steps.output, expected, **bounds.close("output"))
    assert torch.allclose(steps.attn_weights, expected_weights, **bounds.close("attn_weights"))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_heads=st.integers(2, 8),
    head_dim=st.integers(2, 4),
    d_in=st.integers(1, 6),
    num_tokens=st.integers(1, 6),
    batch=st.integers(1, 3),
)
def test_agrees_with_scaled_dot_product_attention(random_tensor, seed, num_heads, head_dim, d_in, num_tokens, batch):
    mha = build(MultiHeadAttention, seed, d_in, num_heads * head_dim, 6, 0.0, num_heads=num_heads)
    x = random_tensor(seed, batch, num_tokens, d_in)  # (b, T, d_in)
    steps = trace(mha, x)

    expected = F.scaled_dot_product_attention(steps.queries, steps.keys, steps.values, is_causal=True)

    assert torch.allclose(steps.head_context, expected, **attention_bounds(mha, x).close("context"))
    assert torch.equal(steps.output, mha.out_proj(steps.context))  # the same out_proj on the same context


def test_torch_multihead_needs_d_in_equal_to_d_out():
    with pytest.raises(ValueError, match="d_in == d_out"):
        to_torch_multihead(MultiHeadAttention(3, 2, 6, 0.0, num_heads=2))


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_torch_multihead_keeps_the_modules_mode(mode):
    mha = getattr(MultiHeadAttention(4, 4, 6, 0.1, num_heads=2), mode)()

    assert to_torch_multihead(mha).training == mha.training


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_heads=st.integers(1, 4),
    d_in=st.integers(1, 4),
    d_out=st.integers(1, 3),
    num_tokens=st.integers(1, 5),
    qkv_bias=st.booleans(),
)
def test_multihead_from_wrapper_computes_what_the_wrapper_does(
    random_tensor, seed, num_heads, d_in, d_out, num_tokens, qkv_bias
):
    wrapper = build(MultiHeadAttentionWrapper, seed, d_in, d_out, 5, 0.0, num_heads=num_heads, qkv_bias=qkv_bias)
    mha = multihead_from_wrapper(wrapper)
    x = random_tensor(seed, 2, num_tokens, d_in)

    assert (mha.d_out, mha.num_heads, mha.head_dim) == (num_heads * d_out, num_heads, d_out)
    # one fused projection against one per head: other summation orders
    bounds = attention_bounds(mha, x)
    assert torch.allclose(mha(x), wrapper(x), **bounds.close("output"))
    assert torch.allclose(trace(mha, x).attn_weights, trace(wrapper, x).attn_weights, **bounds.close("attn_weights"))


def test_multihead_from_book_wrapper(book_batch):
    wrapper = build(MultiHeadAttentionWrapper, 123, 3, 2, 6, 0.0, num_heads=2)

    assert torch.allclose(multihead_from_wrapper(wrapper)(book_batch)[0], BOOK_WRAPPER_OUTPUT, **BOOK)


def test_multihead_from_an_eval_wrapper_with_dropout_is_in_eval_mode_too(book_batch):
    wrapper = build(MultiHeadAttentionWrapper, 123, 3, 2, 6, 0.5, num_heads=2)  # eval mode
    mha = multihead_from_wrapper(wrapper)

    assert mha.training == wrapper.training
    assert torch.allclose(mha(book_batch), wrapper(book_batch), **attention_bounds(mha, book_batch).close("output"))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_tokens=st.integers(2, 6),
    wrapped=st.booleans(),
    data=st.data(),
)
def test_future_tokens_never_change_past_outputs(future_changed, seed, num_tokens, wrapped, data):
    t = data.draw(st.integers(1, num_tokens - 1), label="first changed position")
    cls = MultiHeadAttentionWrapper if wrapped else MultiHeadAttention
    module = build(cls, seed, 4, 4, 6, 0.0, num_heads=2)
    x, changed = future_changed(seed, t, 2, num_tokens, 4)

    before, after = module(x), module(changed)

    # a past row sums the same terms in the same order; a masked future key adds exactly 0 (weight 0 × value)
    assert torch.equal(before[:, :t], after[:, :t])
    assert not torch.allclose(before[:, t:], after[:, t:])


def test_d_out_not_divisible_by_num_heads_is_a_clear_error():
    with pytest.raises(ValueError, match="d_out must be divisible by num_heads"):
        MultiHeadAttention(3, 5, 6, 0.0, num_heads=2)


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionWrapper])
def test_more_tokens_than_context_length_is_a_clear_error(cls, book_batch):
    with pytest.raises(ValueError, match="6 tokens but context_length is 4"):
        cls(3, 2, 4, 0.0, num_heads=2)(book_batch)


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionWrapper])
@pytest.mark.parametrize(
    ("x", "words"),
    [
        (torch.ones(2, 6, 4), "d_in=3"),
        (torch.ones(2, 0, 3), "empty"),
        (torch.ones(6, 3), "unsqueeze"),
    ],
    ids=["wrong-embedding-size", "empty", "unbatched"],
)
def test_bad_inputs_are_clear_errors(cls, x, words):
    with pytest.raises(ValueError, match=words):
        cls(3, 2, 6, 0.0, num_heads=2)(x)


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionWrapper])
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5])
def test_dropout_outside_zero_to_one_is_a_clear_error(cls, dropout):
    with pytest.raises(ValueError, match="dropout must be at least 0 and below 1"):
        cls(3, 2, 6, dropout, num_heads=2)


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionWrapper])
@pytest.mark.parametrize("num_heads", [0, 65])
def test_num_heads_out_of_range_is_a_clear_error(cls, num_heads):
    with pytest.raises(ValueError, match="num_heads must be between 1 and 64"):
        cls(3, 2, 6, 0.0, num_heads=num_heads)


BOOK_HEADS_PRODUCT = torch.tensor(  # printed in section 3.6.2: a @ a.transpose(2, 3)
    [
        [
            [[1.3208, 1.1631, 1.2879], [1.1631, 2.2150, 1.8424], [1.2879, 1.8424, 2.0402]],
            [[0.4391, 0.7003, 0.5903], [0.7003, 1.3737, 1.0620], [0.5903, 1.0620, 0.9912]],
        ]
    ]
)


def test_one_batched_matmul_equals_each_heads_own_product_as_the_book_prints():
    from attention import HEADS_EXAMPLE, heads_product

    check = heads_product()
    assert check.a.shape == (1, 2, 3, 4)
    torch.testing.assert_close(check.batched, BOOK_HEADS_PRODUCT, **BOOK)
    first_head, second_head = HEADS_EXAMPLE[0, 0, :, :], HEADS_EXAMPLE[0, 1, :, :]  # the book's own lines
    torch.testing.assert_close(check.per_head[0, 0], first_head @ first_head.T, atol=0, rtol=0)
    torch.testing.assert_close(check.per_head[0, 1], second_head @ second_head.T, atol=0, rtol=0)
    assert check.max_difference == (check.batched - check.per_head).abs().max().item()
    eps = torch.finfo(torch.float32).eps  # a sum of head_dim = 4 products of numbers below 1 each: within 4 ulps
    assert check.max_difference <= 4 * eps * check.batched.abs().max().item()
    bigger = heads_product(torch.randn(3, 4, 5, 6, generator=torch.Generator().manual_seed(0)))
    assert bigger.batched.shape == (3, 4, 5, 5)
    assert bigger.max_difference <= 6 * eps * bigger.batched.abs().max().item() + 6 * eps
    with pytest.raises(ValueError, match="4-D tensor"):
        heads_product(HEADS_EXAMPLE[0])
