"""Fixtures shared by the tests of several chapter-3 stages."""

import pytest
import torch

from attention import BOOK_INPUTS, SelfAttention_v2, trace


@pytest.fixture
def book_batch() -> torch.Tensor:
    """The book's batch: "Your journey starts with one step" twice, (2, 6, 3)."""
    return torch.stack([BOOK_INPUTS, BOOK_INPUTS])  # (b=2, num_tokens=6, d_in=3)


@pytest.fixture
def book_scaled_scores() -> torch.Tensor:
    """The chapter's scaled scores for masking and dropout: SelfAttention_v2 built after torch.manual_seed(789)."""
    torch.manual_seed(789)
    return trace(SelfAttention_v2(3, 2), BOOK_INPUTS).scaled_scores[0, 0]  # (6, 6)


@pytest.fixture(scope="session")
def random_tensor():
    """``random_tensor(seed, *shape)``: uniform values in [0, 1) from a generator of their own, so that a
    test's input does not depend on the global seed or on what ran before it. (Session-scoped, so that
    hypothesis's ``@given`` tests may use it.)"""

    def make(seed: int, *shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

    return make


@pytest.fixture(scope="session")
def future_changed(random_tensor):
    """``future_changed(seed, t, b, num_tokens, d_in)``: random inputs ``x``, (b, num_tokens, d_in), and a copy
    of them whose tokens from position ``t`` on are other, larger ones. A causal module's outputs before ``t``
    cannot tell the two apart."""

    def make(seed: int, t: int, b: int, num_tokens: int, d_in: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = random_tensor(seed, b, num_tokens, d_in)  # (b, num_tokens, d_in)
        changed = x.clone()
        changed[:, t:] = random_tensor(seed + 1, b, num_tokens - t, d_in) * 10
        return x, changed

    return make
