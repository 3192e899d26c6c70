"""The cell panel's words (``attention.prose.cells.explain``) and the tril route's derivations: every number on the
page is the package's own, written as the book writes it, in sentences of at most 35 words."""

import re

import numpy as np
import pytest
import torch
from tolerances import summation_error

import attention
from attention import derivations
from attention.prose import cells as view_cells
from attention.prose.cells import DOT_TERMS, ROW_TERMS, Notation, explain, sub

PIECES = ("Your", " journey", " starts", " with", " one", " step")
X = attention.BOOK_INPUTS.numpy()


def sentences(words: str) -> list[str]:
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", words)  # glossary links read as their text
    return [s for s in re.split(r"(?<=[.!?])\s+", plain) if s]


def numbers(text: str) -> list[float]:
    return [float(n.replace("−", "-")) for n in re.findall(r"−?\d+\.\d{4}", text)]


def test_a_simplified_score_is_the_books_dot_product_term_by_term():
    found = view_cells.scores(X, X, PIECES, code="", notation=Notation("attn_scores", left="x", right="x"))
    words, sums = found.explain(1, 0)
    assert sums == "ω_21 = 0.5500·0.4300 + 0.8700·0.1500 + 0.6600·0.8900 = 0.9544"  # section 3.3.1
    assert "x^(2) “␣journey”" in words and "x^(1) “Your”" in words and "`attn_scores[1, 0]`" in words
    assert "[dot product](/glossary#dot_product)" in words


def test_a_long_dot_product_stops_after_eight_terms_and_says_how_many():
    q, k = torch.randn(3, 20, dtype=torch.float64), torch.randn(3, 20, dtype=torch.float64)
    words, sums = explain(derivations.score(q, k, 2, 1, scaled=True), Notation("attn_scores"), "a", "b", "abc")
    first, second = sums.split("\n")
    assert first.count("·") == DOT_TERMS and "+ … (20 terms in all)" in first
    assert numbers(first)[-1] == pytest.approx(float(q[2] @ k[1]), abs=1e-4)
    assert numbers(second)[-1] == pytest.approx(float(q[2] @ k[1]) / 20**0.5, abs=1e-4)
    assert "d_k = `keys.shape[-1]` = 20" in words and "√20" in second


def test_a_weight_lists_its_rows_exps_and_zero_for_masked_keys():
    scores = torch.tensor([0.3, -0.2, 1.0])
    masked = torch.tensor([False, False, True])
    d = derivations.weight(scores, 1, row=1, masked=masked, subtract_max=False)
    words, sums = explain(d, Notation("attn_weights", scaled=True), "b", "b", ("a", "b", "c"))
    lines = sums.split("\n")
    assert lines[2] == "key 3 c: exp(−∞) = 0" and "exp(−∞) = 0" in words
    expected = torch.softmax(scores.masked_fill(masked, -torch.inf), dim=-1)[1]
    assert numbers(lines[-1])[-1] == pytest.approx(float(expected), abs=1e-4)
    assert numbers(lines[1]) == pytest.approx([-0.2, float(np.exp(-0.2))], abs=1e-4)


def test_a_shifted_softmax_says_the_max_is_subtracted_and_long_rows_are_counted():
    scores = torch.linspace(-1, 2, 15)
    words, sums = explain(derivations.weight(scores, 14), Notation("w"), "a", "b", [f"t{k}" for k in range(15)])
    assert "largest score, 2.0000, is subtracted first" in words
    assert "exp(−1.0000 − 2.0000)" in sums and "… (15 keys in all)" in sums
    assert sums.count("key ") == ROW_TERMS
    assert numbers(sums.split("\n")[-1])[-1] == pytest.approx(float(torch.softmax(scores, 0)[14]), abs=1e-4)


def test_dropped_and_kept_weights():
    kept = explain(derivations.dropped_weight(0.25, True, 0.5, row=2, col=1), Notation("dropped_weights"), "c", "b", "")
    assert kept[1] == "0.2500 × 1/(1 − 0.5) = 0.2500 × 2.0000 = 0.5000" and "kept by this" in kept[0]
    dropped = explain(derivations.dropped_weight(0.25, False, 0.5), Notation("dropped_weights"), "c", "b", "")
    assert dropped[1] == "0.2500 dropped: × 0 = 0" and "dropped by this" in dropped[0]


def test_the_tril_route_multiplies_by_the_mask_then_divides_by_the_row_sum():
    weights = torch.softmax(torch.randn(4, 4), dim=-1)
    mask_simple = torch.tril(torch.ones(4, 4))
    masked_simple = weights * mask_simple
    renormalized = attention.mask_by_renormalizing(weights)
    for i in range(4):
        for j in range(4):
            cell = derivations.masked_weight(weights[i, j], mask_simple[i, j], row=i, col=j)
            assert cell.value == float(masked_simple[i, j])  # × 1 or × 0: exact in both
            row = derivations.renormalized(masked_simple[i], j, row=i, masked=mask_simple[i] == 0)
            # float64 sum and ÷ against float32's: 4 weights' summation bound (their sum ≤ 1), then one ÷
            assert row.value == pytest.approx(float(renormalized[i, j]), abs=summation_error(4 + 1, 1.0))
            assert row.total == pytest.approx(float(masked_simple[i].sum()), abs=summation_error(4, 1.0))
    words, sums = explain(row, Notation("masked_simple_norm"), "d", "d", "abcd")
    assert "`row_sums[3]`" in words and numbers(sums)[-1] == pytest.approx(float(renormalized[3, 3]), abs=1e-4)
    with pytest.raises(ValueError, match="sum to 0"):
        derivations.renormalized(torch.zeros(3), 0)


def test_context_and_projection_entries():
    weights = torch.softmax(torch.tensor(X @ X.T), dim=-1).numpy()
    context = view_cells.context(weights, X, PIECES, ("dim 0", "dim 1", "dim 2"), code="", notation=Notation("c"))
    words, sums = context.explain(1, 0)
    assert numbers(sums)[-1] == pytest.approx(0.4419, abs=1e-4)  # section 3.3.1's context_vec_2[0]
    assert sums.count("·") == 6 and "z^(2)[0] = " in sums
    w = np.arange(6, dtype=float).reshape(3, 2) / 10
    bias = np.array([0.5, -0.25])
    d = derivations.projection(X[1], w, 1, bias=bias, row=1)
    words, sums = explain(d, Notation("queries", left="q", weight_matrix="W_query"), " journey", "out 1", PIECES)
    assert numbers(sums)[-1] == pytest.approx(float(X[1] @ w[:, 1] + bias[1]), abs=1e-4)
    assert "+ (−0.2500) = " in sums and "plus the bias" in words and "`W_query`" in words


def test_masked_scores_say_minus_infinity():
    mask = attention.causal_mask(6).numpy()
    found = view_cells.scores(X, X, PIECES, code="", notation=Notation("masked"), mask=mask)
    words, sums = found.explain(0, 3)
    assert "−∞" in words and sums.endswith("masked: ω_14 → −∞")
    assert found.derive(0, 3).value == -np.inf


@pytest.mark.parametrize("kind", ["score", "weight", "context", "projection", "dropped", "masked", "renorm"])
def test_every_sentence_is_at_most_35_words_and_tokens_are_escaped(kind):
    hostile = ("**bold** [x](javascript:alert(1)) <b>", " `tick`", " _u_", " a", " b", " c")
    weights = torch.softmax(torch.tensor(X @ X.T), dim=-1).numpy()
    made = {
        "score": lambda: view_cells.scores(X, X, hostile, code="", notation=Notation("s", scaled=True), scaled=True),
        "weight": lambda: view_cells.weights(X @ X.T, hostile, code="", notation=Notation("w")),
        "context": lambda: view_cells.context(weights, X, hostile, ("d0", "d1", "d2"), code="", notation=Notation("c")),
        "projection": lambda: view_cells.projections(
            X, X[:3], hostile, ("o0", "o1", "o2"), code="", notation=Notation("q")
        ),
        "dropped": lambda: view_cells.dropped(  # the app's own name adds the book's: the longest words
            weights, weights > 0.15, 0.5, hostile, code="", notation=Notation("dropped_weights")
        ),
        "masked": lambda: view_cells.masked_weights(
            weights, np.tril(weights), hostile, code="", notation=Notation("m")
        ),
        "renorm": lambda: view_cells.renormalized(
            np.tril(weights), np.triu(weights, 1) > 0, hostile, code="", notation=Notation("r")
        ),
    }[kind]()
    words, _ = made.explain(0, 0)
    for sentence in sentences(words):
        assert len(sentence.split()) <= 35, sentence
    assert "**bold**" not in words and "[x](javascript" not in words and "<b>" not in words
    assert sub(11, 2) == "(12,3)" and sub(1, 0) == "21"
