"""How the explorer caches what pages compute, and how cached results stay shared safely.

Views, modules and prepared inputs are ``shared_view``s: one read-only result for every session,
kept in ``SHARED``, which is bounded by bytes in all (``CACHE_BYTES``), by bytes per result
(``ENTRY_BYTES``: a larger result is computed for the run that asked and not kept), by entries per
function, and by age (``CACHE_TTL_S``). Tokenizations are shared views too (a 60,000-character paste
is megabytes of strings); the scaling lab's small result is ``st.cache_data`` with a ttl.
Measurements that draw progress while they run (Speed, Generate's token times) are shared views too:
their progress callback is not part of the key, and nothing drawn is replayed on a hit.

This and ``functools.lru_cache`` (for pure functions of a few numbers or strings) are the app's only
memoisation. Streamlit's ``st.cache_data`` pickles a result at every hit (54 ms for ``mask_view``'s 38 MiB
at T = 1,024) and ``st.cache_resource`` bounds entries but not bytes; both keep a lock for every key
they ever computed in Streamlit 1.67 (about 190 bytes per typed sentence; BENCHMARKS.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import threading
import time
from collections import OrderedDict
from types import MappingProxyType

import numpy as np

from explorer.runtime import loaded

MIB = 2**20
CACHE_ENTRIES = 32
VIEW_ENTRIES = 8  # the batch and multi-head views keep (b or h, T, T) arrays
CACHE_BYTES = 320 * MIB  # every shared result together
ENTRY_BYTES = 96 * MIB  # the largest result kept; larger ones are computed for the run that asks
CACHE_TTL_S = 600.0  # a result unused this long is dropped


def size_of(value, seen: set[int] | None = None) -> int:
    """The bytes of numpy arrays, torch tensors, module parameters and strings reachable from ``value``,
    each memory block counted once (an array that views a tensor counts its whole block)."""
    seen = set() if seen is None else seen
    torch = loaded("torch")  # not imported (or still importing in another thread): nothing here is a tensor
    if torch is not None and isinstance(value, torch.nn.Module):
        return sum(size_of(t, seen) for t in (*value.parameters(), *value.buffers()))
    if torch is not None and isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        if storage.data_ptr() in seen:
            return 0
        seen.add(storage.data_ptr())
        return storage.nbytes()
    if isinstance(value, np.ndarray):
        base = value
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base.__array_interface__["data"][0] in seen:
            return 0
        seen.add(base.__array_interface__["data"][0])
        return max(base.nbytes, value.nbytes)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(size_of(getattr(value, field.name), seen) for field in dataclasses.fields(value))
    if isinstance(value, dict | MappingProxyType):
        return sum(size_of(item, seen) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(size_of(item, seen) for item in value)
    if isinstance(value, str):
        return sys.getsizeof(value)
    return 0


class SharedCache:
    """One process-wide store of read-only results, least recently used dropped first.

    Bounded by ``max_bytes`` in all, ``entry_bytes`` per result, entries per function name (the
    first item of each key) and ``ttl_s`` since last use, checked whenever the cache is used.
    """

    def __init__(self, max_bytes: int, entry_bytes: int, ttl_s: float) -> None:
        self.max_bytes, self.entry_bytes, self.ttl_s = max_bytes, entry_bytes, ttl_s
        self._entries: OrderedDict[tuple, tuple[object, int, float]] = OrderedDict()  # key -> (value, bytes, used)
        self._bytes = 0
        # sessions run on their own threads; those that ask for a key another is computing wait for its end
        self._lock = threading.Condition()
        self._computing: set[tuple] = set()  # the keys some session is computing (``computing``)

    def _drop(self, key: tuple) -> None:
        self._bytes -= self._entries.pop(key)[1]

    def _expire(self, now: float) -> None:
        while self._entries:
            key, (_, _, used) = next(iter(self._entries.items()))
            if now - used <= self.ttl_s:
                return
            self._drop(key)

    def get(self, key: tuple, default=None):
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            if key not in self._entries:
                return default
            value, size, _ = self._entries[key]
            self._entries[key] = (value, size, now)
            self._entries.move_to_end(key)
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

    @contextlib.contextmanager
    def computing(self, key: tuple):
        """Compute ``key``'s value in the block, one session at a time: sessions asking for it at once compute
        it once (the others find it when their turn comes)."""
        with self._lock:
            self._lock.wait_for(lambda: key not in self._computing)
            self._computing.add(key)
        try:
            yield
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
SHARED = SharedCache(CACHE_BYTES, ENTRY_BYTES, CACHE_TTL_S)


def read_only(value):
    """``value`` with every numpy array in it made read-only, every dict a read-only mapping and every list a tuple.

    A frozen dataclass comes back as a copy whose fields are read-only too. ``shared_view``
    results are one object shared by every session: a page that wrote into one would change
    what other students see, so writing fails loudly instead.
    """
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
    """A cached function whose result is made ``read_only`` and shared by every session in ``SHARED``.

    A shared read-only result costs nothing on a hit. Sessions asking for the same key at once compute it
    once. Keyword arguments named ``on_…`` are callbacks and not part of the key: ``on_miss``, a context
    manager factory that a computation runs in (``views.run.budgeted`` waits there for a place among the
    heavy computations), or ``on_progress``, which a measurement calls as it goes.
    ``function.clear()`` forgets its results; ``function.get(*args)`` looks one up without computing.
    """

    def decorate(function):
        name = f"{function.__module__}.{function.__qualname__}"

        def key_of(args, kwargs) -> tuple:
            return (name, args, tuple(sorted((k, v) for k, v in kwargs.items() if not k.startswith("on_"))))

        @functools.wraps(function)
        def cached(*args, on_miss=None, **kwargs):
            key = key_of(args, kwargs)
            value = SHARED.get(key, MISSING)
            if value is not MISSING:
                return value
            with SHARED.computing(key):
                value = SHARED.get(key, MISSING)
                if value is MISSING:
                    with on_miss() if on_miss else contextlib.nullcontext():
                        value = read_only(function(*args, **kwargs))
                    SHARED.put(key, value, max_entries)
            return value

        def get(*args, **kwargs):
            """The shared result for these arguments, or None; computes nothing."""
            return SHARED.get(key_of(args, kwargs))

        cached.clear = lambda: SHARED.clear(name)
        cached.get = get
        return cached

    return decorate
