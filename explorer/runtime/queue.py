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
