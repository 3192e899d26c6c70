"""Stage 8: a trace, every intermediate of one forward pass, named in the book's words.

``trace(module, x)`` calls the module's own ``steps``, the code its
``forward`` runs, so a trace and ``module(x)`` cannot drift apart. It keeps
what that code made and derives the rest only when asked: the unmasked scores,
the scaled and the masked scores, each head's context vectors and which
weights dropout kept. All five modules give the same shapes: v1 and v2 appear
as one head with no mask, ``CausalAttention`` as one head, the wrapper's heads
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
import torch.nn.functional as F
from torch import nn

from .causal import CausalAttention
from .multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from .seeding import GLOBAL_RNG_LOCK, seeded
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
    dropout_draws: tuple[float, torch.Tensor, tuple[int, ...], int] | None
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

    @functools.cached_property
    def dropout_mask(self) -> torch.Tensor | None:
        """Which weights dropout kept, drawn again from the random state the forward pass started from."""
        if self.dropout_draws is None:
            return None
        p, rng_state, shape, num_draws = self.dropout_draws
        with GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
            torch.set_rng_state(rng_state)
            kept = [F.dropout(torch.ones(shape), p) != 0 for _ in range(num_draws)]  # each (b, [h,] T, T)
        return kept[0] if num_draws == 1 and len(shape) == 4 else torch.stack(kept, dim=1)  # (b, h, T, T)

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


def _one_head(steps: AttentionSteps) -> dict:
    """A single-head module's steps with a head dimension: (b, T, ·) → (b, 1, T, ·)."""
    names = ("queries", "keys", "values", "attn_scores", "attn_weights", "dropped_weights")
    return {name: getattr(steps, name).unsqueeze(1) for name in names}  # each (b, 1, T, ·)


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
    drops = training and p > 0
    # Only dropout depends on the mode; switching a shared module's mode, and drawing, happen under the lock.
    guard = seeded(seed if drops else None) if p > 0 else contextlib.nullcontext()
    with torch.no_grad(), guard, _mode(module, training) if p > 0 else contextlib.nullcontext():
        rng_state = torch.get_rng_state() if drops else None
        if isinstance(module, SelfAttention_v1 | SelfAttention_v2):  # the book's v1 and v2 take one sentence
            per_sentence = [module.steps(sentence) for sentence in inputs]
            steps = AttentionSteps(*(torch.stack(parts) for parts in zip(*map(_fields, per_sentence), strict=True)))
        else:
            steps = module.steps(inputs)
    b, T = inputs.shape[:2]
    mask = None if isinstance(module, SelfAttention_v1 | SelfAttention_v2) else torch.ones(T, T).triu(1).bool()
    if isinstance(module, MultiHeadAttentionWrapper):
        heads = [_one_head(head) for head in steps.heads]
        per_head = {name: torch.cat([head[name] for head in heads], dim=1) for name in heads[0]}  # (b, h, T, ·)
        context = output = steps.output
        draws = (p, rng_state, (b, T, T), module.num_heads) if drops else None
    elif isinstance(module, MultiHeadAttention):
        per_head = {name: getattr(steps, name) for name in _one_head(steps)}
        context, output = steps.context_vec, steps.output
        draws = (p, rng_state, tuple(steps.attn_weights.shape), 1) if drops else None
    else:
        per_head = _one_head(steps)
        context = output = steps.output
        draws = (p, rng_state, (b, T, T), 1) if drops else None
    per_head["book_scores"] = per_head.pop("attn_scores")
    return Trace(
        module=type(module).__name__,
        inputs=inputs,
        mask=mask,
        dropout_draws=draws,
        context=context,
        output=output,
        **per_head,
    )


def _fields(steps: AttentionSteps) -> tuple[torch.Tensor, ...]:
    return (
        steps.queries,
        steps.keys,
        steps.values,
        steps.attn_scores,
        steps.attn_weights,
        steps.dropped_weights,
        steps.context_vec,
        steps.output,
    )


def build(cls: type[nn.Module], seed: int, *args, **kwargs) -> nn.Module:
    """``torch.manual_seed(seed)`` then ``cls(*args, **kwargs)``, as the book does, in eval mode.

    The global generator is used, so the numbers match the book; ``seeded``
    keeps concurrent callers from disturbing each other or anyone else's
    random state.
    """
    with seeded(seed):
        return cls(*args, **kwargs).eval()
