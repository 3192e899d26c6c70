"""Stage 2: token embeddings, the vectors that attention works on.

Chapter 3 begins with six hand-picked 3-dimensional vectors for the sentence
"Your journey starts with one step" (``BOOK_INPUTS``); every printed number in
the chapter comes from them. For a sentence the user types we need vectors of
any size ``d_in`` instead. An untrained model's embedding layer is random, so
we draw one vector per token id from a generator seeded by ``(seed, id)``:
the same token gets the same vector in every sentence and every process,
which lets a learner see that "step" means the same thing wherever it stands.
Like the book's vectors, the values lie in [0, 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .constants import BOOK_SENTENCE, BOOK_TOKENS, BOOK_VECTORS  # noqa: F401  (exported here too)

BOOK_INPUTS = torch.tensor(BOOK_VECTORS, dtype=torch.float32)  # (num_tokens=6, d_in=3)

MAX_D_IN = 4096


def check_d_in(d_in: int) -> None:
    """Raise a ``ValueError`` a learner understands if ``d_in`` is not a usable size."""
    if isinstance(d_in, bool) or not isinstance(d_in, int):
        raise ValueError(f"d_in must be a whole number, got {d_in!r}.")
    if not 1 <= d_in <= MAX_D_IN:
        raise ValueError(f"d_in must be between 1 and {MAX_D_IN}, got {d_in}.")


def token_vector(token_id: int, d_in: int, seed: int) -> torch.Tensor:
    """The embedding of one token id: a pure function of ``(token_id, d_in, seed)``.

    Shapes: returns (d_in,).
    """
    generator = torch.Generator().manual_seed(hash_seed(token_id, seed))
    return torch.rand(d_in, generator=generator)  # (d_in,)


def hash_seed(token_id: int, seed: int) -> int:
    """Mix a seed and a token id into one 63-bit generator seed (SplitMix64 steps)."""
    value = (seed * 0x9E3779B97F4A7C15 + token_id) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (value ^ (value >> 31)) >> 1


def embed_tokens(token_ids: Sequence[int], d_in: int, seed: int = 123) -> torch.Tensor:
    """Seeded embeddings for a sentence the user typed.

    Shapes: ``token_ids`` has num_tokens entries; returns (num_tokens, d_in).
    """
    check_d_in(d_in)
    if len(token_ids) == 0:
        raise ValueError("There is nothing to embed: type at least one word.")
    return torch.stack([token_vector(int(i), d_in, seed) for i in token_ids])  # (num_tokens, d_in)
