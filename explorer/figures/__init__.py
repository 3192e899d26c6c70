"""Pure figure builders: numbers and labels in, ``plotly.graph_objects.Figure`` out.

Every page draws through these functions, so the conventions hold everywhere:

* rows are queries and columns are keys, labelled with the tokens on numeric
  axes (``tickvals``/``ticktext``), so a token that occurs twice stays two rows;
* every token label passes through ``token_label``, which makes whitespace
  visible and escapes it, so "<b>" or a link typed by a user is shown, never
  interpreted by plotly;
* colour is a measurement (``heatmaps``' kinds): attention weights on one fixed 0–1
  Cividis scale, signed values (scores, Q/K/V, context vectors) on ColorBrewer's RdBu
  centred on zero from −max|v| to +max|v|, other non-negative values from 0; panels
  compared side by side share one range (``shared_range``); a boolean mask has two
  colours and a legend; explicit ranges switch plotly's ``zauto`` off, so they hold;
* cell values are printed when the matrix is small; hover everywhere says the
  row token, the column token, the value and what it means;
* masked cells are grey, never a colour of the scale, and say on hover what they hold
  (a masked score −∞, a masked weight 0).

Builders take numpy arrays (or anything ``np.asarray`` accepts) and do no torch math. Each
assembles its traces and layout as plain dicts and makes its figure in one constructor call that
skips plotly's validation (``layout.figure``): about 1 ms a heatmap, where setting properties one by
one (``update_layout``, ``add_trace``, ``make_subplots``) validates each and costs 10-25 ms.
``tests/test_figures_validity.py`` checks that plotly's validator accepts every builder's output.
They live in five modules: ``layout`` (token labels made visible and escaped; colours, styles, ticks, margins,
subplot grids, the figure itself), ``heatmaps`` (a matrix's kind and colour range, what part of a large matrix is
drawn, masked cells, clickable cells, heatmaps, dropout's heatmap, one matrix per head side by side, readable
widths), ``charts`` (bars and lines, a score's terms, two computations compared, heads' shares, a live room's votes,
every layer × head), ``mistakes`` (the "Break it" page) and ``tables`` (a figure's numbers as CSV and JSON).
Pages import this package and use the names below.
"""

from .charts import (
    agreement,
    bars,
    dot_product_bars,
    dot_product_text,
    lines,
    measured_lines,
    stacked_contributions,
    vote_bars,
)
from .heatmaps import (
    KINDS,
    MASK,
    NONNEGATIVE,
    PICK_LIMIT,
    PICK_TRACE,
    SIGNED,
    WEIGHTS,
    WORD_LABEL_LIMIT,
    MatrixView,
    cell_marks,
    colour_range,
    dropout_heatmap,
    fit_matrix,
    heatmap,
    heatmap_grid,
    infer_kind,
    pick_layer,
    readable_width,
    shared_range,
    spread_note,
    without_cell_text,
)
from .layout import (
    DEFAULT_STYLE,
    DIVERGING,
    MASK_COLOURS,
    MASK_WORD_LIMIT,
    MASKED_FILL,
    PHONE,
    PRESENTER,
    ROTATED_TICKS,
    SEQUENTIAL,
    SERIES_COLOURS,
    STACKED_TOKEN_LIMIT,
    TEXT_CELL_LIMIT,
    TICK_LIMIT,
    FigureStyle,
    export_config,
    plain_label,
    plural,
    token_label,
    token_labels,
    visible_token,
)

__all__ = [
    "DEFAULT_STYLE",
    "DIVERGING",
    "KINDS",
    "MASK",
    "MASKED_FILL",
    "MASK_COLOURS",
    "MASK_WORD_LIMIT",
    "NONNEGATIVE",
    "PHONE",
    "PICK_LIMIT",
    "PICK_TRACE",
    "PRESENTER",
    "ROTATED_TICKS",
    "SEQUENTIAL",
    "SERIES_COLOURS",
    "SIGNED",
    "STACKED_TOKEN_LIMIT",
    "TEXT_CELL_LIMIT",
    "TICK_LIMIT",
    "WEIGHTS",
    "WORD_LABEL_LIMIT",
    "FigureStyle",
    "MatrixView",
    "agreement",
    "bars",
    "cell_marks",
    "colour_range",
    "dot_product_bars",
    "dot_product_text",
    "dropout_heatmap",
    "export_config",
    "fit_matrix",
    "heatmap",
    "heatmap_grid",
    "infer_kind",
    "lines",
    "measured_lines",
    "pick_layer",
    "plain_label",
    "plural",
    "readable_width",
    "shared_range",
    "spread_note",
    "stacked_contributions",
    "token_label",
    "token_labels",
    "visible_token",
    "vote_bars",
    "without_cell_text",
]
