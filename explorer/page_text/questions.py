"""The predict-then-reveal questions of the chapter's pages, built from each page's own numbers.

Each function takes what its page already has (weights, sums, shapes) and returns a ``Question`` whose answer is
read from those numbers, so a new sentence or new settings change the answer with them. Pages pass it to
``widgets.ask`` before the step that shows the result; Break it's questions are in ``page_text.mistakes``.
A question's text quotes tokens through ``settings.literal``, the app's one Markdown escaper."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explorer.figures import visible_token
from explorer.settings import literal


def quote(piece: str) -> str:
    """A token for a question's prompt: its whitespace visible, in quotes, shown as typed."""
    return f"“{literal(visible_token(piece))}”"


@dataclass(frozen=True)
class Question:
    """One question: a ``prompt``, and either ``choices`` (``answer`` is one of them) or a number.

    ``prompt`` and ``explanation`` (shown with the reveal: the reason, not only the number) are markdown, with
    tokens put in through ``quote``. For a number, an answer within ``tolerance`` of ``answer`` is right; it is
    typed and printed with ``decimals`` decimals. ``also_right`` holds other answers exactly as right (a tie).
    """

    key: str
    prompt: str
    answer: str | float
    choices: tuple[str, ...] | None = None
    tolerance: float = 0.0
    decimals: int = 2
    explanation: str = ""
    also_right: tuple[str | float, ...] = ()

    def __post_init__(self) -> None:
        for answer in (self.answer, *self.also_right):
            if self.choices is not None and answer not in self.choices:
                raise ValueError(f"The answer {answer!r} is not one of the choices {self.choices}.")
            if self.choices is None and not (isinstance(answer, int | float) and math.isfinite(answer)):
                raise ValueError(f"A number question needs a finite number as its answer, got {answer!r}.")

    @property
    def answers(self) -> tuple[str | float, ...]:
        """Every right answer: ``answer`` first, then ``also_right``."""
        return (self.answer, *self.also_right)

    def is_right(self, given: str | float | None) -> bool:
        """Whether ``given`` is a right answer (a choice) or within ``tolerance`` of one (a number)."""
        if given is None:
            return False
        if self.choices is not None:
            return given in self.answers
        return any(abs(float(given) - float(a)) <= self.tolerance + 1e-12 for a in self.answers)

    def shown_answer(self) -> str:
        """The right answers as the reveal prints them, joined by "or" when they tie."""
        shown = [str(a) if self.choices is not None else self.number(a) for a in self.answers]
        return " or ".join(shown)

    def number(self, value: float) -> str:
        return f"{value:.{self.decimals}f}"


CHOICE_LIMIT = 8  # up to this many tokens a question lists them; beyond it the learner types a position
SAME = 1e-5  # differences below this count as none (float32 rounding)


def most_attended(weights_row, pieces: Sequence[str], query: int) -> Question:
    """Simplified attention: which input the query gives the largest weight (``weights_row`` (T,)); inputs that
    tie with it (within ``SAME``: a repeated token has the same embedding) are all right."""
    weights = np.asarray(weights_row, dtype=np.float64)
    best = int(np.argmax(weights))
    tied = [int(j) for j in np.flatnonzero(weights >= weights[best] - SAME)]
    others = [j for j in tied if j != best]
    prompt = f"Which input will the query {quote(pieces[query])} (x^({query + 1}) = `inputs[{query}]`) attend to most?"
    reason = (
        "Softmax keeps the order of the scores: exp grows with its input, and every exp is divided by the same sum. "
        "So the largest score gets the largest weight."
    )
    if others:
        names = " and ".join(f"x^({j + 1})" for j in tied)
        result = (
            f" {names} tie with weight {weights[best]:.4f}: they are the same token, so the same embedding vector, "
            "and the same dot product with the query. Each is right."
        )
    else:
        result = f" Its largest weight, {weights[best]:.4f}, is on x^({best + 1})."
    key, explanation = f"simplified:most:{query}", reason + result
    if len(pieces) > CHOICE_LIMIT:
        also_numbers = tuple(j + 1 for j in others)
        prompt += " Type its position j of x^(j)."
        return Question(key, prompt, best + 1, decimals=0, explanation=explanation, also_right=also_numbers)
    choices = tuple(f"x^({j + 1}) “{visible_token(piece)}”" for j, piece in enumerate(pieces))
    also = tuple(choices[j] for j in others)
    return Question(key, prompt, choices[best], choices, explanation=explanation, also_right=also)


def scaling_direction(attn_scores_row, attn_weights_row, d_k: int, query: int) -> Question:
    """Q, K, V: whether dividing the scores by √d_k raises or lowers the query's largest weight
    (``attn_weights_row`` (T,): the page's softmax of the scaled scores; ``attn_scores_row`` (T,): unscaled)."""
    scores = np.asarray(attn_scores_row, dtype=np.float64)  # (T,)
    unscaled = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()  # softmax, as torch's: (T,)
    before, after = float(unscaled.max()), float(np.max(attn_weights_row))
    choices = ("It goes up", "It goes down", "It stays the same")
    answer = choices[2] if abs(after - before) < SAME else choices[0] if after > before else choices[1]
    if d_k == 1:
        reason = "√1 = 1, so dividing changes no score and no weight."
    elif answer == choices[2]:
        reason = "All its scores are equal, so there are no gaps to shrink: every weight stays the same."
    else:
        reason = (
            f"Dividing by √{d_k} > 1 shrinks the gaps between the scores, so the softmax is flatter: the largest "
            "weight falls whenever d_k > 1."
        )
    return Question(
        f"qkv:scaling:{query}",
        f"Query {query + 1}'s weights come from a softmax of its scores divided by √d_k = √{d_k}. Compared with a "
        "softmax of the unscaled scores, will its largest weight go up or down?",
        answer,
        choices,
        explanation=f"{reason} Without the division it would be {before:.4f}; with it, it is {after:.4f}.",
    )


def masked_second_row(unmasked_weights, renormalized_weights, pieces: Sequence[str]) -> Question | None:
    """Causal mask: the second token's weight on the first after zeroing the future and renormalizing (both
    (T, T)). The prompt quotes the row's two weights before the mask, so the learner renormalizes them (the
    book's 0.5517 : 0.4483). None for a single token, which has no second row."""
    if len(pieces) < 2:
        return None
    before = np.asarray(unmasked_weights, dtype=np.float64)[1]  # (T,)
    after = float(np.asarray(renormalized_weights, dtype=np.float64)[1, 0])
    first, itself = float(before[0]), float(before[1])
    return Question(
        "causal_mask:second_row",
        f"Before the mask, the second token {quote(pieces[1])} gives {first:.4f} to x^(1) and {itself:.4f} to "
        "itself (step 1). The book will zero every weight above the diagonal, then divide each row by its new sum. "
        "What weight will x^(2) then give to x^(1)?",
        after,
        tolerance=0.01,
        explanation=f"It is {first:.4f} / ({first:.4f} + {itself:.4f}) = {after:.4f}: x^(2) may see only x^(1) "
        "and itself. Dividing by their sum keeps their ratio and makes the row sum to 1 again.",
    )


def dropout_average_sum(row_sums, pieces: Sequence[str], query: int, p: float, active: bool) -> Question:
    """Dropout: what ``query``'s row sums to on average over many draws (``row_sums`` (T,) of this draw's): 1,
    the row's sum before dropout, which can be reasoned out, where one draw's sum cannot."""
    this_draw = float(np.asarray(row_sums, dtype=np.float64)[query])
    setting = f"dropout at p = {p:.2f}" if active else "dropout switched off (eval mode or p = 0)"
    if active:
        reason = (
            f"A weight w survives with probability 1 − p and is then scaled to w/(1 − p), so its average is "
            f"(1 − p) · w/(1 − p) = w. The row's average sum is its sum before dropout, 1 (this draw: {this_draw:.4f})."
        )
    else:
        reason = "Nothing is dropped or scaled, so every draw's row sums to 1, and so does their average."
    return Question(
        f"dropout:average_sum:{query}",
        f"Before dropout, the weights of the query {quote(pieces[query])} (row {query + 1}) sum to 1. With {setting}, "
        "what will they sum to on average over many draws? (within 0.05)",
        1.0,
        tolerance=0.05,
        explanation=reason,
    )


def padding_changes(unpadded_max_difference: Sequence[float], padded: bool) -> Question | None:
    """Batches: whether running each sentence alone changes its real tokens' outputs; None while dropout is on."""
    if any(math.isnan(d) for d in unpadded_max_difference):
        return None
    worst = max(unpadded_max_difference)
    choices = ("Yes, they change", "No, they stay the same")
    alone = "alone, without the batch and its padding" if padded else "alone, as a batch of one"
    if padded:
        reason = (
            "The padding comes after every real token, so the causal mask hides it from them. And each item of a "
            "batch is computed on its own."
        )
    else:
        reason = "Each item of a batch is computed on its own: the same weights, and no numbers shared across items."
    return Question(
        "batches:padding",
        f"Run each sentence {alone}: will its real tokens get different context vectors than in the batch?",
        choices[1] if worst < SAME else choices[0],
        choices,
        explanation=f"{reason} The largest difference measured is {worst:.1e}.",
    )


def context_size(
    num_heads: int, d_out: int, wrapper_width: int, d_in: int, context_length: int, dropout: float
) -> Question:
    """Multi-head: how many numbers the wrapper's output has per token. The prompt gives the constructor call, not
    the two factors: the learner must know that the wrapper's ``d_out`` is each head's and that heads are joined."""
    call = (
        f"MultiHeadAttentionWrapper(d_in={d_in}, d_out={d_out}, context_length={context_length}, "
        f"dropout={dropout:g}, num_heads={num_heads})"
    )
    return Question(
        f"multihead:width:{num_heads}:{d_out}:{d_in}",
        f"This page builds `{call}`. How many numbers will each token's row of its output have?",
        wrapper_width,
        decimals=0,
        explanation=f"{wrapper_width} = num_heads × d_out = {num_heads} × {d_out}. In the wrapper, d_out is each "
        "head's output size, and `torch.cat(..., dim=-1)` puts the heads' context vectors side by side. "
        f"`MultiHeadAttention` with d_out = {d_out} would give {d_out}: there d_out is all heads' together.",
    )
