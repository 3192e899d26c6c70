"""What ``explore`` shows: the chapter's stages of a reader's own module, traced through its own forward.

``Exploration`` runs the module once on the inputs with ``reading.read_forward``, which keeps what the
forward computed through forward hooks on ``W_query``, ``W_key``, ``W_value``, ``self.dropout`` and
``out_proj``: the queries, keys and values, the attention weights (what went into dropout), the weights
after dropout, the concatenated context vectors (what went into ``out_proj``) and the output. Hooks cannot
see a matrix product, so the scores are computed here from the module's own queries and keys, and a stage
the forward did not pass through a hooked submodule is computed here from the stage before it, in the
chapter's formula; the stage's text says which.

``stages(item, head)`` lays them out in the chapter's order, each with its heatmaps and, for every heatmap,
the ``attention.prose.cells.Cells`` the app makes too: the derivation of any cell and its words. A stage
whose tensor is not what the chapter's formula makes from the stage before says so and points at ``check``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from attention.prose import cells
from attention.prose.cells import Cells, Notation
from attention.prose.glossary import term

from ..causal import CausalAttention
from ..constants import BOOK_SENTENCE, BOOK_TOKENS
from ..embeddings import BOOK_INPUTS, embed_tokens
from ..multihead import MultiHeadAttentionWrapper
from ..tokens import tokenize
from ..tracing import trace
from . import precision
from .reading import CLASSES, MULTIHEAD, PROJECTIONS, V1, WRAPPER, ForwardRaised, Sizes, read_forward, recognise

MAX_TOKENS = 64  # a heatmap of 64 × 64 cells is the most whose every cell can be clicked (figures.PICK_LIMIT)
STAGES = ("queries", "keys", "values")
EMBEDDING_SEED = 123  # a typed sentence's embeddings, as the app's Tokens page draws them


class ExploreError(ValueError):
    """What ``explore`` cannot show, said for a learner: IPython prints the message alone, with no traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook: these lines replace the traceback
        return [f"{type(self).__name__}: {self}"]


@dataclass(frozen=True)
class Panel:
    """One heatmap of a stage: its matrix (rows × cols), how to colour it, and its cells explained."""

    key: str
    title: str
    matrix: np.ndarray
    kind: str
    cells: Cells
    value_name: str
    meaning: str
    masked: np.ndarray | None = None
    row_title: str = "query"
    col_title: str = "key"


@dataclass(frozen=True)
class Stage:
    """One step of the stepper: a slug, a title, its words (Markdown), its heatmaps, and the code to look for
    in the reader's forward (substrings of the lines that make it, as the book writes them)."""

    key: str
    title: str
    text: str
    panels: tuple[Panel, ...]
    code: tuple[str, ...]
    warning: str = ""


def prepare_inputs(inputs, tokens: Sequence[str] | None, d_in: int, batched: bool):
    """``inputs`` as the module takes it, (b, num_tokens, d_in), and one row of labels per batch item.

    A string is a sentence: GPT-2's BPE splits it and each token id gets the Tokens page's seeded embedding
    of d_in numbers; the book's sentence with d_in = 3 gets the book's six vectors."""
    if isinstance(inputs, str):
        if not inputs.strip():
            raise ExploreError("The sentence is empty: type at least one word.")
        if inputs.strip() == BOOK_SENTENCE and d_in == 3:
            x, pieces = BOOK_INPUTS.clone(), tuple(BOOK_TOKENS)
        else:
            found = tokenize(inputs)
            x, pieces = embed_tokens(found.ids, d_in, seed=EMBEDDING_SEED), found.pieces
        x = x.unsqueeze(0)
        if tokens is not None and (isinstance(tokens, str) or len(tokens) != len(pieces)):
            raise ExploreError(
                f"The sentence is {len(pieces)} GPT-2 tokens: tokens must be a list of {len(pieces)} labels."
            )
        labels = [tuple(str(t) for t in tokens) if tokens is not None else pieces]
    elif isinstance(inputs, torch.Tensor):
        if not inputs.is_floating_point():
            raise ExploreError(f"inputs must hold floats (embeddings), not {inputs.dtype}: try inputs.float().")
        if inputs.dim() not in (2, 3) or inputs.shape[-1] != d_in or 0 in inputs.shape:
            raise ExploreError(
                f"inputs must be (num_tokens, d_in) or (batch, num_tokens, d_in) with d_in = {d_in}, as the "
                f"module's W_query expects; got shape {tuple(inputs.shape)}."
            )
        x = inputs.detach() if inputs.dim() == 3 else inputs.detach().unsqueeze(0)
        count = x.shape[1]
        if tokens is None:  # the book's words for the book's six vectors, else x^(1), x^(2), ...
            book = all(torch.equal(sentence.float(), BOOK_INPUTS) for sentence in x) if x.shape[1:] == (6, 3) else False
            shown = BOOK_TOKENS if book else tuple(f"x^({i + 1})" for i in range(count))
        elif isinstance(tokens, str) or len(tokens) != count:
            raise ExploreError(f"tokens must be a list of {count} labels, one per row of inputs.")
        else:
            shown = tuple(str(t) for t in tokens)
        labels = [tuple(shown)] * x.shape[0]
    else:
        raise ExploreError(f"inputs must be a tensor or a sentence (a string), not a {type(inputs).__name__}.")
    if x.shape[1] > MAX_TOKENS:
        raise ExploreError(f"{x.shape[1]} tokens is more than explore shows ({MAX_TOKENS}): pass a shorter input.")
    if not batched and x.shape[0] > 1:
        raise ExploreError("SelfAttention_v1 and _v2 take one sentence, (num_tokens, d_in), as in the book.")
    return x, labels


def packaged(module: nn.Module) -> bool:
    """The module is one of the package's own five classes (with its own forward): ``tracing.trace`` records its
    steps. Its dropout draws the mask apart from the weights (``dropout.drop_with_mask``), which hooks would misread."""
    if type(module) not in CLASSES.values():
        return False
    return (
        all(type(head) is CausalAttention for head in module.heads)
        if type(module) is MultiHeadAttentionWrapper
        else True
    )


def traced(module: nn.Module, sizes: Sizes, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The package's own module's steps, laid out as ``reading.read_forward`` lays out a reader's, from
    ``tracing.trace`` in the module's own mode."""
    found = trace(module, x, training=module.training, seed=None)
    names = ("queries", "keys", "values", "attn_weights", "dropped_weights", "context", "output")
    seen = {name: getattr(found, name).detach().to("cpu", torch.float64) for name in names}
    if sizes.context_length is not None:
        heads = list(module.heads) if sizes.kind == WRAPPER else [module]
        seen["mask"] = torch.stack([head.mask.detach().bool().cpu() for head in heads])
    return seen


def _dims(count: int, prefix: str = "dim") -> tuple[str, ...]:
    return tuple(f"{prefix} {k}" for k in range(count))


class Exploration:
    """A reader's ``module`` run once on ``inputs``, with what each stage computed.

    ``sizes`` is what ``reading.recognise`` read; ``x`` (b, num_tokens, d_in); ``labels[item]`` the tokens of
    each batch item; ``seen`` the stages the hooks saw, as float64 on the CPU (``reading.read_forward``)."""

    def __init__(self, module: nn.Module, inputs, tokens: Sequence[str] | None = None):
        try:
            self.sizes: Sizes = recognise(module)
        except (TypeError, ValueError) as error:
            raise ExploreError(str(error).replace("check() takes", "explore() takes")) from None
        self.module = module
        parameter = next(module.parameters())
        x, self.labels = prepare_inputs(inputs, tokens, self.sizes.d_in, self.sizes.batched)
        self.x = x.to(device=parameter.device, dtype=parameter.dtype)
        context_length = self.sizes.context_length
        if context_length is not None and self.x.shape[1] > context_length:
            raise ExploreError(
                f"{self.x.shape[1]} tokens do not fit the module's context_length of {context_length} (its mask "
                "is that size): pass fewer tokens or build the module with a larger context_length."
            )
        try:
            self.seen = (
                traced(module, self.sizes, self.x)
                if packaged(module)
                else read_forward(module, self.sizes, self.x, seed=None)
            )
        except ForwardRaised as error:
            what = error.what if str(error) == error.what else f"{error.what} {error}"
            raise ExploreError(f"Your module's forward {what}. explore() shows a module whose forward runs.") from None
        self.training = module.training
        self._derive()

    # What the chapter's formulas make, stage by stage, from the module's own tensors (float64, (b, h, ·, ·)).

    def _derive(self) -> None:
        seen, sizes = self.seen, self.sizes
        missing = [f"self.{name}" for name, stage in zip(PROJECTIONS, STAGES, strict=True) if stage not in seen]
        if missing:
            raise ExploreError(
                f"The forward did not call {', '.join(missing)} once per head: explore() follows the book's "
                "forward, which projects x with W_query, W_key and W_value."
            )
        q, k = seen["queries"], seen["keys"]
        self.head_dim = q.shape[-1]
        self.scores = q @ k.transpose(-2, -1)  # (b, h, T, T), ω = q · k
        T = q.shape[-2]
        if sizes.context_length is not None:
            self.mask = seen["mask"][:, :T, :T].bool().numpy()  # (h, T, T), True: a future key
        else:
            self.mask = np.zeros((q.shape[1], T, T), dtype=bool)
        hidden = torch.as_tensor(self.mask).unsqueeze(0)  # (1, h or 1, T, T)
        self.scaled = self.scores.masked_fill(hidden, -math.inf) / math.sqrt(self.head_dim)  # (b, h, T, T)
        self.formula_weights = torch.softmax(self.scaled, dim=-1)
        self.weights = seen.get("attn_weights", self.formula_weights)
        self.dropped = seen.get("dropped_weights")
        if self.dropped is None or not self.dropout_drew:
            self.dropped = None
        after = self.dropped if self.dropped is not None else self.weights
        self.context_heads = after @ seen["values"]  # (b, h, T, head_dim)
        b, h = q.shape[0], q.shape[1]
        merged = self.context_heads.transpose(1, 2).reshape(b, T, h * self.head_dim)  # (b, T, h · head_dim)
        self.context = seen.get("context", merged)
        self.merged_formula = merged
        self.bounds = self._bounds()

    def _bounds(self) -> dict[str, float]:
        """How far the module's float32 tensors may be from the formulas here (float64 on its own tensors):
        ``precision.stage_bounds`` for one forward pass."""
        heads = list(self.module.heads) if self.sizes.kind == WRAPPER else [self.module]
        if self.sizes.kind == V1:
            projections = [(getattr(m, n).detach().T, None) for m in heads for n in PROJECTIONS]
        else:
            projections = [(getattr(m, n).weight.detach(), getattr(m, n).bias) for m in heads for n in PROJECTIONS]
            projections = [(w.double().cpu(), None if b is None else b.detach().double().cpu()) for w, b in projections]
        out = self.module.out_proj if self.sizes.kind == MULTIHEAD else None
        out_proj = (
            None
            if out is None
            else (
                out.weight.detach().cpu(),
                torch.zeros(out.weight.shape[0]) if out.bias is None else out.bias.detach().cpu(),
            )
        )
        stages = dict(self.seen) | {"dropped_weights": self.dropped if self.dropped is not None else self.weights}
        stages["context"] = self.context
        eps, _ = precision.precision(next(self.module.parameters()).dtype)
        rescale = 1 / (1 - self.sizes.dropout) if self.dropped is not None else 1.0
        return precision.stage_bounds(
            self.x.double().cpu(),
            [(w.double(), b) for w, b in projections],
            out_proj,
            stages,
            eps=eps,
            score_divisor=math.sqrt(self.head_dim),
            rescale=rescale,
        )

    def head_mask(self, head: int) -> np.ndarray:
        """Head ``head``'s mask, (T, T), True above the diagonal: ``MultiHeadAttention`` has one for all heads."""
        return self.mask[head if self.mask.shape[0] > 1 else 0]

    @property
    def dropout_drew(self) -> bool:
        """Dropout changed something on this forward: the module is training, with p > 0."""
        return self.training and self.sizes.dropout > 0 and "dropped_weights" in self.seen

    @property
    def num_heads(self) -> int:
        return self.seen["queries"].shape[1]

    @property
    def batch_size(self) -> int:
        return self.x.shape[0]

    def _projection_weight(self, name: str, head: int) -> tuple[torch.Tensor, torch.Tensor | None, slice]:
        """The (d_in, columns) matrix and bias that made head ``head``'s queries, keys or values, and which
        columns of the module's own projection they are."""
        sizes = self.sizes
        owner = self.module.heads[head] if sizes.kind == WRAPPER else self.module
        matrix = getattr(owner, name)
        if sizes.kind == V1:
            return matrix.detach().double().cpu(), None, slice(None)
        weight, bias = matrix.weight.detach().double().cpu().T, matrix.bias
        bias = None if bias is None else bias.detach().double().cpu()
        return weight, bias, slice(None)

    def stages(self, item: int = 0, head: int = 0) -> list[Stage]:
        """The chapter's stages for batch item ``item`` and head ``head`` (both from 0), in the book's order."""
        if not 0 <= item < self.batch_size or not 0 <= head < self.num_heads:
            raise ExploreError(
                f"stages(item, head) takes Python indices: item from 0 to {self.batch_size - 1}, "
                f"head from 0 to {self.num_heads - 1}."
            )
        found = [self._projections(item, head), self._scores(item, head)]
        if self.sizes.context_length is not None:
            found.append(self._masked(item, head))
        found.append(self._weights(item, head))
        if self.dropped is not None:
            found.append(self._dropout(item, head))
        found.append(self._context(item, head))
        if self.sizes.kind in (WRAPPER, MULTIHEAD):
            found.append(self._concatenated(item))
        if self.sizes.kind == MULTIHEAD:
            found.append(self._output(item))
        return found

    # The stages, one method each, in the chapter's order.

    def _notation(self, name: str, item: int, head: int | None = None, **kwargs) -> Notation:
        """How the cell's index reads in the reader's tensor: (item, head, row, col) for MultiHeadAttention's
        per-head tensors, (item, row, col) for a batch, (row, col) for v1 and v2's one sentence."""
        if not self.sizes.batched:
            return Notation(name, **kwargs)
        at = f"{item}, {head}" if head is not None and self.sizes.kind == MULTIHEAD else item
        return Notation(name, item=at, **kwargs)

    def _context_notation(self, item: int, head: int) -> Notation:
        """A head's context vectors: MultiHeadAttention's are ``(attn_weights @ values)[item, head]`` before the
        heads are merged; the other modules' are their ``context_vec``."""
        if self.sizes.kind == MULTIHEAD:
            return Notation("attn_weights @ values", right="v", item=f"{item}, {head}")
        return self._notation("context_vec", item, right="v")

    def _projections(self, item: int, head: int) -> Stage:
        pieces, x = self.labels[item], self.seen_x(item)
        multi = self.sizes.kind == MULTIHEAD
        panels = []
        for name, letter, stage in zip(PROJECTIONS, "qkv", ("queries", "keys", "values"), strict=True):
            weight, bias, _ = self._projection_weight(name, head)
            if multi:  # the book projects all heads at once, then splits the columns into heads
                matrix = self.seen[stage][item].transpose(0, 1).reshape(x.shape[0], -1).numpy()
            else:
                matrix = self.seen[stage][item, head].numpy()
            code = f"{stage} = x @ self.{name}" if self.sizes.kind == V1 else f"{stage} = self.{name}(x)"
            matrix_name = name if self.sizes.kind == V1 else f"{name}.weight.T"  # nn.Linear keeps (d_out, d_in)
            if self.sizes.kind == WRAPPER:  # each head is its own CausalAttention
                matrix_name = f"heads[{head}].{matrix_name}"
            notation = self._notation(stage, item, left=letter, weight_matrix=matrix_name)
            found = cells.projections(
                x.numpy(),
                weight.numpy(),
                pieces,
                _dims(matrix.shape[1]),
                code=code,
                notation=notation,
                bias=None if bias is None else bias.numpy(),
            )
            panels.append(
                Panel(
                    stage,
                    f"{stage} ({letter})",
                    matrix,
                    "signed",
                    found,
                    letter,
                    f"{letter}^(i) = x^(i) {name}",
                    row_title="token",
                    col_title="dimension (Python's index)",
                )
            )
        heads = (
            " The book projects all heads at once: head 1 takes the first head_dim columns, head 2 the next, and so on."
            if multi
            else ""
        )
        text = (
            f"Each token's {term('embedding')} x^(i) is multiplied by the trainable "
            f"{term('weight_matrices', 'weight matrices')} W_query, W_key and W_value: "
            f"q^(i) = x^(i) W_query, and k^(i), v^(i) likewise.{heads}"
        )
        return Stage("projections", "Queries, keys and values", text, tuple(panels), (" = self.W_", " @ self.W_"))

    def seen_x(self, item: int) -> torch.Tensor:
        return self.x[item].detach().double().cpu()

    def _queries_keys(self, item: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        return self.seen["queries"][item, head].numpy(), self.seen["keys"][item, head].numpy()

    def _scores(self, item: int, head: int) -> Stage:
        pieces = self.labels[item]
        q, k = self._queries_keys(item, head)
        found = cells.scores(
            q, k, pieces, code="attn_scores = queries @ keys", notation=self._notation("attn_scores", item, head)
        )
        panel = Panel(
            "attn_scores",
            "attention scores ω = q · k",
            self.scores[item, head].numpy(),
            "signed",
            found,
            "score ω",
            "the dot product of the query's q and the key's k",
        )
        text = (
            f"The {term('attention_scores', 'attention score')} ω_ij is the {term('dot_product', 'dot product')} of "
            "query q^(i) with key k^(j): one row per query, one column per key. explore cannot see the `@` in "
            "your forward, so it computes these from your queries and keys."
        )
        return Stage("scores", "Attention scores", text, (panel,), ("attn_scores = ",))

    def _masked(self, item: int, head: int) -> Stage:
        pieces = self.labels[item]
        q, k = self._queries_keys(item, head)
        notation = self._notation("attn_scores", item, head)
        found = cells.scores(q, k, pieces, code="masked_fill", notation=notation, mask=self.head_mask(head))
        shown = self.scores[item, head].masked_fill(torch.as_tensor(self.head_mask(head)), -math.inf).numpy()
        panel = Panel(
            "masked_scores",
            "masked scores",
            shown,
            "signed",
            found,
            "score ω",
            "the score, or −∞ for a key after the query",
            masked=self.head_mask(head),
        )
        text = (
            f"The {term('causal_mask', 'causal mask')} hides each query's future keys. The book's mask buffer holds "
            "1 above the diagonal, and `masked_fill` puts −∞ there, so the softmax gives those keys 0. These come "
            "from your queries, keys and mask buffer."
        )
        T = len(pieces)
        book = torch.ones(T, T).triu(1).bool().numpy()
        differs = np.argwhere(self.head_mask(head) != book)
        warning = ""
        if len(differs):
            row, col = differs[0]
            hides = bool(self.head_mask(head)[row, col])
            warning = (
                "Your mask buffer is not the book's `torch.triu(torch.ones(context_length, context_length), "
                f"diagonal=1)`: at row {row + 1}, column {col + 1} it {'hides' if hides else 'keeps'} the key, "
                f"and the book's {'keeps' if hides else 'hides'} it. Run check(module)."
            )
        return Stage("mask", "Causal mask", text, (panel,), ("masked_fill",), warning)

    def _weights(self, item: int, head: int) -> Stage:
        pieces = self.labels[item]
        masked = self.head_mask(head) if self.sizes.context_length is not None else None
        found = cells.weights(
            self.scaled[item, head].numpy(),
            pieces,
            masked=masked,
            code="attn_weights = torch.softmax(",
            notation=self._notation("attn_weights", item, head, scaled=True),
        )
        panel = Panel(
            "attn_weights",
            "attention weights α",
            self.weights[item, head].numpy(),
            "weights",
            found,
            "weight α",
            "how much the query attends to the key; each row sums to 1",
            masked=masked,
        )
        d_k = self.head_dim
        if "attn_weights" in self.seen:
            seen = ""
        elif self.sizes.kind in (V1, "SelfAttention_v2"):
            seen = " SelfAttention_v1 and _v2 have no dropout, so explore computes these from your queries and keys."
        else:
            seen = " Your forward passed no weights through self.dropout, so explore computes them here."
        text = (
            f"The {term('softmax')} turns each row of scores, divided by √{term('d_k')} = √{d_k}, into "
            f"{term('attention_weights', 'attention weights')} α_ij, each 0 or more, that sum to 1 along the row.{seen}"
        )
        return Stage(
            "weights",
            "Attention weights",
            text,
            (panel,),
            ("softmax",),
            self._differs(
                self.weights[item, head],
                self.formula_weights[item, head],
                "weights",
                "softmax(ω / √d_k) of the masked scores",
                "attn_weights",
            ),
        )

    def _dropout(self, item: int, head: int) -> Stage:
        pieces, p = self.labels[item], self.sizes.dropout
        keep = (self.dropped[item, head] != 0).numpy()
        found = cells.dropped(
            self.weights[item, head].numpy(),
            keep,
            p,
            pieces,
            code="self.dropout(",
            notation=self._notation("attn_weights", item, head),
        )
        panel = Panel(
            "dropped_weights",
            "weights after dropout",
            self.dropped[item, head].numpy(),
            "nonnegative",
            found,
            "weight",
            "0 where dropout dropped the weight, else the weight × 1/(1 − p)",
            masked=self.head_mask(head) if self.sizes.context_length is not None else None,
        )
        expected = self.weights[item, head] * torch.as_tensor(keep) / (1 - p)
        text = (
            f"In training, {term('dropout')} with p = {p:g} zeroes each weight with probability p and scales the "
            f"others by 1/(1 − p) = {1 / (1 - p):.4f}. This is the draw your forward made."
        )
        return Stage(
            "dropout",
            "Dropout",
            text,
            (panel,),
            ("self.dropout(",),
            self._differs(
                self.dropped[item, head],
                expected,
                "weights after dropout",
                "kept weights × 1/(1 − p)",
                "dropped_weights",
            ),
        )

    def _context(self, item: int, head: int) -> Stage:
        pieces = self.labels[item]
        after = self.dropped if self.dropped is not None else self.weights
        values = self.seen["values"][item, head].numpy()
        found = cells.context(
            after[item, head].numpy(),
            values,
            pieces,
            _dims(values.shape[1]),
            code="context_vec = ",
            notation=self._context_notation(item, head),
        )
        hd = self.head_dim  # your own numbers: this head's columns of the concatenated context vectors
        shown = self.context[item][:, head * hd : (head + 1) * hd]
        panel = Panel(
            "context",
            "context vectors z",
            shown.numpy(),
            "signed",
            found,
            "entry",
            "the weighted sum of the value vectors",
            row_title="query",
            col_title="dimension (Python's index)",
        )
        text = (
            f"Each {term('context_vector', 'context vector')} z^(i) is the sum of the value vectors v^(j), "
            f"each times its weight α_ij{' after dropout' if self.dropped is not None else ''}: "
            "`context_vec = attn_weights @ values`."
        )
        warning = self._differs(
            shown, self.context_heads[item, head], "context vectors", "attn_weights @ values", "context"
        )
        return Stage("context", "Context vectors", text, (panel,), ("context_vec = ", "@ values"), warning)

    def _concatenated(self, item: int) -> Stage:
        pieces = self.labels[item]
        after = self.dropped if self.dropped is not None else self.weights
        weights, values = after[item].numpy(), self.seen["values"][item].numpy()
        columns = _dims(self.context.shape[-1])
        code = "torch.cat(" if self.sizes.kind == WRAPPER else ".view("
        found = cells.merged(weights, values, pieces, columns, code=code, notation=self._notation("context_vec", item))
        panel = Panel(
            "concatenated",
            "heads' context vectors, side by side",
            self.context[item].numpy(),
            "signed",
            found,
            "entry",
            "each head's columns follow the columns of the heads before it",
            row_title="query",
            col_title="dimension (Python's index)",
        )
        how = (
            "`torch.cat` joins each head's context vectors"
            if self.sizes.kind == WRAPPER
            else "`transpose(1, 2)` then `view` lays each token's heads side by side"
        )
        width, total = self.head_dim, self.num_heads * self.head_dim
        size = (
            f"{self.num_heads} heads of d_out = {width} columns make num_heads × d_out = {total}"
            if self.sizes.kind == WRAPPER
            else f"{self.num_heads} heads of head_dim = {width} columns make d_out = {total}"
        )
        text = (
            f"{how}: {size}. Head 1's columns come first, then head 2's, and so on: head h's columns start at "
            f"Python's column (h − 1) · {width}."
        )
        return Stage(
            "heads",
            "Heads concatenated",
            text,
            (panel,),
            ("torch.cat(", ".view(", "transpose(1, 2)"),
            self._differs(
                self.context[item],
                self.merged_formula[item],
                "concatenated context vectors",
                "the heads' context vectors side by side",
                "context",
            ),
        )

    def _output(self, item: int) -> Stage:
        pieces = self.labels[item]
        out = self.module.out_proj
        weight = out.weight.detach().double().cpu().numpy()
        bias = None if out.bias is None else out.bias.detach().double().cpu().numpy()
        context = self.context[item].numpy()
        found = cells.out_proj(
            context,
            weight,
            bias,
            pieces,
            _dims(weight.shape[0]),
            num_heads=self.num_heads,
            code="self.out_proj(",
            notation=self._notation("context_vec", item),
        )
        output = self.seen["output"][item].numpy()
        panel = Panel(
            "output",
            "output = out_proj(context_vec)",
            output,
            "signed",
            found,
            "entry",
            "every head's columns, mixed by out_proj",
            row_title="query",
            col_title="dimension (Python's index)",
        )
        text = (
            "`out_proj`, a trainable d_out × d_out linear layer, mixes the heads: output entry c of token i is "
            "row i of `context_vec` times row c of `out_proj.weight`, plus `out_proj.bias[c]`."
        )
        expected = torch.as_tensor(context) @ torch.as_tensor(weight).T + (0 if bias is None else torch.as_tensor(bias))
        return Stage(
            "output",
            "Output projection",
            text,
            (panel,),
            ("self.out_proj(",),
            self._differs(self.seen["output"][item], expected, "output", "out_proj(context_vec)", "output"),
        )

    # Where the reader's tensors are not what the chapter's formula makes from the stage before.

    def _differs(self, theirs: torch.Tensor, formula: torch.Tensor, what: str, how: str, stage: str) -> str:
        theirs, formula = torch.as_tensor(theirs, dtype=torch.float64), torch.as_tensor(formula, dtype=torch.float64)
        if theirs.shape != formula.shape:
            return (
                f"Your {what} have shape {tuple(theirs.shape)}, not {tuple(formula.shape)} as {how} gives: "
                "run check(module) to find where."
            )
        gap = (theirs - formula).abs().nan_to_num(0.0)
        if bool((gap <= self.bounds[stage]).all()):
            return ""
        row, col = np.unravel_index(int(gap.argmax()), tuple(gap.shape))
        return (
            f"Your {what} are not {how}: row {row + 1}, column {col + 1} holds {float(theirs[row, col]):.6f}, "
            f"the formula {float(formula[row, col]):.6f}. The cells explain the formula; run check(module)."
        )
