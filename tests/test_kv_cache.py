"""The KV cache and the sliding-window mask: the cached module against a full recomputation, and its checks."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import attention_bounds

from attention import MultiHeadAttention, build, causal_mask
from attention.after_chapter.kv_cache import CachedMultiHeadAttention, KVCache, sliding_window_mask


def random_tensor(seed: int, *shape: int) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def pair(d_in=8, d_out=12, context_length=16, num_heads=3, qkv_bias=True, window=None):
    """A MultiHeadAttention and a CachedMultiHeadAttention with the same weights (the same seed)."""
    mha = build(MultiHeadAttention, 123, d_in, d_out, context_length, 0.0, num_heads, qkv_bias=qkv_bias)
    cached = build(
        CachedMultiHeadAttention, 123, d_in, d_out, context_length, 0.0, num_heads, qkv_bias=qkv_bias, window=window
    )
    return mha, cached


def feed_in_chunks(module, x: torch.Tensor, chunks: list[int]):
    """Call ``module`` on consecutive slices of x, passing the cache along; the outputs concatenated."""
    outputs, cache, start = [], None, 0
    for size in chunks:
        output, cache = module(x[:, start : start + size], cache)
        outputs.append(output)
        start += size
    return torch.cat(outputs, dim=1), cache


# The sliding-window mask


@settings(max_examples=40, deadline=None)
@given(num_tokens=st.integers(1, 20), extra=st.integers(0, 20))
def test_a_window_of_at_least_num_tokens_is_the_causal_mask(num_tokens, extra):
    assert torch.equal(sliding_window_mask(num_tokens, num_tokens + extra), causal_mask(num_tokens))
    assert torch.equal(sliding_window_mask(num_tokens, None), causal_mask(num_tokens))


@pytest.mark.parametrize("num_tokens", [1, 2, 7])
def test_a_window_of_one_leaves_only_the_diagonal(num_tokens):
    visible = ~sliding_window_mask(num_tokens, 1)
    assert torch.equal(visible, torch.eye(num_tokens, dtype=torch.bool))


@settings(max_examples=40, deadline=None)
@given(num_tokens=st.integers(1, 16), window=st.integers(1, 20), start=st.integers(0, 10))
def test_each_token_sees_itself_and_the_window_minus_one_before_it(num_tokens, window, start):
    mask = sliding_window_mask(num_tokens, window, start=start)
    assert mask.shape == (num_tokens, start + num_tokens)
    for row in range(num_tokens):
        position = start + row
        visible = (~mask[row]).nonzero().flatten().tolist()
        assert visible == list(range(max(0, position - window + 1), position + 1))
    # the rows after a cache are the last rows of the full mask
    assert torch.equal(mask, sliding_window_mask(start + num_tokens, window)[start:])


@pytest.mark.parametrize("window", [0, -3, 2.5, True, "4"])
def test_a_bad_window_is_refused_clearly(window):
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask(5, window)
    with pytest.raises(ValueError, match="window"):
        CachedMultiHeadAttention(4, 4, 8, 0.0, 2, window=window)


def test_a_negative_start_is_refused():
    with pytest.raises(ValueError, match="start"):
        sliding_window_mask(3, 2, start=-1)


# The cached module against the chapter's MultiHeadAttention


def test_without_a_cache_it_is_the_chapters_module_bit_for_bit():
    mha, cached = pair()
    x = random_tensor(1, 2, 10, 8)
    output, cache = cached(x)
    assert torch.equal(output, mha(x))
    assert cache.num_tokens == 10


@pytest.mark.parametrize("chunks", [[1] * 10, [4, 1, 1, 1, 3], [6, 4], [1, 9]])
def test_feeding_tokens_a_few_at_a_time_gives_the_full_outputs(chunks):
    mha, cached = pair()
    x = random_tensor(2, 2, 10, 8)
    output, cache = feed_in_chunks(cached, x, chunks)
    assert output.shape == (2, 10, 12)
    assert torch.allclose(output, mha(x), **attention_bounds(mha, x).close("output"))
    assert cache.num_tokens == 10


def test_the_cached_keys_and_values_are_a_full_recomputations():
    mha, cached = pair()
    x = random_tensor(3, 2, 9, 8)
    _, cache = feed_in_chunks(cached, x, [3, 1, 1, 1, 1, 1, 1])
    full = mha.steps(x)
    assert cache.keys.shape == cache.values.shape == (2, 3, 9, 4)  # (b, num_heads, num_tokens, head_dim)
    bounds = attention_bounds(mha, x)
    assert torch.allclose(cache.keys, full.keys, **bounds.close("projections"))
    assert torch.allclose(cache.values, full.values, **bounds.close("projections"))
    assert cache.nbytes == 2 * 2 * 3 * 9 * 4 * 4


def test_a_step_gives_the_new_tokens_row_of_the_full_weights():
    mha, cached = pair()
    x = random_tensor(4, 1, 8, 8)
    _, cache = cached(x[:, :7])
    steps = cached.steps(x[:, 7:], cache)
    full = mha.steps(x)
    assert steps.queries.shape == (1, 3, 1, 4)  # queries for the new token only
    assert steps.attn_weights.shape == (1, 3, 1, 8)
    assert torch.allclose(
        steps.attn_weights[:, :, 0], full.attn_weights[:, :, 7], **attention_bounds(mha, x).close("attn_weights")
    )


def test_a_cache_can_be_used_twice():
    _, cached = pair()
    x = random_tensor(5, 1, 6, 8)
    _, cache = cached(x[:, :5])
    first, _ = cached(x[:, 5:], cache)
    second, _ = cached(x[:, 5:], cache)
    assert torch.equal(first, second)
    assert cache.num_tokens == 5


def test_a_windowed_module_matches_pytorchs_attention_with_the_same_mask():
    _, cached = pair(window=3)
    x = random_tensor(6, 2, 10, 8)
    steps = cached.steps(x)
    b, T = 2, 10
    queries = cached.W_query(x).view(b, T, 3, 4).transpose(1, 2)  # (b, num_heads, T, head_dim)
    keys = cached.W_key(x).view(b, T, 3, 4).transpose(1, 2)  # (b, num_heads, T, head_dim)
    values = cached.W_value(x).view(b, T, 3, 4).transpose(1, 2)  # (b, num_heads, T, head_dim)
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=~sliding_window_mask(T, 3))
    bound = attention_bounds(cached, x).close("context")
    assert torch.allclose(steps.context_vec, expected.transpose(1, 2).reshape(b, T, 12), **bound)
    assert (steps.attn_weights[..., 3:, 0] == 0).all()  # token 0 is out of reach from token 3 on


def test_a_windowed_module_fed_one_token_at_a_time_gives_the_full_outputs():
    _, cached = pair(window=4)
    x = random_tensor(7, 1, 12, 8)
    output, _ = feed_in_chunks(cached, x, [5] + [1] * 7)
    assert torch.allclose(output, cached(x)[0], **attention_bounds(cached, x).close("output"))
    _, wide = pair(window=12)
    assert torch.equal(wide(x)[0], pair()[1](x)[0])  # a window as long as the text changes nothing


def test_sharing_uses_the_modules_own_weights_and_leaves_the_random_state_alone():
    mha, _ = pair()
    state = torch.random.get_rng_state()
    cached = CachedMultiHeadAttention.sharing(mha)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert cached.W_query.weight is mha.W_query.weight
    assert cached.out_proj.bias is mha.out_proj.bias
    assert cached.mask is mha.mask
    x = random_tensor(8, 1, 5, 8)
    assert torch.equal(cached(x)[0], mha(x))


def test_a_multiheadattention_state_dict_loads_into_it():
    mha, _ = pair()
    cached = CachedMultiHeadAttention(8, 12, 16, 0.0, 3, qkv_bias=True)
    cached.load_state_dict(mha.state_dict(), strict=True)
    x = random_tensor(9, 1, 5, 8)
    assert torch.equal(cached(x)[0], mha(x))


# Caches that do not fit


def test_a_cache_for_a_different_batch_is_refused():
    _, cached = pair()
    _, cache = cached(random_tensor(10, 2, 4, 8))
    with pytest.raises(ValueError, match="batch of 2 texts, but the input has 3"):
        cached(random_tensor(11, 3, 1, 8), cache)


def test_a_cache_from_a_different_layer_shape_is_refused():
    _, cached = pair()
    other = CachedMultiHeadAttention(8, 12, 16, 0.0, 2)
    _, cache = other(random_tensor(12, 1, 4, 8))
    with pytest.raises(ValueError, match="different layer or model"):
        cached(random_tensor(13, 1, 1, 8), cache)


def test_a_cache_past_context_length_is_refused():
    _, cached = pair(context_length=6)
    _, cache = cached(random_tensor(14, 1, 5, 8))
    cached(random_tensor(15, 1, 1, 8), cache)  # 6 tokens fit
    with pytest.raises(ValueError, match="context_length"):
        cached(random_tensor(16, 1, 2, 8), cache)


def test_something_that_is_not_a_cache_is_refused():
    _, cached = pair()
    with pytest.raises(ValueError, match="KVCache"):
        cached(random_tensor(17, 1, 1, 8), (torch.zeros(1, 3, 2, 4), torch.zeros(1, 3, 2, 4)))
    with pytest.raises(ValueError, match="same shape"):
        KVCache(torch.zeros(1, 3, 2, 4), torch.zeros(1, 3, 3, 4))
    with pytest.raises(ValueError, match="num_kv_heads"):
        KVCache(torch.zeros(3, 2, 4), torch.zeros(3, 2, 4))
