"""The explainable heatmaps of Multi-head and Break it (issue 25): a head's weights, the heads merged,
``out_proj``'s mix, and a mistake's cell beside the right one, as ``explorer.cells.Cells`` read from the
views' arrays. Nothing is computed until a cell is asked for."""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np

import attention
from explorer.cells import Cells, context
from explorer.page_text import cells_heads as words
from explorer.page_text.cells import Notation
from explorer.results import MultiheadView

WEIGHTS_CODE = "attn_weights = torch.softmax("
CAT_CODE = "return torch.cat([head(x) for head in self.heads], dim=-1)"  # the wrapper's merge
VIEW_CODE = "context_vec = context_vec.contiguous().view("  # MultiHeadAttention's merge


def _weight(scores, keep, p: float, head: int, row: int, col: int):
    """Head ``head``'s weight α_ij from its (scaled, −∞ where masked) scores, then dropout's draw if any."""
    found = attention.derivations.weight(
        np.array(scores[head, row], dtype=np.float64), col, row=row, subtract_max=False
    )
    if keep is not None:
        found = attention.derivations.dropped_weight(found.value, bool(keep[head, row, col]), p, row=row, col=col)
    return dataclasses.replace(found, details={**found.details, "head": head, "num_heads": scores.shape[0]})


def heads(scores, keep, p: float, shown: range, pieces, *, code: str = WEIGHTS_CODE) -> Cells:
    """A grid of heads ``shown``: panel k's key j is column k · T + j (``figures.pick_layer``)."""
    count = len(pieces)

    def derive(row: int, col: int):
        return _weight(scores, keep, p, shown.start + col // count, row, col % count)

    labels = tuple(f"head {h + 1} · key {j + 1}: {pieces[j]}" for h in shown for j in range(count))
    notation = Notation("attn_weights", scaled=True)
    return Cells(
        derive, notation, code, tuple(pieces), labels, cols="head · key", keys=tuple(pieces), words=words.head_weight
    )


def heads_of(data: MultiheadView, which: str, p: float, shown: range, pieces) -> Cells:
    """``heads`` of the view's ``which`` module: "wrapper" or "efficient"."""
    return heads(getattr(data, f"{which}_scores"), getattr(data, f"{which}_keep"), p, shown, pieces)


def one_head(data: MultiheadView, head: int, p: float, pieces, dims) -> dict[str, Cells]:
    """The wrapper's head ``head``: its weights and its context vectors."""
    return {
        "head-weights": heads(data.wrapper_scores, data.wrapper_keep, p, range(head, head + 1), pieces),
        "head-context": context(
            data.wrapper_weights[head],
            data.wrapper_values[head],
            pieces,
            dims,
            code="context_vec = dropped_weights @ values",
            notation=Notation("context_vec", right="v"),
        ),
    }


def merged(weights, values, pieces, cols, *, first: int = 0, code: str, matrix: str = "context_vec") -> Cells:
    """The heads' context vectors side by side, from column ``first`` on (a page may show some heads)."""

    def derive(row: int, col: int):
        return attention.derivations.merge(np.array(weights), np.array(values), row, first + col)  # writable copies

    notation = Notation(matrix)
    return Cells(derive, notation, code, tuple(pieces), tuple(cols), cols="dim", keys=tuple(pieces), words=words.merged)


def out_proj(data: MultiheadView, pieces, cols) -> Cells:
    """``self.out_proj(context_vec)``: each entry's terms grouped by head."""
    heads_count = data.efficient_values.shape[0]

    def derive(row: int, col: int):
        row_in = np.array(data.efficient_context[row], dtype=np.float64)
        weight = np.array(data.out_weight, dtype=np.float64)
        return attention.derivations.out_projection(
            row_in, weight, col, num_heads=heads_count, bias=np.array(data.out_bias), row=row
        )

    code = "output = self.out_proj(context_vec)"
    notation = Notation("output")
    return Cells(derive, notation, code, tuple(pieces), tuple(cols), cols="dim", keys=tuple(pieces), words=words.mixed)


def mistake(data, pieces) -> Cells:
    """Break it's right-and-wrong weights: a cell is the pair (right, wrong), written side by side."""
    result, mha, x = data.cell_inputs

    def derive(row: int, col: int):
        return attention.derivations.mistake_cell(result, mha, x, row, col)

    title = attention.MISTAKES[data.name].title
    written = partial(words.mistake, name=data.name, title=title)
    code = attention.MISTAKES[data.name].wrong_code.strip().splitlines()[0]
    return Cells(derive, Notation("attn_weights"), code, tuple(pieces), tuple(pieces), words=written)
