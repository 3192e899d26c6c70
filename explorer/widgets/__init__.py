"""The widgets layer: the Streamlit pieces pages are made of (sidebar, stepper, charts with their
downloads, the code panel, questions, captions, the stylesheet) and friendly handling of bad input.

It may import ``room`` (its own layer), ``session``, ``views``, ``models``, ``runtime`` and the bottom modules,
never pages.
"""

from explorer.runtime.patches import run_page
from explorer.widgets.basics import (
    book_caption,
    dropout_setting,
    guard,
    outside_model,
    page_stylesheet,
    progress,
    show_error,
    stylesheet,
    table,
    truncation_notice,
    weights_caption,
)
from explorer.widgets.charts import Panel, chart, draw, explain_cell, panel, side_by_side, style, token_vectors
from explorer.widgets.code import code_panel_key, show_code, source_of
from explorer.widgets.downloads import finish_run
from explorer.widgets.models import show_alignment, show_bottleneck, show_every_head, show_summaries
from explorer.widgets.questions import ask
from explorer.widgets.sidebar import sidebar
from explorer.widgets.stepper import Steps, stepper

__all__ = [
    "Panel",
    "Steps",
    "ask",
    "book_caption",
    "chart",
    "code_panel_key",
    "draw",
    "dropout_setting",
    "explain_cell",
    "finish_run",
    "guard",
    "outside_model",
    "page_stylesheet",
    "panel",
    "progress",
    "run_page",
    "show_alignment",
    "show_bottleneck",
    "show_code",
    "show_error",
    "show_every_head",
    "show_summaries",
    "side_by_side",
    "sidebar",
    "source_of",
    "stepper",
    "style",
    "stylesheet",
    "table",
    "token_vectors",
    "truncation_notice",
    "weights_caption",
]
