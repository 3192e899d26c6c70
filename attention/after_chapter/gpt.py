"""After chapter 3: the chapter-4 GPT model, built from this package's ``MultiHeadAttention``.

Chapter 3 ends with ``MultiHeadAttention`` and random weights. Chapter 4
wraps it into a transformer block (LayerNorm, attention, a feed-forward
layer, shortcut connections) and stacks blocks into ``GPTModel``:

* ``GPTModel`` is the book's model with the book's names (``tok_emb``,
  ``pos_emb``, ``trf_blocks``, ``att``, ``ff``, ``norm1``, ``norm2``,
  ``final_norm``, ``out_head``), so the book's state dicts load into it
  (``load_state_into``).
* ``check_ids`` turns a sentence's token ids into the model's input.

``training`` trains a small one on "The Verdict" and saves and loads it; ``inspecting`` reads a layer's
attention out of a model; ``gpt2`` loads OpenAI's weights into it.

Shapes use b (batch), T (num_tokens), d (emb_dim), h (num_heads).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..constants import GPT2_SMALL, VERDICT_CONFIG, GPTConfig  # noqa: F401  (exported here too)
from ..multihead import MultiHeadAttention


class LayerNorm(nn.Module):
    """Normalize each token's vector to mean 0, variance 1, then learn a ``scale`` and ``shift`` (section 4.2)."""

    def __init__(self, emb_dim: int):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)  # (..., d)
        return self.scale * norm_x + self.shift  # (..., d)


class GELU(nn.Module):
    """GELU with GPT-2's tanh approximation (section 4.3)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))  # (..., any)


class FeedForward(nn.Module):
    """Widen to 4 * emb_dim, GELU, narrow back: the same small network for every token (section 4.3)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg.emb_dim, 4 * cfg.emb_dim),
            GELU(),
            nn.Linear(4 * cfg.emb_dim, cfg.emb_dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (b, T, d)


class TransformerBlock(nn.Module):
    """Chapter 3's ``MultiHeadAttention`` and a feed-forward layer, each after a LayerNorm and
    each added back onto its input through a shortcut connection (section 4.5).

    Shapes: x (b, T, d) → (b, T, d).
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg.emb_dim,
            d_out=cfg.emb_dim,
            context_length=cfg.context_length,
            dropout=cfg.drop_rate,
            num_heads=cfg.n_heads,
            qkv_bias=cfg.qkv_bias,
        )
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg.emb_dim)
        self.norm2 = LayerNorm(cfg.emb_dim)
        self.drop_shortcut = nn.Dropout(cfg.drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.norm1(x)  # (b, T, d): what the attention layer reads
        x = self.att(x)  # (b, T, d)
        x = self.drop_shortcut(x)
        x = x + shortcut  # (b, T, d)

        shortcut = x
        x = self.norm2(x)  # (b, T, d)
        x = self.ff(x)  # (b, T, d)
        x = self.drop_shortcut(x)
        return x + shortcut  # (b, T, d)


class GPTModel(nn.Module):
    """The book's GPT (section 4.6): token and position embeddings, ``n_layers`` blocks,
    a final LayerNorm and a linear ``out_head`` that scores every vocabulary token.

    With ``cfg.tie_weights`` the ``out_head`` is ``tok_emb``'s matrix (GPT-2's
    "weight tying"), which halves the parameters of a small model.

    Shapes: in_idx (b, T) token ids → logits (b, T, vocab_size).
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.pos_emb = nn.Embedding(cfg.context_length, cfg.emb_dim)
        self.drop_emb = nn.Dropout(cfg.drop_rate)
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.final_norm = LayerNorm(cfg.emb_dim)
        self.out_head = nn.Linear(cfg.emb_dim, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.out_head.weight = self.tok_emb.weight

    def embed(self, in_idx: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings, the first layer's input. Shapes: (b, T) → (b, T, d)."""
        num_tokens = in_idx.shape[1]
        tok_embeds = self.tok_emb(in_idx)  # (b, T, d)
        pos_embeds = self.pos_emb(torch.arange(num_tokens, device=in_idx.device))  # (T, d)
        return self.drop_emb(tok_embeds + pos_embeds)  # (b, T, d)

    def forward(self, in_idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(in_idx)  # (b, T, d)
        x = self.trf_blocks(x)  # (b, T, d)
        x = self.final_norm(x)  # (b, T, d)
        return self.out_head(x)  # (b, T, vocab_size)


def check_ids(ids, cfg: GPTConfig) -> torch.Tensor:
    """Token ids as a (1, T) tensor, or a ``ValueError`` a learner understands."""
    try:
        in_idx = torch.as_tensor(list(ids), dtype=torch.long)  # (T,)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError("Token ids must be a list of whole numbers.") from error
    if in_idx.dim() != 1 or in_idx.numel() == 0:
        raise ValueError("The model needs at least one token id.")
    if in_idx.numel() > cfg.context_length:
        raise ValueError(
            f"This model reads at most {cfg.context_length} tokens (its context_length); "
            f"the sentence has {in_idx.numel()}. Shorten it."
        )
    if (in_idx < 0).any() or (in_idx >= cfg.vocab_size).any():
        raise ValueError(f"Token ids must lie between 0 and {cfg.vocab_size - 1}, the model's vocabulary.")
    return in_idx.unsqueeze(0)  # (1, T)


def load_state_into(model: GPTModel, state: dict[str, torch.Tensor]) -> GPTModel:
    """Copy ``state`` into ``model``; ``mask`` buffers and a tied ``out_head`` may be absent.

    Anything else missing, unexpected or of the wrong shape raises a ``ValueError`` naming it.
    """
    own = model.state_dict()
    optional = {n for n in own if n.endswith(".att.mask")}
    if model.cfg.tie_weights:
        optional.add("out_head.weight")
    missing = sorted(set(own) - set(state) - optional)
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(f"The weights do not fit this model: missing {missing[:5]}, unexpected {unexpected[:5]}.")
    for name, tensor in state.items():
        if tuple(tensor.shape) != tuple(own[name].shape):
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)} in the file but the model needs {tuple(own[name].shape)}."
            )
    with torch.no_grad():
        for name, tensor in state.items():
            if name.endswith(".att.mask"):
                continue  # the model's own causal mask; a file's copy carries no learned numbers
            own[name].copy_(tensor.to(own[name].dtype))
    return model.eval()
