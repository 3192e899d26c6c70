"""The dot-product figure builders, without Streamlit."""

import numpy as np
import pytest

import attention
from attention import figures


def test_dot_product_text_writes_the_books_example():
    inputs = attention.BOOK_INPUTS.numpy()
    text = figures.dot_product_text(inputs[1], inputs[0], 0.9544, query=1, key=0)
    assert text == "x^(2)·x^(1) = 0.55×0.43 + 0.87×0.15 + 0.66×0.89 = 0.9544"


def test_dot_product_text_shortens_long_vectors_and_brackets_negatives():
    query, key = np.arange(10.0) - 1, np.ones(10)
    text = figures.dot_product_text(query, key, 35.0, query=0, key=9, max_terms=3)
    assert text == "x^(1)·x^(10) = (−1)×1 + 0×1 + 1×1 + … (7 more) = 35.0000"


def test_dot_product_text_needs_vectors_of_one_length():
    with pytest.raises(ValueError, match="same length"):
        figures.dot_product_text(np.ones(3), np.ones(4), 3.0, query=0, key=0)


def test_dot_product_bars_draw_the_scores_and_write_each_product_on_hover():
    inputs = attention.BOOK_INPUTS.numpy()
    scores = inputs @ inputs[1]
    fig = figures.dot_product_bars(scores, attention.BOOK_TOKENS, inputs[1], inputs, query=1, title="scores")
    (bars,) = fig.data
    np.testing.assert_array_equal(bars.y, scores)  # float32 scores, drawn as they are
    assert len(bars.hovertext) == 6
    assert bars.hovertext[0].startswith("key Your<br>x^(2)·x^(1) = 0.55×0.43")
    assert bars.marker.color[1] != bars.marker.color[0]  # the query's own bar stands out
    assert list(fig.layout.xaxis.ticktext) == list(attention.BOOK_TOKENS)


def test_dot_product_bars_escape_token_labels():
    inputs = np.eye(2)
    fig = figures.dot_product_bars([1.0, 0.0], ["<b>", "[a](b)"], inputs[0], inputs, query=0, title="<i>t</i>")
    assert fig.data[0].hovertext[0].startswith("key &lt;b&gt;<br>")
    assert list(fig.layout.xaxis.ticktext) == ["&lt;b&gt;", "[a](b)"]
    assert fig.layout.title.text == "&lt;i&gt;t&lt;/i&gt;"


def test_dot_product_bars_check_their_sizes():
    with pytest.raises(ValueError, match="labels"):
        figures.dot_product_bars([1.0, 2.0], ["a"], np.ones(2), np.ones((2, 2)), query=0, title="t")
