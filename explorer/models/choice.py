"""The Weights setting: the chapter's random weights, or one layer of a trained model.

Chapter 3 builds every module from ``torch.manual_seed``, so its weights are
random and its heads look alike. With *trained* weights each chapter page shows
one layer of the small GPT trained on "The Verdict" (``attention.after_chapter.training``): its real
``W_query``/``W_key``/``W_value``, on the input the model really feeds that layer
(the embeddings, every block below, then the block's LayerNorm). With *gpt2* it
shows a layer of the GPT-2 checkpoint the server's operator named in
``ATTENTION_GPT2_CHECKPOINT`` (``attention.after_chapter.gpt2``).

``model`` is where the choice is dispatched on: it returns the model behind the Weights setting, or None
for the chapter's random weights. ``fit`` and ``effective`` fit the settings to that model; ``describe``,
``input_text`` and ``origin`` say in words what the pages compute from it. Models are shared by every
session and never changed."""

from __future__ import annotations

import os
from dataclasses import replace

import attention
from attention.constants import NO_CHECKPOINT, VERDICT_CONFIG, checkpoint_named
from explorer.page_text.glossary import term
from explorer.settings import GPT2, RANDOM, TRAINED, Settings

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
    return attention.gpt2_from_environment()


def model(kind: str) -> attention.GPTModel | None:
    """The model behind ``kind``: None for random weights, or for GPT-2 when no checkpoint loaded."""
    if kind == TRAINED:
        return attention.load_trained_gpt()
    if kind == GPT2:
        return gpt2_checkpoint().model
    return None


def version(kind: str) -> int:
    """Which loaded model ``kind`` is, for cache keys: a replaced GPT-2 file is a new model (0 for random weights)."""
    found = model(kind)
    return 0 if found is None else id(found)


def fit(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with its weights available and its layer and head inside the model, explaining each change.

    ``layer`` counts from 1, as a reader counts a model's layers; ``head`` is an index from 0 (the sidebar
    and the pages' words count heads from 1).
    """
    notices = []
    found = model(settings.weights)
    if found is None and settings.weights != RANDOM:
        notices.append(f"{gpt2_checkpoint().message} Showing the chapter's random weight matrices.")
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
        notices.append(f"Each layer has heads 1–{cfg.n_heads}; showing head {head + 1}.")
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
        f"Trained weight matrices: layer {settings.layer} of {cfg.n_layers} of {name} ({cfg.n_heads} heads, "
        f"d_in = {cfg.emb_dim}, head_dim = {cfg.emb_dim // cfg.n_heads}), on the input the model feeds that "
        f"layer. Single-head modules hold head {settings.head + 1} of the layer."
    )


def input_text(settings: Settings) -> str:
    """What the Tokens page says about the input matrix, with a model's weights (empty for random ones)."""
    found = model(settings.weights)
    if found is None:
        return ""
    if settings.layer == 1:
        below, repeated = "", "only its position has changed it (LayerNorm works on each token alone)."
    else:
        blocks = "the block below" if settings.layer == 2 else f"the {settings.layer - 1} blocks below"
        below, repeated = f", then {blocks}", "its position and the tokens before it have changed it."
    return (
        f"With trained weight matrices the input is **what the model feeds layer {settings.layer}**. That is "
        "each token id's row of the model's learned token embedding plus its position's embedding "
        f"({found.cfg.emb_dim} numbers each){below}, then the block's {term('layernorm')} (`norm1`). A "
        "token that occurs twice gets two different rows: " + repeated
    )


def origin(settings: Settings) -> str:
    """Where the Q, K, V page's matrices come from, with a model's weights (empty for random ones)."""
    if model(settings.weights) is None:
        return ""
    first = settings.head * settings.d_out
    return (
        f"here head {settings.head + 1}'s slice of layer {settings.layer}'s `W_query`, `W_key` and `W_value`. "
        f"That is rows [{first}:{first + settings.d_out}] of each `nn.Linear` (Python indexes), transposed, as "
        "`SelfAttention_v1` stores them. Training set these numbers."
    )


def head_name(settings: Settings) -> str:
    """Which trained head a single-head page holds ("head 2 of layer 3 of GPT-2"); empty for random weights."""
    if model(settings.weights) is None:
        return ""
    which = "the small GPT trained on The Verdict" if settings.weights == TRAINED else "GPT-2"
    return f"head {settings.head + 1} of layer {settings.layer} of {which}"
