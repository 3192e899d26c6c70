"""The chapter-4 GPT model built from the package's MultiHeadAttention, and the shipped trained one."""

from __future__ import annotations

import json
import math

import pytest
import torch
from tolerances import summation_error
from torch import nn

from attention import MultiHeadAttention, tokenize, trace
from attention.after_chapter.gpt import GELU, VERDICT_CONFIG, GPTConfig, GPTModel, LayerNorm
from attention.after_chapter.inspecting import every_layer_weights, first_value_ratio, head_summaries, layer_input
from attention.after_chapter.training import VERDICT_METRICS, VERDICT_WEIGHTS, load_gpt, load_trained_gpt, save_gpt

TINY = GPTConfig(vocab_size=60, context_length=12, emb_dim=16, n_heads=4, n_layers=3, drop_rate=0.0)
BOOK_SENTENCE = "Your journey starts with one step"
TYPED_SENTENCE = "I had always thought the painter was a cheap genius, though a good fellow enough, and rich."


def test_layer_norm_and_gelu_match_pytorch():
    x = torch.randn(2, 5, 16)
    ours = LayerNorm(16)
    with torch.no_grad():
        ours.scale.uniform_(0.5, 1.5)
        ours.shift.uniform_(-1, 1)
    theirs = nn.LayerNorm(16, eps=1e-5)
    with torch.no_grad():
        theirs.weight.copy_(ours.scale)
        theirs.bias.copy_(ours.shift)
    expected = theirs(x).detach()
    # Mean and variance are sums of 16; scale and shift round twice more, at the output's size.
    bound = float(summation_error([16, 16, 2], expected.abs().max()))
    assert torch.allclose(ours(x), expected, atol=bound, rtol=0)
    # GELU's tanh form rounds about 8 times, at most at |x| · (1 + 0.045 x²), the cube's size
    big = x.abs().max()
    gelu_bound = float(summation_error(8, big * (1 + 0.045 * big**2)))
    assert torch.allclose(GELU()(x), nn.functional.gelu(x, approximate="tanh"), atol=gelu_bound, rtol=0)


def test_the_model_has_the_books_names_and_the_packages_attention():
    model = GPTModel(TINY)
    names = set(model.state_dict())
    for name in (
        "tok_emb.weight",
        "pos_emb.weight",
        "trf_blocks.2.att.W_query.weight",
        "trf_blocks.2.att.out_proj.bias",
        "trf_blocks.2.att.mask",
        "trf_blocks.2.ff.layers.0.weight",
        "trf_blocks.2.ff.layers.2.bias",
        "trf_blocks.2.norm1.scale",
        "trf_blocks.2.norm2.shift",
        "final_norm.scale",
        "out_head.weight",
    ):
        assert name in names
    assert all(isinstance(block.att, MultiHeadAttention) for block in model.trf_blocks)
    assert model(torch.randint(60, (2, 7))).shape == (2, 7, 60)


def test_tied_weights_share_one_matrix():
    model = GPTModel(GPTConfig(**{**TINY.__dict__, "tie_weights": True}))
    assert model.out_head.weight is model.tok_emb.weight


def test_layer_input_is_what_the_block_feeds_its_attention():
    torch.manual_seed(0)
    model = GPTModel(TINY).eval()
    ids = [3, 14, 15, 9, 26, 5]
    x = model.embed(torch.tensor([ids]))
    for layer, block in enumerate(model.trf_blocks):
        view = layer_input(model, ids, layer)
        assert view.attention is block.att
        assert torch.equal(view.inputs, block.norm1(x))  # the same blocks on the same numbers
        with torch.no_grad():  # forward is steps().output, as trace reads it
            assert torch.equal(trace(view.attention, view.inputs).output, block.att(view.inputs))
            x = block(x)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_every_layer_weights_are_each_layers_trace_from_one_pass(qkv_bias):
    torch.manual_seed(1)
    model = GPTModel(GPTConfig(**{**TINY.__dict__, "qkv_bias": qkv_bias, "drop_rate": 0.1})).train()
    ids = [3, 14, 15, 9, 26, 5, 35]
    weights = every_layer_weights(model, ids)
    assert weights.shape == (TINY.n_layers, TINY.n_heads, 7, 7)
    assert model.training  # the model's mode is restored
    for layer in range(TINY.n_layers):
        view = layer_input(model, ids, layer)
        oracle = trace(view.attention, view.inputs).attn_weights[0]  # (h, T, T): the per-layer trace
        assert torch.equal(weights[layer], oracle)  # the same layers' steps on the same numbers
    assert not torch.equal(weights[0], weights[1])  # layers differ: each is its own layer's
    sums = float(summation_error(2 * 7 + 3, 1.0))  # the softmax's own rounding of 7 weights, then their sum
    torch.testing.assert_close(weights.sum(-1), torch.ones(TINY.n_layers, TINY.n_heads, 7), atol=sums, rtol=0)


def test_every_layer_weights_checks_the_ids_as_layer_input_does():
    with pytest.raises(ValueError, match="at most 12 tokens"):
        every_layer_weights(GPTModel(TINY), list(range(13)))


@pytest.mark.parametrize(
    ("ids", "layer", "words"),
    [
        ([1, 2], 3, "layer must be"),
        ([1, 2], -1, "layer must be"),
        ([], 0, "at least one"),
        (list(range(13)), 0, "at most 12 tokens"),
        ([1, 60], 0, "between 0 and 59"),
        (["a"], 0, "whole numbers"),
    ],
)
def test_layer_input_explains_bad_requests(ids, layer, words):
    with pytest.raises(ValueError, match=words):
        layer_input(GPTModel(TINY), ids, layer)


def test_head_summaries_on_known_patterns():
    T = 5
    previous = torch.zeros(T, T)
    previous[0, 0] = 1
    previous[torch.arange(1, T), torch.arange(T - 1)] = 1
    first = torch.zeros(T, T)
    first[:, 0] = 1
    uniform = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(1)
    s = head_summaries(torch.stack([previous, first, uniform]).unsqueeze(0))
    assert torch.allclose(s.previous_token, torch.tensor([1.0, 0.25, sum(1 / k for k in range(2, T + 1)) / 4]))
    assert torch.allclose(s.first_token, torch.tensor([0.25, 1.0, sum(1 / k for k in range(2, T + 1)) / 4]))
    assert torch.allclose(s.entropy[:2], torch.zeros(2), atol=1e-6)
    assert math.isclose(s.entropy[2].item(), s.uniform_entropy, rel_tol=1e-5)
    assert torch.allclose(s.mean_distance[:2], torch.tensor([1.0, 2.5]))  # first token: 1, 2, 3, 4 back
    with pytest.raises(ValueError, match="at least 2 tokens"):
        head_summaries(torch.ones(1, 1, 1))


def test_save_and_load_round_trip_without_pickle(tmp_path):
    torch.manual_seed(1)
    model = GPTModel(GPTConfig(**{**TINY.__dict__, "tie_weights": True})).eval()
    path = tmp_path / "tiny.safetensors"
    save_gpt(model, path, dtype=torch.float32)
    loaded = load_gpt(path)
    assert loaded.cfg == model.cfg
    ids = torch.randint(60, (1, 9))
    with torch.no_grad():
        assert torch.equal(loaded(ids), model(ids))


# The shipped model, trained on "The Verdict" by scripts/train.py


def test_shipped_gpt_is_safetensors_and_loads():
    header_size = int.from_bytes(VERDICT_WEIGHTS.read_bytes()[:8], "little")
    header = json.loads(VERDICT_WEIGHTS.read_bytes()[8 : 8 + header_size])
    assert json.loads(header["__metadata__"]["config"]) == VERDICT_CONFIG.__dict__
    model = load_trained_gpt()
    assert model.cfg == VERDICT_CONFIG and not model.training
    metrics = json.loads(VERDICT_METRICS.read_text())
    assert metrics["train_loss"] < metrics["losses"][0] - 3  # it learned the story (and overfits it, as in chapter 5)
    assert math.isfinite(metrics["val_loss"])
    assert metrics["command"].startswith("python scripts/train.py")


@pytest.mark.parametrize("text", [BOOK_SENTENCE, TYPED_SENTENCE])
def test_trained_heads_differ(text):
    model = load_trained_gpt()
    ids = tokenize(text).ids
    spreads = []
    for layer in range(model.cfg.n_layers):
        view = layer_input(model, ids, layer)
        weights = trace(view.attention, view.inputs).attn_weights  # (1, h, T, T)
        s = head_summaries(weights)
        assert s.previous_token.shape == s.first_token.shape == s.entropy.shape == (model.cfg.n_heads,)
        spreads.append(
            max(
                (s.previous_token.max() - s.previous_token.min()).item(),
                (s.first_token.max() - s.first_token.min()).item(),
                (s.entropy.max() - s.entropy.min()).item() / s.uniform_entropy,
            )
        )
    assert max(spreads) > 0.3
    assert sum(spread > 0.1 for spread in spreads) >= model.cfg.n_layers // 2


def test_first_value_ratio_is_the_first_tokens_value_length_over_the_others_mean():
    values = torch.zeros(2, 3, 4)
    values[0, 0, 0], values[0, 1, 1], values[0, 2, 2] = 1.0, 2.0, 2.0  # first half as long: 0.5
    values[1, :, 3] = torch.tensor([3.0, 1.0, 2.0])  # 3 against a mean of 1.5: 2.0
    torch.testing.assert_close(first_value_ratio(values), torch.tensor([0.5, 2.0]))
    torch.testing.assert_close(first_value_ratio(values.unsqueeze(0)), torch.tensor([0.5, 2.0]))
    with pytest.raises(ValueError, match="T ≥ 2"):
        first_value_ratio(torch.ones(2, 1, 4))
