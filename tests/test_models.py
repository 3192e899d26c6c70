"""``explorer.models`` without Streamlit: head slices, the wrapper of heads, the layer's copy, per-head summaries, and
the settings a trained model fixes."""

import numpy as np
import pytest
import torch
from tolerances import attention_bounds

import attention
from attention.after_chapter.inspecting import layer_input
from attention.after_chapter.training import load_trained_gpt
from explorer import models
from explorer.settings import BOOK, GPT2, RANDOM, TEXT, TRAINED, Settings, from_query_params, to_query_params

TYPED = "The quick brown fox jumps over the lazy dog, and then it runs home to rest."


@pytest.fixture(scope="module")
def model():
    return load_trained_gpt()


def layer_inputs(model, text: str, layer: int) -> torch.Tensor:
    ids = attention.tokenize(text).ids
    return layer_input(model, ids, layer).inputs  # (1, T, 64)


@pytest.mark.parametrize("layer", range(4))
@pytest.mark.parametrize("text", [attention.BOOK_SENTENCE, TYPED])
def test_causal_head_slices_reproduce_the_layers_own_weights(model, layer, text):
    mha = model.trf_blocks[layer].att
    inputs = layer_inputs(model, text, layer)
    own = attention.trace(mha, inputs)
    bounds = attention_bounds(mha, inputs)  # one head's kernel may sum in another order than the layer's
    for head in range(mha.num_heads):
        single = models.head_module(mha, head, "CausalAttention")
        sliced = attention.trace(single, inputs)
        assert sliced.attn_weights.shape == (1, 1, inputs.shape[1], inputs.shape[1])
        torch.testing.assert_close(sliced.attn_weights[0, 0], own.attn_weights[0, head], **bounds.close("attn_weights"))
        torch.testing.assert_close(sliced.head_context[0, 0], own.head_context[0, head], **bounds.close("context"))
        other = (head + 1) % mha.num_heads  # a wrong slice lands 75 times the bound away or more (measured)
        assert (sliced.attn_weights[0, 0] - own.attn_weights[0, other]).abs().max() > 20 * bounds.attn_weights
        assert (sliced.head_context[0, 0] - own.head_context[0, other]).abs().max() > 20 * bounds.context


def test_v1_and_v2_slices_give_the_heads_queries_keys_and_values(model):
    mha = model.trf_blocks[2].att
    inputs = layer_inputs(model, TYPED, 2)[0]  # (T, 64)
    own = attention.trace(mha, inputs.unsqueeze(0))
    bound = attention_bounds(mha, inputs).close("projections")
    for head in range(mha.num_heads):
        for name in ("SelfAttention_v1", "SelfAttention_v2"):
            single = attention.trace(models.head_module(mha, head, name), inputs)
            for part in ("queries", "keys", "values"):
                torch.testing.assert_close(getattr(single, part)[0, 0], getattr(own, part)[0, head], **bound)


def test_wrapper_of_layer_concatenates_the_layers_heads_and_out_proj_finishes_it(model):
    mha = model.trf_blocks[1].att
    inputs = layer_inputs(model, TYPED, 1)
    wrapper = models.wrapper_of_layer(mha)
    own = attention.trace(mha, inputs)
    bounds = attention_bounds(mha, inputs)
    with torch.no_grad():
        concatenated = wrapper(inputs)  # (1, T, 64)
        torch.testing.assert_close(concatenated, own.context, **bounds.close("context"))
        torch.testing.assert_close(mha.out_proj(concatenated), own.output, **bounds.close("output"))


def test_layer_copy_has_the_settings_dropout_and_leaves_the_model_alone(model):
    mha = model.trf_blocks[0].att
    copy = models.layer_copy(mha, dropout=0.5)
    assert copy is not mha and copy.dropout.p == 0.5 and mha.dropout.p == 0.0
    inputs = layer_inputs(model, attention.BOOK_SENTENCE, 0)
    with torch.no_grad():
        torch.testing.assert_close(copy(inputs), mha(inputs), rtol=0, atol=0)


def test_a_head_outside_the_layer_is_refused(model):
    with pytest.raises(ValueError, match="head must be 0 to 3"):
        models.head_module(model.trf_blocks[0].att, 4, "CausalAttention")


def test_v1_cannot_hold_a_biased_head():
    torch.manual_seed(0)
    biased = attention.MultiHeadAttention(8, 8, 16, 0.0, num_heads=2, qkv_bias=True)
    with pytest.raises(ValueError, match="bias"):
        models.head_module(biased, 0, "SelfAttention_v1")
    v2 = models.head_module(biased, 1, "SelfAttention_v2")
    torch.testing.assert_close(v2.W_query.bias, biased.W_query.bias[4:])


@pytest.mark.parametrize("layer", range(1, 5))
@pytest.mark.parametrize("source", [BOOK, TEXT])
def test_the_trained_heads_summaries_differ(source, layer):
    found = models.summaries(Settings(source=source, text=TYPED, weights=TRAINED, layer=layer))
    assert found.previous_token.shape == found.first_token.shape == found.entropy.shape == (4,)
    table = np.stack([found.previous_token, found.first_token, found.entropy_share], axis=1)  # (h, 3)
    closest = min(np.abs(table[i] - table[j]).max() for i in range(4) for j in range(i + 1, 4))
    assert closest > 0.01, table  # no two heads alike
    assert (table.max(axis=0) - table.min(axis=0)).max() > 0.07, table
    assert ((found.entropy_share >= 0) & (found.entropy_share <= 1 + 1e-6)).all()


def test_random_weights_have_no_summaries():
    assert models.summaries(Settings()) is None


def test_the_model_fixes_the_sizes_and_random_keeps_the_books():
    trained = models.effective(Settings(weights=TRAINED, layer=3, head=2))
    assert (trained.d_in, trained.d_out, trained.num_heads, trained.context_length) == (64, 16, 4, 128)
    assert (trained.layer, trained.head, trained.effective_d_in) == (3, 2, 64)
    assert models.effective(Settings()) == Settings()


def test_layer_and_head_beyond_the_model_are_clamped_with_a_notice():
    settings, notices = models.fit(Settings(weights=TRAINED, layer=9, head=7))
    assert (settings.layer, settings.head) == (4, 3)
    assert len(notices) == 2 and "layers 1–4" in notices[0]


def test_gpt2_without_a_checkpoint_falls_back_to_random_with_the_loaders_message(monkeypatch):
    monkeypatch.delenv("ATTENTION_GPT2_CHECKPOINT", raising=False)
    settings, notices = models.fit(Settings(weights=GPT2))
    assert settings.weights == RANDOM
    assert "ATTENTION_GPT2_CHECKPOINT" in notices[0] and "random weight matrices" in notices[0]


def test_prepared_is_the_layers_input_cut_to_the_models_context():
    long_text = " ".join(["word"] * 300)
    data = models.prepared(Settings(source=TEXT, text=long_text, weights=TRAINED, layer=2))
    assert data.inputs.shape == (128, 64) and data.truncated_from == 300
    model = load_trained_gpt()
    expected = layer_input(model, data.ids, 1).inputs[0]
    torch.testing.assert_close(torch.from_numpy(data.inputs), expected, rtol=0, atol=0)


def test_link_parameters_are_strict_and_round_trip():
    settings, notices = from_query_params({"weights": "trained", "layer": "2", "layer_head": "3"})
    assert (settings.weights, settings.layer, settings.head, notices) == ("trained", 2, 3, [])
    assert from_query_params(to_query_params(settings))[0] == settings
    assert to_query_params(Settings()) == {}
    settings, notices = from_query_params({"weights": "[x](https://e.example)", "layer": "²"})
    assert (settings.weights, settings.layer) == ("random", 1)
    assert "'[x](https://e.example)'" in notices[0] and "layer='²'" in notices[1]
