"""The note under a weights heatmap whose weights are near-uniform (``views.near_even``), shared by the pages that
draw one: what the numbers are, why a learner's sentence gives them, and which setting shows a pattern (issue 54).
A page that has no weight matrices (Simplified attention) gives its own reason."""

from __future__ import annotations

import math

from attention.prose.glossary import term
from explorer.settings import RANDOM, Settings

TRAINED_CHOICE = "**Trained** under **Weight matrices** in the sidebar"  # as the sidebar names the setting


def within(gap: float) -> str:
    """``gap`` rounded up to thousandths, so "within 0.021" is true of every weight; "0.000" only if exactly 0."""
    return f"{math.ceil(gap * 1000 - 1e-9) / 1000:.3f}"


def even_note(gap: float | None, num_tokens: int, settings: Settings, *, masked: bool, projected: bool = True) -> str:
    """The note for weights within ``gap`` of an even share (empty when ``gap`` is None: not near-uniform).
    ``masked``: each query sees only itself and earlier tokens; ``projected``: the scores come from W_query and
    W_key (every page after Simplified attention's)."""
    if gap is None:
        return ""
    share = (
        "an even share of the keys its query may see (1/n for n keys)"
        if masked
        else f"an even share, 1/{num_tokens} = {1 / num_tokens:.2f}"
    )
    said = (
        f"Every weight here is within **{within(gap)}** of {share}. Attention is spread almost evenly, so on the "
        "fixed 0–1 color scale the cells look alike."
    )
    if settings.weights != RANDOM:
        return (
            f"{said} This head spreads its weight nearly evenly on this sentence. Try another layer or head in the "
            "sidebar, or Multi-head attention's step Every layer and head."
        )
    if not projected:
        why = (
            f"Section 3.3 has no {term('weight_matrices', 'weight matrices')}: each score is the dot product of two "
            f"inputs, here {settings.effective_d_in}-d vectors with entries between 0 and 1. Such scores lie close "
            f"together, and {term('softmax')} turns close scores into nearly equal weights."
        )
        try_this = (
            f"Choose {TRAINED_CHOICE}: the inputs become the vectors that a small GPT trained on The Verdict feeds "
            "one of its layers."
        )
    else:
        why = (
            f"The random {term('weight_matrices', 'W_query and W_key')} turn these {settings.effective_d_in}-d inputs "
            f"into queries and keys whose scores lie close together, and {term('softmax')} turns close scores into "
            "nearly equal weights."
        )
        try_this = (
            f"Choose {TRAINED_CHOICE} to see the attention weights of a small GPT trained on The Verdict, whose heads "
            "learned which tokens to attend to."
        )
    return f"{said} {why} {try_this}"
