"""``explorer.runtime.memory``'s shared views: one read-only result for every session."""

import dataclasses

import numpy as np
import pytest
from tolerances import summation_error

from attention.book import book_values
from explorer.runtime import memory
from explorer.settings import DEFAULTS
from explorer.views import chapter

# The book's replay and the explorer's views run the chapter through different code, so their sums may run in
# other orders: projections (3 terms), scores (2), softmax and renormalising sums (6), weights @ values (6).
# Inputs and weights are at most 1, so no sum's terms exceed 2 · 3 · 3 = 18 (a score's |q| · |k|): 3.6e-5.
BOOK_CHAIN = float(summation_error([3, 2, 6, 6], 18.0))

SHARED = [
    lambda s: chapter.module_trace(s, "CausalAttention"),
    lambda s: chapter.simplified_view(s, 1),
    chapter.qkv_view,
    chapter.mask_view,
    lambda s: chapter.mask_view(s, 789),
    lambda s: chapter.dropout_view(s, 10),
    lambda s: chapter.dropout_view(dataclasses.replace(s, dropout=0.5, training=True), 10, 789),
    lambda s: chapter.batch_view(s, None),
    chapter.multihead_view,
    lambda s: chapter.why_view(s, 8),
]


def arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            yield from arrays(getattr(value, field.name))
    elif hasattr(value, "values"):
        for item in value.values():
            yield from arrays(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from arrays(item)


@pytest.mark.parametrize("view", SHARED)
def test_a_shared_view_is_one_read_only_object(view):
    settings = dataclasses.replace(DEFAULTS, seed=7)
    first, again = view(settings), view(settings)
    assert first is again  # a hit returns the stored object, not an unpickled copy
    found = list(arrays(first))
    assert found and all(not a.flags.writeable for a in found)
    with pytest.raises(ValueError, match="read-only"):
        found[0][...] = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.pieces = ()


def test_read_only_keeps_the_structure_and_values():
    value = {"a": np.arange(3), "b": [np.ones(2), {"c": np.zeros(1)}], "d": (1, "x")}
    shared = memory.read_only(value)
    np.testing.assert_array_equal(shared["a"], [0, 1, 2])
    assert isinstance(shared["b"], tuple) and shared["d"] == (1, "x")  # lists become tuples
    assert not shared["b"][1]["c"].flags.writeable
    with pytest.raises(TypeError):
        shared["e"] = 1


def test_read_only_reaches_into_frozen_results():
    @dataclasses.dataclass(frozen=True)
    class Result:
        weights: np.ndarray
        by_name: dict

    shared = memory.read_only(Result(np.eye(2), {"head 0": np.ones(3)}))
    assert not shared.weights.flags.writeable and not shared.by_name["head 0"].flags.writeable
    with pytest.raises(TypeError):
        shared.by_name["head 1"] = np.zeros(3)


def test_a_shared_views_callbacks_are_not_part_of_its_key_and_get_computes_nothing():
    calls = []

    @memory.shared_view(max_entries=2)
    def measured(size, *, on_progress=None):
        calls.append(size)
        return {"size": np.full(2, size)}

    try:
        assert measured.get(1) is None and calls == []
        assert measured(1) is measured(1, on_progress=print)  # the callback is not part of the key
        assert measured.get(1) is measured(1)
        measured(2), measured(3), measured(1)
        assert calls == [1, 2, 3, 1]  # two entries kept: 1 was forgotten when 3 came
        assert not measured(3)["size"].flags.writeable
        measured.clear()
        measured(3)
        assert calls == [1, 2, 3, 1, 3]
    finally:
        measured.clear()


def split_heads(x, num_heads: int):
    b, num_tokens, d_out = x.shape
    keys = x.view(b, num_tokens, num_heads, d_out // num_heads)  # New: split, (b, num_tokens, num_heads, head_dim)
    keys = keys.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    attn_scores = keys @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
    attn_scores.masked_fill_(attn_scores > 1e9, 0.0)
    return attn_scores.sum(-1)


def test_line_shapes_pairs_each_line_with_the_shape_it_made():
    import torch

    rows = chapter.line_shapes(split_heads, torch.ones(1, 5, 6), 3)
    assert [(row.line, row.names, row.shape) for row in rows] == [
        (
            "keys = x.view(b, num_tokens, num_heads, d_out // num_heads)",
            "(b, num_tokens, num_heads, head_dim)",
            (1, 5, 3, 2),
        ),
        ("keys = keys.transpose(1, 2)", "(b, num_heads, num_tokens, head_dim)", (1, 3, 5, 2)),
        ("attn_scores = keys @ keys.transpose(2, 3)", "(b, num_heads, num_tokens, num_tokens)", (1, 3, 5, 5)),
    ]  # the in-place masked_fill_ makes no row; a statement over two lines reads as one


def test_the_multihead_shape_table_is_the_code_as_it_ran():
    view = chapter.multihead_view(dataclasses.replace(DEFAULTS, num_heads=2, d_out=4))
    by_line = {row.line: row.shape for row in view.shape_rows}
    assert by_line["keys = keys.transpose(1, 2)"] == (1, 2, 6, 2)
    assert by_line["context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)"] == (1, 6, 4)


def test_the_books_seeds_reproduce_its_printed_matrices():
    printed = book_values()
    mask = chapter.mask_view(DEFAULTS, chapter.module_seed(DEFAULTS, "causal"))
    np.testing.assert_allclose(mask.unmasked_weights, printed.causal_unmasked_weights, atol=BOOK_CHAIN)
    np.testing.assert_array_equal(mask.mask_simple, printed.causal_mask_simple)
    np.testing.assert_allclose(mask.masked_simple, printed.causal_masked_simple, atol=BOOK_CHAIN)
    np.testing.assert_allclose(mask.weights_renormalized, printed.causal_renormalized, atol=BOOK_CHAIN)
    np.testing.assert_array_equal(np.isneginf(mask.masked_scores), np.isneginf(printed.causal_masked_scores))
    finite = np.isfinite(mask.masked_scores)
    np.testing.assert_allclose(
        mask.masked_scores[finite], printed.causal_masked_scores.numpy()[finite], atol=BOOK_CHAIN
    )
    np.testing.assert_allclose(mask.weights_neg_inf, printed.causal_weights, atol=BOOK_CHAIN)
    dropout = chapter.dropout_view(chapter.dropout_settings(DEFAULTS), 10, chapter.module_seed(DEFAULTS, "dropout"))
    np.testing.assert_allclose(dropout.dropped_weights, printed.dropout_weights, atol=BOOK_CHAIN)
    np.testing.assert_array_equal(dropout.ones_demo, printed.dropout_ones)
    qkv = chapter.qkv_view(DEFAULTS, chapter.module_seed(DEFAULTS, "v2"))
    np.testing.assert_allclose(qkv.steps.output, printed.v1_context, atol=BOOK_CHAIN)
    np.testing.assert_allclose(qkv.v2_output, printed.v2_context, atol=BOOK_CHAIN)
    np.testing.assert_allclose(qkv.v1_output, printed.v2_context, atol=BOOK_CHAIN)
