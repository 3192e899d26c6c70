"""What a learner takes away from a step: each heatmap's numbers as CSV and the whole step's
numbers as JSON, in files named for the page, the step and the quantity.

This module is the pure part: a figure's numbers as tables (``figure_tables``), CSV and JSON text.
``widgets.steps`` offers them as buttons.

Exports mean what they say: a masked weight is 0, a masked score -inf (the string "-inf" in
JSON), and a token that looks like a spreadsheet formula is shown, never run."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence

import numpy as np

OVERLAYS = ("masked", "masked cells", "dropped", "cells", "open this head")  # traces that mark or pick, not data
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
JSON_NOTE = (
    "Masked attention weights are exactly 0 and written as 0. Masked attention scores are -infinity, which "
    'JSON cannot write as a number: they are the string "-inf". null marks a value that is not a number '
    "(nan), e.g. a naive softmax that overflowed."
)


def _axis_labels(axis) -> list[str] | None:
    return None if axis.ticktext is None else [html.unescape(t) for t in axis.ticktext]


def _heatmap_values(trace) -> np.ndarray:
    """A heatmap's numbers with its blank cells filled back in: a masked or dropped weight is 0,
    a masked score −∞ (the figure's ``hidden_value``); other blanks stay nan."""
    values = np.asarray(trace.z, dtype=float)
    hidden = (trace.meta or {}).get("hidden_value") if isinstance(trace.meta, dict) else None
    if hidden is None:
        return values
    return np.where(np.isnan(values), float(hidden), values)


def figure_tables(fig) -> list[dict]:
    """The numbers behind a figure's traces, with readable labels, for CSV and JSON exports."""
    tables = []
    for trace in fig.data:
        entry = {"type": trace.type, "name": html.unescape(trace.name or "")}
        meta = trace.meta if isinstance(trace.meta, dict) else {}
        if trace.type == "heatmap":
            entry["values"] = _heatmap_values(trace)
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
    return [
        (trace.meta.get("highlight") if isinstance(trace.meta, dict) else None)
        for trace in fig.data
        if trace.type == "heatmap"
    ]


def _row_text(label: str, values) -> str:
    shown = ", ".join(
        "masked" if not np.isfinite(v) else f"{v:.3g}" for v in np.asarray(values, float)[:ALT_ROW_VALUES]
    )
    more = f" and {len(values) - ALT_ROW_VALUES} more" if len(values) > ALT_ROW_VALUES else ""
    return f"Highlighted row {label}: {shown}{more}"


def figure_alt(title: str, tables: Sequence[dict], highlights: Sequence[int | None] = ()) -> str:
    """What a screen reader says for a chart: its title, then what each trace shows, its size and its range, and
    the numbers of each heatmap's highlighted row (``highlights``, one per heatmap in order)."""
    parts = [title or "A chart"]
    highlights = iter(highlights)
    for table in tables:
        name = f" {table['name']}" if table.get("name") else ""
        if table["type"] == "heatmap":
            rows, cols = table["rows"], table["cols"]
            parts.append(
                f"Heatmap{name}: {len(rows)} rows ({_span(rows)}) by {len(cols)} columns ({_span(cols)}), "
                f"{_range(table['values'])}"
            )
            row = next(highlights, None)
            if row is not None and 0 <= row < len(table["values"]):
                parts.append(_row_text(rows[row] if row < len(rows) else str(row + 1), table["values"][row]))
        else:
            kind = "Bar chart" if table["type"] == "bar" else "Line"
            parts.append(f"{kind}{name}: {len(table['values'])} values, {_range(table['values'])}")
    return ". ".join(parts) + "."


def figure_title(fig) -> str:
    """A figure's title as text (plotly's escapes undone), "" if it has none."""
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


def matrix_csv(matrix, row_labels: Sequence[str], col_labels: Sequence[str], corner: str = "") -> str:
    """A matrix as CSV with token labels in the header and the first column (-inf for masked scores)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_text(corner), *(csv_text(c) for c in col_labels)])
    for label, row in zip(row_labels, np.asarray(matrix), strict=True):
        writer.writerow([csv_text(label), *(f"{float(v):.6g}" for v in row)])
    return buffer.getvalue()


def tables_csv(tables: list[dict]) -> str:
    """Every heatmap of a figure as CSV: token labels in the header and the first column."""
    blocks = []
    for table in tables:
        if table["type"] != "heatmap":
            continue
        values = table["values"]
        rows = table["rows"] if table["rows"] and len(table["rows"]) == values.shape[0] else range(values.shape[0])
        cols = table["cols"] if table["cols"] and len(table["cols"]) == values.shape[1] else range(values.shape[1])
        blocks.append(matrix_csv(values, [str(r) for r in rows], [str(c) for c in cols], corner=table["title"]))
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
