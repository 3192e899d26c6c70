"""What each head of a trained layer looks at on the sentence: its share of weight on the previous and the
first token, how spread out its rows are, and how far back it looks
(``attention.after_chapter.inspecting.head_summaries``); and every layer's heads at once, for the grid of all
layers × heads (``widgets.models.show_every_head``)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

import attention
from explorer.models.choice import MODEL_ENTRIES, fit, model, version
from explorer.models.inputs import layer_prepared
from explorer.runtime import torch
from explorer.runtime.caching import shared_view
from explorer.settings import RANDOM, Settings


@dataclass(frozen=True)
class HeadSummaries:
    """Per head (h,): the share of each row's weight on the previous token and on the first token, the mean
    row entropy in nats and as a share of ``uniform_entropy`` (spreading evenly), the mean distance back,
    and, for one layer, the first token's value-vector length ÷ the others'
    (``attention.after_chapter.inspecting.first_value_ratio``; None for the grid of every layer, which keeps no
    values)."""

    previous_token: np.ndarray
    first_token: np.ndarray
    entropy: np.ndarray
    entropy_share: np.ndarray
    mean_distance: np.ndarray
    uniform_entropy: float
    first_value_ratio: np.ndarray | None = None


@dataclass(frozen=True)
class EveryHead:
    """Every layer's and head's attention weights on the first ``shown`` of the sentence's ``num_tokens`` tokens
    (causal: later tokens do not change them), with each head's ``summaries`` (arrays (L, h)) over those.

    Shapes: ``weights`` (L, h, shown, shown); ``pieces`` the shown tokens."""

    weights: np.ndarray
    pieces: tuple[str, ...]
    summaries: HeadSummaries
    num_tokens: int

    @property
    def shown(self) -> int:
        return len(self.pieces)


GRID_CELLS = 12 * 12 * 48 * 48  # weights the grid draws at most: GPT-2 small's 12 × 12 heads at 48 tokens


def _head_summaries(weights) -> HeadSummaries:
    """``attention.after_chapter.inspecting.head_summaries`` of weights (h, T, T) as numpy arrays, each (h,)."""
    found = attention.head_summaries(weights)
    return HeadSummaries(
        previous_token=found.previous_token.numpy(),
        first_token=found.first_token.numpy(),
        entropy=found.entropy.numpy(),
        entropy_share=(found.entropy / found.uniform_entropy).numpy(),
        mean_distance=found.mean_distance.numpy(),
        uniform_entropy=found.uniform_entropy,
    )


@shared_view(max_entries=MODEL_ENTRIES * 8)
def _summaries(kind: str, layer: int, source: str, text: str, loaded: int) -> HeadSummaries | None:
    inputs = torch.tensor(layer_prepared(kind, layer, source, text, loaded).inputs).unsqueeze(0)  # (1, T, emb_dim)
    if inputs.shape[1] < 2:
        return None
    traced = attention.trace(model(kind).trf_blocks[layer - 1].att, inputs)  # weights (1, h, T, T)
    from attention.after_chapter.inspecting import first_value_ratio

    ratio = first_value_ratio(traced.values).numpy()  # (h,), from values (1, h, T, head_dim)
    return dataclasses.replace(_head_summaries(traced.attn_weights), first_value_ratio=ratio)


def summaries(settings: Settings) -> HeadSummaries | None:
    """What each head of the settings' layer looks at on the sentence (eval mode, no dropout); None for
    random weights or a single token."""
    settings = fit(settings)[0]
    if settings.weights == RANDOM:
        return None
    return _summaries(settings.weights, settings.layer, settings.source, settings.text, version(settings.weights))


def grid_tokens(num_layers: int, num_heads: int) -> int:
    """How many tokens the grid of every layer and head shows: its ``GRID_CELLS`` weights shared out."""
    return max(2, math.isqrt(GRID_CELLS // (num_layers * num_heads)))


@shared_view(max_entries=MODEL_ENTRIES * 2)
def _every_head(kind: str, source: str, text: str, loaded: int) -> EveryHead | None:
    prepared = layer_prepared(kind, 1, source, text, loaded)  # the sentence's tokens, cut to the model's context
    found = model(kind)
    shown = min(len(prepared.ids), grid_tokens(found.cfg.n_layers, found.cfg.n_heads))
    if shown < 2:
        return None
    weights = attention.every_layer_weights(found, prepared.ids[:shown])  # (L, h, shown, shown)
    per_layer = [_head_summaries(layer) for layer in weights]
    stacked = {
        name: np.stack([getattr(one, name) for one in per_layer])  # (L, h)
        for name in ("previous_token", "first_token", "entropy", "entropy_share", "mean_distance")
    }
    return EveryHead(
        weights=weights.numpy(),
        pieces=prepared.pieces[:shown],
        summaries=HeadSummaries(**stacked, uniform_entropy=per_layer[0].uniform_entropy),
        num_tokens=len(prepared.ids),
    )


def every_head(settings: Settings) -> EveryHead | None:
    """Every layer's and head's attention weights on the sentence's first tokens, with each head's summaries;
    None for random weights or a single token. Computed in one pass through the model, once per sentence."""
    settings = fit(settings)[0]
    if settings.weights == RANDOM:
        return None
    return _every_head(settings.weights, settings.source, settings.text, version(settings.weights))
