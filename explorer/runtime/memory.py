"""A memory budget for what one visitor's settings make the server compute, decided before computing.

The sidebar lets anyone ask for 16 heads of d_out = 1,024 on 1,024 tokens in training mode. One such
multi-head view is about 1 GiB of tensors while it is computed, and a shared server has little more.
So each view's bytes are estimated from its settings first (one function per view kind: ``*_bytes``,
checked against measured sizes in ``tests/test_budget.py``). ``plan`` then keeps the view within
``VIEW_BUDGET``: all tokens if they fit, else only as many of the first tokens as fit (and says which
setting to lower to see more), or a refusal that names the setting when even ``MIN_TOKENS`` do not fit.

``views.run`` plans each view with ``plan`` once per call, and lets at most ``HEAVY_SLOTS`` heavy
computations (above ``HEAVY_BYTES``) run at once, in a ``TurnQueue`` (below). ``estimate`` and ``plan`` are
pure in whole numbers and cached, so a rerun with the same settings computes nothing.

T is num_tokens. This module does not import Streamlit.

Then the one queue for work that must take turns (``TurnQueue``): heavy views, heavy page runs and the
Speed page's timings."""

from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import functools
import itertools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from explorer.runtime.caching import MIB

FLOAT = 4  # bytes per float32
BOOL = 1
VIEW_BUDGET = 320 * MIB  # the most one view may need while it is computed
HEAVY_BYTES = 48 * MIB  # a view estimated above this waits for a place in HEAVY_TURNS
HEAVY_SLOTS = 2
MIN_TOKENS = 16  # fewer tokens than this are not worth showing: refuse instead
SHARED_D_OUT_LIMIT = 4096  # compute.multihead_view's fused module is built up to this d_out


@dataclass(frozen=True)
class Estimate:
    """Bytes of one view: ``result`` is what is kept (and cached); ``peak`` is everything alive while computing."""

    result: int
    peak: int


def module_bytes(kind: str, d_in: int, d_out: int, num_heads: int, context_length: int) -> int:
    """Parameters and buffers of a chapter-3 module (``inputs.MODULES``), float32 weights and a bool mask."""
    weights = 3 * d_in * d_out * FLOAT  # W_query, W_key, W_value (no bias)
    mask = context_length**2 * FLOAT  # the book's torch.triu(torch.ones(...)) buffer, float32
    if kind in ("SelfAttention_v1", "SelfAttention_v2"):
        return weights
    if kind == "CausalAttention":
        return weights + mask
    if kind == "MultiHeadAttentionWrapper":
        return num_heads * (weights + mask)
    if kind == "MultiHeadAttention":
        return weights + (d_out * d_out + d_out) * FLOAT + mask  # + out_proj with its bias
    raise ValueError(f"Unknown module {kind!r}.")


def trace_bytes(
    b: int, h: int, num_tokens: int, d_in: int, head_dim: int, d_out: int, dropout: bool, *, masked=True, out_proj=False
) -> int:
    """Every tensor of ``attention.trace`` as ``compute.trace_arrays`` keeps it: the scores unscaled, scaled and
    masked and the weights, (b, h, T, T) each, the weights after dropout and its mask when dropout is active,
    the causal mask (T, T); inputs, queries, keys, values and each head's context (views share the rest),
    and with ``out_proj`` the merged context and the output."""
    cells = b * h * num_tokens * num_tokens
    squares = cells * (4 * FLOAT + ((FLOAT + BOOL) if dropout else 0)) + (num_tokens**2 * BOOL if masked else 0)
    vectors = b * num_tokens * (d_in + 4 * h * head_dim) * FLOAT
    if out_proj:
        vectors += b * num_tokens * (h * head_dim + d_out) * FLOAT
    return squares + vectors


def multihead_bytes(num_tokens: int, d_in: int, d_out: int, h: int, ctx: int, dropout: bool) -> Estimate:
    """``compute.multihead_view``: the wrapper (h heads of d_out) and ``MultiHeadAttention`` (h heads of d_out / h),
    then, up to ``SHARED_D_OUT_LIMIT``, a fused module of the wrapper's weights and both outputs."""
    modules = module_bytes("MultiHeadAttentionWrapper", d_in, d_out, h, ctx)
    modules += module_bytes("MultiHeadAttention", d_in, d_out, h, ctx)
    wrapper = trace_bytes(1, h, num_tokens, d_in, d_out, h * d_out, dropout)
    efficient = trace_bytes(1, h, num_tokens, d_in, d_out // h, d_out, dropout, out_proj=True)
    heads = num_tokens * h * d_out * FLOAT  # one (T, h * d_out) output
    result = 2 * h * num_tokens**2 * FLOAT + num_tokens**2 * BOOL + heads + 2 * num_tokens * d_out * FLOAT
    panel = 2 * h * num_tokens**2 * (FLOAT + (BOOL if dropout else 0)) + heads + num_tokens * d_out * FLOAT
    result += panel + (d_out + 1) * d_out * FLOAT  # what the cell panel reads: scores, draws, values, out_proj
    fused = 0
    if h * d_out <= SHARED_D_OUT_LIMIT:
        shared = module_bytes("MultiHeadAttention", d_in, h * d_out, h, ctx)
        forward = trace_bytes(1, h, num_tokens, d_in, d_out, h * d_out, False, out_proj=True)
        fused = shared + forward + (2 if dropout else 1) * heads
        result += (2 if dropout else 1) * heads  # the fused output, and the wrapper's own in training mode
    return Estimate(result=result, peak=modules + wrapper + efficient + fused + efficient // 2)


def trace_view_bytes(num_tokens: int, d_in: int, d_out: int, ctx: int, dropout: bool) -> Estimate:
    """``compute.module_trace`` of ``CausalAttention`` (one head), which the Causal mask and Dropout pages share."""
    trace = trace_bytes(1, 1, num_tokens, d_in, d_out, d_out, dropout)
    return Estimate(result=trace, peak=trace + module_bytes("CausalAttention", d_in, d_out, 1, ctx))


def mask_bytes(num_tokens: int, d_in: int, d_out: int, ctx: int) -> Estimate:
    """``compute.mask_view``: an eval-mode trace, then six (T, T) comparisons of the masking routes and a mask."""
    trace = trace_view_bytes(num_tokens, d_in, d_out, ctx, False)
    own = 6 * num_tokens**2 * FLOAT + num_tokens**2 * BOOL
    return Estimate(result=trace.result + own, peak=trace.peak + own + 3 * num_tokens**2 * FLOAT)


def dropout_bytes(num_tokens: int, d_in: int, d_out: int, ctx: int, dropout: bool) -> Estimate:
    """``compute.dropout_view``: an eval-mode trace (not kept), the weights, one draw and the average of many."""
    trace = trace_view_bytes(num_tokens, d_in, d_out, ctx, False)
    own = num_tokens**2 * ((3 if dropout else 2) * FLOAT + 2 * BOOL)
    return Estimate(result=own, peak=trace.peak + own + 4 * num_tokens**2 * FLOAT)


def batch_bytes(num_tokens: int, d_in: int, d_out: int, ctx: int, dropout: bool) -> Estimate:
    """``compute.batch_view``: two sentences (b = 2) through ``CausalAttention``, and each alone."""
    trace = trace_bytes(2, 1, num_tokens, d_in, d_out, d_out, dropout)
    result = (2 * num_tokens * d_in + 2 * num_tokens**2 + 2 * num_tokens * d_out) * FLOAT + num_tokens**2 * BOOL
    # for the cell panel: scaled scores, values, the draw, and the weights before dropout (the same array without it)
    result += ((4 if dropout else 2) * num_tokens**2 + 2 * num_tokens * d_out) * FLOAT + 2 * num_tokens**2 * BOOL
    alone = trace_bytes(1, 1, num_tokens, d_in, d_out, d_out, False)
    return Estimate(result=result, peak=module_bytes("CausalAttention", d_in, d_out, 1, ctx) + trace + alone)


def simplified_bytes(num_tokens: int, d_in: int) -> Estimate:
    """``compute.simplified_view``: (T, T) scores and weights; (T, d_in) inputs, contexts, contributions."""
    result = (2 * num_tokens**2 + 3 * num_tokens * d_in + 8 * num_tokens) * FLOAT
    return Estimate(result=result, peak=2 * result)


def qkv_bytes(num_tokens: int, d_in: int, d_out: int) -> Estimate:
    """``compute.qkv_view``: ``SelfAttention_v1``'s one-head trace (no mask), its weights, and v1 = v2."""
    trace = trace_bytes(1, 1, num_tokens, d_in, d_out, d_out, False, masked=False)
    weights = module_bytes("SelfAttention_v1", d_in, d_out, 1, 0)
    outputs = 2 * num_tokens * d_out * FLOAT
    return Estimate(result=trace + weights + outputs, peak=trace + 4 * weights + 2 * outputs)


VIEWS = ("multihead", "trace", "mask", "dropout", "batch", "simplified", "qkv")


@functools.lru_cache(maxsize=1024)  # pure in whole numbers: a rerun recomputes nothing
def estimate(kind: str, num_tokens: int, d_in: int, d_out: int, num_heads: int, ctx: int, dropout: bool) -> Estimate:
    """The bytes of view ``kind`` (one of ``VIEWS``) for num_tokens tokens; ``dropout``: training mode with p > 0."""
    if kind == "multihead":
        return multihead_bytes(num_tokens, d_in, d_out, num_heads, ctx, dropout)
    if kind == "trace":
        return trace_view_bytes(num_tokens, d_in, d_out, ctx, dropout)
    if kind == "mask":
        return mask_bytes(num_tokens, d_in, d_out, ctx)
    if kind == "dropout":
        return dropout_bytes(num_tokens, d_in, d_out, ctx, dropout)
    if kind == "batch":
        return batch_bytes(num_tokens, d_in, d_out, ctx, dropout)
    if kind == "simplified":
        return simplified_bytes(num_tokens, d_in)
    if kind == "qkv":
        return qkv_bytes(num_tokens, d_in, d_out)
    raise ValueError(f"Unknown view {kind!r}; choose one of: {', '.join(VIEWS)}.")


@dataclass(frozen=True)
class Plan:
    """What to compute: the first ``num_tokens`` tokens (all of them unless ``lowered``), and its estimate."""

    num_tokens: int
    estimate: Estimate
    lowered: bool
    note: str  # why fewer tokens, and which setting to lower; empty when nothing was lowered


def _mib(num_bytes: int) -> str:
    return f"{num_bytes / MIB:,.0f} MiB"


@functools.lru_cache(maxsize=1024)
def plan(
    kind: str,
    num_tokens: int,
    d_in: int,
    d_out: int,
    num_heads: int,
    ctx: int,
    dropout: bool,
    budget: int = VIEW_BUDGET,
) -> Plan:
    """Keep view ``kind`` of num_tokens tokens (context_length ``ctx``) within ``budget`` bytes while it is computed.

    When all num_tokens tokens do not fit, the most that do are computed, with context_length lowered to
    them. Raises ``ValueError`` naming the setting to lower when not even ``MIN_TOKENS`` fit (the
    weights alone are too large).
    """
    full = estimate(kind, num_tokens, d_in, d_out, num_heads, ctx, dropout)
    if full.peak <= budget:
        return Plan(num_tokens, full, lowered=False, note="")
    big = ("num_heads, " if kind == "multihead" else "") + "d_in or d_out"
    least = min(num_tokens, MIN_TOKENS)
    if estimate(kind, least, d_in, d_out, num_heads, least, dropout).peak > budget:
        raise ValueError(
            f"These settings need more memory than this shared server gives one view ({_mib(budget)}), even for "
            f"{least} tokens: lower {big}."
        )
    low, high = least, num_tokens  # the most tokens that fit lies in [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        fits = estimate(kind, middle, d_in, d_out, num_heads, middle, dropout).peak <= budget
        low, high = (middle, high) if fits else (low, middle)
    lower = big + (", or turn training mode off" if dropout else "")
    note = (
        f"Only the first {low:,} of {num_tokens:,} tokens are computed here: all of them would need about "
        f"{_mib(full.peak)}, more than this shared server gives one view ({_mib(budget)}). To see more "
        f"tokens, lower {lower}."
    )
    return Plan(low, estimate(kind, low, d_in, d_out, num_heads, low, dropout), lowered=True, note=note)


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6") if ctypes.util.find_library("c") else None


def release_memory() -> None:
    """Give freed heap memory back to the system (glibc's ``malloc_trim``), so one heavy view does not
    leave the server's memory high after its tensors are gone. Does nothing without glibc."""
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


# One queue for work that must take turns: heavy views, heavy page runs and the Speed page's timings.
#
# A ``TurnQueue`` lets ``slots`` holders in at once; the others wait first come, first served, and each
# waiter is told how many are ahead of it, so a page can say so instead of looking frozen.


class TurnQueue:
    """At most ``slots`` holders at once, the others waiting first come, first served.

    A holder who leaves wakes only the waiters who may now go in, not every waiter: when a teacher's move wakes
    fifty students, a whole-queue wake-up at each turn's end would be fifty times fifty threads taking Python's
    lock to find they must wait on."""

    def __init__(self, slots: int = 1) -> None:
        self.slots = slots
        self._lock = threading.Lock()  # holders and waiters are sessions' threads
        self._queue: collections.deque[tuple[int, threading.Event]] = collections.deque()  # holders, then waiters
        self._tickets = itertools.count()

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[int], None] = lambda ahead: None, poll_s: float = 0.5) -> Iterator[None]:
        """Wait for a place, calling ``on_wait(ahead)`` every ``poll_s`` seconds meanwhile (``ahead``: holders
        and waiters before this one). If ``on_wait`` raises (a visitor who reruns or leaves), the ticket is
        given up."""
        place = (next(self._tickets), threading.Event())  # set when this waiter may go in: only it wakes
        with self._lock:
            self._queue.append(place)
        try:
            while True:
                with self._lock:
                    ahead = self._queue.index(place)
                    if ahead < self.slots:
                        break
                    place[1].clear()  # under the lock: a wake-up after this is not missed
                on_wait(ahead)
                place[1].wait(timeout=poll_s)
            yield
        finally:
            with self._lock:
                self._queue.remove(place)
                for _, may_enter in itertools.islice(self._queue, self.slots):
                    may_enter.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)
