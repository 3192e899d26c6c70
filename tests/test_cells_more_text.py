"""The cell panel's words for Multi-head, Why attention, Break it, Tokens and Generate (``attention.prose.cells``'
``explain_…`` functions): sentences of at most 35 words, the book's notation, and the numbers the package made."""

import dataclasses
import functools

import numpy as np
import pytest
import torch
from test_cells_text import numbers, sentences

import attention
from attention import derivations
from attention.prose import cells
from attention.prose.cells import Notation, number

PIECES = ("Your", " journey", " starts", " with", " one", " step")
X = attention.BOOK_INPUTS.numpy().astype(np.float64)
ROW, COL = 2, 1


@functools.cache
def seq2seq():
    trace = attention.encoder_decoder(attention.BOOK_INPUTS, hidden_size=8, seed=5)
    return trace, attention.seq2seq_weights(3, 8, None, 5)


@functools.cache
def heads():
    generator = torch.Generator().manual_seed(0)
    weights = torch.softmax(torch.randn(2, 6, 6, generator=generator, dtype=torch.float64), dim=-1)  # (h, T, T)
    values = torch.randn(2, 6, 3, generator=generator, dtype=torch.float64)  # (h, T, head_dim)
    return weights, values


@functools.cache
def cache_keys():
    """Keys as a cache kept them and as a whole-text pass made them again: (n_layers, n_heads, T, head_dim), float32."""
    cached = torch.randn(2, 2, 6, 4, generator=torch.Generator().manual_seed(2)).numpy()
    recomputed = cached.copy()
    recomputed[0, 1, ROW, COL] += 3e-7  # float32 rounding of another order of sums
    return cached, recomputed


def mistake_pair(name: str):
    mha = attention.build(attention.MultiHeadAttention, 123, 3, 4, 6, 0.5, num_heads=2)
    run = attention.run_mistake(name, mha, attention.BOOK_INPUTS, dropout_samples=10)
    return derivations.mistake_cell(run, mha, attention.BOOK_INPUTS, ROW, COL)


def written(kind: str):
    """(words, sums) of one cell of each kind, from the package's derivation."""
    n = Notation("m")
    if kind == "merged":
        return cells.explain_merged(derivations.merge(*heads(), ROW, 4), n, PIECES[ROW], "dim 4", PIECES)
    if kind == "mixed":
        weight = torch.randn(6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        found = derivations.out_projection(torch.arange(6.0), weight, COL, num_heads=2, bias=torch.ones(6), row=ROW)
        return cells.explain_mixed(found, n, PIECES[ROW], "dim 1", PIECES)
    if kind == "head_weight":
        found = derivations.weight(heads()[0][1, ROW].log(), COL, row=ROW)
        found = dataclasses.replace(found, details={**found.details, "head": 1, "num_heads": 2, "stacked": True})
        return cells.explain_head_weight(found, Notation("attn_weights", scaled=True), PIECES[ROW], "head 2", PIECES)
    if kind.startswith("mistake:"):
        name = kind.split(":")[1]
        title = attention.MISTAKES[name].title
        return cells.explain_mistake(mistake_pair(name), n, PIECES[ROW], PIECES[COL], PIECES, name=name, title=title)
    if kind == "gru":
        return cells.explain_gru(derivations.encoder_state(*seq2seq(), ROW, COL), n, PIECES[ROW], "h1", PIECES)
    if kind == "bahdanau":
        trace, weights = seq2seq()
        found = derivations.bahdanau_weight(trace, ROW, COL)
        score = derivations.bahdanau_score(trace, weights, ROW, COL)
        found = dataclasses.replace(found, details={**found.details, "score": score})
        return cells.explain_bahdanau(found, n, "step 3", PIECES[COL], PIECES)
    if kind in ("dot", "additive"):
        score = derivations.contrast_score if kind == "additive" else (lambda x, i, j: derivations.score(x, x, i, j))
        found = derivations.weight([score(X, ROW, j).value for j in range(6)], COL, row=ROW)
        found = dataclasses.replace(found, details={**found.details, "score": score(X, ROW, COL)})
        return cells.explain_contrast(found, n, PIECES[ROW], PIECES[COL], PIECES)
    if kind in ("cached", "recomputed", "cached_layer_2"):
        cached, recomputed = cache_keys()
        layer = 1 if kind == "cached_layer_2" else 0
        found = derivations.cache_entry(cached, recomputed, layer, 1, ROW, COL, shown=kind.split("_")[0])
        return cells.explain_cached_key(found, n, PIECES[ROW], f"dim {COL}", PIECES)
    if kind in ("causal_mask", "window_mask"):
        window = None if kind == "causal_mask" else 3
        found = derivations.window_mask_entry(6, window, 5, COL)  # query 6, key 2: 4 tokens back
        return cells.explain_window_mask(found, n, PIECES[5], PIECES[COL], PIECES)
    value = float(X[ROW, COL])
    term = derivations.Term(0, (value,), value)
    details = {"where": "inputs[2][1]", "source": "No arithmetic made it: it is one of the book's vectors.", "id": 4940}
    return cells.explain_embedding(derivations.Derivation("parameter", ROW, COL, (term,), value, value, details), n,
                               PIECES[ROW], "dim 1", PIECES)  # fmt: skip


KINDS = ["merged", "mixed", "head_weight", "gru", "bahdanau", "dot", "additive", "embedding"]
KINDS += ["cached", "recomputed", "cached_layer_2", "causal_mask", "window_mask"]
KINDS += [f"mistake:{name}" for name in attention.MISTAKES]


@pytest.mark.parametrize("kind", KINDS)
def test_every_sentence_is_at_most_35_words(kind):
    words, _ = written(kind)
    for sentence in sentences(words):
        assert len(sentence.split()) <= 35, (kind, sentence)


def test_a_merged_column_names_its_head_and_that_heads_weighted_sum():
    words, sums = written("merged")  # column 4 of two heads of 3 columns: head 2, its column 1
    found = derivations.merge(*heads(), ROW, 4)
    assert "belongs to head 2" in words and "columns start at column 3, and column 4 is its entry 1" in words
    assert "z^(3)" in words and "[1]" not in words  # the book's superscript, not beside a Python index
    assert sums.startswith("column 4 = head 2's entry 1\nhead 2: z^(3), entry 1 = ")
    assert numbers(sums)[-1] == pytest.approx(found.value, abs=1e-4)


def test_out_proj_groups_its_terms_by_head_with_each_subtotal():
    words, sums = written("mixed")
    lines = sums.split("\n")
    assert lines[0].startswith("head 1 (columns 0–2): 0.0000·") and lines[1].startswith("head 2 (columns 3–5): 3.0000·")
    subtotals = [numbers(line)[-1] for line in lines[:2]]
    assert lines[2].startswith(f"output = {number(subtotals[0])} + {number(subtotals[1])} + bias 1.0000")
    assert numbers(lines[2])[-1] == pytest.approx(sum(subtotals) + 1, abs=2e-4)
    assert "the mix" in words


def test_a_gru_state_is_its_two_gate_terms():
    words, sums = written("gru")
    found = derivations.encoder_state(*seq2seq(), ROW, COL)
    assert f"= {number(found.terms[0].value)} + {number(found.terms[1].value)} = {number(found.value)}" in sums
    assert "h_3[1] = (1 − z)·n + z·h_2[1]" in sums and "h_3" in words


def test_a_bahdanau_weight_shows_its_additive_score_and_the_state_it_read():
    words, sums = written("bahdanau")
    assert "s_2, the decoder's state after step 2" in words and "s_{i−1}" not in words
    assert "e_ij = v_aᵀ tanh(W_a s + U_a h_j)" in words and "the decoder's state before step 3" in words
    assert sums.startswith("e_32 = Σ_k v_a[k]·tanh(W_a s + U_a h_2)[k]")
    trace, _ = seq2seq()
    assert numbers(sums)[-1] == pytest.approx(float(trace.bahdanau_weights[ROW, COL]), abs=1e-4)


def test_a_mistake_names_its_changed_line_and_shows_both_columns():
    words, (right, wrong) = written("mistake:no_scaling")
    assert "The changed line: the score is not divided by √d_k." in words
    assert right[0] == "**Right**" and wrong[0] == "**Wrong**"
    assert "ω / √d_k = " in right[1] and " / 1.4142 = " in right[1]
    assert "ω / 1 = " in wrong[1] and " / 1.0000 = " in wrong[1]


def test_an_embedding_is_read_not_computed():
    words, sums = written("embedding")
    assert "No arithmetic made it" in words and sums == "x^(3)[1] = inputs[2][1] = 0.8500"


@pytest.mark.parametrize("layer", [1, 3])
def test_a_trained_layers_input_says_the_model_computed_it_and_counts_positions_as_the_book(layer):
    """Was: "No arithmetic made it: … position 1's row, through the blocks below", also for layer 1 and x^(2)."""
    from explorer.settings import Settings

    settings = Settings(weights="trained", layer=layer)
    found = cells.embeddings(X, [7002] * 6, PIECES, settings, code="", notation=Notation("x"))
    words, _ = found.explain(1, 0)
    assert "No arithmetic" not in words and "position 1's row" not in words
    assert "row 1 of its position embedding (x^(2); Python counts from 0)" in words
    assert f"layer {layer}'s `norm1`, a LayerNorm" in words
    assert ("block(s) below" in words) == (layer > 1)


@pytest.mark.parametrize("shown", ["cached", "recomputed"])
def test_a_cached_key_shows_both_numbers_this_panels_last_and_their_difference(shown):
    words, sums = written(shown)
    cached, recomputed = cache_keys()
    mine, other = (cached, recomputed) if shown == "cached" else (recomputed, cached)
    first, second, difference = sums.split("\n")
    assert numbers(first) == pytest.approx([float(other[0, 1, ROW, COL])], abs=1e-4)
    assert second.startswith(f"{shown:<10} k^(3)[1] = ")
    assert numbers(second) == pytest.approx([float(mine[0, 1, ROW, COL])], abs=1e-4)
    gap = abs(float(cached[0, 1, ROW, COL]) - float(recomputed[0, 1, ROW, COL]))
    assert difference == f"|cached − recomputed| = {gap:.1e}"
    assert "token 3 “␣starts” (index 2) in layer 1, head 2" in words and "`keys = self.W_key(x)` on x^(3)" in words
    assert "embedding and position alone" in words and "far below the 4 decimals shown" in words
    assert ("`cache.keys[0, 1, 2, 1]`" in words) == (shown == "cached")


def test_a_key_in_a_later_layer_depends_on_the_tokens_up_to_its_own():
    words, sums = written("cached_layer_2")
    assert "let token 3 see only tokens 1 to 3" in words and "[causal mask](/glossary#causal_mask)" in words
    assert sums.endswith("|cached − recomputed| = 0") and "the same float32 number" in words


def test_a_window_masks_entry_names_both_rules_and_the_causal_mask_only_its_own():
    causal_words, causal_sums = written("causal_mask")
    window_words, window_sums = written("window_mask")
    assert causal_sums.split("\n") == [
        "mask = sliding_window_mask(6, None)",
        "future key?     j > i: 2 > 6 → no",
        "mask[5, 1] = 0  (visible)",
    ]
    assert window_sums.split("\n")[-2:] == [
        "w or more back? i − j ≥ w: 6 − 2 = 4 ≥ 3 → yes",
        "mask[5, 1] = 1  (masked: score → −∞)",
    ]
    assert "sliding window of" not in causal_words
    assert "query x^(6) “␣step” look at key x^(2) “␣journey”" in causal_words
    assert "i − j = 6 − 2 = 4 ≥ 3, too far back" in window_words and "the score −∞" in window_words
