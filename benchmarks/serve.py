"""Run the app exactly like ``streamlit run``, with measuring options, for ``load.py`` and ``app_scale.py``.

Usage (``launch.AppServer(serve_options=[...])`` builds this command)::

    python benchmarks/serve.py [--stats PATH] [--timings PATH] [--no-app-freeze] \
        -- run streamlit_app.py --server.port 8600 ...

Everything after ``--`` goes to Streamlit's own command line (``streamlit.web.cli``),
in this process, so the server is the same one ``streamlit run`` starts.

* ``--timings PATH``: append one JSON line per script run to PATH: the wall and
  thread-CPU time from the start of ``ScriptRunner._run_script`` to
  ``_on_script_finished`` (the script), and the time after it (Streamlit's
  post-run ``gc.collect(2)``).
* ``--stats PATH``: count every collection, its wall time and the CPU time of
  the thread that ran it, per generation (``gc.callbacks``); SIGUSR2 writes the counts to PATH as JSON.
* ``--no-app-freeze``: make ``gc.freeze`` do nothing once Streamlit starts, so
  the app's own ``gc.collect(); gc.freeze()`` (``explorer/ui.py``) is skipped: the
  app as it was before that change, for comparison.
* ``--run-slots K``: at most K script runs at a time in the process (a
  semaphore around Streamlit's ``ScriptRunner._run_script``); the others wait
  their turn instead of sharing the GIL. An experiment: Streamlit has no such
  option, but an app can do the same around ``navigation.run()``.
* ``--tracemalloc PATH``: trace Python allocations (``tracemalloc``, 10 frames); the first
  SIGHUP takes a baseline snapshot, each later one writes to PATH the 40 places whose live
  allocations grew most since the baseline. For finding what grows over a soak; it slows
  the server several-fold (0.6 runs/s with 30 students, against about 9).
* ``--memory-log PATH``: every ``--memory-every`` seconds (default 5), append one JSON line to PATH
  with the process's memory by kind (``memory_sample``): RSS, anonymous and file-backed RSS, glibc's
  heap (``mallinfo2``: in use, free, mmapped; ``malloc_info``: each arena's size and free bytes),
  anonymous RSS by kind (brk heap, glibc's other arenas, stacks, the rest), CPython's small-object
  allocator (arenas held, bytes in live blocks), Python's live blocks, the shared caches' entries
  and counted bytes (``SHARED``, ``FIGURES``), sessions, and Streamlit's kept download files.
  Separates a cache filling to its cap from a leak; costs a few ms per sample. It does not count
  ``gc.get_objects()``: called from another thread, that can catch a tuple being built, whose
  ``tuple(generator)`` then fails ("SystemError: bad argument to internal function"; one run did).
* ``--malloc-trim SECONDS``: give glibc's free memory back to the system (``malloc_trim(0)``) every
  SECONDS from a thread of its own. An experiment: measured with 30 students typing, it lowers the
  main heap's RSS but the second arena takes the difference up, and RSS swings as much as without.
* ``--profile PATH``: profile every script run (``cProfile`` around
  Streamlit's ``ScriptRunner._run_script``, the post-run collection included);
  SIGUSR2 writes the ``pstats`` of the runs since the previous SIGUSR2 to PATH. Profiling slows the
  runs down; use it with one client, to see where a run's time goes.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import signal
import sys
import tempfile
import time
from xml.etree import ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_stats = {
    gen: {"collections": 0, "seconds": 0.0, "cpu_seconds": 0.0, "collected": 0, "max_seconds": 0.0} for gen in (0, 1, 2)
}
_started = [0.0, 0.0]  # perf_counter, thread_time


def _on_gc(phase: str, info: dict) -> None:
    if phase == "start":
        _started[:] = time.perf_counter(), time.thread_time()
        return
    took = time.perf_counter() - _started[0]
    entry = _stats[info["generation"]]
    entry["collections"] += 1
    entry["seconds"] += took
    entry["cpu_seconds"] += time.thread_time() - _started[1]
    entry["collected"] += info["collected"]
    entry["max_seconds"] = max(entry["max_seconds"], took)


def _dump(path: str):
    def handler(signum=None, frame=None) -> None:
        payload = {
            "generations": _stats,
            "frozen": gc.get_freeze_count(),
            "tracked": len(gc.get_objects()),
        }
        with open(path + ".tmp", "w") as f:
            json.dump(payload, f)
        os.replace(path + ".tmp", path)

    return handler


def _time_runs(path: str) -> None:
    import threading

    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    original_run, original_finished = ScriptRunner._run_script, ScriptRunner._on_script_finished
    local, lock = threading.local(), threading.Lock()

    def on_script_finished(self, *args, **kwargs):
        local.finished = (time.perf_counter(), time.thread_time())
        return original_finished(self, *args, **kwargs)

    def run_script(self, rerun_data):
        local.finished = None
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return original_run(self, rerun_data)
        finally:
            end = time.perf_counter()
            finished, finished_cpu = local.finished or (end, time.thread_time())
            line = {"script_s": finished - start, "script_cpu_s": finished_cpu - cpu, "after_s": end - finished}
            with lock, open(path, "a") as f:
                f.write(json.dumps({**line, "total_s": end - start}) + "\n")

    ScriptRunner._run_script = run_script
    ScriptRunner._on_script_finished = on_script_finished


def _profile_runs(path: str) -> None:
    import cProfile

    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    profiler = cProfile.Profile()
    original = ScriptRunner._run_script

    def run_script(self, rerun_data):
        profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            profiler.disable()

    ScriptRunner._run_script = run_script
    previous = signal.getsignal(signal.SIGUSR2)

    def dump(signum=None, frame=None) -> None:
        profiler.dump_stats(path)
        profiler.clear()
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGUSR2, dump)


def _limit_runs(slots: int) -> None:
    import threading

    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    gate = threading.BoundedSemaphore(slots)
    inside = threading.local()  # _run_script calls itself for a rerun: take a slot once per thread
    original = ScriptRunner._run_script

    def run_script(self, rerun_data):
        if getattr(inside, "depth", 0):
            return original(self, rerun_data)
        with gate:
            inside.depth = 1
            try:
                return original(self, rerun_data)
            finally:
                inside.depth = 0

    ScriptRunner._run_script = run_script


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
        grown = now.compare_to(baseline[0], "traceback")[:40]
        with open(path, "w") as f:
            for stat in grown:
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
    for module, name in (("explorer.caching", "SHARED"), ("explorer.shared_figures", "FIGURES")):
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


_trimmed = {"trims": 0, "seconds": 0.0, "max_seconds": 0.0}  # by --malloc-trim, for the memory log


def trim() -> None:
    """``malloc_trim(0)`` (glibc: every free page of every arena back to the system), counted in ``_trimmed``."""
    start = time.perf_counter()
    ctypes.CDLL(None).malloc_trim(0)
    took = time.perf_counter() - start
    _trimmed["trims"] += 1
    _trimmed["seconds"] += took
    _trimmed["max_seconds"] = max(_trimmed["max_seconds"], took)


def _trim_periodically(every: float) -> None:
    import threading

    def run() -> None:
        while True:
            time.sleep(every)
            trim()

    threading.Thread(target=run, name="malloc-trim", daemon=True).start()


def _log_memory(path: str, every: float) -> None:
    import threading

    started = time.monotonic()

    def log() -> None:
        while True:
            line = json.dumps(memory_sample(started))
            with open(path, "a") as f:
                f.write(line + "\n")
            time.sleep(every)

    threading.Thread(target=log, name="memory-log", daemon=True).start()


def main(argv: list[str]) -> None:
    if "--" not in argv:
        raise SystemExit(__doc__)
    split = argv.index("--")
    options, streamlit_args = argv[:split], argv[split + 1 :]
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    if "--stats" in options:
        path = options[options.index("--stats") + 1]
        gc.callbacks.append(_on_gc)
        signal.signal(signal.SIGUSR2, _dump(path))

    from streamlit.web import cli

    if "--run-slots" in options:
        _limit_runs(int(options[options.index("--run-slots") + 1]))
    if "--tracemalloc" in options:
        _trace_allocations(options[options.index("--tracemalloc") + 1])
    if "--malloc-trim" in options:
        _trim_periodically(float(options[options.index("--malloc-trim") + 1]))
    if "--memory-log" in options:
        every = float(options[options.index("--memory-every") + 1]) if "--memory-every" in options else 5.0
        _log_memory(options[options.index("--memory-log") + 1], every)
    if "--profile" in options:
        _profile_runs(options[options.index("--profile") + 1])
    if "--timings" in options:  # outermost: a run's time includes its wait for a slot, if any
        _time_runs(options[options.index("--timings") + 1])
    if "--no-app-freeze" in options:
        gc.freeze = lambda: None
    sys.argv = ["streamlit", *streamlit_args]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
