"""The predict-then-reveal questions of the chapter's pages, built from each page's own numbers.

Each function takes what its page already has (weights, sums, shapes) and returns a ``Question`` whose answer is
read from those numbers, so a new sentence or new settings change the answer with them. Pages pass it to
``widgets.ask`` before the step that shows the result; Break it's questions are in ``page_text.mistakes``.
A question's text quotes tokens through ``attention.prose.literal``, the app's one Markdown escaper.

The rule: a question comes before its answer. Nothing a learner reads before pressing Reveal states the answer:
not the step's words, not a Break it mistake's explanation, not the cell panel, not an earlier step's words. So
neither the answer as the page prints it nor any phrase in the question's ``gives_away`` (the phrases that state
it: "one-hot", "expected value stays 1") appears there. The reason goes in ``explanation``, shown with the
Reveal; a later step may state it too. A number question's tolerance is at most a fifth of the distance to its
nearest wrong idea (``wrong_ideas``, checked when it is made; ``estimate`` derives it), so a learner who holds
that idea is told "not quite". ``tests/test_questions_first.py`` checks both on every page, Break it's ten
mistakes included."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attention.figures import visible_token
from attention.prose import literal


def quote(piece: str) -> str:
    """A token for a question's prompt: its whitespace visible, in quotes, shown as typed."""
    return f"“{literal(visible_token(piece))}”"


@dataclass(frozen=True)
class Question:
    """One question: a ``prompt``, and either ``choices`` (``answer`` is one of them) or a number.

    ``prompt`` and ``explanation`` (shown with the reveal: the reason, not only the number) are markdown, with
    tokens put in through ``quote``. For a number, an answer within ``tolerance`` of ``answer`` is right; it is
    typed and printed with ``decimals`` decimals. ``also_right`` holds other answers exactly as right (a tie).
    ``gives_away``: phrases that state the answer, which nothing before the Reveal may say (the module's rule).
    ``wrong_ideas``: numbers a learner reaches by a likely wrong reasoning; each lies more than five tolerances away.
    """

    key: str
    prompt: str
    answer: str | float
    choices: tuple[str, ...] | None = None
    tolerance: float = 0.0
    decimals: int = 2
    explanation: str = ""
    also_right: tuple[str | float, ...] = ()
    gives_away: tuple[str, ...] = ()
    wrong_ideas: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for answer in (self.answer, *self.also_right):
            if self.choices is not None and answer not in self.choices:
                raise ValueError(f"The answer {answer!r} is not one of the choices {self.choices}.")
            if self.choices is None and not (isinstance(answer, int | float) and math.isfinite(answer)):
                raise ValueError(f"A number question needs a finite number as its answer, got {answer!r}.")
        for idea in self.wrong_ideas:
            if self.tolerance > abs(float(self.answer) - idea) / 5 + 1e-12:
                raise ValueError(
                    f"The tolerance {self.tolerance} is more than a fifth of the distance from {self.answer} to "
                    f"the wrong idea {idea}."
                )

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


FINEST = 0.0005  # the finest tolerance asked for: an answer typed to 3 decimals


def tolerance_for(answer: float, wrong_ideas: Sequence[float], at_most: float) -> float:
    """At most ``at_most`` and a fifth of the distance from ``answer`` to its nearest wrong idea, rounded down to one
    significant digit (0.014 → 0.01). Ideas within five ``FINEST`` of the answer are not told apart from it."""
    fifths = [abs(answer - idea) / 5 for idea in wrong_ideas if abs(answer - idea) >= 5 * FINEST]
    tolerance = min([at_most, *fifths])
    exponent = math.floor(math.log10(tolerance))
    return max(FINEST, round(math.floor(tolerance / 10.0**exponent + 1e-9) * 10.0**exponent, -exponent))


def estimate(
    key: str,
    prompt: str,
    answer: float,
    wrong_ideas: Sequence[float],
    *,
    at_most: float,
    explanation: str,
    gives_away: Sequence[str] = (),
) -> Question:
    """A number question whose tolerance is ``tolerance_for`` its wrong ideas, said in the prompt ("within 0.01"),
    and typed with enough decimals to meet it (at least 2). Wrong ideas it cannot tell from the answer are left out."""
    tolerance = tolerance_for(answer, wrong_ideas, at_most)
    decimals = max(2, math.ceil(-math.log10(2 * tolerance) - 1e-9))  # a typed answer rounds by at most tolerance
    ideas = tuple(float(idea) for idea in wrong_ideas if abs(answer - idea) >= 5 * FINEST)
    return Question(
        key,
        f"{prompt} (within {tolerance:g})",
        float(answer),
        tolerance=tolerance,
        decimals=decimals,
        explanation=explanation,
        gives_away=tuple(gives_away),
        wrong_ideas=ideas,
    )


CHOICE_LIMIT = 8  # up to this many tokens a question lists them; beyond it the learner types a position
SAME = 1e-5  # differences below this count as none (float32 rounding)
CLOSE = 0.05  # a runner-up within this share of the largest weight is a close call, said with the reveal


def most_attended(weights_row, pieces: Sequence[str], query: int) -> Question:
    """Simplified attention: which input the query gives the largest weight (``weights_row`` (T,)); inputs that
    tie with it (within ``SAME``: a repeated token has the same embedding) are all right. A runner-up within
    ``CLOSE`` of the largest weight is named with the reveal: the book's x^(2) gives 0.2379 to itself and 0.2333
    to x^(3), whose vectors are almost equal."""
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
    rest = [j for j in np.argsort(-weights, kind="stable") if j not in tied]
    if rest and weights[best] - weights[rest[0]] < CLOSE * weights[best]:
        second = int(rest[0])
        result += (
            f" A close call: x^({second + 1}) {quote(pieces[second])} gets {weights[second]:.4f}, only "
            f"{weights[best] - weights[second]:.4f} less, because its score is almost as large."
        )
    key, explanation = f"simplified:most:{query}", reason + result
    gives_away = ("largest weight", "attends most to", f"{weights[best]:.4f}")
    if len(pieces) > CHOICE_LIMIT:
        also_numbers = tuple(j + 1 for j in others)
        prompt += " Type its position j of x^(j)."
        options = dict(explanation=explanation, also_right=also_numbers, gives_away=gives_away)
        return Question(key, prompt, best + 1, decimals=0, **options)
    choices = tuple(f"x^({j + 1}) “{visible_token(piece)}”" for j, piece in enumerate(pieces))
    also = tuple(choices[j] for j in others)
    options = dict(explanation=explanation, also_right=also, gives_away=gives_away)
    return Question(key, prompt, choices[best], choices, **options)


def scaling_direction(attn_scores_row, attn_weights_row, d_k: int, query: int) -> Question:
    """Q, K, V: whether dividing the scores by √d_k raises or lowers the query's largest weight
    (``attn_weights_row`` (T,): the page's softmax of the scaled scores; ``attn_scores_row`` (T,): unscaled)."""
    scores = np.asarray(attn_scores_row, dtype=np.float64)  # (T,)
    unscaled = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()  # softmax, as torch's: (T,)
    before, after = float(unscaled.max()), float(np.max(attn_weights_row))
    choices = ("It goes up", "It goes down", "It stays the same")
    answer = choices[2] if abs(after - before) < SAME else choices[0] if after > before else choices[1]
    if d_k == 1:
        reason, gives_away = "√1 = 1, so dividing changes no score and no weight.", ("changes no score",)
    elif answer == choices[2]:
        reason = "All its scores are equal, so there are no gaps to shrink: every weight stays the same."
        gives_away = ("no gaps to shrink",)
    else:
        reason = (
            f"Dividing by √{d_k} > 1 shrinks the gaps between the scores, so the softmax is flatter: the largest "
            "weight falls whenever d_k > 1."
        )
        gives_away = ("shrinks the gaps", "flatter", "largest weight falls")
    return Question(
        f"qkv:scaling:{query}",
        f"Query {query + 1}'s weights come from a softmax of its scores divided by √d_k = √{d_k}. Compared with a "
        "softmax of the unscaled scores, will its largest weight go up or down?",
        answer,
        choices,
        explanation=f"{reason} Without the division it would be {before:.4f}; with it, it is {after:.4f}.",
        gives_away=(*gives_away, f"{after:.4f}"),
    )


def masked_second_row(unmasked_weights, renormalized_weights, pieces: Sequence[str]) -> Question | None:
    """Causal mask: the second token's weight on the first after zeroing the future and renormalizing (both
    (T, T)). The prompt quotes the row's two weights before the mask, so the learner renormalizes them (the
    book's 0.2041 : 0.1659 becomes 0.5517 : 0.4483). None for a single token, which has no second row. Wrong ideas:
    the weight before the mask (not renormalized), an equal split of the two, the two swapped, and all of it."""
    if len(pieces) < 2:
        return None
    before = np.asarray(unmasked_weights, dtype=np.float64)[1]  # (T,)
    after = float(np.asarray(renormalized_weights, dtype=np.float64)[1, 0])
    first, itself = float(before[0]), float(before[1])
    return estimate(
        "causal_mask:second_row",
        f"Before the mask, the second token {quote(pieces[1])} gives {first:.4f} to x^(1) and {itself:.4f} to "
        "itself (step 1). The book will zero every weight above the diagonal, then divide each row by its new sum. "
        "What weight will x^(2) then give to x^(1)?",
        after,
        (first, 0.5, itself / (first + itself), 1.0),
        at_most=0.01,
        explanation=f"It is {first:.4f} / ({first:.4f} + {itself:.4f}) = {after:.4f}: x^(2) may see only x^(1) "
        "and itself. Dividing by their sum keeps their ratio and makes the row sum to 1 again.",
        gives_away=("keeps their ratio", f"{after:.4f}"),
    )


def dropout_average_sum(row_sums, pieces: Sequence[str], query: int, p: float, active: bool) -> Question | None:
    """Dropout: what ``query``'s row sums to on average over many draws (``row_sums`` (T,) of this draw's): 1,
    the row's sum before dropout, which can be reasoned out, where one draw's sum cannot. None while nothing is
    dropped (``active`` False): the page has just said so, which answers it. Wrong ideas: 1 − p (survivors not
    scaled up) and 1/(1 − p) (every weight scaled up, none dropped)."""
    if not active:
        return None
    this_draw = float(np.asarray(row_sums, dtype=np.float64)[query])
    reason = (
        f"A weight w survives with probability 1 − p and is then scaled to w/(1 − p), so its average is "
        f"(1 − p) · w/(1 − p) = w. The row's average sum is its sum before dropout, 1 (this draw: {this_draw:.4f})."
    )
    return estimate(
        f"dropout:average_sum:{query}",
        f"Before dropout, the weights of the query {quote(pieces[query])} (row {query + 1}) sum to 1. With dropout "
        f"at p = {p:.2f}, what will they sum to on average over many draws?",
        1.0,
        (1 - p, 1 / (1 - p)),
        at_most=0.05,
        explanation=reason,
        gives_away=(
            "expected value stays 1",
            "expected sum stays 1",
            "(1 − p) · w/(1 − p) = w",
            "keeps each weight's average",
            "average is w",
        ),
    )


def padding_changes(unpadded_max_difference: Sequence[float], padded: bool) -> Question | None:
    """Batches of two sentences: whether running each alone changes its own tokens' outputs; None while dropout is
    on. ``padded``: the shorter one is padded, and the prompt says what padding tokens are."""
    if any(math.isnan(d) for d in unpadded_max_difference):
        return None
    worst = max(unpadded_max_difference)
    choices = ("Yes, they change", "No, they stay the same")
    if padded:
        prompt = (
            "To stack the two sentences, the shorter one got padding tokens: copies of `<|endoftext|>` added at its "
            "end, so both have the same length. Run each sentence alone, without padding: will its own tokens "
            "get different context vectors than in the batch?"
        )
        reason = (
            "The padding comes after every token of the sentence, so the causal mask hides it from them. And each "
            "item of a batch is computed on its own."
        )
        gives_away = ("causal mask hides it", "computed on its own", "changed nothing")
    else:
        prompt = (
            "Run each sentence alone, as a batch of one: will its tokens get different context vectors than beside "
            "the other sentence in the batch?"
        )
        reason = "Each item of a batch is computed on its own: the same weights, and no numbers shared across items."
        gives_away = ("computed on its own", "no numbers shared")
    return Question(
        "batches:padding",
        prompt,
        choices[1] if worst < SAME else choices[0],
        choices,
        explanation=f"{reason} The largest difference measured is {worst:.1e}.",
        gives_away=gives_away,
    )


def masked_in_batch(mask, batch_size: int) -> Question:
    """Batches of one sentence twice, as in the book: how many scores ``masked_fill`` sets to −∞ in ``attn_scores``
    (b, T, T), given its (T, T) slice ``mask`` (True above the diagonal). A wrong idea: the slice's own count (one
    item). A count: no tolerance."""
    mask = np.asarray(mask, dtype=bool)  # (T, T)
    num_tokens, one_item = mask.shape[0], int(mask.sum())
    count = batch_size * one_item
    return Question(
        f"batches:masked:{batch_size}:{num_tokens}",
        f"`attn_scores` has shape ({batch_size}, {num_tokens}, {num_tokens}): one ({num_tokens}, {num_tokens}) "
        f"matrix of scores per item of the batch. How many of its scores will `masked_fill` set to −∞ with this "
        "slice?",
        count,
        decimals=0,
        explanation=f"{count} = {batch_size} × {one_item}. The slice has {one_item} ones, the keys after each query, "
        f"and broadcasting applies it to each of the {batch_size} items: each item hides its own future.",
        gives_away=(f"{batch_size} × {one_item}", f"{count} scores"),
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
        gives_away=("num_heads × d_out", "torch.cat", "concatenat", "context vectors side by side"),
    )
