"""What every view starts from: the sentence as token ids and input vectors.

``prepared(settings)`` is the book's six vectors, a typed sentence's seeded embeddings, or, with
trained weights, what the model feeds the chosen layer (``layer_prepared``). Results are shared
read-only between sessions (``runtime.caching``). ``views.run.Run`` calls it once per change of settings."""

from __future__ import annotations

import numpy as np

import attention
from attention import tokens as tokens_module
from attention.constants import (
    BOOK_SENTENCE,
    BOOK_TOKENS,
    BOOK_VECTORS,
)
from attention.tokens import BPE_NAME
from explorer.models.choice import MODEL_ENTRIES, fit, model, version
from explorer.results import Prepared
from explorer.runtime import torch
from explorer.runtime.caching import CACHE_ENTRIES, shared_view
from explorer.settings import BOOK, RANDOM, Settings


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
    if settings.weights != RANDOM:  # the model's input to the layer, not seeded vectors
        settings = fit(settings)[0]
        return layer_prepared(
            settings.weights, settings.layer, settings.source, settings.text, version(settings.weights)
        )
    return prepare(settings.source, settings.text, settings.effective_d_in, settings.seed, settings.context_length)


@shared_view(max_entries=MODEL_ENTRIES * 8)
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
    view = attention.layer_input(found, ids, layer - 1)
    return Prepared(
        pieces=tuple(pieces),
        ids=tuple(ids),
        inputs=view.inputs[0].numpy().copy(),  # (num_tokens, emb_dim)
        tokenizer=tokenized.tokenizer,
        truncated_from=truncated_from,
    )


def layer_inputs(settings: Settings, ids) -> torch.Tensor:
    """What the model feeds the settings' layer for token ids ``ids``. Shapes: → (num_tokens, emb_dim)."""
    settings = fit(settings)[0]
    return attention.layer_input(model(settings.weights), ids, settings.layer - 1).inputs[0]  # (num_tokens, emb_dim)
