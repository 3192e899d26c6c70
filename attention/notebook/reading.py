"""Reading a reader's own chapter-3 module: which class it is, its sizes, and what its forward computed.

``recognise`` names the book's class from the book's attribute names
(``W_query`` as an ``nn.Parameter`` is v1, as an ``nn.Linear`` v2 and later;
a ``mask`` buffer and ``dropout`` make ``CausalAttention``; ``heads``, a list
of those, the wrapper; ``num_heads``, ``head_dim`` and ``out_proj``
``MultiHeadAttention``) and reads its sizes. ``reference`` builds the
package's class of that kind with those sizes and copies the reader's
weights in. ``read_forward`` runs the reader's forward once and keeps what it
computed, through forward hooks on the reader's submodules, which it removes
afterwards; the reader's code and weights stay as they were.

Every stage is laid out like ``attention.Trace``: queries, keys, values
(b, num_heads, num_tokens, head_dim), the mask buffer (num_heads, context_length,
context_length) for the wrapper's heads, else (1, ·, ·), attention weights and
dropped weights (b, num_heads, num_tokens, num_tokens), context vectors
(b, num_tokens, num_heads * head_dim) and the output (b, num_tokens, d_out).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from ..causal import CausalAttention
from ..multihead import MultiHeadAttention, MultiHeadAttentionWrapper
from ..seeding import seeded
from ..trainable import SelfAttention_v1, SelfAttention_v2

V1, V2, CAUSAL, WRAPPER, MULTIHEAD = (
    "SelfAttention_v1",
    "SelfAttention_v2",
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
)
CLASSES = {
    V1: SelfAttention_v1,
    V2: SelfAttention_v2,
    CAUSAL: CausalAttention,
    WRAPPER: MultiHeadAttentionWrapper,
    MULTIHEAD: MultiHeadAttention,
}
PROJECTIONS = ("W_query", "W_key", "W_value")
_EXPECTED = (
    "check() takes one of chapter 3's attention modules: SelfAttention_v1 or _v2 (W_query, W_key, W_value), "
    "CausalAttention (those as nn.Linear, plus a mask buffer and dropout), MultiHeadAttentionWrapper (heads, "
    "an nn.ModuleList of CausalAttention) or MultiHeadAttention (num_heads, head_dim, out_proj)."
)


@dataclass(frozen=True)
class Sizes:
    """What ``recognise`` read: the book's class and the sizes to build the package's one with.

    ``d_out`` is per head for the wrapper (the book's ``d_out`` there), the total for
    ``MultiHeadAttention``; ``context_length`` is None for v1 and v2, which have no mask.
    """

    kind: str
    d_in: int
    d_out: int
    context_length: int | None
    dropout: float
    num_heads: int
    qkv_bias: bool

    @property
    def head_dim(self) -> int:
        return self.d_out // self.num_heads if self.kind == MULTIHEAD else self.d_out

    @property
    def batched(self) -> bool:
        """v1 and v2 take one sentence, (num_tokens, d_in), as in the book; the others a batch."""
        return self.kind not in (V1, V2)


def recognise(module: object) -> Sizes:
    """The book's class ``module`` is written as, and its sizes; a ``TypeError`` or ``ValueError`` saying what
    was expected otherwise."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"{_EXPECTED} Got a {type(module).__name__}, which is not an nn.Module.")
    heads = getattr(module, "heads", None)
    if isinstance(heads, nn.ModuleList):
        return _wrapper_sizes(module, heads)
    if not all(hasattr(module, name) for name in PROJECTIONS):
        missing = ", ".join(name for name in PROJECTIONS if not hasattr(module, name))
        raise TypeError(f"{_EXPECTED} {type(module).__name__} has no {missing}.")
    kinds = {type(getattr(module, name)) for name in PROJECTIONS}
    if all(isinstance(getattr(module, name), nn.Parameter) for name in PROJECTIONS):
        return _v1_sizes(module)
    if not all(isinstance(getattr(module, name), nn.Linear) for name in PROJECTIONS):
        found = ", ".join(sorted(kind.__name__ for kind in kinds))
        raise TypeError(
            f"W_query, W_key and W_value must all be nn.Parameter (SelfAttention_v1) or all nn.Linear "
            f"(SelfAttention_v2 and later); {type(module).__name__} has {found}."
        )
    d_in, d_out, qkv_bias = _linear_sizes(module)
    if not hasattr(module, "mask") and not hasattr(module, "dropout"):
        return Sizes(V2, d_in, d_out, None, 0.0, 1, qkv_bias)
    context_length, p = _mask_length(module), _dropout_p(module)
    if not any(hasattr(module, name) for name in ("num_heads", "head_dim", "out_proj")):
        return Sizes(CAUSAL, d_in, d_out, context_length, p, 1, qkv_bias)
    return _multihead_sizes(module, d_in, d_out, context_length, p, qkv_bias)


def _v1_sizes(module: nn.Module) -> Sizes:
    shapes = {tuple(getattr(module, name).shape) for name in PROJECTIONS}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        found = ", ".join(f"{name} {tuple(getattr(module, name).shape)}" for name in PROJECTIONS)
        raise ValueError(f"W_query, W_key and W_value must be three matrices of one shape (d_in, d_out); got {found}.")
    d_in, d_out = next(iter(shapes))
    return Sizes(V1, d_in, d_out, None, 0.0, 1, False)


def _linear_sizes(module: nn.Module) -> tuple[int, int, bool]:
    linears = [getattr(module, name) for name in PROJECTIONS]
    sizes = {(linear.in_features, linear.out_features, linear.bias is not None) for linear in linears}
    if len(sizes) != 1:
        found = ", ".join(
            f"{name} nn.Linear({linear.in_features}, {linear.out_features}, bias={linear.bias is not None})"
            for name, linear in zip(PROJECTIONS, linears, strict=True)
        )
        raise ValueError(
            f"W_query, W_key and W_value must be alike, nn.Linear(d_in, d_out, bias=qkv_bias); got {found}."
        )
    return next(iter(sizes))


def _mask_length(module: nn.Module) -> int:
    mask = getattr(module, "mask", None)
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f'{type(module).__name__} needs a mask buffer, as the book registers it: self.register_buffer("mask", '
            "torch.triu(torch.ones(context_length, context_length), diagonal=1))."
        )
    if mask.dim() != 2 or mask.shape[0] != mask.shape[1] or mask.shape[0] == 0:
        raise ValueError(f"The mask buffer must be square, (context_length, context_length); got {tuple(mask.shape)}.")
    return mask.shape[0]


def _dropout_p(module: nn.Module) -> float:
    dropout = getattr(module, "dropout", None)
    if not isinstance(dropout, nn.Dropout):
        raise TypeError(
            f"{type(module).__name__}.dropout must be nn.Dropout(dropout), as in the book; "
            f"got {type(dropout).__name__}."
        )
    return dropout.p


def _multihead_sizes(module, d_in: int, d_out: int, context_length: int, p: float, qkv_bias: bool) -> Sizes:
    num_heads, head_dim = getattr(module, "num_heads", None), getattr(module, "head_dim", None)
    out_proj = getattr(module, "out_proj", None)
    if not isinstance(num_heads, int) or not isinstance(head_dim, int) or not isinstance(out_proj, nn.Linear):
        raise TypeError(
            f"{type(module).__name__} looks like MultiHeadAttention, which needs num_heads and head_dim "
            "(whole numbers) and out_proj = nn.Linear(d_out, d_out)."
        )
    if num_heads < 1 or num_heads * head_dim != d_out:
        raise ValueError(
            f"num_heads * head_dim must be d_out: num_heads={num_heads}, head_dim={head_dim}, d_out={d_out} "
            "(W_query's out_features)."
        )
    if (out_proj.in_features, out_proj.out_features) != (d_out, d_out):
        raise ValueError(
            f"out_proj must be nn.Linear(d_out, d_out) = nn.Linear({d_out}, {d_out}); "
            f"got nn.Linear({out_proj.in_features}, {out_proj.out_features})."
        )
    return Sizes(MULTIHEAD, d_in, d_out, context_length, p, num_heads, qkv_bias)


def _wrapper_sizes(module: nn.Module, heads: nn.ModuleList) -> Sizes:
    if len(heads) == 0:
        raise ValueError(f"{type(module).__name__}.heads is empty; the wrapper needs at least one CausalAttention.")
    sizes = [recognise(head) for head in heads]
    if any(size.kind != CAUSAL for size in sizes):
        found = ", ".join(sorted({size.kind for size in sizes}))
        raise TypeError(f"A MultiHeadAttentionWrapper's heads must be CausalAttention modules; found {found}.")
    if len(set(sizes)) != 1:
        raise ValueError("Every head of the wrapper must have the same d_in, d_out, context_length, dropout and bias.")
    first = sizes[0]
    return Sizes(WRAPPER, first.d_in, first.d_out, first.context_length, first.dropout, len(heads), first.qkv_bias)


def reference(module: nn.Module, sizes: Sizes) -> nn.Module:
    """The package's class of the same kind and sizes, holding copies of ``module``'s weights (its own mask).

    Built under ``seeded(0)``, so the reader's global random state stays as it was.
    """
    cls = CLASSES[sizes.kind]
    arguments = {
        V1: (sizes.d_in, sizes.d_out),
        V2: (sizes.d_in, sizes.d_out, sizes.qkv_bias),
        CAUSAL: (sizes.d_in, sizes.d_out, sizes.context_length, sizes.dropout, sizes.qkv_bias),
    }.get(sizes.kind, (sizes.d_in, sizes.d_out, sizes.context_length, sizes.dropout, sizes.num_heads, sizes.qkv_bias))
    try:
        with seeded(0):
            built = cls(*arguments)
    except ValueError as error:
        raise ValueError(f"Your module's sizes do not fit the package's {sizes.kind}: {error}") from None
    parameter = next(module.parameters())
    built = built.to(device=parameter.device, dtype=parameter.dtype)
    pairs = zip(built.heads, module.heads, strict=True) if sizes.kind == WRAPPER else [(built, module)]
    with torch.no_grad():
        for ours, theirs in pairs:
            for name in PROJECTIONS:
                if sizes.kind == V1:
                    getattr(ours, name).copy_(getattr(theirs, name))
                else:
                    _copy_linear(getattr(ours, name), getattr(theirs, name))
        if sizes.kind == MULTIHEAD:
            _copy_linear(built.out_proj, module.out_proj)
    return built.eval()


def _copy_linear(ours: nn.Linear, theirs: nn.Linear) -> None:
    ours.weight.copy_(theirs.weight)
    if ours.bias is not None:  # the book's out_proj has a bias; a reader's without one adds zeros
        ours.bias.copy_(theirs.bias if theirs.bias is not None else torch.zeros_like(ours.bias))


class ForwardRaised(Exception):  # noqa: N818 (what happened, not an error of check's own)
    """The reader's forward raised ``error``, or returned what is no tensor (``error`` None)."""

    def __init__(self, error: Exception | None, returned: object = None):
        what = f"returned a {type(returned).__name__}, not a tensor" if error is None else "raised"
        super().__init__(what if error is None else f"{type(error).__name__}: {error}")
        self.what = what


def read_forward(module: nn.Module, sizes: Sizes, x: torch.Tensor, *, seed: int | None) -> dict[str, torch.Tensor]:
    """Run the reader's ``module`` on x (b, num_tokens, d_in) and keep each stage it computed, as float64 on the CPU.

    v1 and v2 run once per sentence, as the book calls them; v1's queries, keys and values are
    ``x @ W_query`` and the others, computed here from its parameters (its forward uses them in a
    line that hooks cannot see). A stage missing from the result was not seen: the forward never
    called ``self.dropout``, say, or called it twice. ``seed``: ``torch.manual_seed(seed)`` before
    the forward, under ``seeding.seeded``. A forward that raises raises ``ForwardRaised``.
    """
    heads = list(module.heads) if sizes.kind == WRAPPER else [module]
    calls: dict[str, list] = {}
    sentences = [x] if sizes.batched else list(x)  # v1 and v2: (num_tokens, d_in) each
    with _hooks(heads, sizes, calls), torch.no_grad(), seeded(seed):
        try:
            outputs = [module(sentence) for sentence in sentences]
        except Exception as error:  # the reader's own code: report it, do not crash
            raise ForwardRaised(error) from error
    if not all(isinstance(output, torch.Tensor) for output in outputs):
        raise ForwardRaised(None, next(o for o in outputs if not isinstance(o, torch.Tensor)))
    output = torch.cat(outputs) if sizes.batched else torch.stack(outputs)  # (b, num_tokens, ·)
    stages = {"output": output}
    if sizes.kind == V1:
        with torch.no_grad():
            for name in PROJECTIONS:
                calls[name] = [[x @ getattr(module, name)]]  # (b, num_tokens, d_out)
    stages |= _per_head(calls, sizes, len(heads), len(sentences), x.shape[0])
    if "out_proj" in calls and len(calls["out_proj"]) == 1:
        stages["context"] = calls["out_proj"][0][0]  # (b, num_tokens, d_out)
    elif sizes.kind != MULTIHEAD:
        stages["context"] = output  # no out_proj: the context vectors are the output
    if sizes.context_length is not None:
        stages["mask"] = torch.stack([head.mask.detach().bool() for head in heads])  # (h, context_length, ·)
    return {name: _plain(tensor) if name != "mask" else tensor.cpu() for name, tensor in stages.items()}


_STAGE_OF = {"W_query": "queries", "W_key": "keys", "W_value": "values"}


def _per_head(calls: dict, sizes: Sizes, num_heads: int, num_sentences: int, b: int) -> dict[str, torch.Tensor]:
    """Each hooked submodule's tensors, one call per head (and sentence), laid out as (b, num_heads, ·, ·)."""
    stages = {}
    for name, stage in (*_STAGE_OF.items(), ("dropout_in", "attn_weights"), ("dropout_out", "dropped_weights")):
        found = calls.get(name, [])
        if len(found) != num_heads or any(
            len(per_head) != (1 if sizes.kind == V1 else num_sentences) for per_head in found
        ):
            continue  # not called once per head and sentence: this stage was not seen
        tensors = [torch.stack(per_head) if sizes.kind == V2 else per_head[0] for per_head in found]  # (b, T, ·)
        if sizes.kind == MULTIHEAD and stage in _STAGE_OF.values():
            tensor = tensors[0]
            if tensor.shape[-1] == sizes.d_out and tensor.dim() == 3:
                tensor = tensor.reshape(b, -1, sizes.num_heads, sizes.head_dim).transpose(1, 2)  # (b, h, T, head_dim)
        elif sizes.kind == MULTIHEAD:
            tensor = tensors[0]  # (b, num_heads, num_tokens, num_tokens) already
        else:
            tensor = torch.stack(tensors, dim=1) if all(t.dim() == 3 for t in tensors) else tensors[0]  # (b, h, T, ·)
        stages[stage] = tensor
    return stages


@contextlib.contextmanager
def _hooks(heads: list[nn.Module], sizes: Sizes, calls: dict) -> Iterator[None]:
    """Forward hooks that append what each head's W_query, W_key, W_value, dropout and out_proj saw to ``calls``:
    ``calls[name][head]`` is a list, one entry per call. Removed on the way out."""
    handles = []

    def keep(name: str, head: int, which: str):
        def hook(submodule, inputs, output):
            seen = inputs[0] if which == "in" else output
            if isinstance(seen, torch.Tensor):
                calls.setdefault(name, [[] for _ in heads])[head].append(seen.detach().clone())

        return hook

    try:
        for index, head in enumerate(heads):
            if sizes.kind != V1:
                for name in PROJECTIONS:
                    handles.append(getattr(head, name).register_forward_hook(keep(name, index, "out")))
            if isinstance(getattr(head, "dropout", None), nn.Dropout):
                handles.append(head.dropout.register_forward_hook(keep("dropout_in", index, "in")))
                handles.append(head.dropout.register_forward_hook(keep("dropout_out", index, "out")))
        if sizes.kind == MULTIHEAD:
            handles.append(heads[0].out_proj.register_forward_hook(keep("out_proj", 0, "in")))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().to("cpu", torch.float64)
