"""The Simplified attention page through AppTest: every step, the book's numbers, the query picker, safe labels."""

import numpy as np
import torch
from apptest_support import (
    answer_and_reveal,
    app,
    decode,
    figure_specs,
    markdown,
    next_step,
    share_link,
    type_sentence,
)
from tolerances import summation_error, within

import attention
from attention import figures

PAGE = "pages/simplified.py"
BOOK_SCORES = [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]  # "journey", section 3.3.1
BOOK_WEIGHTS = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]
BOOK_CONTEXT = [0.4419, 0.6515, 0.5683]
HOSTILE = "<b>x</b> **y** [z](javascript:alert(1))"


def series(spec: dict) -> dict[str, np.ndarray]:
    """Each bar trace's values by name (non-finite values are drawn as 0 and named in the bar text)."""
    return {trace.get("name", ""): decode(trace["y"]) for trace in spec["data"] if trace["type"] == "bar"}


def test_every_step_shows_the_books_numbers():
    book = attention.simplified_attention(attention.BOOK_INPUTS)
    at = app(PAGE)
    assert not at.exception
    assert at.selectbox(key="w_simplified_query").value == 1  # "journey", as in the book

    answer_and_reveal(at)  # the scores' chart gives the question's answer away, so it waits for the reveal
    (spec,) = figure_specs(at)
    scores = decode(spec["data"][0]["y"])
    np.testing.assert_array_equal(scores, book.attn_scores[1].numpy())
    np.testing.assert_allclose(scores, BOOK_SCORES, atol=1e-4)
    hover = spec["data"][0]["hovertext"]
    assert "x^(2)·x^(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.9544" in hover[0]
    assert "x^(2)·x^(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.9544" in at.code[0].value

    next_step(at)
    (spec,) = figure_specs(at)
    bars = series(spec)
    compared = attention.compare_normalizations(book.attn_scores[1])
    np.testing.assert_array_equal(bars["attn_scores_2 / sum"], compared.by_sum.numpy())
    np.testing.assert_array_equal(bars["softmax_naive"], compared.naive_softmax.numpy())
    np.testing.assert_allclose(bars["torch.softmax"], BOOK_WEIGHTS, atol=1e-4)

    next_step(at)
    (spec,) = figure_specs(at)
    overflow = attention.overflow_demo(book.attn_scores[1])
    naive, torch_softmax = spec["data"][0], spec["data"][1]
    assert [t == "nan" for t in naive["text"]] == torch.isnan(overflow.naive_softmax).tolist()
    np.testing.assert_array_equal(decode(torch_softmax["y"]), overflow.torch_softmax.numpy())
    table = at.dataframe[0].value
    assert (table["softmax_naive"] == "nan").sum() == 4 and "149.5" in markdown(at)
    assert "nan for 4 of 6 tokens" in markdown(at)

    next_step(at)
    (spec,) = figure_specs(at)
    contributions = np.stack([decode(t["y"]) for t in spec["data"] if t["type"] == "bar"])
    np.testing.assert_allclose(contributions.sum(axis=0), BOOK_CONTEXT, atol=1e-4)
    assert "[0.4419, 0.6515, 0.5683]" in spec["layout"]["title"]["text"]

    next_step(at)
    scores_spec, weights_spec = figure_specs(at)
    np.testing.assert_array_equal(decode(scores_spec["data"][0]["z"]), book.attn_scores.numpy())
    np.testing.assert_array_equal(decode(weights_spec["data"][0]["z"]), book.attn_weights.numpy())

    next_step(at)
    (spec,) = figure_specs(at)
    np.testing.assert_array_equal(decode(spec["data"][0]["z"]), book.context_vecs.numpy())
    assert "max |difference| =" in markdown(at)
    assert at.button(key="next:simplified").disabled


def test_the_chosen_query_drives_every_step_and_the_url():
    book = attention.simplified_attention(attention.BOOK_INPUTS)
    at = app(PAGE)
    at.selectbox(key="w_simplified_query").set_value(4).run()
    answer_and_reveal(at)
    (spec,) = figure_specs(at)
    np.testing.assert_array_equal(decode(spec["data"][0]["y"]), book.attn_scores[4].numpy())
    assert "x^(5)·x^(1) = 0.77×0.43" in spec["data"][0]["hovertext"][0]
    assert at.query_params["query_n"] == "5"  # x^(5), counted from 1 as the book counts

    at.switch_page("pages/tokens.py").run()
    at.switch_page(PAGE).run()
    assert at.selectbox(key="w_simplified_query").value == 4  # kept while the page was off screen
    next_step(at)
    next_step(at)
    next_step(at)
    (spec,) = figure_specs(at)
    contributions = np.stack([decode(t["y"]) for t in spec["data"] if t["type"] == "bar"])
    # numpy sums the 6 drawn terms α_j · v^(j) in its own order, torch's matmul in another
    bound = summation_error(len(contributions), np.abs(contributions).sum(axis=0))
    assert within(torch.from_numpy(contributions.sum(axis=0)), book.context_vecs[4], torch.from_numpy(bound))


def test_the_question_is_asked_before_the_scores_that_answer_it():
    book = attention.simplified_attention(attention.BOOK_INPUTS)
    at = app(PAGE)
    (spec,) = figure_specs(at)  # before the reveal: the inputs to predict from, not the scores
    assert spec["layout"]["title"]["text"].startswith("inputs: predict from these")
    np.testing.assert_allclose(decode(spec["data"][0]["z"]), attention.BOOK_INPUTS.numpy(), atol=1e-6)
    assert not [s for s in figure_specs(at) if "attn_scores_2" in s["layout"]["title"]["text"]]
    assert "Which input will the query" in markdown(at)
    answer_and_reveal(at)
    (spec,) = figure_specs(at)
    assert spec["layout"]["title"]["text"].startswith("attn_scores_2")
    np.testing.assert_allclose(decode(spec["data"][0]["y"]), book.attn_scores[1].numpy(), atol=1e-6)
    at.selectbox(key="w_simplified_query").set_value(4).run()  # another query: asked afresh, scores hidden again
    assert figure_specs(at)[0]["layout"]["title"]["text"].startswith("inputs: predict from these")


def test_a_link_opens_its_query_and_step():
    at = app(PAGE, query_params={"query": "3", "step": "scores-to-weights"})
    assert not at.exception
    assert at.selectbox(key="w_simplified_query").value == 3
    (spec,) = figure_specs(at)
    expected = torch.softmax(attention.simplified_attention(attention.BOOK_INPUTS).attn_scores[3], dim=-1)
    np.testing.assert_array_equal(decode(spec["data"][2]["y"]), expected.numpy())


def test_a_link_counts_the_query_from_1_and_an_old_link_from_0():
    new = app(PAGE, query_params={"query_n": "4", "step": "scores-to-weights"})
    old = app(PAGE, query_params={"query": "3", "step": "scores-to-weights"})  # written when links counted from 0
    for at in (new, old):
        assert not at.exception
        assert at.selectbox(key="w_simplified_query").value == 3  # inputs[3], x^(4)
        assert at.query_params["query_n"] == "4" and "query" not in at.query_params  # the address bar's new name
        assert "query_n=4" in share_link(at)
    assert figure_specs(new) == figure_specs(old)


def test_a_typed_sentence_with_a_larger_d_in_updates_the_figures():
    text = "The quick brown fox jumps over the lazy dog"
    at = app(PAGE)
    type_sentence(at, text)
    at.number_input(key="w_d_in").set_value(16).run()
    assert not at.exception
    inputs = attention.embed_tokens(attention.tokenize(text).ids, 16, 123)  # (9, 16)
    expected = attention.simplified_attention(inputs).attn_scores[1]
    answer_and_reveal(at)  # nine tokens: the learner types a position
    (spec,) = figure_specs(at)
    np.testing.assert_array_equal(decode(spec["data"][0]["y"]), expected.numpy())  # the same code, same inputs
    assert "… (12 more) = " in spec["data"][0]["hovertext"][0]

    at.selectbox(key="w_simplified_query").set_value(8).run()
    at.text_input(key="w_text").input("Hi").run()  # one token: the query falls back to it
    assert not at.exception
    assert at.selectbox(key="w_simplified_query").value == 0


def test_hostile_text_is_shown_literally():
    at = app(PAGE)
    type_sentence(at, HOSTILE)
    assert not at.exception
    for _ in range(5):
        for spec in figure_specs(at):
            ticks = spec["layout"]["xaxis"].get("ticktext", [])
            assert not any("<" in tick for tick in ticks)
            assert ticks  # labelled, though thinned to fit: the escaped "&lt;/" may be one left out
        next_step(at)
    assert "javascript" not in markdown(at) and "<b>x" not in markdown(at)
    assert at.selectbox(key="w_simplified_query").options[4] == "x^(5) = inputs[4] </"  # shown as plain text


def test_a_long_sentence_stacks_the_largest_contributions_and_groups_the_rest():
    text = " ".join(f"word{i}" for i in range(40))
    at = app(PAGE, query_params={"step": "context-vector"})
    type_sentence(at, text)
    assert not at.exception
    num_tokens = len(attention.tokenize(text).ids)
    (spec,) = figure_specs(at)
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    assert len(bars) == figures.STACKED_TOKEN_LIMIT
    assert bars[-1]["name"] == f"other {num_tokens - figures.STACKED_TOKEN_LIMIT + 1} tokens"
    inputs = attention.embed_tokens(attention.tokenize(text).ids, 3, 123)  # (num_tokens, 3)
    expected = attention.simplified_attention(inputs).context_vecs[1]
    stacked = np.stack([decode(b["y"]) for b in bars])  # numpy sums the drawn blocks, torch's matmul the terms
    terms = attention.simplified_attention(inputs).attn_weights[1].abs() @ inputs.abs()  # Σ_j |α_j v^(j)|
    assert within(torch.from_numpy(stacked.sum(axis=0)), expected, summation_error(num_tokens, terms))
    assert "the gray block adds up the rest" in markdown(at)


def test_each_step_names_the_query_as_the_book_does():
    """The book's names for the second token's row, attn_scores_2 to context_vec_2, and its 1-based x^(2)."""
    at = app(PAGE)
    names = ["attn_scores_2", "attn_weights_2", "attn_scores_2", "context_vec_2"]
    for step, name in enumerate(names):
        titles = [spec["layout"]["title"]["text"] for spec in figure_specs(at)]
        assert name in markdown(at) or any(name in t for t in titles), (step, name)
        next_step(at)
    assert "all_context_vecs = attn_weights @ inputs" not in markdown(at)  # step 5: the whole matrices
    next_step(at)
    assert "all_context_vecs = attn_weights @ inputs" in markdown(at)
    assert "nested loops for the scores" in markdown(at)
