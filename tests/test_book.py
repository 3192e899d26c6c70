"""The book's printed 6x3-example matrices, each made with the module and seed the chapter uses there."""

import torch

from attention.book import SECTIONS, BookValues, book_values
from tests.test_causal import BOOK_CAUSAL_OUTPUT, BOOK_MASKED_WEIGHTS
from tests.test_dropout import BOOK_DROPPED_ONES, BOOK_DROPPED_WEIGHTS
from tests.test_multihead import BOOK_MHA_OUTPUT, BOOK_WRAPPER_OUTPUT
from tests.test_simplified import ALL_CONTEXT_VECS, SCORES_2, SOFTMAX_2
from tests.test_trainable import V1_FIRST_ROWS, V2_OUTPUT

BOOK = {"atol": 1e-4, "rtol": 0}
# Section 3.5.1 prints v2's weights before the mask; its first row:
UNMASKED_ROW_0 = torch.tensor([0.1921, 0.1646, 0.1652, 0.1550, 0.1721, 0.1510])
# and the tril route's masked_simple, row 1, before renormalizing:
MASKED_SIMPLE_ROW_1 = torch.tensor([0.2041, 0.1659, 0.0, 0.0, 0.0, 0.0])


def test_every_matrix_is_the_books():
    book = book_values()

    assert torch.allclose(book.simplified_scores[1], SCORES_2, **BOOK)
    assert torch.allclose(book.simplified_weights[1], SOFTMAX_2, **BOOK)
    assert torch.allclose(book.simplified_context, ALL_CONTEXT_VECS, **BOOK)
    assert torch.allclose(book.v1_context[:2], V1_FIRST_ROWS, **BOOK)
    assert torch.allclose(book.v2_context, V2_OUTPUT, **BOOK)
    assert torch.allclose(book.causal_unmasked_weights[0], UNMASKED_ROW_0, **BOOK)
    assert torch.allclose(book.causal_masked_simple[1], MASKED_SIMPLE_ROW_1, **BOOK)
    assert torch.allclose(book.causal_renormalized, BOOK_MASKED_WEIGHTS, **BOOK)
    assert torch.allclose(book.causal_weights, BOOK_MASKED_WEIGHTS, **BOOK)
    assert torch.equal(book.dropout_ones, BOOK_DROPPED_ONES)
    assert torch.allclose(book.dropout_weights, BOOK_DROPPED_WEIGHTS, **BOOK)
    assert torch.allclose(book.causal_attention_context, BOOK_CAUSAL_OUTPUT, **BOOK)
    assert torch.allclose(book.wrapper_context, BOOK_WRAPPER_OUTPUT, **BOOK)
    assert torch.allclose(book.multihead_context, BOOK_MHA_OUTPUT, **BOOK)


def test_masked_scores_are_minus_infinity_above_the_diagonal_only():
    scores = book_values().causal_masked_scores
    upper = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)

    assert torch.isneginf(scores[upper]).all()
    assert torch.isfinite(scores[~upper]).all()


def test_book_values_leave_the_global_random_state_alone_and_are_computed_once():
    before = torch.get_rng_state()
    book_values.cache_clear()

    first = book_values()

    assert torch.equal(torch.get_rng_state(), before)
    assert book_values() is first and isinstance(first, BookValues)
    assert set(SECTIONS) == {"simplified", "v1", "v2", "causal", "dropout", "causal_class", "wrapper", "multihead"}
