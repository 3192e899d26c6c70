"""Stage 8, trace (``attention.tracing``): every intermediate of a forward pass for all five modules, shapes as
documented, seeded dropout draws, reproducible ``build``, and the package's public names."""

import concurrent.futures
import contextlib
import dataclasses

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import matmul_error, summation_error, within
from torch import nn

import attention
from attention import (
    BOOK_INPUTS,
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
    Trace,
    build,
    causal_mask,
    trace,
)
from attention.measuring import fast

# name: (constructor, num_heads, head_dim, d_out); every module takes d_in = 3.
MODULES = {
    "SelfAttention_v1": (lambda: SelfAttention_v1(3, 4), 1, 4, 4),
    "SelfAttention_v2": (lambda: SelfAttention_v2(3, 4), 1, 4, 4),
    "CausalAttention": (lambda: CausalAttention(3, 4, 6, 0.0), 1, 4, 4),
    "MultiHeadAttentionWrapper": (lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3), 3, 2, 6),
    "MultiHeadAttention": (lambda: MultiHeadAttention(3, 6, 6, 0.0, num_heads=3), 3, 2, 6),
}
CAUSAL = ["CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention"]
PUBLIC_NAMES = [
    "BOOK_INPUTS",
    "BOOK_SENTENCE",
    "BOOK_TOKENS",
    "CausalAttention",
    "DropoutAverage",
    "DropoutDraw",
    "MaskingComparison",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "NormalizationComparison",
    "ScalingLab",
    "SelfAttention_v1",
    "SelfAttention_v2",
    "SimplifiedAttention",
    "Tokenization",
    "Trace",
    "apply_dropout",
    "AttentionSteps",
    "attention_loop",
    "build",
    "causal_mask",
    "compare_masking",
    "compare_normalizations",
    "context_contributions",
    "dropout_average",
    "dropout_keep_mask",
    "embed_tokens",
    "load_bpe",
    "load_v2_weights_into_v1",
    "mask_by_renormalizing",
    "mask_with_neg_inf",
    "multihead_from_wrapper",
    "normalize_by_sum",
    "overflow_demo",
    "scaling_lab",
    "simplified_attention",
    "softmax_naive",
    "to_torch_multihead",
    "token_vector",
    "tokenize",
    "trace",
]


def make(name: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return MODULES[name][0]().eval()


@pytest.mark.parametrize("grad_mode", [contextlib.nullcontext, torch.no_grad, torch.inference_mode])
@pytest.mark.parametrize("name", MODULES)
def test_trace_output_equals_the_modules_output(random_tensor, name, grad_mode):
    module = make(name)
    x = random_tensor(1, 2, 5, 3)  # (b=2, T=5, d_in=3)

    steps = trace(module, x)
    with grad_mode():
        # the book's v1 and v2 take one sentence at a time
        output = module(x) if name in CAUSAL else torch.stack([module(sentence) for sentence in x])

    assert steps.module == name
    assert torch.equal(steps.output, output)  # forward is steps(x).output: the same code on the same numbers


@pytest.mark.parametrize("name", ["SelfAttention_v1", "SelfAttention_v2"])
def test_unbatched_input_is_traced_as_a_batch_of_one(name):
    module = make(name)

    steps = trace(module, BOOK_INPUTS)

    assert steps.inputs.shape == (1, 6, 3)
    assert torch.equal(steps.inputs[0], BOOK_INPUTS)
    assert torch.equal(steps.output[0], module(BOOK_INPUTS))  # the same steps() on the same sentence


@pytest.mark.parametrize("name", CAUSAL)
def test_unbatched_input_works_for_the_batched_modules_too(name):
    module = make(name)

    assert torch.equal(trace(module, BOOK_INPUTS).output[0], module(BOOK_INPUTS.unsqueeze(0))[0])  # same steps()


@pytest.mark.parametrize("name", MODULES)
def test_shapes_are_as_documented(random_tensor, name):
    _, h, head_dim, d_out = MODULES[name]
    b, T, d_in = 2, 5, 3
    steps = trace(make(name), random_tensor(1, b, T, d_in))

    assert (steps.num_heads, steps.head_dim) == (h, head_dim)
    assert steps.inputs.shape == (b, T, d_in)
    for field in ("queries", "keys", "values", "head_context"):
        assert getattr(steps, field).shape == (b, h, T, head_dim), field
    for field in ("attn_scores", "scaled_scores", "masked_scores", "attn_weights", "dropped_weights"):
        assert getattr(steps, field).shape == (b, h, T, T), field
    assert steps.context.shape == (b, T, h * head_dim)
    assert steps.output.shape == (b, T, d_out)
    if name in CAUSAL:
        assert torch.equal(steps.mask, causal_mask(T))
    else:
        assert steps.mask is None


@pytest.mark.parametrize("name", MODULES)
def test_steps_follow_from_one_another(random_tensor, name):
    steps = trace(make(name), random_tensor(2, 2, 4, 3))
    expected_masked = (
        steps.scaled_scores if steps.mask is None else steps.scaled_scores.masked_fill(steps.mask, -torch.inf)
    )

    # v1 and v2 score one sentence at a time, the check a batch at once: another matmul kernel
    keys_t = steps.keys.transpose(-2, -1)
    score_error = matmul_error(steps.queries, keys_t)  # (b, h, T, T)
    assert within(steps.attn_scores, steps.queries @ keys_t, score_error)
    assert torch.equal(steps.scaled_scores, steps.attn_scores / steps.head_dim**0.5)  # the property's own line
    assert torch.equal(steps.masked_scores, expected_masked)
    # the module's softmax read its own scores: a weight moves at most twice its row's largest score change
    row_error = 2 * score_error.amax(-1, keepdim=True) / steps.head_dim**0.5  # (b, h, T, 1)
    assert within(steps.attn_weights, torch.softmax(steps.masked_scores, dim=-1), row_error)
    assert within(
        steps.head_context, steps.dropped_weights @ steps.values, matmul_error(steps.dropped_weights, steps.values)
    )
    b, h, T, head_dim = steps.head_context.shape
    assert torch.equal(steps.context, steps.head_context.transpose(1, 2).reshape(b, T, h * head_dim))  # a view


@pytest.mark.parametrize("name", ["CausalAttention", "MultiHeadAttention"])
def test_eval_trace_has_no_dropout_mask_even_for_a_module_in_train_mode(name):
    module = CausalAttention(3, 4, 6, 0.5) if name == "CausalAttention" else MultiHeadAttention(3, 4, 6, 0.5, 2)
    module.train()

    steps = trace(module, BOOK_INPUTS)

    assert steps.dropout_mask is None
    assert torch.equal(steps.dropped_weights, steps.attn_weights)
    assert module.training


def test_trace_with_zero_dropout_in_training_has_no_dropout_mask():
    assert trace(CausalAttention(3, 2, 6, 0.0), BOOK_INPUTS, training=True, seed=1).dropout_mask is None


@pytest.mark.parametrize(
    "factory",
    [
        lambda: CausalAttention(3, 2, 6, 0.5),
        lambda: MultiHeadAttention(3, 4, 6, 0.5, num_heads=2),
        lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.5, num_heads=3),
    ],
    ids=["CausalAttention", "MultiHeadAttention", "MultiHeadAttentionWrapper"],
)
def test_seed_123_draws_what_manual_seed_123_and_forward_draw(factory, book_batch):
    module = factory()  # a new module is in train mode
    torch.manual_seed(123)
    expected = module(book_batch)
    module.eval()

    steps = trace(module, book_batch, training=True, seed=123)

    assert torch.equal(steps.output, expected)  # the same steps() with the same draws
    assert not module.training  # trace leaves the module's mode alone
    assert torch.equal(steps.dropped_weights, steps.attn_weights * steps.dropout_mask / 0.5)  # × 0 or × 2: exact


def test_wrapper_heads_draw_one_after_another(book_batch):
    wrapper = build(MultiHeadAttentionWrapper, 123, 3, 2, 6, 0.5, num_heads=3)
    torch.manual_seed(123)
    expected = torch.stack([F.dropout(torch.ones(2, 6, 6), 0.5) != 0 for _ in range(3)], dim=1)  # (b, h, T, T)

    steps = trace(wrapper, book_batch, training=True, seed=123)

    assert torch.equal(steps.dropout_mask, expected)


def test_seeded_trace_is_repeatable_and_leaves_the_global_random_state_alone(book_batch):
    module = MultiHeadAttention(3, 4, 6, 0.5, num_heads=2)
    before = torch.get_rng_state()

    first = trace(module, book_batch, training=True, seed=5)
    again = trace(module, book_batch, training=True, seed=5)

    assert torch.equal(torch.get_rng_state(), before)
    assert torch.equal(first.dropout_mask, again.dropout_mask)
    assert torch.equal(first.output, again.output)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    name=st.sampled_from(list(MODULES)),
    num_tokens=st.integers(1, 6),
    batch=st.integers(1, 3),
)
def test_attention_weights_rows_sum_to_one(random_tensor, seed, name, num_tokens, batch):
    steps = trace(make(name, seed), random_tensor(seed, batch, num_tokens, 3) * 4)

    sums = float(summation_error(2 * num_tokens + 3, 1.0))  # the softmax's rounding of n weights, then their sum
    ones = torch.ones(batch, steps.num_heads, num_tokens)
    assert torch.allclose(steps.attn_weights.sum(dim=-1), ones, atol=sums, rtol=0)
    assert (steps.attn_weights >= 0).all()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), name=st.sampled_from(CAUSAL), num_tokens=st.integers(1, 6), p=st.floats(0, 0.9))
def test_weights_are_zero_above_the_diagonal_with_or_without_dropout(random_tensor, seed, name, num_tokens, p):
    torch.manual_seed(seed)
    module = {
        "CausalAttention": lambda: CausalAttention(3, 4, 6, p),
        "MultiHeadAttentionWrapper": lambda: MultiHeadAttentionWrapper(3, 2, 6, p, num_heads=2),
        "MultiHeadAttention": lambda: MultiHeadAttention(3, 4, 6, p, num_heads=2),
    }[name]()
    steps = trace(module, random_tensor(seed, 2, num_tokens, 3), training=True, seed=seed)
    upper = causal_mask(num_tokens)

    assert (steps.attn_weights[..., upper] == 0).all()
    assert (steps.dropped_weights[..., upper] == 0).all()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_heads=st.integers(1, 4),
    head_dim=st.sampled_from([1, 2, 3, 8, 17]),  # 3 and 17: a scale sqrt(head_dim) that float32 rounds
    num_tokens=st.integers(1, 40),
    batch=st.integers(1, 3),
    qkv_bias=st.booleans(),
    in_train_mode=st.booleans(),  # trace(training=False) runs it in eval mode all the same
)
def test_a_multihead_trace_without_dropout_is_the_modules_steps_bit_for_bit(
    random_tensor, seed, num_heads, head_dim, num_tokens, batch, qkv_bias, in_train_mode
):
    """``trace`` computes a MultiHeadAttention's steps in ``fast.multihead_steps`` when dropout is off."""
    torch.manual_seed(seed)
    module = MultiHeadAttention(5, num_heads * head_dim, 40, 0.3, num_heads, qkv_bias=qkv_bias)
    module.train(in_train_mode)
    x = random_tensor(seed, batch, num_tokens, 5) * 3

    traced = trace(module, x)
    with torch.no_grad():
        book = module.eval().steps(x)  # the book's lines

    assert torch.equal(traced.book_scores, book.attn_scores)
    for name in ("queries", "keys", "values", "attn_weights", "dropped_weights"):
        assert torch.equal(getattr(traced, name), getattr(book, name)), name
    assert torch.equal(traced.context, book.context_vec) and torch.equal(traced.output, book.output)
    assert traced.dropout_mask is None


def test_the_fast_steps_refuse_a_module_whose_dropout_is_on():
    module = MultiHeadAttention(3, 4, 6, 0.5, num_heads=2).train()

    with pytest.raises(ValueError, match="dropout off"):
        fast.multihead_steps(module, BOOK_INPUTS.unsqueeze(0))
    assert trace(module, BOOK_INPUTS, training=True, seed=1).dropout_mask is not None  # the book's steps draw


def test_tensors_lists_the_named_tensors_and_skips_none():
    eval_names = trace(make("SelfAttention_v2"), BOOK_INPUTS).tensors().keys()
    train_names = trace(CausalAttention(3, 2, 6, 0.5), BOOK_INPUTS, training=True, seed=1).tensors().keys()

    assert "mask" not in eval_names and "dropout_mask" not in eval_names
    assert {"attn_weights", "context", "output"} <= eval_names
    assert {"mask", "dropout_mask"} <= train_names


def test_trace_is_frozen():
    steps = trace(make("MultiHeadAttention"), BOOK_INPUTS)

    assert isinstance(steps, Trace)
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps.output = torch.zeros(1)


def test_book_example_from_the_package_docstring(book_batch):
    mha = build(MultiHeadAttention, 123, 3, 2, 6, 0.0, num_heads=2)

    assert torch.allclose(trace(mha, book_batch).output[0, 0], torch.tensor([0.3190, 0.4858]), atol=1e-4)


def test_build_is_manual_seed_then_construct_in_eval_mode():
    module = build(MultiHeadAttention, 123, 3, 4, 6, 0.1, num_heads=2)
    torch.manual_seed(123)
    expected = MultiHeadAttention(3, 4, 6, 0.1, num_heads=2)

    assert not module.training
    for name, parameter in expected.named_parameters():
        assert torch.equal(module.get_parameter(name), parameter)


def test_build_leaves_the_global_random_state_alone():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    build(MultiHeadAttentionWrapper, 123, 3, 2, 6, 0.0, num_heads=2)

    assert torch.equal(torch.get_rng_state(), before)


def test_trace_rejects_other_modules():
    with pytest.raises(ValueError, match="trace\\(\\) works for SelfAttention_v1"):
        trace(nn.Linear(3, 3), BOOK_INPUTS)


@pytest.mark.parametrize("x", [torch.ones(3), torch.ones(1, 1, 6, 3), [[0.1, 0.2, 0.3]]], ids=["1d", "4d", "list"])
def test_trace_rejects_inputs_of_the_wrong_shape(x):
    with pytest.raises(ValueError, match="num_tokens, d_in"):
        trace(make("MultiHeadAttention"), x)


@pytest.mark.parametrize("name", CAUSAL)
def test_trace_passes_on_the_modules_clear_errors(name):
    module = make(name)
    with pytest.raises(ValueError, match="7 tokens but context_length is 6"):
        trace(module, torch.ones(1, 7, 3))
    with pytest.raises(ValueError, match="d_in=3"):
        trace(module, torch.ones(1, 4, 5))
    with pytest.raises(ValueError, match="empty"):
        trace(module, torch.ones(1, 0, 3))


def test_every_public_name_is_importable():
    missing = [name for name in PUBLIC_NAMES if not hasattr(attention, name)]
    unexported = [name for name in PUBLIC_NAMES if name not in attention.__all__]
    broken = [name for name in attention.__all__ if not hasattr(attention, name)]

    assert missing == []
    assert unexported == []
    assert broken == []


def test_eval_trace_keeps_two_score_sized_tensors_and_derives_the_rest_on_use(random_tensor):
    steps = trace(make("MultiHeadAttention"), random_tensor(3, 2, 5, 3))
    stored = {name for name, value in vars(steps).items() if isinstance(value, torch.Tensor) and value.dim() == 4}

    assert stored == {"queries", "keys", "values", "book_scores", "attn_weights", "dropped_weights"}
    assert steps.dropped_weights is steps.attn_weights
    assert torch.isneginf(steps.book_scores[..., causal_mask(5)]).all()  # the book's masked_fill_, in place
    steps.scaled_scores  # noqa: B018 (derived on first use, then kept)
    assert "scaled_scores" in vars(steps) and "attn_scores" in vars(steps)


def test_a_shared_module_traced_in_both_modes_from_many_threads_gives_each_its_mode():
    module = build(MultiHeadAttention, 1, 3, 4, 6, 0.5, num_heads=2)
    expected = trace(module, BOOK_INPUTS).output

    def traced(i: int) -> torch.Tensor:
        return trace(module, BOOK_INPUTS, training=i % 2 == 1, seed=i).output

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(traced, range(64)))

    assert all(torch.equal(output, expected) for output in outputs[0::2])
    assert not any(torch.equal(output, expected) for output in outputs[1::2])
    assert not module.training
