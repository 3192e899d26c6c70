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
* ``--profile PATH``: profile every script run (``cProfile`` around
  Streamlit's ``ScriptRunner._run_script``, the post-run collection included);
  SIGUSR2 writes the ``pstats`` of the runs since the previous SIGUSR2 to PATH. Profiling slows the
  runs down; use it with one client, to see where a run's time goes.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import time

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
