"""How one number was made, in the book's notation: the words of the cell panel (issue 25).

``explain`` writes an ``attention.derivations.Derivation`` out for a learner: a sentence or two saying
what the cell is (query x^(i) counted from 1 as the book counts, Python's index beside it), and the
sum with the numbers on screen, term by term. A ``Notation`` says how the book writes the matrix.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from explorer.figures.labels import visible_token
from explorer.parsing import literal

from .glossary import term

if TYPE_CHECKING:
    from attention.derivations import Derivation

DOT_TERMS = 8  # terms of a dot product written out; the rest are counted
ROW_TERMS = 12  # keys of a softmax row or a weighted sum written out


@dataclass(frozen=True)
class Notation:
    """How the book writes a matrix's cells.

    ``matrix`` is its name in the code (``attn_scores``); ``left`` and ``right`` are the letters of the
    vectors a score multiplies (q and k, or x and x), or of a context entry's values (v, or x);
    ``scaled`` says a weight's scores were divided by √d_k; ``weight_matrix`` names a projection's
    matrix (``W_query``) and ``left`` its output's letter (q); ``tokens`` says the rows are tokens."""

    matrix: str
    left: str = "q"
    right: str = "k"
    scaled: bool = False
    weight_matrix: str = ""
    tokens: bool = True
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


def _token(piece: str) -> str:
    return "“" + literal(visible_token(piece)) + "”"


def _sum(parts: Sequence[str], count: int, shown: int, unit: str) -> str:
    """``parts`` joined by " + ", the first ``shown`` of them, then how many there are in all."""
    written = " + ".join(parts[:shown])
    return written + (f" + … ({count} {unit} in all)" if count > shown else "")


def _products(derivation: Derivation, shown: int) -> list[str]:
    return ["·".join(factor(f) for f in t.factors) for t in derivation.terms[:shown]]


def explain(derivation: Derivation, notation: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """The words and the sum for ``derivation``: (Markdown, plain text for a code block).

    ``row_label`` and ``col_label`` are the cell's row and column (token pieces or names such as "dim 0");
    ``keys`` are the row's key tokens, which a softmax row or a weighted sum runs over."""
    d, n = derivation, notation
    i, j = d.row + 1, d.col + 1
    matrix = f"({n.matrix})" if " " in n.matrix else n.matrix  # an expression: its index applies to the whole
    where = f"`{matrix}[{'' if n.item is None else f'{n.item}, '}{d.row}, {d.col}]`"
    query = f"x^({i}) {_token(row_label)}" if n.tokens else literal(row_label)
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
        sum_text = f"ω_{sub(d.row, d.col)} = " + _sum(_products(d, DOT_TERMS), dims, DOT_TERMS, "terms")
        lines = [f"{sum_text} = {number(d.total)}"]
        if d.details.get("masked"):
            words += f" Key {j} comes after query {i}, so `masked_fill` replaces the score by −∞."
            lines.append(f"masked: ω_{sub(d.row, d.col)} → −∞")
        if kind == "scaled_score":
            d_k = d.details["d_k"]
            words += f" Here d_k = `keys.shape[-1]` = {d_k}."
            lines.append(f"ω_{sub(d.row, d.col)} / √{d_k} = {number(d.total)} / {d.details['sqrt_d_k']:.4f}")
            lines[-1] += f" = {number(d.value)}"
        return words, "\n".join(lines)
    if kind == "weight":
        return _weight(d, n, where, query, key, keys)
    if kind == "dropped_weight":
        p, scale = d.details["p"], d.details["scale"]
        weight = d.terms[0].factors[0]
        fate = "kept" if d.details["kept"] else "dropped"
        words = (
            f"{where}: the causal weight α_{sub(d.row, d.col)} of query {query} and {key}, "
            f"{fate} by this {term('dropout')} draw. Survivors are scaled by 1/(1 − p), so each row's expected sum "
            "stays 1."
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
        parts = [number(t.value) for t in d.terms]
        total = _sum(parts, len(parts), ROW_TERMS, "keys")
        return words, f"{number(d.terms[d.col].value)} / ({total}) = {number(d.terms[d.col].value)} / " + (
            f"{number(d.total)} = {number(d.value)}"
        )
    if kind in ("context", "projection"):
        return _weighted(d, n, where, query, col_label)
    raise ValueError(f"no words for a {kind!r} cell")


def _weight(d: Derivation, n: Notation, where: str, query: str, key: str, keys: Sequence[str]):
    """A softmax weight: its exp over the row's sum of exps, the row's terms listed."""
    s = "ω" + ("/√d_k" if n.scaled else "")
    shift = d.details["subtract_max"] and d.details["row_max"] != 0
    words = (
        f"{where} is the {term('attention_weights', 'attention weight')} α_{sub(d.row, d.col)} of query {query} on "
        f"{key}: the {term('softmax')} of row {d.row + 1}'s scores {s}, exp of this one over the "
        "sum of the row's exps."
    )
    if any(t.masked for t in d.terms):
        words += " A masked key's score is −∞, and exp(−∞) = 0."
    if shift:
        words += (
            f" The row's largest score, {number(d.details['row_max'])}, is subtracted first, as `torch.softmax` does."
        )
    minus = f" − {factor(d.details['row_max'])}" if shift else ""
    lines = []
    for t in d.terms[:ROW_TERMS]:
        what = "exp(−∞) = 0" if t.masked else f"exp({number(t.factors[0])}{minus}) = {number(t.value)}"
        lines.append(f"key {t.index + 1} {visible_token(keys[t.index])}: {what}")
    if len(d.terms) > ROW_TERMS:
        lines.append(f"… ({len(d.terms)} keys in all)")
    mine = d.terms[d.col]
    lines.append(f"α_{sub(d.row, d.col)} = {number(mine.value)} / {number(d.total)} = {number(d.value)}")
    return words, "\n".join(lines)


def _weighted(d: Derivation, n: Notation, where: str, query: str, col_label: str):
    """A context-vector entry Σ_j α_ij · v^(j)[c], or a projection's x^(i) · W[:, c] (+ b)."""
    c = literal(col_label)
    if d.kind == "context":
        words = (
            f"{where} is entry {c} of the {term('context_vector', 'context vector')} z^({d.row + 1}) of query "
            f"{query}: every token's {n.right}^(j) entry {c}, times the weight α_{d.row + 1}j, added up."
        )
        parts = _products(d, ROW_TERMS)
        line = f"z^({d.row + 1})[{d.col}] = " + _sum(parts, len(d.terms), ROW_TERMS, "tokens")
        return words, f"{line} = {number(d.value)}"
    bias = d.details.get("bias")
    words = (
        f"{where} is entry {c} of {n.left}^({d.row + 1}), the projection of {query}: its {d.details['d']} entries "
        f"times column {d.col} of `{n.weight_matrix}`, added up" + (", plus the bias." if bias is not None else ".")
    )
    line = f"{n.left}^({d.row + 1})[{d.col}] = " + _sum(_products(d, DOT_TERMS), d.details["d"], DOT_TERMS, "terms")
    if bias is not None:
        line += f" + {factor(bias)}"
    return words, f"{line} = {number(d.value)}"
