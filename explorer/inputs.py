"""What every view starts from: the sentence as token ids and input vectors, and the module.

``prepared(settings)`` is the book's six vectors, a typed sentence's seeded embeddings, or, with
trained weights, what the model feeds the chosen layer (``weights``). ``module_for`` builds a
chapter class like the book (``torch.manual_seed(seed)`` then the constructor) or hands over a
trained model's layer. Results are shared read-only between sessions (``caching``).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

import attention
from attention import tokens as tokens_module
from attention.constants import BOOK_SENTENCE, BOOK_TOKENS, BOOK_VECTORS

from . import weights
from .caching import CACHE_ENTRIES, shared_view
from .results import Prepared, TraceArrays
from .settings import BOOK, Settings


def bpe_encoding():
    """GPT-2's BPE (None if unreachable). ``load_bpe`` keeps a success for the whole
    process and retries a failure later, so this is not cached again here."""
    return tokens_module.load_bpe()


@shared_view(max_entries=CACHE_ENTRIES)
def tokenize_text(text: str) -> attention.Tokenization:
    return attention.tokenize(text, encoding=bpe_encoding())


@shared_view(max_entries=CACHE_ENTRIES)
def prepare(source: str, text: str, d_in: int, seed: int, context_length: int) -> Prepared:
    """Tokens and input embeddings for the book preset or a typed sentence.

    Raises ``ValueError`` with a learner-friendly message for an empty sentence.
    """
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
    tokenized = tokenize_text(text)
    ids, pieces = tokenized.ids, tokenized.pieces
    truncated_from = None
    if len(ids) > context_length:
        truncated_from = len(ids)
        ids, pieces = ids[:context_length], pieces[:context_length]
    inputs = attention.embed_tokens(ids, d_in, seed)  # (num_tokens, d_in)
    return Prepared(
        pieces=tuple(pieces),
        ids=tuple(ids),
        inputs=inputs.numpy(),
        tokenizer=tokenized.tokenizer,
        truncated_from=truncated_from,
    )


def prepared(settings: Settings) -> Prepared:
    if settings.weights != weights.RANDOM:
        return weights.prepared(settings)  # the model's input to the layer, not seeded vectors
    return prepare(settings.source, settings.text, settings.effective_d_in, settings.seed, settings.context_length)


MODULES = ("SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention")


@shared_view(max_entries=CACHE_ENTRIES)
def module(name: str, seed: int, d_in: int, d_out: int, context_length: int, dropout: float, num_heads: int):
    """A module built like the book: ``torch.manual_seed(seed)`` then the constructor. Shared, read-only."""
    if name not in MODULES:
        raise ValueError(f"no chapter-3 module named {name!r}")
    cls = getattr(attention, name)
    if name in ("SelfAttention_v1", "SelfAttention_v2"):
        return attention.build(cls, seed, d_in, d_out)
    if name == "CausalAttention":
        return attention.build(cls, seed, d_in, d_out, context_length, dropout)
    return attention.build(cls, seed, d_in, d_out, context_length, dropout, num_heads=num_heads)


def module_for(name: str, settings: Settings, seed: int | None = None):
    """The module ``name`` for ``settings``, built after ``torch.manual_seed(seed)`` (default: the settings' seed),
    or holding the settings' layer of a trained model."""
    if settings.weights != weights.RANDOM:
        return weights.module(name, settings)
    return module(
        name,
        settings.seed if seed is None else seed,
        settings.effective_d_in,
        settings.d_out,
        settings.context_length,
        settings.dropout,
        settings.num_heads,
    )


def trace_arrays(trace: attention.Trace) -> TraceArrays:
    """A trace's tensors as numpy arrays, ready to cache and draw."""
    arrays = {}
    for field in fields(TraceArrays):
        tensor = getattr(trace, field.name)
        arrays[field.name] = None if tensor is None else tensor.numpy()
    return TraceArrays(**arrays)
