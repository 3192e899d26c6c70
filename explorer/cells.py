"""What a heatmap's cells are, for the cell panel (issue 25): each constructor here takes a view's arrays
and returns ``Cells``, which maps a cell (row, col) to its ``attention.derivations.Derivation`` and its
words (``page_text.cells``). Nothing is computed or copied until a cell is asked for: one cell's sum costs
microseconds, and the view it reads stays cached (``page_cells.once_per_view`` keeps a view's ``Cells``).

``rows`` and ``cols`` name what a row and a column are ("query", "key", "token", "dim"): a selection on one
panel of a step marks the rows and columns of the same name on the step's other panels.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import attention
from explorer.figures.labels import visible_token
from explorer.page_text.cells import Notation, explain

TOKEN_AXES = ("query", "key", "token")  # a picker lists these as tokens counted from 1; others by their names


@dataclass(frozen=True)
class Cells:
    """A heatmap's cells explained: ``derive(row, col)`` gives the ``Derivation`` of a cell, counted from 0.

    ``code`` is the line that made the matrix, as "Show the code" prints it (a part of that line is
    enough); ``keys`` are the tokens a softmax row or a weighted sum runs over."""

    derive: Callable
    notation: Notation
    code: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    rows: str = "query"
    cols: str = "key"
    keys: tuple[str, ...] = ()
    words: Callable = explain  # writes a derivation out: ``page_text.cells.explain``, or a kind's own

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.row_labels), len(self.col_labels)

    @functools.cached_property
    def options(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The picker's rows and columns as it lists them: a token counted from 1, as the book counts ("2: Your"),
        or a name ("dim 0"). Made once: a page's rerun lists the same ones."""
        return tuple(
            tuple(
                f"{k + 1}: {visible_token(label)}" if what in TOKEN_AXES else str(label)
                for k, label in enumerate(labels)
            )
            for what, labels in ((self.rows, self.row_labels), (self.cols, self.col_labels))
        )

    def derivation(self, row: int, col: int):
        return self.derive(row, col)

    def explain(self, row: int, col: int) -> tuple[str, str]:
        """The words and the sum of cell (``row``, ``col``) (``page_text.cells.explain`` unless ``words``): the
        sum is one text, or (heading, text) pairs to show side by side."""
        keys = self.keys or self.col_labels
        return self.words(self.derive(row, col), self.notation, self.row_labels[row], self.col_labels[col], keys)


def _row(matrix, row: int) -> np.ndarray:
    """A writable copy of one row (a view's arrays are read-only; torch warns on those)."""
    return np.array(matrix[row], dtype=np.float64)


def scores(queries, keys, pieces: Sequence[str], *, code: str, notation: Notation, scaled: bool = False) -> Cells:
    """ω_ij = q^(i) · k^(j) (÷ √d_k with ``scaled``) from (T, d) queries and keys."""

    def derive(row: int, col: int):  # copies made for the cell asked for: the view's arrays are read-only
        q, k = np.array(queries, dtype=np.float64), np.array(keys, dtype=np.float64)
        return attention.derivations.score(q, k, row, col, scaled=scaled)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def weights(scores_matrix, pieces: Sequence[str], *, code: str, notation: Notation, masked=None) -> Cells:
    """α_ij, the softmax of row i of the (already scaled) ``scores_matrix`` (T, T); ``masked`` (T, T), True =
    a future key."""

    def derive(row: int, col: int):
        hidden = None if masked is None else np.array(masked[row], dtype=bool)
        return attention.derivations.weight(_row(scores_matrix, row), col, row=row, masked=hidden, subtract_max=False)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def dropped(weights_matrix, keep, p: float, pieces: Sequence[str], *, code: str, notation: Notation) -> Cells:
    """A weight after one dropout draw: kept ones × 1/(1 − p), the others 0."""

    def derive(row: int, col: int):
        kept = bool(keep[row, col])
        return attention.derivations.dropped_weight(float(weights_matrix[row, col]), kept, p, row=row, col=col)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def masked_weights(weights_matrix, mask_simple, pieces: Sequence[str], *, code: str, notation: Notation) -> Cells:
    """``masked_simple = attn_weights * mask_simple``, one cell."""

    def derive(row: int, col: int):
        weight, keep = float(weights_matrix[row, col]), float(mask_simple[row, col])
        return attention.derivations.masked_weight(weight, keep, row=row, col=col)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def renormalized(masked_matrix, mask, pieces: Sequence[str], *, code: str, notation: Notation) -> Cells:
    """``masked_simple_norm = masked_simple / row_sums``, one cell; ``mask`` (T, T), True = a future key."""

    def derive(row: int, col: int):
        hidden = np.array(mask[row], dtype=bool)
        return attention.derivations.renormalized(_row(masked_matrix, row), col, row=row, masked=hidden)

    return Cells(derive, notation, code, tuple(pieces), tuple(pieces))


def context(weights_matrix, values, pieces: Sequence[str], dims: Sequence[str], *, code: str, notation: Notation):
    """z^(i)[c] = Σ_j α_ij · v^(j)[c] from (T, T) weights and (T, d) values; columns are dimensions."""

    def derive(row: int, col: int):
        v = np.array(values, dtype=np.float64)
        return attention.derivations.weighted_sum(_row(weights_matrix, row), v, col, row=row)

    return Cells(derive, notation, code, tuple(pieces), tuple(dims), cols="dim", keys=tuple(pieces))


def projections(
    inputs, weight_matrix, pieces: Sequence[str], dims: Sequence[str], *, code: str, notation: Notation, bias=None
):
    """An entry of ``x @ W`` (+ ``bias``) ((T, d_in) inputs, (d_in, d_out) ``weight_matrix``, (d_out,) bias): rows
    are tokens, columns the output's dimensions."""

    def derive(row: int, col: int):
        x, w = np.array(inputs[row], dtype=np.float64), np.array(weight_matrix, dtype=np.float64)
        b = None if bias is None else np.array(bias, dtype=np.float64)
        return attention.derivations.projection(x, w, col, bias=b, row=row, kind="projection")

    return Cells(derive, notation, code, tuple(pieces), tuple(dims), rows="query", cols="dim")


def masked_scores(found: Cells, mask) -> Cells:
    """Scores with −∞ above the diagonal: a future key's dot product is computed, then replaced by −∞."""

    def derive(row: int, col: int):
        derivation = found.derive(row, col)
        if not mask[row, col]:
            return derivation
        return dataclasses.replace(derivation, value=-math.inf, details={**derivation.details, "masked": True})

    return dataclasses.replace(found, derive=derive)
