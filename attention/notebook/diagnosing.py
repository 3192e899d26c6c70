"""How a reader's stage differs from the chapter's, in the chapter's words: the diagnosis ``check`` prints.

``checking`` finds the first stage that differs; ``diagnose`` says how. It
tries what a reader most often typed instead, each a changed step of the
book's forward run on the package's copy of the reader's weights
(``matching.mistaken_stages``): the softmax over another dimension, the scores
divided by another factor (read off the reader's weights, then named:
√d_k, d_k, d_in, num_heads, √d_out, 1...), dropout's hook seeing scores
because dropout ran before the softmax, a transposed ``W_query``, heads split
by ``view`` alone. The context vectors are searched for the right numbers in
another place (heads merged in another order, or across tokens). Where none
fits, it describes what it sees: which entries the mask hides (the past, the
diagonal, the future), rows that do not sum to 1, weight on hidden keys.
``explain_raised`` reads a forward that raised: the reader's line and what it
usually means.

Every number a sentence quotes is a ``Quote``: whose tensor, which, on which
run, at which entry, so a test can look each one up.
"""

from __future__ import annotations

import copy
import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from ..mistake_steps import RIGHT, Steps, drop_without_rescale, split_heads_without_transpose
from .matching import mistaken_stages
from .precision import stage_bounds
from .reading import CAUSAL, MULTIHEAD, V1, V2, WRAPPER, Sizes

_TINY = 1e-30  # a weight below this is a zero: exp(-inf), or an underflow the factor cannot use


@dataclass(frozen=True)
class Quote:
    """A number a message quotes: ``whose`` tensor ("yours" or "package"), which (a stage, or a ``Trace`` name
    for the package's scores), on which run, at which entry counted from 0; ``row_sum``: the sum of that row."""

    whose: str
    tensor: str
    run: str
    index: tuple[int, ...]
    value: float
    row_sum: bool = False


@dataclass(frozen=True)
class Diagnosis:
    """The sentences, the numbers they quote, and, where the reader's tensor holds another of the package's
    tensors (scores where weights belong), that tensor's ``Trace`` name, its words and its number at the entry."""

    sentences: tuple[str, ...] = ()
    quotes: tuple[Quote, ...] = ()
    seen_as: tuple[str, str, float] | None = None


def projections(ours: nn.Module, sizes: Sizes):
    """The projections' (weight (out, in), bias) of every head, and ``out_proj``'s, as float64 for the bounds."""
    heads = list(ours.heads) if sizes.kind == WRAPPER else [ours]

    def plain(tensor):
        return None if tensor is None else tensor.detach().to("cpu", torch.float64)

    if sizes.kind == V1:
        pairs = [(plain(getattr(ours, n)).T, None) for n in ("W_query", "W_key", "W_value")]
    else:
        linears = [getattr(head, n) for head in heads for n in ("W_query", "W_key", "W_value")]
        pairs = [(plain(linear.weight), plain(linear.bias)) for linear in linears]
    out_proj = (plain(ours.out_proj.weight), plain(ours.out_proj.bias)) if sizes.kind == MULTIHEAD else None
    return pairs, out_proj


def rescale(sizes: Sizes, training: bool) -> float:
    """What dropout multiplies a kept weight by."""
    return 1 / (1 - sizes.dropout) if training else 1.0


def agree(yours: torch.Tensor, other: torch.Tensor, bound: float) -> bool:
    """Every entry within ``bound``, equal infinities and NaN against NaN included."""
    if yours.shape != other.shape:
        return False
    close = ((yours - other).abs() <= bound) | (yours == other) | (yours.isnan() & other.isnan())
    return bool(close.all())


def reproduces(ours, sizes: Sizes, steps: Steps, stage: str, compared, eps: float, reference=None) -> bool:
    """Whether the book's forward with ``steps`` (on ``reference``, else the package's copy ``ours``) gives the
    reader's ``stage`` on every run that saw it."""
    module = ours if reference is None else reference
    seen = [pass_ for pass_ in compared if stage in pass_.theirs]
    weights = None
    for pass_ in seen:
        wrong = mistaken_stages(module, sizes, pass_.run.x, steps, pass_.keep)
        theirs = wrong[stage]
        finite = theirs[theirs.isfinite()].abs()
        loose = max(1e-3, 100 * eps) * (1 + (float(finite.max()) if finite.numel() else 0.0))  # far above rounding
        if not agree(pass_.theirs[stage], theirs, loose):
            return False  # most guesses are this far off: no need for the exact bound
        weights = weights or projections(module, sizes)
        scale = rescale(sizes, pass_.run.training)
        bounds = stage_bounds(pass_.run.x, *weights, wrong, eps=eps, score_divisor=1.0, rescale=scale)
        if not agree(pass_.theirs[stage], theirs, bounds[stage]):
            return False
    return bool(seen)


def diagnose(stage: str, found, index: tuple[int, ...], compared, sizes: Sizes, ours, eps: float) -> Diagnosis:
    """How the reader's ``stage`` differs; ``found`` is the run where it first does, at ``index`` (from 0)."""
    if stage == "mask":
        return Diagnosis(_mask_sentences(found.theirs["mask"], sizes))
    if stage == "attn_weights":
        return _weights(found, index, compared, sizes, ours, eps)
    if stage == "context":
        return _context(found, compared, sizes, ours, eps)
    if stage == "dropped_weights":
        return Diagnosis((
            "Your attn_weights agree before dropout, but self.dropout kept other weights after torch.manual_seed(123): "
            "something in your forward draws random numbers before it.",
        ))  # fmt: skip
    if stage == "output":
        return Diagnosis(("Your context_vec agrees, so out_proj differs: the output is self.out_proj(context_vec).",))
    matrix = {"queries": "W_query", "keys": "W_key", "values": "W_value"}[stage]
    return Diagnosis((f"Your {stage} are not {matrix}'s output on x: the book computes them as self.{matrix}(x).",))


# The mask: which of the past, the diagonal and the future it hides.

_REGIONS = ("the past", "the diagonal", "the future")


def _regions(hidden: torch.Tensor) -> dict[str, str]:
    """For a (T, T) boolean: how much of each region is True: "all", "none", "the next token" or "part"."""
    size = hidden.shape[-1]
    rows, columns = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    found = {}
    for region, where in zip(_REGIONS, (columns < rows, columns == rows, columns > rows), strict=True):
        part = hidden[where]
        if part.numel() == 0 or not part.any():
            found[region] = "none"
        elif part.all():
            found[region] = "all"
        elif region == "the future" and torch.equal(hidden & (columns > rows), columns == rows + 1):
            found[region] = "the next token"
        else:
            found[region] = "part"
    return found


def _hides_words(found: dict[str, str]) -> str:
    words = [
        region if amount == "all" else amount if amount == "the next token" else f"part of {region}"
        for region, amount in found.items()
        if amount != "none"
    ]
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 2 else words) or "nothing"


def _mask_sentences(mask: torch.Tensor, sizes: Sizes) -> tuple[str, ...]:
    """The reader's mask buffer (h, context_length, context_length) in words, against the book's."""
    sentences = []
    for head, hidden in enumerate(mask):
        found = _regions(hidden)
        if found == {"the past": "none", "the diagonal": "none", "the future": "all"}:
            continue
        whose = f"Head {head + 1}'s mask" if sizes.kind == WRAPPER else "Your mask"
        seen = [region for region, amount in found.items() if amount == "none"]
        shows = f", and leaves {' and '.join(seen)} seen" if seen else ""
        sentences.append(f"{whose} hides {_hides_words(found)}{shows}.")
        break
    sentences.append(
        "The book's hides only the future, the keys after each query (above the diagonal): "
        "torch.triu(torch.ones(context_length, context_length), diagonal=1)."
    )
    return tuple(sentences)


# Attention weights: what the reader's self.dropout received.


def _masked(attn_scores: torch.Tensor, mask_bool: torch.Tensor) -> torch.Tensor:
    return attn_scores.masked_fill(mask_bool, -torch.inf)  # (b, num_heads, num_tokens, num_tokens)


def _softmax_over(dim: int) -> Callable:
    def weigh(attn_scores, mask_bool, keys):
        return torch.softmax(_masked(attn_scores, mask_bool) / keys.shape[-1] ** 0.5, dim=dim)

    return weigh


def _divided_by(factor: float) -> Callable:
    def weigh(attn_scores, mask_bool, keys):
        return torch.softmax(_masked(attn_scores, mask_bool) / factor, dim=-1)

    return weigh


def _scores(masked: bool, scaled: bool) -> Callable:
    def weigh(attn_scores, mask_bool, keys):
        scores = _masked(attn_scores, mask_bool) if masked else attn_scores
        return scores / keys.shape[-1] ** 0.5 if scaled else scores

    return weigh


def _dims(sizes: Sizes) -> list[tuple[int, int, str]]:
    """(dimension in the package's (b, num_heads, num_tokens, num_tokens), in the reader's own layout, its words)."""
    queries = {V1: 0, V2: 0, CAUSAL: 1, WRAPPER: 1}.get(sizes.kind, 2)
    dims = [(2, queries, "the queries: each column (one key) sums to 1, not each row (one query)")]
    if sizes.batched:
        dims.insert(0, (0, 0, "the batch dimension, not the keys: each weight is shared with the other batch items"))
    if sizes.kind == MULTIHEAD:
        dims.insert(1, (1, 1, "the heads, not the keys: each weight is shared with the other heads"))
    return dims


def _weights(found, index, compared, sizes: Sizes, ours, eps: float) -> Diagnosis:
    for masked in (True, False):
        for scaled in (False, True):
            steps = replace(RIGHT, weigh=_scores(masked, scaled))
            if reproduces(ours, sizes, steps, "attn_weights", compared, eps):
                return _before_softmax(found, index, sizes, masked, scaled, ours, steps, compared)
    return _weight_guesses("attn_weights", found, compared, sizes, ours, eps) or _described(found, compared, sizes)


def _weight_guesses(stage: str, found, compared, sizes: Sizes, ours, eps: float) -> Diagnosis | None:
    """A changed softmax, scaling, W_query or split that gives the reader's ``stage``: the attention weights, or
    what follows from them where forward never calls self.dropout."""
    softmax_on_keys = "The book's softmax runs over the keys, the last dimension: dim=-1, so each row sums to 1."
    for dim, theirs, words in _dims(sizes):
        if reproduces(ours, sizes, replace(RIGHT, weigh=_softmax_over(dim)), stage, compared, eps):
            return Diagnosis((f"Your softmax normalized over dimension {theirs}, {words}.", softmax_on_keys))
    scaling = _scaling(stage, compared, sizes, ours, eps)
    if scaling is not None:
        return Diagnosis(scaling)
    if "queries" not in found.theirs and _transposed_query(stage, ours, sizes, compared, eps):
        return Diagnosis((
            "Your queries are x @ W_query.weight: nn.Linear keeps its weight as (d_out, d_in), so that multiplies x "
            "by the transpose of W_query.",
            "The book computes queries = self.W_query(x).",
        ))  # fmt: skip
    split = replace(RIGHT, split=split_heads_without_transpose)
    if sizes.kind == MULTIHEAD and reproduces(ours, sizes, split, stage, compared, eps):
        return Diagnosis((
            "Your heads' queries and keys were split with view alone, without transpose(1, 2): a head's rows hold "
            "numbers of other tokens.",
            "The book views (b, num_tokens, num_heads, head_dim), then transposes to (b, num_heads, num_tokens, "
            "head_dim).",
        ))  # fmt: skip
    return None


def _later_agree(compared) -> bool:
    """Whether the reader's context vectors and output agree with the package's on every run."""
    later = [(p, stage) for p in compared for stage in ("context", "output") if stage in p.theirs]
    return all(agree(p.theirs[stage], p.right[stage], p.bounds[stage]) for p, stage in later)


def _before_softmax(found, index, sizes: Sizes, masked: bool, scaled: bool, ours, steps: Steps, compared) -> Diagnosis:
    """The reader's self.dropout saw scores: dropout ran before the softmax. Its last row, where the mask hides
    nothing, shows that the rows do not sum to 1."""
    name = {(True, False): "book_scores", (True, True): "masked_scores"}.get((masked, scaled))
    name = name or ("scaled_scores" if scaled else "attn_scores")
    words = "attn_scores / keys.shape[-1] ** 0.5" if scaled else "attn_scores"
    state = "masked" if masked else "before masking"
    last = (*index[:-2], found.theirs["attn_weights"].shape[-2] - 1)
    total = float(found.theirs["attn_weights"][last].sum())
    sentences = [
        f"What self.dropout receives is not attention weights: row {last[-1] + 1} sums to {total:.6g}, not 1. "
        f"It is your {words}, {state}, before the softmax.",
        "Dropout runs before the softmax here; it belongs after it: attn_weights = self.dropout(attn_weights).",
    ]
    if sizes.dropout == 0 and _later_agree(compared):
        sentences.append(
            "Your output still agrees only because p = 0; with p > 0 dropout would drop scores, not weights."
        )
    theirs = mistaken_stages(ours, sizes, found.run.x, steps, found.keep)["attn_weights"][index]
    quote = Quote("yours", "attn_weights", found.run.name, last, total, row_sum=True)
    return Diagnosis(tuple(sentences), (quote,), (name, words, float(theirs)))


def _divisors(sizes: Sizes) -> list[tuple[str, float]]:
    """What a reader divides the scores by, named as the book names the sizes."""
    d_k = sizes.head_dim
    found = [("√d_k", d_k**0.5), ("d_k", d_k), ("d_in", sizes.d_in), ("√d_in", sizes.d_in**0.5)]
    if sizes.kind == MULTIHEAD:
        found += [("num_heads", sizes.num_heads), ("√num_heads", sizes.num_heads**0.5)]
        found += [("d_out", sizes.d_out), ("√d_out", sizes.d_out**0.5)]
    return found


def _estimated_factor(compared, sizes: Sizes) -> float | None:
    """The factor f with the reader's weights = softmax(attn_scores / f), least squares over log-weight differences
    within each row (column 1, always seen, as the reference); None where no row has two weights to compare."""
    products, squares = 0.0, 0.0
    for pass_ in compared:
        weights = pass_.theirs.get("attn_weights")
        if weights is None or weights.shape != pass_.right["attn_weights"].shape:
            continue
        scores = pass_.right["queries"] @ pass_.right["keys"].mT  # (b, num_heads, num_tokens, num_tokens)
        num_tokens = scores.shape[-1]
        hidden = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
        if sizes.context_length is None:
            hidden[:] = False
        usable = ~hidden & (weights > _TINY) & weights.isfinite()
        usable &= usable[..., :1]
        logs = weights.clamp_min(_TINY).log()
        score_steps, log_steps = scores - scores[..., :1], logs - logs[..., :1]
        products += float((score_steps * log_steps)[usable].sum())
        squares += float((score_steps**2)[usable].sum())
    return squares / products if products > 0 and squares > 0 else None


def _scaling(stage: str, compared, sizes: Sizes, ours, eps: float) -> tuple[str, ...] | None:
    """The factor the reader divided the scores by, when softmax(attn_scores / factor) gives their ``stage``; None
    when no factor does, or the book's does (the difference is elsewhere). Read off the attention weights where
    they were seen, else each of the sizes tried in turn."""
    if stage == "attn_weights":
        factors = [_estimated_factor(compared, sizes)]
    else:
        factors = [1.0] + [value for name, value in _divisors(sizes)]
    factors = [f for f in factors if f is not None and abs(f / sizes.head_dim**0.5 - 1) >= 1e-3]
    factor = next(
        (f for f in factors if reproduces(ours, sizes, replace(RIGHT, weigh=_divided_by(f)), stage, compared, eps)),
        None,
    )
    if factor is None:
        return None
    right = f"√d_k = keys.shape[-1] ** 0.5 = {sizes.head_dim**0.5:.3g}"
    if abs(factor - 1) < 1e-3:
        return (f"Your attn_scores were not divided before the softmax; the book divides them by {right}.",)
    named = [(name, value) for name, value in _divisors(sizes) if abs(factor / value - 1) < 1e-3]
    if named:
        names = " = ".join("d_k = keys.shape[-1]" if name == "d_k" else name for name, _ in named)
        return (f"Your attn_scores were divided by {names} = {named[0][1]:.3g} before the softmax, not by {right}.",)
    inverse = [name for name, value in _divisors(sizes) if abs(factor * value - 1) < 1e-3]
    if inverse:
        return (f"Your attn_scores were multiplied by {inverse[0]} before the softmax; the book divides by {right}.",)
    return (
        f"Your attn_scores were divided by {factor:.3g} before the softmax, which is none of d_k, √d_k, d_in or "
        f"num_heads; the book divides by {right}.",
    )


def _transposed_query(stage: str, ours, sizes: Sizes, compared, eps: float) -> bool:
    """Whether queries = x @ W_query.weight (square W_query, no bias) gives the reader's weights."""
    if sizes.kind == V1 or sizes.d_in != sizes.d_out:
        return False
    transposed = copy.deepcopy(ours)
    heads = list(transposed.heads) if sizes.kind == WRAPPER else [transposed]
    with torch.no_grad():
        for head in heads:
            head.W_query.weight.copy_(head.W_query.weight.T.clone())
            if head.W_query.bias is not None:
                head.W_query.bias.zero_()
    return reproduces(ours, sizes, RIGHT, stage, compared, eps, reference=transposed)


def _described(found, compared, sizes: Sizes) -> Diagnosis:
    """What the reader's weights look like, where no single change explains them."""
    weights = found.theirs["attn_weights"]
    if weights.shape != found.right["attn_weights"].shape:
        return Diagnosis()
    if bool((weights < 0).any() or weights.isinf().any()):
        return Diagnosis((
            "What self.dropout receives holds negative numbers or -inf, which no softmax gives: it sees scores, not "
            "attention weights.",
            "Dropout runs before the softmax here; it belongs after it: attn_weights = self.dropout(attn_weights).",
        ))  # fmt: skip
    sums = weights.nansum(-1)  # (b, num_heads, num_tokens)
    off = ((sums - 1).abs() > 1e-4) & ~weights.isnan().all(-1)
    sentences, quotes = [], []
    if off.any():
        row = tuple(int(i) for i in off.nonzero()[0])
        total = float(sums[row])
        where = f" (batch item {row[0] + 1}" + (f", head {row[1] + 1})" if weights.shape[1] > 1 else ")")
        sentences.append(
            f"Row {row[-1] + 1} of your attn_weights{where} sums to {total:.6g}, not 1: after the softmax, "
            "each query's weights over the keys sum to 1."
        )
        quotes.append(Quote("yours", "attn_weights", found.run.name, row, total, row_sum=True))
    nan_rows = weights.isnan().all(-1) & ~found.right["attn_weights"].isnan().all(-1)
    if nan_rows.any():
        row = int(nan_rows.nonzero()[0][-1])
        sentences.append(f"Row {row + 1} of your attn_weights is NaN, as a softmax gives where every key of a row "
                         "is hidden (all -inf).")  # fmt: skip
    zeros = _zeros_sentences(compared) if sizes.context_length is not None else []
    if off.any() and not zeros and bool((sums[off] < 1).all()):
        zeros.append("Your zeros are where the book's mask hides, but the rows were not renormalized: mask "
                     "attn_scores with -inf before the softmax, not the weights after it.")  # fmt: skip
    sentences += zeros
    if not sentences:
        sentences.append("Each row sums to 1 and the zeros are where the book's are, so your attn_scores differ "
                         "before the softmax: compare the lines that make queries, keys and attn_scores.")  # fmt: skip
    return Diagnosis(tuple(sentences), tuple(quotes))


def _zeros_sentences(compared) -> list[str]:
    """Where the reader's weights are 0 against where the book's mask hides, on the eval runs."""
    weight_on_hidden, zero_on_seen = torch.zeros(0, dtype=torch.bool), None
    for pass_ in compared:
        weights = pass_.theirs.get("attn_weights")
        if pass_.run.training or weights is None or weights.shape != pass_.right["attn_weights"].shape:
            continue
        num_tokens = weights.shape[-1]
        hidden = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), 1)
        zero = ((weights.abs() <= _TINY) | weights.isnan()).flatten(0, 1)  # (b * num_heads, num_tokens, num_tokens)
        given = (weights.abs() > _TINY) & ~weights.isnan()
        if weight_on_hidden.numel() == 0 or weight_on_hidden.shape[-1] < num_tokens:
            weight_on_hidden = given.flatten(0, 1).any(0) & hidden
            zero_on_seen = zero.any(0) & ~hidden
    if weight_on_hidden.numel() == 0:
        return []
    sentences = []
    if weight_on_hidden.any():
        found = _regions(weight_on_hidden)
        sentences.append(f"Your attn_weights give weight to {_hides_words(found)}: keys after the query, which the "
                         "mask must hide with -inf before the softmax.")  # fmt: skip
    if zero_on_seen is not None and zero_on_seen.any():
        found = _regions(zero_on_seen)
        seen = _hides_words(found)
        sentences.append(f"Your attn_weights give no weight to {seen}, which the book's mask leaves seen.")
    return sentences


# Context vectors: the right numbers in the wrong places?


def _context(found, compared, sizes: Sizes, ours, eps: float) -> Diagnosis:
    rescaled = replace(RIGHT, drop=drop_without_rescale)
    if sizes.dropout > 0 and reproduces(ours, sizes, rescaled, "context", compared, eps):
        return Diagnosis((
            "In train mode your context vectors are what the kept weights give without dividing by 1 - p: "
            "dropout without the rescale.",
        ))  # fmt: skip
    placed = _placement(compared)
    if placed is not None:
        return Diagnosis(_placement_sentences(placed, sizes))
    if "attn_weights" not in found.theirs:  # forward never calls self.dropout: the weights were not seen
        guessed = _weight_guesses("context", found, compared, sizes, ours, eps)
        return guessed or Diagnosis((
            "Your attn_weights were not seen (forward never calls self.dropout), so the difference is in attn_scores, "
            "attn_weights or attn_weights @ values.",
        ))  # fmt: skip
    return Diagnosis(("Your attn_weights agree, so the difference comes after them: in attn_weights @ values or in "
                      "how the heads are put together.",))  # fmt: skip


def _placement(compared) -> torch.Tensor | None:
    """Where each of the reader's context numbers comes from in the package's per-head context vectors:
    (num_tokens, d_out, 3) of (head, token, number), counted from 0; None unless one placement fits every run."""
    passes = [p for p in compared if "context" in p.theirs and not p.run.training]
    passes.sort(key=lambda p: p.run.book)  # a random batch first: its numbers are all different
    placement = None
    for pass_ in passes:
        heads = pass_.right["dropped_weights"] @ pass_.right["values"]  # (b, num_heads, num_tokens, head_dim)
        theirs = pass_.theirs["context"]  # (b, num_tokens, d_out)
        b, num_heads, num_tokens, head_dim = heads.shape
        if theirs.shape != (b, num_tokens, num_heads * head_dim):
            return None
        bound = pass_.bounds["context"]
        if placement is None or placement.shape[0] != num_tokens:
            distance = (theirs[0].reshape(-1, 1) - heads[0].reshape(1, -1)).abs()  # (T * d_out, h * T * head_dim)
            nearest = distance.argmin(1)
            if not bool((distance.min(1).values <= bound).all()):
                return None
            placement = torch.stack(torch.unravel_index(nearest, (num_heads, num_tokens, head_dim)), -1)
            placement = placement.reshape(num_tokens, num_heads * head_dim, 3)
        moved = heads[:, placement[..., 0], placement[..., 1], placement[..., 2]]  # (b, num_tokens, d_out)
        if not agree(theirs, moved, bound):
            return None
    return placement


def _placement_sentences(placement: torch.Tensor, sizes: Sizes) -> tuple[str, ...]:
    num_tokens, d_out, _ = placement.shape
    head_dim = d_out // max(1, int(placement[..., 0].max()) + 1)
    tokens = torch.arange(num_tokens).view(-1, 1)
    book = "The book's .transpose(1, 2), then .contiguous().view(b, num_tokens, d_out), keeps each token's row."
    across = (placement[..., 1] != tokens).any(1)
    if across.any():
        row = int(across.nonzero()[0])
        sources = [str(t) for t in sorted({int(t) + 1 for t in placement[row, :, 1]})]
        listed = ", ".join(sources[:-1]) + f" and {sources[-1]}"
        return (f"Row {row + 1} of your context_vec holds numbers of tokens {listed}: the heads "
                "were merged across tokens, without transposing back.", book)  # fmt: skip
    columns = torch.arange(d_out)
    right = torch.stack((columns // head_dim, columns % head_dim), -1)  # (d_out, 2): head, number
    first = int(((placement[0, :, [0, 2]] != right).any(1)).nonzero()[0])
    head, number = (int(v) + 1 for v in placement[0, first, [0, 2]])
    sentence = (f"Column {first + 1} of each token's context_vec holds head {head}'s number {number}; the book's holds "
                f"head {first // head_dim + 1}'s number {first % head_dim + 1}.")  # fmt: skip
    if bool((placement[0, :, 2] == columns % head_dim).all()):
        order = ", ".join(str(int(h) + 1) for h in placement[0, ::head_dim, 0])
        return (sentence, f"Your heads are concatenated in the wrong order ({order}); the book's transpose(1, 2) "
                          "then view puts head 1's head_dim numbers first, then head 2's.")  # fmt: skip
    return (sentence, "Your heads' numbers are interleaved: the book's transpose(1, 2) then view keeps each head's "
                      "head_dim numbers together, head 1's first.")  # fmt: skip


# Before anything runs: a projection built the other way round.


def swapped_projection(module: nn.Module) -> str | None:
    """A sentence for a ``W_query``, ``W_key`` or ``W_value`` built as nn.Linear(d_out, d_in) beside two built as
    nn.Linear(d_in, d_out); None otherwise."""
    heads = list(module.heads) if isinstance(getattr(module, "heads", None), nn.ModuleList) else [module]
    for head in heads:
        linears = {name: getattr(head, name, None) for name in ("W_query", "W_key", "W_value")}
        if not all(isinstance(linear, nn.Linear) for linear in linears.values()):
            return None
        shapes = {name: (linear.in_features, linear.out_features) for name, linear in linears.items()}
        for name, (d_out, d_in) in shapes.items():
            others = [shape for other, shape in shapes.items() if other != name]
            if d_in != d_out and all(shape == (d_in, d_out) for shape in others):
                return (
                    f"{name} is built the other way round, nn.Linear({d_out}, {d_in}): the book builds "
                    f"nn.Linear(d_in, d_out) = nn.Linear({d_in}, {d_out}), as your other two projections are."
                )
    return None


# A forward that raised.

_LIBRARIES = tuple(os.path.dirname(module.__file__) for module in (torch, nn))
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def explain_raised(error: BaseException) -> tuple[str, ...]:
    """The reader's line that raised ``error``, and what that error usually means in chapter 3's code."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith((*_LIBRARIES, _PACKAGE + os.sep))
    ]
    line = frames[-1].line if frames and frames[-1].line else ""
    message = str(error)
    sentences = [f"Your line that raised: {line}"] if line else []
    if "view size is not compatible" in message:
        sentences.append("view needs the numbers in memory in the new order: after .transpose(1, 2), call "
                         ".contiguous() before .view(b, num_tokens, d_out), as the book does.")  # fmt: skip
    elif "must match the size of tensor" in message and "mask" in line:
        sentences.append("The mask does not fit attn_scores: slice its rows and columns to the input's length, "
                         "self.mask.bool()[:num_tokens, :num_tokens], as the book does.")  # fmt: skip
    elif "cannot be multiplied" in message and ".weight" in line:
        named = re.search(r"(W_\w+)\.weight", line)
        matrix = named.group(1) if named else "W_query"
        sentences.append(f"nn.Linear keeps its weight as (d_out, d_in), so x @ {matrix}.weight multiplies by its "
                         f"transpose: the book calls self.{matrix}(x).")  # fmt: skip
    return tuple(sentences)
