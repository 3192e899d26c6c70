"""The explainable heatmaps of Why attention, Tokens & embeddings and Generate (issue 25), as ``explorer.cells.Cells``.

Why attention's view is stored for a first visit and keeps no decoder states, so the encoder–decoder that
a GRU or Bahdanau cell reads is run once per sentence when a first cell is asked for
(``seq2seq_parts``, cached), never at a page's run."""

from __future__ import annotations

import dataclasses

import numpy as np

import attention
from explorer.cells import Cells
from explorer.figures.labels import visible_token
from explorer.page_text import cells_rnn as words
from explorer.page_text.cells import Notation
from explorer.runtime.caching import CACHE_ENTRIES, shared_view
from explorer.runtime.lazy import torch
from explorer.views.page_cells import dims, once_per_view

SCORE_CODE = "return torch.tanh(query_part.unsqueeze(-2) + key_parts) @ v_a"  # additive_scores, on Why attention
KEY_CODE = "keys = self.W_key(x)"  # CachedMultiHeadAttention.steps: every key, cached or recomputed
FUTURE_CODE, WINDOW_CODE = "future = key_pos > query_pos", "return future | (key_pos <= query_pos - window)"


@shared_view(max_entries=CACHE_ENTRIES)
def seq2seq_parts(inputs: bytes, shape: tuple[int, int], seed: int, hidden_size: int):
    """The trace and weights of ``attention.encoder_decoder`` on these inputs, as ``views.why_view`` ran it."""
    x = torch.tensor(np.frombuffer(inputs, dtype=np.float32).reshape(shape))  # (num_tokens, d_in)
    trace = attention.encoder_decoder(x, hidden_size=hidden_size, seed=seed)
    return trace, attention.seq2seq_weights(shape[1], hidden_size, None, seed)


def _parts(inputs, seed: int, hidden_size: int):
    x = np.ascontiguousarray(inputs, dtype=np.float32)
    return seq2seq_parts(x.tobytes(), x.shape, seed, hidden_size)


def encoder(inputs, seed: int, hidden_size: int, pieces, dims) -> Cells:
    """``encoder_states``: token rows, hidden units as columns; each a GRU step."""

    def derive(row: int, col: int):
        return attention.derivations.encoder_state(*_parts(inputs, seed, hidden_size), row, col)

    code = "return (1 - z) * n + z * h"
    return Cells(derive, Notation("encoder_states"), code, tuple(pieces), tuple(dims), rows="token", cols="unit",
                 words=words.gru)  # fmt: skip


def bahdanau(inputs, seed: int, hidden_size: int, steps, pieces) -> Cells:
    """``bahdanau_weights``: decoder steps as rows, encoder tokens as columns."""

    def derive(row: int, col: int):
        trace, weights = _parts(inputs, seed, hidden_size)
        found = attention.derivations.bahdanau_weight(trace, row, col)
        score = attention.derivations.bahdanau_score(trace, weights, row, col)
        return dataclasses.replace(found, details={**found.details, "score": score})

    code = SCORE_CODE  # the softmax runs in the decoder's loop, which the page does not show
    return Cells(derive, Notation("bahdanau_weights"), code, tuple(steps), tuple(pieces), rows="step", cols="key",
                 words=words.bahdanau)  # fmt: skip


def contrast(inputs, seed: int, pieces, *, additive: bool) -> Cells:
    """The self-attention contrast: softmax of x·xᵀ, or of the additive scores of ``contrast_weights``."""
    x = np.array(inputs, dtype=np.float64)

    def score(row: int, col: int):
        if additive:
            return attention.derivations.contrast_score(x, row, col, seed=seed)
        return attention.derivations.score(x, x, row, col)

    def derive(row: int, col: int):
        scores = [score(row, j).value for j in range(len(pieces))]
        found = attention.derivations.weight(scores, col, row=row, subtract_max=False)
        return dataclasses.replace(found, details={**found.details, "score": score(row, col)})

    code = SCORE_CODE if additive else "inputs @ inputs.T"
    notation = Notation("additive_weights" if additive else "dot_product_weights")
    return Cells(derive, notation, code, tuple(pieces), tuple(pieces), words=words.contrast)


def reversal(ids, written, pieces) -> Cells:
    """The untrained and the trained reversal model's weights side by side: panel k's key j is k · T + j."""
    count = len(pieces)

    def derive(row: int, col: int):
        trained = col >= count
        model = attention.load_reversal(True) if trained else attention.reversal.untrained_reversal()
        found = attention.derivations.reversal_weight(model, list(ids), row, col % count)
        return dataclasses.replace(found, details={**found.details, "model": "trained" if trained else "untrained"})

    labels = tuple(f"{name} · input {j + 1}: {pieces[j]}" for name in ("untrained", "trained") for j in range(count))
    return Cells(derive, Notation("alignment"), "weights = torch.softmax(", tuple(written), labels, rows="step",
                 cols="model · input", keys=tuple(pieces), words=words.bahdanau)  # fmt: skip


def embeddings(inputs, ids, pieces, settings) -> Cells:
    """The input matrix: a number of a table (the book's vectors, a seeded draw, or a model's), no sum."""
    dims = tuple(f"dim {k}" for k in range(np.shape(inputs)[1]))

    def derive(row: int, col: int):
        value, token = float(inputs[row, col]), int(ids[row])
        if settings.weights != "random":
            where = f"layer {settings.layer}'s input"
            source = (
                f"what the trained model feeds layer {settings.layer}: row {token} of its token embedding plus "
                f"position {row}'s row, through the blocks below and `norm1`, not written out here"
            )
        elif settings.source == "book":
            where, source = f"inputs[{row}][{col}]", "one of the book's six hand-picked vectors, as section 3.3 prints"
        else:
            where = f"token_vector({token}, d_in={len(dims)}, seed={settings.seed})[{col}]"
            source = f"a random number drawn by a generator seeded by (seed {settings.seed}, id {token})"
        term = attention.derivations.Term(0, (value,), value)
        details = {"where": where, "source": source, "id": token}
        return attention.derivations.Derivation("parameter", row, col, (term,), value, value, details)

    code = "torch.rand(d_in, generator=generator)"
    return Cells(derive, Notation("inputs"), code, tuple(pieces), dims, rows="token", cols="dim", words=words.embedding)


def recorded_weights(rows, row_labels, pieces, *, layer: int, head: int, first_query: int, model: str) -> Cells:
    """Generate's query rows: the weights of ``model`` (``GenerationView.model_name``: the small GPT, or GPT-2)
    as its step recorded them (no scores were kept), so a cell shows its row, which adds up to 1, and says
    where it came from; NaN marks a key not yet seen."""

    def derive(row: int, col: int):
        seen = ~np.isnan(rows[row])
        terms = tuple(attention.derivations.Term(j, (float(w),), float(w)) for j, w in enumerate(rows[row][seen]))
        details = {"layer": layer, "head": head, "query": first_query + row, "seen": int(seen.sum())}
        details["model"] = model
        details["piece"] = row_labels[row]
        value = float(rows[row, col])
        return attention.derivations.Derivation(
            "recorded", row, col, terms, sum(t.value for t in terms), value, details
        )

    code = "attn_rows.append(steps.attn_weights[:, :, -1, :])"
    queries = tuple(f"{first_query + r + 1}: {visible_token(p)}" for r, p in enumerate(row_labels))  # token numbers
    return Cells(
        derive, Notation("attn_weights"), code, queries, tuple(pieces), rows="query token", words=words.recorded
    )


@once_per_view
def cached_keys(check, layer: int, head: int, pieces) -> dict[str, Cells]:
    """Generate's cache step: token j's key as the cache kept it ("cached-keys") and as the whole text makes it
    again ("recomputed-keys"), from ``views.generation.CacheCheck``'s (n_layers, n_heads, T, head_dim) keys.
    Rows are tokens, columns the head's dimensions, named alike on both panels."""

    def made(shown: str) -> Cells:
        def derive(row: int, col: int):
            found = attention.derivations.cache_entry
            return found(check.cache_keys, check.recomputed_keys, layer, head, row, col, shown=shown)

        return Cells(derive, Notation(f"{shown} keys"), KEY_CODE, tuple(pieces), dims(check.cache_keys.shape[-1]),
                     rows="token", cols="dim", words=words.cached_key)  # fmt: skip

    return {"cached-keys": made("cached"), "recomputed-keys": made("recomputed")}


def window_mask(num_tokens: int, window: int | None, pieces) -> Cells:
    """Generate's last step: the causal mask (``window`` None) or the sliding window's, from
    ``attention.sliding_window_mask``; queries as rows, keys as columns."""

    def derive(row: int, col: int):
        return attention.derivations.window_mask_entry(num_tokens, window, row, col)

    notation = Notation("causal mask" if window is None else f"sliding window of {window}")
    code = FUTURE_CODE if window is None else WINDOW_CODE
    return Cells(derive, notation, code, tuple(pieces), tuple(pieces), words=words.window_mask)
