"""The Generate page through AppTest: every step, the package's numbers, the pickers, bad input, timing."""

import numpy as np
import pytest
from apptest_support import app, decode, figure_specs, markdown, next_step, type_sentence
from tolerances import rounding_bounds

import attention

PAGE = "pages/generate.py"
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"


@pytest.fixture(scope="module")
def expected():
    prompt = attention.tokenize(attention.BOOK_SENTENCE).ids
    return attention.generate(attention.load_trained_gpt(), prompt, 40)


@pytest.fixture(scope="module")
def bounds(expected):
    """float32's summation bounds for passes over the prompt and the first 4 new tokens, and over all of it:
    the page generates in its own thread, whose kernels may sum in another order."""
    ids = [*expected.prompt_ids, *(t.token_id for t in expected.tokens)]
    model = attention.load_trained_gpt()
    return {n: rounding_bounds(model, ids[:n]) for n in (6, 10, len(ids))}


def test_every_step_runs_with_the_books_sentence():
    at = app(PAGE)
    assert not at.exception
    assert "**Prompt:** Your journey starts with one step" in markdown(at)
    titles = []
    for _ in range(5):
        next_step(at)
        titles += [spec["layout"]["title"]["text"] for spec in figure_specs(at)]
    assert "causal mask" in titles and "sliding window of 3" in titles
    assert "Multiply-adds per new token (log axes)" in titles


def test_token_by_token_shows_the_packages_row_and_probabilities(expected, bounds):
    at = next_step(app(PAGE, query_params={"token": "4", "gen_layer": "1", "head": "1"}))
    assert at.slider(key="w_generate_token").value == 5
    rows, bars = figure_specs(at)
    z = decode(rows["data"][0]["z"])
    seen = 6 + 4  # the query of new token 5 sees the prompt's 6 tokens and 4 new ones
    assert z.shape == (5, seen)
    row_bound = float(bounds[10].rows[1].max())  # a weight moves at most twice its row's score bound: ≤ 0.005
    np.testing.assert_allclose(z[-1], expected.tokens[4].attn_rows[1][1].numpy(), atol=row_bound, rtol=0)
    # a probability moves by at most a factor exp(2 · the largest logit bound): measured 2e-6 relative, bound 1.5%
    logit_bound = float(bounds[10].logits.max())
    np.testing.assert_allclose(decode(bars["data"][0]["y"]), expected.tokens[4].probs_top, rtol=2 * logit_bound)
    at.slider(key="w_generate_token").set_value(1).run()
    rows, _ = figure_specs(at)
    first_row = expected.tokens[0].attn_rows[1][1].numpy()
    np.testing.assert_allclose(decode(rows["data"][0]["z"])[-1], first_row, atol=float(bounds[6].rows[1].max()), rtol=0)
    next_step(at)  # the cache: the picked token and layer carry over
    keys, again = (decode(spec["data"][0]["z"]) for spec in figure_specs(at))
    assert keys.shape == (6, 16)
    key_bound = max(float(k.max()) for k in bounds[len(expected.prompt_ids) + 40].keys)  # every layer's: ≤ 0.002
    np.testing.assert_allclose(keys, again, atol=key_bound, rtol=0)
    assert "the same 40 tokens" in markdown(at)


def test_a_link_counts_token_layer_and_head_from_1_and_an_old_link_from_0():
    new = next_step(app(PAGE, query_params={"token_n": "5", "gen_layer_n": "2", "head_n": "2"}))
    old = next_step(app(PAGE, query_params={"token": "4", "gen_layer": "1", "head": "1"}))  # counted from 0
    for at in (new, old):
        assert not at.exception
        assert [at.slider(key=f"w_generate_{name}").value for name in ("token", "gen_layer", "head")] == [5, 2, 2]
        written = {name: at.query_params.get(name) for name in ("token_n", "gen_layer_n", "head_n", "token", "head")}
        assert written == {"token_n": "5", "gen_layer_n": "2", "head_n": "2", "token": None, "head": None}
    assert figure_specs(new) == figure_specs(old)
    assert "New token 5 of 40" in markdown(new) and "layer 2, head 2" in figure_specs(new)[0]["layout"]["title"]["text"]


def test_timing_runs_both_ways_in_one_measurement():
    at = app(PAGE, query_params={"step": "cost-per-token"})
    at.button(key="generate_time").click().run()
    assert not at.exception
    assert "side by side in one run" in markdown(at)
    assert [spec["layout"]["title"]["text"] for spec in figure_specs(at)][-1] == "Measured time per new token"


@pytest.mark.parametrize(
    ("text", "new_tokens", "message"),
    [
        ("   ", 40, "Type a prompt"),
        ("Hello", 150, "1 to 100 new tokens at a time"),
        ("word " * 100, 40, "Ask for at most 27 new tokens"),
        ("word " * 200, 40, "Shorten the prompt"),
    ],
    ids=["empty", "over the cap", "past the context", "prompt too long"],
)
def test_bad_input_is_a_message_never_a_traceback(text, new_tokens, message):
    at = app(PAGE)
    at.number_input(key="w_gen_new").set_value(new_tokens).run()
    at = type_sentence(at, text)
    assert not at.exception
    assert any(message in w.value for w in at.warning), [w.value for w in at.warning]


def test_sampling_settings_and_a_hostile_prompt():
    at = type_sentence(app(PAGE), HOSTILE)
    at.slider(key="w_gen_temperature").set_value(1.0).run()
    at.selectbox(key="w_gen_top_k").set_value(20).run()
    assert not at.exception
    text = markdown(at)
    assert "temperature 1" in text and "the 20 likeliest tokens" in text
    assert r"**Prompt:** \<b\>x\<\/b\> \*\*y\*\*" in text  # escaped: shown as typed, never as Markdown


def test_presenter_mode_runs_every_step():
    at = app(PAGE, query_params={"present": "1"})
    for _ in range(5):
        next_step(at)
    assert not at.exception
