"""Generating token by token with and without the KV cache: the same tokens, the same logits, clear limits.

The small GPT generates 100 tokens each way. The GPT-2-shaped model (random
weights, 124M parameters) generates 10 tokens each way, to keep this file
within seconds on a shared 2-core machine: without the cache every step reruns
the whole text through 12 layers of width 768.

In float32 the two ways' logits differ by up to about 1.1e-5 (a few float32
steps at logits near 20), just inside the 1e-5 tolerance (absolute plus
relative); in float64 (40 tokens) they agree to 1e-9, so the difference is rounding.
"""

import copy

import pytest
import torch

from attention import BOOK_SENTENCE, tokenize
from attention.constants import GPT2_SMALL, VERDICT_CONFIG
from attention.generation import (
    MAX_NEW_TOKENS,
    TOP_N,
    GPTWithCache,
    generate,
    random_gpt,
    step_without_cache,
)
from attention.gpt import load_trained_gpt
from attention.kv_cache_costs import cache_bytes_per_token

LOGITS = {"atol": 1e-5, "rtol": 1e-5}
SAMPLING = {"temperature": 1.0, "top_k": 50, "seed": 7}


@pytest.fixture(autouse=True)
def one_thread():
    """Two torch threads on a busy 2-core machine run many times slower than one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def prompt() -> tuple[int, ...]:
    return tokenize(BOOK_SENTENCE).ids


@pytest.fixture(scope="module")
def gpt2_shaped():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return random_gpt(GPT2_SMALL, seed=123)
    finally:
        torch.set_num_threads(threads)


def assert_same_generation(with_cache, without_cache, num_tokens):
    assert len(with_cache.tokens) == len(without_cache.tokens) == num_tokens
    assert with_cache.ids == without_cache.ids
    for step, (cached, full) in enumerate(zip(with_cache.tokens, without_cache.tokens, strict=True)):
        assert torch.allclose(cached.logits, full.logits, **LOGITS), step
        assert cached.ids_top == full.ids_top, step
        for cached_row, full_row in zip(cached.attn_rows, full.attn_rows, strict=True):
            assert torch.allclose(cached_row, full_row, atol=1e-5), step


@pytest.mark.parametrize("sampling", [{}, SAMPLING], ids=["greedy", "sampling"])
def test_the_small_gpt_writes_the_same_100_tokens_with_and_without_the_cache(prompt, sampling):
    model = load_trained_gpt()
    with_cache = generate(model, prompt, 100, use_cache=True, **sampling)
    without_cache = generate(model, prompt, 100, use_cache=False, **sampling)
    assert_same_generation(with_cache, without_cache, 100)
    assert with_cache.prompt_ids == prompt
    assert len(set(with_cache.new_ids)) > 10  # it writes text, not one token over and over


def test_in_float64_the_two_ways_agree_to_rounding(prompt):
    model = copy.deepcopy(load_trained_gpt()).double()
    with_cache = generate(model, prompt, 40, use_cache=True)
    without_cache = generate(model, prompt, 40, use_cache=False)
    assert with_cache.ids == without_cache.ids
    assert with_cache.tokens[0].logits.dtype == torch.float64
    for cached, full in zip(with_cache.tokens, without_cache.tokens, strict=True):
        assert torch.allclose(cached.logits, full.logits, atol=1e-9, rtol=0)


@pytest.mark.parametrize("sampling", [{}, SAMPLING], ids=["greedy", "sampling"])
def test_a_gpt2_shaped_model_writes_the_same_tokens_with_and_without_the_cache(gpt2_shaped, prompt, sampling):
    with_cache = generate(gpt2_shaped, prompt, 10, use_cache=True, **sampling)
    without_cache = generate(gpt2_shaped, prompt, 10, use_cache=False, **sampling)
    assert_same_generation(with_cache, without_cache, 10)
    assert len(with_cache.tokens[0].attn_rows) == 12
    assert with_cache.tokens[-1].attn_rows[0].shape == (12, len(prompt) + 9)


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [{}, SAMPLING], ids=["greedy", "sampling"])
def test_a_gpt2_shaped_model_writes_the_same_100_tokens_with_and_without_the_cache(gpt2_shaped, prompt, sampling):
    """Issue 27's full check at GPT-2 small's shape: 100 tokens, logits within 1e-5 (a few minutes on one thread)."""
    with_cache = generate(gpt2_shaped, prompt, 100, use_cache=True, **sampling)
    without_cache = generate(gpt2_shaped, prompt, 100, use_cache=False, **sampling)
    assert_same_generation(with_cache, without_cache, 100)


def test_sampling_depends_on_the_seed_and_only_on_it(prompt):
    model = load_trained_gpt()
    first = generate(model, prompt, 30, **SAMPLING)
    again = generate(model, prompt, 30, **SAMPLING)
    other_seed = generate(model, prompt, 30, **{**SAMPLING, "seed": 8})
    greedy = generate(model, prompt, 30)
    assert first.new_ids == again.new_ids
    assert first.new_ids != other_seed.new_ids
    assert first.new_ids != greedy.new_ids


def test_each_token_reports_its_top_ten_its_attention_and_the_caches_size(prompt):
    model = load_trained_gpt()
    generation = generate(model, prompt, 5, temperature=0.8, top_k=20, seed=1)
    per_token = cache_bytes_per_token(VERDICT_CONFIG.n_layers, VERDICT_CONFIG.n_heads, 16, 4)
    for step, token in enumerate(generation.tokens):
        assert len(token.ids_top) == len(token.probs_top) == TOP_N
        assert list(token.probs_top) == sorted(token.probs_top, reverse=True)
        assert token.token_id in torch.topk(token.logits, 20).indices.tolist()  # top_k=20 kept only these
        num_keys = len(prompt) + step  # the query that chose the token sees itself and everything before
        assert len(token.attn_rows) == VERDICT_CONFIG.n_layers
        for row in token.attn_rows:
            assert row.shape == (VERDICT_CONFIG.n_heads, num_keys)
            assert torch.allclose(row.sum(dim=-1), torch.ones(VERDICT_CONFIG.n_heads))
        assert token.cache_tokens == num_keys
        assert token.cache_bytes == num_keys * per_token  # the measured cache is the formula's
    top_k_probs = torch.softmax(generation.tokens[0].logits / 0.8, dim=-1).topk(20).values
    assert sum(generation.tokens[0].probs_top) == pytest.approx((top_k_probs[:10] / top_k_probs.sum()).sum().item())
    without = generate(model, prompt, 2, use_cache=False)
    assert without.tokens[-1].cache_tokens == without.tokens[-1].cache_bytes == 0


def test_the_step_without_a_cache_is_the_models_own_forward(prompt):
    model = load_trained_gpt()
    in_idx = torch.tensor([prompt])
    with torch.no_grad():
        step = step_without_cache(model, in_idx)
        assert torch.equal(step.logits, model(in_idx)[:, -1, :])


def test_prefilling_in_one_call_or_token_by_token_gives_the_same_caches(prompt):
    cached_model = GPTWithCache(load_trained_gpt())
    in_idx = torch.tensor([prompt])
    with torch.no_grad():
        at_once = cached_model.step(in_idx)
        caches = None
        for i in range(len(prompt)):
            one_by_one = cached_model.step(in_idx[:, i : i + 1], caches)
            caches = one_by_one.caches
    for a, b in zip(at_once.caches, one_by_one.caches, strict=True):
        assert torch.allclose(a.keys, b.keys, atol=1e-5)
        assert torch.allclose(a.values, b.values, atol=1e-5)
    assert torch.allclose(at_once.logits, one_by_one.logits, **LOGITS)


def test_generating_changes_neither_the_model_nor_the_random_state(prompt):
    model = load_trained_gpt()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    state = torch.random.get_rng_state()
    generate(model, prompt, 3, **SAMPLING)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert not model.training
    assert all(torch.equal(before[name], tensor) for name, tensor in model.state_dict().items())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_new_tokens": MAX_NEW_TOKENS + 1}, f"at most {MAX_NEW_TOKENS}"),
        ({"max_new_tokens": 123}, "context_length"),
        ({"max_new_tokens": 0}, "at least 1"),
        ({"max_new_tokens": 2.0}, "whole number"),
        ({"max_new_tokens": 5, "temperature": -1.0}, "temperature"),
        ({"max_new_tokens": 5, "temperature": float("nan")}, "temperature"),
        ({"max_new_tokens": 5, "top_k": 0}, "top_k"),
        ({"max_new_tokens": 5, "top_k": 50258}, "top_k"),
    ],
)
def test_bad_requests_are_refused_clearly(prompt, kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(load_trained_gpt(), prompt, **kwargs)


def test_the_longest_request_that_fits_is_accepted_and_an_empty_prompt_is_not(prompt):
    model = load_trained_gpt()
    longest = VERDICT_CONFIG.context_length - len(prompt)  # 122 new tokens fill the context exactly
    with pytest.raises(ValueError, match=f"at most {longest} new tokens"):
        generate(model, prompt, longest + 1)
    with pytest.raises(ValueError, match="at least one token"):
        generate(model, [], 3)


def test_caches_for_a_different_number_of_layers_are_refused(prompt):
    cached_model = GPTWithCache(load_trained_gpt())
    with torch.no_grad():
        caches = cached_model.step(torch.tensor([prompt])).caches
        with pytest.raises(ValueError, match="4 layers but 3 caches"):
            cached_model.step(torch.tensor([[1]]), caches[:3])
