"""Why attention's trained part, computed: the shipped reversal models on the user's sentence
(``attention.before_chapter.reversal``).

``widgets.models`` draws it."""

from __future__ import annotations

import numpy as np

import attention
from explorer.results import ReversalView
from explorer.runtime.caching import CACHE_ENTRIES, shared_view


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
