"""Stage 6: dropout on the attention weights (book section 3.5.2).

Why: dropout zeroes randomly chosen values while training, so the model
cannot rely on a few of them; this reduces overfitting. The book applies it
to the attention weights, after the softmax and before they multiply the
values. Chapter 4's GPT uses a lower rate, 0.1; here 0.5 makes the effect
easy to see.

What is new: while training, each attention weight is dropped (set to zero)
with probability ``p``, and the survivors are multiplied by 1/(1-p) so that
each weight keeps its average over many draws. A row then no longer sums to
1, but its average over many draws does. In eval mode nothing is dropped.

The draws here are the book's: ``apply_dropout(w, 0.5, seed=123)`` is
``torch.manual_seed(123)`` then ``torch.nn.Dropout(0.5)(w)``, run under
``seeding.seeded`` so that concurrent users of a server never disturb each
other's draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .checks import check_dropout, check_size
from .seeding import seeded

MAX_DROPOUT_SAMPLES = 2000


def dropout_keep_mask(shape: tuple[int, ...], p: float, seed: int | None = None) -> torch.Tensor:
    """The survivors of one dropout draw: True = kept, False = dropped.

    ``seed`` as in ``torch.manual_seed(seed)`` before the draw; None draws from the global generator.

    Shapes: returns ``shape``, bool.
    """
    check_dropout(p)
    with seeded(seed):
        return nn.Dropout(p)(torch.ones(shape)) != 0  # (*shape)


def drop_with_mask(dropout: nn.Dropout, attn_weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``dropout(attn_weights)``, and which weights it kept: True = kept; None when nothing is dropped.

    The modules call this where the book writes ``self.dropout(attn_weights)``, so that a trace can show
    the draw without drawing it again. ``dropout`` applied to ones gives 1/(1-p) where a weight survives
    and 0 where it is dropped; multiplying by that is what ``nn.Dropout`` does to the weights, so the
    result is ``dropout(attn_weights)`` bit for bit, from the same draws of the random generator. In eval
    mode, or with p = 0, ``attn_weights`` itself comes back.

    Shapes: attn_weights (..., num_tokens, num_tokens) → the same, and the mask (bool) the same.
    """
    if not dropout.training or dropout.p == 0:
        return attn_weights, None
    scale = dropout(torch.ones_like(attn_weights))  # (..., num_tokens, num_tokens): 0 or 1/(1-p)
    return attn_weights * scale, scale != 0  # (..., num_tokens, num_tokens), twice


@dataclass(frozen=True)
class DropoutDraw:
    """One dropout draw on a weight matrix.

    Shapes: ``attn_weights``, ``keep`` and ``dropped_weights`` (..., num_tokens,
    num_tokens); ``row_sums`` (..., num_tokens).
    """

    attn_weights: torch.Tensor
    keep: torch.Tensor
    dropped_weights: torch.Tensor
    row_sums: torch.Tensor
    p: float
    training: bool


def apply_dropout(attn_weights: torch.Tensor, p: float, *, seed: int = 123, training: bool = True) -> DropoutDraw:
    """Drop weights with probability ``p`` and scale the survivors by 1/(1-p).

    In eval mode (``training=False``) the weights come back unchanged.
    """
    check_dropout(p)
    with seeded(seed):
        dropped, keep = drop_with_mask(nn.Dropout(p).train(training), attn_weights)  # (..., num_tokens, num_tokens)
    if keep is None:
        keep = torch.ones_like(dropped, dtype=torch.bool)  # (..., num_tokens, num_tokens)
    return DropoutDraw(
        attn_weights=attn_weights,
        keep=keep,
        dropped_weights=dropped,
        row_sums=dropped.sum(dim=-1),
        p=p,
        training=training,
    )


@dataclass(frozen=True)
class DropoutAverage:
    """The mean of many dropout draws converging back to the undropped weights.

    Shapes: ``mean_weights`` (num_tokens, num_tokens) after all samples;
    ``num_samples`` and ``max_abs_error`` (len(checkpoints),): the largest
    |mean - attn_weights| after that many draws.
    """

    mean_weights: torch.Tensor
    num_samples: torch.Tensor
    max_abs_error: torch.Tensor


def dropout_average(attn_weights: torch.Tensor, p: float, num_samples: int = 1000, seed: int = 123) -> DropoutAverage:
    """Average ``num_samples`` dropout draws (seeds ``seed``, ``seed+1``, ...).

    Draw k is ``apply_dropout(attn_weights, p, seed=seed + k - 1)``'s, made the way ``nn.Dropout`` makes
    it (keep each weight with probability 1 - p, divide the kept ones by 1 - p) from a generator of
    its own seeded the same: no turn on the global generator a thousand times over, while other
    users wait for it.
    """
    check_dropout(p)
    check_size("num_samples", num_samples, upper=MAX_DROPOUT_SAMPLES)
    total = torch.zeros_like(attn_weights, dtype=torch.float64)  # (..., num_tokens, num_tokens), summed in float64
    generator = torch.Generator()
    checkpoints, errors = [], []
    for sample in range(1, num_samples + 1):
        if p == 0:
            dropped = attn_weights  # nn.Dropout(0) draws nothing
        else:
            generator.manual_seed(seed + sample - 1)
            keep = torch.empty_like(attn_weights)  # (..., num_tokens, num_tokens)
            keep.bernoulli_(1 - p, generator=generator)  # 1 = kept, with probability 1 - p
            dropped = attn_weights * keep.div_(1 - p)  # (..., num_tokens, num_tokens)
        total += dropped
        if sample in (1, num_samples) or (sample & (sample - 1)) == 0 or sample % 50 == 0:
            checkpoints.append(sample)
            errors.append((total / sample - attn_weights).abs().max().item())
    return DropoutAverage(
        mean_weights=(total / num_samples).to(attn_weights.dtype),
        num_samples=torch.tensor(checkpoints),
        max_abs_error=torch.tensor(errors),
    )
