"""Each page's explainable heatmaps (issue 25): the ``Cells`` of every matrix a page draws, from its view's
arrays, with the code line that made each. A page passes ``explain=cells["attn_weights"]`` to its chart."""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict

from explorer import cells
from explorer.page_text.cells import Notation
from explorer.results import BatchView, DropoutView, MaskView, QkvView, SimplifiedView

X = dict(left="x", right="x")  # section 3.3 multiplies the inputs themselves
MADE_ENTRIES = 64  # views whose Cells are kept: a class on one sentence shows about 20
_MADE: OrderedDict[tuple, tuple[weakref.ref, dict]] = OrderedDict()
_MADE_LOCK = threading.Lock()


def once_per_view(build):
    """``build(view, *args)``, made once per view and read by every session (never changed). A cached view is
    the same object at every rerun of every session that shows it, so a Next click finds its ``Cells`` made.
    They hold no copies, only the view's read-only arrays; a view gone from the caches takes its entry with it
    (a weak reference)."""

    @functools.wraps(build)
    def made(view, *args):
        key = (build, id(view), args)
        try:
            found = _MADE.get(key)
        except TypeError:  # an argument no dict key takes: made for this call alone
            return build(view, *args)
        if found is not None and found[0]() is view:
            return found[1]
        value = build(view, *args)
        with _MADE_LOCK:
            _MADE[key] = (weakref.ref(view), value)
            while len(_MADE) > MADE_ENTRIES:
                _MADE.popitem(last=False)
        return value

    return made


def dims(count: int, prefix: str = "dim") -> tuple[str, ...]:
    """The column labels of a matrix of vectors: "dim 0", "dim 1", … (Python's index)."""
    return tuple(f"{prefix} {k}" for k in range(count))


@once_per_view
def simplified(view: SimplifiedView, pieces) -> dict[str, cells.Cells]:
    """Section 3.3: ``attn_scores = inputs @ inputs.T``, its softmax, and ``attn_weights @ inputs``."""
    return {
        "attn_scores": cells.scores(
            view.inputs,
            view.inputs,
            pieces,
            code="attn_scores = inputs @ inputs.T",
            notation=Notation("attn_scores", **X),
        ),
        "attn_weights": cells.weights(
            view.attn_scores, pieces, code="attn_weights = torch.softmax(", notation=Notation("attn_weights")
        ),
        "context_vecs": cells.context(
            view.attn_weights,
            view.inputs,
            pieces,
            dims(view.inputs.shape[1]),
            code="context_vecs = attn_weights @ inputs",
            notation=Notation("all_context_vecs", right="x"),
        ),
    }


@once_per_view
def qkv(view: QkvView, pieces) -> dict[str, cells.Cells]:
    """Section 3.4: ``SelfAttention_v1``'s projections, scores, scaled scores, weights and context vectors."""
    steps = view.steps
    out = dims(steps.queries.shape[1], "out")
    found = {
        name: cells.projections(
            steps.inputs,
            getattr(view, matrix),
            pieces,
            out,
            code=f"{name} = x @ self.{matrix}",
            notation=Notation(name, left=name[0], weight_matrix=matrix),
        )
        for name, matrix in (("queries", "W_query"), ("keys", "W_key"), ("values", "W_value"))
    }
    found["attn_scores"] = cells.scores(
        steps.queries, steps.keys, pieces, code="attn_scores = queries @ keys.T", notation=Notation("attn_scores")
    )
    found["scaled_scores"] = cells.scores(
        steps.queries,
        steps.keys,
        pieces,
        scaled=True,
        code="torch.softmax(attn_scores / keys.shape[-1] ** 0.5",
        notation=Notation(f"attn_scores / √{steps.keys.shape[-1]}"),
    )
    found["attn_weights"] = cells.weights(
        steps.scaled_scores,
        pieces,
        code="attn_weights = torch.softmax(",
        notation=Notation("attn_weights", scaled=True),
    )
    found["output"] = cells.context(
        steps.attn_weights,
        steps.values,
        pieces,
        out,
        code="context_vec = attn_weights @ values",
        notation=Notation("context_vec", right="v"),
    )
    return found


@once_per_view
def causal(data: MaskView) -> dict[str, cells.Cells]:
    """Section 3.5.1: the unmasked weights, both masking routes, the causal weights and the context vectors."""
    steps, pieces, mask = data.steps.first_head(), data.pieces, data.mask
    weights = Notation("attn_weights", scaled=True)
    scores = cells.scores(
        steps.queries,
        steps.keys,
        pieces,
        code="attn_scores.masked_fill_(",
        notation=Notation("masked"),
    )
    return {
        "unmasked-weights": cells.weights(
            steps.scaled_scores, pieces, code="unmasked_weights = torch.softmax(", notation=weights
        ),
        "tril-masked": cells.masked_weights(
            data.unmasked_weights,
            data.mask_simple,
            pieces,
            code="masked_simple = attn_weights * mask_simple",
            notation=Notation("masked_simple"),
        ),
        "tril-route": cells.renormalized(
            data.masked_simple,
            mask,
            pieces,
            code="return masked_simple / masked_simple.sum(",
            notation=Notation("masked_simple_norm"),
        ),
        "masked-scores": cells.masked_scores(scores, mask),
        "causal-weights": cells.weights(
            steps.scaled_scores, pieces, masked=mask, code="attn_weights = torch.softmax(", notation=weights
        ),
        "causal-context": cells.context(
            steps.attn_weights,
            steps.values,
            pieces,
            dims(steps.values.shape[1]),
            code="context_vec = dropped_weights @ values",
            notation=Notation("context_vec", right="v"),
        ),
    }


@once_per_view
def dropout(data: DropoutView, p: float) -> cells.Cells:
    """Section 3.5.2: one draw on the causal weights (p = 0 while dropout is off: nothing is dropped)."""
    return cells.dropped(
        data.attn_weights,
        data.keep,
        p if data.active else 0.0,
        data.pieces,
        code="dropped_weights, dropout_mask = drop_with_mask(",
        notation=Notation("dropped_weights"),
    )


@once_per_view
def batch(data: BatchView, item: int, p: float) -> dict[str, cells.Cells]:
    """Section 3.5.3: one batch item's weights (after dropout when it is on) and context vectors."""
    pieces = data.pieces[item]
    if data.dropout_active:
        weights = cells.dropped(
            data.attn_weights[item],
            data.keep[item],
            p,
            pieces,
            code="dropped_weights, dropout_mask = drop_with_mask(",
            notation=Notation("dropped_weights", item=item),
        )
    else:
        weights = cells.weights(
            data.scaled_scores[item],
            pieces,
            masked=data.mask,
            code="attn_weights = torch.softmax(",
            notation=Notation("attn_weights", scaled=True, item=item),
        )
    context = cells.context(
        data.weights[item],
        data.values[item],
        pieces,
        dims(data.values.shape[-1]),
        code="context_vec = dropped_weights @ values",
        notation=Notation("context_vec", right="v", item=item),
    )
    return {f"batch-weights-{item}": weights, f"batch-context-{item}": context}
