"""How the explorer caches what pages compute, and how cached results stay shared safely.

Views, modules and prepared inputs are ``shared_view``s: one read-only result for every session,
kept in ``SHARED``, which is bounded by bytes in all (``CACHE_BYTES``), by bytes per result
(``ENTRY_BYTES``: a larger result is computed for the run that asked and not kept), by entries per
function, and by age (``CACHE_TTL_S``). Tokenizations are shared views too (a 60,000-character paste
is megabytes of strings); the scaling lab's small result is ``st.cache_data`` with a ttl.
``remembered`` keeps results that are computed while a page draws progress (Streamlit would replay
that drawing on a cache hit).

The ``st.cache_data`` and ``st.cache_resource`` functions that remain (the scaling lab, the trained
models' inputs, modules and head summaries) would each keep a lock for every key they ever computed
(Streamlit 1.67, ``benchmarks/streamlit_lock_growth.py``); ``bound_streamlit_cache_locks``, applied
on import, keeps a key's lock only while a run holds it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import threading
import time
import weakref
from collections import OrderedDict
from types import MappingProxyType

import numpy as np

from .lazy import loaded

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
        self._lock = threading.Lock()

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


def shared_view(max_entries: int, *, on_miss=None):
    """A cached function whose result is made ``read_only`` and shared by every session in ``SHARED``.

    ``st.cache_data`` pickles a result when it stores it and unpickles a copy on every hit: 54 ms
    for ``mask_view``'s 38 MiB at T = 1,024, paid again at every step. A shared read-only result
    costs nothing on a hit. Sessions asking for the same key at once compute it once. ``on_miss``,
    when given, is called with the arguments and returns a context manager that the computation
    runs in (``compute`` waits there for a place among the heavy computations).
    ``function.clear()`` forgets its results.
    """

    def decorate(function):
        name = f"{function.__module__}.{function.__qualname__}"
        computing: dict[tuple, threading.Lock] = {}
        computing_lock = threading.Lock()
        missing = object()

        @functools.wraps(function)
        def cached(*args, **kwargs):
            key = (name, args, tuple(sorted(kwargs.items())))
            value = SHARED.get(key, missing)
            if value is not missing:
                return value
            with computing_lock:
                lock = computing.setdefault(key, threading.Lock())
            try:
                with lock:
                    value = SHARED.get(key, missing)
                    if value is missing:
                        with on_miss(*args, **kwargs) if on_miss else contextlib.nullcontext():
                            value = read_only(function(*args, **kwargs))
                        SHARED.put(key, value, max_entries)
            finally:
                with computing_lock:
                    computing.pop(key, None)
            return value

        cached.clear = lambda: SHARED.clear(name)
        return cached

    return decorate


def remembered(max_entries: int):
    """Keep a function's last ``max_entries`` results, keyed by its positional arguments,
    shared by every session and made ``read_only``.

    Keyword arguments are not part of the key: they carry a progress callback. Unlike
    ``st.cache_data``, nothing drawn while computing is recorded and replayed on a hit.
    ``function.clear()`` forgets every result; ``function.get(*args)`` looks one up without computing.
    """

    def decorate(function):
        results: OrderedDict[tuple, object] = OrderedDict()
        lock = threading.Lock()

        @functools.wraps(function)
        def cached(*args, **kwargs):
            with lock:
                if args in results:
                    results.move_to_end(args)
                    return results[args]
            result = read_only(function(*args, **kwargs))
            if size_of(result) > ENTRY_BYTES:
                return result
            with lock:
                results[args] = result
                while len(results) > max_entries:
                    results.popitem(last=False)
            return result

        def get(*args):
            """The remembered result for these arguments, or None; computes nothing."""
            with lock:
                return results.get(args)

        cached.clear = results.clear
        cached.get = get
        return cached

    return decorate


class KeyLock:
    """A ``threading.Lock`` that can be weakly referenced, so that a table of locks keeps only those in use."""

    __slots__ = ("__weakref__", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc) -> None:
        self._lock.release()


def _compute_value_lock(cache, value_key: str) -> KeyLock:
    """``Cache.compute_value_lock`` whose table holds each key's lock only while some run holds the lock.

    Runs computing or waiting for the same key at once still share one lock: each keeps a reference to it
    until it is done; after that the lock and its key leave the table.
    """
    with cache._value_locks_lock:
        if not isinstance(cache._value_locks, weakref.WeakValueDictionary):
            cache._value_locks = weakref.WeakValueDictionary()
        lock = cache._value_locks.get(value_key)
        if lock is None:
            lock = cache._value_locks[value_key] = KeyLock()
        return lock


def bound_streamlit_cache_locks() -> None:
    """Keep Streamlit's cached functions from holding a lock for every key they ever computed.

    Streamlit 1.67's ``Cache.compute_value_lock`` fills ``Cache._value_locks``, a ``defaultdict(threading.Lock)``,
    with one lock per distinct key and never removes one, however small ``max_entries`` is: with a typed
    sentence in the key, the server grows by about 190 bytes for every sentence ever typed
    (``benchmarks/streamlit_lock_growth.py``). Replaces that method, once, for every cache.
    """
    from streamlit.runtime.caching.cache_utils import Cache

    if Cache.compute_value_lock is not _compute_value_lock:
        Cache.compute_value_lock = _compute_value_lock


bound_streamlit_cache_locks()
