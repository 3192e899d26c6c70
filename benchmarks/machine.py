"""Facts about the machine a benchmark ran on, its load, and what /proc says about a process."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess

CHROMIUM = "/usr/lib/chromium/chromium"
TICK = os.sysconf("SC_CLK_TCK")


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
