"""One queue for work that must take turns: heavy views, heavy page runs and the Speed page's timings.

A ``TurnQueue`` lets ``slots`` holders in at once; the others wait first come, first served, and each
waiter is told how many are ahead of it, so a page can say so instead of looking frozen.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator


class TurnQueue:
    """At most ``slots`` holders at once, the others waiting first come, first served."""

    def __init__(self, slots: int = 1) -> None:
        self.slots = slots
        self._changed = threading.Condition()
        self._queue: collections.deque[int] = collections.deque()  # holders first, then waiters in order
        self._tickets = itertools.count()

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[int], None] = lambda ahead: None, poll_s: float = 0.5) -> Iterator[None]:
        """Wait for a place, calling ``on_wait(ahead)`` every ``poll_s`` seconds meanwhile (``ahead``: holders
        and waiters before this one). If ``on_wait`` raises (a visitor who reruns or leaves), the ticket is
        given up."""
        ticket = next(self._tickets)
        with self._changed:
            self._queue.append(ticket)
        try:
            while True:
                with self._changed:
                    ahead = self._queue.index(ticket)
                    if ahead < self.slots:
                        break
                on_wait(ahead)
                with self._changed:
                    self._changed.wait(timeout=poll_s)
            yield
        finally:
            with self._changed:
                self._queue.remove(ticket)
                self._changed.notify_all()

    def __len__(self) -> int:
        with self._changed:
            return len(self._queue)
