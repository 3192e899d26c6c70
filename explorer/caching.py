"""How the explorer caches what pages compute, and how cached results stay shared safely.

Modules and the tokenizer are ``st.cache_resource`` (built once, shared, never mutated).
Views of T × T arrays are ``shared_view``s: one read-only result for every session, with
bounded entries. Small results are ``st.cache_data``. ``remembered`` keeps results that are
computed while a page draws progress (Streamlit would replay that drawing on a cache hit).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections import OrderedDict
from types import MappingProxyType

import numpy as np
import streamlit as st

CACHE_ENTRIES = 32
VIEW_ENTRIES = 8  # the batch and multi-head views keep (b or h, T, T) arrays, up to 64 MiB each


def read_only(value):
    """``value`` with every numpy array in it made read-only and every dict a read-only mapping.

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
        return type(value)(read_only(item) for item in value)
    return value


def shared_view(max_entries: int):
    """``st.cache_resource`` for a view of T × T arrays, with its result made ``read_only``.

    ``st.cache_data`` pickles a result when it stores it and unpickles a copy on
    every hit: 54 ms for ``mask_view``'s 38 MiB at T = 1,024, paid again at every
    step. A shared read-only result costs nothing on a hit.
    """

    def decorate(function):
        @functools.wraps(function)
        def made_read_only(*args, **kwargs):
            return read_only(function(*args, **kwargs))

        return st.cache_resource(max_entries=max_entries, show_spinner=False)(made_read_only)

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
