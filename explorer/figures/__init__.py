"""Pure figure builders: numbers and labels in, ``plotly.graph_objects.Figure`` out.

Every page draws through these functions, so the conventions hold everywhere:

* rows are queries and columns are keys, labelled with the tokens on numeric
  axes (``tickvals``/``ticktext``), so a token that occurs twice stays two rows;
* every token label passes through ``token_label``, which makes whitespace
  visible and escapes it, so "<b>" or a link typed by a user is shown, never
  interpreted by plotly;
* colour scales are colour-blind-safe: Cividis for values that start at zero
  (weights), ColorBrewer's RdBu, centred on zero, for signed values (scores, Q/K/V);
* cell values are printed when the matrix is small; hover everywhere says the
  row token, the column token, the value and what it means;
* masked cells are blank and labelled "masked".

Builders take numpy arrays (or anything ``np.asarray`` accepts) and do no torch math.
They live by kind: ``labels`` (token labels made visible and escaped), ``layout`` (colours,
styles, ticks, margins, what part of a large matrix is drawn), ``heatmaps`` and ``charts``.
Pages import this package and use the names below.
"""

from .charts import bars, dot_product_bars, dot_product_text, lines, measured_lines, stacked_contributions
from .heatmaps import WORD_LABEL_LIMIT, dropout_heatmap, heatmap, heatmap_grid, without_cell_text
from .labels import plain_label, plural, token_label, token_labels, visible_token
from .layout import (
    DEFAULT_STYLE,
    DIVERGING,
    MASK_WORD_LIMIT,
    MASKED_FILL,
    PRESENTER,
    ROTATED_TICKS,
    SEQUENTIAL,
    SERIES_COLOURS,
    STACKED_TOKEN_LIMIT,
    TEXT_CELL_LIMIT,
    TICK_LIMIT,
    FigureStyle,
    MatrixView,
    export_config,
    fit_matrix,
)

__all__ = [
    "DEFAULT_STYLE",
    "DIVERGING",
    "MASKED_FILL",
    "MASK_WORD_LIMIT",
    "PRESENTER",
    "ROTATED_TICKS",
    "SEQUENTIAL",
    "SERIES_COLOURS",
    "STACKED_TOKEN_LIMIT",
    "TEXT_CELL_LIMIT",
    "TICK_LIMIT",
    "WORD_LABEL_LIMIT",
    "FigureStyle",
    "MatrixView",
    "bars",
    "dot_product_bars",
    "dot_product_text",
    "dropout_heatmap",
    "export_config",
    "fit_matrix",
    "heatmap",
    "heatmap_grid",
    "lines",
    "measured_lines",
    "plain_label",
    "plural",
    "stacked_contributions",
    "token_label",
    "token_labels",
    "visible_token",
    "without_cell_text",
]
