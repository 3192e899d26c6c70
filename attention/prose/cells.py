"""A heatmap's cells, their numbers and their words: the cell panel's (issue 25) and ``attention.notebook.explore``'s.

A page makes a chart's ``Cells`` in the step that draws it, with a constructor below, and passes it as ``explain=``.
``Cells`` maps a cell (row, col), counted from 0, to its ``attention.derivations.Derivation``, made only when asked
for, and writes it in the book's notation: what the cell is (x^(i) from 1, Python's index beside it), then the sum
with the numbers on screen. Below: ``Notation``, ``Cells``, then each kind's words beside its constructor."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

import attention
from attention.figures import visible_token
from attention.prose import literal, sentence_start
from attention.prose.glossary import term

if TYPE_CHECKING:
    from attention.derivations import Derivation

DOT_TERMS = 8  # terms of a dot product written out; the rest are counted
ROW_TERMS = 12  # keys of a softmax row or a weighted sum written out
TOKEN_AXES = ("query", "key", "token")  # a picker lists these as tokens counted from 1; others by their names


# The book's notation, and the wording every kind of cell shares.


@dataclass(frozen=True)
class Notation:
    """How the book writes a matrix's cells: ``matrix``, its name in the code; ``left`` and ``right``, the letters of
    the vectors a score multiplies (q and k) or of a context entry's values (v); ``scaled``: scores ÷ √d_k."""

    matrix: str
    left: str = "q"
    right: str = "k"
    scaled: bool = False
    weight_matrix: str = ""  # a projection's matrix (``W_query``); ``left`` is then its output's letter (q)
    item: int | str | None = None  # a batch item (or "item, head"): cells read ``attn_weights[item, i, j]``

    @functools.cached_property
    def name(self) -> str:
        """The matrix as a picker lists it: ``attn_weights``, or ``attn_weights[1]`` for a batch item."""
        return self.matrix if self.item is None else f"{self.matrix}[{self.item}]"


def sub(i: int, j: int) -> str:
    """The book's subscript of row ``i``, column ``j`` (from 0): ω_21, or ω_(12,3) when one has two digits."""
    a, b = i + 1, j + 1
    return f"{a}{b}" if a < 10 and b < 10 else f"({a},{b})"


def number(value: float) -> str:
    """4 decimals, as the book prints, with a real minus sign (none on a value that rounds to 0)."""
    text = f"{value:.4f}"
    return (text[1:] if text.startswith("-") and float(text) == 0 else text).replace("-", "−")


def factor(value: float) -> str:
    """``number``, in brackets when negative: a factor of a product."""
    text = number(value)
    return f"({text})" if text.startswith("−") else text


def dims(count: int, prefix: str = "dim") -> tuple[str, ...]:
    """The column labels of a matrix of vectors: "dim 0", "dim 1", … (Python's index)."""
    return tuple(f"{prefix} {k}" for k in range(count))


def _token(piece: str) -> str:
    return "“" + literal(visible_token(piece)) + "”"


def _at(n: Notation, d: Derivation) -> str:
    """The cell's index as the code writes it: ``row, col``, or ``item, row, col`` for a batch item."""
    return f"{d.row}, {d.col}" if n.item is None else f"{n.item}, {d.row}, {d.col}"


def _sum(d: Derivation, shown: int = DOT_TERMS, unit: str = " terms", part=None) -> str:
    """The first ``shown`` of ``d``'s terms (products, or ``part(term)``) joined by " + ", then how many in all."""
    part = part or (lambda t: "·".join(factor(f) for f in t.factors))
    written = " + ".join(part(t) for t in d.terms[:shown])
    return written + (f" + … ({len(d.terms)}{unit} in all)" if len(d.terms) > shown else "")


def _softmax_lines(d: Derivation, keys: Sequence[str], *, shift_line: bool = True) -> list[str]:
    """A softmax row's exps, one line per key, then the cell's share: α = exp(this) / Σ exp."""
    shift = d.details["subtract_max"] and d.details["row_max"] != 0  # as torch.softmax does: the same weights
    minus = f" − {factor(d.details['row_max'])}" if shift else ""
    lines = [
        f"key {t.index + 1} {visible_token(keys[t.index])}: "
        + ("exp(−∞) = 0" if t.masked else f"exp({number(t.factors[0])}{minus}) = {number(t.value)}")
        for t in d.terms[:ROW_TERMS]
    ]
    if shift and shift_line:
        lines.insert(0, f"(the row's largest score, {number(d.details['row_max'])}, is subtracted first)")
    if len(d.terms) > ROW_TERMS:
        lines.append(f"… ({len(d.terms)} keys in all)")
    lines.append(f"α_{sub(d.row, d.col)} = {number(d.terms[d.col].value)} / {number(d.total)} = {number(d.value)}")
    return lines


# A heatmap's cells.


@functools.lru_cache(maxsize=128)  # a 1,024-token picker's labels are made once, not at every run that shows them
def picker_labels(what: str, labels: tuple[str, ...]) -> tuple[str, ...]:
    """A picker's rows or columns as it lists them: a token counted from 1 ("2: Your"), or a name ("dim 0")."""
    if what not in TOKEN_AXES:
        return tuple(map(str, labels))
    return tuple(f"{k + 1}: {visible_token(label)}" for k, label in enumerate(labels))


@dataclass(frozen=True)
class Cells:
    """A heatmap's cells explained: ``derive(row, col)`` gives a cell's ``Derivation``; ``code`` is (part of) the one
    line that made the matrix in "Show the code"; ``keys``, the tokens a softmax row or a weighted sum runs over."""

    derive: Callable
    notation: Notation
    code: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    rows: str = "query"
    cols: str = "key"
    keys: tuple[str, ...] = ()
    words: Callable | None = None  # writes a derivation out: a kind's own (``explain_merged``, …); None: ``explain``

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.row_labels), len(self.col_labels)

    @property
    def options(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return picker_labels(self.rows, self.row_labels), picker_labels(self.cols, self.col_labels)

    def explain(self, row: int, col: int) -> tuple[str, str]:
        """The words and the sum of cell (``row``, ``col``) (``explain`` unless ``words``): the sum is one text,
        or (heading, text) pairs to show side by side."""
        keys = self.keys or self.col_labels
        written = self.words or explain
        return written(self.derive(row, col), self.notation, self.row_labels[row], self.col_labels[col], keys)


def _f64(array) -> np.ndarray:
    """A writable float64 copy, made for the cell asked for (a view's arrays are read-only; torch warns on those)."""
    return np.array(array, dtype=np.float64)


BOOK_DROPPED = (  # ``dropped_weights`` is this app's name; the book overwrites its weights
    " `dropped_weights` is the book's `attn_weights` after `attn_weights = self.dropout(attn_weights)`; here it gets "
    "its own name, so both can be drawn."
)

# The chapter's matrices: scores, weights, the masks' two routes, dropout, context vectors, projections.


def explain(derivation: Derivation, notation: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """The words and the sum for ``derivation``: (Markdown, plain text for a code block). Every kind's own words
    (``explain_merged``, …) take the same arguments, so a ``Cells`` can take any as its ``words``."""
    d, n = derivation, notation
    i, j = d.row + 1, d.col + 1
    matrix = f"({n.matrix})" if " " in n.matrix else n.matrix  # an expression: its index applies to the whole
    where = f"`{matrix}[{_at(n, d)}]`"
    query = f"x^({i}) {_token(row_label)}"
    key = f"key x^({j}) {_token(col_label)}"
    kind = d.kind
    if kind in ("score", "scaled_score"):
        dims, omega = d.details["d"], f"ω_{sub(d.row, d.col)}"
        score = f"the {term('attention_scores', 'attention score')} {omega} of query {query} with {key}"
        if kind == "scaled_score":
            what = f"is {omega}/√{term('d_k')}: {score}, divided by √d_k. The score {omega} is"
        else:
            what = f"is {score}. It is"
        words = (
            f"{where} (Python counts from 0) {what} the {term('dot_product', 'dot product')} "
            f"{n.left}^({i})·{n.right}^({j}): multiply their {dims} entries pairwise, then add."
        )
        lines = [f"{omega} = {_sum(d)} = {number(d.total)}"]
        if d.details.get("masked"):
            words += f" Key {j} comes after query {i}, so `masked_fill` replaces the score by −∞."
            lines.append(f"masked: {omega} → −∞")
        if kind == "scaled_score":
            d_k = d.details["d_k"]
            words += f" Here d_k = `keys.shape[-1]` = {d_k}."
            lines.append(f"{omega} / √{d_k} = {number(d.total)} / {d.details['sqrt_d_k']:.4f} = {number(d.value)}")
        return words, "\n".join(lines)
    if kind == "weight":
        s = "ω" + ("/√d_k" if n.scaled else "")
        words = (
            f"{where} is the {term('attention_weights', 'attention weight')} α_{sub(d.row, d.col)} of query {query} "
            f"on {key}: the {term('softmax')} of row {d.row + 1}'s scores {s}, exp of this one over the "
            "sum of the row's exps."
        )
        if any(t.masked for t in d.terms):
            words += " A masked key's score is −∞, and exp(−∞) = 0."
        if d.details["subtract_max"] and d.details["row_max"] != 0:
            words += (
                f" The row's largest score, {number(d.details['row_max'])}, is subtracted first, as `torch.softmax` "
                "does."
            )
        return words, "\n".join(_softmax_lines(d, keys, shift_line=False))
    if kind == "dropped_weight":
        p, scale = d.details["p"], d.details["scale"]
        weight = d.terms[0].factors[0]
        fate = "kept" if d.details["kept"] else "dropped"
        words = (
            f"{where}: the causal weight α_{sub(d.row, d.col)} of query {query} and {key}, {fate} by this "
            f"{term('dropout')} draw.{BOOK_DROPPED if n.matrix.startswith('dropped_weights') else ''} Survivors are "
            "scaled by 1/(1 − p); dropped weights become 0."
        )
        if d.details["kept"]:
            return words, f"{number(weight)} × 1/(1 − {p:g}) = {number(weight)} × {scale:.4f} = {number(d.value)}"
        return words, f"{number(weight)} dropped: × 0 = 0"
    if kind == "masked_weight":
        weight, keep = d.terms[0].factors
        words = (
            f"{where} is the unmasked weight α_{sub(d.row, d.col)} of query {query} and {key}, "
            f"times `mask_simple[{d.row}, {d.col}]`: 1 for a key at or before the query, 0 for a future key."
        )
        return words, f"{number(weight)} × {keep:g} = {number(d.value)}"
    if kind == "renormalized":
        words = (
            f"{where}: the masked weight of query {query} and {key} divided by its row's sum "
            f"`row_sums[{d.row}]`, so the row sums to 1 again."
        )
        mine, total = number(d.terms[d.col].value), _sum(d, ROW_TERMS, " keys", lambda t: number(t.value))
        return words, f"{mine} / ({total}) = {mine} / {number(d.total)} = {number(d.value)}"
    c = literal(col_label)
    if kind == "context":  # Σ_j α_ij · v^(j)[c]
        words = (
            f"{where} is entry {c} of the {term('context_vector', 'context vector')} z^({i}) of query "
            f"{query}: every token's {n.right}^(j) entry {c}, times the weight α_{i}j, added up."
        )
        return words, f"z^({i})[{d.col}] = {_sum(d, ROW_TERMS, ' tokens')} = {number(d.value)}"
    if kind == "projection":  # x^(i) · W[:, c] (+ b)
        bias = d.details.get("bias")
        words = (
            f"{where} is entry {c} of {n.left}^({i}), the projection of {query}: its {d.details['d']} entries "
            f"times column {d.col} of `{n.weight_matrix}`, added up" + (", plus the bias." if bias is not None else ".")
        )
        plus = "" if bias is None else f" + {factor(bias)}"
        return words, f"{n.left}^({i})[{d.col}] = {_sum(d)}{plus} = {number(d.value)}"
    raise ValueError(f"no words for a {kind!r} cell")


def scores(queries, keys, pieces: Sequence[str], *, code: str, notation: Notation, scaled=False, mask=None) -> Cells:
    """ω_ij = q^(i) · k^(j) (÷ √d_k with ``scaled``) from (T, d) queries and keys; where ``mask`` (T, T) is True, a
    future key's dot product is computed, then replaced by −∞."""

    def derive(row: int, col: int):
        found = attention.derivations.score(_f64(queries), _f64(keys), row, col, scaled=scaled)
        if mask is None or not mask[row, col]:
            return found
        return replace(found, value=-math.inf, details={**found.details, "masked": True})

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def weights(scores_matrix, pieces: Sequence[str], *, code: str, notation: Notation, masked=None) -> Cells:
    """α_ij, the softmax of row i of the scaled (T, T) ``scores_matrix``; ``masked`` (T, T), True = a future key."""

    def derive(row: int, col: int):
        hidden = None if masked is None else np.array(masked[row], dtype=bool)
        return attention.derivations.weight(_f64(scores_matrix[row]), col, row=row, masked=hidden, subtract_max=False)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def masked_weights(weights_matrix, mask_simple, pieces: Sequence[str], *, code: str, notation: Notation) -> Cells:
    """``masked_simple = attn_weights * mask_simple``, one cell."""

    def derive(row: int, col: int):
        weight, keep = float(weights_matrix[row, col]), float(mask_simple[row, col])
        return attention.derivations.masked_weight(weight, keep, row=row, col=col)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def renormalized(masked_matrix, mask, pieces: Sequence[str], *, code: str, notation: Notation) -> Cells:
    """``masked_simple_norm = masked_simple / row_sums``, one cell; ``mask`` (T, T), True = a future key."""

    def derive(row: int, col: int):
        hidden = np.array(mask[row], dtype=bool)
        return attention.derivations.renormalized(_f64(masked_matrix[row]), col, row=row, masked=hidden)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def dropped(weights_matrix, keep, p: float, pieces: Sequence[str], *, code: str, notation: Notation) -> Cells:
    """A weight after one dropout draw: kept ones × 1/(1 − p), the others 0."""

    def derive(row: int, col: int):
        kept = bool(keep[row, col])
        return attention.derivations.dropped_weight(float(weights_matrix[row, col]), kept, p, row=row, col=col)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def context(weights_matrix, values, pieces: Sequence[str], dims: Sequence[str], *, code: str, notation: Notation):
    """z^(i)[c] = Σ_j α_ij · v^(j)[c] from (T, T) weights and (T, d) values; columns are dimensions."""

    def derive(row: int, col: int):
        return attention.derivations.weighted_sum(_f64(weights_matrix[row]), _f64(values), col, row=row)

    return Cells(derive, notation, code, tuple(pieces), tuple(dims), cols="dim", keys=tuple(pieces))


def projections(inputs, weight_matrix, pieces, dims, *, code: str, notation: Notation, bias=None) -> Cells:
    """An entry of ``x @ W`` (+ ``bias``) ((T, d_in) inputs, (d_in, d_out) ``weight_matrix``, (d_out,) bias): rows
    are tokens, columns the output's dimensions."""

    def derive(row: int, col: int):
        x, b = _f64(inputs[row]), None if bias is None else _f64(bias)
        return attention.derivations.projection(x, _f64(weight_matrix), col, bias=b, row=row, kind="projection")

    return Cells(derive, notation, code, tuple(pieces), tuple(dims), rows="query", cols="dim")


# Multi-head attention (section 3.6): a head's weight, the heads merged, out_proj's mix of them.


def explain_head_weight(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A cell of a grid of heads: the weight (or dropped weight) of head ``details["head"]``, written as the code
    indexes it: ``attn_weights[0, h, i, j]`` in ``MultiHeadAttention`` (``details["stacked"]``), else
    ``attn_weights[0, i, j]`` in the wrapper's ``heads[h]``; the column's token is the key's (``keys[j]``)."""
    head, stacked = d.details["head"], d.details["stacked"]
    words, sums = explain(d, replace(n, item=f"0, {head}" if stacked else 0), row_label, keys[d.col], keys)
    own = "" if stacked else f" (`heads[{head}]`)"
    return f"Head {head + 1} of {d.details['num_heads']}{own}. " + words, sums


def head_weights(
    scores, keep, p: float, shown: range, pieces, *, code: str, notation: Notation, stacked: bool = True
) -> Cells:
    """The heads ``shown`` of (num_heads, T, T) scaled scores (−∞ where masked), after dropout's ``keep``
    (None: no dropout) with rate ``p``, as a grid: panel k's key j is column k · T + j (``figures.pick_layer``).
    ``stacked``: the heads are ``MultiHeadAttention``'s, one (b, num_heads, T, T) tensor; else the wrapper's, each
    a ``CausalAttention`` with its own (b, T, T) tensor."""
    count = len(pieces)

    def derive(row: int, col: int):  # head h's weight from its scores, then dropout's draw if any
        head, col = shown.start + col // count, col % count
        found = attention.derivations.weight(_f64(scores[head, row]), col, row=row, subtract_max=False)
        if keep is not None:
            found = attention.derivations.dropped_weight(found.value, bool(keep[head, row, col]), p, row=row, col=col)
        return replace(found, details={**found.details, "head": head, "num_heads": scores.shape[0], "stacked": stacked})

    labels = tuple(f"head {h + 1} · key {j + 1}: {pieces[j]}" for h in shown for j in range(count))
    return Cells(derive, notation, code, tuple(pieces), labels, cols="head · key", keys=tuple(pieces),
                 words=explain_head_weight)  # fmt: skip


def explain_merged(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A column of the heads side by side (``merge``): its head and column, then that head's Σ_j α_ij · v^(j)[c']."""
    h, c, head_dim = d.details["head"], d.details["head_col"], d.details["head_dim"]
    i, columns = d.row + 1, "1 column" if head_dim == 1 else f"{head_dim} columns"
    first = h * head_dim  # head h + 1's first column, counted from 0
    words = (
        f"`{n.matrix}[{_at(n, d)}]` (Python counts from 0) belongs to head {h + 1}. The "
        f"{term('num_heads', 'heads')}' context vectors sit side by side, {columns} each, so head {h + 1}'s "
        f"columns start at column {first}, and column {d.col} is its entry {c}, also counted from 0."
        f" That entry of head {h + 1}'s {term('context_vector', 'context vector')} z^({i}), for query x^({i}) "
        f"{_token(row_label)}, adds up every token's value v^(j), entry {c}, times its weight α_{i}j."
    )
    line = f"head {h + 1}: z^({i}), entry {c} = {_sum(d, ROW_TERMS, '')} = {number(d.value)}"
    return words, f"column {d.col} = head {h + 1}'s entry {c}\n{line}"


def merged(weights, values, pieces, cols, *, first: int = 0, code: str, notation: Notation) -> Cells:
    """The heads' context vectors side by side, from (num_heads, T, T) weights and (num_heads, T, head_dim)
    values, from column ``first`` on (a page may show some heads)."""

    def derive(row: int, col: int):
        return attention.derivations.merge(np.array(weights), np.array(values), row, first + col)  # writable copies

    return Cells(derive, notation, code, tuple(pieces), tuple(cols), cols="dim", keys=tuple(pieces),
                 words=explain_merged)  # fmt: skip


def explain_mixed(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """``out_proj``'s output: each head's merged columns times ``out_proj.weight``, subtotalled, then the bias."""
    i, heads, head_dim = d.row + 1, d.details["num_heads"], d.details["head_dim"]
    words = (
        f"`output[{_at(n, d)}]` is `out_proj` applied to query x^({i}) {_token(row_label)}'s merged "
        f"context vector: each of its {len(d.terms)} entries times `out_proj.weight[{d.col}, k]`, added up, plus "
        f"the bias. This is the mix: before `out_proj` each column came from one head, and now all "
        f"{heads} heads add to one number."
    )
    lines = []
    for h, subtotal in enumerate(d.details["head_totals"]):
        own = replace(d, terms=tuple(t for t in d.terms if t.head == h))
        span = f"column {h}" if head_dim == 1 else f"columns {h * head_dim}–{(h + 1) * head_dim - 1}"
        lines.append(f"head {h + 1} ({span}): {_sum(own, unit='')} = {number(subtotal)}")
    totals = " + ".join(factor(t) for t in d.details["head_totals"])
    lines.append(f"output = {totals} + bias {factor(d.details['bias'])} = {number(d.value)}")
    return words, "\n".join(lines)


def out_proj(context, out_weight, bias, pieces, cols, *, num_heads: int, code: str, notation: Notation) -> Cells:
    """``self.out_proj(context_vec)`` from the (T, d_out) merged context vectors, ``out_proj.weight`` (d_out, d_out)
    and its bias (None: none): each entry's terms grouped by head."""

    def derive(row: int, col: int):
        x, b = _f64(context[row]), None if bias is None else _f64(bias)
        return attention.derivations.out_projection(x, _f64(out_weight), col, num_heads=num_heads, bias=b, row=row)

    return Cells(derive, notation, code, tuple(pieces), tuple(cols), cols="dim", keys=tuple(pieces),
                 words=explain_mixed)  # fmt: skip


# Break it: a mistake's cell beside the right one.

CHANGED = {
    "fill_zero": "the hidden keys' scores are 0, not −∞, so their exps are not 0",
    "tril_mask": "the mask marks other keys than the future ones",
    "diagonal_0": "the mask hides each query's own key too",
    "no_scaling": "the score is not divided by √d_k",
    "divide_by_d_k": "the score is divided by d_k, not √d_k",
    "view_without_transpose": "the head's rows hold numbers of other tokens",
    "mask_after_softmax": "the softmax runs before the mask, so the row's sum counts future keys",
    "softmax_wrong_dim": "the softmax runs down the column (over queries), not along the row",
    "dropout_without_rescale": "the kept weight is not scaled by 1/(1 − p)",
    "merge_without_transpose": "it comes after the weights, so this weight is the same on both sides",
}


def _keys(indices) -> str:
    """Keys counted from 1, a run of them as "5–30"."""
    keys = [k + 1 for k in indices]
    consecutive = len(keys) > 2 and keys == list(range(keys[0], keys[-1] + 1))
    return f"{keys[0]}–{keys[-1]}" if consecutive else ", ".join(map(str, keys))


def _side(d: Derivation, divisor_name: str) -> str:
    """One version of a mistake's cell: its score, the softmax row's exps, the weight (and dropout)."""
    if d.kind == "dropped_weight":
        found, p = d.details["weight"], d.details["p"]
        scale = "× 1/(1 − p)" if d.details.get("rescaled", True) else "× 1 (not rescaled)"
        fate = f"kept {scale}" if d.details["kept"] else "dropped: × 0"
        return _side(found, divisor_name) + f"\ndropout (p = {p:g}): {fate} → {number(d.value)}"
    score = d.details["score"]
    i, j = d.row + 1, d.col + 1
    lines = [
        f"ω_{sub(d.row, d.col)} = {_sum(score, unit='')} = {number(score.total)}",
        f"ω / {divisor_name} = {number(score.total)} / {d.details['divisor']:.4f} = {number(score.value)}",
    ]
    if "query_token" in d.details:  # view without transpose: a head's row starts in another token's numbers
        lines.insert(0, f"query row {i} starts in token {d.details['query_token'] + 1}'s numbers, key row {j} in token "
                     f"{d.details['key_token'] + 1}'s")  # fmt: skip
    if d.details.get("filled_with_0"):
        lines.append("hidden keys' scores set to 0: " + _keys(d.details["filled_with_0"]))
    if d.details.get("all_masked"):
        return "\n".join([*lines, "every score of the row is −∞: 0/0 = NaN"])
    over = "queries" if d.details.get("dim") == -2 else "keys"
    exps = [("0" if t.masked else number(t.value)) for t in d.terms[:ROW_TERMS]]
    more = f" + … ({len(d.terms)})" if len(d.terms) > ROW_TERMS else ""
    shift = f" − {factor(d.details['row_max'])}" if d.details.get("row_max") else ""
    lines.append(f"exp(score{shift}) over the {over}: {' + '.join(exps)}{more} = {number(d.total)}")
    if d.details.get("zeroed_after_softmax"):
        before = d.details["before_zeroing"]
        lines.append(f"α_{sub(d.row, d.col)} before the mask = {number(before)}; a future key's is set to 0")
    mine = d.terms[d.row if over == "queries" else d.col]
    lines.append(f"α_{sub(d.row, d.col)} = {number(mine.value)} / {number(d.total)} → {number(d.value)}")
    return "\n".join(lines)


def explain_mistake(pair, n: Notation, row_label: str, col_label: str, keys: Sequence[str], *, name="", title=""):
    """A Break it cell, right beside wrong: the same steps twice, so the changed line shows in the numbers."""
    right, wrong = pair
    i, j = right.row + 1, right.col + 1
    words = (
        f"`attn_weights[0, 0, {right.row}, {right.col}]` is head 1's {term('attention_weights', 'attention weight')} "
        f"α_{sub(right.row, right.col)} of query x^({i}) {_token(row_label)} on key x^({j}) {_token(col_label)}. "
        f"Left, the package's code works it out; right, the mistake “{literal(title)}” does. "
        f"The changed line: {CHANGED.get(name, 'one line of the forward pass')}."
    )
    divisor = {"no_scaling": "1", "divide_by_d_k": "d_k"}.get(name, "√d_k")
    sides = (("**Right**", _side(right, "√d_k")), ("**Wrong**", _side(wrong, divisor)))
    return words, sides


def mistake(cell_inputs, name: str, pieces, *, code: str, notation: Notation) -> Cells:
    """The right and the wrong weights of ``attention.MISTAKES[name]`` from its view's ``cell_inputs`` (the run,
    the module, the input): a cell is the pair (right, wrong), written side by side."""
    derive = functools.partial(attention.derivations.mistake_cell, *cell_inputs)  # (row, col) → (right, wrong)
    written = functools.partial(explain_mistake, name=name, title=attention.MISTAKES[name].title)
    return Cells(derive, notation, code, tuple(pieces), tuple(pieces), words=written)


# Why attention (sections 3.1–3.2): a GRU encoder state, a Bahdanau weight, the dot-product and additive contrast.
# The encoder–decoder's trace is no part of Why attention's view (a first visit's view is stored): ``parts`` runs
# it when a first cell is asked for (``views.seq2seq_parts``, cached), never at a page's run.


def explain_gru(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """An encoder state's entry: the GRU step h_t[k] = (1 − z)·n + z·h_{t−1}[k], its gates at unit k."""
    t, k, g = d.row + 1, d.col, d.details
    before = "zeros (nothing read yet)" if d.row == 0 else f"h_{t - 1}, the state after token {t - 1}"
    words = (
        f"`encoder_states[{d.row}, {k}]` is unit {k} of h_{t}, the GRU's {term('hidden_state', 'hidden state')} "
        f"after reading token x^({t}) {_token(row_label)}. It starts from {before}. The update "
        f"{term('gates', 'gate')} z decides how much of the old state to keep; the candidate n is what the new "
        "token suggests."
    )
    lines = [
        f"r = σ(W_ir x + b_ir + W_hr h + b_hr)[{k}] = {g['r']:.4f}  (reset gate)",
        f"z = σ(W_iz x + b_iz + W_hz h + b_hz)[{k}] = {g['z']:.4f}  (update gate)",
        f"n = tanh({number(g['input_n'])} + {g['r']:.4f}·{factor(g['hidden_n'])}) = {number(g['n'])}  (candidate)",
        f"h_{t}[{k}] = (1 − z)·n + z·h_{t - 1}[{k}] = {factor(1 - g['z'])}·{factor(g['n'])} + "
        f"{factor(g['z'])}·{factor(g['h_prev'])} = {number(d.terms[0].value)} + {number(d.terms[1].value)} "
        f"= {number(d.value)}",
    ]
    return words, "\n".join(lines)


def encoder_states(parts: Callable, pieces, dims, *, code: str, notation: Notation) -> Cells:
    """``encoder_states``, (T, hidden) GRU steps of the encoder–decoder whose (trace, weights) ``parts()`` returns."""

    def derive(row: int, col: int):
        return attention.derivations.encoder_state(*parts(), row, col)

    return Cells(derive, notation, code, tuple(pieces), tuple(dims), rows="token", cols="unit", words=explain_gru)


def explain_bahdanau(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A Bahdanau weight α_ij: the softmax over the encoder tokens of the additive scores e_ij, in the
    untrained encoder–decoder, or (``details["model"]``) in the reversal model's alignment."""
    i, j, e = d.row + 1, d.col + 1, d.details["score"]
    score = f"e_{sub(d.row, d.col)} = Σ_k v_a[k]·tanh(W_a s + U_a h_{j})[k] = {_sum(e)} = {number(e.value)}"
    if "model" in d.details:
        words = (
            f"The {d.details['model']} model's α_{sub(d.row, d.col)}: how much output step {i}, which must write "
            f"{_token(row_label)}, reads input token x^({j}) {_token(keys[d.col])}. It is the {term('softmax')} over "
            f"the input tokens of e_ij = v_aᵀ tanh(W_a s + U_a h_j). Here s is the decoder's state before step {i}, "
            f"h_j the encoder's state at input token j (both directions), and the sum runs over v_a's "
            f"{e.details['attention_size']} entries."
        )
    else:
        state = "the encoder's final state" if d.row == 0 else f"s_{d.row}, the decoder's state after step {d.row}"
        words = (
            f"`bahdanau_weights[{d.row}, {d.col}]` is α_{sub(d.row, d.col)}: how much decoder step {i} reads the "
            f"encoder's state h_{j} after token x^({j}) {_token(col_label)}. It is the {term('softmax')} over the "
            f"encoder tokens of the scores e_ij = v_aᵀ tanh(W_a s + U_a h_j). That is a small network "
            f"({term('bahdanau')}), not a dot product. Here s, the decoder's state before step {i}, is {state}."
        )
    return words, "\n".join([score, *_softmax_lines(d, keys)])


def bahdanau(parts: Callable, steps, pieces, *, code: str, notation: Notation) -> Cells:
    """``bahdanau_weights`` (decoder steps, encoder tokens) of the encoder–decoder whose ``parts()`` are given."""

    def derive(row: int, col: int):
        trace, weights = parts()
        found = attention.derivations.bahdanau_weight(trace, row, col)
        score = attention.derivations.bahdanau_score(trace, weights, row, col)
        return replace(found, details={**found.details, "score": score})

    return Cells(derive, notation, code, tuple(steps), tuple(pieces), rows="step", cols="key",
                 words=explain_bahdanau)  # fmt: skip


def reversal(ids, written, pieces, *, code: str, notation: Notation) -> Cells:
    """The untrained and the trained reversal model's Bahdanau weights side by side, on token ``ids``: rows
    are the output steps (the token each must ``written``), panel k's input j is column k · T + j."""
    count = len(pieces)

    def derive(row: int, col: int):
        trained = col >= count
        from attention.before_chapter.reversal import untrained_reversal

        model = attention.load_reversal(True) if trained else untrained_reversal()
        found = attention.derivations.reversal_weight(model, list(ids), row, col % count)
        return replace(found, details={**found.details, "model": "trained" if trained else "untrained"})

    labels = tuple(f"{name} · input {j + 1}: {pieces[j]}" for name in ("untrained", "trained") for j in range(count))
    return Cells(derive, notation, code, tuple(written), labels, rows="step", cols="model · input",
                 keys=tuple(pieces), words=explain_bahdanau)  # fmt: skip


def explain_contrast(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """The contrast's weights: the same softmax over ω_ij = x^(i)·x^(j), or over an additive score."""
    i, j, s = d.row + 1, d.col + 1, d.details["score"]
    where = f"The weight α_{sub(d.row, d.col)} of query x^({i}) {_token(row_label)} on key x^({j}) {_token(col_label)}"
    if s.kind == "additive_score":
        words = (
            f"{where}, softmax of an additive score: v_aᵀ tanh(W_a x^({i}) + U_a x^({j})), with untrained W_a, U_a "
            f"and v_a of {s.details['attention_size']} entries. The score is a sum over v_a's entries, not over x's."
        )
        score = f"e_{sub(d.row, d.col)} = Σ_k v_a[k]·tanh(W_a x^({i}) + U_a x^({j}))[k] = {_sum(s)}"
    else:
        words = (
            f"{where}, softmax of a {term('dot_product', 'dot product')}: ω_{sub(d.row, d.col)} = x^({i})·x^({j}), "
            "as in section 3.3, no parameters at all."
        )
        score = f"ω_{sub(d.row, d.col)} = x^({i})·x^({j}) = {_sum(s)}"
    return words, "\n".join([f"{score} = {number(s.value)}", *_softmax_lines(d, keys)])


def contrast(inputs, seed: int, pieces, *, additive: bool, code: str, notation: Notation) -> Cells:
    """The self-attention contrast: softmax of x·xᵀ, or of the additive scores of ``contrast_weights``."""
    x = _f64(inputs)

    def score(row: int, col: int):
        if additive:
            return attention.derivations.contrast_score(x, row, col, seed=seed)
        return attention.derivations.score(x, x, row, col)

    def derive(row: int, col: int):
        row_scores = [score(row, j).value for j in range(len(pieces))]
        found = attention.derivations.weight(row_scores, col, row=row, subtract_max=False)
        return replace(found, details={**found.details, "score": score(row, col)})

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces), words=explain_contrast)


# Tokens & embeddings: an input embedding's number, which no arithmetic made.


def explain_embedding(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """An input embedding's number: read from a table, made by no sum."""
    where, source = d.details["where"], d.details["source"]
    words = (
        f"`inputs[{d.row}, {d.col}]`, entry {d.col} of x^({d.row + 1}), the {term('embedding')} of token "
        f"{_token(row_label)} (id {d.details['id']}). {source}"
    )
    return words, f"x^({d.row + 1})[{d.col}] = {where} = {number(d.value)}"


def embeddings(inputs, ids, pieces, settings, *, code: str, notation: Notation) -> Cells:
    """The input matrix under ``settings``: numbers of a table (the book's, a seeded draw, a model's), no sum."""
    cols = dims(np.shape(inputs)[1])

    def derive(row: int, col: int):
        value, token = float(inputs[row, col]), int(ids[row])
        if settings.weights != "random":
            where = f"layer {settings.layer}'s input"
            below = f", then through the {settings.layer - 1} block(s) below" if settings.layer > 1 else ""
            source = (
                f"The trained model made it, in steps not written out here: row {token} of its token embedding plus "
                f"row {row} of its position embedding (x^({row + 1}); Python counts from 0){below}, then layer "
                f"{settings.layer}'s `norm1`, a LayerNorm."
            )
        elif settings.source == "book":
            where = f"inputs[{row}][{col}]"
            source = "No arithmetic made it: it is one of the book's six hand-picked vectors, as section 3.3 prints."
        else:
            where = f"token_vector({token}, d_in={len(cols)}, seed={settings.seed})[{col}]"
            source = (
                f"No arithmetic made it: it is a random number drawn by a generator seeded by (seed "
                f"{settings.seed}, id {token})."
            )
        found = attention.derivations.Term(0, (value,), value)
        details = {"where": where, "source": source, "id": token}
        return attention.derivations.Derivation("parameter", row, col, (found,), value, value, details)

    return Cells(derive, notation, code, tuple(pieces), cols, rows="token", cols="dim", words=explain_embedding)


# Generate: a trained model's recorded weights, a key the KV cache kept, a causal or sliding-window mask.


def explain_recorded(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A trained model's weight as generation recorded it (``details["model"]`` made it), and its row's sum."""
    g, j = d.details, d.col + 1
    if d.col >= g["seen"]:
        words = f"Key x^({j}) {_token(col_label)} comes after this query, so the causal mask hides it: no weight."
        return words, f"key {j}: masked"
    model = sentence_start(g["model"])
    words = (
        f"Layer {g['layer'] + 1}, head {g['head'] + 1}: the {term('attention_weights', 'attention weight')} of the "
        f"query at token {g['query'] + 1} {_token(g['piece'])} on key x^({j}) {_token(col_label)}. {model} "
        f"made it as the softmax of q·k/√{term('d_k')} over the {g['seen']} tokens so far. Generation records "
        "attention weights, not scores, so the panel shows this weight's whole row instead: its weights add up to 1."
    )
    more = [f"… ({len(d.terms)})"] if len(d.terms) > ROW_TERMS else []
    parts = [number(t.value) for t in d.terms[:ROW_TERMS]] + more
    return words, f"row: {' + '.join(parts)} = {number(d.total)}\nα_{sub(g['query'], d.col)} = {number(d.value)}"


def recorded_weights(
    rows, row_labels, pieces, *, layer: int, head: int, first_query: int, model: str, code: str, notation: Notation
) -> Cells:
    """Generate's query rows: the weights of ``model`` as its step recorded them (no scores were kept), so a cell shows
    its row, which adds up to 1; NaN marks a key not yet seen."""

    def derive(row: int, col: int):
        seen = ~np.isnan(rows[row])
        terms = tuple(attention.derivations.Term(j, (float(w),), float(w)) for j, w in enumerate(rows[row][seen]))
        details = {"layer": layer, "head": head, "query": first_query + row, "seen": int(seen.sum())}
        details |= {"model": model, "piece": row_labels[row]}
        total = sum(t.value for t in terms)
        return attention.derivations.Derivation("recorded", row, col, terms, total, float(rows[row, col]), details)

    queries = tuple(f"{first_query + r + 1}: {visible_token(p)}" for r, p in enumerate(row_labels))  # token numbers
    return Cells(derive, notation, code, queries, tuple(pieces), rows="query token", words=explain_recorded)


def _agreement(difference: float) -> str:
    if difference == 0:
        return "The two are the same float32 number."
    if difference < 5e-5:
        return f"They differ by {difference:.1e}, far below the 4 decimals shown: float32 rounding, not another key."
    return f"They differ by {difference:.1e}, more than rounding: the cache does not hold the recomputed key."


def explain_cached_key(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A key's entry as the KV cache kept it, beside the same entry recomputed from the whole text: why they agree."""
    g, j, c, layer = d.details, d.row + 1, d.col, d.details["layer"] + 1
    index = f"0, {g['head']}, {d.row}, {c}"
    if g["shown"] == "cached":
        where = f"`cache.keys[{index}]`"
        kept = (
            "The KV cache keeps every token's keys and values between steps (`torch.cat` appends each new "
            f"token's), and has held this one since token {j} was read."
        )
    else:
        where = f"`keys[{index}]`"
        kept = "Here it is made again in one pass over the whole text, without the cache; the cached panel kept it."
    mask = term("causal_mask")
    if layer == 1:
        why = (
            f"In layer 1 that row is made from token {j}'s embedding and position alone; in later layers the "
            f"{mask} keeps later tokens out of it."
        )
    else:
        before = "token 1" if j == 1 else f"tokens 1 to {j}"
        why = f"That row comes from the layers below, where the {mask} let token {j} see only {before}."
    words = (
        f"{where} (Python counts from 0): entry {c} of k^({j}), the {term('query_key_value', 'key')} of token {j} "
        f"{_token(row_label)} (index {d.row}) in layer {layer}, head {g['head'] + 1}. {kept} Both come from "
        f"`keys = self.W_key(x)` on x^({j}), token {j}'s own row of the layer's input. {why} So tokens added "
        f"later never change it: that is why caching works. {_agreement(d.total)}"
    )
    lines = [f"recomputed k^({j})[{c}] = {number(g['recomputed'])}  (one pass over the whole text)"]
    lines.append(f"cached     k^({j})[{c}] = {number(g['cached'])}  (kept since token {j} was read)")
    if g["shown"] == "recomputed":  # this panel's number last
        lines.reverse()
    difference = "0" if d.total == 0 else f"{d.total:.1e}"
    return words, "\n".join([*lines, f"|cached − recomputed| = {difference}"])


def cached_keys(
    cache_keys, recomputed_keys, layer: int, head: int, pieces, *, shown: str, code: str, notation: Notation
) -> Cells:
    """Generate's cache step: token j's key as the cache kept it (``shown`` "cached") or as the whole text makes it
    again ("recomputed"), from (n_layers, n_heads, T, head_dim) keys; rows are tokens, columns the head's dimensions."""
    derive = functools.partial(attention.derivations.cache_entry, cache_keys, recomputed_keys, layer, head, shown=shown)
    return Cells(derive, notation, code, tuple(pieces), dims(cache_keys.shape[-1]), rows="token", cols="dim",
                 words=explain_cached_key)  # fmt: skip


def explain_window_mask(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A causal or sliding-window mask's entry: 1 (masked) or 0 (visible), and the rule that decided it."""
    i, j, g = d.row + 1, d.col + 1, d.details
    w, size = g["window"], len(keys)
    call = f"sliding_window_mask({size}, {w})"
    words = [
        f"`{call}[{d.row}, {d.col}]` (Python counts from 0): may query x^({i}) {_token(row_label)} look at key "
        f"x^({j}) {_token(col_label)}?",
        f"The {term('causal_mask')} hides a future key, j > i: "
        + (f"{j} > {i}, so this key is hidden." if g["future"] else f"{j} ≤ {i}, so it is not in the future."),
    ]
    lines = [f"mask = {call}", f"future key?     j > i: {j} > {i} → {'yes' if g['future'] else 'no'}"]
    if w is not None:
        back = f"i − j = {i} − {j} = {g['back']}".replace("-", "−")
        words.append(
            f"A sliding window of w = {w} also hides keys w or more tokens back, i − j ≥ w: here {back}"
            + (f" ≥ {w}, too far back." if g["too_far"] else f" < {w}.")
        )
        lines.append(f"w or more back? i − j ≥ w: {i} − {j} = {g['back']} ≥ {w} → {'yes' if g['too_far'] else 'no'}")
    if d.value:
        words.append(
            f"So the entry is 1, masked: `masked_fill` makes the score −∞, and its "
            f"{term('attention_weights', 'attention weight')} is 0."
        )
    else:
        words.append("So the entry is 0, visible: the query's softmax weighs this key.")
    lines.append(f"mask[{d.row}, {d.col}] = {d.value:.0f}  " + ("(masked: score → −∞)" if d.value else "(visible)"))
    return " ".join(words), "\n".join(lines).replace("= -", "= −")


def window_mask(num_tokens: int, window: int | None, pieces, *, code: str, notation: Notation) -> Cells:
    """Generate's causal mask (``window`` None) or sliding window's (``attention.sliding_window_mask``)."""
    derive = functools.partial(attention.derivations.window_mask_entry, num_tokens, window)  # (row, col)
    return Cells(derive, notation, code, tuple(pieces), tuple(pieces), words=explain_window_mask)
