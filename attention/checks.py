"""Input checks and limits for every stage, in one place.

The chapter's classes trust their inputs; a learner typing into a notebook
should not have to decode a broadcasting error from deep inside a matrix
product. Every public entry point calls one of these checks first and raises a
``ValueError`` that says what to change. The limits keep one call from
exhausting a shared server.
"""

from __future__ import annotations

import torch

MAX_SIZE = 4096  # the largest d_in, d_out or other size a module accepts
MAX_CONTEXT_LENGTH = 4096
MAX_HEADS = 64


def check_size(name: str, value: int, upper: int = MAX_SIZE) -> None:
    """Raise a ``ValueError`` unless ``value`` is a whole number in [1, upper]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if not 1 <= value <= upper:
        raise ValueError(f"{name} must be between 1 and {upper}, got {value}.")


def check_dropout(dropout: float) -> None:
    """Raise a ``ValueError`` unless ``dropout`` is a probability in [0, 1)."""
    if isinstance(dropout, bool) or not isinstance(dropout, int | float):
        raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}.")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be at least 0 and below 1 (it is a probability), got {dropout}.")


def check_sizes(d_in: int, d_out: int, *, context_length: int | None = None, dropout: float | None = None) -> None:
    """The constructor checks the chapter's classes share."""
    check_size("d_in", d_in)
    check_size("d_out", d_out)
    if context_length is not None:
        check_size("context_length", context_length, upper=MAX_CONTEXT_LENGTH)
    if dropout is not None:
        check_dropout(dropout)


def check_heads(d_out: int, num_heads: int) -> None:
    """``num_heads`` must be in range and, for the efficient class, divide ``d_out``."""
    check_size("num_heads", num_heads, upper=MAX_HEADS)
    if d_out % num_heads != 0:
        raise ValueError(
            f"d_out must be divisible by num_heads, so that each head gets d_out // num_heads "
            f"dimensions; d_out={d_out} and num_heads={num_heads} do not divide."
        )


def check_num_tokens(num_tokens: int, context_length: int) -> None:
    """Raise a ``ValueError`` if a sequence is longer than the mask was built for."""
    if num_tokens > context_length:
        raise ValueError(
            f"The input has {num_tokens} tokens but context_length is {context_length}: "
            "the causal mask only covers context_length tokens. Use a shorter text or a larger context_length."
        )


def check_batch(x: torch.Tensor, d_in: int, *, batched: bool, context_length: int | None = None) -> None:
    """Check the embedding matrix a module receives, with a message a learner understands.

    ``batched=False`` is the book's ``SelfAttention_v1``/``v2``, which take one
    sentence, (num_tokens, d_in). ``batched=True`` is every class from
    ``CausalAttention`` on, which take (b, num_tokens, d_in) and at most
    ``context_length`` tokens.
    """
    expected = "(b, num_tokens, d_in)" if batched else "(num_tokens, d_in)"
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"The input must be a torch tensor of shape {expected}.")
    if x.dim() != (3 if batched else 2):
        if batched and x.dim() == 2:
            hint = " Wrap a single sentence as a batch with x.unsqueeze(0)."
        elif not batched and x.dim() == 3:
            hint = " This class takes one sentence at a time, as in the book: pass x[0], or use CausalAttention."
        else:
            hint = ""
        raise ValueError(f"The input must have shape {expected}, got {tuple(x.shape)}.{hint}")
    if x.numel() == 0:
        raise ValueError(f"The input is empty (shape {tuple(x.shape)}): there must be at least one token.")
    if not x.is_floating_point():
        raise ValueError(f"The input must hold floating-point embeddings, got {x.dtype}; use x.float().")
    if x.shape[-1] != d_in:
        raise ValueError(
            f"Each token's embedding must have d_in={d_in} numbers, but the input has "
            f"{x.shape[-1]} (shape {tuple(x.shape)})."
        )
    if context_length is not None:
        check_num_tokens(x.shape[-2], context_length)
