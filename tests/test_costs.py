"""The KV cache's memory per token and the multiply-adds per new token, against hand counts and PyTorch's counter."""

from dataclasses import replace

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from attention.after_chapter.generation import GPTWithCache, random_gpt, step_without_cache
from attention.after_chapter.gqa import GroupedQueryAttention
from attention.constants import GPT2_SMALL, VERDICT_CONFIG
from attention.measuring.costs import CACHE_SHAPES, cache_bytes_per_token, macs_per_new_token, shapes_for

TINY = replace(VERDICT_CONFIG, vocab_size=50, context_length=32, emb_dim=16, n_heads=4, n_layers=2)


def counted_macs(call) -> int:
    """Multiply-adds of the matrix products ``call`` runs, by PyTorch's FLOP counter (2 FLOPs each)."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        call()
    return counter.get_total_flops() // 2


def shape(model: str, kind: str):
    return next(s for s in CACHE_SHAPES if s.model == model and s.kind == kind)


def test_the_cache_per_token_of_the_three_models():
    assert shape("GPT-2 small", "MHA").bytes_per_token == 2 * 12 * 12 * 64 * 4 == 73_728  # 72 KiB in float32
    assert shape("Llama-3-8B-style", "GQA").bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131_072  # 128 KiB in bf16
    assert shape("Llama-3-8B-style", "MHA").bytes_per_token == 4 * 131_072
    assert shape("small GPT (The Verdict)", "MHA").bytes_per_token == 2 * 4 * 4 * 16 * 4 == 2_048


def test_mqa_caches_one_head_in_num_heads_and_gqa_one_group_in_num_heads():
    for model in ("GPT-2 small", "Llama-3-8B-style", "small GPT (The Verdict)"):
        mha, gqa, mqa = (shape(model, kind) for kind in ("MHA", "GQA", "MQA"))
        assert mqa.bytes_per_token * mha.num_heads == mha.bytes_per_token
        assert gqa.bytes_per_token * (mha.num_heads // gqa.num_kv_heads) == mha.bytes_per_token
        assert mha.num_kv_heads == mha.num_heads and mqa.num_kv_heads == 1
    assert len(CACHE_SHAPES) == 9


def test_the_formula_is_what_a_grouped_query_cache_really_holds():
    module = GroupedQueryAttention(24, 24, 20, 0.0, num_heads=6, num_kv_groups=2)
    _, cache = module(torch.rand(1, 7, 24))
    assert cache.nbytes == 7 * cache_bytes_per_token(1, 2, 4, 4)


@pytest.mark.parametrize(
    ("args", "message"),
    [((0, 1, 1, 1), "num_layers"), ((1, 1.5, 1, 1), "num_kv_heads"), ((1, 1, 1, True), "bytes_per_element")],
)
def test_bad_shapes_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        cache_bytes_per_token(*args)
    with pytest.raises(ValueError, match="divide"):
        shapes_for("x", 2, 6, 8, 4, "float32", 4)


@pytest.mark.parametrize("num_tokens", [1, 5, 20])
def test_with_the_cache_the_count_is_pytorchs(num_tokens):
    model = random_gpt(TINY, seed=1)
    cached_model = GPTWithCache(model)
    ids = torch.randint(TINY.vocab_size, (1, num_tokens), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        caches = cached_model.step(ids[:, :-1]).caches if num_tokens > 1 else None
    counted = counted_macs(lambda: cached_model.step(ids[:, -1:], caches))
    assert counted == macs_per_new_token(TINY, num_tokens, use_cache=True).total


@pytest.mark.parametrize("num_tokens", [1, 5, 20])
def test_without_the_cache_the_count_is_pytorchs(num_tokens):
    model = random_gpt(TINY, seed=1)
    ids = torch.randint(TINY.vocab_size, (1, num_tokens), generator=torch.Generator().manual_seed(2))
    counted = counted_macs(lambda: step_without_cache(model, ids))
    assert counted == macs_per_new_token(TINY, num_tokens, use_cache=False).total


def test_a_grouped_query_layers_count_is_pytorchs():
    cfg = replace(TINY, n_layers=1, vocab_size=1)
    module = GroupedQueryAttention(16, 16, 32, 0.0, num_heads=4, num_kv_groups=2, qkv_bias=True)
    with torch.no_grad():
        _, cache = module(torch.rand(1, 9, 16))
    counted = counted_macs(lambda: module(torch.rand(1, 1, 16), cache))
    expected = macs_per_new_token(cfg, 10, use_cache=True, num_kv_heads=2)
    assert counted == expected.projections + expected.attention


def test_the_cache_keeps_gpt2s_cost_per_token_almost_flat():
    at_10 = macs_per_new_token(GPT2_SMALL, 10, use_cache=True)
    at_120 = macs_per_new_token(GPT2_SMALL, 120, use_cache=True)
    assert at_120.total / at_10.total < 1.02  # the attention over 120 keys is small next to the rest
    assert at_120.attention == 12 * at_10.attention
    without_10 = macs_per_new_token(GPT2_SMALL, 10, use_cache=False)
    without_120 = macs_per_new_token(GPT2_SMALL, 120, use_cache=False)
    assert without_120.total / without_10.total > 12  # every row again, and a 120 x 120 attention matrix
    assert without_10.total == pytest.approx(10 * at_10.total, rel=0.01)


@pytest.mark.parametrize(("num_tokens", "kv_heads"), [(0, None), (2.0, None), (5, 5), (5, 0)])
def test_bad_counts_are_refused(num_tokens, kv_heads):
    with pytest.raises(ValueError, match=r"num_tokens|num_kv_heads"):
        macs_per_new_token(GPT2_SMALL, num_tokens, use_cache=True, num_kv_heads=kv_heads)
