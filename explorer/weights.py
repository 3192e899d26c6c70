"""The Weights setting: the chapter's random weights, or one layer of a trained model.

Chapter 3 builds every module from ``torch.manual_seed``, so its weights are
random and its heads look alike. With *trained* weights each chapter page shows
one layer of the small GPT trained on "The Verdict" (``attention.gpt``): its real
``W_query``/``W_key``/``W_value``, on the input the model really feeds that layer
(the embeddings, every block below, then the block's LayerNorm). With *gpt2* it
shows a layer of the GPT-2 checkpoint the server's operator named in
``ATTENTION_GPT2_CHECKPOINT`` (``attention.gpt2``).

The pages keep calling the chapter's classes. This module hands them:

* ``effective``: the settings with the model's sizes (d_in = width,
  d_out = head_dim, num_heads, context_length), which the sidebar cannot change;
* ``prepared``: the sentence's tokens and the layer's input, in place of seeded vectors;
* ``module``: ``SelfAttention_v1``/``v2`` and ``CausalAttention`` holding one head's
  slice of the layer's projections, the wrapper holding every head, or a copy of the
  layer's own ``MultiHeadAttention`` (``head_module`` and ``wrapper_of_layer`` do the slicing);
* ``summaries``: a few numbers per head that say what each head looks at.

Models are shared by every session and never changed: modules are copies.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

import attention
from attention.constants import NO_CHECKPOINT, VERDICT_CONFIG, checkpoint_named
from attention.tokens import BPE_NAME

from .lazy import torch
from .results import Prepared
from .settings import BOOK, Settings

RANDOM, TRAINED, GPT2 = "random", "trained", "gpt2"
CHOICES = (RANDOM, TRAINED, GPT2)
NAMES = {
    RANDOM: "Random (the chapter's)",
    TRAINED: "Trained (small GPT on The Verdict)",
    GPT2: "GPT-2 (the server's checkpoint)",
}
MODEL_ENTRIES = 4  # modules built from a layer: a few per session's view, small (64 × 64 for the shipped model)


def gpt2_checkpoint() -> attention.GPT2Checkpoint:
    """The server's GPT-2, or why there is none (loaded once per file, never raises; no torch without one)."""
    if not checkpoint_named(os.environ):
        return NO_CHECKPOINT
    return attention.gpt2.gpt2_from_environment()


def model(kind: str) -> attention.GPTModel | None:
    """The model behind ``kind``: None for random weights, or for GPT-2 when no checkpoint loaded."""
    if kind == TRAINED:
        return attention.gpt.load_trained_gpt()
    if kind == GPT2:
        return gpt2_checkpoint().model
    return None


def version(kind: str) -> int:
    """Which loaded model ``kind`` is, for cache keys: a replaced GPT-2 file is a new model (0 for random weights)."""
    found = model(kind)
    return 0 if found is None else id(found)


def fit(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with its weights available and its layer and head inside the model, explaining each change.

    ``layer`` counts from 1, as a reader counts a model's layers; ``head`` from 0, as the
    Multi-head attention page labels heads.
    """
    notices = []
    found = model(settings.weights)
    if found is None and settings.weights != RANDOM:
        notices.append(f"{gpt2_checkpoint().message} Showing the chapter's random weights.")
        settings = replace(settings, weights=RANDOM)
    if found is None:  # random weights: keep layer and head where the sidebar's controls can show them
        cfg = VERDICT_CONFIG
        head = min(max(settings.head, 0), cfg.n_heads - 1)
        return replace(settings, layer=min(max(settings.layer, 1), cfg.n_layers), head=head), notices
    cfg = found.cfg
    layer = min(max(settings.layer, 1), cfg.n_layers)
    if layer != settings.layer:
        notices.append(f"This model has layers 1–{cfg.n_layers}; showing layer {layer}.")
    head = min(max(settings.head, 0), cfg.n_heads - 1)
    if head != settings.head:
        notices.append(f"Each layer has heads 0–{cfg.n_heads - 1}; showing head {head}.")
    return replace(settings, layer=layer, head=head), notices


def effective(settings: Settings) -> Settings:
    """The settings the pages compute with: with a model's weights, its sizes replace the sidebar's."""
    settings = fit(settings)[0]
    found = model(settings.weights)
    if found is None:
        return settings
    cfg = found.cfg
    return replace(
        settings,
        d_in=cfg.emb_dim,
        d_out=cfg.emb_dim // cfg.n_heads,  # one head's slice: head_dim
        num_heads=cfg.n_heads,
        context_length=cfg.context_length,
    )


def describe(settings: Settings) -> str:
    """One sentence naming the model, layer and head on screen (empty for random weights)."""
    found = model(settings.weights)
    if found is None:
        return ""
    cfg = found.cfg
    name = "the small GPT trained on The Verdict" if settings.weights == TRAINED else "GPT-2"
    return (
        f"Trained weights: layer {settings.layer} of {cfg.n_layers} of {name} ({cfg.n_heads} heads, width "
        f"{cfg.emb_dim}, head_dim {cfg.emb_dim // cfg.n_heads}), on the input the model feeds that layer; "
        f"single-head modules hold the layer's head {settings.head}."
    )


def caption(settings: Settings) -> None:
    """``describe`` as a caption under the page's title, when a model's weights are on."""
    text = describe(settings)
    if text:
        st.caption(":material/model_training: " + text)


def outside_model(settings: Settings) -> Settings:
    """Settings for a page the model's weights do not reach (Why attention's RNN encoder–decoder): the sidebar's
    own, with random weights; with a model's weights on, a caption says why they are not used here."""
    if settings.weights == RANDOM:
        return settings
    st.caption(
        ":material/model_training: The Weights setting picks the GPT's weights, and they do not reach this page: its "
        "RNN encoder–decoder has its own, seeded, and in the two Trained steps trained to reverse sentences."
    )
    return replace(settings, weights=RANDOM)


@st.cache_data(max_entries=MODEL_ENTRIES * 8, show_spinner=False)
def layer_prepared(kind: str, layer: int, source: str, text: str, loaded: int = 0) -> Prepared:
    """The sentence's GPT-2 tokens and what the model feeds layer ``layer`` (from 1) for them.

    ``loaded`` is the model's ``version``, so that a cached result never outlives its model.
    The book's preset becomes the book's sentence, tokenized: a trained model reads token ids, not
    the book's hand-made 3-d vectors. Text longer than the model's context is cut to it.
    Shapes: ``inputs`` (num_tokens, emb_dim).
    """
    found = model(kind)
    sentence = attention.BOOK_SENTENCE if source == BOOK else text
    if not sentence.strip():
        raise ValueError("Type a sentence in the sidebar to see its tokens and attention.")
    tokenized = attention.tokenize(sentence, encoding=attention.load_bpe())
    if tokenized.tokenizer != BPE_NAME:
        raise ValueError("The trained model reads GPT-2 token ids, and GPT-2's tokenizer did not load.")
    ids, pieces = tokenized.ids, tokenized.pieces
    context_length = found.cfg.context_length
    truncated_from = len(ids) if len(ids) > context_length else None
    ids, pieces = ids[:context_length], pieces[:context_length]
    view = attention.gpt.layer_input(found, ids, layer - 1)
    return Prepared(
        pieces=tuple(pieces),
        ids=tuple(ids),
        inputs=view.inputs[0].numpy().copy(),  # (num_tokens, emb_dim)
        tokenizer=tokenized.tokenizer,
        truncated_from=truncated_from,
    )


def prepared(settings: Settings) -> Prepared:
    settings = fit(settings)[0]
    return layer_prepared(settings.weights, settings.layer, settings.source, settings.text, version(settings.weights))


def layer_inputs(settings: Settings, ids) -> torch.Tensor:
    """What the model feeds the settings' layer for token ids ``ids``. Shapes: → (num_tokens, emb_dim)."""
    settings = fit(settings)[0]
    return attention.gpt.layer_input(model(settings.weights), ids, settings.layer - 1).inputs[
        0
    ]  # (num_tokens, emb_dim)


def head_module(mha: attention.MultiHeadAttention, head: int, name: str, dropout: float = 0.0) -> torch.nn.Module:
    """``SelfAttention_v1``, ``SelfAttention_v2`` or ``CausalAttention`` holding head ``head`` of ``mha``.

    ``MultiHeadAttention`` projects to d_out and views the result as num_heads heads of
    head_dim, so head i's ``W_query`` is rows i·head_dim to (i+1)·head_dim − 1 of the fused
    one (and likewise for keys, values and biases). ``SelfAttention_v1`` has no bias, so it can
    hold a head only of a model without one.
    """
    if not 0 <= head < mha.num_heads:
        raise ValueError(f"head must be 0 to {mha.num_heads - 1}, got {head}.")
    has_bias = mha.W_query.bias is not None
    if name == "SelfAttention_v1":
        if has_bias:
            raise ValueError(
                "This model's W_query, W_key and W_value have a bias, and SelfAttention_v1 has none, so it cannot "
                "hold them; SelfAttention_v2 (qkv_bias=True) can."
            )
        single = attention.build(attention.SelfAttention_v1, 0, mha.d_in, mha.head_dim)
        attention.load_v2_weights_into_v1(single, head_module(mha, head, "SelfAttention_v2"))
        return single
    if name == "SelfAttention_v2":
        single = attention.build(attention.SelfAttention_v2, 0, mha.d_in, mha.head_dim, qkv_bias=has_bias)
    elif name == "CausalAttention":
        context_length = mha.mask.shape[0]
        single = attention.build(
            attention.CausalAttention, 0, mha.d_in, mha.head_dim, context_length, dropout, qkv_bias=has_bias
        )
    else:
        raise ValueError(f"{name} is not a single-head module.")
    rows = slice(head * mha.head_dim, (head + 1) * mha.head_dim)
    with torch.no_grad():
        for projection in ("W_query", "W_key", "W_value"):
            getattr(single, projection).weight.copy_(getattr(mha, projection).weight[rows])  # (head_dim, d_in)
            if has_bias:
                getattr(single, projection).bias.copy_(getattr(mha, projection).bias[rows])  # (head_dim,)
    return single


def wrapper_of_layer(mha: attention.MultiHeadAttention, dropout: float = 0.0) -> attention.MultiHeadAttentionWrapper:
    """``MultiHeadAttentionWrapper`` whose head i is ``head_module(mha, i, "CausalAttention")``.

    Its output is ``mha``'s heads side by side, before ``out_proj``.
    """
    has_bias = mha.W_query.bias is not None
    args = (mha.d_in, mha.head_dim, mha.mask.shape[0], dropout, mha.num_heads)
    wrapper = attention.build(attention.MultiHeadAttentionWrapper, 0, *args, qkv_bias=has_bias)
    with torch.no_grad():
        for index, head in enumerate(wrapper.heads):
            head.load_state_dict(head_module(mha, index, "CausalAttention", dropout).state_dict())
    return wrapper


def layer_copy(mha: attention.MultiHeadAttention, dropout: float = 0.0) -> attention.MultiHeadAttention:
    """A copy of the layer's ``MultiHeadAttention`` with dropout ``dropout`` (the model itself stays untouched)."""
    has_bias = mha.W_query.bias is not None
    args = (mha.d_in, mha.d_out, mha.mask.shape[0], dropout)
    copy = attention.build(attention.MultiHeadAttention, 0, *args, num_heads=mha.num_heads, qkv_bias=has_bias)
    copy.load_state_dict(mha.state_dict())
    return copy.eval()


@st.cache_resource(max_entries=MODEL_ENTRIES, show_spinner=False)
def _module(name: str, kind: str, layer: int, head: int, dropout: float, loaded: int) -> torch.nn.Module:
    mha = model(kind).trf_blocks[layer - 1].att
    if name == "MultiHeadAttention":
        return layer_copy(mha, dropout)
    if name == "MultiHeadAttentionWrapper":
        return wrapper_of_layer(mha, dropout)
    return head_module(mha, head, name, dropout)


def module(name: str, settings: Settings) -> torch.nn.Module:
    """The chapter's class ``name`` with the settings' layer (and head) of their model. Shared: read-only."""
    settings = fit(settings)[0]
    loaded = version(settings.weights)
    return _module(name, settings.weights, settings.layer, settings.head, settings.dropout, loaded)


@dataclass(frozen=True)
class HeadSummaries:
    """Per head (h,): the share of each row's weight on the previous token and on the first token, the mean
    row entropy in nats and as a share of ``uniform_entropy`` (spreading evenly), and the mean distance back."""

    previous_token: np.ndarray
    first_token: np.ndarray
    entropy: np.ndarray
    entropy_share: np.ndarray
    mean_distance: np.ndarray
    uniform_entropy: float


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


def input_text(settings: Settings) -> str:
    """What the Tokens page says about the input matrix, with a model's weights (empty for random ones)."""
    found = model(settings.weights)
    if found is None:
        return ""
    below = "nothing else: this is the first layer" if settings.layer == 1 else f"the {settings.layer - 1} blocks below"
    return (
        f"With trained weights the input is **what the model feeds layer {settings.layer}**: each token id's row "
        f"of the model's learned token embedding plus its position's embedding ({found.cfg.emb_dim} numbers each), "
        f"then {below}, then the block's LayerNorm (`norm1`). A token that occurs twice gets two different rows: "
        "its position and the tokens before it have changed it."
    )


def origin(settings: Settings) -> str:
    """Where the Q, K, V page's matrices come from, with a model's weights (empty for random ones)."""
    if model(settings.weights) is None:
        return ""
    first = settings.head * settings.d_out
    return (
        f"here head {settings.head}'s slice of layer {settings.layer}'s `W_query`, `W_key` and `W_value`: rows "
        f"{first}–{first + settings.d_out - 1} of each `nn.Linear`, transposed, as `SelfAttention_v1` stores them. "
        "Training set these numbers."
    )


SINK_NOTE = (
    "Why the first token: softmax must hand out a whole 1.0 of weight in every row, and the first token is the "
    "one key every query can see. A head with nothing useful to find for a query parks its weight there (an "
    "*attention sink*); that costs little when the first token's value vector is small."
)


def show_summaries(settings: Settings) -> None:
    """The Multi-head page's last step with a model's weights: what each head of the layer looks at."""
    import pandas as pd  # here, not at the top: the first page after a cold start needs no table (issue 15)

    from . import ui
    from .figures.heads import head_summary_bars

    found = summaries(settings)
    if found is None:
        st.info("With one token there is no previous token to look at; type a longer sentence.")
        return
    st.markdown(
        f"Layer {settings.layer}'s heads on this sentence, each row's weights averaged over queries 1 to T − 1 "
        "(query 0 sees only itself): how much goes to **the token just before**, how much to **the first token**, "
        "and how spread out a row is (its entropy as a share of spreading evenly: 1 is uniform, 0 is one token)."
    )
    shares = {
        "on the previous token": found.previous_token,
        "on the first token": found.first_token,
        "entropy ÷ uniform": found.entropy_share,
    }
    ui.draw(head_summary_bars, "head-summaries", shares, title=f"What each head of layer {settings.layer} looks at")
    columns = {
        "previous token": found.previous_token,
        "first token": found.first_token,
        "entropy (nats)": found.entropy,
        "entropy ÷ uniform": found.entropy_share,
        "mean distance back": found.mean_distance,
    }
    rows = {"head": [f"head {k}" for k in range(len(found.previous_token))]}
    rows.update({name: [f"{v:.2f}" for v in values] for name, values in columns.items()})
    ui.table(pd.DataFrame(rows), hide_index=True)
    uniform = f"Spreading evenly over the tokens a query sees would give {found.uniform_entropy:.3f} nats."
    st.caption(f"{uniform} {SINK_NOTE}")
