"""The Generate page's view: the numbers it shows are the package's, and the cache equals recomputation."""

import numpy as np
import pytest
import torch
from tolerances import prefix_rounding_bounds, rounding_bounds

import attention
from attention.measuring.costs import CACHE_SHAPES, macs_per_new_token
from explorer.settings import GPT2, TEXT, Settings
from explorer.views import beyond as views

SAMPLING = views.GenerationOptions(max_new_tokens=12, temperature=1.0, top_k=20, seed=7)


@pytest.fixture(scope="module")
def gpt():
    return attention.load_trained_gpt()


@pytest.fixture(scope="module", params=[views.GenerationOptions(max_new_tokens=12), SAMPLING], ids=["greedy", "top-k"])
def generated(request):
    return request.param, views.generation(Settings(), request.param)


def test_the_views_tokens_and_numbers_are_the_packages(gpt, generated):
    options, view = generated
    prompt = attention.tokenize(attention.BOOK_SENTENCE).ids
    expected = attention.generate(
        gpt, prompt, 12, temperature=options.temperature, top_k=options.top_k, seed=options.seed
    )
    assert view.ids == expected.ids and view.prompt_tokens == len(prompt)
    assert "".join(view.pieces) == attention.BOOK_SENTENCE + "".join(attention.decode_pieces(expected.new_ids))
    for k, token in enumerate(expected.tokens):
        # the view runs the same generate code on the same ids in this thread: the same numbers
        np.testing.assert_array_equal(view.top_probs[k], token.probs_top)
        assert tuple(view.top_ids[k]) == token.ids_top
        assert view.cache_tokens[k] == token.cache_tokens == len(prompt) + k
        for layer, row in enumerate(token.attn_rows):
            seen = len(prompt) + k
            np.testing.assert_array_equal(view.attn_rows[k, layer, :, :seen], row.numpy())
            assert np.isnan(view.attn_rows[k, layer, :, seen:]).all()  # later keys: not seen yet


def test_the_cache_equals_recomputation_and_generating_without_it(gpt, generated):
    """Equal up to float32 rounding: the summation bound of ``tolerances`` at each step's scales."""
    options, view = generated
    check = views.cache_check(Settings(), options)
    assert check.same_tokens
    prompt_tokens = view.prompt_tokens
    every = prefix_rounding_bounds(gpt, list(view.ids[:-1]), range(prompt_tokens, len(view.ids)))  # each step's
    logits = max(float(bounds.logits.max()) for bounds in every)
    assert check.logits_max_difference <= logits
    whole = rounding_bounds(gpt, list(view.ids[:-1]))  # every cached token, as one pass makes them
    keys, values = torch.stack(whole.keys).numpy(), torch.stack(whole.values).numpy()  # (n_layers, n_heads, T, hd)
    assert check.cache_keys.shape == keys.shape == (4, 4, len(view.ids) - 1, 16)
    assert (np.abs(check.cache_keys - check.recomputed_keys) <= keys).all()
    assert check.keys_max_difference <= keys.max() and check.values_max_difference <= values.max()


def test_multiply_adds_are_the_cost_modules(gpt, generated):
    _, view = generated
    assert view.text_lengths == tuple(range(view.prompt_tokens + 1, len(view.ids)))
    for t, with_cache, without in zip(view.text_lengths, view.macs_with, view.macs_without, strict=True):
        assert with_cache == macs_per_new_token(gpt.cfg, t, use_cache=True).total
        assert without == macs_per_new_token(gpt.cfg, t, use_cache=False).total


def test_cache_rows_and_window_masks():
    rows = views.cache_rows(1024)
    assert [row[7] for row in rows] == [shape.bytes_per_token for shape in CACHE_SHAPES]
    gpt2_mha = rows[0]
    assert gpt2_mha[:2] == ("GPT-2 small", "MHA") and gpt2_mha[7] == 2 * 12 * 12 * 64 * 4 and gpt2_mha[8] == 72.0
    causal, window = views.window_masks(6, 6)
    np.testing.assert_array_equal(causal, attention.causal_mask(6).numpy())
    np.testing.assert_array_equal(window, causal)  # a window as long as the text is the causal mask
    _, narrow = views.window_masks(6, 2)
    assert narrow[5].tolist() == [True, True, True, True, False, False]


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("   ", views.GenerationOptions(), "Type a prompt"),
        ("Hello there", views.GenerationOptions(max_new_tokens=101), "at most 100"),
        ("word " * 130, views.GenerationOptions(), "Shorten the prompt"),
        ("word " * 100, views.GenerationOptions(), "Ask for at most"),
    ],
    ids=["empty", "over the cap", "prompt too long", "prompt and tokens too long"],
)
def test_bad_input_is_a_learners_message(text, options, message):
    with pytest.raises(ValueError, match=message):
        views.generation(Settings(source=TEXT, text=text), options)


def test_gpt2_without_a_checkpoint_falls_back_to_the_small_gpt():
    assert views.model_kind(Settings(weights=GPT2)) == "trained"
