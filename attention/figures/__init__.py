"""Pure figure builders: numbers and labels in, ``plotly.graph_objects.Figure`` out.

Every page draws through these functions, so the conventions hold everywhere:

* rows are queries and columns are keys, labelled with the tokens on numeric axes (``tickvals``/``ticktext``),
  so a token that occurs twice stays two rows;
* every token label passes through ``token_label``, which makes whitespace visible and escapes HTML, so "<b>"
  or a link typed by a user is shown, never interpreted by plotly;
* colour is a measurement (``heatmaps``' kinds): attention weights on one fixed 0–1 Cividis scale, signed values
  on RdBu centred on zero from −max|v| to +max|v|, other non-negative values from 0; panels compared side by side
  share one range (``shared_range``); a boolean mask has two colours and a legend;
* cell values are printed when the matrix is small; hover says the row token, the column token, the value and
  what it means; masked cells are grey and say on hover what they hold (a masked score −∞, a masked weight 0).

Builders do no torch math. Each makes its figure from plain dicts in one unvalidated constructor call
(``figure``): about 1 ms a heatmap, where plotly's validating setters cost 10-25 ms;
``tests/test_figures_validity.py`` checks that plotly's validator accepts every builder's output.

This module holds what every builder shares (labels, colours, styles, ticks, layouts, subplot grids) and a
figure's numbers as CSV, JSON and text; ``heatmaps`` holds matrices, ``charts`` everything else.
"""

from __future__ import annotations

import csv
import functools
import html
import io
import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

# Token and text labels for figures: whitespace made visible, HTML escaped (``token_label``, ``plain_label``).


_INVISIBLE = {" ": "␣", "\t": "⇥", "\n": "↵", "\r": "␍"}
MAX_TOKEN_CHARS = 24  # longer pieces are cut, with "…"


@functools.lru_cache(maxsize=8192)
def visible_token(piece: str) -> str:
    """A token's text with whitespace and invisible characters made visible and long pieces shortened; for places
    that show text literally (tables). Cached: a page shows the same few hundred tokens again at every run."""
    unseen = ("Cc", "Cf", "Zl", "Zp", "Co", "Cn")  # control and format characters, separators, private, unassigned
    shown = [_INVISIBLE.get(c, f"⟨U+{ord(c):04X}⟩" if unicodedata.category(c) in unseen else c) for c in piece]
    text = "".join(shown) or "∅"
    if len(text) > MAX_TOKEN_CHARS:
        text = text[: MAX_TOKEN_CHARS - 1] + "…"
    # Bidirectional text stays in its own run, so a right-to-left token cannot reorder its neighbours.
    if any(unicodedata.bidirectional(c) in ("R", "AL") for c in text):
        text = "\u2068" + text + "\u2069"
    return text


def token_label(piece: str) -> str:
    """A token as a plotly label: ``visible_token`` with HTML escaped, so "<b>" typed by a user is shown as typed."""
    return html.escape(visible_token(piece), quote=False)


def token_labels(pieces: Sequence[str]) -> list[str]:
    return [token_label(p) for p in pieces]


def plain_label(text: str) -> str:
    """Escape a label that is not a token (a dimension name, a series name)."""
    return html.escape(str(text), quote=False)


DIMENSION = "dimension (counted from 0)"  # a vector's entries, as Python indexes them; tokens count from 1


def plural(word: str) -> str:
    """An axis title from a row or column name: "query" → "queries", "key" → "keys"; a note in brackets stays:
    "dimension (counted from 0)" → "dimensions (counted from 0)"."""
    name, bracket, note = word.partition(" (")
    if bracket and name.isalpha():
        return plural(name) + bracket + note
    if not word.isalpha():  # a symbol such as "d_out" names the axis as it is
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word if word.endswith("s") else word + "s"


# What every figure shares: colours, font sizes, ticks, the title and margins, subplot grids, export options,
# and the figure itself (``figure``).


SEQUENTIAL = "Cividis"
DIVERGING = "RdBu_r"
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MASKED_FILL = "#D9D9D9"
MASK_COLOURS = ("#56B4E9", "#595959")  # a boolean mask: False (visible) light blue, True (masked) dark grey
ROTATED_TICKS = 12  # above this many column labels, heatmaps draw them upright (tickangle -90)
TEXT_CELL_LIMIT = 16  # print cell values when both sides have at most this many entries
STACKED_TOKEN_LIMIT = 24  # blocks in a stacked context vector; more tokens share an "other" block
TICK_LIMIT = 40  # label every token up to this many; beyond it, every k-th
MASK_WORD_LIMIT = 8  # write "masked" in blank cells up to this many per axis (wider, the words overlap)
WORD_EM = 0.56  # a letter of the charts' sans-serif font, in ems ("masked" at 18 px is 59 px wide in Chromium)
WORD_GAP_PX = 6  # the room kept between the words of two neighbouring cells
# A text's width, in ems of the charts' font (Source Sans, as Streamlit sets it): "0.10" at 12 px is 20.9 px wide in
# Chromium, so a digit is 0.5 em and a point 0.25; a minus sign is counted as a digit, any other character as a letter.
CHAR_EM = {**dict.fromkeys("0123456789-−+", 0.5), ".": 0.25, " ": 0.25}
CELL_TEXT_GAP_PX = 4  # the room kept between the numbers of two neighbouring cells


# Each scale as the [position, colour] stops plotly's validator expands it to, to the last bit: figures are built
# unvalidated (``figure``), and plotly.js knows no reversed "RdBu_r".
COLOUR_STOPS = {name: [list(s) for s in go.Heatmap(colorscale=name).colorscale] for name in (SEQUENTIAL, DIVERGING)}


@dataclass(frozen=True)
class FigureStyle:
    """Font sizes and margins; ``PRESENTER`` is readable from the back of a room."""

    font_size: int = 13
    tick_size: int = 12
    title_size: int = 16
    cell_text_size: int = 12
    label_size: int = 10  # words written in cells ("masked", "dropped")
    height_per_row: int = 34
    min_height: int = 260
    max_height: int = 470  # a step's figure fits a 1280×720 screen under the title and stepper
    token_window: tuple[int, int] | None = None  # show only tokens [start, stop) on token axes
    max_cells_per_axis: int = 192  # larger matrices are drawn as block means, to keep payloads small
    shrink_text: bool = True  # plotly shrinks a bar's value to the bar's width; a phone scrolls sideways instead
    min_cell_text_size: int = 10  # cell numbers are drawn down to this size to fit their cells, else left out
    page_width: int | None = 820  # the main column's width at 1280×720 (px); None: unknown, a chart scrolls instead
    share: float = 1.0  # the share of ``page_width`` this chart is drawn in (0.49 for one of two columns)


DEFAULT_STYLE = FigureStyle()
PRESENTER = FigureStyle(
    font_size=20,
    tick_size=18,
    title_size=24,
    cell_text_size=18,
    label_size=18,
    height_per_row=44,
    min_height=280,
    max_height=420,  # under the title, the stepper and a line of text at 1280×720
    min_cell_text_size=18,  # every text at least 18 px: numbers that do not fit at 18 px are left to the hover
    page_width=1120,  # presenter mode collapses the sidebar
)
PHONE = FigureStyle(  # no chart text under 16 px on a phone; a chart that needs more width scrolls sideways
    font_size=16,
    tick_size=16,
    title_size=18,
    cell_text_size=16,
    label_size=16,
    height_per_row=40,
    min_height=280,
    shrink_text=False,
    min_cell_text_size=16,
    page_width=None,  # a chart whose texts need more width scrolls sideways (``widgets.charts.phone_scroll``)
)


def series_colour(index: int) -> str:
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def tick_positions(count: int, limit: int = TICK_LIMIT, keep: int | None = None) -> list[int]:
    """Which of ``count`` positions get a label: all up to ``limit``, else every k-th, counted both ways from
    ``keep`` (a highlighted row or column), which always keeps its label."""
    if count <= limit:
        return list(range(count))
    step = int(np.ceil(count / limit))
    start = 0 if keep is None or not 0 <= keep < count else keep % step
    return list(range(start, count, step))


def labels_that_fit(height: int, style: FigureStyle) -> int:
    """How many token labels fit along a heatmap of this figure height without overlapping:
    its plot area (the height less the title margin) over 1.3 lines of tick text each."""
    plot_height = height - (2 * style.title_size + 2 * style.tick_size + 34)
    return max(2, min(TICK_LIMIT, int(plot_height / (1.3 * style.tick_size))))


def words_fit(word: str, columns: int, style: FigureStyle, plot_px: float) -> bool:
    """Whether ``word`` in ``columns`` cells side by side keeps a gap to its neighbours in a plot ``plot_px`` wide;
    always where a chart scrolls sideways (a phone), drawn wide enough for its texts (``readable_width``)."""
    return not style.shrink_text or columns * (len(word) * WORD_EM * style.label_size + WORD_GAP_PX) <= plot_px


# A column's share of the page's width (``FigureStyle.share``): ``st.columns`` with n equal columns and its 16 px
# gaps; "beside" is the chart column of a step's words beside its chart (``widgets.Steps.beside``, [1, 2], 32 px gap).
COLUMN_SHARES = {1: 1.0, 2: 0.49, 3: 0.32, "beside": 0.64}


def text_px(text: str, size: float) -> float:
    """How wide ``text`` is drawn at ``size`` px in the charts' font (``CHAR_EM``)."""
    return size * sum(CHAR_EM.get(c, WORD_EM) for c in text)


def chart_width(style: FigureStyle) -> float | None:
    """The width (px) a chart in this style is drawn in at 1280×720; None where it is not known."""
    return None if style.page_width is None else style.page_width * style.share


def cell_text_size(texts, cell_px: float | None, style: FigureStyle) -> int | None:
    """The largest font size, from ``style.cell_text_size`` down to ``style.min_cell_text_size``, at which each of
    ``texts`` (rows of cell texts, "" in blank cells) fits its cell ``cell_px`` wide and two neighbours keep
    ``CELL_TEXT_GAP_PX`` apart; None if none does. A cell width that is not known (None) fits any text."""
    if cell_px is None:
        return style.cell_text_size
    widths = np.array([[text_px(t, 1.0) for t in row] for row in texts], dtype=np.float64)  # in ems
    if widths.size == 0:
        return style.cell_text_size
    own = widths.max()
    pairs = (widths[:, 1:] + widths[:, :-1]) / 2  # two neighbours' half widths
    pairs = pairs[(widths[:, 1:] > 0) & (widths[:, :-1] > 0)]
    for size in range(style.cell_text_size, style.min_cell_text_size - 1, -1):
        if own * size <= cell_px and (pairs.size == 0 or pairs.max() * size + CELL_TEXT_GAP_PX <= cell_px):
            return size
    return None


def figure_height(rows: int, style: FigureStyle, extra: int = 120) -> int:
    return int(np.clip(rows * style.height_per_row + extra, style.min_height, style.max_height))


def figure(data: list[dict], layout: dict) -> go.Figure:
    """The one place a builder makes its figure, from plain dicts and unvalidated (the module's docstring says
    why). Its arrays are read-only, as the validator leaves them: a figure may be shared between sessions."""
    fig = go.Figure({"data": data, "layout": layout}, _validate=False)
    for trace, spec in zip(fig.data, data, strict=True):
        for key, value in spec.items():
            if isinstance(value, np.ndarray):
                trace[key].setflags(write=False)
    return fig


def axis(style: FigureStyle, title: str | None = None, **props) -> dict:
    """An axis's layout with its title (text already escaped) and tick labels at the style's sizes; ``props``
    set to None are left out, so plotly's default holds."""
    shown = {key: value for key, value in props.items() if value is not None}
    text = {} if title is None else {"text": title}
    return {**shown, "title": {**text, "font": {"size": style.font_size}}, "tickfont": {"size": style.tick_size}}


def figure_layout(
    title: str,
    style: FigureStyle,
    height: int,
    *,
    legend: dict | None = None,
    margin: dict | None = None,
    subtitle: str = "",
    **props,
) -> dict:
    """The title, margins, height and every text size (Streamlit's theme shrinks any a figure leaves unset);
    ``legend`` and ``margin`` merge into the shared ones, ``props`` are the builder's own layout, ``subtitle`` a
    line under the title (a narrow chart cuts a long title off, so what it must say is not added to the title)."""
    sub = {"subtitle": {"text": plain_label(subtitle), "font": {"size": style.tick_size}}} if subtitle else {}
    place = {"x": 0, "xanchor": "left", "y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 6}}
    return {
        "title": {"text": plain_label(title), "font": {"size": style.title_size}, **place, **sub},
        "font": {"size": style.font_size},
        "legend": {"font": {"size": style.font_size}, **(legend or {})},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 2 * style.title_size + 2 * style.tick_size + 24, "b": 10, **(margin or {})},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": MASKED_FILL,
        "hoverlabel": {"font": {"size": style.font_size}},
        **props,
    }


def subplot_grid(
    rows: int,
    cols: int,
    titles: Sequence[str],
    style: FigureStyle,
    *,
    horizontal_spacing: float,
    vertical_spacing: float = 0.0,
    shared_yaxes: bool = False,
) -> tuple[dict, list[dict]]:
    """The axes and panel titles of a ``rows`` × ``cols`` grid, to the bit as ``make_subplots`` lays them out (it
    validates every axis: 10 ms for 12 panels); panel k, row by row, draws on ``subplot_axes(k)``. With
    ``shared_yaxes`` a row's y axes follow its first, which alone shows tick labels."""
    width = (1.0 - horizontal_spacing * (cols - 1)) / cols
    height = (1.0 - vertical_spacing * (rows - 1)) / rows
    axes, annotations = {}, []
    for r in range(rows):
        below = rows - 1 - r  # grid rows under this one
        bottom = sum([height] * below) + below * vertical_spacing
        top = min(bottom + height, 1.0)  # no rounding error above the top
        for c in range(cols):
            k = r * cols + c
            left = sum([width] * c) + c * horizontal_spacing
            right = left + width
            x, y = subplot_axes(k)
            axes["xaxis" + x[1:]] = {"anchor": y, "domain": [left, right]}
            axes["yaxis" + y[1:]] = {"anchor": x, "domain": [bottom, top]}
            if shared_yaxes and c > 0:
                axes["yaxis" + y[1:]].update(matches=subplot_axes(r * cols)[1], showticklabels=False)
            if k < len(titles) and titles[k]:
                annotations.append(paper_text(titles[k], (left + right) / 2.0, top, style, "center", "bottom"))
    return axes, annotations


def paper_text(text: str, x: float, y: float, style: FigureStyle, xanchor: str, yanchor: str) -> dict:
    said = {"text": text, "showarrow": False, "font": {"size": style.font_size}}
    return {"x": x, "y": y, "xref": "paper", "yref": "paper", **said, "xanchor": xanchor, "yanchor": yanchor}


def rect(x0: float, x1: float, y0: float, y1: float, line: dict, **props) -> dict:
    return {"type": "rect", "x0": x0, "x1": x1, "y0": y0, "y1": y1, "line": line, **props}


def chosen_ticks(positions: Sequence, texts: Sequence[str], chosen: Sequence[int]) -> dict:
    return {"tickvals": [positions[i] for i in chosen], "ticktext": [texts[i] for i in chosen]}


def subplot_axes(k: int) -> tuple[str, str]:
    suffix = "" if k == 0 else str(k + 1)
    return "x" + suffix, "y" + suffix


def export_config(file_name: str, *, image_format: str = "png") -> dict:
    """plotly's toolbar config: the camera button downloads PNG at 3 × on-screen size, or SVG, named for the view."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in file_name).strip("-") or "attention-explorer"
    image_format = image_format if image_format in ("png", "svg") else "png"
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": safe, "scale": 3},
        "modeBarButtonsToRemove": ["lasso2d", "select2d"],
    }


def plain_numbers(values) -> list:
    """Numbers as Python ``int``/``float`` (not numpy scalars), as plotly's validator stores them for JSON exports."""
    return [v.item() if isinstance(v, np.generic) else v for v in values]


# A figure's numbers as tables (``figure_tables``), CSV and JSON text, which ``widgets.steps`` offers as downloads,
# and its text alternative. Exports mean what they say: a masked weight is 0, a masked score -inf (the string
# "-inf" in JSON), and a token that looks like a spreadsheet formula is shown, never run.


OVERLAYS = ("masked", "masked cells", "dropped", "cells", "open this head")  # traces that mark or pick, not data
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
JSON_NOTE = (
    "Masked attention weights are exactly 0 and written as 0. Masked attention scores are -infinity, which "
    'JSON cannot write as a number: they are the string "-inf". null marks a value that is not a number '
    "(nan), e.g. a naive softmax that overflowed."
)


def _axis_labels(axis) -> list[str] | None:
    return None if axis.ticktext is None else [html.unescape(t) for t in axis.ticktext]


def figure_tables(fig) -> list[dict]:
    """The numbers behind a figure's traces, with readable labels, for CSV and JSON exports."""
    tables = []
    for trace in fig.data:
        entry = {"type": trace.type, "name": html.unescape(trace.name or "")}
        meta = trace.meta if isinstance(trace.meta, dict) else {}
        if trace.type == "heatmap":
            # blank cells filled back in: a masked or dropped weight is 0, a masked score −∞; other blanks stay nan
            values, hidden = np.asarray(trace.z, dtype=float), meta.get("hidden_value")
            entry["values"] = values if hidden is None else np.where(np.isnan(values), float(hidden), values)
            entry["rows"] = meta.get("rows") or _axis_labels(fig.layout.yaxis)
            entry["cols"] = meta.get("cols") or _axis_labels(fig.layout.xaxis)
            entry["title"] = meta.get("title", "")
            entry["kind"] = meta.get("kind")
        elif trace.type in ("bar", "scatter") and trace.y is not None and trace.name not in OVERLAYS:
            if all(v is None for v in trace.y):
                continue  # a legend entry, not data
            entry["x"] = list(trace.x) if trace.x is not None else None
            entry["labels"] = _axis_labels(fig.layout.xaxis)
            entry["values"] = np.asarray(trace.y, dtype=float)
        else:
            continue
        tables.append(entry)
    return tables


def _span(labels: Sequence[str]) -> str:
    labels = [str(label) for label in labels]
    return "" if not labels else labels[0] if len(labels) == 1 else f"{labels[0]} to {labels[-1]}"


def _range(values) -> str:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return "no finite values" if finite.size == 0 else f"values from {finite.min():.3g} to {finite.max():.3g}"


ALT_ROW_VALUES = 64  # a highlighted row's numbers a text alternative reads out, at most


def highlighted_rows(fig) -> list[int | None]:
    """For each heatmap of ``fig``, in order, the index of the row it outlines (the inspected query), or None."""
    metas = [trace.meta for trace in fig.data if trace.type == "heatmap"]
    return [meta.get("highlight") if isinstance(meta, dict) else None for meta in metas]


def figure_alt(title: str, tables: Sequence[dict], highlights: Sequence[int | None] = ()) -> str:
    """What a screen reader says for a chart: its title, then what each trace shows, its size and its range, and
    the numbers of each heatmap's highlighted row (``highlights``, one per heatmap in order)."""
    parts = [title or "A chart"]
    highlights = iter(highlights)
    for table in tables:
        name = f" {table['name']}" if table.get("name") else ""
        if table["type"] == "heatmap":
            rows, cols = table["rows"], table["cols"]
            size = f"{len(rows)} rows ({_span(rows)}) by {len(cols)} columns ({_span(cols)})"
            parts.append(f"Heatmap{name}: {size}, {_range(table['values'])}")
            row = next(highlights, None)
            if row is not None and 0 <= row < len(table["values"]):
                values = np.asarray(table["values"][row], float)
                shown = ", ".join("masked" if not np.isfinite(v) else f"{v:.3g}" for v in values[:ALT_ROW_VALUES])
                more = f" and {len(values) - ALT_ROW_VALUES} more" if len(values) > ALT_ROW_VALUES else ""
                parts.append(f"Highlighted row {rows[row] if row < len(rows) else row + 1}: {shown}{more}")
        else:
            kind = "Bar chart" if table["type"] == "bar" else "Line"
            parts.append(f"{kind}{name}: {len(table['values'])} values, {_range(table['values'])}")
    return ". ".join(parts) + "."


def figure_title(fig) -> str:
    return html.unescape(fig.layout.title.text or "")


def csv_text(text: str) -> str:
    """A label made safe for spreadsheets: one that starts like a formula (=, +, -, @) gets a leading
    apostrophe, so a token such as "=HYPERLINK(...)" is shown, never run. Numbers ("-0.5") stay numbers."""
    if not text.startswith(FORMULA_STARTS):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


def tables_csv(tables: list[dict]) -> str:
    """Every heatmap of a figure as CSV: its title in the corner, token labels heading rows and columns."""
    blocks = []
    for table in tables:
        if table["type"] != "heatmap":
            continue
        values = table["values"]
        rows = table["rows"] if table["rows"] and len(table["rows"]) == values.shape[0] else range(values.shape[0])
        cols = table["cols"] if table["cols"] and len(table["cols"]) == values.shape[1] else range(values.shape[1])
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow([csv_text(table["title"]), *(csv_text(str(c)) for c in cols)])
        for label, row in zip(rows, values, strict=True):
            writer.writerow([csv_text(str(label)), *(f"{float(v):.6g}" for v in row)])
        blocks.append(buffer.getvalue())
    return "\n".join(blocks)


def json_table(table: dict) -> dict:
    return {k: v for k, v in table.items() if v is not None}


def step_json(payload: dict) -> str:
    """This step's numbers as JSON: arrays become nested lists, -inf the string "-inf", nan null (``JSON_NOTE``)."""

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, np.ndarray | list | tuple):
            return [clean(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
        if isinstance(value, float | np.floating):
            if np.isnan(value):
                return None
            return float(value) if np.isfinite(value) else ("-inf" if value < 0 else "inf")
        if isinstance(value, np.integer | np.bool_):
            return value.item()
        return value

    return json.dumps(clean(payload), indent=1, ensure_ascii=False)


# The builders, after the pieces above, which they import from here; pages use them as ``figures.heatmap``.
from .charts import (  # noqa: E402, F401
    agreement,
    bars,
    dot_product_bars,
    dot_product_text,
    lines,
    stacked_contributions,
    vote_bars,
)
from .heatmaps import (  # noqa: E402, F401
    PICK_LIMIT,
    PICK_TRACE,
    cell_marks,
    fit_matrix,
    heatmap,
    heatmap_grid,
    infer_kind,
    pick_layer,
    readable_width,
    shared_range,
    without_cell_text,
)
