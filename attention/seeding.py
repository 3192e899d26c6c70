"""Seeding the way the book does, made safe for a server.

The chapter writes ``torch.manual_seed(123)`` before it builds a module or
draws dropout, and its printed numbers depend on that. ``seeded(seed)`` does
exactly this on torch's global generator, but inside ``fork_rng`` and under one
process-wide lock: concurrent callers take turns, and everyone else's random
state is the same afterwards as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

GLOBAL_RNG_LOCK = threading.RLock()


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """``torch.manual_seed(seed)`` for the duration of the block, then the old state back.

    With ``seed=None`` the global generator is used as it is (and advances), still under the lock.
    """
    with GLOBAL_RNG_LOCK:
        if seed is None:
            yield
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
