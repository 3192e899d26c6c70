"""Stage 8: a trace, every intermediate of one forward pass, named in the book's words.

``trace(module, x)`` runs the module's own ``forward_steps`` with a record,
so the trace and ``module(x)`` share one code path and cannot drift apart.
All five modules give the same shapes: v1 and v2 appear as one head with no
mask, ``CausalAttention`` as one head, the wrapper's heads are stacked.

It also builds modules reproducibly: ``build(cls, seed, ...)`` is
``torch.manual_seed(seed)`` then ``cls(...)``, which reproduces the book's
printed numbers, made safe for a server where many sessions build at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields

import torch
from torch import nn

from .causal import CausalAttention
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from .trainable import SelfAttention_v1, SelfAttention_v2

TRACEABLE = (SelfAttention_v1, SelfAttention_v2, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention)
_GLOBAL_RNG = threading.Lock()


@dataclass(frozen=True)
class Trace:
    """Every intermediate of one forward pass.

    Shapes (b = 1 for an unbatched input, h = 1 for single-head modules):

    - ``inputs`` (b, T, d_in)
    - ``queries``, ``keys``, ``values`` (b, h, T, head_dim)
    - ``attn_scores`` (q·k, unscaled) and ``scaled_scores`` (divided by sqrt(head_dim)) (b, h, T, T)
    - ``mask`` (T, T), True = masked; None for v1 and v2
    - ``masked_scores`` (b, h, T, T): scaled, -inf where masked
    - ``attn_weights`` (b, h, T, T): after the softmax
    - ``dropout_mask`` (b, h, T, T), True = kept; None when dropout is inactive
    - ``dropped_weights`` (b, h, T, T): the weights after dropout
    - ``head_context`` (b, h, T, head_dim): each head's context vectors
    - ``context`` (b, T, h * head_dim): the heads concatenated
    - ``output`` (b, T, d_out): after ``out_proj`` where there is one, else ``context``
    """

    module: str
    inputs: torch.Tensor
    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    attn_scores: torch.Tensor
    scaled_scores: torch.Tensor
    mask: torch.Tensor | None
    masked_scores: torch.Tensor
    attn_weights: torch.Tensor
    dropout_mask: torch.Tensor | None
    dropped_weights: torch.Tensor
    head_context: torch.Tensor
    context: torch.Tensor
    output: torch.Tensor

    @property
    def num_heads(self) -> int:
        return self.queries.shape[1]

    @property
    def head_dim(self) -> int:
        return self.queries.shape[-1]

    def tensors(self) -> dict[str, torch.Tensor]:
        """The named tensors, skipping the ones that are None."""
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), torch.Tensor)}


_PER_HEAD = (
    "queries",
    "keys",
    "values",
    "attn_scores",
    "scaled_scores",
    "masked_scores",
    "attn_weights",
    "dropout_mask",
    "dropped_weights",
    "head_context",
)


def _stack_heads(head_records: list[dict]) -> dict:
    """Stack single-head records along a new head dimension: (b, T, ·) → (b, h, T, ·)."""
    stacked = {}
    for name in _PER_HEAD:
        parts = [record[name] for record in head_records]
        stacked[name] = None if parts[0] is None else torch.stack(parts, dim=1)  # (b, h, T, ·)
    stacked["mask"] = head_records[0]["mask"]
    return stacked


def trace(module: nn.Module, x: torch.Tensor, *, training: bool = False, seed: int | None = None) -> Trace:
    """Run ``module`` on ``x`` and keep every intermediate.

    ``training=True`` turns dropout on (the module's own mode is left alone).
    ``seed`` makes the dropout draws repeatable: ``seed=123`` draws what
    ``torch.manual_seed(123)`` followed by the module's forward would, from a
    private generator. With ``seed=None`` the global generator is used.

    Shapes: x (T, d_in) or (b, T, d_in); see ``Trace`` for the fields.
    """
    if not isinstance(module, TRACEABLE):
        names = ", ".join(cls.__name__ for cls in TRACEABLE)
        raise ValueError(f"trace() works for {names}; got {type(module).__name__}.")
    if not isinstance(x, torch.Tensor) or x.dim() not in (2, 3):
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"trace() needs inputs of shape (num_tokens, d_in) or (b, num_tokens, d_in), got {shape}.")
    inputs = x.unsqueeze(0) if x.dim() == 2 else x  # (b, T, d_in)
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    record: dict = {}
    with torch.no_grad():
        output = module.forward_steps(inputs, training=training, generator=generator, record=record)
    if isinstance(module, MultiHeadAttentionWrapper):
        record = _stack_heads(record["heads"])
        record["context"] = output
    elif not isinstance(module, MultiHeadAttention):
        record = _stack_heads([record])
        record["context"] = output
    return Trace(module=type(module).__name__, inputs=inputs, output=output, **record)


def build(cls: type[nn.Module], seed: int, *args, **kwargs) -> nn.Module:
    """``torch.manual_seed(seed)`` then ``cls(*args, **kwargs)``, as the book does, in eval mode.

    The global generator is used, so the numbers match the book; a lock and
    ``fork_rng`` keep concurrent callers from disturbing each other or anyone
    else's random state.
    """
    with _GLOBAL_RNG, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return cls(*args, **kwargs).eval()
