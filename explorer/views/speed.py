"""The Speed page's measurement: the chapter's attention timed seven ways, one measurement at a time.

A shared server runs one measurement at a time, first come first served (``SPEED_QUEUE``), and each
stops within ``SPEED_BUDGET_S`` seconds (``attention.measure``'s ``time_budget_s``), so a visitor
waits at most one budget per measurement ahead of theirs and is told their place in the queue.
Results are shared views (``runtime.memory``): the progress callback is not part of the key, nothing
drawn is replayed, and a result measured before is returned at once, without queueing.

``SPEED_QUEUE`` is the same ``runtime.memory.TurnQueue`` the heavy views take turns in, with one slot."""

from __future__ import annotations

import numpy as np
import torch

import attention
from explorer.results import SpeedView
from explorer.runtime.memory import TurnQueue, shared_view
from explorer.runtime.server import machine_threads

SPEED_ENTRIES = 16
SPEED_BUDGET_S = 20.0  # each measurement stops within this; the queue's wait is a multiple of it
SPEED_QUEUE = TurnQueue()


def speed_devices() -> list[str]:
    """The devices the Speed page can measure on: the CPU, and CUDA when a GPU is present."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def waiting(ahead: int) -> str:
    """The progress text while ``ahead`` measurements run or wait before this one."""
    others = "1 measurement is" if ahead == 1 else f"{ahead} measurements are"
    return f"{others} ahead of yours in the queue; each stops within {SPEED_BUDGET_S:.0f} s."


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
    """``measured`` at these sizes: a result measured before at once, otherwise in turn (``SPEED_QUEUE``).

    While it waits, ``on_progress(0, 0, waiting(ahead))`` is called twice a second, so a visitor
    who leaves stops waiting.
    """
    sizes = (num_tokens, d_model, num_heads, batch_size, repeats, device)
    report = on_progress or (lambda done, total, label: None)
    hit = measured.get(*sizes)
    if hit is not None:
        return hit
    with SPEED_QUEUE.turn(lambda ahead: report(0, 0, waiting(ahead))):
        return measured(*sizes, on_progress=report)


def budget_note(view: SpeedView) -> str:
    """What the time budget left out of ``view``, in words; empty when it left out nothing."""
    notes = []
    if view.skipped_tokens:
        skipped = ", ".join(map(str, view.skipped_tokens))
        notes.append(f"T = {skipped} did not fit in the {SPEED_BUDGET_S:.0f} s this server gives one measurement")
    short = [f"T = {T}: {n}" for T, n in zip(view.num_tokens, view.rounds, strict=False) if n < view.sizes["repeats"]]
    if short:
        notes.append("fewer timing rounds ran (" + ", ".join(short) + ")")
    return ("; ".join(notes) + ". Lower b, d_model or T to measure more.") if notes else ""


@shared_view(max_entries=SPEED_ENTRIES)
def measured(
    num_tokens: tuple[int, ...],
    d_model: int,
    num_heads: int,
    batch_size: int,
    repeats: int,
    device: str,
    *,
    on_progress=None,
) -> SpeedView:
    """Every implementation's median time and peak memory against T (``attention.measure``), at these
    sizes, within ``SPEED_BUDGET_S``. Call it through ``speed_view``, which queues the callers.
    ``on_progress(done, total, label)`` reports the measurement's progress.
    """
    report = on_progress or (lambda done, total, label: None)
    torch.set_num_threads(machine_threads())  # this thread's timings use every core, as in a notebook
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
            time_budget_s=SPEED_BUDGET_S,
        )
    finally:
        torch.set_num_threads(1)
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
        device=result.device if result.device != "cpu" else f"cpu, {machine_threads()} threads",
        rounds=result.rounds,
        skipped_tokens=result.skipped_tokens,
    )
