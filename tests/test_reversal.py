"""After stage 0: the encoder–decoder trained to reverse sentences, its alignment and the bottleneck in numbers."""

from __future__ import annotations

import pytest
import torch
from tolerances import summation_error

from attention import BOOK_SENTENCE
from attention.before_chapter.bahdanau import MAX_NUM_TOKENS
from attention.before_chapter.reversal import (
    REVERSAL_VOCAB,
    BottleneckCurve,
    ReversalSeq2Seq,
    bottleneck_curve,
    measure_bottleneck,
    reversal_symbols,
    trained_alignment,
)

# GPT-2 ids of "The cat sat on the mat because it was tired", as tokenize() gives them.
TYPED_IDS = (464, 3797, 3332, 319, 262, 2603, 780, 340, 373, 10032)


def assert_distributions(weights: torch.Tensor) -> None:
    assert (weights >= 0).all()
    sums = float(summation_error(2 * weights.shape[-1] + 3, 1.0))  # the softmax's rounding of n weights, then their sum
    assert torch.allclose(weights.sum(dim=-1), torch.ones(weights.shape[:-1]), atol=sums, rtol=0)


BOOK_IDS = (7120, 7002, 4940, 351, 530, 2239)  # "Your journey starts with one step"
# "The quick brown fox jumps over the lazy dog while the old cat sleeps on a warm mat by the door", 21 tokens.
LONG_TYPED_IDS = (464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 981, 262, 1468, 3797, 44263, 319, 257, 5814,
                  2603, 416, 262, 3420)  # fmt: skip


def test_reversal_symbols_map_any_id():
    assert reversal_symbols([0, 15, 16, 50256]).tolist() == [0, 15, 0, 50256 % REVERSAL_VOCAB]
    for bad in ([], [-1], list(range(MAX_NUM_TOKENS + 1))):
        with pytest.raises(ValueError):
            reversal_symbols(bad)


def test_the_plain_model_has_no_attention_weights():
    torch.manual_seed(0)
    model = ReversalSeq2Seq(use_attention=False).eval()
    logits, weights = model(torch.randint(REVERSAL_VOCAB, (2, 7)))
    assert logits.shape == (2, 7, REVERSAL_VOCAB)
    assert torch.equal(weights, torch.zeros(2, 7, 7))


@pytest.mark.parametrize("ids", [BOOK_IDS, LONG_TYPED_IDS, TYPED_IDS])
def test_trained_alignment_is_a_crisp_anti_diagonal(ids):
    run = trained_alignment(ids)
    num_tokens = len(ids)
    assert run.trained_weights.shape == run.untrained_weights.shape == (num_tokens, num_tokens)
    assert_distributions(run.trained_weights)
    assert_distributions(run.untrained_weights)
    assert run.mean_max_weight >= 0.5
    assert run.on_anti_diagonal >= 0.5
    assert torch.equal(run.trained_weights.argmax(-1), torch.arange(num_tokens - 1, -1, -1))
    assert run.accuracy == 1.0 and torch.equal(run.output, run.expected)
    assert run.untrained_mean_max_weight < 2.5 / num_tokens  # untrained: close to uniform


def test_the_book_sentence_ids_are_the_tokenizers():
    from attention import tokenize

    assert tokenize(BOOK_SENTENCE).ids == BOOK_IDS
    long_sentence = "The quick brown fox jumps over the lazy dog while the old cat sleeps on a warm mat by the door"
    assert tokenize(long_sentence).ids == LONG_TYPED_IDS


def test_without_attention_accuracy_falls_behind_as_sentences_grow():
    curve = bottleneck_curve()
    assert curve.lengths[0] <= 4 and curve.lengths[-1] >= 40
    assert all(a >= b for a, b in zip(curve.with_attention, curve.without_attention, strict=True))
    assert min(curve.with_attention) > 0.9
    assert curve.without_attention[0] > 0.9  # short sentences fit through the bottleneck
    assert curve.without_attention[-1] < curve.without_attention[0] - 0.3
    assert curve.with_attention[-1] - curve.without_attention[-1] > 0.3


def test_the_stored_curve_is_what_the_package_measures():
    stored = bottleneck_curve()
    measured = measure_bottleneck(lengths=stored.lengths[:3])  # the same first sentences, drawn in order
    assert measured.lengths == stored.lengths[:3]
    stored = BottleneckCurve(stored.lengths[:3], stored.with_attention[:3], stored.without_attention[:3])
    assert torch.allclose(torch.tensor(measured.with_attention), torch.tensor(stored.with_attention), atol=1e-3)
    assert torch.allclose(torch.tensor(measured.without_attention), torch.tensor(stored.without_attention), atol=1e-3)
