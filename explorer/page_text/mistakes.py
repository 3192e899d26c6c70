"""The Break it page's step text: what the two panels of weights show, and why a mistake may not show in
them (a ``views.beyond.MistakeView``'s numbers); and each mistake's predict-then-reveal question."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attention.prose.glossary import term

from .questions import Question, estimate

SAME = 1e-6  # weights closer than this are the same (float32 rounding)
SCALING = ("no_scaling", "divide_by_d_k")
HELP = (
    "Each changes one or two lines of MultiHeadAttention: of its forward pass, or of __init__ for the two mask "
    "mistakes, which build the mask buffer. It runs beside the package's own code."
)


def scaling_changes_nothing(name: str, head_dim: int) -> bool:
    """Whether mistake ``name`` divides by the same number as the right code: √d_k = d_k = 1 when head_dim = 1."""
    return name in SCALING and head_dim == 1


def head_dim_note(head_dim: int) -> str:
    """Why a scaling mistake changes nothing at head_dim = 1, and where to see it change something."""
    return (
        f"Here d_k = head_dim = {head_dim}, and √1 = 1: the right code and this mistake divide by the same number, "
        "so nothing changes. Raise the sidebar's d_out to make head_dim = d_out // num_heads larger, or see the "
        "Against d_k step."
    )


def panels_text(weight_limit: float) -> str:
    """Step 2, above the panels: what is drawn, and on which scale."""
    scale = "1/(1 − p): dropout scales survivors up" if weight_limit != 1 else "attention weights are probabilities"
    return (
        f"Head 1's {term('attention_weights')} on your input (`attn_weights[0, 0]` in code): the package's code left, "
        "the mistake right, with the same parameters and inputs. One color scale runs from 0 to "
        f"{weight_limit:g} ({scale})."
    )


def difference_text(name: str, head_dim: int, max_difference: float) -> str:
    """Step 2, below the panels: how far the weights differ, and, when they are the same, why."""
    start = (
        "Gray cells marked “masked” are later tokens given weight 0. Where both are numbers, the weights differ by "
        f"at most **{max_difference:.4g}**"
    )
    if not max_difference < SAME:  # NaN (no cell is a number in both) counts as different
        return start + ": this mistake shows in the weights."
    if scaling_changes_nothing(name, head_dim):
        why = "with head_dim = 1, √d_k = d_k = 1, so dividing by either changes nothing."
    elif name == "merge_without_transpose":
        why = "this mistake comes after the weights, when the heads are merged."
    else:
        why = "this mistake does not show in head 1's weights here."
    return start + f". The two panels are the same: {why} The next step measures what it costs."


def curve_text(num_keys: int, head_dim: int) -> str:
    """The Against d_k step: what the two charts measure."""
    return (
        f"Random rows of {num_keys} keys at growing {term('d_k')}, through the package's softmax and the mistake's. "
        f"First chart: the largest weight in a row; 1 means {term('one_hot')}, all weight on one key. Second chart: "
        f"the {term('gradient')} that reaches W_query and W_key, measured with autograd (median over rows; each step "
        f"up the axis is 10 times more). The dotted line is this module's head_dim = {head_dim}."
    )


# Break it: one question for each mistake, asked beside the changed line and answered from that mistake's run
# (a ``views.beyond.MistakeView``). Each returns None where the run has no answer to give (too few tokens). The
# mistake's ``why`` states the answer, so the page shows it after the Reveal (the rule in ``page_text.questions``).

ROW_SUM_DECIMALS = 3  # a row "sums to 1" when it does to this many decimals


def _rows(count: int) -> str:
    return f"{count} row{'s' if count != 1 else ''}"


def _tokens(indices: Sequence[int]) -> str:
    """Python indices as the book names the tokens: "x^(3) to x^(6)" when they run on, else a list."""
    if not indices:
        return "none"
    if len(indices) > 2 and list(indices) == list(range(indices[0], indices[-1] + 1)):
        return f"x^({indices[0] + 1}) to x^({indices[-1] + 1})"
    return ", ".join(f"x^({i + 1})" for i in indices)


def _fill_zero(data) -> Question | None:
    later = len(data.pieces) - 1
    if later < 1:
        return None
    share = data.measure("first_token_future_weight").wrong
    choices = ("None: the mask still hides them", "Some, but less than half", "Half or more")
    answer = choices[0] if share < SAME else choices[1] if share < 0.5 else choices[2]
    return Question(
        f"mistakes:fill_zero:future_share:{later}",
        f"With 0 in place of −∞, what share of its attention will the first token x^(1) give to the {later} "
        f"token{'s' if later != 1 else ''} after it?",
        answer,
        choices,
        explanation=f"It gives {share:.0%}. A masked score of 0 is an ordinary score: each later key gets "
        "exp(0) = 1 in the softmax's numerator, beside x^(1)'s own exp(score / √d_k).",
        gives_away=("exp(0) = 1", "ordinary score", "still gives later tokens weight", f"{share:.0%}"),
    )


def _tril_mask(data) -> Question | None:
    num_tokens = len(data.pieces)
    first_row = np.asarray(data.wrong_weights, dtype=np.float64)[0]  # (T,)
    if num_tokens < 3 or not np.isfinite(first_row).all():
        return None
    seen = [int(j) for j in np.flatnonzero(first_row > 0)]
    return Question(
        "mistakes:tril_mask:first_row_keys",
        f"With tril in place of triu, how many of the {num_tokens} keys will the first token x^(1) give a weight "
        "above 0?",
        len(seen),
        decimals=0,
        explanation=f"It sees {_tokens(seen)}. tril(..., diagonal=1) marks x^(1) itself and x^(2), the next token, "
        "so x^(1) sees only the tokens two or more places later.",
        gives_away=("two or more places later", f"sees {_tokens(seen)}", "marks x^(1) itself"),
    )


def _diagonal_0(data) -> Question:
    rows = [int(i) for i in np.flatnonzero(data.nan_rows)]
    return Question(
        "mistakes:diagonal_0:nan_rows",
        f"With diagonal=0, how many of head 1's {_rows(len(data.pieces))} of attention weights will be NaN (not a "
        "number)?",
        len(rows),
        decimals=0,
        explanation=f"NaN rows: {_tokens(rows)}. The first token may see only itself, and diagonal=0 hides that too: "
        "every score in its row is −∞, and softmax of only −∞ is 0/0. Every later row still sees earlier tokens.",
        gives_away=("NaN rows:", "may see only itself", "later row still sees"),
    )


def _scaling(data) -> Question:
    """The largest weight at a large d_k: near 1 (one-hot) unscaled, near 1/num_keys divided by d_k. A number: "one-hot"
    or "equal weights" is the idea, and the tolerance tells the measured value from it (0.930 is not 1, 0.133 is
    not 1/8). Wrong ideas: one-hot (1), equal weights (1/num_keys) and no change (the right code's value)."""
    measured = data.measure("max_weight_large_d_k")
    d_k, num_keys = data.large_d_k, data.curve.num_keys
    if measured.wrong > measured.right:
        reason = (
            f"Unscaled, the scores spread about √{d_k} ≈ {d_k**0.5:.1f} times wider, so the softmax puts nearly "
            "all the weight on the largest score. That is close to one-hot, where one key gets weight 1, but not "
            "quite."
        )
        gives_away = ("one-hot", "all the weight on the largest")
    else:
        reason = (
            f"Divided by {d_k} instead of √{d_k}, the scores are {d_k**0.5:.1f} times closer together, so the "
            f"weights come close to equal weights, 1/{num_keys} = {1 / num_keys:.3f} each, but not quite."
        )
        gives_away = ("equal weights", "near equal", f"1/{num_keys} = ")
    return estimate(
        f"mistakes:{data.name}:max_weight:{d_k}",
        f"Take rows of {num_keys} random keys at d_k = {d_k}, with query and key entries of variance 1. With the "
        f"right code a row's largest attention weight averages {measured.right:.3f}. What will it average with "
        "this mistake?",
        measured.wrong,
        (1.0, 1 / num_keys, measured.right),
        at_most=0.1,
        explanation=f"It averages {measured.wrong:.3f}. {reason}",
        gives_away=gives_away,
    )


def _view_without_transpose(data) -> Question:
    num_tokens, num_heads = len(data.pieces), data.num_heads
    total, misplaced = num_heads * num_tokens, int(data.measure("misplaced_slots").wrong)
    return Question(
        f"mistakes:view_without_transpose:slots:{num_heads}:{num_tokens}",
        "In memory, `keys` holds k^(1), the key of x^(1), first: its head_dim numbers for head 1, then those for "
        "head 2, and so on; then k^(2). "
        f"This view hands them out to head 1's {_rows(num_tokens)} first, then head 2's. Of the {num_heads} × "
        f"{num_tokens} = {total} (head, token) slots, how many will hold another token's or head's numbers?",
        misplaced,
        decimals=0,
        explanation=f"Only {total - misplaced} keep their own: those whose place in memory is the same in both "
        "orders. " + data.measure("misplaced_slots").sentence,
        gives_away=("keep their own", "most of a head's rows"),
    )


def _dropout_without_rescale(data) -> Question:
    """The average row sum without the rescale: 1 − p, measured over many draws. Wrong idea: 1, as with it."""
    measured = data.measure("mean_row_sum")
    return estimate(
        f"mistakes:dropout_without_rescale:mean_row_sum:{data.dropout:.2f}",
        f"Before dropout, each row of attention weights sums to 1. With p = {data.dropout:.2f} and no 1/(1 − p) "
        "rescale, what will a row sum to on average over many draws?",
        measured.wrong,
        (1.0,),
        at_most=0.05,
        explanation="Each weight w survives with probability 1 − p and is not scaled up, so "
        f"its average is (1 − p) · w. {measured.sentence}",
        gives_away=("smaller on average", "(1 − p) · w"),
    )


def _mask_after_softmax(data) -> Question:
    sums = np.asarray(data.wrong_weights, dtype=np.float64).sum(axis=-1)  # (T,)
    whole = [int(i) for i in np.flatnonzero(np.abs(sums - 1) < 0.5 * 10**-ROW_SUM_DECIMALS)]
    return Question(
        f"mistakes:mask_after_softmax:whole_rows:{len(sums)}",
        f"Masking after the softmax, without renormalizing: how many of head 1's {_rows(len(sums))} of attention "
        f"weights will still sum to 1 (to {ROW_SUM_DECIMALS} decimals)?",
        len(whole),
        decimals=0,
        explanation=f"Rows that do: {_tokens(whole)}. The softmax gave part of each row to later tokens; zeroing that "
        f"part afterwards leaves less than 1. The last token, x^({len(sums)}), has no later tokens to lose weight to.",
        gives_away=("every row but the last", "less than 1", "no later token"),
    )


def _softmax_wrong_dim(data) -> Question:
    """The last token's weight on itself with softmax over dim=-2: 1, alone in its masked column. Wrong ideas: the
    right code's weight, and equal weights (1/num_tokens)."""
    num_tokens = len(data.pieces)
    weight = float(np.asarray(data.wrong_weights, dtype=np.float64)[-1, -1])
    right = float(np.asarray(data.right_weights, dtype=np.float64)[-1, -1])
    return estimate(
        f"mistakes:softmax_wrong_dim:last_self:{num_tokens}",
        f"With softmax over dim=-2, what weight will the last token x^({num_tokens}) give itself?",
        weight,
        (right, 1 / num_tokens),
        at_most=0.01,
        explanation=f"It is {weight:.4f}. dim=-2 normalizes each key's column across the queries. The mask leaves only "
        f"x^({num_tokens}) in the last key's column, so that one weight is 1, whatever the scores.",
        gives_away=("that one weight is 1", "in the last key's column"),
    )


def _merge_without_transpose(data) -> Question:
    num_tokens, num_heads = len(data.pieces), data.num_heads
    total, misplaced = num_heads * num_tokens, int(data.measure("misplaced_slots").wrong)
    vectors = f"{num_heads} vector{'s' if num_heads != 1 else ''}"
    return Question(
        f"mistakes:merge_without_transpose:places:{num_heads}:{num_tokens}",
        "Without transpose(1, 2), memory holds head 1's context vectors of every token, then head 2's. view cuts "
        f"it into {_rows(num_tokens)} of {vectors}. Of the {num_tokens} × {num_heads} = {total} (token, head) "
        "places, how many will hold another token's or head's vector?",
        misplaced,
        decimals=0,
        explanation=f"Only {total - misplaced} keep their own: those whose place in memory is the same in both "
        "orders. " + data.measure("misplaced_slots").sentence,
        gives_away=("keep their own", "scrambled"),
    )


_MISTAKE_QUESTIONS = {
    "fill_zero": _fill_zero,
    "tril_mask": _tril_mask,
    "diagonal_0": _diagonal_0,
    "no_scaling": _scaling,
    "divide_by_d_k": _scaling,
    "view_without_transpose": _view_without_transpose,
    "dropout_without_rescale": _dropout_without_rescale,
    "mask_after_softmax": _mask_after_softmax,
    "softmax_wrong_dim": _softmax_wrong_dim,
    "merge_without_transpose": _merge_without_transpose,
}


def mistake_question(data) -> Question | None:
    """Break it: the question for ``data.name``'s mistake, answered from its run (a ``MistakeView``)."""
    return _MISTAKE_QUESTIONS[data.name](data)
