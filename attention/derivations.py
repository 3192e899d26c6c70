"""Where one number came from: a cell of a chapter-3 matrix written out term by term.

The chapter teaches by writing single numbers out in full: ω_21 = x^(2) · x^(1) (section 3.3.1), the
softmax of one row, z^(2) as a weighted sum of value vectors. Each function here does that for any cell,
from the tensors a trace holds, and returns a ``Derivation``: the terms, their sum, and the value they
make. The explorer's cell panel writes it out (``explorer.page_text.cells``); tests check every term
against the package's own computation.

Indices count from 0, as Python does; the explorer shows them from 1, as the book does (x^(1) is
``inputs[0]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Term:
    """One term of a sum: ``factors`` multiplied give ``value`` (one factor: the value itself).

    ``index`` is the term's position in the sum (a dimension for a dot product, a key for a softmax
    row or a weighted sum). ``masked`` marks a key the causal mask hides (its exp is exp(−∞) = 0)."""

    index: int
    factors: tuple[float, ...]
    value: float
    masked: bool = False


@dataclass(frozen=True)
class Derivation:
    """How the cell (``row``, ``col``) of a ``kind`` of matrix was made.

    ``terms`` are added up to ``total``; ``value`` is what the total becomes after the kind's last step
    (÷ √d_k for a scaled score, ÷ the row's sum of exps for a weight, × 1/(1 − p) for a dropped weight),
    equal to the cell on screen. ``details`` names the numbers that last step used (``d_k``,
    ``row_max``, ``exp_sum``, ``p``, ``kept``, ``bias``, ``head``, ...).
    """

    kind: str
    row: int
    col: int
    terms: tuple[Term, ...]
    total: float
    value: float
    details: dict = field(default_factory=dict)


def _vector(x) -> torch.Tensor:
    """A 1-d float64 tensor of ``x``'s numbers (the sums are written in float64, then compared to float32)."""
    return torch.as_tensor(x).detach().to(torch.float64).reshape(-1)


def _matrix(x) -> torch.Tensor:
    matrix = torch.as_tensor(x).detach().to(torch.float64)
    if matrix.dim() != 2:
        raise ValueError(f"expected a matrix, got a tensor of shape {tuple(matrix.shape)}")
    return matrix


def _check(index: int, size: int, name: str) -> int:
    if not 0 <= index < size:
        raise ValueError(f"{name} {index} is out of range: there are {size}")
    return index


def dot_product(left, right, *, kind: str = "score", row: int = 0, col: int = 0) -> Derivation:
    """``left · right`` term by term: Σ_d left[d] · right[d] (ω_ij = q^(i) · k^(j), or x^(i) · x^(j))."""
    left, right = _vector(left), _vector(right)
    if left.shape != right.shape:
        raise ValueError(f"a dot product needs two vectors of one length, got {left.numel()} and {right.numel()}")
    products = left * right  # (d,)
    terms = tuple(
        Term(d, (float(a), float(b)), float(p)) for d, (a, b, p) in enumerate(zip(left, right, products, strict=True))
    )
    total = float(products.sum())
    return Derivation(kind, row, col, terms, total, total, {"d": left.numel()})


def score(queries, keys, row: int, col: int, *, scaled: bool = False) -> Derivation:
    """The score ω_ij = q^(i) · k^(j) (``queries[row] · keys[col]``), and with ``scaled`` ÷ √d_k as well,
    d_k = ``keys.shape[-1]`` (the book's ``keys.shape[-1]**0.5``).

    Shapes: queries (num_tokens, d), keys (num_tokens, d)."""
    queries, keys = _matrix(queries), _matrix(keys)
    _check(row, queries.shape[0], "query")
    _check(col, keys.shape[0], "key")
    found = dot_product(queries[row], keys[col], kind="scaled_score" if scaled else "score", row=row, col=col)
    if not scaled:
        return found
    d_k = keys.shape[-1]
    details = {"d": d_k, "d_k": d_k, "sqrt_d_k": math.sqrt(d_k)}
    return Derivation(found.kind, row, col, found.terms, found.total, found.total / math.sqrt(d_k), details)


def weight(scores_row, col: int, *, row: int = 0, masked=None, subtract_max: bool = True) -> Derivation:
    """The softmax weight α_ij = exp(s_ij) / Σ_j' exp(s_ij') of one row of (already scaled) scores.

    ``masked`` (bools, True = hidden) marks keys whose score is −∞: their exp is 0. With ``subtract_max``
    the row's largest score is subtracted first, as ``torch.softmax`` does; the weight is the same.
    Each term is one key's exp; ``total`` is the row's sum of exps.

    Shapes: scores_row (num_tokens,), masked (num_tokens,) or None."""
    scores = _vector(scores_row)
    _check(col, scores.numel(), "key")
    hidden = torch.zeros_like(scores, dtype=torch.bool) if masked is None else torch.as_tensor(masked).reshape(-1)
    hidden = hidden | torch.isneginf(scores)
    if bool(hidden.all()):
        raise ValueError("every key of this row is masked: its softmax is undefined")
    shown = scores.masked_fill(hidden, -math.inf)  # (num_tokens,)
    row_max = float(shown.max()) if subtract_max else 0.0
    exps = torch.exp(shown - row_max)  # (num_tokens,), exp(−∞) = 0
    terms = tuple(
        Term(j, (float(s),), float(e), bool(h)) for j, (s, e, h) in enumerate(zip(shown, exps, hidden, strict=True))
    )
    exp_sum = float(exps.sum())
    details = {"row_max": row_max, "exp_sum": exp_sum, "numerator": float(exps[col]), "subtract_max": subtract_max}
    return Derivation("weight", row, col, terms, exp_sum, float(exps[col]) / exp_sum, details)


def masked_weight(weight_value: float, keep: float, *, row: int = 0, col: int = 0) -> Derivation:
    """The book's first causal route, one cell of ``masked_simple = attn_weights * mask_simple``: the weight
    times the lower-triangular mask's 1 (kept) or 0 (a future key)."""
    value = float(weight_value) * float(keep)
    term = Term(0, (float(weight_value), float(keep)), value, masked=not keep)
    return Derivation("masked_weight", row, col, (term,), value, value, {"kept": bool(keep)})


def renormalized(masked_row, col: int, *, row: int = 0, masked=None) -> Derivation:
    """``masked_simple_norm = masked_simple / row_sums``: one entry of a masked row over the row's sum, so
    the row sums to 1 again. Each term is one key's masked weight (``masked``, True = a future key, marks
    those the mask zeroed); ``total`` is the row sum.

    Shapes: masked_row (num_tokens,), masked (num_tokens,) or None."""
    entries = _vector(masked_row)
    _check(col, entries.numel(), "key")
    hidden = [False] * entries.numel() if masked is None else [bool(h) for h in torch.as_tensor(masked).reshape(-1)]
    terms = tuple(Term(j, (float(e),), float(e), h) for j, (e, h) in enumerate(zip(entries, hidden, strict=True)))
    row_sum = float(entries.sum())
    if row_sum == 0:
        raise ValueError("this row's masked weights sum to 0: it cannot be renormalized")
    return Derivation("renormalized", row, col, terms, row_sum, float(entries[col]) / row_sum, {"row_sum": row_sum})


def dropped_weight(weight_value: float, kept: bool, p: float, *, row: int = 0, col: int = 0) -> Derivation:
    """A weight after dropout: kept ones × 1/(1 − p), dropped ones 0 (``nn.Dropout`` in training mode)."""
    if not 0 <= p < 1:
        raise ValueError(f"the dropout rate p must be in [0, 1), got {p}")
    scale = 1.0 / (1.0 - p)
    value = float(weight_value) * scale if kept else 0.0
    term = Term(0, (float(weight_value), scale if kept else 0.0), value)
    return Derivation("dropped_weight", row, col, (term,), value, value, {"p": p, "kept": bool(kept), "scale": scale})


def weighted_sum(weights_row, values, col: int, *, row: int = 0, kind: str = "context") -> Derivation:
    """A context-vector entry z_i[c] = Σ_j α_ij · v^(j)[c]: row ``row`` of the weights times column ``col``
    of the values, one term per key.

    Shapes: weights_row (num_tokens,), values (num_tokens, d)."""
    weights, values = _vector(weights_row), _matrix(values)
    if weights.numel() != values.shape[0]:
        raise ValueError(f"{weights.numel()} weights for {values.shape[0]} value vectors")
    _check(col, values.shape[1], "column")
    column = values[:, col]  # (num_tokens,)
    products = weights * column  # (num_tokens,)
    rows = zip(weights.tolist(), column.tolist(), products.tolist(), strict=True)
    terms = tuple(Term(j, (a, v), p) for j, (a, v, p) in enumerate(rows))
    total = float(products.sum())
    return Derivation(kind, row, col, terms, total, total, {"d": values.shape[1]})


def projection(x_row, weight_matrix, col: int, *, bias=None, row: int = 0, kind: str = "projection") -> Derivation:
    """An entry of ``x @ W`` (+ ``b``): the token's input row times the matrix's column ``col``.

    ``weight_matrix`` is (d_in, d_out), as the book's ``W_query`` in ``SelfAttention_v1``; for an
    ``nn.Linear`` pass ``linear.weight.T``. ``bias`` (d_out,) adds ``bias[col]`` after the sum.

    Shapes: x_row (d_in,), weight_matrix (d_in, d_out), bias (d_out,) or None."""
    x, weights = _vector(x_row), _matrix(weight_matrix)
    if x.numel() != weights.shape[0]:
        raise ValueError(f"an input row of {x.numel()} numbers for a matrix with {weights.shape[0]} rows")
    _check(col, weights.shape[1], "column")
    found = dot_product(x, weights[:, col], kind=kind, row=row, col=col)
    if bias is None:
        return found
    b = float(_vector(bias)[col])
    details = {**found.details, "bias": b}
    return Derivation(kind, row, col, found.terms, found.total, found.total + b, details)
