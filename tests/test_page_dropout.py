"""The Dropout page through AppTest: it opens in the book's setting (p = 0.5, training, on the causal weights
of seed 789, drawn after seed 123); one draw against ``nn.Dropout``, the average of many draws, eval mode once
the sidebar says so, the button back to the book's setting, and safe labels."""

import numpy as np
import pytest
import torch
from apptest_support import app, decode, figure_specs, markdown, next_step, previous_step, zs
from tolerances import summation_error

import attention
from explorer.views import chapter

PAGE = "pages/dropout.py"
BOOK_DROPPED_ONES = [  # the book's Dropout(0.5) on torch.ones(6, 6) after torch.manual_seed(123)
    [2, 2, 0, 2, 2, 0],
    [0, 0, 0, 2, 0, 2],
    [2, 2, 2, 2, 0, 2],
    [0, 2, 2, 0, 0, 2],
    [0, 2, 0, 2, 0, 2],
    [0, 2, 2, 2, 2, 0],
]
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"
FUTURE = attention.causal_mask(6).numpy()


def causal_weights(inputs: torch.Tensor = attention.BOOK_INPUTS, seed: int = 789) -> torch.Tensor:
    """Section 3.5.1's weights: the default seed (123) builds the page's module with the book's 789."""
    torch.manual_seed(seed)  # as the book builds it
    ca = attention.CausalAttention(inputs.shape[-1], 2, 1024, 0.0)
    return attention.trace(ca, inputs).attn_weights[0, 0]  # (num_tokens, num_tokens)


def test_eval_mode_in_the_sidebar_drops_nothing():
    weights = causal_weights().numpy()
    at = app(PAGE, query_params={"p": "0.5"})  # p changed, mode still eval: the page follows the sidebar
    assert not at.exception
    np.testing.assert_array_equal(zs(at)[0], BOOK_DROPPED_ONES)  # the book's demo does not depend on the settings
    assert "**15** of 36" in markdown(at) and "Sidebar: **eval mode** · dropout p = **0.50**" in markdown(at)

    next_step(at)
    (spec,) = figure_specs(at)
    shown = decode(spec["data"][0]["z"])
    np.testing.assert_array_equal(shown[~FUTURE], weights[~FUTURE])
    assert not [t for t in spec["data"] if t.get("name") == "dropped"]
    assert "Nothing is dropped" in markdown(at)

    next_step(at)
    next_step(at)
    sums = decode(figure_specs(at)[0]["data"][0]["y"])
    assert np.abs(sums - 1.0).max() <= summation_error(2 * 6 + 3, 1.0)  # 6 weights' softmax rounding, then the sum
    next_step(at)
    # eval mode draws nothing: s copies of a float32 weight sum exactly in float64, and ÷ s gives it back
    np.testing.assert_array_equal(decode(figure_specs(at)[0]["data"][0]["y"]), 0.0)
    assert "their mean does too" in markdown(at)


def test_the_book_setting_drops_weights_like_nn_dropout_and_the_button_returns_to_it():
    weights = causal_weights()
    torch.manual_seed(123)
    expected = torch.nn.Dropout(0.5)(weights).numpy()  # the book's way: a training-mode Dropout module
    kept = expected != 0
    at = app(PAGE, query_params={"step": "one-draw", "p": "0.3", "mode": "train"})
    assert "Sidebar: **training mode** · dropout p = **0.30**" in markdown(at)
    at.button(key="book_dropout").click().run()
    assert not at.exception
    assert not at.toggle(key="w_training").value and at.number_input(key="w_dropout").value == 0.0
    assert at.button(key="book_dropout").disabled
    assert "The book's setting: **training mode** · dropout p = **0.50**" in markdown(at)

    (spec,) = figure_specs(at)
    shown = decode(spec["data"][0]["z"])
    np.testing.assert_array_equal(shown[kept], expected[kept])
    assert np.isnan(shown[~kept]).all()
    dropped = [t for t in spec["data"] if t.get("name") == "dropped"]
    lost = int((~kept & ~FUTURE).sum())
    assert len(dropped) == 1 and dropped[0]["text"] == ["dropped"] * lost
    assert f"dropped **{lost}** of the 21" in markdown(at)

    next_step(at)
    query, key = np.argwhere(kept)[-1]
    before, after = (decode(trace["y"]) for trace in figure_specs(at)[0]["data"])
    np.testing.assert_array_equal(before, weights.numpy()[query])
    np.testing.assert_array_equal(after, expected[query])
    survivor = at.dataframe[0].value.iloc[0]
    assert survivor["after"] == f"{expected[query, key]:.4f}" and "**2.0000**" in markdown(at)

    next_step(at)
    sums = decode(figure_specs(at)[0]["data"][0]["y"])
    bound = summation_error(6, np.abs(expected).sum(axis=1))  # the page's sums and numpy's: two orders of 6 terms
    assert (np.abs(sums - expected.sum(axis=1)) <= bound).all()
    assert f"**{sums.min():.4f}**" in markdown(at)


def test_many_draws_converge_and_the_slider_is_kept_between_steps():
    weights = causal_weights()
    at = app(PAGE, query_params={"step": "many-draws"})  # the book's setting
    assert not at.exception
    at.slider(key="dropout_samples").set_value(64).run()
    average = attention.dropout_average(weights, 0.5, num_samples=64, seed=123)
    line = figure_specs(at)[0]["data"][0]
    np.testing.assert_array_equal(decode(line["x"]), average.num_samples.numpy())
    np.testing.assert_array_equal(decode(line["y"]), average.max_abs_error.numpy())
    assert figure_specs(at)[0]["layout"]["xaxis"]["type"] == "log"

    previous_step(at)
    next_step(at)
    next_step(at)
    assert at.slider(key="dropout_samples").value == 64
    mean, undropped = zs(at)
    np.testing.assert_array_equal(mean[~FUTURE], average.mean_weights.numpy()[~FUTURE])
    np.testing.assert_array_equal(undropped[~FUTURE], weights.numpy()[~FUTURE])
    assert f"**{average.max_abs_error[-1].item():.4f}**" in markdown(at)


def test_changing_the_seed_changes_the_weights_and_the_draw():
    at = app(PAGE, query_params={"p": "0.5", "mode": "train", "step": "one-draw"})
    at.number_input(key="w_seed").set_value(7).run()
    assert not at.exception
    expected = attention.apply_dropout(causal_weights(seed=7), 0.5, seed=7).dropped_weights.numpy()
    shown = zs(at)[0]
    np.testing.assert_array_equal(shown[expected != 0], expected[expected != 0])
    assert np.isnan(shown[expected == 0]).all()


def test_hostile_text_is_shown_literally():
    at = app(PAGE, query_params={"input": "text", "text": HOSTILE, "p": "0.5", "mode": "train", "step": "survivors"})
    assert not at.exception
    ids = attention.tokenize(HOSTILE).ids
    assert figure_specs(at)[0]["data"][0]["x"] is not None
    ticks = figure_specs(at)[0]["layout"]["xaxis"]["ticktext"]
    assert 0 < len(ticks) <= len(ids) and any("&lt;" in tick for tick in ticks)  # labels thinned to fit
    assert not any("<b>" in tick for tick in ticks) and "javascript" not in markdown(at)
    previous_step(at)
    spec = figure_specs(at)[0]
    assert not any("<b>" in tick for tick in spec["layout"]["yaxis"]["ticktext"])


def test_long_inputs_average_fewer_draws():
    assert chapter.dropout_sample_limit(6) == attention.dropout.MAX_DROPOUT_SAMPLES
    assert chapter.dropout_sample_limit(64) == attention.dropout.MAX_DROPOUT_SAMPLES
    assert 1 < chapter.dropout_sample_limit(1024) < chapter.dropout_sample_limit(200) < 2000


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_the_draw_step_says_where_dropout_can_go(mode):
    at = app(PAGE, query_params={"p": "0.5", "mode": mode, "step": "one-draw"})
    assert not at.exception
    text = markdown(at)
    assert "two places: to the [attention weights](/glossary#" in text
    assert "or after multiplying them by the values" in text
    assert "It takes the first, the more common variant in practice" in text  # the book's choice, section 3.5.2


def test_the_first_step_says_what_rate_gpt_training_uses():
    """The demo's p = 0.5 is not what GPT models train with (the book: 0.1 or 0.2 are common)."""
    at = app("pages/dropout.py")
    assert "GPT models usually train with p = 0.1 or 0.2" in markdown(at)
