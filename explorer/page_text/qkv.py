"""The Q, K, V & scaling page's computed text and the scaling lab's settings."""

from __future__ import annotations

import math

from attention.prose.glossary import term

from . import first_values

D_KS = tuple(2**k for k in range(11))  # d_k = 1 … 1024
TEMPERATURES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
UNSCALED, SCALED = "unscaled", "scaled by 1/√d_k"
TOP = f"at d_k = {D_KS[-1]}"
TEMPERATURE_HELP = (
    "Every score is divided by this number before the softmax, on top of ÷ √d_k. Above 1 it "
    "flattens the attention weights (closer to uniform), below 1 it sharpens them. It is the same lever as "
    "√d_k, turned by hand: it shows how much the spread of the scores decides saturation."
)


def projections_text(origin: str, seed: int) -> str:
    """Step 1: where W_query, W_key and W_value come from (``weights.origin``, else the book's ``torch.rand``)."""
    book = f"created with `torch.rand` after `torch.manual_seed({seed})` as in the book. Training would adjust them."
    return (
        f"Each embedding is projected three ways by the {term('weight_matrices', 'trainable weight matrices')} "
        f"W_query, W_key and W_value, each {term('d_in')} × {term('d_out')}: "
        + (origin or book)
        + "\n\nWrapping a tensor in `torch.nn.Parameter` registers it with the module as trainable: training "
        "adjusts it, then it stays fixed for every input. The **attention weights** of the next steps are computed "
        "anew for every input. The book picks d_out = 2, unlike d_in = 3, to make the computation easier to follow. "
        "A GPT's `MultiHeadAttention` "
        "takes its d_out, all heads together, equal to d_in. One head then has "
        f"{term('head_dim')} = d_out // num_heads columns: the d_out of a single-head module like this one."
    )


def example_rows(steps, example: int, **names: str) -> str:
    """The example token's row of each step's matrix, under the book's name for it (``query`` →
    ``query_2`` for the book's x^(2)), and where Python keeps it: row ``[1]`` of the full matrix."""
    number = example + 1
    rows = []
    for label, name in names.items():
        base, _, rest = label.partition(" ")
        shown = f"{base}_{number}{' ' + rest if rest else ''}"  # attn_scores_2 / √d_k
        rows.append(f"`{shown} = {first_values(getattr(steps, name)[example:], 8)}`")
    return f" Query x^({number}), row `[{example}]` in Python, outlined: " + ", ".join(rows) + "."


def lab_series(lab, name: str) -> dict:
    """One lab measurement against d_k, unscaled and scaled."""
    return {UNSCALED: getattr(lab, f"unscaled_{name}"), SCALED: getattr(lab, f"scaled_{name}")}


def saturation_text(lab, num_keys: int) -> str:
    largest = lab.unscaled_max_weight[-1]
    verdict = f"therefore {term('saturates')}" if largest > 0.9 else "grows sharper"  # saturated: nearly one-hot
    return (
        "The lab draws each query and key entry with mean 0 and variance 1. Their dot products over d_k entries then "
        "have a spread (standard deviation) of about √d_k. The book's inputs and `torch.rand` weight matrices are "
        "all positive instead, so there the scores grow faster still, in proportion to d_k. In the lab, unscaled, "
        f"the softmax {verdict}: {TOP} the largest weight averages **{lab.unscaled_max_weight[-1]:.2f}**, and the "
        f"row's {term('entropy', 'entropy')} is **{lab.unscaled_entropy[-1]:.2f}** nats (0 would be "
        f"{term('one_hot')}). Scaled: **{lab.scaled_max_weight[-1]:.2f}** and **{lab.scaled_entropy[-1]:.2f}** "
        f"(uniform: log {num_keys} = {math.log(num_keys):.2f})."
    )


def gradients_text(lab) -> str:
    grads = lab.unscaled_grad_norm
    return (
        f"Training follows {term('gradient', 'gradients')}. The lab gives each key j one random number v_j, so a "
        "row's output is the number Σ_j α_j·v_j, with α_j key j's attention weight. PyTorch's autograd measures how "
        "strongly that output changes with the scores, the softmax's input: the size of its gradient. Unscaled it "
        f"{'falls' if grads[-1] < grads[0] else 'rises'} from **{grads[0]:.3f}** at d_k = 1 to **{grads[-1]:.3f}** "
        f"{TOP}; scaled it is **{lab.scaled_grad_norm[-1]:.3f}**. A saturated softmax passes almost no gradient back "
        "to the scores. The Break it page measures what reaches `W_query` and `W_key`."
    )


def v1_v2_text(v2_seed: int, max_difference: float, *, trained_head: str = "") -> str:
    """The last step; ``trained_head`` names the trained layer's head v2 holds (empty for seeded weight matrices)."""
    built = (
        f"holding {trained_head}, uses {term('nn_linear')}, whose initialization no longer matters here"
        if trained_head
        else f"built after `torch.manual_seed({v2_seed})` (the book uses 789), uses {term('nn_linear')}. Its "
        "better-scaled initialization makes training more stable"
    )
    return (
        f"`SelfAttention_v2`, {built}, and {term('qkv_bias')}=False leaves out its bias. It stores each weight matrix "
        "transposed (d_out × d_in). Copy v2's weight matrices, transposed, into v1 and the outputs agree: max "
        f"|difference| = **{max_difference:.3g}**."
    )
