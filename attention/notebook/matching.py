"""Which of the Break it page's mistakes a reader's tensor is: run each mistake's steps on the reader's weights.

``mistaken_stages`` is the book's forward pass for every kind of module,
with one mistake's ``Steps`` (``mistake_steps``) in place of the right ones,
on the package's copy of the reader's weights, and keeps every stage laid out
as ``reading`` lays them out. One head (``CausalAttention``, each head of the
wrapper) has no split and merge, so the two view/transpose mistakes do not
exist there; v1 and v2 have no mask and no dropout either, which leaves the
three softmax-line mistakes that change anything without a mask.
"""

from __future__ import annotations

import torch
from torch import nn

from ..mistake_steps import RIGHT, Steps
from ..mistakes import MISTAKES, Mistake
from .reading import MULTIHEAD, PROJECTIONS, V1, V2, WRAPPER, Sizes

_SPLIT_AND_MERGE = ("view_without_transpose", "merge_without_transpose")
_WITHOUT_MASK = ("no_scaling", "divide_by_d_k", "softmax_wrong_dim")


def applicable(sizes: Sizes) -> list[Mistake]:
    """The catalogue's mistakes that this kind of module can make."""
    if sizes.kind in (V1, V2):
        return [MISTAKES[name] for name in _WITHOUT_MASK]
    if sizes.kind == MULTIHEAD:
        return list(MISTAKES.values())
    return [mistake for name, mistake in MISTAKES.items() if name not in _SPLIT_AND_MERGE]


def mistaken_stages(
    reference: nn.Module, sizes: Sizes, x: torch.Tensor, steps: Steps = RIGHT, keep: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """The forward pass of ``reference`` with ``steps``; ``keep`` is the dropout draw (1 = kept), None in eval mode.

    Shapes: x (b, num_tokens, d_in); keep (b, num_heads, num_tokens, num_tokens); the stages as in ``reading``.
    """
    b, num_tokens, d_in = x.shape
    with torch.no_grad():
        if sizes.kind == MULTIHEAD:
            queries, keys, values = (steps.split(reference, getattr(reference, n)(x)) for n in PROJECTIONS)
        else:
            heads = list(reference.heads) if sizes.kind == WRAPPER else [reference]
            queries, keys, values = (_per_head(heads, name, x, sizes.kind == V1) for name in PROJECTIONS)
        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
        if sizes.context_length is None:
            mask_bool = torch.zeros(num_tokens, num_tokens, dtype=torch.bool)  # v1 and v2 hide nothing
        else:
            mask_bool = steps.mask(sizes.context_length).bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)
        attn_weights = steps.weigh(attn_scores, mask_bool.to(x.device), keys)  # (b, num_heads, num_tokens, num_tokens)
        dropped_weights = attn_weights if keep is None else steps.drop(attn_weights, keep, sizes.dropout)
        if sizes.kind == MULTIHEAD:
            context = steps.merge(reference, dropped_weights, values)  # (b, num_tokens, d_out)
            output = reference.out_proj(context)  # (b, num_tokens, d_out)
        else:
            context = output = (dropped_weights @ values).transpose(1, 2).reshape(b, num_tokens, -1)  # (b, T, h * d)
    stages = {
        "queries": queries, "keys": keys, "values": values, "attn_weights": attn_weights,
        "dropped_weights": dropped_weights, "context": context, "output": output,
    }  # fmt: skip
    return {name: tensor.to("cpu", torch.float64) for name, tensor in stages.items()}


def _per_head(heads: list[nn.Module], name: str, x: torch.Tensor, matrices: bool) -> torch.Tensor:
    """Each head's projection of x, (b, num_heads, num_tokens, d_out): ``x @ W`` for v1, ``W(x)`` otherwise."""
    return torch.stack([x @ getattr(head, name) if matrices else getattr(head, name)(x) for head in heads], dim=1)


def mask_mistakes(mask: torch.Tensor, sizes: Sizes) -> list[Mistake]:
    """The mask mistakes whose buffer is ``mask`` (num_heads, context_length, context_length) in every head."""
    return [
        mistake
        for mistake in applicable(sizes)
        if mistake.steps.mask is not RIGHT.mask
        and torch.equal(mask, mistake.steps.mask(sizes.context_length).bool().expand_as(mask))
    ]
