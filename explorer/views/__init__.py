"""The views layer: what a page computes, as frozen results (``explorer.results``) shared read-only by
every session. A view takes the run's ``Run`` (settings and prepared sentence), is budgeted once
(``run.budgeted``), and calls the ``attention`` package through ``models``; it draws nothing but a
waiting notice.

``mistakes`` and ``speed`` (the Break it and Speed pages' views, which import torch) are imported from their
modules, so the first page's run imports no torch.

It may import ``models``, ``runtime`` and the bottom modules, never ``session``, ``widgets`` or pages.
"""

from explorer.views.chapter import (
    WHY_HIDDEN_SIZE,
    batch_view,
    computed_why_view,
    dropout_sample_limit,
    dropout_settings,
    dropout_untouched,
    dropout_view,
    heads_product_view,
    is_book,
    mask_view,
    module_seed,
    module_trace,
    multihead_view,
    note,
    qkv_view,
    reversal_view,
    scaling_view,
    seq2seq_parts,
    simplified_view,
    why_view,
)
from explorer.views.run import Run, page_turn

__all__ = [
    "WHY_HIDDEN_SIZE",
    "Run",
    "batch_view",
    "computed_why_view",
    "dropout_sample_limit",
    "dropout_settings",
    "dropout_untouched",
    "dropout_view",
    "heads_product_view",
    "is_book",
    "mask_view",
    "module_seed",
    "module_trace",
    "multihead_view",
    "note",
    "page_turn",
    "qkv_view",
    "reversal_view",
    "scaling_view",
    "seq2seq_parts",
    "simplified_view",
    "why_view",
]
