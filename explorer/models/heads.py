"""What each head of a trained layer looks at on the sentence: its share of weight on the previous and the
first token, how spread out its rows are, and how far back it looks (``attention.gpt.head_summaries``)."""

from __future__ import annotations

import streamlit as st

import attention
from explorer.models.choice import MODEL_ENTRIES, fit, model, version
from explorer.models.inputs import layer_prepared
from explorer.results import HeadSummaries
from explorer.runtime.lazy import torch
from explorer.settings import RANDOM, Settings


@st.cache_data(max_entries=MODEL_ENTRIES * 8, show_spinner=False)
def _summaries(kind: str, layer: int, source: str, text: str, loaded: int) -> HeadSummaries | None:
    inputs = torch.from_numpy(layer_prepared(kind, layer, source, text, loaded).inputs).unsqueeze(0)  # (1, T, emb_dim)
    if inputs.shape[1] < 2:
        return None
    weights = attention.trace(model(kind).trf_blocks[layer - 1].att, inputs).attn_weights  # (1, h, T, T)
    found = attention.gpt.head_summaries(weights)
    return HeadSummaries(
        previous_token=found.previous_token.numpy(),
        first_token=found.first_token.numpy(),
        entropy=found.entropy.numpy(),
        entropy_share=(found.entropy / found.uniform_entropy).numpy(),
        mean_distance=found.mean_distance.numpy(),
        uniform_entropy=found.uniform_entropy,
    )


def summaries(settings: Settings) -> HeadSummaries | None:
    """What each head of the settings' layer looks at on the sentence (eval mode, no dropout); None for
    random weights or a single token."""
    settings = fit(settings)[0]
    if settings.weights == RANDOM:
        return None
    return _summaries(settings.weights, settings.layer, settings.source, settings.text, version(settings.weights))
