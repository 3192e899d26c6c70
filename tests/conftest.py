"""Fixtures shared by the tests of several chapter-3 stages."""

import os
from pathlib import Path

import pytest
import torch

from attention import BOOK_INPUTS

# Offline machines (CI here) keep GPT-2's rank file in ../shared/tiktoken_cache; elsewhere tiktoken's
# own cache or a download is used. Set before any test loads the tokenizer or starts a server.
_SHARED_CACHE = Path(__file__).resolve().parents[2] / "shared" / "tiktoken_cache"
if "TIKTOKEN_CACHE_DIR" not in os.environ and _SHARED_CACHE.is_dir():
    os.environ["TIKTOKEN_CACHE_DIR"] = str(_SHARED_CACHE)


@pytest.fixture
def book_batch() -> torch.Tensor:
    """The book's batch: "Your journey starts with one step" twice, (2, 6, 3)."""
    return torch.stack([BOOK_INPUTS, BOOK_INPUTS])  # (b=2, num_tokens=6, d_in=3)
