"""The Q, K, V & scaling page's computed text and the scaling lab's settings."""

from __future__ import annotations

import math

from .format import first_values

D_KS = tuple(2**k for k in range(11))  # d_k = 1 … 1024
TEMPERATURES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
UNSCALED, SCALED = "unscaled", "scaled by 1/√d_k"
TOP = f"at d_k = {D_KS[-1]}"
TEMPERATURE_HELP = (
    "Every score is divided by this number before the softmax, on top of ÷ √d_k. Above 1 it "
    "flattens the weights (closer to uniform), below 1 it sharpens them: the same lever as √d_k, "
    "turned by hand, so you can see how much the spread of the scores decides saturation."
)


def projections_text(origin: str, seed: int) -> str:
    """Step 1: where W_query, W_key and W_value come from (``weights.origin``, else the book's ``torch.rand``)."""
    book = f"created with `torch.rand` after `torch.manual_seed({seed})` as in the book. Training would adjust them."
    return "Each embedding is projected three ways by **trainable** d_in × d_out matrices, " + (origin or book)


def example_rows(steps, example: int, **names: str) -> str:
    """The example token's row of each step's matrix (label=step name), as the book prints them, indexed as
    in Python: the book's query 2, x^(2), is ``inputs[1]``."""
    rows = [f"`{k}[{example}] = {first_values(getattr(steps, n)[example:], 8)}`" for k, n in names.items()]
    return f" Query {example + 1}, x^({example + 1}) = `inputs[{example}]`, outlined: " + ", ".join(rows) + "."


def lab_series(lab, name: str) -> dict:
    """One lab measurement against d_k, unscaled and scaled."""
    return {UNSCALED: getattr(lab, f"unscaled_{name}"), SCALED: getattr(lab, f"scaled_{name}")}


def saturation_text(lab, num_keys: int) -> str:
    return (
        f"Dot products of random d_k-dim queries and keys spread like √d_k, so unscaled the softmax saturates: "
        f"{TOP} the largest weight averages **{lab.unscaled_max_weight[-1]:.2f}**, entropy "
        f"**{lab.unscaled_entropy[-1]:.2f}** nats. Scaled: **{lab.scaled_max_weight[-1]:.2f}** and "
        f"**{lab.scaled_entropy[-1]:.2f}** (uniform: log {num_keys} = {math.log(num_keys):.2f})."
    )


def gradients_text(lab) -> str:
    grads = lab.unscaled_grad_norm
    return (
        "Training needs the gradient of the output with respect to the scores (measured by autograd). Unscaled "
        f"it falls from **{grads[0]:.3f}** at d_k = 1 to **{grads[-1]:.3f}** {TOP}; scaled it is still "
        f"**{lab.scaled_grad_norm[-1]:.3f}**. A saturated row barely learns."
    )


def v1_v2_text(v2_seed: int, max_difference: float) -> str:
    return (
        f"`SelfAttention_v2`, built after `torch.manual_seed({v2_seed})` (the book uses 789), uses `nn.Linear`, "
        "which stores each weight transposed (d_out × d_in) and initializes it differently. Copy v2's weights, "
        f"transposed, into v1 and the outputs agree: max |difference| = **{max_difference:.3g}**."
    )
