"""The models layer: the Weights setting (``model``, ``fit``), the inputs (``prepared``), the modules
(``module_for``), what each head of a trained layer looks at (``summaries``, ``every_head``) and the first page's
stored numbers (``stored_why_view``). Nothing here draws. It may import ``runtime``, never ``views`` or above."""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

import attention
from attention.constants import (
    BOOK_SENTENCE,
    BOOK_TOKENS,
    BOOK_VECTORS,
    NO_CHECKPOINT,
    VERDICT_CONFIG,
    checkpoint_named,
)
from attention.prose.glossary import term
from attention.tokens import BPE_NAME
from explorer.runtime import torch
from explorer.runtime.memory import CACHE_ENTRIES, shared_view
from explorer.settings import BOOK, GPT2, RANDOM, TRAINED, Settings


def from_tensors(cls, *sources, **given):
    """A dataclass ``cls`` of the ``given`` fields, the rest read from the first source that has them, as numpy."""
    values = dict(given)
    for field in fields(cls):
        if field.name not in given:
            value = getattr(next(s for s in sources if hasattr(s, field.name)), field.name)
            values[field.name] = value.numpy() if hasattr(value, "numpy") else value
    return cls(**values)


@dataclass(frozen=True)
class Prepared:
    """The sentence as the pages see it: tokens and their embeddings ``inputs`` (num_tokens, d_in); ``truncated_from``
    is the token count before truncation to ``context_length``, or None."""

    pieces: tuple[str, ...]
    ids: tuple[int, ...]
    inputs: np.ndarray
    tokenizer: str
    truncated_from: int | None

    @classmethod
    def cut(cls, tokenized: attention.Tokenization, context_length: int, embed) -> Prepared:
        """``tokenized``'s first ``context_length`` tokens, with their input vectors ``embed(ids)`` (a tensor)."""
        ids, pieces = tokenized.ids[:context_length], tokenized.pieces[:context_length]
        truncated_from = len(tokenized.ids) if len(tokenized.ids) > context_length else None
        inputs = embed(ids).numpy().copy()  # (num_tokens, d_in): its own memory, not a view of a batch
        return cls(tuple(pieces), tuple(ids), inputs, tokenized.tokenizer, truncated_from)


@dataclass(frozen=True)
class WhyView:
    """Sections 3.1–3.2: ``encoder_states`` (T, hidden_size), ``bahdanau_weights`` (steps, T), each token's
    ``*_share`` (T,), and the (T, T) self-attention contrast."""

    encoder_states: np.ndarray
    bahdanau_weights: np.ndarray
    final_state_share: np.ndarray
    attention_context_share: np.ndarray
    dot_product_weights: np.ndarray
    additive_weights: np.ndarray
    additive_num_parameters: int


# The Weights setting: the chapter's random weights (``model`` gives None), or one layer of the small GPT trained on
# "The Verdict" or of the GPT-2 checkpoint named in ``ATTENTION_GPT2_CHECKPOINT``, on the input the model feeds that
# layer. ``fit`` and ``effective`` fit the settings to the model; ``describe`` and the like say it in words.
NAMES = {
    RANDOM: "Random (the chapter's)",
    TRAINED: "Trained (small GPT on The Verdict)",
    GPT2: "GPT-2 (the server's checkpoint)",
}
SPOKEN = {TRAINED: "the small GPT trained on The Verdict", GPT2: "GPT-2"}  # a model as a sentence names it
MODEL_ENTRIES = 4  # modules built from a layer: a few per session's view, small (64 × 64 for the shipped model)


def gpt2_checkpoint() -> attention.GPT2Checkpoint:
    """The server's GPT-2, or why there is none (loaded once per file, never raises; no torch without one)."""
    return attention.gpt2_from_environment() if checkpoint_named(os.environ) else NO_CHECKPOINT


def model(kind: str) -> attention.GPTModel | None:
    """The model behind ``kind``: None for random weights, or for GPT-2 when no checkpoint loaded."""
    if kind == TRAINED:
        return attention.load_trained_gpt()
    if kind == GPT2:
        return gpt2_checkpoint().model
    return None


def version(kind: str) -> int:
    """Which loaded model ``kind`` is, for cache keys: a replaced GPT-2 file is a new model (0 for random weights)."""
    return 0 if (found := model(kind)) is None else id(found)


def fit(settings: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with its weights available and its layer (from 1) and head (from 0) inside the model, and a
    notice for each change."""
    notices = []
    found = model(settings.weights)
    if found is None and settings.weights != RANDOM:
        notices.append(f"{gpt2_checkpoint().message} Showing the chapter's random weight matrices.")
        settings = replace(settings, weights=RANDOM)
    cfg = VERDICT_CONFIG if found is None else found.cfg  # random weights: where the sidebar's controls show them
    layer = min(max(settings.layer, 1), cfg.n_layers)
    head = min(max(settings.head, 0), cfg.n_heads - 1)
    if found is not None and layer != settings.layer:
        notices.append(f"This model has layers 1–{cfg.n_layers}; showing layer {layer}.")
    if found is not None and head != settings.head:
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
    return (
        f"Trained weight matrices: layer {settings.layer} of {cfg.n_layers} of {SPOKEN[settings.weights]} "
        f"({cfg.n_heads} heads, d_in = {cfg.emb_dim}, head_dim = {cfg.emb_dim // cfg.n_heads}), on the input the "
        f"model feeds that layer. Single-head modules hold head {settings.head + 1} of the layer."
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
    return f"head {settings.head + 1} of layer {settings.layer} of {SPOKEN[settings.weights]}"


# What every view starts from: the sentence as token ids and input vectors, shared read-only between sessions.
@shared_view(max_entries=CACHE_ENTRIES)
def tokenize_text(text: str) -> attention.Tokenization:
    return attention.tokenize(text, encoding=attention.load_bpe())  # None if unreachable: it retries later


@shared_view(max_entries=CACHE_ENTRIES)
def prepare(source: str, text: str, d_in: int, seed: int, context_length: int) -> Prepared:
    """Tokens and input embeddings for the book preset or a typed sentence; a ``ValueError`` for an empty one."""
    if source == BOOK:
        book = tokenize_text(BOOK_SENTENCE)
        kept = min(len(BOOK_TOKENS), context_length)
        return Prepared(
            pieces=BOOK_TOKENS[:kept],
            ids=book.ids[:kept],
            inputs=np.array(BOOK_VECTORS[:kept], dtype=np.float32),  # attention.BOOK_INPUTS[:kept], without torch
            tokenizer=book.tokenizer,
            truncated_from=len(BOOK_TOKENS) if kept < len(BOOK_TOKENS) else None,
        )
    if not text.strip():
        raise ValueError("Type a sentence in the sidebar to see its tokens and attention.")
    embed = functools.partial(attention.embed_tokens, d_in=d_in, seed=seed)  # (num_tokens, d_in)
    return Prepared.cut(tokenize_text(text), context_length, embed)


def prepared(settings: Settings) -> Prepared:
    if settings.weights != RANDOM:  # the model's input to the layer, not seeded vectors
        s = fit(settings)[0]
        return layer_prepared(s.weights, s.layer, s.source, s.text, version(s.weights))
    return prepare(settings.source, settings.text, settings.effective_d_in, settings.seed, settings.context_length)


@shared_view(max_entries=MODEL_ENTRIES * 8)
def layer_prepared(kind: str, layer: int, source: str, text: str, loaded: int) -> Prepared:
    """The sentence's GPT-2 tokens (the book's preset as text) and what the model feeds layer ``layer`` (from 1) for
    them, (num_tokens, emb_dim); ``loaded`` is the model's ``version``, so no result outlives its model."""
    found = model(kind)
    sentence = attention.BOOK_SENTENCE if source == BOOK else text
    if not sentence.strip():
        raise ValueError("Type a sentence in the sidebar to see its tokens and attention.")
    tokenized = attention.tokenize(sentence, encoding=attention.load_bpe())
    if tokenized.tokenizer != BPE_NAME:
        raise ValueError("The trained model reads GPT-2 token ids, and GPT-2's tokenizer did not load.")
    fed = functools.partial(attention.layer_input, found, layer=layer - 1)
    return Prepared.cut(tokenized, found.cfg.context_length, lambda ids: fed(ids).inputs[0])  # (T, emb_dim)


def layer_inputs(settings: Settings, ids) -> torch.Tensor:
    """What the model feeds the settings' layer for token ids ``ids``. Shapes: → (num_tokens, emb_dim)."""
    settings = fit(settings)[0]
    return attention.layer_input(model(settings.weights), ids, settings.layer - 1).inputs[0]  # (num_tokens, emb_dim)


# The chapter's modules for a run, shared and read-only: built like the book, or holding a trained layer.
MODULES = ("SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention")


@shared_view(max_entries=CACHE_ENTRIES)
def chapter_module(name: str, seed: int, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int):
    """A module built like the book: ``torch.manual_seed(seed)`` then the constructor. Shared, read-only."""
    if name not in MODULES:
        raise ValueError(f"no chapter-3 module named {name!r}")
    args = (d_in, d_out) if name.startswith("SelfAttention") else (d_in, d_out, context_length, dropout)
    heads = {"num_heads": num_heads} if name.startswith("MultiHead") else {}
    return attention.build(getattr(attention, name), seed, *args, **heads)


def module_for(name: str, settings: Settings, seed: int | None = None):
    """The module ``name`` for ``settings``, built after ``torch.manual_seed(seed)`` (default: the settings' seed),
    or holding their layer of a trained model."""
    if settings.weights != RANDOM:
        return layer_module(name, settings)
    s, seed = settings, settings.seed if seed is None else seed
    return chapter_module(name, seed, s.effective_d_in, s.d_out, s.context_length, s.dropout, s.num_heads)


def head_module(mha: attention.MultiHeadAttention, head: int, name: str, dropout: float = 0.0) -> torch.nn.Module:
    """``SelfAttention_v1``, ``SelfAttention_v2`` or ``CausalAttention`` holding head ``head`` of ``mha``: rows
    head·head_dim to (head+1)·head_dim − 1 of each fused projection (v1, without a bias, only for a model without)."""
    if not 0 <= head < mha.num_heads:
        raise ValueError(f"head must be 0 to {mha.num_heads - 1}, got {head}.")
    has_bias = mha.W_query.bias is not None
    if name == "SelfAttention_v1":
        if has_bias:
            raise ValueError(
                "This model's W_query, W_key and W_value have a bias, and SelfAttention_v1 has none, so it cannot "
                "hold them; SelfAttention_v2 (qkv_bias=True) can."
            )
        v1 = attention.build(attention.SelfAttention_v1, 0, mha.d_in, mha.head_dim)
        return attention.load_v2_weights_into_v1(v1, head_module(mha, head, "SelfAttention_v2"))
    if name == "SelfAttention_v2":
        single = attention.build(attention.SelfAttention_v2, 0, mha.d_in, mha.head_dim, qkv_bias=has_bias)
    elif name == "CausalAttention":
        args = (mha.d_in, mha.head_dim, mha.mask.shape[0], dropout)
        single = attention.build(attention.CausalAttention, 0, *args, qkv_bias=has_bias)
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
    """``MultiHeadAttentionWrapper`` whose head i is ``head_module(mha, i, "CausalAttention")``: its output is
    ``mha``'s heads side by side, before ``out_proj``."""
    args = (mha.d_in, mha.head_dim, mha.mask.shape[0], dropout, mha.num_heads)
    wrapper = attention.build(attention.MultiHeadAttentionWrapper, 0, *args, qkv_bias=mha.W_query.bias is not None)
    with torch.no_grad():
        for index, head in enumerate(wrapper.heads):
            head.load_state_dict(head_module(mha, index, "CausalAttention", dropout).state_dict())
    return wrapper


def layer_copy(mha: attention.MultiHeadAttention, dropout: float = 0.0) -> attention.MultiHeadAttention:
    """A copy of the layer's ``MultiHeadAttention`` with dropout ``dropout`` (the model itself stays untouched)."""
    args = (mha.d_in, mha.d_out, mha.mask.shape[0], dropout)
    heads = {"num_heads": mha.num_heads, "qkv_bias": mha.W_query.bias is not None}
    copy = attention.build(attention.MultiHeadAttention, 0, *args, **heads)
    copy.load_state_dict(mha.state_dict())
    return copy.eval()


@shared_view(max_entries=MODEL_ENTRIES)
def _layer_module(name: str, kind: str, layer: int, head: int, dropout: float, loaded: int) -> torch.nn.Module:
    mha = model(kind).trf_blocks[layer - 1].att
    if name == "MultiHeadAttention":
        return layer_copy(mha, dropout)
    if name == "MultiHeadAttentionWrapper":
        return wrapper_of_layer(mha, dropout)
    return head_module(mha, head, name, dropout)


def layer_module(name: str, settings: Settings) -> torch.nn.Module:
    """The chapter's class ``name`` with the settings' layer (and head) of their model. Shared: read-only."""
    s = fit(settings)[0]
    return _layer_module(name, s.weights, s.layer, s.head, s.dropout, version(s.weights))


# What each head of a trained layer looks at on the sentence (``attention.head_summaries``), one layer's or every one's.
@dataclass(frozen=True)
class HeadSummaries:
    """Per head (h,): ``attention.head_summaries``, the entropy as a share of ``uniform_entropy``, and, for one layer,
    the first token's value-vector length ÷ the others' (None for the grid of every layer)."""

    previous_token: np.ndarray
    first_token: np.ndarray
    entropy: np.ndarray
    entropy_share: np.ndarray
    mean_distance: np.ndarray
    uniform_entropy: float
    first_value_ratio: np.ndarray | None = None


@dataclass(frozen=True)
class EveryHead:
    """Every layer's and head's weights (L, h, shown, shown) on the sentence's first ``shown`` of ``num_tokens``
    tokens (causal: later tokens do not change them), with each head's ``summaries`` (arrays (L, h))."""

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
    share = (found.entropy / found.uniform_entropy).numpy()
    return from_tensors(HeadSummaries, found, entropy_share=share, first_value_ratio=None)


@shared_view(max_entries=MODEL_ENTRIES * 8)
def _summaries(kind: str, layer: int, source: str, text: str, loaded: int) -> HeadSummaries | None:
    inputs = torch.tensor(layer_prepared(kind, layer, source, text, loaded).inputs).unsqueeze(0)  # (1, T, emb_dim)
    if inputs.shape[1] < 2:
        return None
    traced = attention.trace(model(kind).trf_blocks[layer - 1].att, inputs)  # weights (1, h, T, T)
    from attention.after_chapter.inspecting import first_value_ratio

    ratio = first_value_ratio(traced.values).numpy()  # (h,), from values (1, h, T, head_dim)
    return replace(_head_summaries(traced.attn_weights), first_value_ratio=ratio)


def summaries(settings: Settings) -> HeadSummaries | None:
    """What each head of the settings' layer looks at on the sentence; None for random weights or a single token."""
    s = fit(settings)[0]
    return None if s.weights == RANDOM else _summaries(s.weights, s.layer, s.source, s.text, version(s.weights))


@shared_view(max_entries=MODEL_ENTRIES * 2)
def _every_head(kind: str, source: str, text: str, loaded: int) -> EveryHead | None:
    prepared = layer_prepared(kind, 1, source, text, loaded)  # the sentence's tokens, cut to the model's context
    found = model(kind)
    grid_tokens = max(2, math.isqrt(GRID_CELLS // (found.cfg.n_layers * found.cfg.n_heads)))  # GRID_CELLS shared out
    shown = min(len(prepared.ids), grid_tokens)
    if shown < 2:
        return None
    weights = attention.every_layer_weights(found, prepared.ids[:shown])  # (L, h, shown, shown)
    flat = _head_summaries(weights.flatten(0, 1))  # every layer's heads in a row: arrays (L * h,)
    names = ("previous_token", "first_token", "entropy", "entropy_share", "mean_distance")
    summaries = replace(flat, **{name: getattr(flat, name).reshape(weights.shape[:2]) for name in names})  # (L, h)
    return EveryHead(weights.numpy(), prepared.pieces[:shown], summaries, num_tokens=len(prepared.ids))


def every_head(settings: Settings) -> EveryHead | None:
    """Every layer's and head's weights on the sentence's first tokens, with each head's summaries, in one pass through
    the model; None for random weights or a single token."""
    s = fit(settings)[0]
    return None if s.weights == RANDOM else _every_head(s.weights, s.source, s.text, version(s.weights))


# The first page's numbers for the book's example at the defaults (``views.computed_why_view``), stored by
# ``scripts/first_view.py`` so that a new server draws its first page before it has imported torch; only for exactly
# the stored inputs, seed and size. tests/test_first_view.py checks them against the code.
STORE = Path(__file__).with_name("data") / "why_attention_book.npz"  # explorer/data/


@functools.cache
def _stored(path: Path = STORE) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as found:
            arrays = {name: found[name] for name in found.files}
    except (OSError, ValueError):
        return None  # no store (or a damaged one): every view is computed
    for array in arrays.values():
        array.flags.writeable = False  # shared by every session, like a cached view
    return arrays


def stored_why_view(inputs: np.ndarray, seed: int, hidden_size: int, path: Path = STORE) -> WhyView | None:
    """The stored view if it was computed from these ``inputs`` (num_tokens, d_in), ``seed`` and ``hidden_size``."""
    stored = _stored(path)
    same = stored is not None and (int(stored["seed"]), int(stored["hidden_size"])) == (seed, hidden_size)
    if not same or not np.array_equal(stored["inputs"], inputs):  # False for another shape too
        return None
    values = {field.name: stored[field.name] for field in fields(WhyView)}
    return WhyView(**values | {"additive_num_parameters": int(values["additive_num_parameters"])})


def save(view: WhyView, inputs: np.ndarray, seed: int, hidden_size: int, path: Path = STORE) -> None:
    arrays = {field.name: np.asarray(getattr(view, field.name)) for field in fields(WhyView)}
    arrays |= {"inputs": np.asarray(inputs), "seed": np.asarray(seed), "hidden_size": np.asarray(hidden_size)}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    _stored.cache_clear()
