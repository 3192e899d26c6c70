"""The server's memory: a view's bytes estimated before computing it, the one queue for work that takes turns,
and the cache that shares computed results read-only with every session. It does not import Streamlit.

Anyone may ask for 16 heads of d_out = 1,024 on 1,024 tokens in training mode: about 1 GiB while computed, as much
as a shared server has. So ``estimate`` (checked against measured sizes in ``tests/test_memory.py``) and ``plan`` keep
a view within ``VIEW_BUDGET``: all tokens, the first tokens that fit with a note, or a refusal naming the setting.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import ctypes
import ctypes.util
import dataclasses
import functools
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import MappingProxyType

import numpy as np

from explorer.runtime import loaded

MIB = 2**20
FLOAT = 4  # bytes per float32
BOOL = 1
VIEW_BUDGET = 320 * MIB  # the most one view may need while it is computed
HEAVY_BYTES = 48 * MIB  # a view estimated above this waits for a place in HEAVY_TURNS
HEAVY_SLOTS = 2
MIN_TOKENS = 16  # fewer tokens than this are not worth showing: refuse instead
SHARED_D_OUT_LIMIT = 4096  # views.chapter.multihead_view's fused module is built up to this d_out


@dataclasses.dataclass(frozen=True)
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
    """``views.chapter.TraceArrays``: four (b, h, T, T) scores and weights (six with dropout), the (T, T) causal mask,
    inputs, queries, keys, values and each head's context, and with ``out_proj`` the merged context and output."""
    cells = b * h * num_tokens * num_tokens
    squares = cells * (4 * FLOAT + ((FLOAT + BOOL) if dropout else 0)) + (num_tokens**2 * BOOL if masked else 0)
    vectors = b * num_tokens * (d_in + 4 * h * head_dim) * FLOAT
    if out_proj:
        vectors += b * num_tokens * (h * head_dim + d_out) * FLOAT
    return squares + vectors


VIEWS = ("multihead", "trace", "mask", "dropout", "batch", "simplified", "qkv")


@functools.lru_cache(maxsize=1024)  # pure in whole numbers: a rerun recomputes nothing
def estimate(kind: str, num_tokens: int, d_in: int, d_out: int, num_heads: int, ctx: int, dropout: bool) -> Estimate:
    """The bytes of ``views.chapter``'s view ``kind`` (one of ``VIEWS``); ``dropout``: training mode with p > 0."""
    square, causal = num_tokens**2 * FLOAT, module_bytes("CausalAttention", d_in, d_out, 1, ctx)
    eval_trace = trace_bytes(1, 1, num_tokens, d_in, d_out, d_out, False)  # CausalAttention's, one head
    if kind == "multihead":  # the wrapper (h heads of d_out), MultiHeadAttention's h heads of d_out / h, then,
        h = num_heads  # up to ``SHARED_D_OUT_LIMIT``, a fused module of the wrapper's weights and both outputs
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
    if kind == "trace":  # ``module_trace`` of CausalAttention: the Causal mask and Dropout pages share it
        trace = trace_bytes(1, 1, num_tokens, d_in, d_out, d_out, dropout)
        return Estimate(result=trace, peak=trace + causal)
    if kind == "mask":  # an eval-mode trace, then six (T, T) comparisons of the masking routes and a mask
        own = 6 * square + num_tokens**2 * BOOL
        return Estimate(result=eval_trace + own, peak=eval_trace + causal + own + 3 * square)
    if kind == "dropout":  # an eval-mode trace (not kept), the weights, one draw and the average of many
        own = num_tokens**2 * ((3 if dropout else 2) * FLOAT + 2 * BOOL)
        return Estimate(result=own, peak=eval_trace + causal + own + 4 * square)
    if kind == "batch":  # two sentences (b = 2) through ``CausalAttention``, and each alone
        trace = trace_bytes(2, 1, num_tokens, d_in, d_out, d_out, dropout)
        result = (2 * num_tokens * d_in + 2 * num_tokens**2 + 2 * num_tokens * d_out) * FLOAT + num_tokens**2 * BOOL
        # for the cell panel: scaled scores, values, the draw, and the weights before dropout (the same without it)
        result += ((4 if dropout else 2) * num_tokens**2 + 2 * num_tokens * d_out) * FLOAT + 2 * num_tokens**2 * BOOL
        return Estimate(result=result, peak=causal + trace + eval_trace)
    if kind == "simplified":  # (T, T) scores and weights; (T, d_in) inputs, contexts, contributions
        result = (2 * num_tokens**2 + 3 * num_tokens * d_in + 8 * num_tokens) * FLOAT
        return Estimate(result=result, peak=2 * result)
    if kind == "qkv":  # ``SelfAttention_v1``'s one-head trace (no mask), its weights, and v1 = v2
        trace = trace_bytes(1, 1, num_tokens, d_in, d_out, d_out, False, masked=False)
        weights = module_bytes("SelfAttention_v1", d_in, d_out, 1, 0)
        outputs = 2 * num_tokens * d_out * FLOAT
        return Estimate(result=trace + weights + outputs, peak=trace + 4 * weights + 2 * outputs)
    raise ValueError(f"Unknown view {kind!r}; choose one of: {', '.join(VIEWS)}.")


@dataclasses.dataclass(frozen=True)
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
    """Keep view ``kind`` of num_tokens tokens (context_length ``ctx``) within ``budget`` bytes while it is computed:
    the most tokens that fit, with context_length lowered to them, or a refusal when even ``MIN_TOKENS`` do not."""
    full = estimate(kind, num_tokens, d_in, d_out, num_heads, ctx, dropout)
    if full.peak <= budget:
        return Plan(num_tokens, full, lowered=False, note="")

    def too_big(tokens: int) -> bool:
        return estimate(kind, tokens, d_in, d_out, num_heads, tokens, dropout).peak > budget

    big = ("num_heads, " if kind == "multihead" else "") + "d_in or d_out"
    least = min(num_tokens, MIN_TOKENS)
    if too_big(least):
        raise ValueError(
            f"These settings need more memory than this shared server gives one view ({_mib(budget)}), even for "
            f"{least} tokens: lower {big}."
        )
    low = least + bisect.bisect_left(range(least + 1, num_tokens), True, key=too_big)  # peaks grow with the tokens
    lower = big + (", or turn training mode off" if dropout else "")
    note = (
        f"Only the first {low:,} of {num_tokens:,} tokens are computed here: all of them would need about "
        f"{_mib(full.peak)}, more than this shared server gives one view ({_mib(budget)}). To see more "
        f"tokens, lower {lower}."
    )
    return Plan(low, estimate(kind, low, d_in, d_out, num_heads, low, dropout), lowered=True, note=note)


_LIBC = ctypes.CDLL(name) if (name := ctypes.util.find_library("c")) else None


def release_memory() -> None:
    """Give freed heap memory back to the system after a heavy view (glibc's ``malloc_trim``; nothing without it)."""
    if hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


class TurnQueue:
    """The one queue for work that takes turns (heavy views and page runs, Speed timings, a room's wake-ups): at most
    ``slots`` holders, the others first come, first served, each told how many are ahead so a page need not look
    frozen. A turn's end wakes only who may now go in, not every waiter (fifty students after a teacher's move)."""

    def __init__(self, slots: int = 1) -> None:
        self.slots = slots
        self._lock = threading.Lock()  # holders and waiters are sessions' threads
        self._queue: collections.deque[threading.Event] = collections.deque()  # holders, then waiters

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[int], None] = lambda ahead: None, poll_s: float = 0.5) -> Iterator[None]:
        """Wait for a place, calling ``on_wait(ahead)`` every ``poll_s`` s meanwhile; if it raises (a visitor who
        reruns or leaves), the place is given up."""
        place = threading.Event()  # set when this waiter may go in: only it wakes
        with self._lock:
            self._queue.append(place)
        try:
            while True:
                with self._lock:
                    ahead = self._queue.index(place)
                    if ahead < self.slots:
                        break
                    place.clear()  # under the lock: a wake-up after this is not missed
                on_wait(ahead)
                place.wait(timeout=poll_s)
            yield
        finally:
            with self._lock:
                self._queue.remove(place)
                for may_enter in itertools.islice(self._queue, self.slots):
                    may_enter.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)


# What pages compute is a ``shared_view``: one read-only result for every session in ``SHARED``. Not
# ``st.cache_data`` (a copy at every hit) nor ``st.cache_resource`` (bounds entries, not bytes); both also keep a
# lock per key ever computed (ARCHITECTURE.md, "Caching and threads"; BENCHMARKS.md, "What the server's settings buy").
CACHE_ENTRIES = 32
VIEW_ENTRIES = 8  # the batch and multi-head views keep (b or h, T, T) arrays


def size_of(value, seen: set[int] | None = None) -> int:
    """The bytes of arrays, tensors, module parameters and strings reachable from ``value``, each memory block
    counted once (an array that views a tensor counts its whole block)."""
    seen = set() if seen is None else seen
    torch = loaded("torch")  # not imported (or still importing in another thread): nothing here is a tensor
    if torch is not None and isinstance(value, torch.nn.Module):
        return sum(size_of(t, seen) for t in (*value.parameters(), *value.buffers()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(size_of(getattr(value, field.name), seen) for field in dataclasses.fields(value))
    if isinstance(value, dict | MappingProxyType):
        return sum(size_of(item, seen) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(size_of(item, seen) for item in value)
    if isinstance(value, str):
        return sys.getsizeof(value)
    if torch is not None and isinstance(value, torch.Tensor):
        block, size = value.untyped_storage().data_ptr(), value.untyped_storage().nbytes()
    elif isinstance(value, np.ndarray):
        base = value
        while isinstance(base.base, np.ndarray):
            base = base.base
        block, size = base.__array_interface__["data"][0], max(base.nbytes, value.nbytes)
    else:
        return 0
    if block in seen:
        return 0
    seen.add(block)
    return size


class SharedCache:
    """A process-wide store of read-only results, least recently used dropped first; bounded by ``max_bytes`` in all,
    ``entry_bytes`` per result (larger ones are not kept), entries per function (a key's first item) and ``ttl_s``."""

    def __init__(self, max_bytes: int, entry_bytes: int, ttl_s: float) -> None:
        self.max_bytes, self.entry_bytes, self.ttl_s = max_bytes, entry_bytes, ttl_s
        self._entries: dict[tuple, tuple[object, int, float]] = {}  # key -> (value, bytes, used), oldest use first
        self._bytes = 0
        # sessions run on their own threads; those that ask for a key another is computing wait for its end
        self._lock = threading.Condition()
        self._computing: set[tuple] = set()  # the keys some session is computing (``computed``)

    def _drop(self, key: tuple) -> None:
        self._bytes -= self._entries.pop(key)[1]

    def _expire(self, now: float) -> None:
        while self._entries and now - next(iter(self._entries.values()))[2] > self.ttl_s:  # the oldest use is first
            self._drop(next(iter(self._entries)))

    def get(self, key: tuple, default=None):
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            if key not in self._entries:
                return default
            value, size, _ = self._entries.pop(key)
            self._entries[key] = (value, size, now)  # last: the most recently used
            return value

    def put(self, key: tuple, value, max_entries: int) -> bool:
        """Keep ``value`` under ``key`` unless it is larger than ``entry_bytes``; says whether it was kept."""
        size = size_of(value)
        if size > self.entry_bytes:
            return False
        with self._lock:
            if key in self._entries:
                self._drop(key)
            same_function = [k for k in self._entries if k[0] == key[0]]
            for old in same_function[: max(0, len(same_function) - max_entries + 1)]:
                self._drop(old)
            while self._entries and self._bytes + size > self.max_bytes:
                self._drop(next(iter(self._entries)))
            self._entries[key] = (value, size, time.monotonic())
            self._bytes += size
            return True

    def computed(self, key: tuple, compute: Callable[[], object], max_entries: int):
        """``key``'s value, else ``compute()``'s, kept: sessions asking at once compute it once, the others wait."""
        with self._lock:
            self._lock.wait_for(lambda: key not in self._computing)
            if (value := self.get(key, MISSING)) is not MISSING:
                return value
            self._computing.add(key)
        try:
            value = compute()
            self.put(key, value, max_entries)
            return value
        finally:
            with self._lock:
                self._computing.discard(key)
                self._lock.notify_all()

    def clear(self, name: str | None = None) -> None:
        """Forget every result, or those of function ``name``."""
        with self._lock:
            for key in [k for k in self._entries if name is None or k[0] == name]:
                self._drop(key)

    @property
    def bytes(self) -> int:
        with self._lock:
            self._expire(time.monotonic())
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


MISSING = object()  # what ``SharedCache.get`` returns for a key it does not hold
# 320 MiB in all; a result over 96 MiB is not kept (only its run uses it); one unused for 10 minutes is dropped
SHARED = SharedCache(max_bytes=320 * MIB, entry_bytes=96 * MIB, ttl_s=600.0)


def read_only(value):
    """``value`` with its arrays read-only, dicts read-only mappings, lists tuples and dataclasses copies of such:
    a page that wrote into a ``shared_view`` result would change what other students see."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {field.name: read_only(getattr(value, field.name)) for field in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    if isinstance(value, dict | MappingProxyType):
        return MappingProxyType({key: read_only(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(read_only(item) for item in value)
    return value


def shared_view(max_entries: int):
    """A function whose ``read_only`` result every session shares in ``SHARED``, computed once for sessions asking at
    once. ``on_…`` keywords are not in the key: ``on_miss``, a context manager a computation runs in (a heavy turn),
    or ``on_progress``. ``function.clear()`` forgets its results; ``function.get(*args)`` looks one up."""

    def decorate(function):
        name = f"{function.__module__}.{function.__qualname__}"

        def key_of(args, kwargs) -> tuple:
            return (name, args, tuple(sorted((k, v) for k, v in kwargs.items() if not k.startswith("on_"))))

        @functools.wraps(function)
        def cached(*args, on_miss=None, **kwargs):
            def compute():
                with on_miss() if on_miss else contextlib.nullcontext():
                    return read_only(function(*args, **kwargs))

            return SHARED.computed(key_of(args, kwargs), compute, max_entries)

        cached.clear = lambda: SHARED.clear(name)
        cached.get = lambda *args, **kwargs: SHARED.get(key_of(args, kwargs))
        return cached

    return decorate
