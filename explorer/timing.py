"""The Speed page's measurement: the chapter's attention timed six ways, one measurement at a time.

Results are ``remembered`` (``caching``) rather than ``st.cache_data``: the page draws a progress
bar while the measurement runs, and ``st.cache_data`` would replay that bar on every hit.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

import attention

from .caching import remembered
from .results import SpeedView
from .server import MACHINE_THREADS

SPEED_LOCK = threading.Lock()  # one measurement at a time on a server: timings need the machine to themselves
SPEED_ENTRIES = 16


def speed_devices() -> list[str]:
    """The devices the Speed page can measure on: the CPU, and CUDA when a GPU is present."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


WAITING = "Another user's measurement is running…"


@remembered(max_entries=SPEED_ENTRIES)
def speed_view(
    num_tokens: tuple[int, ...],
    d_model: int,
    num_heads: int,
    batch_size: int,
    repeats: int,
    device: str,
    *,
    on_progress=None,
) -> SpeedView:
    """Every implementation's median time and peak memory against T (``attention.measure``), at these sizes.

    Only one measurement runs at a time (``SPEED_LOCK``); the others wait, and while they
    wait ``on_progress(0, 0, WAITING)`` is called twice a second, so a user who leaves
    stops waiting. ``on_progress(done, total, label)`` also reports the measurement's progress.
    """
    report = on_progress or (lambda done, total, label: None)
    while not SPEED_LOCK.acquire(timeout=0.5):
        report(0, 0, WAITING)
    torch.set_num_threads(MACHINE_THREADS)  # this thread's timings use every core, as in a notebook
    try:
        result = attention.measure(
            list(attention.IMPLEMENTATIONS),
            num_tokens,
            d_model=d_model,
            num_heads=num_heads,
            batch_size=batch_size,
            repeats=repeats,
            device=device,
            on_progress=report,
        )
    finally:
        torch.set_num_threads(1)
        SPEED_LOCK.release()
    names = result.implementations
    return SpeedView(
        implementations=tuple(names),
        num_tokens=np.array(result.num_tokens),
        time_ms={name: np.array(result.time_ms[name]) for name in names},
        peak_memory_mib={name: np.array(result.peak_memory_mib[name]) for name in names},
        time_exponent={name: result.growth_exponent(name, "time_ms") for name in names},
        memory_exponent={name: result.growth_exponent(name, "peak_memory_mib") for name in names},
        max_abs_difference=dict(result.max_abs_difference),
        one_weights_mib=np.array(
            [attention.expected_attention_bytes(batch_size, num_heads, t) / 2**20 for t in result.num_tokens]
        ),
        sizes={"b": batch_size, "d_model": d_model, "num_heads": num_heads, "repeats": repeats},
        device=result.device if result.device != "cpu" else f"cpu, {MACHINE_THREADS} threads",
    )
