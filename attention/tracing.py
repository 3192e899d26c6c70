"""Stage 8: a trace, every intermediate of one forward pass, named in the book's words.

``trace(module, x)`` calls the module's own ``steps``, the code its
``forward`` runs, so a trace and ``module(x)`` cannot drift apart; for the
wrapper, whose ``forward`` is the book's one line, it calls each head's
``steps`` in the order that line does. One exception, for speed: with
dropout off, on a CPU, ``MultiHeadAttention`` runs
``measuring.fast.multihead_steps``, which ``tests/test_tracing.py`` holds to
the same bits, with one (b, h, T, T) tensor fewer. It keeps what that code
made, including which weights dropout kept, and derives the rest only when
asked: the unmasked scores, the scaled and the masked scores and each head's
context vectors. All five modules give the same shapes: v1 and v2 appear as
one head with no mask, ``CausalAttention`` as one head, the wrapper's heads
are stacked.

It also builds modules reproducibly: ``build(cls, seed, ...)`` is
``torch.manual_seed(seed)`` then ``cls(...)``, which reproduces the book's
printed numbers, made safe for a server where many sessions build at once.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from .causal import CausalAttention
from .measuring.fast import multihead_steps
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from .seeding import seeded
from .trainable import AttentionSteps, SelfAttention_v1, SelfAttention_v2

TRACEABLE = (SelfAttention_v1, SelfAttention_v2, CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention)
TENSOR_NAMES = (
    "inputs",
    "queries",
    "keys",
    "values",
    "attn_scores",
    "scaled_scores",
    "mask",
    "masked_scores",
    "attn_weights",
    "dropout_mask",
    "dropped_weights",
    "head_context",
    "context",
    "output",
)


@dataclass(frozen=True)
class Trace:
    """Every intermediate of one forward pass.

    Shapes (b = 1 for an unbatched input, h = 1 for single-head modules):

    - ``inputs`` (b, T, d_in)
    - ``queries``, ``keys``, ``values`` (b, h, T, head_dim)
    - ``attn_scores`` (q·k, unscaled, unmasked) and ``scaled_scores`` (divided by sqrt(head_dim)) (b, h, T, T)
    - ``mask`` (T, T), True = masked; None for v1 and v2
    - ``masked_scores`` (b, h, T, T): scaled, -inf where masked
    - ``attn_weights`` (b, h, T, T): after the softmax
    - ``dropout_mask`` (b, h, T, T), True = kept; None when dropout is inactive
    - ``dropped_weights`` (b, h, T, T): the weights after dropout
    - ``head_context`` (b, h, T, head_dim): each head's context vectors
    - ``context`` (b, T, h * head_dim): the heads concatenated
    - ``output`` (b, T, d_out): after ``out_proj`` where there is one, else ``context``

    Stored: what the module's code made. ``book_scores`` is its ``attn_scores``
    tensor as the book leaves it (masked with -inf in place, unscaled). The
    other score tensors are computed on first use and then kept.
    """

    module: str
    inputs: torch.Tensor
    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    book_scores: torch.Tensor
    mask: torch.Tensor | None
    attn_weights: torch.Tensor
    dropped_weights: torch.Tensor
    dropout_mask: torch.Tensor | None
    context: torch.Tensor
    output: torch.Tensor

    @property
    def num_heads(self) -> int:
        return self.queries.shape[1]

    @property
    def head_dim(self) -> int:
        return self.queries.shape[-1]

    @functools.cached_property
    def attn_scores(self) -> torch.Tensor:
        if self.mask is None:
            return self.book_scores
        return self.queries @ self.keys.transpose(-2, -1)  # (b, h, T, T), recomputed: the code masked its own

    @functools.cached_property
    def scaled_scores(self) -> torch.Tensor:
        return self.attn_scores / self.head_dim**0.5  # (b, h, T, T)

    @functools.cached_property
    def masked_scores(self) -> torch.Tensor:
        if self.mask is None:
            return self.scaled_scores
        return self.scaled_scores.masked_fill(self.mask, -torch.inf)  # (b, h, T, T)

    @functools.cached_property
    def head_context(self) -> torch.Tensor:
        b, h, T, head_dim = self.queries.shape
        return self.context.view(b, T, h, head_dim).transpose(1, 2)  # (b, h, T, head_dim)

    def tensors(self) -> dict[str, torch.Tensor]:
        """The named tensors, skipping the ones that are None."""
        named = {name: getattr(self, name) for name in TENSOR_NAMES}
        return {name: value for name, value in named.items() if isinstance(value, torch.Tensor)}


@contextlib.contextmanager
def _mode(module: nn.Module, training: bool) -> Iterator[None]:
    """The module in ``training`` mode for the block, then its own mode back."""
    was_training = module.training
    module.train(training)
    try:
        yield
    finally:
        module.train(was_training)


def _dropout_p(module: nn.Module) -> float:
    if isinstance(module, MultiHeadAttentionWrapper):
        return module.heads[0].dropout.p
    dropout = getattr(module, "dropout", None)
    return dropout.p if dropout is not None else 0.0


PER_HEAD = ("queries", "keys", "values", "attn_scores", "attn_weights", "dropped_weights", "dropout_mask")


def _per_head(parts: list[AttentionSteps], join, head_dim: bool) -> dict[str, torch.Tensor | None]:
    """The per-head tensors of ``parts`` joined into one (b, h, T, ·) tensor each; None stays None.

    ``join`` is ``torch.stack`` over the sentences v1 and v2 read one at a time, ``torch.cat`` over
    the wrapper's heads along dim 1, or None for one part, kept as it is; ``head_dim`` adds the head
    dimension a single-head module lacks.
    """
    named = {}
    for name in PER_HEAD:
        tensors = [getattr(part, name) for part in parts]
        if tensors[0] is None:
            named[name] = None
            continue
        tensors = [tensor.unsqueeze(-3) for tensor in tensors] if head_dim else tensors  # each ([b,] 1, T, ·)
        named[name] = tensors[0] if join is None else join(tensors, dim=0 if join is torch.stack else 1)  # (b, h, T, ·)
    return named


def trace(module: nn.Module, x: torch.Tensor, *, training: bool = False, seed: int | None = None) -> Trace:
    """Run ``module`` on ``x`` and keep every intermediate.

    ``training=True`` turns dropout on for this call; the module's own mode is
    restored afterwards. ``seed`` makes the dropout draws repeatable:
    ``seed=123`` draws what ``torch.manual_seed(123)`` followed by the
    module's forward would, under ``seeding.seeded`` so that concurrent callers
    do not disturb each other. With ``seed=None`` the global generator is used.

    Shapes: x (T, d_in) or (b, T, d_in); see ``Trace`` for the fields.
    """
    if not isinstance(module, TRACEABLE):
        names = ", ".join(cls.__name__ for cls in TRACEABLE)
        raise ValueError(f"trace() works for {names}; got {type(module).__name__}.")
    if not isinstance(x, torch.Tensor) or x.dim() not in (2, 3):
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"trace() needs inputs of shape (num_tokens, d_in) or (b, num_tokens, d_in), got {shape}.")
    inputs = x.unsqueeze(0) if x.dim() == 2 else x  # (b, T, d_in)
    p = _dropout_p(module)
    # Only dropout depends on the mode; switching a shared module's mode, and drawing, happen under the lock.
    guard = seeded(seed if training else None) if p > 0 else contextlib.nullcontext()
    with torch.no_grad(), guard, _mode(module, training) if p > 0 else contextlib.nullcontext():
        if isinstance(module, SelfAttention_v1 | SelfAttention_v2):  # the book's v1 and v2 take one sentence
            parts = [module.steps(sentence) for sentence in inputs]
            per_head = _per_head(parts, torch.stack, head_dim=True)
            context = output = torch.stack([part.output for part in parts])  # (b, T, d_out)
        elif isinstance(module, MultiHeadAttentionWrapper):
            parts = [head.steps(inputs) for head in module.heads]  # one after another, as its forward runs them
            per_head = _per_head(parts, torch.cat, head_dim=True)
            context = output = torch.cat([part.output for part in parts], dim=-1)  # (b, T, h * d_out)
        else:
            # the same bits; checked on CPU only, so a GPU runs the book's lines
            quick = isinstance(module, MultiHeadAttention) and not (module.training and p > 0) and not x.is_cuda
            steps = multihead_steps(module, inputs) if quick else module.steps(inputs)
            per_head = _per_head([steps], None, head_dim=isinstance(module, CausalAttention))
            context, output = steps.context_vec, steps.output
    T = inputs.shape[1]
    causal = not isinstance(module, SelfAttention_v1 | SelfAttention_v2)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None  # (T, T), True = masked
    per_head["book_scores"] = per_head.pop("attn_scores")
    return Trace(module=type(module).__name__, inputs=inputs, mask=mask, context=context, output=output, **per_head)


def build(cls: type[nn.Module], seed: int, *args, **kwargs) -> nn.Module:
    """``torch.manual_seed(seed)`` then ``cls(*args, **kwargs)``, as the book does, in eval mode.

    The global generator is used, so the numbers match the book; ``seeded``
    keeps concurrent callers from disturbing each other or anyone else's
    random state.
    """
    with seeded(seed):
        return cls(*args, **kwargs).eval()
