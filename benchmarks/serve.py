"""Run the app exactly like ``streamlit run``, with measuring options, for the benchmarks' servers.

Usage, from the repository root (``launch.AppServer(serve_options=[...])`` builds this command)::

    python -m benchmarks.serve [OPTIONS] -- run streamlit_app.py --server.port 8600 ...

What follows ``--`` goes to Streamlit's own command line in this process: the same server as ``streamlit run``.

* ``--timings PATH``: one JSON line per script run: wall and thread-CPU time from the start of
  ``ScriptRunner._run_script`` to ``_on_script_finished`` (the script), and after it (Streamlit's post-run
  ``gc.collect(2)``).
* ``--stats PATH``: every collection counted per generation with its wall and thread-CPU time
  (``gc.callbacks``); SIGUSR2 writes the counts to PATH as JSON.
* ``--no-app-freeze``: ``gc.freeze`` does nothing, so the app's freeze after its imports is skipped.
* ``--run-slots K``: at most K script runs at a time (a semaphore around ``_run_script``), an experiment.
* ``--profile PATH``: ``cProfile`` around every script run; SIGUSR2 writes the runs since the last one to PATH.
* ``--tracemalloc PATH``: the first SIGHUP takes a baseline snapshot, each later one writes to PATH the 40
  places whose live allocations grew most since (slows the server several-fold).
* ``--memory-log PATH``: every ``--memory-every`` seconds (5) one JSON line of the process's memory by
  kind (``memory_sample``): RSS (anonymous, file-backed), glibc's heap and each arena (in use, free),
  anonymous RSS by kind, CPython's allocator, the shared caches' entries and bytes, sessions and
  Streamlit's kept downloads. It does not count ``gc.get_objects()``: from another thread that can
  catch a tuple being built ("SystemError: bad argument to internal function").
* ``--malloc-trim SECONDS``: ``malloc_trim(0)`` every SECONDS from a thread of its own, an experiment.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import sys
import tempfile
import threading
import time
from xml.etree import ElementTree

_stats = {
    g: {"collections": 0, "seconds": 0.0, "cpu_seconds": 0.0, "collected": 0, "max_seconds": 0.0} for g in range(3)
}
_started = [0.0, 0.0]  # perf_counter, thread_time
_trimmed = {"trims": 0, "seconds": 0.0, "max_seconds": 0.0}  # by --malloc-trim, for the memory log


def _on_gc(phase: str, info: dict) -> None:
    if phase == "start":
        _started[:] = time.perf_counter(), time.thread_time()
        return
    took, entry = time.perf_counter() - _started[0], _stats[info["generation"]]
    entry["collections"] += 1
    entry["seconds"] += took
    entry["cpu_seconds"] += time.thread_time() - _started[1]
    entry["collected"] += info["collected"]
    entry["max_seconds"] = max(entry["max_seconds"], took)


def _count_collections(path: str) -> None:
    def dump(signum=None, frame=None) -> None:
        with open(path + ".tmp", "w") as f:
            json.dump({"generations": _stats, "frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}, f)
        os.replace(path + ".tmp", path)

    gc.callbacks.append(_on_gc)
    signal.signal(signal.SIGUSR2, dump)


def _around_runs(around) -> None:
    """Run every script run inside ``around(run)``, which calls ``run()`` and returns what it returns."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    original = ScriptRunner._run_script
    ScriptRunner._run_script = lambda self, rerun_data: around(lambda: original(self, rerun_data))


def _time_runs(path: str) -> None:
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    original_finished = ScriptRunner._on_script_finished
    local, lock = threading.local(), threading.Lock()

    def on_script_finished(self, *args, **kwargs):
        local.finished = (time.perf_counter(), time.thread_time())
        return original_finished(self, *args, **kwargs)

    def timed(run):
        local.finished = None
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return run()
        finally:
            end = time.perf_counter()
            finished, finished_cpu = local.finished or (end, time.thread_time())
            line = {"script_s": finished - start, "script_cpu_s": finished_cpu - cpu, "after_s": end - finished}
            with lock, open(path, "a") as f:
                f.write(json.dumps({**line, "total_s": end - start}) + "\n")

    ScriptRunner._on_script_finished = on_script_finished
    _around_runs(timed)


def _profile_runs(path: str) -> None:
    import cProfile

    profiler, previous = cProfile.Profile(), signal.getsignal(signal.SIGUSR2)

    def profiled(run):
        profiler.enable()
        try:
            return run()
        finally:
            profiler.disable()

    def dump(signum=None, frame=None) -> None:
        profiler.dump_stats(path)
        profiler.clear()
        if callable(previous):
            previous(signum, frame)

    _around_runs(profiled)
    signal.signal(signal.SIGUSR2, dump)


def _limit_runs(slots: int) -> None:
    gate, inside = threading.BoundedSemaphore(slots), threading.local()

    def limited(run):
        if getattr(inside, "depth", 0):  # _run_script calls itself for a rerun: take a slot once per thread
            return run()
        with gate:
            inside.depth = 1
            try:
                return run()
            finally:
                inside.depth = 0

    _around_runs(limited)


def _trace_allocations(path: str) -> None:
    import tracemalloc

    tracemalloc.start(10)
    baseline = []

    def snapshot(signum, frame) -> None:
        gc.collect()
        now = tracemalloc.take_snapshot()
        if not baseline:
            baseline.append(now)
            return
        with open(path, "w") as f:
            for stat in now.compare_to(baseline[0], "traceback")[:40]:
                f.write(f"{stat}\n" + "\n".join(stat.traceback.format()[-14:]) + "\n\n")

    signal.signal(signal.SIGHUP, snapshot)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd")] + [
        (name, ctypes.c_size_t) for name in ("usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def _mallinfo2() -> dict:
    """glibc's heap: ``arena`` bytes from the system (not mmapped), ``in_use`` and ``free`` of those, ``mmapped``."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {"arena": info.arena, "in_use": info.uordblks, "free": info.fordblks, "mmapped": info.hblkhd}


ARENA_HEAP_ALIGN = 64 * 2**20  # glibc's other arenas live in mappings aligned to HEAP_MAX_SIZE (64-bit)


def _anonymous_rss() -> dict:
    """RSS of anonymous memory by kind, in bytes: ``heap`` (brk: glibc's main arena), ``arena_heaps`` (glibc's
    other arenas: mappings that start on a 64 MiB boundary), ``stacks``, ``other`` (CPython's arenas,
    large blocks that malloc mapped on their own, numpy's and torch's own mappings)."""
    totals = {"heap": 0, "arena_heaps": 0, "stacks": 0, "other": 0}
    kind = None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                start = int(head[0].split("-")[0], 16)
                name = head[5] if len(head) > 5 else ""
                if name == "[heap]":
                    kind = "heap"
                elif name.startswith("[stack"):
                    kind = "stacks"
                elif name:
                    kind = None
                else:
                    kind = "arena_heaps" if start % ARENA_HEAP_ALIGN == 0 else "other"
            elif kind and head[0] == "Rss:":
                totals[kind] += int(head[1]) * 1024
    return totals


def _malloc_arenas() -> list[dict]:
    """Each glibc arena's bytes from the system and bytes free in it (``malloc_info``), main arena first."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "malloc_info"):
        return []
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    with tempfile.NamedTemporaryFile(suffix=".xml") as tmp:
        stream = libc.fopen(tmp.name.encode(), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        root = ElementTree.parse(tmp.name).getroot()
    arenas = []
    for heap in root.findall("heap"):
        free = sum(int(t.get("size")) for t in heap.findall("total") if t.get("type") in ("fast", "rest"))
        system = next(int(s.get("size")) for s in heap.findall("system") if s.get("type") == "current")
        arenas.append({"system": system, "free": free})
    return arenas


PYMALLOC_FIELDS = {
    "# arenas allocated current": "arenas",
    "# arenas highwater mark": "arenas_highwater",
    "# bytes in allocated blocks": "in_use",
    "# bytes in available blocks": "free_in_pools",
}


def _pymalloc() -> dict:
    """CPython's small-object allocator (``sys._debugmallocstats``): arenas (1 MiB each) held, bytes in live blocks,
    bytes free in its pools. The stats go to C's stderr, so it is pointed at a file for the call: a line another
    thread writes to stderr in those few milliseconds is lost (a diagnostic run only)."""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in PYMALLOC_FIELDS:
            out[PYMALLOC_FIELDS[key.strip()]] = int(value.strip().replace(",", ""))
    return out


def _status() -> dict:
    wanted = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file"}
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in wanted:
                out[wanted[key]] = int(value.split()[0]) * 1024
    return out


def memory_sample(started: float) -> dict:
    """One line of ``--memory-log``: the process's memory by kind, in bytes (see the module docstring)."""
    sample = {
        "t": round(time.monotonic() - started, 2),
        "wall": time.time(),
        **_status(),
        "malloc": _mallinfo2(),
        "arenas": _malloc_arenas(),
        "anon_rss": _anonymous_rss(),
    }
    sample["pymalloc"] = _pymalloc()
    sample["py_blocks"] = sys.getallocatedblocks()
    caches = {}
    for module, name in (("explorer.runtime.caching", "SHARED"), ("explorer.widgets.drawn", "FIGURES")):
        cache = getattr(sys.modules.get(module), name, None)
        if cache is not None:
            caches[name] = {"entries": len(cache), "bytes": cache.bytes}
    sample["caches"] = caches
    if _trimmed["trims"]:
        sample["trimming"] = dict(_trimmed)
    runtime_module = sys.modules.get("streamlit.runtime.runtime")
    if runtime_module is not None and runtime_module.Runtime.exists():
        runtime = runtime_module.Runtime.instance()
        media = runtime.media_file_mgr
        sample["sessions"] = runtime._session_mgr.num_sessions()
        sample["media_files"] = len(media._file_metadata)
        sample["deferred_downloads"] = len(media._deferred_callables)
    return sample


def trim() -> None:
    """``malloc_trim(0)`` (glibc: every free page of every arena back to the system), counted in ``_trimmed``."""
    start = time.perf_counter()
    ctypes.CDLL(None).malloc_trim(0)
    took = time.perf_counter() - start
    _trimmed["trims"] += 1
    _trimmed["seconds"] += took
    _trimmed["max_seconds"] = max(_trimmed["max_seconds"], took)


def _every(seconds: float, name: str, work) -> None:
    """Call ``work()`` every ``seconds``, from a daemon thread of its own."""

    def loop() -> None:
        while True:
            work()
            time.sleep(seconds)

    threading.Thread(target=loop, name=name, daemon=True).start()


def _log_memory(path: str, every: float) -> None:
    started = time.monotonic()

    def log() -> None:
        line = json.dumps(memory_sample(started))
        with open(path, "a") as f:
            f.write(line + "\n")

    _every(every, "memory-log", log)


def main(argv: list[str]) -> None:
    if "--" not in argv:
        raise SystemExit(__doc__)
    options, streamlit_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]

    def value(name: str, default: str | None = None) -> str | None:
        return options[options.index(name) + 1] if name in options else default

    if value("--stats"):
        _count_collections(value("--stats"))
    from streamlit.web import cli

    if value("--run-slots"):
        _limit_runs(int(value("--run-slots")))
    if value("--tracemalloc"):
        _trace_allocations(value("--tracemalloc"))
    if value("--malloc-trim"):
        _every(float(value("--malloc-trim")), "malloc-trim", trim)
    if value("--memory-log"):
        _log_memory(value("--memory-log"), float(value("--memory-every", "5")))
    if value("--profile"):
        _profile_runs(value("--profile"))
    if value("--timings"):  # outermost: a run's time includes its wait for a slot, if any
        _time_runs(value("--timings"))
    if "--no-app-freeze" in options:
        gc.freeze = lambda: None
    sys.argv = ["streamlit", *streamlit_args]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
