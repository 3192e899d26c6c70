"""Grouped-query attention: MHA when every head has its own group, PyTorch's GQA as the oracle, MQA's cache."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import attention_bounds

from attention import MultiHeadAttention, build
from attention.after_chapter.gqa import GroupedQueryAttention
from attention.after_chapter.kv_cache import sliding_window_mask


def random_tensor(seed: int, *shape: int) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def gqa(num_heads=4, num_kv_groups=2, d_in=6, head_dim=3, context_length=16, window=None):
    d_out = num_heads * head_dim
    return build(GroupedQueryAttention, 123, d_in, d_out, context_length, 0.0, num_heads, num_kv_groups, True, window)


@settings(max_examples=25, deadline=None)
@given(
    num_heads=st.sampled_from([1, 2, 3, 4, 6]),
    head_dim=st.integers(1, 8),
    d_in=st.integers(1, 10),
    b=st.integers(1, 3),
    num_tokens=st.integers(1, 12),
    qkv_bias=st.booleans(),
)
def test_one_group_per_head_is_multihead_attention(num_heads, head_dim, d_in, b, num_tokens, qkv_bias):
    """The same weights bit for bit; outputs equal to rounding, since the grouped module multiplies in
    another shape (measured 1 float32 step apart at 10 tokens)."""
    d_out = num_heads * head_dim
    mha = build(MultiHeadAttention, 123, d_in, d_out, 12, 0.0, num_heads, qkv_bias=qkv_bias)
    grouped = build(GroupedQueryAttention, 123, d_in, d_out, 12, 0.0, num_heads, num_heads, qkv_bias)
    x = random_tensor(num_tokens, b, num_tokens, d_in)
    mine, theirs = grouped.state_dict(), mha.state_dict()
    assert all(torch.equal(mine[name], theirs[name]) for name in theirs)  # the same seed, the same order
    bound = attention_bounds(mha, x).close("output")
    assert torch.allclose(grouped(x)[0], mha(x), **bound)
    loaded = GroupedQueryAttention(d_in, d_out, 12, 0.0, num_heads, num_heads, qkv_bias)
    loaded.load_state_dict(mha.state_dict(), strict=True)
    assert torch.allclose(loaded(x)[0], mha(x), **bound)


@pytest.mark.parametrize(("num_heads", "num_kv_groups"), [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2)])
def test_it_matches_pytorchs_grouped_query_attention(num_heads, num_kv_groups):
    module = gqa(num_heads, num_kv_groups)
    x = random_tensor(1, 2, 9, 6)
    b, T, hd = 2, 9, 3
    queries = module.W_query(x).view(b, T, num_heads, hd).transpose(1, 2)  # (b, num_heads, T, head_dim)
    keys = module.W_key(x).view(b, T, num_kv_groups, hd).transpose(1, 2)  # (b, num_kv_groups, T, head_dim)
    values = module.W_value(x).view(b, T, num_kv_groups, hd).transpose(1, 2)  # (b, num_kv_groups, T, head_dim)
    expected = F.scaled_dot_product_attention(queries, keys, values, is_causal=True, enable_gqa=True)
    steps = module.steps(x)
    bound = attention_bounds(module, x).close("context")
    assert torch.allclose(steps.context_vec, expected.transpose(1, 2).reshape(b, T, num_heads * hd), **bound)


def test_query_heads_of_one_group_read_the_same_keys():
    module = gqa(num_heads=6, num_kv_groups=2)
    steps = module.steps(random_tensor(2, 1, 5, 6))
    assert steps.keys.shape == (1, 6, 5, 3)
    for head in range(6):
        group = head // 3  # heads 0-2 share group 0, heads 3-5 group 1
        assert torch.equal(steps.keys[:, head], steps.cache.keys[:, group])
        assert torch.equal(steps.values[:, head], steps.cache.values[:, group])


def test_multi_query_attention_differs_but_caches_one_head_in_num_heads():
    num_heads = 4
    mha = gqa(num_heads, num_heads)
    mqa = gqa(num_heads, 1)
    x = random_tensor(3, 2, 8, 6)
    mha_output, mha_cache = mha(x)
    mqa_output, mqa_cache = mqa(x)
    assert not torch.allclose(mha_output, mqa_output, atol=1e-3)
    assert mqa_cache.keys.shape == (2, 1, 8, 3)
    assert mqa_cache.nbytes * num_heads == mha_cache.nbytes
    assert sum(p.numel() for p in mqa.W_key.parameters()) * num_heads == sum(p.numel() for p in mha.W_key.parameters())


@pytest.mark.parametrize("num_kv_groups", [1, 2, 4])
def test_feeding_one_token_at_a_time_gives_the_full_outputs(num_kv_groups):
    module = gqa(4, num_kv_groups)
    x = random_tensor(4, 2, 10, 6)
    full, full_cache = module(x)
    outputs, cache = [], None
    for i in range(10):
        output, cache = module(x[:, i : i + 1], cache)
        outputs.append(output)
    bounds = attention_bounds(module, x)
    assert torch.allclose(torch.cat(outputs, dim=1), full, **bounds.close("output"))
    assert cache.keys.shape == (2, num_kv_groups, 10, 3)
    assert torch.allclose(cache.keys, full_cache.keys, **bounds.close("projections"))


def test_a_window_hides_keys_too_far_back():
    module = gqa(4, 2, window=2)
    steps = module.steps(random_tensor(5, 1, 6, 6))
    visible = steps.attn_weights[0] > 0  # (num_heads, T, T)
    assert torch.equal(visible, ~sliding_window_mask(6, 2).expand(4, 6, 6))


@pytest.mark.parametrize(
    ("num_heads", "num_kv_groups", "message"),
    [
        (4, 3, "divisible by num_kv_groups"),
        (4, 8, "divisible by num_kv_groups"),
        (4, 0, "num_kv_groups"),
        (4, 1.5, "whole"),
    ],
)
def test_groups_that_do_not_divide_the_heads_are_refused(num_heads, num_kv_groups, message):
    with pytest.raises(ValueError, match=message):
        GroupedQueryAttention(8, 8, 10, 0.0, num_heads, num_kv_groups)


def test_a_cache_from_a_module_with_other_groups_is_refused():
    _, cache = gqa(4, 2)(random_tensor(6, 1, 3, 6))
    with pytest.raises(ValueError, match="different layer or model"):
        gqa(4, 1)(random_tensor(7, 1, 1, 6), cache)
