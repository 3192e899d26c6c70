"""The Q, K, V & scaling page through AppTest: every step, the book's numbers, the scaling lab, safe labels."""

from types import SimpleNamespace

import numpy as np
import torch
from apptest_support import app, decode, figure_specs, markdown, next_step, type_sentence, zs
from tolerances import attention_bounds

import attention

PAGE = "pages/qkv.py"
BOOK_QUERY = "[0.4306, 1.4551]"  # the query for "journey", section 3.4.1
BOOK_SCORES = "[1.2705, 1.8524, 1.8111, 1.0795, 0.5577, 1.5440]"
BOOK_WEIGHTS = "[0.1500, 0.2264, 0.2199, 0.1311, 0.0906, 0.1820]"
BOOK_CONTEXT = "[0.3061, 0.8210]"
D_KS = tuple(2**k for k in range(11))
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"


def self_attention(seed: int = 123, d_in: int = 3, d_out: int = 2) -> attention.SelfAttention_v1:
    torch.manual_seed(seed)
    return attention.SelfAttention_v1(d_in, d_out)


def lines(at) -> dict[str, list[np.ndarray]]:
    """Each line chart's series, by the chart's title."""
    return {
        spec["layout"]["title"]["text"]: [decode(trace["y"]) for trace in spec["data"]]
        for spec in figure_specs(at)
        if spec["data"][0]["type"] == "scatter"
    }


def test_every_step_shows_the_books_numbers():
    module = self_attention()
    trace = attention.trace(module, attention.BOOK_INPUTS)
    at = app(PAGE)
    assert not at.exception

    for z, weight in zip(zs(at), (module.W_query, module.W_key, module.W_value), strict=True):
        np.testing.assert_array_equal(z, weight.detach().numpy())

    next_step(at)
    for z, name in zip(zs(at), ("queries", "keys", "values"), strict=True):
        np.testing.assert_array_equal(z, getattr(trace, name)[0, 0].numpy())
    assert f"Query x^(2), row `[1]` in Python, outlined: `query_2 = {BOOK_QUERY}`" in markdown(at)

    next_step(at)
    scores, scaled = zs(at)
    np.testing.assert_array_equal(scores, trace.attn_scores[0, 0].numpy())
    np.testing.assert_array_equal(scaled, trace.attn_scores[0, 0].numpy() / 2**0.5)
    assert f"`attn_scores_2 = {BOOK_SCORES}`" in markdown(at) and "√2 = 1.4142" in markdown(at)
    assert "`attn_scores_2 / √d_k = [" in markdown(at) and "scaled_scores" not in markdown(at)

    next_step(at)
    weights, context = zs(at)
    np.testing.assert_array_equal(weights, trace.attn_weights[0, 0].numpy())
    np.testing.assert_array_equal(context, module(attention.BOOK_INPUTS).detach().numpy())
    assert f"attn_weights_2 = {BOOK_WEIGHTS}" in markdown(at)
    assert f"context_vec_2 = {BOOK_CONTEXT}" in markdown(at)

    lab = attention.scaling_lab(D_KS, num_keys=8, temperature=1.0, seed=123)
    next_step(at)
    charts = lines(at)
    np.testing.assert_array_equal(charts["largest weight in a row"][0], lab.unscaled_max_weight.numpy())
    np.testing.assert_array_equal(charts["largest weight in a row"][1], lab.scaled_max_weight.numpy())
    np.testing.assert_array_equal(charts["row entropy (nats)"][0], lab.unscaled_entropy.numpy())
    text = markdown(at)
    assert f"averages **{lab.unscaled_max_weight[-1]:.2f}**" in text
    assert f"Scaled: **{lab.scaled_max_weight[-1]:.2f}**" in text
    assert lab.unscaled_max_weight[-1] > 0.9 > 0.5 > lab.scaled_max_weight[-1]  # the claim the text makes

    next_step(at)
    (grads,) = lines(at).values()
    np.testing.assert_array_equal(grads[0], lab.unscaled_grad_norm.numpy())
    np.testing.assert_array_equal(grads[1], lab.scaled_grad_norm.numpy())
    example = figure_specs(at)[1]
    np.testing.assert_array_equal(decode(example["data"][0]["y"]), lab.example_unscaled.numpy())
    np.testing.assert_array_equal(decode(example["data"][1]["y"]), lab.example_scaled.numpy())
    assert f"**{lab.unscaled_grad_norm[-1]:.3f}** at d_k = 1024" in markdown(at)

    next_step(at)
    v1_output, v2_output = zs(at)
    torch.manual_seed(789)  # the book builds SelfAttention_v2 after this seed
    v2 = attention.SelfAttention_v2(3, 2)
    np.testing.assert_array_equal(v2_output, v2(attention.BOOK_INPUTS).detach().numpy())
    np.testing.assert_allclose(v2_output[0], [-0.0739, 0.0713], atol=5e-5)  # printed in section 3.4.2
    # v1 multiplies x @ W, v2's nn.Linear x @ W.T: other summation orders, within the context bound
    out_proj = torch.nn.Linear(2, 2)  # attention_bounds' last stage, unused here: v1 and v2 stop at the context
    parts = dict(W_query=v2.W_query, W_key=v2.W_key, W_value=v2.W_value, head_dim=2, out_proj=out_proj)
    bound = attention_bounds(SimpleNamespace(**parts), attention.BOOK_INPUTS).context
    np.testing.assert_allclose(v1_output, v2_output, rtol=0, atol=bound)
    assert "max |difference| = **" in markdown(at)
    assert at.button(key="next:qkv").disabled


def test_the_lab_sliders_change_the_measurements_and_are_kept_between_steps():
    at = app(PAGE)
    at.session_state["step:qkv"] = 4
    at.run()
    at.slider(key="w_qkv_num_keys").set_value(32).run()
    at.select_slider(key="w_qkv_temperature").set_value(4.0).run()
    assert not at.exception
    lab = attention.scaling_lab(D_KS, num_keys=32, temperature=4.0, seed=123)
    np.testing.assert_array_equal(lines(at)["row entropy (nats)"][0], lab.unscaled_entropy.numpy())
    assert "log 32 = 3.47" in markdown(at)

    next_step(at)
    assert at.slider(key="w_qkv_num_keys").value == 32
    assert at.select_slider(key="w_qkv_temperature").value == 4.0
    example = figure_specs(at)[1]
    assert len(decode(example["data"][0]["y"])) == 32


def test_a_new_seed_and_sentence_update_the_figures():
    at = app(PAGE)
    at.number_input(key="w_seed").set_value(7).run()
    assert not at.exception
    module = self_attention(seed=7)
    np.testing.assert_array_equal(zs(at)[0], module.W_query.detach().numpy())

    text = "The quick brown fox jumps over the lazy dog near the river"
    type_sentence(at, text)
    at.number_input(key="w_d_out").set_value(4).run()
    next_step(at)
    inputs = attention.embed_tokens(attention.tokenize(text).ids, 3, 7)  # (12, 3)
    expected = attention.trace(self_attention(seed=7, d_out=4), inputs).queries[0, 0]
    np.testing.assert_array_equal(zs(at)[0], expected.numpy())  # the same trace on the same inputs


def test_hostile_text_is_shown_literally():
    at = app(PAGE)
    type_sentence(at, HOSTILE)
    assert not at.exception
    for _ in range(3):
        next_step(at)
        for spec in figure_specs(at):
            ticks = spec["layout"]["yaxis"]["ticktext"]
            assert not any("<" in tick for tick in ticks) and "&lt;/" in ticks
    assert "javascript" not in markdown(at) and "<b>x" not in markdown(at)


def test_the_scaling_step_names_scaled_dot_product_attention():
    at = app(PAGE, query_params={"step": "scaled-scores"})
    assert not at.exception
    text = markdown(at)
    assert "Vaswani et al. (2017)" in text and "**[scaled dot-product attention](/glossary#" in text
    next_step(at)
    assert "scaled dot-product attention" not in markdown(at)  # named once, on the step that divides by √d_k
