"""The Multi-head attention page through AppTest: every step, the book's numbers, head choice, paging, safe labels."""

import inspect

import numpy as np
import torch
from apptest_support import (
    app,
    captions,
    decode,
    figure_specs,
    markdown,
    next_step,
    previous_step,
    share_link,
    type_sentence,
)
from tolerances import attention_bounds

import attention

PAGE = "pages/multihead.py"
BOOK_WRAPPER_ROW = [-0.4519, 0.2216, 0.4772, 0.1063]  # printed in the book, section 3.6.1
BOOK_MHA_ROW = [0.3190, 0.4858]  # printed in the book, section 3.6.2
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"


def built(cls, seed: int = 123, d_in: int = 3, d_out: int = 2, num_heads: int = 2):
    torch.manual_seed(seed)
    return cls(d_in, d_out, 1024, 0.0, num_heads=num_heads)


def traces(spec: dict) -> list[np.ndarray]:
    return [decode(trace["z"]) for trace in spec["data"] if trace["type"] == "heatmap"]


def titles(at) -> list[str]:
    return [spec["layout"]["title"]["text"] for spec in figure_specs(at)]


def subplot_titles(at) -> list[str]:
    return [a["text"] for a in figure_specs(at)[0]["layout"].get("annotations", [])]


def assert_weights(z: np.ndarray, expected: np.ndarray) -> None:
    visible = ~attention.causal_mask(expected.shape[-1]).numpy()
    assert np.isnan(z[~visible]).all()
    np.testing.assert_array_equal(z[visible], expected[visible])


def test_every_step_with_the_books_numbers():
    x = attention.BOOK_INPUTS.unsqueeze(0)  # (1, 6, 3)
    wrapper = attention.trace(built(attention.MultiHeadAttentionWrapper), x)
    efficient = attention.trace(built(attention.MultiHeadAttention), x)
    at = app(PAGE)
    assert not at.exception

    heads = traces(figure_specs(at)[0])
    assert len(heads) == 2 and subplot_titles(at) == ["head 1 (inspected)", "head 2"]
    for k, z in enumerate(heads):
        assert_weights(z, wrapper.attn_weights[0, k].numpy())

    next_step(at)
    weights, context = (traces(spec)[0] for spec in figure_specs(at))
    assert_weights(weights, wrapper.attn_weights[0, 0].numpy())
    np.testing.assert_array_equal(context, wrapper.head_context[0, 0].numpy())

    next_step(at)
    (concat,) = (traces(spec)[0] for spec in figure_specs(at))
    np.testing.assert_array_equal(concat, wrapper.output[0].numpy())
    np.testing.assert_allclose(concat[0], BOOK_WRAPPER_ROW, atol=1e-4)
    assert figure_specs(at)[0]["layout"]["xaxis"]["ticktext"][2] == "head 2 · dim 0"
    assert "-0.4519, 0.2216, 0.4772, 0.1063" in markdown(at)
    assert "These are the book's numbers: section 3.6.1" in captions(at)

    next_step(at)
    table = at.dataframe[0].value
    source = " ".join(inspect.getsource(attention.MultiHeadAttention.steps).split())
    assert all(line in source for line in table["line"])  # every row is a line of the code, as it reads
    here = dict(zip(table["line"], table["here"], strict=True))
    assert here["keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)"] == "(1, 6, 2, 1)"
    assert here["keys = keys.transpose(1, 2)"] == "(1, 2, 6, 1)"
    assert here["context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)"] == "(1, 6, 2)"
    scores = table[table["line"].str.startswith("attn_scores = queries @ keys.transpose(")]
    assert list(scores["here"]) == ["(1, 2, 6, 6)"]
    assert list(scores["shape"]) == ["(b, num_heads, num_tokens, num_tokens)"]

    next_step(at)
    for k, z in enumerate(traces(figure_specs(at)[0])):
        assert_weights(z, efficient.attn_weights[0, k].numpy())

    next_step(at)
    merged, output = (traces(spec)[0] for spec in figure_specs(at))
    np.testing.assert_array_equal(merged, efficient.context[0].numpy())
    np.testing.assert_array_equal(output, efficient.output[0].numpy())
    np.testing.assert_allclose(output[0], BOOK_MHA_ROW, atol=1e-4)
    assert "[0.3190, 0.4858]" in markdown(at)

    next_step(at)
    (spec,) = figure_specs(at)  # every output entry, wrapper against the fused module, on y = x
    # one fused projection against one per head: other summation orders, within attention_bounds' output bound
    bound = attention_bounds(attention.multihead_from_wrapper(built(attention.MultiHeadAttentionWrapper)), x).output
    assert float(spec["layout"]["title"]["text"].rsplit("= ", 1)[1]) <= bound
    wrapper_output, fused = (decode(trace[axis]) for trace in spec["data"][1:] for axis in ("x", "y"))
    np.testing.assert_array_equal(wrapper_output, wrapper.output[0].numpy().ravel())  # the wrapper's trace, drawn
    np.testing.assert_allclose(fused, wrapper_output, rtol=0, atol=bound)
    assert at.button(key="next:multihead").disabled
    assert not at.exception


def test_the_inspected_head_comes_from_the_link_and_the_control():
    wrapper = attention.trace(built(attention.MultiHeadAttentionWrapper), attention.BOOK_INPUTS)
    at = app(PAGE, query_params={"head_n": "2", "step": "one-head"})
    assert not at.exception
    assert titles(at)[0] == "head 2: attn_weights"  # heads[1], the second head
    assert_weights(traces(figure_specs(at)[0])[0], wrapper.attn_weights[0, 1].numpy())
    assert at.query_params["head_n"] == "2"
    at.segmented_control(key="head").set_value(0).run()
    assert titles(at)[0] == "head 1: attn_weights" and at.query_params["head_n"] == "1"
    assert "head_n=1" in share_link(at)
    previous_step(at)
    assert subplot_titles(at)[0] == "head 1 (inspected)"


def test_an_old_link_counting_heads_from_0_opens_the_head_it_opened():
    new = app(PAGE, query_params={"head_n": "2", "step": "one-head"})
    old = app(PAGE, query_params={"head": "1", "step": "one-head"})  # written when links counted from 0
    assert not old.exception
    assert titles(old)[0] == "head 2: attn_weights" and figure_specs(old) == figure_specs(new)
    assert old.query_params["head_n"] == "2" and "head" not in old.query_params  # the address bar's new name


def test_many_heads_are_shown_four_at_a_time():
    at = app(PAGE, query_params={"heads": "16", "d_out": "32"})
    assert not at.exception
    assert subplot_titles(at) == ["head 1 (inspected)", "head 2", "head 3", "head 4"]
    at.segmented_control(key="head_group").set_value(3).run()
    assert subplot_titles(at) == ["head 13 (inspected)", "head 14", "head 15", "head 16"]
    wrapper = attention.trace(built(attention.MultiHeadAttentionWrapper, d_out=32, num_heads=16), attention.BOOK_INPUTS)
    assert_weights(traces(figure_specs(at)[0])[2], wrapper.attn_weights[0, 14].numpy())
    next_step(at)
    assert at.segmented_control(key="head").value == 12 and titles(at)[0] == "head 13: attn_weights"


def test_a_typed_sentence_and_a_new_seed_update_every_figure():
    at = app(PAGE)
    type_sentence(at, HOSTILE)
    at.number_input(key="w_seed").set_value(7).run()
    assert not at.exception
    ids = attention.tokenize(HOSTILE).ids
    x = attention.embed_tokens(ids, 3, 7)
    wrapper = attention.trace(built(attention.MultiHeadAttentionWrapper, seed=7), x)
    grid = figure_specs(at)[0]
    for k, z in enumerate(traces(grid)):
        assert_weights(z, wrapper.attn_weights[0, k].numpy())
    labels = grid["layout"]["yaxis"]["ticktext"]
    assert "&lt;" in labels and not any("<b>" in label for label in labels)
    assert "javascript" not in markdown(at)
    for _ in range(5):
        next_step(at)
    efficient = attention.trace(built(attention.MultiHeadAttention, seed=7), x)
    np.testing.assert_array_equal(traces(figure_specs(at)[1])[0], efficient.output[0].numpy())
    assert "no longer the book's numbers: your own sentence" in captions(at)


def test_the_agreement_check_explains_when_it_is_skipped():
    at = app(PAGE, query_params={"heads": "16", "d_out": "512", "step": "same-output"})
    assert not at.exception
    assert not figure_specs(at)
    assert "Skipped" in "\n".join(i.value for i in at.info)


def test_the_words_match_the_shapes_at_the_defaults():
    """Defaults: the wrapper's heads have d_out = 2 (÷ √2), the fused module's head_dim = 1 (÷ √1)."""
    at = app(PAGE, query_params={"step": "concatenate"})
    assert "(1, 6, 4) for one sentence" in markdown(at) and "torch.Size([2, 6, 4])" in markdown(at)
    next_step(at)
    next_step(at)
    assert "√head_dim = √1" in markdown(at)
    next_step(at)
    text = markdown(at)
    assert "2 × 1 = d_out = 2 columns (the wrapper's concatenation has 4)" in text
    assert "like the wrapper's concatenation" not in text and "contiguous()" in text
    assert "12 times in GPT-2 small" in text and "d_in = d_out = 768" in text and "1,024" in text
    next_step(at)
    text = markdown(at)
    assert "Per head they compute the same thing" not in text
    assert "divide their scores by √2" in text and "divide by √1" in text


def test_the_all_heads_step_shows_section_3_6_2s_check_with_the_packages_numbers():
    check = attention.heads_product()
    at = app(PAGE, query_params={"step": "all-heads-at-once"})
    assert not at.exception
    assert "(b, num_heads, num_tokens, head_dim) = (1, 2, 3, 4)" in markdown(at)
    assert f"max |difference| = {check.max_difference:.3g}" in markdown(at)
    (code,) = [c.value for c in at.code if c.value.startswith("print(a @ a.transpose(2, 3))")]
    assert "\n# [[1.3208, 1.1631, 1.2879], [1.1631, 2.2150, 1.8424], [1.2879, 1.8424, 2.0402]]\n# [[0.4391" in code
    assert "print(first_head @ first_head.T)\n# [[1.3208, 1.1631, 1.2879]" in code  # the same numbers, head by head
    assert "print(second_head @ second_head.T)\n# [[0.4391, 0.7003, 0.5903]" in code


def test_the_heads_write_masked_in_their_masked_cells_as_causal_mask_does():
    """Issue 54: the grid of heads left its masked cells blank while Causal mask writes "masked" in them."""
    at = app(PAGE)
    (spec,) = figure_specs(at)
    words = [t for t in spec["data"] if t.get("name") == "masked" and t.get("mode") == "text"]
    assert [t["xaxis"] for t in words] == ["x", "x2"] and all(t["text"] == ["masked"] * 15 for t in words)
    assert all(t.get("text") is not None for t in spec["data"] if t["type"] == "heatmap")  # and their weights


def test_near_uniform_heads_get_the_note_and_the_books_two_heads_do_not():
    """The book's wrapper: head 2's weights lie 0.06 from even, so no note; the 10-token sentence's heads lie within
    0.03 of an even share of the keys each query may see."""
    at = app(PAGE)
    assert not [box for box in at.info if box.value.startswith("Every weight here is within")]
    type_sentence(at, "The cat sat on the mat because it was tired")
    (note,) = [box.value for box in at.info if box.value.startswith("Every weight here is within")]
    assert "an even share of the keys its query may see (1/n for n keys)" in note and "Trained" in note
