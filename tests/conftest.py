"""Fixtures shared by the tests of several chapter-3 stages."""

import pytest
import torch

from attention import BOOK_INPUTS


@pytest.fixture
def book_batch() -> torch.Tensor:
    """The book's batch: "Your journey starts with one step" twice, (2, 6, 3)."""
    return torch.stack([BOOK_INPUTS, BOOK_INPUTS])  # (b=2, num_tokens=6, d_in=3)
