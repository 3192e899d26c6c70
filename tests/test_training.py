"""Training: each shipped model's loss falls in a few steps, and the shipped files are small safetensors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from attention.after_chapter.gpt import GPTConfig
from attention.after_chapter.training import train_gpt
from attention.before_chapter.reversal import WEIGHTS_DIR, train_reversal

VERDICT = Path(__file__).resolve().parents[2] / "shared" / "data" / "the-verdict.txt"
MAX_SHIPPED_BYTES = 15 * 1024 * 1024


@pytest.mark.parametrize("use_attention", [True, False])
def test_reversal_loss_falls_in_a_few_steps(use_attention):
    torch.set_num_threads(1)
    _, log = train_reversal(use_attention, steps=40, batch_size=16, lengths=(4, 6), log_every=20)
    assert len(log.losses) == 2
    assert log.losses[-1] < log.losses[0] - 0.05


def test_reversal_training_is_reproducible():
    first, _ = train_reversal(True, steps=3, batch_size=4, log_every=3)
    second, _ = train_reversal(True, steps=3, batch_size=4, log_every=3)
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.skipif(not VERDICT.is_file(), reason=f"{VERDICT} is absent: the GPT trains on the book's text")
def test_gpt_loss_falls_in_a_few_steps():
    torch.set_num_threads(1)
    cfg = GPTConfig(context_length=32, emb_dim=32, n_heads=2, n_layers=1, drop_rate=0.0, tie_weights=True)
    _, log = train_gpt(VERDICT.read_text(encoding="utf-8"), cfg, steps=30, batch_size=4, log_every=10)
    assert len(log.losses) == 3
    assert log.losses[-1] < log.losses[0] - 0.3
    assert log.val_loss < log.losses[0]
    assert 1000 < log.story_vocab < 2000


def test_shipped_weights_are_safetensors_and_small():
    files = sorted(p for p in WEIGHTS_DIR.iterdir() if p.is_file())
    weights = [p for p in files if p.suffix == ".safetensors"]
    assert {p.name for p in weights} >= {
        "gpt_verdict.safetensors",
        "reversal_attention.safetensors",
        "reversal_plain.safetensors",
    }
    assert all(p.suffix in (".safetensors", ".json") for p in files), "no pickled weights ship"
    for path in weights:
        with safe_open(str(path), framework="pt") as f:
            assert len(list(f.keys())) > 0
    assert sum(p.stat().st_size for p in files) <= MAX_SHIPPED_BYTES
