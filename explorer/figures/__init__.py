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
They live by kind: ``labels`` (token labels made visible and escaped), ``layout`` (colours,
styles, ticks, margins, subplot grids, the figure itself), ``matrices`` (what part of a large matrix
is drawn), ``scales`` (a matrix's kind and its colour range), ``heatmaps`` with ``masks`` (masked
cells) and ``dropout``, ``grids`` (one matrix per head), ``head_grid`` (every layer × head, each
with a point a click selects), ``charts``, ``products`` (a score's terms, two computations compared),
``heads``, ``votes`` (a live room's votes), ``mistakes`` (the "Break it" page) and ``tables`` (a figure's
numbers as CSV and JSON).
Pages import this package and use the names below.
"""

from .cells import PICK_LIMIT, PICK_TRACE, cell_marks, pick_layer
from .charts import bars, lines, stacked_contributions
from .dropout import WORD_LABEL_LIMIT, dropout_heatmap
from .grids import heatmap_grid
from .heatmaps import heatmap, without_cell_text
from .labels import plain_label, plural, token_label, token_labels, visible_token
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
)
from .matrices import MatrixView, fit_matrix
from .products import agreement, dot_product_bars, dot_product_text, measured_lines
from .scales import KINDS, MASK, NONNEGATIVE, SIGNED, WEIGHTS, colour_range, infer_kind, shared_range, spread_note
from .votes import vote_bars
from .widths import readable_width

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
