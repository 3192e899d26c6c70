"""The package's fixed values that need no torch: the book's sentence and vectors, the models' sizes,
a few limits and notes.

An app reads these before it has imported torch: the explorer draws its sidebar and first page while
torch is still loading (``explorer/runtime/server.py``). Each module that uses one imports it from here, and
the package exports them under the same names as before (``attention.BOOK_SENTENCE``,
``attention.after_chapter.gpt.VERDICT_CONFIG``, ``attention.before_chapter.bahdanau.MAX_HIDDEN_SIZE``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch only, so that this module imports nothing of the package's, not even for types
    from torch import nn

# Chapter 3's example: six hand-picked 3-d vectors, one per word (``embeddings.BOOK_INPUTS`` is this as a tensor).
BOOK_SENTENCE = "Your journey starts with one step"
BOOK_TOKENS = ("Your", "journey", "starts", "with", "one", "step")
BOOK_VECTORS = (
    (0.43, 0.15, 0.89),  # Your     (x^1)
    (0.55, 0.87, 0.66),  # journey  (x^2)
    (0.57, 0.85, 0.64),  # starts   (x^3)
    (0.22, 0.58, 0.33),  # with     (x^4)
    (0.77, 0.25, 0.10),  # one      (x^5)
    (0.05, 0.80, 0.55),  # step     (x^6)
)

# The chapter's seed schedule, its one home: the ``torch.manual_seed`` the book calls before each printed step.
BOOK_SEEDS = {
    "qkv_steps": 123,  # 3.4.1: W_query, W_key, W_value as nn.Parameter(torch.rand(...))
    "v1": 123,  # 3.4.2: SelfAttention_v1
    "v2": 789,  # 3.4.2: SelfAttention_v2, whose weights section 3.5.1 reuses
    "causal": 789,
    "dropout": 123,  # 3.5.2: before the dropout draws
    "causal_class": 123,  # 3.5.3: CausalAttention
    "wrapper": 123,  # 3.6.1: MultiHeadAttentionWrapper
    "multihead": 123,  # 3.6.2: MultiHeadAttention
}

# The sections of the chapter whose printed values ``book`` replays, with their modules and seeds.
BOOK_SECTIONS = {
    "simplified": "3.3.2 Computing attention weights for all input tokens",
    "v1": f"3.4.2 Implementing a compact self-attention Python class (SelfAttention_v1, seed {BOOK_SEEDS['v1']})",
    "v2": f"3.4.2 Implementing a compact self-attention Python class (SelfAttention_v2, seed {BOOK_SEEDS['v2']})",
    "causal": f"3.5.1 Applying a causal attention mask (SelfAttention_v2, seed {BOOK_SEEDS['causal']})",
    "dropout": f"3.5.2 Masking additional attention weights with dropout (seed {BOOK_SEEDS['dropout']})",
    "causal_class": f"3.5.3 Implementing a compact causal attention class (seed {BOOK_SEEDS['causal_class']})",
    "wrapper": f"3.6.1 Stacking multiple single-head attention layers (seed {BOOK_SEEDS['wrapper']})",
    "multihead": f"3.6.2 Implementing multi-head attention with weight splits (seed {BOOK_SEEDS['multihead']})",
}

# Sections 3.1–3.2 (``bahdanau``).
MAX_HIDDEN_SIZE = 32  # the exact Jacobian runs 2 * hidden_size copies of the sentence
UNTRAINED_NOTE = (
    "These parameters are random and untrained: the patterns show how the mechanism works, not a trained translation."
)


@dataclass(frozen=True)
class GPTConfig:
    """The book's ``GPT_CONFIG_124M`` dictionary as a dataclass, same field names (``gpt.GPTModel``)."""

    vocab_size: int = 50257  # GPT-2's BPE vocabulary
    context_length: int = 1024  # the most tokens one pass reads
    emb_dim: int = 768  # d_model: the width of every token's vector
    n_heads: int = 12  # attention heads per layer
    n_layers: int = 12  # transformer blocks
    drop_rate: float = 0.1  # dropout on embeddings, attention weights and shortcuts
    qkv_bias: bool = False  # W_query/W_key/W_value with a bias (GPT-2's checkpoints have one)
    tie_weights: bool = False  # out_head reuses tok_emb's matrix, as GPT-2 does (the book's model does not)


GPT2_SMALL = GPTConfig(qkv_bias=True, tie_weights=True)  # GPT-2 124M
# No dropout: on a 5,000-token story, dropout kept every head near uniform; without it, heads specialize.
VERDICT_CONFIG = GPTConfig(context_length=128, emb_dim=64, n_heads=4, n_layers=4, drop_rate=0.0, tie_weights=True)

# A GPT-2 checkpoint the server's operator names (``gpt2``).
CHECKPOINT_VARIABLE = "ATTENTION_GPT2_CHECKPOINT"


@dataclass(frozen=True)
class GPT2Checkpoint:
    """What ``gpt2.gpt2_from_environment`` found: a ``model``, or ``None`` and a ``message`` saying why not."""

    model: nn.Module | None  # a gpt.GPTModel
    message: str
    path: str | None

    @property
    def ok(self) -> bool:
        return self.model is not None


NO_CHECKPOINT = GPT2Checkpoint(
    None, f"No GPT-2 checkpoint: the server's {CHECKPOINT_VARIABLE} environment variable is not set.", None
)


def checkpoint_named(environ) -> str:
    """The checkpoint path ``environ`` names in ``CHECKPOINT_VARIABLE``, or "" for none."""
    return environ.get(CHECKPOINT_VARIABLE, "").strip()
