"""The Causal mask page through AppTest: every step against ``CausalAttention`` built with the book's seed for
section 3.5.1 (789, ``SelfAttention_v2``'s weights), the sidebar's seed once it changes, and safe labels."""

import numpy as np
import torch
from apptest_support import app, captions, decode, figure_specs, markdown, next_step, type_sentence, zs

import attention

PAGE = "pages/causal_mask.py"
BOOK_SEED = 789  # section 3.5.1 reuses the SelfAttention_v2 built after torch.manual_seed(789)
BOOK_ROW_2 = [0.5517, 0.4483]  # section 3.5.1's masked_simple_norm, row 2
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"


def causal_trace(inputs: torch.Tensor, seed: int = BOOK_SEED, d_out: int = 2) -> attention.Trace:
    torch.manual_seed(seed)  # as the book builds it
    ca = attention.CausalAttention(inputs.shape[-1], d_out, 1024, 0.0)
    return attention.trace(ca, inputs)


def test_every_step_matches_causal_attention_and_the_book():
    trace = causal_trace(attention.BOOK_INPUTS)
    comparison = attention.compare_masking(trace.scaled_scores[0, 0])
    future = attention.causal_mask(6).numpy()
    at = app(PAGE)
    assert not at.exception

    (unmasked,) = zs(at)
    np.testing.assert_array_equal(unmasked, comparison.unmasked_weights.numpy())
    share = comparison.unmasked_weights[torch.from_numpy(future)].sum().item() / 6
    assert f"{share:.1%}" in markdown(at)

    next_step(at)
    mask, mask_simple = zs(at)
    np.testing.assert_array_equal(mask, future.astype(float))
    np.testing.assert_array_equal(mask_simple, torch.tril(torch.ones(6, 6)).numpy())
    assert "self.mask[:6, :6]" in markdown(at) and "**15** of 36" in markdown(at)
    assert "so its mask is (6, 6)" in markdown(at) and "(1024, 1024)" not in markdown(at), "the book's buffer is (6, 6)"

    next_step(at)
    masked_simple, renormalized = zs(at)
    np.testing.assert_array_equal(masked_simple, comparison.unmasked_weights.numpy() * ~future)
    np.testing.assert_array_equal(renormalized[~future], comparison.weights_renormalized.numpy()[~future])
    np.testing.assert_allclose(renormalized[1, :2], BOOK_ROW_2, atol=5e-5)
    assert "Row 2, query x^(2), is Python's row `[1]`: [0.5517, 0.4483, …]" in markdown(at)

    next_step(at)
    (spec,) = figure_specs(at)
    scores = decode(spec["data"][0]["z"])
    assert np.isnan(scores[future]).all()  # the book's -inf, drawn as blank cells
    np.testing.assert_array_equal(scores[~future], trace.attn_scores[0, 0].numpy()[~future])  # unscaled
    labels = [trace for trace in spec["data"] if trace.get("name") == "masked"]
    assert len(labels) == 1 and labels[0]["text"] == ["−∞"] * 15
    assert "exp(−∞) = **0**" in markdown(at)

    next_step(at)
    renormalized, weights = zs(at)
    np.testing.assert_array_equal(weights[~future], trace.attn_weights[0, 0].numpy()[~future])
    np.testing.assert_array_equal(weights[~future], comparison.weights_neg_inf.numpy()[~future])
    assert np.isnan(weights[future]).all() and "with weight 1.0000" in markdown(at)
    assert f"max |left − right| = **{comparison.max_abs_difference:.1e}**" in markdown(at)

    next_step(at)
    (context,) = zs(at)
    np.testing.assert_array_equal(context, trace.output[0].numpy())
    assert "Batches page" in captions(at)
    assert at.button(key="next:causal_mask").disabled
    assert not at.exception


def test_changing_the_seed_updates_the_figures():
    at = app(PAGE, query_params={"step": "context-vectors"})
    at.number_input(key="w_seed").set_value(7).run()
    assert not at.exception
    expected = causal_trace(attention.BOOK_INPUTS, seed=7).output[0].numpy()
    np.testing.assert_array_equal(zs(at)[0], expected)


def test_a_typed_sentence_is_masked_and_its_labels_are_escaped():
    at = app(PAGE, query_params={"input": "text", "text": "Hello", "step": "two-routes"})
    at.text_input(key="w_text").input(HOSTILE).run()
    assert not at.exception
    tokenized = attention.tokenize(HOSTILE)
    trace = causal_trace(attention.embed_tokens(tokenized.ids, 3, 123))  # embedded with the sidebar's seed
    num_tokens = len(tokenized.ids)
    future = attention.causal_mask(num_tokens).numpy()
    spec = figure_specs(at)[1]  # the -inf route, beside the tril route
    weights = decode(spec["data"][0]["z"])
    assert weights.shape == (num_tokens, num_tokens)
    np.testing.assert_array_equal(weights[~future], trace.attn_weights[0, 0].numpy()[~future])
    ticks = spec["layout"]["yaxis"]["ticktext"] + spec["layout"]["xaxis"]["ticktext"]
    assert any("&lt;" in tick for tick in ticks) and not any("<b>" in tick for tick in ticks)
    assert "javascript" not in markdown(at)


def test_dropout_in_the_sidebar_leaves_this_page_in_eval_mode():
    at = app(PAGE, query_params={"p": "0.5", "mode": "train", "step": "context-vectors"})
    assert not at.exception
    np.testing.assert_array_equal(zs(at)[0], causal_trace(attention.BOOK_INPUTS).output[0].numpy())
    assert "eval mode" in captions(at)


def test_the_mask_step_names_the_sidebars_buffer_once_the_numbers_are_not_the_books():
    at = app(PAGE, query_params={"input": "text", "text": "one two three four", "step": "the-mask"})
    assert not at.exception
    assert "Here context_length = 1,024, so it is (1024, 1024)" in markdown(at)
    assert "[`context_length`](/glossary#context_length) is the most tokens it accepts" in markdown(at)
    assert "[buffer](/glossary#buffer)" in markdown(at)


NOTE = "Every weight here is within **"  # the note under near-uniform weights (``page_text.even_weights``)


def notes(at) -> list[str]:
    return [box.value for box in at.info if box.value.startswith(NOTE)]


def test_a_near_uniform_sentence_is_told_so_and_what_to_try_and_the_books_example_is_not():
    """Issue 54: the book's weights lie up to 0.037 from 1/6 (no note); "The cat sat on the mat because it was tired"
    gives every weight within 0.02 of 1/10, which the 0–1 scale shows as one colour. Trained weights end it."""
    at = app(PAGE)
    assert not at.exception and notes(at) == []
    type_sentence(at, "The cat sat on the mat because it was tired")
    (note,) = notes(at)
    assert "of an even share, 1/10 = 0.10" in note and "random" in note and "3-d inputs" in note
    weights = at.radio(key="w_weights")
    assert "**Trained** under **Weight matrices** in the sidebar" in note
    assert weights.label == "Weight matrices" and "Trained (small GPT on The Verdict)" in weights.options
    weights.set_value("trained").run()
    assert not at.exception and notes(at) == []  # the trained layer's weights are far from even
