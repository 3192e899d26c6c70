"""The Why attention page: the RNN bottleneck and Bahdanau attention, on the user's sentence."""

from pathlib import Path

import numpy as np
import torch
from apptest_support import app, decode, figure_specs

import attention
from explorer import models
from explorer.settings import DEFAULTS
from explorer.views.chapter import WHY_HIDDEN_SIZE

PAGE = "pages/why_attention.py"


def heatmap_z(at, index=0):
    return decode(figure_specs(at)[index]["data"][0]["z"])


def bar_values(at, index=0):
    return [decode(trace["y"]) for trace in figure_specs(at)[index]["data"] if trace["type"] == "bar"]


def book_run(hidden_size=16, seed=123):
    return attention.encoder_decoder(attention.BOOK_INPUTS, hidden_size=hidden_size, seed=seed)


def test_every_step_shows_the_packages_numbers_for_the_book():
    # One torch thread, as the server runs every script run (``server.configure_server``), for the page's thread
    # and this one alike: the trained alignment below sums in float32, and two threads' sums differ from one
    # thread's in the last bit (1.8e-7 seen). Other tests of this process may have left torch on two.
    torch.set_num_threads(1)
    at = app(PAGE)
    assert not at.exception
    # The book's defaults draw the stored view, the same numbers (test_first_view.py checks them against torch)
    expected = models.stored_why_view(attention.BOOK_INPUTS.numpy(), DEFAULTS.seed, WHY_HIDDEN_SIZE)
    assert expected is not None
    np.testing.assert_array_equal(heatmap_z(at), expected.encoder_states)
    assert any("untrained" in c.value.lower() for c in at.caption)

    at.button(key="next:why_attention").click().run()
    (share,) = bar_values(at)
    np.testing.assert_array_equal(share, expected.final_state_share)
    assert f"{expected.final_state_share[0]:.1%}" in at.markdown[1].value

    at.button(key="next:why_attention").click().run()
    np.testing.assert_array_equal(heatmap_z(at), expected.bahdanau_weights)

    at.button(key="next:why_attention").click().run()
    final, context = bar_values(at)
    np.testing.assert_array_equal(context, expected.attention_context_share)
    assert context[0] > final[0], "the attention context keeps the first token, the final state loses it"

    at.button(key="next:why_attention").click().run()
    trained = attention.trained_alignment(attention.tokenize(attention.BOOK_SENTENCE).ids)
    untrained, trained_z = (decode(t["z"]) for t in figure_specs(at)[0]["data"] if t["type"] == "heatmap")
    np.testing.assert_array_equal(untrained, trained.untrained_weights.numpy())
    np.testing.assert_array_equal(trained_z, trained.trained_weights.numpy())
    assert trained.mean_max_weight > 0.5
    assert any(f"{trained.mean_max_weight:.3f}" in m.value for m in at.markdown)

    at.button(key="next:why_attention").click().run()
    specs = figure_specs(at)
    curve = attention.bottleneck_curve()
    drawn = [decode(t["y"]) for t in specs[0]["data"]]
    np.testing.assert_allclose(drawn, [curve.with_attention, curve.without_attention])

    at.button(key="next:why_attention").click().run()
    np.testing.assert_array_equal(heatmap_z(at, 0), expected.dot_product_weights)
    np.testing.assert_array_equal(heatmap_z(at, 1), expected.additive_weights)
    assert at.button(key="next:why_attention").disabled
    assert not at.exception


def test_hidden_size_and_seed_change_the_numbers_and_persist_across_steps():
    at = app(PAGE)
    at.slider(key="w_why_hidden").set_value(8).run()
    np.testing.assert_array_equal(heatmap_z(at), book_run(hidden_size=8).encoder_states.numpy())
    at.button(key="next:why_attention").click().run()
    at.button(key="prev:why_attention").click().run()
    assert at.slider(key="w_why_hidden").value == 8
    at.number_input(key="w_seed").set_value(5).run()
    np.testing.assert_array_equal(heatmap_z(at), book_run(hidden_size=8, seed=5).encoder_states.numpy())


def test_a_typed_sentence_and_hostile_text():
    text = "<b>x</b> **y** [z](javascript:alert(1)) the cat sat on the mat"
    at = app(PAGE, query_params={"input": "text", "text": text, "d_in": "8", "step": "one-vector"})
    assert not at.exception
    ids = attention.tokenize(text).ids
    inputs = attention.embed_tokens(ids, 8, 123)
    (share,) = bar_values(at)
    np.testing.assert_array_equal(share, attention.encoder_decoder(inputs, seed=123).final_state_share.numpy())
    ticks = figure_specs(at)[0]["layout"]["xaxis"]["ticktext"]
    assert "&lt;" in ticks and "<b>" not in "".join(ticks)
    assert abs(float(share.sum()) - 1.0) < 1e-5


def test_the_last_step_links_the_page_that_comes_next_in_the_navigation():
    """Issue 54: the link said "Next: simplified self-attention", skipping Tokens & embeddings."""
    from explorer_app import PAGES

    scripts = [script for script, *_ in PAGES]
    following, title, _, options = PAGES[scripts.index(PAGE) + 1]
    at = app(PAGE, query_params={"step": "to-self-attention"})
    assert not at.exception
    (link,) = at.get("page_link")
    assert link.proto.page == options.get("url_path", Path(following).stem)
    assert link.proto.label.startswith(f"Next: {title}")


def test_a_states_entries_are_named_as_entries_of_h_t_not_as_states():
    """Was: columns "h0" … "h15", which read as the states h_0 … h_15 beside the rows' h_t."""
    at = app(PAGE)
    ticks = figure_specs(at)[0]["layout"]["xaxis"]["ticktext"]
    assert ticks[0] == "h_t[0]" and all(t.startswith("h_t[") for t in ticks)
    assert len(ticks) <= WHY_HIDDEN_SIZE
