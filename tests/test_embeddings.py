"""Stage 2, embeddings: the book's six vectors, and seeded vectors that depend only on (id, d_in, seed)."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention import BOOK_INPUTS, BOOK_SENTENCE, BOOK_TOKENS, embed_tokens, token_vector

REPO = Path(__file__).resolve().parents[1]

TOKEN_IDS = st.lists(st.integers(0, 50256), min_size=1, max_size=8)
D_IN = st.integers(1, 16)
SEED = st.integers(0, 2**32)


def test_book_sentence_and_tokens():
    assert BOOK_SENTENCE == "Your journey starts with one step"
    assert BOOK_TOKENS == ("Your", "journey", "starts", "with", "one", "step")
    assert " ".join(BOOK_TOKENS) == BOOK_SENTENCE


def test_book_inputs_are_the_chapters_vectors():
    expected = torch.tensor(
        [
            [0.43, 0.15, 0.89],
            [0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64],
            [0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10],
            [0.05, 0.80, 0.55],
        ]
    )

    assert BOOK_INPUTS.dtype == torch.float32
    assert torch.equal(BOOK_INPUTS, expected)


@settings(max_examples=50, deadline=None)
@given(token_ids=TOKEN_IDS, d_in=D_IN, seed=SEED)
def test_each_row_is_its_tokens_vector(token_ids, d_in, seed):
    embeddings = embed_tokens(token_ids, d_in, seed)

    assert embeddings.shape == (len(token_ids), d_in)
    assert embeddings.dtype == torch.float32
    assert ((embeddings >= 0) & (embeddings < 1)).all()
    for row, token_id in zip(embeddings, token_ids, strict=True):
        assert torch.equal(row, token_vector(token_id, d_in, seed))


def test_same_token_same_vector_in_any_sentence():
    step = 3272
    first = embed_tokens([7120, 7002, 4940, step], d_in=5, seed=7)
    second = embed_tokens([step, 11, step], d_in=5, seed=7)

    assert torch.equal(first[3], second[0])
    assert torch.equal(second[0], second[2])
    assert not torch.equal(first[0], first[3])


def test_same_token_same_vector_in_another_process():
    here = token_vector(3272, 5, 7).tolist()
    script = "from attention import embed_tokens\nprint(embed_tokens([3272], 5, seed=7)[0].tolist())"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)

    assert done.stdout.strip() == str(here)


def test_different_seeds_give_different_vectors():
    token_ids = [1, 2, 3]

    assert not torch.equal(embed_tokens(token_ids, 4, seed=1), embed_tokens(token_ids, 4, seed=2))


def test_default_seed_is_123():
    assert torch.equal(embed_tokens([42], 3), embed_tokens([42], 3, seed=123))


def test_embedding_leaves_the_global_random_state_alone():
    before = torch.get_rng_state()
    embed_tokens([1, 2, 3], 8, seed=5)

    assert torch.equal(torch.get_rng_state(), before)


def test_nothing_to_embed_is_a_clear_error():
    with pytest.raises(ValueError, match="nothing to embed"):
        embed_tokens([], 3)


@pytest.mark.parametrize("d_in", [0, -1, 1.5, True, "3", 5000])
def test_bad_d_in_is_a_clear_error(d_in):
    with pytest.raises(ValueError, match="d_in"):
        embed_tokens([1], d_in)
