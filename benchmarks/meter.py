"""The meter: the machine a benchmark ran on, its load and what /proc says about a process; latency statistics
of runs, and what the server's processes and the machine used meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import time
from collections import Counter

CHROMIUM = "/usr/lib/chromium/chromium"
TICK = os.sysconf("SC_CLK_TCK")
MEMORY_COUNTS = {  # fields of a memory sample that are counts (or seconds), not bytes
    *("t", "wall", "py_blocks", "sessions", "media_files", "deferred_downloads"),
    *("pymalloc.arenas", "pymalloc.arenas_highwater", "caches.SHARED.entries", "caches.FIGURES.entries"),
}


def loadavg() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages; other developers share the benchmark machine."""
    return os.getloadavg()


def load_text(values: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in values) + " (1, 5, 15 min)"


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict:
    """The CPU, cores, RAM and the versions that the figures depend on."""
    import plotly
    import streamlit
    import torch

    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    chromium = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    facts = {"cpu": cpu_model(), "cores": os.cpu_count(), "ram_gib": round(mem_kib / 2**20, 1)}
    facts |= {"python": platform.python_version(), "streamlit": streamlit.__version__, "torch": torch.__version__}
    return facts | {"plotly": plotly.__version__, "chromium": chromium, "kernel": platform.release()}


def family(pid: int) -> list[int]:
    """``pid`` and its children's pids."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
        return [pid, *(int(child) for child in f.read().split())]
    return [pid]


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its living children (nginx's worker), 0 once it is gone."""
    total = 0.0
    for one in family(pid):
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{one}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def process_rss_mib(pid: int) -> float:
    """``VmRSS`` of process ``pid`` and its living children, in MiB."""
    total = 0
    for one in family(pid):
        with contextlib.suppress(OSError), open(f"/proc/{one}/status") as f:
            total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
    return total / 1024


def median(values) -> float:
    """The median of the values that are numbers (NaN left out); NaN if there are none."""
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile, interpolated between the nearest values (NumPy's default)."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def summarize(runs: list) -> dict:
    """How many runs, their errors and warnings by kind, and the latency statistics of those that succeeded."""
    latencies, errors = [r.latency for r in runs if r.ok], dict(Counter(r.error for r in runs if r.error))
    warnings = dict(Counter(w for r in runs for w in r.warnings))
    out = {"runs": len(runs), "ok": len(latencies), "errors": sum(errors.values()), "error_kinds": errors}
    out |= {"warning_kinds": warnings, "p50_s": percentile(latencies, 50), "p95_s": percentile(latencies, 95)}
    nan = float("nan")
    out |= {"max_s": max(latencies, default=nan), "mean_s": statistics.fmean(latencies) if latencies else nan}
    return out | {"kib_per_run": statistics.fmean(r.bytes for r in runs) / 1024 if runs else nan}


def slope_mib_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) samples, in MiB per minute."""
    if len(samples) < 3 or len({x for x, _ in samples}) < 2:
        return float("nan")
    return 60 * statistics.linear_regression(*zip(*samples, strict=True)).slope


class Meter:
    """Server RSS (``server.rss_mib()``) every ``every`` seconds, and CPU seconds between start and stop: the
    server's (``server.cpu_s()``, every app process together), each of its ``processes()`` (name -> pid: the app
    processes and nginx) on its own, and the client's, which is this process's."""

    def __init__(self, server, every: float = 1.0) -> None:
        self.server, self.every = server, every
        self.samples: list[tuple[float, float]] = []
        self.procs: dict[str, int] = server.processes()

    async def __aenter__(self):
        self.t0, self.load_start = time.perf_counter(), loadavg()[0]
        self.cpu0, self.self0 = self.server.cpu_s(), sum(os.times()[:2])
        self.proc_cpu0 = {name: process_cpu_s(pid) for name, pid in self.procs.items()}
        self._task = asyncio.create_task(self._sample())
        return self

    async def _sample(self) -> None:
        while True:
            self.samples.append((time.perf_counter() - self.t0, self.server.rss_mib()))
            await asyncio.sleep(self.every)

    async def __aexit__(self, *exc) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.elapsed = time.perf_counter() - self.t0
        self.samples.append((self.elapsed, self.server.rss_mib()))
        self.server_cpu = self.server.cpu_s() - self.cpu0
        self.proc_cpu = {name: process_cpu_s(pid) - self.proc_cpu0[name] for name, pid in self.procs.items()}
        self.client_cpu, self.load_end = sum(os.times()[:2]) - self.self0, loadavg()[0]

    def report(self, runs: int) -> dict:
        """RSS at start, end and most, and its slopes in MiB a minute over the run and its second half; the CPU
        seconds, cores and ms per run of the server and the client, and of each process; the load averages."""
        rss, half = [v for _, v in self.samples], [x for x in self.samples if x[0] >= self.elapsed / 2]
        out = {"elapsed_s": self.elapsed, "rss_start_mib": rss[0], "rss_end_mib": rss[-1], "rss_max_mib": max(rss)}
        out |= {"rss_slope_mib_per_min": slope_mib_per_min(self.samples)}
        out |= {"rss_slope_second_half_mib_per_min": slope_mib_per_min(half)}
        cpu = {"server": self.server_cpu, "client": self.client_cpu}
        out |= {f"{who}_cpu_s": s for who, s in cpu.items()}
        out |= {f"{who}_cpu_cores": s / self.elapsed for who, s in cpu.items()}
        out |= {f"{who}_cpu_ms_per_run": 1000 * s / runs if runs else float("nan") for who, s in cpu.items()}
        processes = {name: {"cpu_s": s, "cpu_cores": s / self.elapsed} for name, s in self.proc_cpu.items()}
        return out | {"loadavg_start": self.load_start, "loadavg_end": self.load_end, "processes": processes}


def _flat(sample: dict, prefix: str = "") -> dict[str, float]:
    """``sample``'s numbers by dotted name: ``{"a": {"b": 1}, "c": [{"d": 2}]}`` -> ``{"a.b": 1, "c.0.d": 2}``."""
    out = {}
    for key, value in sample.items():
        if isinstance(value, list):
            value = dict(enumerate(value))
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def memory_trends(samples: list[dict], start: float, end: float, settled_s: float = 120.0) -> dict:
    """Each field of the server's memory samples (``serve --memory-log``) taken between wall times ``start``
    and ``end``: first, last, min and max, and its slope per minute over the window, over its second half and
    from ``settled_s`` on (once the bounded caches could have filled). Bytes are given in MiB, counts as counts."""
    rows, trends = [_flat(s) for s in samples if start <= s["wall"] <= end], {}
    for key in sorted({k for row in rows for k in row} - {"t", "wall"}):
        scale = 1 if key in MEMORY_COUNTS else 1 / 2**20
        points = [(row["wall"] - start, row[key] * scale) for row in rows if key in row]  # never empty: a row has key
        values = [v for _, v in points]
        trend = {"first": values[0], "last": values[-1], "min": min(values), "max": max(values)}
        trend["slope_per_min"] = slope_mib_per_min(points)
        trend["slope_second_half_per_min"] = slope_mib_per_min([p for p in points if p[0] >= (end - start) / 2])
        trends[key] = trend | {"slope_settled_per_min": slope_mib_per_min([p for p in points if p[0] >= settled_s])}
    return trends


def read_memory_log(path: str) -> list[dict]:
    with contextlib.suppress(FileNotFoundError), open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
    return []


def memory_lines(trends: dict) -> str:
    """``memory_trends`` as one line per field."""
    return "\n".join(
        f"   {key:28} {t['first']:10.1f} -> {t['last']:10.1f} (min {t['min']:.1f}, max {t['max']:.1f}); per min "
        f"{t['slope_per_min']:+.2f}, second half {t['slope_second_half_per_min']:+.2f}, "
        f"settled {t['slope_settled_per_min']:+.2f}"
        for key, t in trends.items()
    )
