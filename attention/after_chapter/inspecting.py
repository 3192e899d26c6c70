"""After chapter 3: what a ``GPTModel``'s attention does, read layer by layer.

* ``layer_input`` gives one layer's own ``MultiHeadAttention`` and the
  input that layer really gets, for ``trace``; ``every_layer_weights``
  gives every layer's attention weights from one pass through the model.
* ``head_summaries`` turns a layer's weights into a few numbers per head, and ``first_value_ratio``
  measures the first token's value vectors beside the others'.

Shapes use b (batch), T (num_tokens), d (emb_dim), h (num_heads).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..multihead import MultiHeadAttention
from .gpt import GPTModel, check_ids


@dataclass(frozen=True)
class LayerInput:
    """One transformer block's attention, and what the model feeds it for a sentence.

    ``attention`` is the block's own ``MultiHeadAttention`` (its real
    ``W_query``/``W_key``/``W_value``), so ``trace(attention, inputs)`` shows
    the model's real attention. ``inputs`` is the embeddings after every block
    below ``layer``, then this block's ``norm1``.

    Shapes: ``inputs`` (1, T, emb_dim); ``layer`` and ``num_layers`` are ints.
    """

    attention: MultiHeadAttention
    inputs: torch.Tensor
    layer: int
    num_layers: int


def layer_input(model: GPTModel, ids, layer: int) -> LayerInput:
    """The attention module of block ``layer`` and its input for the sentence ``ids`` (eval mode, no dropout)."""
    n_layers = model.cfg.n_layers
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < n_layers:
        raise ValueError(f"layer must be a whole number from 0 to {n_layers - 1}, got {layer!r}.")
    in_idx = check_ids(ids, model.cfg)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            x = model.embed(in_idx)  # (1, T, d)
            for block in model.trf_blocks[:layer]:
                x = block(x)  # (1, T, d)
            inputs = model.trf_blocks[layer].norm1(x)  # (1, T, d)
    finally:
        model.train(was_training)
    return LayerInput(attention=model.trf_blocks[layer].att, inputs=inputs, layer=layer, num_layers=n_layers)


def every_layer_weights(model: GPTModel, ids) -> torch.Tensor:
    """Every layer's attention weights for the sentence ``ids``, from one pass through the model (eval mode).

    Each block runs as ``TransformerBlock.forward`` does, with its attention's ``steps`` in place of its
    forward, so the weights come out on the way; ``layer_input`` and ``trace`` give the same for one layer.
    Dropout does nothing in eval mode, so ``drop_shortcut`` is left out.

    Shapes: ids (T,) → (n_layers, h, T, T).
    """
    in_idx = check_ids(ids, model.cfg)  # (1, T)
    was_training = model.training
    model.eval()
    weights = []
    try:
        with torch.no_grad():
            x = model.embed(in_idx)  # (1, T, d)
            for block in model.trf_blocks:
                steps = block.att.steps(block.norm1(x))  # attn_weights (1, h, T, T), output (1, T, d)
                weights.append(steps.attn_weights[0])  # (h, T, T)
                x = x + steps.output  # (1, T, d): the shortcut around attention
                x = x + block.ff(block.norm2(x))  # (1, T, d): the shortcut around the feed-forward layer
    finally:
        model.train(was_training)
    return torch.stack(weights)  # (n_layers, h, T, T)


@dataclass(frozen=True)
class HeadSummary:
    """A few numbers per head that say what each head looks at, averaged over query rows 1..T-1.

    * ``previous_token``: weight on the token just before the query.
    * ``first_token``: weight on token 0. A common explanation: every row can
      see token 0 and the softmax must put its weight somewhere, so a head with
      nothing useful to find may park it there (an "attention sink"), which
      costs little when token 0's value vector is small (``first_value_ratio``).
    * ``entropy``: each row's entropy in nats; 0 means one token gets
      everything, ``uniform_entropy`` is what spreading evenly would give.
    * ``mean_distance``: how many tokens back the weight lies, on average
      (1.0 for a pure previous-token head).

    Row 0 is left out: it can only see itself. Shapes: each tensor (h,);
    ``uniform_entropy`` is a float.
    """

    previous_token: torch.Tensor
    first_token: torch.Tensor
    entropy: torch.Tensor
    mean_distance: torch.Tensor
    uniform_entropy: float


def head_summaries(attn_weights: torch.Tensor) -> HeadSummary:
    """Summarize causal attention weights of shape (h, T, T) or (1, h, T, T), T ≥ 2."""
    weights = attn_weights[0] if attn_weights.dim() == 4 else attn_weights  # (h, T, T)
    if weights.dim() != 3 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:
        raise ValueError(
            f"head_summaries needs weights of shape (h, T, T) with at least 2 tokens, got {tuple(attn_weights.shape)}."
        )
    num_tokens = weights.shape[-1]
    rows = weights[:, 1:]  # (h, T-1, T)
    previous = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)  # (h, T-1)
    row_entropy = -(rows * torch.log(rows.clamp_min(1e-12))).sum(dim=-1)  # (h, T-1)
    positions = torch.arange(num_tokens)  # (T,)
    distance = (positions.unsqueeze(1) - positions.unsqueeze(0)).clamp_min(0)[1:]  # (T-1, T): i - j
    uniform = torch.log(torch.arange(2, num_tokens + 1, dtype=torch.float64)).mean().item()
    return HeadSummary(
        previous_token=previous.mean(dim=-1),  # (h,)
        first_token=rows[..., 0].mean(dim=-1),  # (h,)
        entropy=row_entropy.mean(dim=-1),  # (h,)
        mean_distance=(rows * distance).sum(dim=-1).mean(dim=-1),  # (h,)
        uniform_entropy=uniform,
    )


def first_value_ratio(values: torch.Tensor) -> torch.Tensor:
    """Each head's first-token value vector, its length as a multiple of the other tokens' mean length.

    The common account of an attention sink says that weight parked on the first token costs little when its
    value vector is small: below 1 the first token passes on less than the others would, above 1 more.

    Shapes: values (h, T, head_dim) or (1, h, T, head_dim), T ≥ 2 → (h,).
    """
    per_head = values[0] if values.dim() == 4 else values  # (h, T, head_dim)
    if per_head.dim() != 3 or per_head.shape[1] < 2:
        raise ValueError(f"first_value_ratio needs values (h, T, head_dim) with T ≥ 2, got {tuple(values.shape)}.")
    lengths = per_head.norm(dim=-1)  # (h, T)
    return lengths[:, 0] / lengths[:, 1:].mean(dim=-1)  # (h,)
