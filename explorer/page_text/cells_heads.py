"""The cell panel's words for section 3.6 and the Break it page (issue 25): a head's weight, a merged
column traced to its head, ``out_proj``'s mix of the heads, and a mistake's cell beside the right one.

Each function has ``page_text.cells.explain``'s signature, (derivation, notation, row label, column label,
keys) → (Markdown, the sum), so a ``explorer.cells.Cells`` can take it as its ``words``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from explorer.parsing import literal

from .cells import DOT_TERMS, ROW_TERMS, Notation, _token, explain, factor, number, sub
from .glossary import term

if TYPE_CHECKING:
    from attention.derivations import Derivation


def head_weight(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A cell of a grid of heads: the weight (or dropped weight) of head ``details["head"]``, written as
    ``attn_weights[h, i, j]``; the column's token is the key's (``keys[j]``), not the grid's label."""
    head = d.details["head"]
    words, sums = explain(d, replace(n, item=head), row_label, keys[d.col], keys)
    return f"Head {head + 1} of {d.details['num_heads']}. " + words, sums


def _at(n: Notation, d: Derivation) -> str:
    """The cell's index as the code writes it: ``row, col``, or ``item, row, col`` for a batch item."""
    return f"{d.row}, {d.col}" if n.item is None else f"{n.item}, {d.row}, {d.col}"


def _terms(d: Derivation, shown: int) -> str:
    parts = ["·".join(factor(f) for f in t.factors) for t in d.terms[:shown]]
    more = f" + … ({len(d.terms)} in all)" if len(d.terms) > shown else ""
    return " + ".join(parts) + more


def merged(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A column of the heads side by side (``merge``): which head and column it came from, then that
    head's weighted sum Σ_j α_ij · v^(j)[c']."""
    h, c, head_dim = d.details["head"], d.details["head_col"], d.details["head_dim"]
    i, columns = d.row + 1, "1 column" if head_dim == 1 else f"{head_dim} columns"
    words = (
        f"`{n.matrix}[{_at(n, d)}]` (Python counts from 0) belongs to head {h + 1}. The "
        f"{term('num_heads', 'heads')}' context vectors sit side by side, {columns} each, so column "
        f"{d.col} = (head {h + 1} − 1) · {head_dim} + {c}. It is entry {c} of head {h + 1}'s "
        f"{term('context_vector', 'context vector')} z^({i}) for query x^({i}) {_token(row_label)}. That head made "
        f"it as every token's value v^(j)[{c}] times its weight α_{i}j, added up."
    )
    line = f"head {h + 1}: z^({i})[{c}] = {_terms(d, ROW_TERMS)} = {number(d.value)}"
    return words, f"column {d.col} = head {h + 1}, its column {c}\n{line}"


def mixed(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """``out_proj``'s output: every merged column times a row of ``out_proj.weight``, grouped by head, each
    head's subtotal, then the bias: here the heads mix."""
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
        lines.append(f"head {h + 1} ({span}): ")
        lines[-1] += f"{_terms(own, DOT_TERMS)} = {number(subtotal)}"
    totals = " + ".join(factor(t) for t in d.details["head_totals"])
    lines.append(f"output = {totals} + bias {factor(d.details['bias'])} = {number(d.value)}")
    return words, "\n".join(lines)


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
    "merge_without_transpose": "nothing yet: the changed line comes after the weights",
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
        f"ω_{sub(d.row, d.col)} = {_terms(score, DOT_TERMS)} = {number(score.total)}",
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


def mistake(pair, n: Notation, row_label: str, col_label: str, keys: Sequence[str], *, name: str = "", title=""):
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
