"""Why attention's trained part: the shipped reversal models on the user's sentence (``attention.bahdanau``).

The page's first steps use random weights, whose Bahdanau weights are all about 1/T. These two steps
show what training changes: the model trained to write the sentence backwards puts its weight on the
one input token it must copy (the anti-diagonal), and without attention the same encoder–decoder
falls behind as sentences grow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

import attention

from .caching import CACHE_ENTRIES, shared_view


@dataclass(frozen=True)
class ReversalView:
    """``weights`` (2, T, T): untrained, then trained, row i = output step i; ``right`` (T,) bools."""

    weights: np.ndarray
    right: np.ndarray
    mean_max_weight: float
    untrained_mean_max_weight: float
    on_anti_diagonal: float


@shared_view(max_entries=CACHE_ENTRIES)
def reversal_view(ids: tuple[int, ...]) -> ReversalView:
    found = attention.trained_alignment(ids)
    return ReversalView(
        weights=np.stack([found.untrained_weights.numpy(), found.trained_weights.numpy()]),  # (2, T, T)
        right=(found.output == found.expected).numpy(),
        mean_max_weight=found.mean_max_weight,
        untrained_mean_max_weight=found.untrained_mean_max_weight,
        on_anti_diagonal=found.on_anti_diagonal,
    )


def show_alignment(pieces, ids) -> None:
    """The trained alignment beside the untrained one, on the page's sentence."""
    from . import figures, ui

    view = reversal_view(tuple(ids))
    count = len(pieces)
    st.markdown(
        "Now **trained**: the same kind of encoder–decoder, taught to write any sentence backwards (each token "
        "id becomes one of 16 symbols). To write output step i it must copy input token T − 1 − i, and its "
        f"attention learned to look there: each step's largest weight averages **{view.mean_max_weight:.3f}** "
        f"(untrained: {view.untrained_mean_max_weight:.3f}; uniform 1/{count} = {1 / count:.3f}), "
        f"{view.on_anti_diagonal:.3f} of it on the right token. It writes {int(view.right.sum())} of "
        f"{count} symbols right."
    )
    written = [pieces[count - 1 - i] for i in range(count)]  # row i: the token output step i must write
    ui.draw(
        figures.heatmap_grid,
        "reversal-alignment",
        view.weights,
        ["untrained", "trained to reverse"],
        written,
        list(pieces),
        title="Bahdanau weights: rows write the sentence backwards, columns are the input",
        columns=2,
        max_row_height=480,
    )
    st.caption(attention.TRAINED_NOTE)


def show_bottleneck() -> None:
    """Accuracy against sentence length with and without attention, as ``scripts/train.py`` measured it."""
    from . import figures, ui

    curve = attention.bottleneck_curve()
    st.markdown(
        "The bottleneck in numbers, as Bahdanau et al. showed it: the same encoder–decoder trained to reverse "
        "sentences **without** attention must squeeze the sentence into its final state, and falls behind as "
        f"sentences grow ({curve.without_attention[-1]:.0%} of symbols right at {curve.lengths[-1]} tokens); "
        f"**with** attention it stays at {min(curve.with_attention):.1%} or more at every length."
    )
    series = {"with attention": curve.with_attention, "without attention": curve.without_attention}
    options = dict(title="Symbols right, by sentence length", x_title="tokens", y_title="share right")
    options.update(y_range=(0, 1.05))  # a share: the whole 0–1 range
    ui.draw(figures.lines, "reversal-accuracy", list(curve.lengths), series, **options)
    st.caption("Measured by `scripts/train.py` on 200 random sentences per length; `attention.bottleneck_curve()`.")
