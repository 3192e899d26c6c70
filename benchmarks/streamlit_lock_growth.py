"""Minimal reproduction: ``st.cache_data`` keeps a lock for every key it ever computed, beyond ``max_entries``.

Written as an upstream report; it needs only Streamlit, not this app.

**Version.** Streamlit 1.67.0 (``streamlit/runtime/caching/cache_utils.py``), Python 3.11, Linux.

**Steps.** ``python -m benchmarks.streamlit_lock_growth [--calls 20000] [--max-entries 8]``: one
``@st.cache_data(max_entries=8)`` function called with ``--calls`` distinct arguments, in bare mode
(no ``streamlit run``: the cache is the same class a server uses, in memory). It prints, every fifth
of the calls, how many values the cache holds, how many locks ``Cache._value_locks`` holds, and the
Python memory still allocated (``tracemalloc``, after ``gc.collect()``).

**Expected.** Everything a bounded cache keeps is bounded: at most ``max_entries`` values and, once
no call is computing, no per-key lock (a lock is only needed while a key is being computed).

**Actual.** The values stay at ``max_entries``, but ``Cache._value_locks`` (a ``defaultdict(threading.Lock)``
filled by ``compute_value_lock``) gains one entry per distinct key and never loses one (only
``clear()`` empties it; ``write_result`` says it *could* delete the key and does not): 20,000 locks and
about 3 MiB after 20,000 keys, growing linearly. In a server, every distinct argument a cached
function sees (each sentence a student types) adds one lock and its 64-character key for the life of
the process.

``--bounded`` applies this app's workaround first (``explorer.runtime.patches.bound_streamlit_cache_locks``:
each key's lock lives only while a caller holds it), to show that the locks then stay bounded.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc

import streamlit as st
from streamlit.logger import set_log_level


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="distinct arguments to call the function with")
    parser.add_argument("--max-entries", type=int, default=8)
    parser.add_argument("--bounded", action="store_true", help="apply explorer.runtime.patches's workaround first")
    args = parser.parse_args(argv)
    set_log_level("error")  # bare mode warns that there is no runtime
    if args.bounded:
        from explorer.runtime.patches import bound_streamlit_cache_locks

        bound_streamlit_cache_locks()

    @st.cache_data(max_entries=args.max_entries, show_spinner=False)
    def square(number: int) -> int:
        return number * number

    cache = square._info.get_function_cache(square._function_key)
    print(f"Streamlit {st.__version__}, Python {sys.version.split()[0]}, workaround: {args.bounded}")
    tracemalloc.start()
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    rows = []
    for number in range(1, args.calls + 1):
        assert square(number) == number * number
        if number % max(1, args.calls // 5) == 0:
            gc.collect()
            grown = (tracemalloc.get_traced_memory()[0] - base) / 2**20
            row = {
                "calls": number,
                "values": len(cache.storage._mem_cache),
                "locks": len(cache._value_locks),
                "mib": grown,
            }
            rows.append(row)
            print(f"after {number:6d} keys: {row['values']:3d} values, {row['locks']:6d} locks, {grown:5.2f} MiB kept")
    tracemalloc.stop()
    return rows[-1]


if __name__ == "__main__":
    main()
