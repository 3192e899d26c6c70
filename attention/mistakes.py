"""Common mistakes in chapter 3's attention code: the catalogue, and running one beside the right code.

Each mistake is one changed line (or two) of ``MultiHeadAttention``: of its
forward pass, or of ``__init__`` for the two mask mistakes, whose buffer is
built there. ``mistake_steps`` cuts the book's forward pass into five steps and
writes each mistaken twin, and ``mistake_measures`` measures what a mistake
does. A ``Mistake`` here names the changed lines, why they are wrong, the
steps with the mistake in them and its measure. ``run_mistake(name, mha, x)``
computes the right and the wrong forward pass with the same parameters and
inputs, and measures what the mistake does, with a sentence a learner reads
for each number.

Kept apart from the chapter's classes on purpose: they show the book's code,
and these modules show what happens when a line of it is changed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from .checks import check_batch, check_dropout, check_size
from .mistake_measures import (
    Measure,
    SaturationCurve,
    measure_diagonal_0,
    measure_divided_by_d_k,
    measure_dropout,
    measure_fill_zero,
    measure_mask_after_softmax,
    measure_merge_without_transpose,
    measure_no_scaling,
    measure_softmax_wrong_dim,
    measure_tril_mask,
    measure_view_without_transpose,
    saturation_curve,
)
from .mistake_steps import (
    RIGHT,
    Forward,
    Steps,
    drop_without_rescale,
    forward,
    mask_buffer_diagonal_0,
    mask_buffer_tril,
    merge_heads_without_transpose,
    split_heads_without_transpose,
    weigh_divided_by_d_k,
    weigh_fill_zero,
    weigh_mask_after_softmax,
    weigh_unscaled,
    weigh_wrong_dim,
)
from .multihead import MultiHeadAttention


@dataclass(frozen=True)
class Mistake:
    """One mistake: which line changes, how, and why it is wrong.

    ``right_code`` and ``wrong_code`` are the package's line(s) and the
    mistaken ones, in the book's style, for a page to show as a diff.
    ``steps`` is the forward pass with the mistake in it; ``measure`` is
    what the mistake does, one of ``mistake_measures``'s ``measure_*``
    functions. ``saturates`` marks the scaling mistakes, whose run also
    measures the softmax against d_k.
    """

    name: str
    title: str
    right_code: str
    wrong_code: str
    why: str
    steps: Steps
    measure: Callable[..., tuple[Measure, ...]]
    saturates: bool = False


_SOFTMAX_LINE = "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
_MASK_LINE = 'self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))'

MISTAKES: dict[str, Mistake] = {
    mistake.name: mistake
    for mistake in (
        Mistake(
            "fill_zero",
            "Mask filled with 0 instead of −∞",
            "attn_scores.masked_fill_(mask_bool, -torch.inf)",
            "attn_scores.masked_fill_(mask_bool, 0)",
            "A score of 0 is an ordinary score: exp(0) = 1, so the softmax still gives later tokens weight.",
            replace(RIGHT, weigh=weigh_fill_zero),
            measure_fill_zero,
        ),
        Mistake(
            "tril_mask",
            "tril instead of triu",
            _MASK_LINE,
            _MASK_LINE.replace("triu", "tril"),
            "tril(..., diagonal=1) marks the lower triangle, the diagonal and the next token. So each token sees only "
            "tokens two or more places later, and the last two rows, with nothing left to see, become NaN.",
            replace(RIGHT, mask=mask_buffer_tril),
            measure_tril_mask,
        ),
        Mistake(
            "diagonal_0",
            "diagonal=0 instead of diagonal=1",
            _MASK_LINE,
            _MASK_LINE.replace("diagonal=1", "diagonal=0"),
            "diagonal=0 puts the diagonal into the mask, so each token is hidden from itself.",
            replace(RIGHT, mask=mask_buffer_diagonal_0),
            measure_diagonal_0,
        ),
        Mistake(
            "no_scaling",
            "No scaling by 1/√d_k",
            _SOFTMAX_LINE,
            "attn_weights = torch.softmax(attn_scores, dim=-1)",
            "The spread (standard deviation) of a dot product of two vectors of d_k random numbers (variance 1) "
            "grows like √d_k. Unscaled, "
            "large d_k makes rows one-hot (all weight on one key), where the softmax's gradient nears 0.",
            replace(RIGHT, weigh=weigh_unscaled),
            measure_no_scaling,
            saturates=True,
        ),
        Mistake(
            "divide_by_d_k",
            "Dividing by d_k instead of √d_k",
            _SOFTMAX_LINE,
            "attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)",
            "Dividing by d_k shrinks the scores too far: each row tends to equal weights, whatever the scores. "
            "On the way back, the gradient shrinks by d_k instead of √d_k.",
            replace(RIGHT, weigh=weigh_divided_by_d_k),
            measure_divided_by_d_k,
            saturates=True,
        ),
        Mistake(
            "view_without_transpose",
            "view to heads without transpose",
            "keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)\nkeys = keys.transpose(1, 2)",
            "keys = keys.view(b, self.num_heads, num_tokens, self.head_dim)",
            "view only relabels memory, which holds one token after another. The shape is right, but most of a "
            "head's rows now hold numbers of other tokens, later ones included.",
            replace(RIGHT, split=split_heads_without_transpose),
            measure_view_without_transpose,
        ),
        Mistake(
            "dropout_without_rescale",
            "Dropout without the 1/(1 − p) rescale",
            "dropped_weights, dropout_mask = drop_with_mask(self.dropout, attn_weights)"
            "  # the book's attn_weights = self.dropout(attn_weights): attn_weights * keep / (1 - p)",
            "dropped_weights = attn_weights * keep  # keep: 1 with probability 1 - p, else 0",
            "Without 1/(1 − p) the weights are smaller on average in training than at inference, where nothing "
            "is dropped. nn.Dropout rescales for you.",
            replace(RIGHT, drop=drop_without_rescale),
            measure_dropout,
        ),
        Mistake(
            "mask_after_softmax",
            "Masking after the softmax without renormalizing",
            "attn_scores.masked_fill_(mask_bool, -torch.inf)\n" + _SOFTMAX_LINE,
            _SOFTMAX_LINE + "\nattn_weights.masked_fill_(mask_bool, 0)",
            "The softmax already shared each row's weight with later tokens. Zeroing their weights afterwards leaves "
            "every row but the last (it has no later token) summing to less than 1, and later scores still shape "
            "every weight through the softmax's denominator.",
            replace(RIGHT, weigh=weigh_mask_after_softmax),
            measure_mask_after_softmax,
        ),
        Mistake(
            "softmax_wrong_dim",
            "Softmax over the wrong dimension",
            _SOFTMAX_LINE,
            _SOFTMAX_LINE.replace("dim=-1", "dim=-2"),
            "dim=-2 normalizes each key's column across queries: a query's weights no longer sum to 1, and they "
            "depend on the queries of later tokens.",
            replace(RIGHT, weigh=weigh_wrong_dim),
            measure_softmax_wrong_dim,
        ),
        Mistake(
            "merge_without_transpose",
            "Merging heads without transposing back",
            "context_vec = (dropped_weights @ values).transpose(1, 2)  # dropped_weights: the book's attn_weights "
            "after dropout",
            "context_vec = dropped_weights @ values",
            "Without transpose(1, 2), memory holds head 1's vectors for every token, then head 2's. view cuts that "
            "into rows, so a token's row holds other tokens' context vectors: rows are scrambled across tokens.",
            replace(RIGHT, merge=merge_heads_without_transpose),
            measure_merge_without_transpose,
        ),
    )
}


@dataclass(frozen=True)
class MistakeRun:
    """The right and the wrong forward pass on the same weights and inputs, and what the mistake does.

    ``right_weights`` and ``wrong_weights`` are the first head (``[0, 0]``) of the first sequence;
    ``*_output`` the whole outputs. ``max_output_difference`` is the largest
    |wrong - right| over the outputs that are numbers in both; ``nan_tokens``
    counts the tokens of the first sequence whose wrong output is NaN.
    ``curve`` is set for the scaling mistakes only. ``dropout_keep`` is the dropout draw of that
    head, 1 where a weight survives, for ``dropout_without_rescale`` only (else None).

    Shapes: right_weights, wrong_weights, dropout_keep (num_tokens, num_tokens);
    right_output, wrong_output (b, num_tokens, d_out).
    """

    mistake: Mistake
    right_weights: torch.Tensor
    wrong_weights: torch.Tensor
    right_output: torch.Tensor
    wrong_output: torch.Tensor
    max_output_difference: float
    nan_tokens: int
    measures: tuple[Measure, ...]
    curve: SaturationCurve | None = None
    dropout_keep: torch.Tensor | None = None

    def measure(self, key: str) -> Measure:
        """The measure named ``key``."""
        for measure in self.measures:
            if measure.key == key:
                return measure
        raise KeyError(f"{self.mistake.name} has no measure {key!r}.")


def run_mistake(
    name: str, mha: MultiHeadAttention, x: torch.Tensor, *, seed: int = 123, dropout_samples: int = 1000
) -> MistakeRun:
    """Run mistake ``name`` beside the right code on ``mha``'s parameters and ``x``, and measure the difference.

    Everything runs in eval mode except ``dropout_without_rescale``, which
    drops with ``mha.dropout.p``: the shown draw is seeded with ``seed``, the
    row-sum average is over ``dropout_samples`` draws of the first head's weights (fewer
    for long inputs, each of which averages more rows; the measure's label
    says how many). ``seed`` also draws the
    change to later tokens that tests whether the first token sees them.

    Shapes: x (num_tokens, d_in) or (b, num_tokens, d_in).
    """
    if name not in MISTAKES:
        raise ValueError(f"Unknown mistake {name!r}; choose one of: {', '.join(MISTAKES)}.")
    if not isinstance(mha, MultiHeadAttention):
        raise ValueError(f"run_mistake() needs a MultiHeadAttention, got {type(mha).__name__}.")
    check_size("dropout_samples", dropout_samples, upper=10_000)
    mistake = MISTAKES[name]
    if isinstance(x, torch.Tensor) and x.dim() == 2:
        x = x.unsqueeze(0)  # (b=1, num_tokens, d_in)
    check_batch(x, mha.d_in, batched=True, context_length=mha.mask.shape[0])
    generator = torch.Generator().manual_seed(seed)
    keep = None
    if name == "dropout_without_rescale":
        check_dropout(mha.dropout.p)
        shape = (x.shape[0], mha.num_heads, x.shape[1], x.shape[1])
        keep = torch.empty(shape).bernoulli_(1 - mha.dropout.p, generator=generator)  # 1 = kept
    with torch.no_grad():
        right = forward(mha, x, RIGHT, keep=keep)
        wrong = forward(mha, x, mistake.steps, keep=keep)
        later = x.clone()
        later[:, 1:] += torch.randn(later[:, 1:].shape, generator=generator)  # every token after the first changed
        right_moved = _first_token_change(right, forward(mha, later, RIGHT, keep=keep))
        wrong_moved = _first_token_change(wrong, forward(mha, later, mistake.steps, keep=keep))
        curve = saturation_curve(mistake.steps.weigh, seed=seed) if mistake.saturates else None
        specific = mistake.measure(mha, x, right.dropped_weights, wrong.dropped_weights, curve, dropout_samples, seed)
    both = right.output.isfinite() & wrong.output.isfinite()
    difference = (wrong.output - right.output).abs()[both]
    max_difference = difference.max().item() if difference.numel() else math.nan
    common = (
        Measure(
            "first_token_moves",
            "First token's output change when later tokens change",
            right_moved,
            wrong_moved,
            _moves_sentence(right_moved, wrong_moved, scrambles=name in _SCRAMBLING),
        ),
        Measure(
            "output_difference",
            "Largest output difference",
            0.0,
            max_difference,
            f"The largest difference between the right and the wrong output is {max_difference:.4g}.",
        ),
    )
    return MistakeRun(
        mistake=mistake,
        right_weights=right.dropped_weights[0, 0],
        wrong_weights=wrong.dropped_weights[0, 0],
        right_output=right.output,
        wrong_output=wrong.output,
        max_output_difference=max_difference,
        nan_tokens=int(wrong.output[0].isnan().any(dim=-1).sum()),
        measures=(*specific, *common),
        curve=curve,
        dropout_keep=None if keep is None else keep[0, 0],
    )


def _first_token_change(before: Forward, after: Forward) -> float:
    return (after.output[:, 0] - before.output[:, 0]).abs().max().item()


_SCRAMBLING = ("view_without_transpose", "merge_without_transpose")  # they move numbers between rows, not the mask


def _moves_sentence(right: float, wrong: float, scrambles: bool = False) -> str:
    if math.isnan(wrong):
        return "The first token's output is NaN, so it cannot be compared."
    if wrong > 1e-6 and scrambles:
        return (
            f"Change every token after the first and the first token's output row moves by {wrong:.3g} "
            f"(the right code: {right:.3g}). The mask still works; the reshape put later tokens' numbers in that row."
        )
    if wrong > 1e-6:
        return (
            f"Change every token after the first and the first token's output moves by {wrong:.3g}: "
            f"later tokens reach it (the right code: {right:.3g})."
        )
    return "Changing the tokens after the first leaves the first token's output alone: later tokens stay hidden."
