"""After chapter 3: the small ``GPTModel`` trained on "The Verdict", and its checkpoint saved and loaded.

Chapter 5 trains the chapter-4 model on Edith Wharton's "The Verdict". This
module does it at a small size, so the app can show attention that has
*learned* something:

* ``train_gpt`` trains a small one from a fixed seed on one CPU thread
  (``scripts/train.py`` runs it).
* ``save_gpt`` and ``load_gpt`` write and read a model as safetensors;
  ``load_trained_gpt`` loads the one that ships with the package.

Shapes use b (batch), T (num_tokens), d (emb_dim).
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from ..constants import VERDICT_CONFIG, GPTConfig
from .gpt import GPTModel, load_state_into

WEIGHTS_DIR = Path(__file__).parents[1] / "weights"
VERDICT_WEIGHTS = WEIGHTS_DIR / "gpt_verdict.safetensors"
VERDICT_METRICS = WEIGHTS_DIR / "gpt_verdict.json"
VERDICT_NAME = "the-verdict.txt"
VERDICT_SEED = 123


# Saving and loading, safetensors only: a weight file holds tensors and a JSON config, never code.


def gpt_state(model: GPTModel, dtype: torch.dtype = torch.float16) -> dict[str, torch.Tensor]:
    """The tensors worth storing: no ``mask`` buffers (the model rebuilds them), no tied ``out_head``."""
    state = {}
    for name, tensor in model.state_dict().items():
        if name.endswith(".att.mask") or (model.cfg.tie_weights and name == "out_head.weight"):
            continue
        state[name] = tensor.detach().to(dtype).contiguous()
    return state


def save_gpt(model: GPTModel, path: Path, dtype: torch.dtype = torch.float16) -> None:
    from safetensors.torch import save_file

    save_file(gpt_state(model, dtype), str(path), metadata={"config": json.dumps(asdict(model.cfg))})


def load_gpt(path: Path) -> GPTModel:
    """A ``GPTModel`` from a file ``save_gpt`` wrote, in float32 and eval mode."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        cfg = GPTConfig(**json.loads(f.metadata()["config"]))
        state = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    with torch.random.fork_rng(devices=[]):
        model = GPTModel(cfg)
    return load_state_into(model, state)


@functools.cache
def load_trained_gpt() -> GPTModel:
    """The small GPT trained on "The Verdict" that ships with the package (built once per process)."""
    return load_gpt(VERDICT_WEIGHTS)


# Training (chapter 5, in miniature)


def verdict_path() -> Path:
    """Where "The Verdict" lies beside a checkout: ``../shared/data/the-verdict.txt``."""
    return Path(__file__).resolve().parents[3] / "shared" / "data" / VERDICT_NAME


def encode_text(text: str) -> torch.Tensor:
    """GPT-2 BPE ids of ``text``. Shapes: → (num_ids,)."""
    from ..tokens import load_bpe

    bpe = load_bpe()
    if bpe is None:
        raise ValueError("Training needs GPT-2's BPE rank file (attention/data/r50k_base.tiktoken).")
    return torch.tensor(bpe.encode(text, allowed_special={"<|endoftext|>"}), dtype=torch.long)


@dataclass(frozen=True)
class GPTTrainingLog:
    """What ``train_gpt`` measured. Losses are cross-entropy in nats per token, over the story's vocabulary."""

    losses: tuple[float, ...]  # mean training loss of each ``log_every`` steps
    train_loss: float  # at the end, eval mode, over the training split
    val_loss: float  # at the end, over the held-out last 10% of the text
    val_accuracy: float  # share of held-out next tokens the model ranks first
    story_vocab: int  # distinct tokens in the text: the softmax chooses among these
    steps: int
    seconds: float


def _windows(ids: torch.Tensor, context_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping (input, target) windows, target shifted by one. Shapes: → 2 x (n, context_length)."""
    n = (ids.numel() - 1) // context_length
    inputs = ids[: n * context_length].view(n, context_length)  # (n, context_length)
    targets = ids[1 : n * context_length + 1].view(n, context_length)  # (n, context_length)
    return inputs, targets


def _story_logits(model: GPTModel, inputs: torch.Tensor, vocab: torch.Tensor) -> torch.Tensor:
    """The model's logits for the tokens in ``vocab`` only. Shapes: (b, T) → (b, T, len(vocab))."""
    x = model.final_norm(model.trf_blocks(model.embed(inputs)))  # (b, T, d)
    return x @ model.out_head.weight[vocab].T  # (b, T, len(vocab))


def evaluate(model: GPTModel, ids: torch.Tensor, vocab: torch.Tensor) -> tuple[float, float]:
    """Mean next-token loss and top-1 accuracy over ``ids`` cut into context-length windows,
    choosing among the tokens in ``vocab`` (sorted), as ``train_gpt`` trains."""
    context_length = min(model.cfg.context_length, ids.numel() - 1)
    inputs, targets = _windows(ids, context_length)
    model.eval()
    with torch.no_grad():
        logits = _story_logits(model, inputs, vocab)  # (n, T, len(vocab))
        targets = torch.searchsorted(vocab, targets)  # (n, T): positions in vocab
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
        accuracy = (logits.argmax(-1) == targets).float().mean().item()
    return loss, accuracy


def train_gpt(
    text: str,
    cfg: GPTConfig = VERDICT_CONFIG,
    steps: int = 1000,
    *,
    batch_size: int = 8,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    seed: int = VERDICT_SEED,
    log_every: int = 25,
    progress=None,
) -> tuple[GPTModel, GPTTrainingLog]:
    """Train a ``GPTModel`` on ``text``: the first 90% to learn from, the last 10% held out, as in chapter 5.

    Each step reads ``batch_size`` windows of ``context_length`` tokens at
    random offsets (a private generator seeded by ``seed``) and takes an AdamW
    step on the next-token cross-entropy, the learning rate decaying along a
    cosine. ``progress(step, loss)`` is called every ``log_every`` steps.

    The softmax runs over the story's own vocabulary (about 1,100 of GPT-2's
    50,257 tokens) instead of all of it: that is 45 times less work per step,
    so a few minutes on one CPU thread suffice. The model keeps the full
    ``out_head``; tokens the story never uses keep their initial embeddings.
    Losses are reported over the story's vocabulary too.
    """
    ids = encode_text(text)  # (num_ids,)
    split = int(0.9 * ids.numel())
    train_ids, val_ids = ids[:split], ids[split:]  # (split,), (num_ids - split,)
    if train_ids.numel() <= cfg.context_length + 1 or val_ids.numel() < 2:
        raise ValueError(f"The text is too short to train on: {ids.numel()} tokens.")
    vocab = ids.unique()  # (story_vocab,), sorted
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPTModel(cfg)
        for embedding in (model.tok_emb, model.pos_emb):
            nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's init; N(0, 1) gives huge tied logits
        generator = torch.Generator().manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps))
        )
        positions = torch.arange(cfg.context_length)  # (T,)
        losses, running, start = [], 0.0, time.perf_counter()
        for step in range(1, steps + 1):
            model.train()
            offsets = torch.randint(train_ids.numel() - cfg.context_length, (batch_size, 1), generator=generator)
            inputs = train_ids[offsets + positions]  # (b, T)
            targets = train_ids[offsets + positions + 1]  # (b, T)
            logits = _story_logits(model, inputs, vocab)  # (b, T, story_vocab)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), torch.searchsorted(vocab, targets).flatten())
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            running += loss.item()
            if step % log_every == 0 or step == steps:
                losses.append(running / (step - log_every * (len(losses))))
                running = 0.0
                if progress is not None:
                    progress(step, losses[-1])
    seconds = time.perf_counter() - start
    train_loss, _ = evaluate(model, train_ids, vocab)
    val_loss, val_accuracy = evaluate(model, val_ids, vocab)
    log = GPTTrainingLog(tuple(losses), train_loss, val_loss, val_accuracy, vocab.numel(), steps, seconds)
    return model.eval(), log
