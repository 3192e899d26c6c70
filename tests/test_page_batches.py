"""The Batches & CausalAttention page through AppTest: every step, the book's numbers, padding, safe labels."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from apptest_support import app, captions, figure_specs, markdown, next_step, previous_step, zs
from tolerances import attention_bounds

import attention

PAGE = "pages/batches.py"
BOOK_OUTPUT_ROWS = [[-0.4519, 0.2216], [-0.5874, 0.0058]]  # printed in the book, section 3.5.3
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"


def causal(seed: int = 123, d_in: int = 3, d_out: int = 2) -> attention.CausalAttention:
    torch.manual_seed(seed)
    return attention.CausalAttention(d_in, d_out, 1024, 0.0)


def test_every_step_shows_the_books_batch():
    batch = torch.stack((attention.BOOK_INPUTS, attention.BOOK_INPUTS))  # (2, 6, 3)
    trace = attention.trace(causal(), batch)
    at = app(PAGE)
    assert not at.exception

    inputs = zs(at)
    assert len(inputs) == 2 and "(2, 6, 3)" in markdown(at)
    for item in inputs:
        np.testing.assert_array_equal(item, attention.BOOK_INPUTS.numpy())

    next_step(at)
    (mask,) = zs(at)
    np.testing.assert_array_equal(mask, attention.causal_mask(6).numpy().astype(float))
    assert "(1024, 1024)" in markdown(at) and "self.mask[:6, :6]" in markdown(at)

    next_step(at)
    weights = zs(at)
    assert len(weights) == 2
    for item, z in enumerate(weights):
        expected = trace.attn_weights[item, 0].numpy()
        visible = ~attention.causal_mask(6).numpy()
        assert np.isnan(z[~visible]).all()
        np.testing.assert_array_equal(z[visible], expected[visible])

    next_step(at)
    outputs = zs(at)
    for item, z in enumerate(outputs):
        np.testing.assert_array_equal(z, trace.output[item].numpy())
        np.testing.assert_allclose(z[:2], BOOK_OUTPUT_ROWS, atol=1e-4)
    text = markdown(at)
    assert "(2, 6, 2)" in text and "-0.4519, 0.2216" in text
    assert "These are the book's numbers: section 3.5.3" in captions(at)
    assert "max |batched − alone|" in text
    assert at.button(key="next:batches").disabled
    assert not at.exception


def test_a_second_sentence_is_padded_at_the_end_and_changes_nothing():
    at = app(PAGE, query_params={"input": "text", "text": "The cat sat on the mat", "step": "context-vectors"})
    at.text_input(key="second_text").input("Hello world").run()
    assert not at.exception
    text = markdown(at)
    assert "Padding at the end changed nothing" in text
    assert "no longer the book's" in captions(at)
    first = attention.tokenize("The cat sat on the mat")
    second = attention.tokenize("Hello world")
    ca = causal()
    for index, tokenized in enumerate((first, second)):
        x = attention.embed_tokens(tokenized.ids, 3, 123).unsqueeze(0)  # (1, num_tokens, 3)
        alone = ca(x)[0].detach().numpy()
        z = zs(at)[index]
        assert z.shape == (len(first.ids), 2)
        # in a padded batch the matmuls may sum in another order: the context vectors' bound (no out_proj here)
        parts = dict(W_query=ca.W_query, W_key=ca.W_key, W_value=ca.W_value, head_dim=2, out_proj=torch.nn.Linear(2, 2))
        bound = attention_bounds(SimpleNamespace(**parts), x).context
        np.testing.assert_allclose(z[: len(tokenized.ids)], alone, rtol=0, atol=bound)
    ticks = figure_specs(at)[1]["layout"]["yaxis"]["ticktext"]
    assert ticks[-1] == "&lt;|endoftext|&gt;" and ticks.count("&lt;|endoftext|&gt;") == len(first.ids) - 2

    previous_step(at)
    previous_step(at)
    previous_step(at)
    pad = attention.token_vector(attention.tokens.ENDOFTEXT_ID, 3, 123).numpy()
    np.testing.assert_array_equal(zs(at)[1][2:], np.tile(pad, (len(first.ids) - 2, 1)))
    assert "padded at the end" in "\n".join(i.value for i in at.info)


def test_the_second_sentence_comes_from_a_link_and_is_escaped():
    at = app(PAGE, query_params={"input": "text", "text": "Hi there", "second": HOSTILE, "step": "item-weights"})
    assert not at.exception
    assert at.text_input(key="second_text").value == HOSTILE
    assert at.query_params["second"] == HOSTILE  # the page keeps it in the link
    labels = figure_specs(at)[1]["layout"]["yaxis"]["ticktext"]
    assert any("&lt;" in label for label in labels) and not any("<b>" in label for label in labels)
    assert "javascript" not in markdown(at)


def test_changing_the_seed_updates_the_weights_and_outputs():
    at = app(PAGE, query_params={"step": "context-vectors"})
    at.number_input(key="w_seed").set_value(7).run()
    assert not at.exception
    batch = torch.stack((attention.BOOK_INPUTS, attention.BOOK_INPUTS))
    expected = attention.trace(causal(seed=7), batch).output.numpy()
    np.testing.assert_array_equal(zs(at)[0], expected[0])
    assert not np.allclose(zs(at)[0][:2], BOOK_OUTPUT_ROWS, atol=1e-3)
    assert "no longer the book's numbers: seed 7, not 123" in captions(at)


def test_training_mode_says_why_the_comparison_is_skipped():
    at = app(PAGE, query_params={"p": "0.5", "mode": "train", "step": "context-vectors"})
    assert not at.exception
    assert "comparison with each sentence alone is skipped" in markdown(at)
    previous_step(at)
    titles = [spec["layout"]["title"]["text"] for spec in figure_specs(at)]
    assert all("after dropout" in title for title in titles)


def test_the_weights_step_says_why_transpose_1_2_and_not_T():
    keys = torch.arange(2 * 6 * 2, dtype=torch.float32).reshape(2, 6, 2)  # (b, num_tokens, d_out) of the book
    with pytest.warns(UserWarning, match="deprecated"):  # what the page says of torch's .T on 3-D tensors
        reversed_keys = keys.T
    assert reversed_keys.shape == (2, 6, 2) and torch.equal(reversed_keys, keys.permute(2, 1, 0))
    assert torch.equal(reversed_keys[0], keys[..., 0].T)  # keys.T[0]: every item's first key dimension
    assert keys.transpose(1, 2).shape == (2, 2, 6) and torch.equal(keys.transpose(1, 2)[0], keys[0].T)
    at = app(PAGE, query_params={"step": "item-weights"})
    assert not at.exception
    text = markdown(at)
    assert "(b, num_tokens, d_out) = (2, 6, 2) becomes (2, 2, 6), each item's keys transposed" in text
    assert "(d_out, num_tokens, b) = (2, 6, 2)" in text and "`.T` on a tensor that is not 2-D is deprecated" in text
    assert "`keys.T[0]` would hold every item's first key dimension, not item 1's keys" in text
    assert [e.label for e in at.expander].count("Why `keys.transpose(1, 2)` and not `keys.T`?") == 1  # one line
