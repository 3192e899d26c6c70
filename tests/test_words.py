"""Issue 35's sentences that misled, as the page text renders them: each test fails on the old wording.

``test_notation.py`` forbids the old forms in the source; these check the rendered sentences that the source
cannot show (a glossary link's text beside its own unit, a name that only an f-string makes)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from apptest_support import app, markdown

import attention
from attention import derivations
from attention.prose import cells
from attention.prose.cells import Notation, explain
from explorer.page_text import generate, multihead, qkv
from explorer.widgets import steps as widget_steps

X = attention.BOOK_INPUTS.numpy().astype(np.float64)


def test_a_scaled_score_indexes_the_whole_quotient_and_is_omega_over_root_d_k():
    """Was: "`attn_scores / √2[1, 0]` … is the attention score ω_21" (the index bound to √2)."""
    found = derivations.score(X[:, :2], X[:, 1:], 1, 0, scaled=True)
    words, sums = explain(found, Notation("attn_scores / √2"), " journey", "Your", ["Your"] * 6)
    assert words.startswith("`(attn_scores / √2)[1, 0]` (Python counts from 0) is ω_21/√")
    assert "divided by √d_k" in words and "√2[" not in words
    assert sums.split("\n")[-1].startswith("ω_21 / √2 = ")
    unscaled, _ = explain(derivations.score(X, X, 1, 0), Notation("attn_scores"), " journey", "Your", ["Your"] * 6)
    assert unscaled.startswith("`attn_scores[1, 0]` (Python counts from 0) is the [attention score]")


def test_entropy_says_nats_once():
    """Was: "the row's entropy (nats) is 0.07 nats": the glossary link's name carried the unit too."""
    lab = attention.scaling_lab(d_ks=(1, 1024), num_samples=8)
    text = qkv.saturation_text(lab, 8)
    assert "(nats)" not in text and text.count("nats") == 1


def test_the_scaling_lab_says_when_the_spread_is_root_d_k():
    """Was: "Dot products of random d_k-dim queries and keys have a spread … of about √d_k", unconditionally."""
    text = qkv.saturation_text(attention.scaling_lab(d_ks=(1, 4), num_samples=8), 8)
    assert "mean 0 and variance 1" in text and "`torch.rand`" in text and "in proportion to d_k" in text


def test_the_book_weight_matrices_make_scores_grow_in_proportion_to_d_k():
    """What the sentence above claims of the book's ``torch.rand`` matrices, measured on its six inputs."""
    x = attention.BOOK_INPUTS
    spreads = []
    for d_k in (16, 1024):
        module = attention.build(attention.SelfAttention_v1, 123, 3, d_k)
        with torch.no_grad():
            spreads.append(float(module.steps(x).attn_scores.std()))
    assert spreads[1] / spreads[0] > 0.5 * 1024 / 16  # √d_k would give 8; d_k gives 64


def test_the_gradient_names_its_output():
    text = qkv.gradients_text(attention.scaling_lab(d_ks=(1, 4), num_samples=8))
    assert "a row's output is the number Σ_j α_j·v_j" in text and "gradient of the output at" not in text
    assert "changes with the scores, the softmax's input" in text  # what the gradient is taken with respect to


def test_the_book_picks_its_sizes_to_be_easy_to_follow_and_parameters_are_explained():
    """Was: "The book takes d_out = 2 ≠ d_in = 3 to tell them apart"; the book's reason is an easier example."""
    text = qkv.projections_text("", 123)
    assert "tell them apart" not in text and "easier to follow" in text
    assert "`torch.nn.Parameter`" in text and "trainable" in text


def test_the_glossary_calls_the_sink_story_an_explanation_and_states_the_variance_condition():
    from attention.prose.glossary import TERMS

    assert "A common explanation, not a proven one" in TERMS["attention_sink"].definition
    assert "mean 0 and variance 1" in TERMS["scaled_dot_product"].definition
    assert "information retrieval" in TERMS["query_key_value"].definition
    assert "p = 0.1 or 0.2" in TERMS["dropout"].definition  # what GPT training uses, beside the demo's 0.5


def test_a_gpt_heads_d_out_is_all_heads_together():
    """Was: "GPT models usually use d_out = d_in" beside a 64 × 16 head."""
    text = qkv.projections_text("", 123)
    assert "usually use d_out = d_in" not in text and "d_out // num_heads" in text


@pytest.mark.parametrize(
    ("model", "named"),
    [("the small GPT trained on The Verdict", "The small GPT trained on The Verdict"), ("GPT-2", "GPT-2")],
)
def test_a_recorded_weight_names_the_model_that_made_it(model, named):
    """Was: "GPT-2 made it" for every cell, while the small GPT generates by default."""
    details = {"layer": 0, "head": 1, "query": 5, "seen": 6, "piece": " step", "model": model}
    terms = tuple(derivations.Term(j, (w,), w) for j, w in enumerate([0.5, 0.5]))
    found = derivations.Derivation("recorded", 0, 1, terms, 1.0, 0.5, details)
    words, _ = cells.explain_recorded(found, Notation("attn_weights"), " step", " journey", [])
    assert f"{named} made it" in words
    assert ("GPT-2 made it" in words) == (model == "GPT-2")


def test_generate_opens_with_a_capital_and_the_cache_keeps_keys_and_values():
    view = SimpleNamespace(
        model_name="the small GPT trained on The Verdict",
        num_layers=4,
        num_heads=4,
        context_length=128,
        prompt_tokens=6,
        new_tokens=40,
        options=SimpleNamespace(temperature=0.0, top_k=None, seed=123),
    )
    assert generate.intro_text(view).startswith("**The small GPT trained on The Verdict** (4 layers")
    assert "only needs the new token's query" not in generate.WHY_EQUAL
    assert "appends only the new token's key and value" in generate.WHY_EQUAL
    assert "query is used once" in generate.WHY_EQUAL


def test_a_merged_column_counts_heads_from_1_in_its_formula():
    """Was: "column 3 = 1 · 2 + 1" right after "head 2"."""
    weights = np.full((2, 3, 3), 1 / 3)
    values = np.arange(2 * 3 * 2, dtype=np.float64).reshape(2, 3, 2)
    found = derivations.merge(weights, values, 1, 3)  # column 3: head 2's column 1
    words, _ = cells.explain_merged(found, Notation("context_vec"), " journey", "x", ["a", "b", "c"])
    assert "belongs to head 2" in words and "head 2's columns start at column 2, and column 3 is its entry 1" in words


@pytest.mark.parametrize("owner", ["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttention"])
def test_the_code_note_names_each_way_steps_differs_from_the_books_forward(owner):
    """Was: "the book's `forward`, line for line", above code that adds ``check_batch`` and ``drop_with_mask``."""
    method = getattr(attention, owner).steps
    note = widget_steps.steps_note(method)
    assert "line for line" not in note and "`check_batch`" in note and "`steps(x).output`" in note
    source = widget_steps.source_of(method)
    assert "check_batch(" in source
    dropout = "drop_with_mask(self.dropout, attn_weights)" in source
    assert dropout == ("`drop_with_mask`" in note) == ("`dropped_weights @ values`" in note)
    if dropout:
        assert "dropped_weights @ values" in source and "self.dropout(attn_weights)" in note
    renamed = "output = self.out_proj(context_vec)" in source
    assert renamed == ("`output = self.out_proj(context_vec)`" in note)


def test_the_books_printed_shape_is_explained_by_the_books_sizes_not_the_sidebars():
    """With 4 heads of 16 columns the page said "The book's batch holds two, so it prints torch.Size([2, 6, 4])"."""
    text = multihead.concatenate_text(4, 6, 16, "[0.1, …]", trained=True)
    assert "(1, 6, 64)" in text and "its 2 heads have d_out = 2 each, so it prints torch.Size([2, 6, 4])" in text
    assert "First row: [0.1, …]." in text


def test_one_heads_size_is_named_as_the_single_head_modules_d_out():
    text = qkv.projections_text("", 123)
    assert "its d_out, all heads together, equal to d_in" in text and "the d_out of a single-head module" in text


def test_why_attention_names_the_token_as_the_book_does():
    """The fading is measured per token x^(j), in the book's notation, not x_j."""
    at = app("pages/why_attention.py", query_params={"step": "one-vector"})
    text = markdown(at)
    assert "∂final_state/∂x^(j)" in text and "∂x_j" not in text


def test_a_measure_never_says_a_number_instead_of_itself():
    """Was: "a row sums to 0.414 on average instead of 0.414"."""
    from attention.mistake_measures import instead

    assert instead(0.41412, 0.41398) == "0.414, as the right code's does"
    assert instead(0.5, 1.0) == "0.500 instead of 1.000"


def test_a_vectors_entries_are_said_to_count_from_0_on_the_axis_that_lists_them():
    """Was: columns "dim 0", "dim 1" beside tokens and heads counted from 1, with no word on which counts how."""
    from attention import figures

    fig = figures.heatmap(np.eye(2, 3), ["a", "b"], cells.dims(3), title="t", col_title=figures.DIMENSION,
                          col_tokens=False, row_title="token")  # fmt: skip
    assert fig.layout.xaxis.title.text == "dimensions (counted from 0)"
    assert "dimension (counted from 0): " in fig.data[0].hovertemplate


def test_a_dropped_weights_cell_says_it_is_the_books_attn_weights_after_dropout():
    """``dropped_weights`` is this app's name: the book writes ``attn_weights = self.dropout(attn_weights)``."""
    found = derivations.dropped_weight(0.25, True, 0.5, row=1, col=0)
    words, _ = explain(found, Notation("dropped_weights"), "b", "a", ["a", "b"])
    assert "the book's `attn_weights` after `attn_weights = self.dropout(attn_weights)`" in words
    words, _ = explain(found, Notation("attn_weights"), "b", "a", ["a", "b"])
    assert "self.dropout" not in words
