"""``check(module)``: is a reader's own chapter-3 class right, and if not, where does it first go wrong?

The reader types the book's ``CausalAttention`` (or v1, v2, the wrapper,
``MultiHeadAttention``) into a notebook. ``check`` builds the package's class
of the same kind and sizes with copies of the reader's weights, runs both on
the book's six input vectors and on a few random batches, in eval mode and in
train mode (``torch.manual_seed(123)`` before each forward, so dropout draws
the same weights when the reader calls ``self.dropout`` the book's way), and
compares them stage by stage in the chapter's order.

What is traced how, without changing the reader's code (``reading``):

- queries, keys, values: the outputs of ``W_query``, ``W_key``, ``W_value`` (forward hooks);
  for v1, whose weights are ``nn.Parameter`` matrices, ``x @ W_query`` and so on, computed here;
- the mask: the module's ``mask`` buffer itself (each head's, for the wrapper);
- attention weights: the input of ``self.dropout``; dropped weights: its output (a hook on
  ``self.dropout``; a forward that never calls it, like v1 and v2, leaves these two unseen);
- context vectors: the input of ``out_proj`` for ``MultiHeadAttention``, else what forward returns;
- the output: what forward returns.

The package's own classes take a different route to the same numbers: they call dropout on a
tensor of ones (``dropout.drop_with_mask``), so a hook on ``self.dropout`` would see no weights.
``check`` reads them through their ``steps``, the code their forward runs (``attention.trace``).

Agreement is "to float32 precision": every entry within ``precision.stage_bounds``, the rounding
two summation orders can leave. Where a stage differs, ``check`` runs each of the Break it page's
mistakes (``matching``) on the reader's weights and names the one that gives the reader's numbers, and says
how the stage differs in the chapter's words (``diagnosing``), for any difference, a mistake of the page or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from ..causal import CausalAttention
from ..constants import BOOK_TOKENS
from ..embeddings import BOOK_INPUTS
from ..mistake_steps import RIGHT
from ..mistakes import Mistake
from ..tracing import trace
from .diagnosing import Quote, diagnose, explain_raised, projections, reproduces, rescale, swapped_projection
from .matching import applicable, mask_mistakes
from .precision import precision, stage_bounds
from .reading import CLASSES, MULTIHEAD, V1, V2, WRAPPER, ForwardRaised, Sizes, read_forward, recognise, reference

SEED = 123  # the book's seed, before each forward in train mode
BATCH = 2  # sequences in each random batch
RANDOM_LENGTHS = (8, 5, 2)  # tokens in the random batches, each at most context_length
BREAK_IT = "/mistakes"  # the Break it page's url_path in explorer_app.PAGES; it opens the mistake given by ?mistake=

STAGES = {  # stage -> its words, in the chapter's order
    "queries": "queries",
    "keys": "keys",
    "values": "values",
    "mask": "mask buffer",
    "attn_weights": "attention weights",
    "dropped_weights": "attention weights after dropout",
    "context": "context vectors",
    "output": "output",
}
_HIDES = {True: "hidden", False: "seen"}  # a mask entry
# What the reader writes instead of the package's ``drop_with_mask`` line, which only the package has.
_READER_FIXES = {"dropout_without_rescale": "attn_weights = self.dropout(attn_weights)  # nn.Dropout divides by 1 - p"}


@dataclass(frozen=True)
class Run:
    """One input and mode both modules run on. Shapes: x (b, num_tokens, d_in)."""

    name: str
    x: torch.Tensor
    training: bool
    book: bool


@dataclass(frozen=True)
class Compared:
    """One run's stages, the reader's and the package's, with the rounding bound of each and the dropout draw.

    Shapes: see ``reading``; keep (b, num_heads, num_tokens, num_tokens), 1 = kept, None where nothing is dropped.
    """

    run: Run
    theirs: dict[str, torch.Tensor]
    right: dict[str, torch.Tensor]
    bounds: dict[str, float]
    keep: torch.Tensor | None


@dataclass(frozen=True)
class Check:
    """What ``check`` found; ``str()`` (and the notebook's display) says it in words.

    ``agrees`` is True when every stage agrees on every run, to ``precision`` (float32 unless
    the module's dtype is coarser). Otherwise ``stage`` is the first
    stage that differs (a key of ``STAGES``), ``run`` the input and mode, ``index`` the entry,
    counted from 1 as (batch item, head, row, column) or, for the mask, (head, row, column),
    with ``location`` in words; ``yours`` and ``expected`` the two numbers and ``allowed`` the
    float32 bound; ``mistake`` the Break it page's mistake that gives the reader's numbers, if
    one does. ``raised`` is the reader's forward's exception, when it raised instead. ``diagnosis``
    says how the stage differs, in the chapter's words; ``quotes`` holds every number the text quotes,
    with the tensor it comes from. ``seen_as``: where the reader's tensor holds another of the
    package's (scores where attention weights belong), that tensor's ``Trace`` name, its words and
    its number at the entry.
    """

    module: str
    kind: str
    agrees: bool
    summary: str
    notes: tuple[str, ...] = ()
    stage: str | None = None
    run: str | None = None
    index: tuple[int, ...] | None = None
    location: str | None = None
    yours: float | None = None
    expected: float | None = None
    allowed: float | None = None
    precision: str = "float32"
    mistake: Mistake | None = None
    raised: str | None = None
    diagnosis: tuple[str, ...] = ()
    quotes: tuple[Quote, ...] = ()
    seen_as: tuple[str, str, float] | None = None

    @property
    def fix(self) -> str | None:
        """The right line(s) for the named mistake."""
        if self.mistake is None:
            return None
        return _READER_FIXES.get(self.mistake.name, self.mistake.right_code)

    @property
    def link(self) -> str | None:
        """The app's Break it page for the named mistake, relative to the app's address."""
        return None if self.mistake is None else f"{BREAK_IT}?mistake={self.mistake.name}"

    def __str__(self) -> str:
        lines = [self.summary]
        if self.stage == "mask" and self.location is not None:
            lines.append(
                f"In the mask, at {self.location}: yours is {self.yours:g} ({_HIDES[bool(self.yours)]}), "
                f"the package's is {self.expected:g} ({_HIDES[bool(self.expected)]})."
            )
        elif self.location is not None and self.seen_as is not None:
            name, words, value = self.seen_as
            lines.append(
                f"On {self.run}, at {self.location}: yours is {_number(self.yours)}, the package's {words} there "
                f"is {_number(value)} and its attn_weights {_number(self.expected)}."
            )
        elif self.location is not None:
            lines.append(
                f"On {self.run}, at {self.location}: yours is {_number(self.yours)}, the package's is "
                f"{_number(self.expected)} ({self.precision} rounding allows {self.allowed:.2g})."
            )
        lines += list(self.diagnosis)
        if self.mistake is not None:
            lines += [
                f'This is the mistake "{self.mistake.title}". Your line is like:',
                _indent(self.mistake.wrong_code),
                "Fix:",
                _indent(self.fix),
                f"See it on the app's Break it page: {self.link}",
            ]
        elif self.stage is not None and self.diagnosis:
            lines.append("It is none of the Break it page's mistakes on its own.")
        elif self.stage is not None:
            lines.append("It is none of the Break it page's mistakes on its own: compare the lines that compute it.")
        return "\n".join(lines + list(self.notes))

    __repr__ = __str__


def check(module: nn.Module) -> Check:
    """Compare the reader's ``module`` with the package's class of its kind, stage by stage.

    ``module`` is unchanged afterwards: its weights, and every submodule's training flag, as before,
    and torch's global random state too. Raises ``TypeError`` or ``ValueError`` for anything that is
    not one of chapter 3's classes, or whose sizes do not fit together.
    """
    try:
        sizes = recognise(module)
    except ValueError as error:
        swapped = swapped_projection(module)
        if swapped is None:
            raise
        raise ValueError(swapped) from error
    ours = reference(module, sizes)
    parameter = next(module.parameters())
    eps, words = precision(parameter.dtype)
    runs, notes = _runs(sizes, parameter.device, parameter.dtype)
    name = type(module).__name__
    compared: list[Compared] = []
    with _modes_restored(module):
        for run in runs:
            module.train(run.training)
            try:
                theirs = _read(module, sizes, run)
            except ForwardRaised as raised:
                return Check(
                    name, sizes.kind, False,
                    f"On {run.name}, x of shape {tuple(run.x.shape)}, {name}'s forward "
                    + (f"raised {raised}" if raised.what == "raised" else f"{raised.what}."),
                    tuple(notes), run=run.name, raised=str(raised),
                    diagnosis=explain_raised(raised.__cause__) if raised.__cause__ is not None else (),
                )  # fmt: skip
            right, keep = _reference_stages(ours, sizes, run)
            divisor, scale = sizes.head_dim**0.5, rescale(sizes, run.training)
            weights = projections(ours, sizes)
            bounds = stage_bounds(run.x, *weights, right, eps=eps, score_divisor=divisor, rescale=scale)
            compared.append(Compared(run, theirs, right, bounds, keep))
    stages = [stage for stage in STAGES if _has(stage, sizes)]
    unseen = [stage for stage in stages if any(stage not in pass_.theirs for pass_ in compared)]
    notes += [f"Not seen in your forward, so not compared: {', '.join(STAGES[s] for s in unseen)}."] if unseen else []
    for stage in stages:
        for pass_ in compared:
            if stage not in pass_.theirs:
                continue
            found = _first_difference(pass_.theirs[stage], pass_.right[stage], pass_.bounds[stage])
            if found is not None:
                mistake = _matching_mistake(ours, sizes, stage, compared, eps)
                diagnosis = diagnose(stage, pass_, found.index, compared, sizes, ours, eps) if found.index else None
                return _differs(name, sizes, stage, pass_, found, words, mistake, diagnosis, notes)
    random_runs = sum(not run.book for run in runs) // 2
    on = (["the book's inputs"] if any(run.book for run in runs) else []) + [
        f"{random_runs} random batch{'es' if random_runs != 1 else ''}"
    ]
    summary = f"{name} agrees with attention.{sizes.kind} to {words} precision on {' and '.join(on)}, "
    return Check(name, sizes.kind, True, summary + "in eval and train mode.", tuple(notes))


def _has(stage: str, sizes: Sizes) -> bool:
    """Whether this kind of module has ``stage``: v1 and v2 no mask and no dropout, only MultiHeadAttention out_proj."""
    if stage in ("mask", "attn_weights", "dropped_weights"):
        return sizes.context_length is not None
    return stage != "output" or sizes.kind == MULTIHEAD


def _runs(sizes: Sizes, device: torch.device, dtype: torch.dtype) -> tuple[list[Run], list[str]]:
    """The book's inputs (two copies for a batched class, as the book stacks them) and random batches, eval then
    train mode; and notes on what the sizes left out."""
    notes, inputs = [], []
    limit = sizes.context_length or max(RANDOM_LENGTHS)
    if sizes.d_in == BOOK_INPUTS.shape[1]:
        num_tokens = min(limit, len(BOOK_TOKENS))
        book = BOOK_INPUTS[:num_tokens]  # (num_tokens, d_in)
        inputs.append(("the book's inputs", torch.stack((book, book)) if sizes.batched else book.unsqueeze(0), True))
        if num_tokens < len(BOOK_TOKENS):
            first = f"first {num_tokens} tokens" if num_tokens > 1 else "first token"
            notes.append(f"context_length is {limit}, so only the book's {first} went in.")
    else:
        notes.append(f"The book's inputs have d_in = 3; yours has d_in = {sizes.d_in}, so only random batches ran.")
    generator = torch.Generator().manual_seed(SEED)
    lengths = sorted({min(limit, n) for n in RANDOM_LENGTHS}, reverse=True)
    for number, length in enumerate(lengths, start=1):
        x = torch.randn(BATCH, length, sizes.d_in, generator=generator)  # (b, num_tokens, d_in)
        inputs.append((f"random batch {number} ({BATCH} × {length} tokens)", x, False))
    if sizes.head_dim == 1:
        notes.append("head_dim is 1, so dividing the scores by √head_dim changes nothing: the scaling is not checked.")
    if sizes.context_length is not None and sizes.dropout == 0:
        notes.append("Dropout p is 0, so train mode drops nothing: build it with dropout > 0 to check dropout too.")
    runs = [
        Run(f"{name} in {'train' if training else 'eval'} mode", x.to(device=device, dtype=dtype), training, book)
        for training in (False, True)
        for name, x, book in inputs
    ]
    return runs, notes


@contextlib.contextmanager
def _modes_restored(module: nn.Module) -> Iterator[None]:
    """Every submodule's training flag back as it was, whatever the block sets."""
    modes = [(submodule, submodule.training) for submodule in module.modules()]
    try:
        yield
    finally:
        for submodule, training in modes:
            submodule.training = training


def _read(module: nn.Module, sizes: Sizes, run: Run) -> dict[str, torch.Tensor]:
    """The reader's stages on ``run``: through hooks, or through ``steps`` for the package's own classes."""
    heads = list(module.heads) if sizes.kind == WRAPPER else []
    if type(module) is CLASSES[sizes.kind] and all(type(head) is CausalAttention for head in heads):
        return _reference_stages(module, sizes, run)[0]  # the package's own code, as said above
    return read_forward(module, sizes, run.x, seed=SEED if run.training else None)


def _reference_stages(ours: nn.Module, sizes: Sizes, run: Run) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
    """The package module's stages on ``run``, laid out as ``reading`` lays them out, and its dropout draw."""
    with torch.no_grad():
        steps = trace(ours, run.x, training=run.training, seed=SEED if run.training else None)
    stages = {name: getattr(steps, name) for name in ("queries", "keys", "values", "attn_weights", "context", "output")}
    stages["dropped_weights"] = steps.dropped_weights
    stages = {name: tensor.detach().to("cpu", torch.float64) for name, tensor in stages.items()}
    if sizes.context_length is not None:
        heads = list(ours.heads) if sizes.kind == WRAPPER else [ours]
        stages["mask"] = torch.stack([head.mask.bool() for head in heads]).cpu()  # (h, context_length, ·)
    keep = None if steps.dropout_mask is None else steps.dropout_mask.to(run.x.dtype)
    return stages, keep


@dataclass(frozen=True)
class _Difference:
    """The first entry that differs: where, and both numbers; or both shapes, when they differ."""

    index: tuple[int, ...]  # counted from 0; () when the shapes differ
    yours: float
    expected: float
    shapes: tuple[tuple[int, ...], tuple[int, ...]] | None = None


def _first_difference(
    yours: torch.Tensor, expected: torch.Tensor, bound: float, nan_agrees: bool = False
) -> _Difference | None:
    """The first entry, in reading order, further apart than ``bound`` (NaN differs, unless both are NaN and
    ``nan_agrees``); None when every entry agrees."""
    if yours.shape != expected.shape:
        return _Difference((), float("nan"), float("nan"), (tuple(yours.shape), tuple(expected.shape)))
    if yours.dtype == torch.bool:
        apart = yours != expected
    else:
        apart = ~((yours - expected).abs() <= bound)  # NaN anywhere: apart
        if nan_agrees:
            apart &= ~(yours.isnan() & expected.isnan())
    if not apart.any():
        return None
    flat = int(apart.flatten().nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), apart.shape))
    return _Difference(index, float(yours[index]), float(expected[index]))


def _matching_mistake(
    ours: nn.Module, sizes: Sizes, stage: str, compared: list[Compared], eps: float
) -> Mistake | None:
    """The one mistake whose forward gives the reader's ``stage`` on every run, if exactly one does."""
    if stage == "mask":
        found = mask_mistakes(compared[0].theirs["mask"], sizes)
        return found[0] if len(found) == 1 else None
    found = []
    for mistake in applicable(sizes):
        if mistake.steps.mask is not RIGHT.mask:
            continue  # its mask would have differed first
        if reproduces(ours, sizes, mistake.steps, stage, compared, eps):
            found.append(mistake)
    return found[0] if len(found) == 1 else None


def _differs(
    name: str, sizes: Sizes, stage: str, pass_: Compared, found: _Difference, words: str, mistake, diagnosis, notes
) -> Check:
    """The ``Check`` for a difference ``found`` at ``stage`` on ``pass_``, within its rounding bound, in ``words``."""
    run, bound = pass_.run, pass_.bounds[stage]
    seen = _seen_as(stage, sizes)
    summary = f"{name} differs from attention.{sizes.kind} first at the {STAGES[stage]} ({seen})."
    if found.shapes is not None:
        yours, expected = found.shapes
        summary += f" On {run.name}, yours have shape {yours}, the package's {expected}."
        return Check(name, sizes.kind, False, summary, tuple(notes), stage=stage, run=run.name)
    quotes = (
        Quote("yours", stage, run.name, found.index, found.yours),
        Quote("package", stage, run.name, found.index, found.expected),
    )
    if diagnosis.seen_as is not None:
        quotes += (Quote("package", diagnosis.seen_as[0], run.name, found.index, diagnosis.seen_as[2]),)
    return Check(
        name, sizes.kind, False, summary, tuple(notes), stage=stage,
        run=None if stage == "mask" else run.name,  # the mask buffer is the same whatever the input
        index=tuple(i + 1 for i in found.index), location=_location(stage, found.index, sizes, run),
        yours=found.yours, expected=found.expected, allowed=bound, precision=words, mistake=mistake,
        diagnosis=diagnosis.sentences, quotes=(quotes if stage != "mask" else ()) + diagnosis.quotes,
        seen_as=diagnosis.seen_as,
    )  # fmt: skip


def _seen_as(stage: str, sizes: Sizes) -> str:
    """Where ``read_forward`` saw ``stage``, in words."""
    matrix = {"queries": "W_query", "keys": "W_key", "values": "W_value"}.get(stage)
    if matrix is not None:
        return f"x @ {matrix}" if sizes.kind == V1 else f"{matrix}'s output"
    if stage == "context" and sizes.kind == MULTIHEAD:
        return "out_proj's input"
    return {
        "mask": "self.mask",
        "attn_weights": "self.dropout's input",
        "dropped_weights": "self.dropout's output",
    }.get(stage, "what forward returns")


def _location(stage: str, index: tuple[int, ...], sizes: Sizes, run: Run) -> str:
    """An entry in words, counted from 1, with the book's token where the input is the book's."""

    def token(position: int, role: str = "token") -> str:
        return f" ({role} '{BOOK_TOKENS[position]}')" if run.book else ""

    heads = sizes.num_heads > 1
    if stage == "mask":
        head, row, column = index
        return (f"head {head + 1}'s mask, " if sizes.kind == WRAPPER else "") + f"row {row + 1}, column {column + 1}"
    item = "" if sizes.kind in (V1, V2) and run.book else f"batch item {index[0] + 1}, "
    if stage in ("context", "output"):
        _, row, column = index
        return f"{item}row {row + 1}{token(row)}, column {column + 1}"
    _, head, row, column = index
    head_words = f"head {head + 1}, " if heads else ""
    if stage in ("attn_weights", "dropped_weights"):
        return f"{item}{head_words}row {row + 1}{token(row, 'query')}, column {column + 1}{token(column, 'key')}"
    return f"{item}{head_words}row {row + 1}{token(row)}, column {column + 1}"


def _number(value: float | None) -> str:
    return "nan" if value is None or value != value else f"{value:.6g}"


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())
