"""Common mistakes in chapter 3's attention code, as running code with their consequences measured.

Each mistake is one changed line (or two) of ``MultiHeadAttention``'s forward
pass. The forward pass here is the book's, cut into five steps: split into
heads, build the mask, turn scores into weights, dropout, merge the heads. A
mistake swaps one step for a twin that differs in the changed line; the other
steps stay the package's. ``run_mistake(name, mha, x)`` computes the right and the
wrong forward pass with the same weights and inputs, and measures what the
mistake does, with a sentence a learner reads for each number.

Kept apart from the chapter's classes on purpose: they show the book's code,
and this module shows what happens when a line of it is changed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from .checks import check_batch, check_dropout, check_size
from .multihead import MultiHeadAttention

SATURATION_D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
LARGE_D_K = 512  # the d_k at which the scaling mistakes are measured
MAX_DROPOUT_WEIGHTS = 2_000_000  # weights drawn in all for the dropout average; long inputs get fewer draws


# The five steps of the forward pass, right.


def split_heads(mha: MultiHeadAttention, keys: torch.Tensor) -> torch.Tensor:
    """(b, num_tokens, d_out) → (b, num_heads, num_tokens, head_dim), as the book splits keys, queries, values."""
    b, num_tokens, d_out = keys.shape
    keys = keys.view(b, num_tokens, mha.num_heads, mha.head_dim)  # (b, num_tokens, num_heads, head_dim)
    keys = keys.transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
    return keys


def mask_buffer(context_length: int) -> torch.Tensor:
    """The ``mask`` buffer: 1 above the diagonal, the future each query must not see."""
    return torch.triu(torch.ones(context_length, context_length), diagonal=1)  # (context_length, context_length)


def weigh(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Masked, scaled softmax: scores (..., num_tokens, num_tokens) → attention weights, each row summing to 1."""
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (..., num_tokens, num_tokens)
    return attn_weights


def drop(attn_weights: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    """``self.dropout(attn_weights)`` with a given draw: ``keep`` is 1 where a weight survives, else 0."""
    dropped_weights = attn_weights * keep / (1 - p)  # (..., num_tokens, num_tokens)
    return dropped_weights


def merge_heads(mha: MultiHeadAttention, dropped_weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Each head's context vectors, concatenated per token: → (b, num_tokens, d_out), before ``out_proj``."""
    b, num_heads, num_tokens, head_dim = values.shape
    context_vec = (dropped_weights @ values).transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
    context_vec = context_vec.contiguous().view(b, num_tokens, mha.d_out)  # (b, num_tokens, d_out)
    return context_vec


# Each mistake: the same step with one line changed.


def split_heads_without_transpose(mha: MultiHeadAttention, keys: torch.Tensor) -> torch.Tensor:
    b, num_tokens, d_out = keys.shape
    keys = keys.view(b, mha.num_heads, num_tokens, mha.head_dim)  # Mistake: the right shape, the wrong numbers
    return keys


def mask_buffer_tril(context_length: int) -> torch.Tensor:
    return torch.tril(torch.ones(context_length, context_length), diagonal=1)  # Mistake: the lower triangle


def mask_buffer_diagonal_0(context_length: int) -> torch.Tensor:
    return torch.triu(torch.ones(context_length, context_length), diagonal=0)  # Mistake: hides the diagonal too


def weigh_fill_zero(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, 0)  # Mistake: exp(0) = 1, not 0
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (..., num_tokens, num_tokens)
    return attn_weights


def weigh_unscaled(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores, dim=-1)  # Mistake: no 1/sqrt(d_k)
    return attn_weights


def weigh_divided_by_d_k(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)  # Mistake: d_k, not sqrt(d_k)
    return attn_weights


def weigh_mask_after_softmax(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (..., num_tokens, num_tokens)
    attn_weights.masked_fill_(mask_bool, 0)  # Mistake: after the softmax, and no renormalising
    return attn_weights


def weigh_wrong_dim(attn_scores: torch.Tensor, mask_bool: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    attn_scores.masked_fill_(mask_bool, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)  # Mistake: normalises columns
    return attn_weights


def drop_without_rescale(attn_weights: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    dropped_weights = attn_weights * keep  # Mistake: no 1/(1 - p)
    return dropped_weights


def merge_heads_without_transpose(
    mha: MultiHeadAttention, dropped_weights: torch.Tensor, values: torch.Tensor
) -> torch.Tensor:
    b, num_heads, num_tokens, head_dim = values.shape
    context_vec = dropped_weights @ values  # Mistake: (b, num_heads, num_tokens, head_dim), not transposed back
    context_vec = context_vec.contiguous().view(b, num_tokens, mha.d_out)  # (b, num_tokens, d_out)
    return context_vec


@dataclass(frozen=True)
class Steps:
    """The five steps of the forward pass that a mistake can change."""

    split: Callable = split_heads
    mask: Callable = mask_buffer
    weigh: Callable = weigh
    drop: Callable = drop
    merge: Callable = merge_heads


RIGHT = Steps()


@dataclass(frozen=True)
class Mistake:
    """One mistake: which line changes, how, and why it is wrong.

    ``right_code`` and ``wrong_code`` are the package's line(s) and the
    mistaken ones, in the book's style, for a page to show as a diff.
    ``steps`` is the forward pass with the mistake in it.
    """

    name: str
    title: str
    right_code: str
    wrong_code: str
    why: str
    steps: Steps


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
            "A score of 0 is an ordinary score: exp(0) = 1, so the softmax still gives future tokens weight.",
            replace(RIGHT, weigh=weigh_fill_zero),
        ),
        Mistake(
            "tril_mask",
            "tril instead of triu",
            _MASK_LINE,
            _MASK_LINE.replace("triu", "tril"),
            "tril(..., diagonal=1) marks the lower triangle, the diagonal and the next token: the mask hides the past "
            "and shows what comes two places later.",
            replace(RIGHT, mask=mask_buffer_tril),
        ),
        Mistake(
            "diagonal_0",
            "diagonal=0 instead of diagonal=1",
            _MASK_LINE,
            _MASK_LINE.replace("diagonal=1", "diagonal=0"),
            "diagonal=0 puts the diagonal into the mask, so each token is hidden from itself.",
            replace(RIGHT, mask=mask_buffer_diagonal_0),
        ),
        Mistake(
            "no_scaling",
            "No scaling by 1/√d_k",
            _SOFTMAX_LINE,
            "attn_weights = torch.softmax(attn_scores, dim=-1)",
            "Dot products of d_k numbers grow like √d_k; unscaled, the softmax turns one-hot and its gradient "
            "vanishes.",
            replace(RIGHT, weigh=weigh_unscaled),
        ),
        Mistake(
            "divide_by_d_k",
            "Dividing by d_k instead of √d_k",
            _SOFTMAX_LINE,
            "attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)",
            "Dividing by d_k shrinks the scores too far: each row tends to equal weights, whatever the scores.",
            replace(RIGHT, weigh=weigh_divided_by_d_k),
        ),
        Mistake(
            "view_without_transpose",
            "view to heads without transpose",
            "keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)\nkeys = keys.transpose(1, 2)",
            "keys = keys.view(b, self.num_heads, num_tokens, self.head_dim)",
            "view only relabels memory, which is in token order; the shape is right but the heads get mixed tokens.",
            replace(RIGHT, split=split_heads_without_transpose),
        ),
        Mistake(
            "dropout_without_rescale",
            "Dropout without the 1/(1 − p) rescale",
            "dropped_weights, dropout_mask = drop_with_mask(self.dropout, attn_weights)"
            "  # attn_weights * keep / (1 - p)",
            "dropped_weights = attn_weights * keep  # keep: 1 with probability 1 - p, else 0",
            "Without 1/(1 − p) the weights are smaller on average in training than at inference, where nothing "
            "is dropped. nn.Dropout rescales for you.",
            replace(RIGHT, drop=drop_without_rescale),
        ),
        Mistake(
            "mask_after_softmax",
            "Masking after the softmax without renormalising",
            "attn_scores.masked_fill_(mask_bool, -torch.inf)\n" + _SOFTMAX_LINE,
            _SOFTMAX_LINE + "\nattn_weights.masked_fill_(mask_bool, 0)",
            "The softmax already shared each row's weight with the future; zeroing it afterwards leaves rows below 1, "
            "and the later tokens' scores still shape every weight through the softmax's denominator.",
            replace(RIGHT, weigh=weigh_mask_after_softmax),
        ),
        Mistake(
            "softmax_wrong_dim",
            "Softmax over the wrong dimension",
            _SOFTMAX_LINE,
            _SOFTMAX_LINE.replace("dim=-1", "dim=-2"),
            "dim=-2 normalises each key's column across queries: a query's weights no longer sum to 1, and they "
            "depend on the queries of later tokens.",
            replace(RIGHT, weigh=weigh_wrong_dim),
        ),
        Mistake(
            "merge_without_transpose",
            "Concatenating heads in the wrong order",
            "context_vec = (dropped_weights @ values).transpose(1, 2)",
            "context_vec = dropped_weights @ values",
            "Merged without transposing back, memory holds all of head 0's tokens, then head 1's, so a token's row "
            "is filled with other tokens' context vectors.",
            replace(RIGHT, merge=merge_heads_without_transpose),
        ),
    )
}


@dataclass(frozen=True)
class Forward:
    """One forward pass: the weights after the softmax, after dropout (those multiply the values), and the output.

    Shapes: attn_weights, dropped_weights (b, num_heads, num_tokens, num_tokens); output (b, num_tokens, d_out).
    """

    attn_weights: torch.Tensor
    dropped_weights: torch.Tensor
    output: torch.Tensor


def forward(
    mha: MultiHeadAttention, x: torch.Tensor, steps: Steps = RIGHT, *, keep: torch.Tensor | None = None
) -> Forward:
    """``mha``'s forward pass, step by step, with ``steps`` in place of the book's.

    ``keep`` is a dropout draw, (b, num_heads, num_tokens, num_tokens) with 1
    where a weight survives; without one there is no dropout (eval mode).

    Shapes: x (b, num_tokens, d_in); see ``Forward``.
    """
    b, num_tokens, d_in = x.shape
    keys = steps.split(mha, mha.W_key(x))  # (b, num_heads, num_tokens, head_dim)
    queries = steps.split(mha, mha.W_query(x))  # (b, num_heads, num_tokens, head_dim)
    values = steps.split(mha, mha.W_value(x))  # (b, num_heads, num_tokens, head_dim)
    attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
    mask_bool = steps.mask(mha.mask.shape[0]).bool()[:num_tokens, :num_tokens]  # (num_tokens, num_tokens)
    attn_weights = steps.weigh(attn_scores, mask_bool, keys)  # (b, num_heads, num_tokens, num_tokens)
    dropped_weights = attn_weights if keep is None else steps.drop(attn_weights, keep, mha.dropout.p)
    context_vec = steps.merge(mha, dropped_weights, values)  # (b, num_tokens, d_out)
    return Forward(attn_weights, dropped_weights, mha.out_proj(context_vec))


@dataclass(frozen=True)
class Measure:
    """One measured consequence: its value with the right code and with the mistake, and a sentence about it."""

    key: str
    label: str
    right: float
    wrong: float
    sentence: str


@dataclass(frozen=True)
class SaturationCurve:
    """The softmax of random score rows against d_k, with the right scaling and with a scaling mistake.

    The queries, keys and values are drawn as ``scaling_lab`` draws them (the
    same generator, order and shapes), so the right column's max weight and
    entropy and gradient norm equal its scaled ones. ``*_grad_norm`` is the
    gradient of the weighted value sum with respect to the scores the softmax
    receives, as ``scaling_lab`` measures it. ``num_keys`` is the length of
    each row.

    Shapes: every tensor (len(d_ks),).
    """

    d_ks: torch.Tensor
    right_max_weight: torch.Tensor
    wrong_max_weight: torch.Tensor
    right_entropy: torch.Tensor
    wrong_entropy: torch.Tensor
    right_grad_norm: torch.Tensor
    wrong_grad_norm: torch.Tensor
    num_keys: int

    @property
    def uniform_entropy(self) -> float:
        """log(num_keys), the entropy of a row of equal weights."""
        return math.log(self.num_keys)


@dataclass(frozen=True)
class MistakeRun:
    """The right and the wrong forward pass on the same weights and inputs, and what the mistake does.

    ``right_weights`` and ``wrong_weights`` are head 0 of the first sequence;
    ``*_output`` the whole outputs. ``max_output_difference`` is the largest
    |wrong - right| over the outputs that are numbers in both; ``nan_tokens``
    counts the tokens of the first sequence whose wrong output is NaN.
    ``curve`` is set for the scaling mistakes only.

    Shapes: right_weights, wrong_weights (num_tokens, num_tokens);
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

    def measure(self, key: str) -> Measure:
        """The measure named ``key``."""
        for measure in self.measures:
            if measure.key == key:
                return measure
        raise KeyError(f"{self.mistake.name} has no measure {key!r}.")


def run_mistake(
    name: str, mha: MultiHeadAttention, x: torch.Tensor, *, seed: int = 123, dropout_samples: int = 1000
) -> MistakeRun:
    """Run mistake ``name`` beside the right code on ``mha``'s weights and ``x``, and measure the difference.

    Everything runs in eval mode except ``dropout_without_rescale``, which
    drops with ``mha.dropout.p``: the shown draw is seeded with ``seed``, the
    row-sum average is over ``dropout_samples`` draws of head 0's weights (fewer
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
        curve = saturation_curve(name, seed=seed) if name in ("no_scaling", "divide_by_d_k") else None
        specific = _MEASURES[name](mha, x, right.dropped_weights, wrong.dropped_weights, curve, dropout_samples, seed)
    both = right.output.isfinite() & wrong.output.isfinite()
    difference = (wrong.output - right.output).abs()[both]
    max_difference = difference.max().item() if difference.numel() else math.nan
    common = (
        Measure(
            "first_token_moves",
            "First token's output change when later tokens change",
            right_moved,
            wrong_moved,
            _moves_sentence(right_moved, wrong_moved),
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
    )


def _first_token_change(before: Forward, after: Forward) -> float:
    return (after.output[:, 0] - before.output[:, 0]).abs().max().item()


def _moves_sentence(right: float, wrong: float) -> str:
    if math.isnan(wrong):
        return "The first token's output is NaN, so it cannot be compared."
    if wrong > 1e-6:
        return (
            f"Change every token after the first and the first token's output moves by {wrong:.3g}: "
            f"it sees the future (the right code: {right:.3g})."
        )
    return "Changing the tokens after the first leaves the first token's output alone: the future stays hidden."


# The measurements of each mistake, all on head 0 unless they say otherwise.


def _above_diagonal(attn_weights: torch.Tensor) -> torch.Tensor:
    num_tokens = attn_weights.shape[-1]
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)  # (num_tokens, num_tokens)


def _fill_zero(mha, x, right, wrong, curve, samples, seed):
    future = _above_diagonal(right)  # (num_tokens, num_tokens)
    first_right = right[0, 0, 0, 1:].sum().item()
    first_wrong = wrong[0, 0, 0, 1:].sum().item()
    mean_right = right[..., future].mean().item() if future.any() else 0.0
    mean_wrong = wrong[..., future].mean().item() if future.any() else 0.0
    return (
        Measure(
            "first_token_future_weight",
            "First token's weight on later tokens",
            first_right,
            first_wrong,
            f"With 0 in place of −∞ the first token puts {first_wrong:.0%} of its attention on tokens that come "
            f"after it; the right code puts {first_right:.0%}.",
        ),
        Measure(
            "mean_future_weight",
            "Mean weight above the diagonal (all heads)",
            mean_right,
            mean_wrong,
            f"On average a weight above the diagonal is {mean_wrong:.3f} instead of 0.",
        ),
    )


def _nan_rows(attn_weights: torch.Tensor) -> torch.Tensor:
    return attn_weights[0, 0].isnan().any(dim=-1)  # (num_tokens,)


def _past_and_future(weights: torch.Tensor) -> tuple[float, float]:
    """Mean row sum on the past (with the token itself) and on the future, over head 0's rows that are numbers."""
    rows = weights[0, 0][~_nan_rows(weights)]  # (finite rows, num_tokens)
    if rows.numel() == 0:
        return math.nan, math.nan
    future = _above_diagonal(weights)[~_nan_rows(weights)]  # (finite rows, num_tokens)
    return (rows * ~future).sum(dim=-1).mean().item(), (rows * future).sum(dim=-1).mean().item()


def _nan_measure(right, wrong, sentence: str) -> Measure:
    right_nan, wrong_nan = int(_nan_rows(right).sum()), int(_nan_rows(wrong).sum())
    return Measure("nan_rows", "Rows of weights that are NaN", right_nan, wrong_nan, sentence.format(n=wrong_nan))


def _tril_mask(mha, x, right, wrong, curve, samples, seed):
    past_right, future_right = _past_and_future(right)
    past_wrong, future_wrong = _past_and_future(wrong)
    return (
        Measure(
            "past_weight",
            "Weight on the past and the token itself, per row",
            past_right,
            past_wrong,
            f"With tril each token gives {past_wrong:.0%} of its attention to itself and earlier tokens, "
            f"instead of {past_right:.0%}.",
        ),
        Measure(
            "future_weight",
            "Weight on later tokens, per row",
            future_right,
            future_wrong,
            f"It gives {future_wrong:.0%} to tokens at least two places ahead, which the right code hides.",
        ),
        _nan_measure(
            right,
            wrong,
            "{n} rows are hidden completely (the last tokens have nothing two places ahead); softmax over "
            "nothing but −∞ is 0/0, so they are NaN.",
        ),
    )


def _diagonal_0(mha, x, right, wrong, curve, samples, seed):
    def self_weight(weights):
        diagonal = weights[0, 0].diagonal()[~_nan_rows(weights)]  # (finite rows,)
        return diagonal.mean().item() if diagonal.numel() else math.nan

    right_self, wrong_self = self_weight(right), self_weight(wrong)
    return (
        Measure(
            "self_weight",
            "Each token's weight on itself, mean",
            right_self,
            wrong_self,
            f"With diagonal=0 each token's weight on itself is {wrong_self:.3f} instead of {right_self:.3f} "
            "on average.",
        ),
        _nan_measure(
            right,
            wrong,
            "{n} row is NaN: the first token may see only itself, the mask hides that too, and softmax over "
            "nothing but −∞ is 0/0.",
        ),
    )


def _entropy(attn_weights: torch.Tensor) -> torch.Tensor:
    return -(attn_weights * attn_weights.clamp_min(1e-30).log()).sum(dim=-1)  # (..., num_tokens)


def _scaling(mha, x, right, wrong, curve, samples, seed):
    at = SATURATION_D_KS.index(LARGE_D_K)
    right_max, wrong_max = right.max(dim=-1).values.mean().item(), wrong.max(dim=-1).values.mean().item()
    here = (
        f"Here head_dim = {mha.head_dim}: the largest weight in a row is {wrong_max:.3f} on average "
        f"instead of {right_max:.3f}."
    )
    if mha.head_dim == 1:
        here += " With head_dim = 1, √d_k = d_k = 1, so the mistake changes nothing until d_k grows."
    wrong_at, right_at = curve.wrong_max_weight[at].item(), curve.right_max_weight[at].item()
    return (
        Measure("max_weight_here", "Largest weight per row, mean (all heads)", right_max, wrong_max, here),
        Measure(
            "max_weight_large_d_k",
            f"Largest weight per row at d_k = {LARGE_D_K}",
            right_at,
            wrong_at,
            f"At d_k = {LARGE_D_K} the largest weight of a row of random scores is {wrong_at:.3f} instead of "
            f"{right_at:.3f} ({1 / curve.num_keys:.3f} would be all weights equal).",
        ),
        Measure(
            "entropy_large_d_k",
            f"Entropy of a row at d_k = {LARGE_D_K} (nats)",
            curve.right_entropy[at].item(),
            curve.wrong_entropy[at].item(),
            f"Its entropy is {curve.wrong_entropy[at]:.3f} nats instead of {curve.right_entropy[at]:.3f} "
            f"(0 is one-hot, {curve.uniform_entropy:.3f} is uniform).",
        ),
        Measure(
            "grad_norm_large_d_k",
            f"Softmax gradient norm at d_k = {LARGE_D_K}",
            curve.right_grad_norm[at].item(),
            curve.wrong_grad_norm[at].item(),
            _gradient_sentence(curve.right_grad_norm[at].item(), curve.wrong_grad_norm[at].item()),
        ),
    )


def _gradient_sentence(right: float, wrong: float) -> str:
    start = f"The softmax's gradient is {wrong:.3g} instead of {right:.3g}"
    if wrong == 0:
        return start + ": the rows are exactly one-hot, so W_query and W_key learn nothing through them."
    if 2 * wrong < right:
        return start + f", {right / wrong:.3g} times smaller, so W_query and W_key learn that much more slowly."
    return start + ": close to the right one. This mistake does not starve the gradient; it flattens the weights."


def saturation_curve(
    name: str, d_ks: tuple[int, ...] = SATURATION_D_KS, num_keys: int = 8, num_samples: int = 64, seed: int = 123
) -> SaturationCurve:
    """Random score rows through the right ``weigh`` step and the mistake's, at each d_k.

    Draws as ``scaling_lab`` does: for each d_k, queries (num_samples, 1, d_k),
    keys (num_samples, num_keys, d_k) and values (num_samples, num_keys) from
    one standard-normal generator seeded with ``seed``. No mask. The gradient
    of the weighted value sum with respect to the softmax's input scores z is
    w * (v - w·v), the softmax's own derivative, the one that vanishes when a
    row saturates.
    """
    wrong_weigh = MISTAKES[name].steps.weigh
    generator = torch.Generator().manual_seed(seed)
    columns: dict[str, list[float]] = {}
    for d_k in d_ks:
        queries = torch.randn(num_samples, 1, d_k, generator=generator)  # (num_samples, 1, d_k)
        keys = torch.randn(num_samples, num_keys, d_k, generator=generator)  # (num_samples, num_keys, d_k)
        values = torch.randn(num_samples, 1, num_keys, generator=generator)  # (num_samples, 1, num_keys)
        no_mask = torch.zeros(1, num_keys, dtype=torch.bool)  # (1, num_keys)
        for side, weigh_step in (("right", weigh), ("wrong", wrong_weigh)):
            attn_scores = queries @ keys.transpose(1, 2)  # (num_samples, 1, num_keys)
            attn_weights = weigh_step(attn_scores, no_mask, keys)  # (num_samples, 1, num_keys)
            weighted_sum = (attn_weights * values).sum(dim=-1, keepdim=True)  # (num_samples, 1, 1)
            softmax_grad = attn_weights * (values - weighted_sum)  # (num_samples, 1, num_keys)
            stats = {
                "max_weight": attn_weights.max(dim=-1).values.mean().item(),
                "entropy": _entropy(attn_weights).mean().item(),
                "grad_norm": softmax_grad.norm(dim=-1).mean().item(),
            }
            for stat, value in stats.items():
                columns.setdefault(f"{side}_{stat}", []).append(value)
    return SaturationCurve(
        d_ks=torch.tensor(d_ks),
        **{key: torch.tensor(values) for key, values in columns.items()},
        num_keys=num_keys,
    )


def _slots(split_or_merge, mha: MultiHeadAttention, num_tokens: int) -> torch.Tensor:
    """Where each (head, token) piece lands: label every number with its piece, then run the step on the labels.

    Returns (num_heads, num_tokens), True where a slot holds numbers of another piece.
    """
    h, head_dim = mha.num_heads, mha.head_dim
    token = torch.arange(num_tokens).view(num_tokens, 1).expand(num_tokens, mha.d_out)  # (num_tokens, d_out)
    head = (torch.arange(mha.d_out) // head_dim).expand(num_tokens, mha.d_out)  # (num_tokens, d_out)
    labels = (token * h + head).float().unsqueeze(0)  # (1, num_tokens, d_out): piece = token * h + head
    if split_or_merge in (split_heads, split_heads_without_transpose):
        placed = split_or_merge(mha, labels)[0]  # (num_heads, num_tokens, head_dim)
        expected = (torch.arange(num_tokens).view(1, num_tokens) * h + torch.arange(h).view(h, 1)).float()
        return (placed != expected.unsqueeze(-1)).any(dim=-1)  # (num_heads, num_tokens)
    in_heads = split_heads(mha, labels)  # (1, num_heads, num_tokens, head_dim)
    identity = torch.eye(num_tokens)  # (num_tokens, num_tokens): each token's own piece, unmixed
    merged = split_or_merge(mha, identity, in_heads)[0].view(num_tokens, h, head_dim)  # (num_tokens, num_heads, hd)
    return (merged != labels[0].view(num_tokens, h, head_dim)).any(dim=-1).T  # (num_heads, num_tokens)


def _view_without_transpose(mha, x, right, wrong, curve, samples, seed):
    num_tokens = right.shape[-1]
    right_slots = int(_slots(split_heads, mha, num_tokens).sum())
    wrong_slots = int(_slots(split_heads_without_transpose, mha, num_tokens).sum())
    total = mha.num_heads * num_tokens
    sentence = (
        f"{wrong_slots} of the {total} (head, token) slots hold numbers of another token or another head, so "
        "each head attends over a scrambled sequence."
    )
    if mha.num_heads == 1:
        sentence = "With one head the two layouts agree, so nothing is misplaced; the mistake shows with two heads."
    return (
        Measure("misplaced_slots", "(head, token) slots holding another piece", right_slots, wrong_slots, sentence),
    )


def _merge_without_transpose(mha, x, right, wrong, curve, samples, seed):
    num_tokens = right.shape[-1]
    right_slots = int(_slots(merge_heads, mha, num_tokens).sum())
    wrong_slots = int(_slots(merge_heads_without_transpose, mha, num_tokens).sum())
    weights_difference = (wrong - right).abs().max().item()
    total = mha.num_heads * num_tokens
    return (
        Measure(
            "misplaced_slots",
            "(token, head) places holding another piece",
            right_slots,
            wrong_slots,
            f"{wrong_slots} of the {total} (token, head) places in the merged rows hold another token's or head's "
            "context vector.",
        ),
        Measure(
            "weights_difference",
            "Largest difference in the attention weights",
            0.0,
            weights_difference,
            f"Every head's weights are unchanged (they differ by at most {weights_difference:.3g}); only the "
            "merge goes wrong.",
        ),
    )


def _dropout(mha, x, right, wrong, curve, samples, seed):
    p = mha.dropout.p
    right_now, wrong_now = right[0, 0].sum(dim=-1).mean().item(), wrong[0, 0].sum(dim=-1).mean().item()
    attn_weights = forward(mha, x, RIGHT).attn_weights[0, 0]  # (num_tokens, num_tokens), before dropout
    samples = max(1, min(samples, MAX_DROPOUT_WEIGHTS // attn_weights.numel()))
    generator = torch.Generator().manual_seed(seed)
    right_sums, wrong_sums = [], []
    for _ in range(samples):
        keep = torch.empty_like(attn_weights).bernoulli_(1 - p, generator=generator)  # 1 = kept
        right_sums.append(drop(attn_weights, keep, p).sum(dim=-1).mean().item())
        wrong_sums.append(drop_without_rescale(attn_weights, keep, p).sum(dim=-1).mean().item())
    right_mean, wrong_mean = sum(right_sums) / samples, sum(wrong_sums) / samples
    if p == 0:
        average = "With p = 0 nothing is dropped, so the missing rescale changes nothing; raise p to see it."
    else:
        average = (
            f"Over {samples} draws a row sums to {wrong_mean:.3f} on average instead of {right_mean:.3f}: "
            f"about 1 − p = {1 - p:.2f}. In training each context vector is then on average {1 - p:.0%} of what "
            "it is at inference, where nothing is dropped."
        )
    return (
        Measure(
            "row_sum_this_draw",
            "Row sum after this draw, mean over rows",
            right_now,
            wrong_now,
            f"In this draw a row of head 0 sums to {wrong_now:.3f} on average instead of {right_now:.3f}.",
        ),
        Measure("mean_row_sum", f"Row sum averaged over {samples} draws", right_mean, wrong_mean, average),
    )


def _mask_after_softmax(mha, x, right, wrong, curve, samples, seed):
    right_sums, wrong_sums = right[0, 0].sum(dim=-1), wrong[0, 0].sum(dim=-1)  # (num_tokens,)
    return (
        Measure(
            "mean_row_sum",
            "Row sum, mean over rows",
            right_sums.mean().item(),
            wrong_sums.mean().item(),
            f"A row sums to {wrong_sums.mean():.3f} on average instead of 1: the weight the softmax gave to "
            "later tokens is thrown away, not shared out again.",
        ),
        Measure(
            "first_row_sum",
            "First token's row sum",
            right_sums[0].item(),
            wrong_sums[0].item(),
            f"The first token keeps only {wrong_sums[0]:.0%} of its attention; only the last token's row still "
            "sums to 1.",
        ),
    )


def _softmax_wrong_dim(mha, x, right, wrong, curve, samples, seed):
    def worst(sums):
        return (sums - 1).abs().max().item()

    row_sums = wrong[0, 0].sum(dim=-1)  # (num_tokens,)
    return (
        Measure(
            "row_sum_error",
            "Largest |row sum − 1|",
            worst(right[0, 0].sum(dim=-1)),
            worst(row_sums),
            f"With dim=-2 a query's weights sum to anything from {row_sums.min():.3f} to {row_sums.max():.3f} "
            "instead of 1.",
        ),
        Measure(
            "column_sum_error",
            "Largest |column sum − 1|",
            worst(right[0, 0].sum(dim=-2)),
            worst(wrong[0, 0].sum(dim=-2)),
            "Instead each column (one key, across all the queries) sums to 1: the softmax ran across queries.",
        ),
    )


_MEASURES = {
    "fill_zero": _fill_zero,
    "tril_mask": _tril_mask,
    "diagonal_0": _diagonal_0,
    "no_scaling": _scaling,
    "divide_by_d_k": _scaling,
    "view_without_transpose": _view_without_transpose,
    "dropout_without_rescale": _dropout,
    "mask_after_softmax": _mask_after_softmax,
    "softmax_wrong_dim": _softmax_wrong_dim,
    "merge_without_transpose": _merge_without_transpose,
}
