"""What each of chapter 3's common mistakes does, measured beside the right code.

Every ``measure_*`` function takes the module, its input, the right and the
wrong weights that multiply the values (b, num_heads, num_tokens,
num_tokens), the saturation curve (for the scaling mistakes, else None), the
number of dropout draws to average and the seed, and returns ``Measure``s: a
number for the right code, one for the mistake, and a sentence a learner
reads. ``mistakes`` gives each mistake its measure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from .mistake_steps import (
    RIGHT,
    drop,
    drop_without_rescale,
    forward,
    merge_heads,
    merge_heads_without_transpose,
    split_heads,
    split_heads_without_transpose,
    weigh,
)
from .multihead import MultiHeadAttention

SATURATION_D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
LARGE_D_K = 512  # the d_k at which the scaling mistakes are measured
MAX_DROPOUT_WEIGHTS = 2_000_000  # weights drawn in all for the dropout average; long inputs get fewer draws
PARAMETER_D_IN = 16  # the inputs' size in the parameters' gradient check
PARAMETER_SAMPLES = 256  # rows in the parameters' gradient check: the median needs more than the 64 of the curve
STARVED = 0.01  # a row whose parameters' gradient is below this share of the right code's median barely learns


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
    receives, as ``scaling_lab`` measures it: not yet multiplied by the
    1/√d_k (or the mistake's factor) that lies between it and the parameters.

    ``*_param_grad`` is what reaches the parameters, measured by autograd in a
    separate draw (``parameter_gradients``): the median over rows of the norm
    of the gradient of ``W_query`` and ``W_key`` together.
    ``wrong_starved`` is the share of the mistake's rows whose parameters'
    gradient is below ``STARVED`` of the right code's median. ``num_keys`` is
    the length of each row.

    Shapes: every tensor (len(d_ks),).
    """

    d_ks: torch.Tensor
    right_max_weight: torch.Tensor
    wrong_max_weight: torch.Tensor
    right_entropy: torch.Tensor
    wrong_entropy: torch.Tensor
    right_grad_norm: torch.Tensor
    wrong_grad_norm: torch.Tensor
    right_param_grad: torch.Tensor
    wrong_param_grad: torch.Tensor
    wrong_starved: torch.Tensor
    num_keys: int

    @property
    def uniform_entropy(self) -> float:
        """log(num_keys), the entropy of a row of equal weights."""
        return math.log(self.num_keys)


def _above_diagonal(attn_weights: torch.Tensor) -> torch.Tensor:
    num_tokens = attn_weights.shape[-1]
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)  # (num_tokens, num_tokens)


def measure_fill_zero(mha, x, right, wrong, curve, samples, seed):
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
    """Mean row sum on the past (with the token itself) and on the future, over head 1's rows that are numbers."""
    rows = weights[0, 0][~_nan_rows(weights)]  # (finite rows, num_tokens)
    if rows.numel() == 0:
        return math.nan, math.nan
    future = _above_diagonal(weights)[~_nan_rows(weights)]  # (finite rows, num_tokens)
    return (rows * ~future).sum(dim=-1).mean().item(), (rows * future).sum(dim=-1).mean().item()


def _nan_measure(right, wrong, sentence: str) -> Measure:
    right_nan, wrong_nan = int(_nan_rows(right).sum()), int(_nan_rows(wrong).sum())
    return Measure("nan_rows", "Rows of weights that are NaN", right_nan, wrong_nan, sentence.format(n=wrong_nan))


def measure_tril_mask(mha, x, right, wrong, curve, samples, seed):
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


def measure_diagonal_0(mha, x, right, wrong, curve, samples, seed):
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


def _scaling_measures(mha, right, wrong, curve, way_back: str) -> tuple[Measure, ...]:
    """The measures both scaling mistakes share; ``way_back`` is the mistake's factor between the softmax's
    input and the parameters ("1" or "1/d_k")."""
    at = SATURATION_D_KS.index(LARGE_D_K)
    right_max, wrong_max = right.max(dim=-1).values.mean().item(), wrong.max(dim=-1).values.mean().item()
    here = f"Here head_dim = {mha.head_dim}: the largest weight in a row averages {instead(wrong_max, right_max)}."
    if mha.head_dim == 1:
        here += " With head_dim = 1, √d_k = d_k = 1, so the mistake changes nothing until d_k grows."
    wrong_at, right_at = curve.wrong_max_weight[at].item(), curve.right_max_weight[at].item()
    right_input, wrong_input = curve.right_grad_norm[at].item(), curve.wrong_grad_norm[at].item()
    right_param, wrong_param = curve.right_param_grad[at].item(), curve.wrong_param_grad[at].item()
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
            f"Spread (entropy) of a row at d_k = {LARGE_D_K}",
            curve.right_entropy[at].item(),
            curve.wrong_entropy[at].item(),
            f"Entropy measures a row's spread: 0 when one key takes all the weight, {curve.uniform_entropy:.3f} "
            f"(log {curve.num_keys}) when all are equal. Here it is {curve.wrong_entropy[at]:.3f} instead of "
            f"{curve.right_entropy[at]:.3f}.",
        ),
        Measure(
            "grad_norm_large_d_k",
            f"Gradient at the softmax's input, d_k = {LARGE_D_K} (mean norm)",
            right_input,
            wrong_input,
            f"Measured where the scores enter the softmax, the gradient is {wrong_input:.3g} instead of "
            f"{right_input:.3g}. That is not yet what reaches W_query and W_key.",
        ),
        Measure(
            "param_grad_large_d_k",
            f"Gradient reaching W_query and W_key, d_k = {LARGE_D_K} (median norm)",
            right_param,
            wrong_param,
            f"On the way back to W_query and W_key the right code multiplies by 1/√d_k, this mistake by "
            f"{way_back}. Measured with autograd, their gradient is {wrong_param:.3g} instead of {right_param:.3g} "
            "(median over rows).",
        ),
    )


def measure_no_scaling(mha, x, right, wrong, curve, samples, seed):
    at = SATURATION_D_KS.index(LARGE_D_K)
    measures = _scaling_measures(mha, right, wrong, curve, "1")
    starved = curve.wrong_starved[at].item()
    *kept, param = measures
    sentence = (
        param.sentence
        + f" In {starved:.0%} of rows it is below {STARVED:.0%} of the right code's median: almost no gradient "
        "reaches W_query and W_key from those rows."
    )
    return (*kept, replace(param, sentence=sentence))


def measure_divided_by_d_k(mha, x, right, wrong, curve, samples, seed):
    *kept, softmax_input, param = _scaling_measures(mha, right, wrong, curve, "1/d_k")
    times = param.right / param.wrong if param.wrong > 0 else math.inf
    sentence = param.sentence + f" That is {times:.3g} times smaller (√{LARGE_D_K} = {LARGE_D_K**0.5:.3g})"
    if softmax_input.wrong > 0.8 * softmax_input.right:
        sentence += ": the extra 1/√d_k on the way back, since the gradients at the softmax's input are close"
    return (*kept, softmax_input, replace(param, sentence=sentence + "."))


def parameter_gradients(
    weigh_step: Callable, d_k: int, num_keys: int = 8, num_samples: int = PARAMETER_SAMPLES, seed: int = 123
) -> torch.Tensor:
    """The gradient that reaches ``W_query`` and ``W_key`` through ``weigh_step``, one norm per row, by autograd.

    Each of ``num_samples`` rows has its own inputs (standard normal, ``PARAMETER_D_IN`` numbers each) and its
    own ``W_query`` and ``W_key`` (d_in, d_k), drawn with standard deviation 1/√d_in so that queries and keys
    have entries of variance about 1, as in ``saturation_curve``. The loss is the weighted value sum, as there.

    Shapes: returns (num_samples,): the norm of (∂loss/∂W_query, ∂loss/∂W_key) of each row.
    """
    generator = torch.Generator().manual_seed(seed)
    d_in = PARAMETER_D_IN
    x_query = torch.randn(num_samples, 1, d_in, generator=generator)  # (num_samples, 1, d_in)
    x_keys = torch.randn(num_samples, num_keys, d_in, generator=generator)  # (num_samples, num_keys, d_in)
    W_query = torch.randn(num_samples, d_in, d_k, generator=generator) / d_in**0.5  # (num_samples, d_in, d_k)
    W_key = torch.randn(num_samples, d_in, d_k, generator=generator) / d_in**0.5  # (num_samples, d_in, d_k)
    values = torch.randn(num_samples, 1, num_keys, generator=generator)  # (num_samples, 1, num_keys)
    W_query.requires_grad_()
    W_key.requires_grad_()
    with torch.enable_grad():
        queries = x_query @ W_query  # (num_samples, 1, d_k)
        keys = x_keys @ W_key  # (num_samples, num_keys, d_k)
        attn_scores = queries @ keys.transpose(1, 2)  # (num_samples, 1, num_keys)
        attn_weights = weigh_step(attn_scores, torch.zeros(1, num_keys, dtype=torch.bool), keys)
        (attn_weights * values).sum().backward()
    both = torch.cat([W_query.grad.flatten(1), W_key.grad.flatten(1)], dim=1)  # (num_samples, 2 * d_in * d_k)
    return both.norm(dim=1)  # (num_samples,)


def saturation_curve(
    wrong_weigh: Callable,
    d_ks: tuple[int, ...] = SATURATION_D_KS,
    num_keys: int = 8,
    num_samples: int = 64,
    seed: int = 123,
) -> SaturationCurve:
    """Random score rows through the right ``weigh`` step and a mistaken one, ``wrong_weigh``, at each d_k.

    Draws as ``scaling_lab`` does: for each d_k, queries (num_samples, 1, d_k),
    keys (num_samples, num_keys, d_k) and values (num_samples, num_keys) from
    one standard-normal generator seeded with ``seed``. No mask. The gradient
    of the weighted value sum with respect to the softmax's input scores z is
    w * (v - w·v), the softmax's own derivative, the one that vanishes when a
    row is one-hot (all its weight on one key). What reaches the parameters
    is measured by ``parameter_gradients``, with its own draw.
    """
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
        right_param = parameter_gradients(weigh, d_k, num_keys, seed=seed)  # (PARAMETER_SAMPLES,)
        wrong_param = parameter_gradients(wrong_weigh, d_k, num_keys, seed=seed)  # (PARAMETER_SAMPLES,)
        columns.setdefault("right_param_grad", []).append(right_param.median().item())
        columns.setdefault("wrong_param_grad", []).append(wrong_param.median().item())
        starved = (wrong_param < STARVED * right_param.median()).float().mean().item()
        columns.setdefault("wrong_starved", []).append(starved)
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


def measure_view_without_transpose(mha, x, right, wrong, curve, samples, seed):
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


def measure_merge_without_transpose(mha, x, right, wrong, curve, samples, seed):
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


def instead(wrong: float, right: float) -> str:
    """ "0.500 instead of 1.000", or, where the two print alike, "1.000, as the right code's does"."""
    return (
        f"{wrong:.3f}, as the right code's does"
        if f"{wrong:.3f}" == f"{right:.3f}"
        else f"{wrong:.3f} instead of {right:.3f}"
    )


def measure_dropout(mha, x, right, wrong, curve, samples, seed):
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
            f"Over {samples} draws a row sums on average to {instead(wrong_mean, right_mean)}: "
            f"about 1 − p = {1 - p:.2f}. In training each context vector is then on average {1 - p:.0%} of what "
            "it is at inference, where nothing is dropped."
        )
    return (
        Measure(
            "row_sum_this_draw",
            "Row sum after this draw, mean over rows",
            right_now,
            wrong_now,
            f"In this draw a row of head 1 sums on average to {instead(wrong_now, right_now)}.",
        ),
        Measure("mean_row_sum", f"Row sum averaged over {samples} draws", right_mean, wrong_mean, average),
    )


def measure_mask_after_softmax(mha, x, right, wrong, curve, samples, seed):
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


def measure_softmax_wrong_dim(mha, x, right, wrong, curve, samples, seed):
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
