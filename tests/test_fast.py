"""Stage 9, going faster: ``fast_multihead`` computes what ``MultiHeadAttention`` does, through
``F.scaled_dot_product_attention``, and rejects what the module rejects."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import attention_bounds, summation_error

import attention
from attention import BOOK_INPUTS, CausalAttention, MultiHeadAttention, build, fast_multihead


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_heads=st.integers(1, 4),
    head_dim=st.integers(1, 8),
    d_in=st.integers(1, 8),
    num_tokens=st.integers(1, 8),
    batch=st.integers(1, 3),
    qkv_bias=st.booleans(),
)
def test_equals_multihead_attention_in_eval_mode(
    random_tensor, seed, num_heads, head_dim, d_in, num_tokens, batch, qkv_bias
):
    mha = build(MultiHeadAttention, seed, d_in, num_heads * head_dim, 8, 0.3, num_heads=num_heads, qkv_bias=qkv_bias)
    x = random_tensor(seed, batch, num_tokens, d_in) * 4 - 2  # (b, T, d_in)

    assert torch.allclose(fast_multihead(mha, x), mha(x), **attention_bounds(mha, x).close("output"))


def test_book_output(book_batch):
    mha = build(MultiHeadAttention, 123, 3, 2, 6, 0.0, num_heads=2)

    assert torch.allclose(fast_multihead(mha, book_batch)[0, 0], torch.tensor([0.3190, 0.4858]), atol=1e-4)


def test_gradients_equal_multihead_attentions(random_tensor):
    mha = build(MultiHeadAttention, 7, 6, 6, 5, 0.0, num_heads=3).train()
    x = random_tensor(1, 2, 5, 6)  # (b=2, T=5, d_in=6)

    fast_multihead(mha, x).square().sum().backward()
    fast_grads = {name: p.grad.clone() for name, p in mha.named_parameters()}
    mha.zero_grad()
    mha(x).square().sum().backward()

    # The backward pass runs the forward's sums transposed, then sums over the batch's 10 tokens.
    sizes = 2 * [6, 2, 5, 6] + [2 * 5]  # d_in, head_dim, num_tokens, d_out; then b * num_tokens
    for name, p in mha.named_parameters():
        bound = float(summation_error(sizes, p.grad.abs().max()))  # measured 4.8e-7 apart; bound up to 7e-5
        assert torch.allclose(fast_grads[name], p.grad, atol=bound, rtol=0), name


def test_future_tokens_never_change_past_outputs(future_changed):
    mha = build(MultiHeadAttention, 3, 4, 4, 6, 0.0, num_heads=2)
    x, changed = future_changed(3, 4, 2, 6, 4)  # (b=2, T=6, d_in=4), changed from position 4 on

    # a past row sums the same terms in the same order; a masked future key adds exactly 0 (weight 0 × value)
    assert torch.equal(fast_multihead(mha, x)[:, :4], fast_multihead(mha, changed)[:, :4])
    assert not torch.allclose(fast_multihead(mha, x)[:, 4:], fast_multihead(mha, changed)[:, 4:])


def test_dropout_only_in_training_mode(book_batch):
    mha = build(MultiHeadAttention, 123, 3, 4, 6, 0.5, num_heads=2)  # eval mode
    eval_output = fast_multihead(mha, book_batch)

    assert torch.equal(fast_multihead(mha, book_batch), eval_output)
    torch.manual_seed(0)
    assert not torch.allclose(fast_multihead(mha.train(), book_batch), eval_output)


def test_fewer_tokens_than_context_length(book_batch):
    mha = build(MultiHeadAttention, 123, 3, 4, 16, 0.0, num_heads=2)

    assert torch.allclose(
        fast_multihead(mha, book_batch), mha(book_batch), **attention_bounds(mha, book_batch).close("output")
    )


def test_rejects_other_modules():
    with pytest.raises(ValueError, match="needs a MultiHeadAttention, got CausalAttention"):
        fast_multihead(CausalAttention(3, 2, 6, 0.0), BOOK_INPUTS.unsqueeze(0))


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (torch.ones(1, 7, 3), "7 tokens but context_length is 6"),
        (torch.ones(1, 4, 5), "d_in=3"),
        (torch.ones(1, 0, 3), "empty"),
        (BOOK_INPUTS, "x.unsqueeze\\(0\\)"),
        ([[0.1, 0.2, 0.3]], "torch tensor"),
    ],
    ids=["too-long", "wrong-d_in", "empty", "unbatched", "list"],
)
def test_rejects_bad_inputs_with_the_modules_messages(x, message):
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    with pytest.raises(ValueError, match=message):
        fast_multihead(mha, x)


def test_is_exported():
    assert attention.fast_multihead is fast_multihead
    assert "fast_multihead" in attention.__all__
