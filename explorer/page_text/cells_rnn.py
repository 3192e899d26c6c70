"""The cell panel's words for Why attention, Tokens & embeddings and Generate (issue 25): a GRU encoder state,
a Bahdanau weight with its additive score, the dot-product and additive contrast, an embedding number,
which no arithmetic made, and Generate's recorded weights, cached keys and window masks.

Each function has ``page_text.cells.explain``'s signature, (derivation, notation, row label, column label,
keys) → (Markdown, the sum), so a ``explorer.cells.Cells`` can take it as its ``words``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from explorer.figures.labels import visible_token

from .cells import DOT_TERMS, ROW_TERMS, Notation, _token, factor, number, sub
from .generate import sentence_start
from .glossary import term

if TYPE_CHECKING:
    from attention.derivations import Derivation


def _products(d: Derivation) -> str:
    parts = ["·".join(factor(f) for f in t.factors) for t in d.terms[:DOT_TERMS]]
    return " + ".join(parts) + (f" + … ({len(d.terms)} terms in all)" if len(d.terms) > DOT_TERMS else "")


def _softmax(d: Derivation, keys: Sequence[str], letter: str) -> list[str]:
    """A softmax row's exps, one line per key, then the cell's share: α = exp(this) / Σ exp."""
    shift = d.details["subtract_max"] and d.details["row_max"] != 0  # as torch.softmax does: the same weights
    minus = f" − {factor(d.details['row_max'])}" if shift else ""
    lines = [
        f"key {t.index + 1} {visible_token(keys[t.index])}: exp({number(t.factors[0])}{minus}) = {number(t.value)}"
        for t in d.terms[:ROW_TERMS]
    ]
    if shift:
        lines.insert(0, f"(the row's largest score, {number(d.details['row_max'])}, is subtracted first)")
    if len(d.terms) > ROW_TERMS:
        lines.append(f"… ({len(d.terms)} keys in all)")
    lines.append(
        f"{letter}_{sub(d.row, d.col)} = {number(d.terms[d.col].value)} / {number(d.total)} = {number(d.value)}"
    )
    return lines


def gru(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
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


def bahdanau(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A Bahdanau weight α_ij: the softmax over the encoder tokens of the additive scores e_ij, in the
    untrained encoder–decoder, or (``details["model"]``) in the reversal model's alignment."""
    i, j, e = d.row + 1, d.col + 1, d.details["score"]
    score = f"e_{sub(d.row, d.col)} = Σ_k v_a[k]·tanh(W_a s + U_a h_{j})[k] = {_products(e)} = {number(e.value)}"
    if "model" in d.details:
        words = (
            f"The {d.details['model']} model's α_{sub(d.row, d.col)}: how much output step {i}, which must write "
            f"{_token(row_label)}, reads input token x^({j}) {_token(keys[d.col])}. It is the {term('softmax')} over "
            f"the input tokens of e_ij = v_aᵀ tanh(W_a s_{{i−1}} + U_a h_j), from the decoder's state s_{{i−1}} and "
            f"the annotation h_j ({e.details['attention_size']} rows of v_a)."
        )
        return words, "\n".join([score, *_softmax(d, keys, "α")])
    state = "the encoder's final state" if d.row == 0 else f"s_{d.row}, the decoder's state after step {d.row}"
    words = (
        f"`bahdanau_weights[{d.row}, {d.col}]` is α_{sub(d.row, d.col)}: how much decoder step {i} reads the "
        f"encoder's state h_{j} after token x^({j}) {_token(col_label)}. It is the {term('softmax')} over the "
        f"encoder tokens of the scores e_ij = v_aᵀ tanh(W_a s_{{i−1}} + U_a h_j). That is a small network "
        f"({term('bahdanau')}), not a dot product. Here s_{{i−1}} is {state}."
    )
    return words, "\n".join([score, *_softmax(d, keys, "α")])


def contrast(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """The contrast's weights: the same softmax over ω_ij = x^(i)·x^(j), or over an additive score."""
    i, j, s = d.row + 1, d.col + 1, d.details["score"]
    where = f"The weight α_{sub(d.row, d.col)} of query x^({i}) {_token(row_label)} on key x^({j}) {_token(col_label)}"
    if s.kind == "additive_score":
        words = (
            f"{where}, softmax of an additive score: v_aᵀ tanh(W_a x^({i}) + U_a x^({j})), with untrained W_a, U_a "
            f"and v_a of {s.details['attention_size']} rows. The score is a sum over those rows, not over x's entries."
        )
        score = f"e_{sub(d.row, d.col)} = Σ_k v_a[k]·tanh(W_a x^({i}) + U_a x^({j}))[k] = {_products(s)}"
    else:
        words = (
            f"{where}, softmax of a {term('dot_product', 'dot product')}: ω_{sub(d.row, d.col)} = x^({i})·x^({j}), "
            "as in section 3.3, no parameters at all."
        )
        score = f"ω_{sub(d.row, d.col)} = x^({i})·x^({j}) = {_products(s)}"
    return words, "\n".join([f"{score} = {number(s.value)}", *_softmax(d, keys, "α")])


def embedding(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """An input embedding's number: read from a table, made by no sum."""
    where, source = d.details["where"], d.details["source"]
    words = (
        f"`inputs[{d.row}, {d.col}]`, entry {d.col} of x^({d.row + 1}), the {term('embedding')} of token "
        f"{_token(row_label)} (id {d.details['id']}). No arithmetic made it: it is {source}."
    )
    return words, f"x^({d.row + 1})[{d.col}] = {where} = {number(d.value)}"


def recorded(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
    """A trained model's weight as generation recorded it: which model made it (``details["model"]``), where
    it came from, and its row's sum."""
    g, j = d.details, d.col + 1
    if d.col >= g["seen"]:
        words = f"Key x^({j}) {_token(col_label)} comes after this query, so the causal mask hides it: no weight."
        return words, f"key {j}: masked"
    model = sentence_start(g["model"])
    words = (
        f"Layer {g['layer'] + 1}, head {g['head'] + 1}: the {term('attention_weights', 'attention weight')} of the "
        f"query at token {g['query'] + 1} {_token(g['piece'])} on key x^({j}) {_token(col_label)}. {model} "
        f"made it as the softmax of q·k/√{term('d_k')} over the {g['seen']} tokens so far. Generation keeps each "
        "step's weights, not its scores, so here is the row they share: it adds up to 1."
    )
    parts = [number(t.value) for t in d.terms[:ROW_TERMS]] + (
        [f"… ({len(d.terms)})"] if len(d.terms) > ROW_TERMS else []
    )
    return words, f"row: {' + '.join(parts)} = {number(d.total)}\nα_{sub(g['query'], d.col)} = {number(d.value)}"


def cached_key(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
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


def _agreement(difference: float) -> str:
    if difference == 0:
        return "The two are the same float32 number."
    if difference < 5e-5:
        return f"They differ by {difference:.1e}, far below the 4 decimals shown: float32 rounding, not another key."
    return f"They differ by {difference:.1e}, more than rounding: the cache does not hold the recomputed key."


def window_mask(d: Derivation, n: Notation, row_label: str, col_label: str, keys: Sequence[str]):
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
