"""The predict-then-reveal questions of the chapter's pages, built from each page's own numbers.

Each function takes what its page already has (weights, sums, shapes) and
returns a ``Question`` whose answer is read from those numbers, so a
new sentence or new settings change the answer with them. Pages pass it to
``widgets.ask`` before the step that shows the result.

A question's text quotes tokens through ``parsing.literal``, the app's one Markdown escaper."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explorer.figures import visible_token
from explorer.parsing import literal


def quote(piece: str) -> str:
    """A token for a question's prompt: its whitespace visible, in quotes, shown as typed."""
    return f"“{literal(visible_token(piece))}”"


@dataclass(frozen=True)
class Question:
    """One question: a ``prompt``, and either ``choices`` (``answer`` is one of them) or a number.

    ``prompt`` and ``explanation`` are markdown: put tokens in them through
    ``quote``. For a number, an answer within ``tolerance`` of ``answer`` is
    right; it is typed and printed with ``decimals`` decimals. ``explanation`` is shown with the
    reveal.
    """

    key: str
    prompt: str
    answer: str | float
    choices: tuple[str, ...] | None = None
    tolerance: float = 0.0
    decimals: int = 2
    explanation: str = ""

    def __post_init__(self) -> None:
        if self.choices is not None and self.answer not in self.choices:
            raise ValueError(f"The answer {self.answer!r} is not one of the choices {self.choices}.")
        if self.choices is None and not (isinstance(self.answer, int | float) and math.isfinite(self.answer)):
            raise ValueError(f"A number question needs a finite number as its answer, got {self.answer!r}.")

    def is_right(self, given: str | float | None) -> bool:
        """Whether ``given`` is the answer (a choice) or within ``tolerance`` of it (a number)."""
        if given is None:
            return False
        if self.choices is not None:
            return given == self.answer
        return abs(float(given) - float(self.answer)) <= self.tolerance + 1e-12

    def shown_answer(self) -> str:
        return str(self.answer) if self.choices is not None else self.number(self.answer)

    def number(self, value: float) -> str:
        return f"{value:.{self.decimals}f}"


CHOICE_LIMIT = 8  # up to this many tokens a question lists them; beyond it the learner types a position
SAME = 1e-5  # differences below this count as none (float32 rounding)


def most_attended(weights_row, pieces: Sequence[str], query: int) -> Question:
    """Simplified attention: which input the query gives the largest weight (``weights_row`` (T,))."""
    weights = np.asarray(weights_row, dtype=np.float64)
    best = int(np.argmax(weights))
    prompt = f"Which input will the query {quote(pieces[query])} (x^({query + 1}) = `inputs[{query}]`) attend to most?"
    explanation = f"Its largest weight, {weights[best]:.4f}, is on x^({best + 1})."
    if len(pieces) > CHOICE_LIMIT:
        return Question(
            f"simplified:most:{query}",
            prompt + " Type its position j of x^(j).",
            best + 1,
            decimals=0,
            explanation=explanation,
        )
    choices = tuple(f"x^({j + 1}) “{visible_token(piece)}”" for j, piece in enumerate(pieces))
    return Question(f"simplified:most:{query}", prompt, choices[best], choices, explanation=explanation)


def scaling_direction(attn_scores_row, attn_weights_row, d_k: int, query: int) -> Question:
    """Q, K, V: whether dividing the scores by √d_k raises or lowers the query's largest weight.

    ``attn_weights_row`` (T,) is the page's softmax of the scaled scores; the
    unscaled softmax is that of ``attn_scores_row`` (T,) as it is.
    """
    scores = np.asarray(attn_scores_row, dtype=np.float64)  # (T,)
    unscaled = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()  # softmax, as torch's: (T,)
    before, after = float(unscaled.max()), float(np.max(attn_weights_row))
    choices = ("It goes up", "It goes down", "It stays the same")
    answer = choices[2] if abs(after - before) < SAME else choices[0] if after > before else choices[1]
    return Question(
        f"qkv:scaling:{query}",
        f"Query {query + 1}'s weights come from a softmax of its scores divided by √d_k = √{d_k}. Compared with a "
        "softmax of the unscaled scores, will its largest weight go up or down?",
        answer,
        choices,
        explanation=f"Without the division it would be {before:.4f}; with it, it is {after:.4f}.",
    )


def masked_row_sum(renormalized_weights, pieces: Sequence[str]) -> Question:
    """Causal mask: what row 1 sums to after zeroing the future and dividing by the row's new sum."""
    total = float(np.asarray(renormalized_weights, dtype=np.float64)[0].sum())
    return Question(
        "causal_mask:row_sum",
        f"The mask zeroes every weight above the diagonal, then each row is divided by its new sum. What will row 1 "
        f"(the query {quote(pieces[0])}) sum to?",
        total,
        tolerance=0.01,
        explanation=f"It sums to {total:.4f}: renormalising makes every row a probability distribution again.",
    )


def dropout_row_sum(row_sums, pieces: Sequence[str], query: int, p: float, active: bool) -> Question:
    """Dropout: what ``query``'s row sums to after this draw (``row_sums`` (T,) of the dropped weights)."""
    total = float(np.asarray(row_sums, dtype=np.float64)[query])
    setting = f"dropout with p = {p:.2f}" if active else "dropout switched off (eval mode or p = 0)"
    return Question(
        f"dropout:row_sum:{query}",
        f"Before dropout, the weights of the query {quote(pieces[query])} (row {query + 1}) sum to 1. After this "
        f"draw of {setting}, what will they sum to? (within 0.05)",
        total,
        tolerance=0.05,
        explanation=f"This draw's row sums to {total:.4f}; the survivors are scaled by 1/(1 − p), so only the "
        "average over many draws is 1.",
    )


def padding_changes(unpadded_max_difference: Sequence[float], padded: bool) -> Question | None:
    """Batches: whether running each sentence alone changes its real tokens' outputs; None while dropout is on."""
    if any(math.isnan(d) for d in unpadded_max_difference):
        return None
    worst = max(unpadded_max_difference)
    choices = ("Yes, they change", "No, they stay the same")
    alone = "alone, without the batch and its padding" if padded else "alone, as a batch of one"
    return Question(
        "batches:padding",
        f"Run each sentence {alone}: will its real tokens get different context vectors than in the batch?",
        choices[1] if worst < SAME else choices[0],
        choices,
        explanation=f"The largest difference is {worst:.1e}: the causal mask hides later tokens, padding included.",
    )


def context_size(num_heads: int, d_out: int, wrapper_width: int) -> Question:
    """Multi-head: how many numbers each token's context vector has after the wrapper concatenates its heads."""
    return Question(
        f"multihead:width:{num_heads}:{d_out}",
        f"`MultiHeadAttentionWrapper` runs num_heads = {num_heads} heads, each a `CausalAttention` with d_out = "
        f"{d_out}, and concatenates their outputs. How many numbers will each token's context vector have?",
        wrapper_width,
        decimals=0,
        explanation=f"{wrapper_width} = num_heads × d_out: the heads' outputs sit side by side.",
    )
