"""Where one number came from: a cell of a chapter-3 matrix written out term by term.

The chapter teaches by writing single numbers out in full: ω_21 = x^(2) · x^(1) (section 3.3.1), the
softmax of one row, z^(2) as a weighted sum of value vectors. Each function here does that for any cell,
from the tensors a trace holds, and returns a ``Derivation``: the terms, their sum, and the value they
make. The kinds, in the file's order: scores, weights, dropout, context entries and projections
(sections 3.3–3.5); multi-head attention's merged columns and ``out_proj``'s mix of the heads (3.6);
the RNN encoder–decoder's GRU states and Bahdanau's additive scores (3.1–3.2, the problem attention
solves); for the Break it page, a mistake's cell beside the right one; and, after the chapter (the Generate
page), a cached key beside the same key recomputed, and a sliding window's mask. The cell panel, the app's and
the notebook's, writes it out (``attention.prose.cells``); tests check every term against the package's own computation.

Indices count from 0, as Python does; the explorer shows them from 1, as the book does (x^(1) is
``inputs[0]``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

import torch

from .after_chapter.kv_cache import check_window
from .before_chapter.bahdanau import additive_scores, contrast_weights
from .before_chapter.reversal import ReversalSeq2Seq, reversal_symbols
from .mistake_steps import RIGHT, Steps
from .mistakes import MistakeRun
from .multihead import MultiHeadAttention


@dataclass(frozen=True)
class Term:
    """One term of a sum: ``factors`` multiplied give ``value`` (one factor: the value itself), except in a
    softmax row, whose one factor is a key's score and whose value is exp(score − the row's largest score).

    ``index`` is the term's position in the sum (a dimension for a dot product, a key for a softmax
    row or a weighted sum). ``masked`` marks a key the causal mask hides (its exp is exp(−∞) = 0).
    ``head`` is the head a term's number came from, where a sum reads several heads (``out_proj``)."""

    index: int
    factors: tuple[float, ...]
    value: float
    masked: bool = False
    head: int | None = None


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
    rows = zip(left.tolist(), right.tolist(), products.tolist(), strict=True)  # Python floats: one term each
    terms = tuple(Term(d, (a, b), p) for d, (a, b, p) in enumerate(rows))
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
    rows = zip(shown.tolist(), exps.tolist(), hidden.tolist(), strict=True)
    terms = tuple(Term(j, (s,), e, h) for j, (s, e, h) in enumerate(rows))
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
    terms = tuple(Term(j, (e,), e, h) for j, (e, h) in enumerate(zip(entries.tolist(), hidden, strict=True)))
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


# Multi-head attention (section 3.6): where a merged column came from, and out_proj's mix.


def _head_column(col: int, num_heads: int, head_dim: int) -> tuple[int, int]:
    """Column ``col`` of the merged heads → (head h, column c' within the head): col = h · head_dim + c'."""
    _check(col, num_heads * head_dim, "column")
    return divmod(col, head_dim)


def _heads(weights, values) -> tuple[torch.Tensor, torch.Tensor]:
    weights, values = torch.as_tensor(weights).detach(), torch.as_tensor(values).detach()
    if weights.dim() != 3 or values.dim() != 3:
        raise ValueError(
            "expected one matrix per head: weights (num_heads, num_tokens, num_tokens) and values "
            f"(num_heads, num_tokens, head_dim), got {tuple(weights.shape)} and {tuple(values.shape)}"
        )
    if weights.shape[0] != values.shape[0] or weights.shape[1:] != (values.shape[1], values.shape[1]):
        raise ValueError(
            f"weights {tuple(weights.shape)} do not fit values {tuple(values.shape)}: each head needs "
            "(num_tokens, num_tokens) weights for its (num_tokens, head_dim) values"
        )
    return weights, values


def merge(weights, values, row: int, col: int, *, transposed: bool = True) -> Derivation:
    """Section 3.6's merge: entry [row, col] of the heads' concatenated context vectors, traced to the head
    h and column c' it came from and written out as that head's weighted sum Σ_j α^h_ij · v^h_j[c'].

    The chapter merges heads two ways and both put head h's column c' at column h · head_dim + c': the
    wrapper's ``torch.cat([head(x) for head in self.heads], dim=-1)``, and ``MultiHeadAttention``'s
    ``(attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, d_out)``. With
    ``transposed=False`` the merge skips ``transpose(1, 2)``, the mistake ``merge_without_transpose``:
    ``view`` then reads memory head by head, so entry [row, col] is head h, token t, column c' with
    (h · num_tokens + t) · head_dim + c' = row · d_out + col, and t is usually another token than ``row``.

    ``details``: ``head`` (h), ``head_col`` (c'), ``token`` (t, the query row the sum is read from),
    ``num_heads``, ``head_dim``. The terms are the head's weighted sum over keys j (``weighted_sum``).

    Shapes: weights (num_heads, num_tokens, num_tokens), the weights that multiply the values (after
    dropout when it is on); values (num_heads, num_tokens, head_dim); the merged context_vec is
    (num_tokens, num_heads * head_dim).
    """
    weights, values = _heads(weights, values)
    num_heads, num_tokens, head_dim = values.shape
    _check(row, num_tokens, "token")
    head, head_col = _head_column(col, num_heads, head_dim)
    token = row
    if not transposed:
        flat = row * num_heads * head_dim + col  # the entry's place in memory, heads first
        head, token, head_col = flat // (num_tokens * head_dim), flat // head_dim % num_tokens, flat % head_dim
    found = weighted_sum(weights[head, token], values[head], head_col, row=token)  # weights (T,), values (T, hd)
    details = {**found.details, "head": head, "head_col": head_col, "token": token, "num_heads": num_heads}
    details["head_dim"] = head_dim
    return replace(found, kind="merged_context", row=row, col=col, details=details)


def out_projection(context_row, out_weight, col: int, *, num_heads: int, bias=None, row: int = 0) -> Derivation:
    """``MultiHeadAttention``'s last line, ``self.out_proj(context_vec)``: output[row, col] =
    Σ_k context_vec[row, k] · W_out[col, k] + bias[col], the sum running over every head's columns k.

    This is where the heads mix: before ``out_proj`` each column belongs to one head, after it every
    entry reads them all. Each term is tagged with its head (``Term.head`` = k // head_dim), and
    ``details["head_totals"]`` holds each head's subtotal: what each head adds to this entry.
    ``out_weight`` is ``out_proj.weight`` as ``nn.Linear`` stores it, (out_features, in_features).

    Shapes: context_row (d_out,), out_weight (d_out, d_out), bias (d_out,) or None.
    """
    found = projection(context_row, _matrix(out_weight).T, col, bias=bias, row=row, kind="out_proj")
    d_out = len(found.terms)
    if num_heads < 1 or d_out % num_heads:
        raise ValueError(f"{d_out} context columns cannot be split evenly into {num_heads} heads")
    head_dim = d_out // num_heads
    terms = tuple(replace(t, head=t.index // head_dim) for t in found.terms)
    head_totals = tuple(math.fsum(t.value for t in terms if t.head == h) for h in range(num_heads))
    details = {**found.details, "bias": found.details.get("bias", 0.0), "num_heads": num_heads, "head_dim": head_dim}
    details["head_totals"] = head_totals
    return replace(found, terms=terms, details=details)


# Before self-attention (sections 3.1–3.2): Bahdanau's additive score and the GRU encoder.


def additive_score(query_state, key_state, W_a, U_a, v_a, *, row: int = 0, col: int = 0) -> Derivation:  # noqa: N803 (the paper's names)
    """Bahdanau's alignment score e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j) (section 3.1's attention
    mechanism for RNNs): a small network, not a dot product, scores decoder state s against encoder state h.

    Term k is v_a[k] · tanh(W_a s + U_a h)[k]; ``details`` holds the two halves inside the tanh,
    ``query_part`` (W_a s) and ``key_part`` (U_a h), one number per k.

    Shapes: query_state (query_size,), key_state (key_size,), W_a (attention_size, query_size),
    U_a (attention_size, key_size), v_a (attention_size,).
    """
    s, h, v = _vector(query_state), _vector(key_state), _vector(v_a)
    W_a, U_a = _matrix(W_a), _matrix(U_a)
    if W_a.shape != (v.numel(), s.numel()) or U_a.shape != (v.numel(), h.numel()):
        raise ValueError(
            f"W_a {tuple(W_a.shape)} and U_a {tuple(U_a.shape)} must be (attention_size, state size): "
            f"here attention_size = {v.numel()} (v_a), a query state of {s.numel()}, a key state of {h.numel()}"
        )
    query_part = W_a @ s  # (attention_size,)
    key_part = U_a @ h  # (attention_size,)
    hidden = torch.tanh(query_part + key_part)  # (attention_size,)
    found = dot_product(v, hidden, kind="additive_score", row=row, col=col)
    details = {
        "attention_size": v.numel(),
        "query_part": tuple(query_part.tolist()),
        "key_part": tuple(key_part.tolist()),
    }
    return replace(found, details=details)


def _check_seq2seq(trace, weights) -> None:
    """Raise unless ``weights`` fit ``trace``: the same d_in and hidden_size (``seq2seq_weights``' sizes)."""
    d_in, hidden_size = trace.inputs.shape[1], trace.encoder_states.shape[1]
    fits = weights.encoder.weight_ih.shape[1] == d_in and weights.encoder.weight_hh.shape[1] == hidden_size
    if not fits or weights.W_a.shape[1] != hidden_size or weights.U_a.shape[1] != hidden_size:
        raise ValueError(
            f"these weights do not belong to this trace: it reads {d_in}-number inputs into a {hidden_size}-number "
            f"state, the weights read {weights.encoder.weight_ih.shape[1]} into {weights.encoder.weight_hh.shape[1]}"
        )


def bahdanau_score(trace, weights, step: int, token: int) -> Derivation:
    """The score e_ij of decoder step i (``step``) for encoder state h_j (``token``) in
    ``bahdanau.encoder_decoder``: ``additive_score`` with s_{i−1}, the decoder's state before the step
    (the encoder's final state at step 0). ``weights`` are the trace's, ``seq2seq_weights(d_in,
    hidden_size, attention_size, trace.seed)``. ``details["query_state"]`` says which state s was.

    Shapes: trace.encoder_states (num_tokens, hidden_size), trace.decoder_states (num_steps, hidden_size).
    """
    _check_seq2seq(trace, weights)
    _check(step, trace.decoder_states.shape[0], "decoder step")
    _check(token, trace.encoder_states.shape[0], "encoder token")
    s = trace.final_state if step == 0 else trace.decoder_states[step - 1]  # (hidden_size,)
    found = additive_score(s, trace.encoder_states[token], weights.W_a, weights.U_a, weights.v_a, row=step, col=token)
    source = "final encoder state" if step == 0 else f"decoder state {step - 1}"
    return replace(found, details={**found.details, "query_state": source})


def bahdanau_weight(trace, step: int, token: int) -> Derivation:
    """The attention weight α_ij = softmax over the encoder tokens of decoder step i's scores e_i·
    (the Why attention page's ``bahdanau_weights`` heatmap): ``weight`` on the trace's score row.

    Shapes: trace.bahdanau_scores (num_steps, num_tokens).
    """
    _check(step, trace.bahdanau_scores.shape[0], "decoder step")
    return weight(trace.bahdanau_scores[step], token, row=step)


def bahdanau_context(trace, step: int, col: int) -> Derivation:
    """Entry ``col`` of decoder step i's context vector c_i = Σ_j α_ij · h_j, the weighted sum of the
    encoder states the decoder reads: ``weighted_sum`` of the step's weights and the encoder states.

    Shapes: trace.bahdanau_weights (num_steps, num_tokens), trace.encoder_states (num_tokens, hidden_size).
    """
    _check(step, trace.bahdanau_weights.shape[0], "decoder step")
    return weighted_sum(trace.bahdanau_weights[step], trace.encoder_states, col, row=step, kind="bahdanau_context")


def gru_state(weights, x, h_prev, unit: int, *, row: int = 0) -> Derivation:
    """One number of a GRU step, the RNN that reads the sentence before attention (section 3.1), in
    PyTorch's convention (``nn.GRUCell``, ``bahdanau.gru_step``): h_t[k] = (1 − z_t[k]) · n_t[k] + z_t[k] · h_{t−1}[k].

    The gates: r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz) and the
    candidate n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)). z near 1 keeps the old state, z near 0
    takes the candidate (some texts swap z and 1 − z). Term 0 is (1 − z) · n, term 1 is z · h_{t−1}[k];
    ``details`` holds ``r``, ``z``, ``n``, ``h_prev`` and the candidate's two halves ``input_n`` and
    ``hidden_n`` (W_hn h + b_hn, before r scales it), all at unit k.

    Shapes: x (input_size,), h_prev (hidden_size,); ``weights`` is a ``GRUWeights``: weight_ih
    (3 * hidden_size, input_size), weight_hh (3 * hidden_size, hidden_size), biases (3 * hidden_size,).
    """
    x, h = _vector(x), _vector(h_prev)
    weight_ih, weight_hh = _matrix(weights.weight_ih), _matrix(weights.weight_hh)
    hidden_size = weight_hh.shape[1]
    if weight_ih.shape[0] != 3 * hidden_size or weight_hh.shape[0] != 3 * hidden_size:
        raise ValueError(
            f"a GRU's weights stack its r, z and n rows: weight_ih {tuple(weight_ih.shape)} and weight_hh "
            f"{tuple(weight_hh.shape)} should both have 3 × {hidden_size} rows"
        )
    if weight_ih.shape[1] != x.numel() or h.numel() != hidden_size:
        raise ValueError(
            f"this GRU reads inputs of {weight_ih.shape[1]} numbers and a state of {hidden_size}; "
            f"got an input of {x.numel()} and a state of {h.numel()}"
        )
    _check(unit, hidden_size, "hidden unit")
    input_part = weight_ih @ x + _vector(weights.bias_ih)  # (3 * hidden_size,)
    hidden_part = weight_hh @ h + _vector(weights.bias_hh)  # (3 * hidden_size,)
    r_at, z_at, n_at = unit, hidden_size + unit, 2 * hidden_size + unit  # the unit's row in each third
    r = float(torch.sigmoid(input_part[r_at] + hidden_part[r_at]))
    z = float(torch.sigmoid(input_part[z_at] + hidden_part[z_at]))
    n = math.tanh(float(input_part[n_at]) + r * float(hidden_part[n_at]))
    old = float(h[unit])
    terms = (Term(0, (1 - z, n), (1 - z) * n), Term(1, (z, old), z * old))
    total = terms[0].value + terms[1].value
    details = {
        "r": r,
        "z": z,
        "n": n,
        "h_prev": old,
        "input_n": float(input_part[n_at]),
        "hidden_n": float(hidden_part[n_at]),
    }
    return Derivation("gru_state", row, unit, terms, total, total, details)


def encoder_state(trace, weights, token: int, unit: int) -> Derivation:
    """Entry [token, unit] of ``encoder_states`` (the Why attention page's first heatmap): the GRU step
    that reads token j from the state after token j − 1 (zeros before the first token).

    Shapes: trace.inputs (num_tokens, d_in), trace.encoder_states (num_tokens, hidden_size).
    """
    _check_seq2seq(trace, weights)
    _check(token, trace.encoder_states.shape[0], "token")
    h_prev = torch.zeros_like(trace.final_state) if token == 0 else trace.encoder_states[token - 1]  # (hidden_size,)
    return gru_state(weights.encoder, trace.inputs[token], h_prev, unit, row=token)


def contrast_score(inputs, row: int, col: int, *, attention_size: int = 16, seed: int = 123) -> Derivation:
    """The additive half of ``bahdanau.self_attention_contrast``: one sequence scoring itself with
    Bahdanau's network, v_aᵀ tanh(W_a x_i + U_a x_j), with ``contrast_weights``' untrained weights.
    Its softmax weight is ``weight(contrast.additive_scores[row], col, row=row)``; the dot-product
    half is ``score(inputs, inputs, row, col)`` and ``weight`` of its row.

    Shapes: inputs (num_tokens, d_in).
    """
    x = _matrix(inputs)  # (num_tokens, d_in)
    _check(row, x.shape[0], "query")
    _check(col, x.shape[0], "key")
    W_a, U_a, v_a = contrast_weights(x.shape[1], attention_size, seed)
    return additive_score(x[row], x[col], W_a, U_a, v_a, row=row, col=col)


def reversal_weight(model: ReversalSeq2Seq, ids, step: int, token: int) -> Derivation:
    """Weight [step, token] of the trained (or untrained) reversal model's Bahdanau weights, the Why
    attention page's alignment heatmap: the softmax over the input tokens of decoder step i's scores,
    with ``details["score"]`` the cell's ``additive_score`` from s_{i−1} and annotation h_j.

    ``ReversalSeq2Seq.forward`` keeps no decoder states, so they are read while a private copy of the
    model runs (forward hooks on its ``W_a`` and ``U_a`` record what they were given and made); the
    shared model is never touched. ``ids`` are GPT-2 ids, as ``trained_alignment`` takes them.

    Shapes: ids (num_tokens,); the weights are (num_tokens, num_tokens), one row per decoder step.
    """
    if not isinstance(model, ReversalSeq2Seq) or not model.use_attention:
        raise ValueError("reversal_weight() needs a ReversalSeq2Seq with attention (load_reversal(True))")
    symbols = reversal_symbols(ids)  # (num_tokens,)
    _check(step, symbols.numel(), "decoder step")
    _check(token, symbols.numel(), "input token")
    seen = {"W_a": [], "U_a": []}  # each call's (input, output), for the first sentence of the batch
    private = copy.deepcopy(model).double().eval()  # in float64, as ``trained_alignment`` runs it
    for name, calls in seen.items():
        getattr(private, name).register_forward_hook(
            lambda _, args, out, calls=calls: calls.append((args[0][0], out[0]))
        )
    with torch.no_grad():
        private(symbols.unsqueeze(0))
    (annotations, key_parts), (s, query_part) = seen["U_a"][0], seen["W_a"][step]  # (T, 2H), (T, A); (2H,), (A,)
    scores = additive_scores(query_part, key_parts, private.v_a.detach())  # (num_tokens,)
    found = weight(scores, token, row=step)
    v_a, W_a, U_a = private.v_a, private.W_a.weight, private.U_a.weight  # (A,), (A, 2H), (A, 2H)
    score_found = additive_score(s, annotations[token], W_a, U_a, v_a, row=step, col=token)
    return replace(found, details={**found.details, "score": score_found})


# Break it: a mistake's cell beside the right one, so the changed line shows in the arithmetic.


def _first_head(mha: MultiHeadAttention, x: torch.Tensor, steps: Steps) -> tuple[torch.Tensor, ...]:
    """The first sequence's first head as ``steps`` splits it (section 3.6's split into heads), and the mask
    as ``steps`` builds it (section 3.5.1).

    Shapes: x (b, num_tokens, d_in) → queries, keys (num_tokens, head_dim), mask (num_tokens, num_tokens)."""
    num_tokens = x.shape[1]
    with torch.no_grad():
        queries = steps.split(mha, mha.W_query(x))[0, 0]  # (num_tokens, head_dim)
        keys = steps.split(mha, mha.W_key(x))[0, 0]  # (num_tokens, head_dim)
    hidden = steps.mask(mha.mask.shape[0]).bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)
    return queries.to(torch.float64), keys.to(torch.float64), hidden


def _scaled_score(queries, keys, row: int, col: int, divisor: float) -> Derivation:
    """Section 3.4's scaled score q^(i) · k^(j) ÷ ``divisor`` (√d_k in the book, else a mistake's).

    Shapes: queries, keys (num_tokens, head_dim)."""
    found = dot_product(queries[row], keys[col], kind="scaled_score", row=row, col=col)
    details = {**found.details, "d_k": keys.shape[-1], "divisor": divisor}
    return replace(found, value=found.total / divisor, details=details)


def _softmax_cell(
    queries, keys, hidden, row: int, col: int, *, divisor: float, fill_zero=False, over_column=False, zero_after=False
) -> Derivation:
    """Weight [row, col] of one head: the scores ÷ ``divisor``, masked where ``hidden``, softmaxed along
    the row (along the column with ``over_column``: the terms are then queries). ``fill_zero`` gives the
    hidden scores 0 instead of −∞; ``zero_after`` masks after the softmax, without renormalizing.

    Shapes: queries, keys (num_tokens, head_dim), hidden (num_tokens, num_tokens), True = masked."""
    scores = queries @ keys.T  # (num_tokens, num_tokens)
    if fill_zero:
        scores = scores.masked_fill(hidden, 0.0)  # (num_tokens, num_tokens)
    line, line_hidden, index = (scores[:, col], hidden[:, col], row) if over_column else (scores[row], hidden[row], col)
    masked = None if fill_zero or zero_after else line_hidden
    details = {
        "divisor": divisor,
        "dim": -2 if over_column else -1,
        "score": _scaled_score(queries, keys, row, col, divisor),
    }
    if fill_zero:
        details["filled_with_0"] = tuple(torch.nonzero(line_hidden).flatten().tolist())
    if masked is not None and bool(masked.all()):  # softmax over nothing but −∞: 0/0
        terms = tuple(Term(j, (-math.inf,), 0.0, True) for j in range(line.numel()))
        return Derivation("weight", row, col, terms, 0.0, math.nan, {**details, "exp_sum": 0.0, "all_masked": True})
    found = weight(line / divisor, index, masked=masked)
    value = 0.0 if zero_after and bool(hidden[row, col]) else found.value
    if zero_after:
        details["zeroed_after_softmax"] = tuple(torch.nonzero(line_hidden).flatten().tolist())
        details["before_zeroing"] = found.value
    return replace(found, row=row, col=col, value=value, details={**found.details, **details})


def _dropped(found: Derivation, kept: bool, p: float, *, rescale: bool) -> Derivation:
    """Section 3.5.2: a weight after a dropout draw, with nn.Dropout's 1/(1 − p) or (the mistake) without it."""
    if rescale:
        dropped = dropped_weight(found.value, kept, p, row=found.row, col=found.col)
        return replace(dropped, details={**dropped.details, "weight": found})
    value = found.value if kept else 0.0
    term = Term(0, (found.value, 1.0 if kept else 0.0), value)
    details = {"p": p, "kept": kept, "scale": 1.0, "rescaled": False, "weight": found}
    return Derivation("dropped_weight", found.row, found.col, (term,), value, value, details)


def _wrong_weigh(name: str, d_k: int) -> dict:
    """The changed line of each mistake in the weigh step, as ``_softmax_cell``'s options."""
    changed = {
        "fill_zero": {"fill_zero": True},
        "no_scaling": {"divisor": 1.0},
        "divide_by_d_k": {"divisor": float(d_k)},
        "mask_after_softmax": {"zero_after": True},
        "softmax_wrong_dim": {"over_column": True},
    }
    return {"divisor": math.sqrt(d_k), **changed.get(name, {})}


def mistake_cell(run: MistakeRun, mha: MultiHeadAttention, x, row: int, col: int) -> tuple[Derivation, Derivation]:
    """Break it: cell [row, col] of the page's two heatmaps, the first head's weights (the ones that
    multiply the values), written out for the right code and for the mistake: (right, wrong).

    ``run`` is what ``run_mistake(name, mha, x)`` returned for this ``mha`` and ``x``; the queries and keys
    are recomputed with each pass's own split and mask steps. Both are softmax weights (``weight``), with
    ``details["score"]`` the cell's scaled score and ``details["divisor"]`` what it was divided by:

    - ``fill_zero``: the wrong row's hidden keys score 0, so their exps are not 0 (``filled_with_0``).
    - ``tril_mask``, ``diagonal_0``: the wrong mask marks other keys; a row it hides entirely has no
      exps to share, value NaN (``all_masked``).
    - ``no_scaling``, ``divide_by_d_k``: ``divisor`` is 1 or d_k instead of √d_k.
    - ``view_without_transpose``: the wrong head's rows hold other tokens' numbers; ``query_token`` and
      ``key_token`` name the token whose numbers start the wrong pass's rows.
    - ``mask_after_softmax``: every key's exp is in the wrong sum, then the hidden weights are set to 0
      (``zeroed_after_softmax``, ``before_zeroing``).
    - ``softmax_wrong_dim``: the wrong weight is normalized over column ``col``, its terms are queries.
    - ``dropout_without_rescale``: both are ``dropped_weight``s of the same draw (``details["weight"]``
      is the weight before dropout); the wrong one has scale 1, not 1/(1 − p).
    - ``merge_without_transpose``: the changed line comes after the weights, so both weights are the
      same and a term-by-term pair shows nothing; the closest honest pair is that same weight twice.
      The mistake shows in the merged context: ``merge(..., transposed=False)``.

    Shapes: x (num_tokens, d_in) or (b, num_tokens, d_in), of which the first sequence is shown;
    run.right_weights (num_tokens, num_tokens).
    """
    if not isinstance(run, MistakeRun):
        raise ValueError(f"mistake_cell() needs what run_mistake() returns, got {type(run).__name__}")
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"mistake_cell() needs the MultiHeadAttention the mistake ran on, got {type(mha).__name__}")
    x = torch.as_tensor(x)
    x = x.unsqueeze(0) if x.dim() == 2 else x  # (b, num_tokens, d_in)
    num_tokens = run.right_weights.shape[0]
    if x.dim() != 3 or x.shape[1:] != (num_tokens, mha.d_in):
        raise ValueError(f"x must be the run's input, ({num_tokens}, {mha.d_in}); got {tuple(x.shape)}")
    _check(row, num_tokens, "query")
    _check(col, num_tokens, "key")
    name, d_k = run.mistake.name, mha.head_dim
    right = _softmax_cell(*_first_head(mha, x, RIGHT), row, col, divisor=math.sqrt(d_k))
    wrong = _softmax_cell(*_first_head(mha, x, run.mistake.steps), row, col, **_wrong_weigh(name, d_k))
    if name == "view_without_transpose":  # head 0's row i is memory [i · head_dim, (i + 1) · head_dim)
        starts = {"query_token": row * d_k // mha.d_out, "key_token": col * d_k // mha.d_out}
        wrong = replace(wrong, details={**wrong.details, **starts})
    if name == "dropout_without_rescale":
        if run.dropout_keep is None:
            raise ValueError("this run has no dropout draw: run the mistake with run_mistake() again")
        kept, p = bool(run.dropout_keep[row, col]), mha.dropout.p
        right, wrong = _dropped(right, kept, p, rescale=True), _dropped(wrong, kept, p, rescale=False)
    shown = float(run.right_weights[row, col])
    if not math.isclose(right.value, shown, rel_tol=1e-3, abs_tol=1e-4):
        raise ValueError(
            f"this run was not made with this module and input: its weight is {shown:.6g}, not {right.value:.6g}"
        )
    return right, wrong


# After the chapter (the Generate page): a KV cache's key beside the same key recomputed, and a window's mask.


def _stacked(keys, name: str) -> tuple[int, ...]:
    shape = tuple(keys.shape)
    if len(shape) != 4:
        raise ValueError(f"{name} must be (n_layers, n_heads, num_tokens, head_dim), got a shape {shape}")
    return shape


def cache_entry(cached_keys, recomputed_keys, layer: int, head: int, token: int, dim: int, *, shown="cached"):
    """Entry ``dim`` of token j's key k^(j) in one layer and head, as the KV cache kept it (appended when token
    j was read) and as one pass over the whole text makes it again. Both are ``keys = self.W_key(x)`` on
    token j's own input row to the layer, which the causal mask keeps free of later tokens, so they agree
    up to float32 rounding.

    Term 0 is the cached number, term 1 the recomputed one; ``total`` is |cached − recomputed|, and
    ``value`` the ``shown`` one ("cached" or "recomputed"), the cell on screen. Indices count from 0;
    ``details`` names ``layer``, ``head``, ``cached``, ``recomputed`` and ``shown``.

    Shapes: cached_keys, recomputed_keys (n_layers, n_heads, num_tokens, head_dim): each layer's
    ``KVCache.keys`` for the first sequence, stacked (``cache_against_recomputation`` in the explorer).
    """
    shape = _stacked(cached_keys, "cached_keys")
    if _stacked(recomputed_keys, "recomputed_keys") != shape:
        raise ValueError(
            f"the cached keys {shape} and the recomputed keys {tuple(recomputed_keys.shape)} must have one shape"
        )
    if shown not in ("cached", "recomputed"):
        raise ValueError(f'shown must be "cached" or "recomputed", got {shown!r}')
    names = ("layer", "head", "token", "dimension")
    for index, size, name in zip((layer, head, token, dim), shape, names, strict=True):
        _check(index, size, name)
    cached = float(cached_keys[layer, head, token, dim])
    recomputed = float(recomputed_keys[layer, head, token, dim])
    terms = (Term(0, (cached,), cached), Term(1, (recomputed,), recomputed))
    details = {"layer": layer, "head": head, "cached": cached, "recomputed": recomputed, "shown": shown}
    value = cached if shown == "cached" else recomputed
    return Derivation("cache_entry", token, dim, terms, abs(cached - recomputed), value, details)


def window_mask_entry(num_tokens: int, window: int | None, row: int, col: int) -> Derivation:
    """Entry [row, col] of ``sliding_window_mask(num_tokens, window)``: 1 (True, masked: the score becomes −∞)
    or 0 (visible), for query ``row`` and key ``col``.

    Term 0 is the causal rule, a future key (col > row); term 1, with a ``window``, the window's rule, a key
    ``window`` or more tokens back (row − col ≥ window). At most one holds, so the entry is their sum.
    ``details``: ``future``, ``too_far`` (None without a window), ``back`` (row − col) and ``window``.

    Shapes: the mask is (num_tokens, num_tokens).
    """
    check_window(window)
    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int) or num_tokens < 1:
        raise ValueError(f"num_tokens must be a whole number, at least 1; got {num_tokens!r}")
    _check(row, num_tokens, "query")
    _check(col, num_tokens, "key")
    back = row - col
    future = col > row
    terms = [Term(0, (float(col), float(row)), float(future))]
    too_far = None
    if window is not None:
        too_far = back >= window
        terms.append(Term(1, (float(back), float(window)), float(too_far)))
    total = sum(t.value for t in terms)
    details = {"future": future, "too_far": too_far, "back": back, "window": window}
    return Derivation("window_mask", row, col, tuple(terms), total, total, details)
