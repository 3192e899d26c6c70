"""Run the app exactly like ``streamlit run``, with measuring options, for the benchmarks' servers (what follows
``--`` goes to Streamlit's own command line; ``launch.AppServer(serve_options=[...])`` builds the command)::

    python -m benchmarks.serve [OPTIONS] -- run streamlit_app.py --server.port 8600 ...

``--timings PATH`` appends a JSON line per script run: the script's wall and thread-CPU time (``_run_script``
to ``_on_script_finished``) and the time after it until the run is over. ``--memory-log PATH`` appends the
process's memory by kind (``memory_sample``) every ``--memory-every`` seconds (5), without ``gc.get_objects()``:
from another thread that can catch a tuple being built. Issue 13's retired options are at commit e1b2501.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
import threading
import time

PYMALLOC_FIELDS = {"# arenas allocated current": "arenas", "# arenas highwater mark": "arenas_highwater"}
PYMALLOC_FIELDS |= {"# bytes in allocated blocks": "in_use", "# bytes in available blocks": "free_in_pools"}
CACHES = (("explorer.runtime.memory", "SHARED"), ("explorer.widgets.charts", "FIGURES"))  # (module, name)


def _time_runs(path: str) -> None:
    """Time every script run: until ``_on_script_finished``, and the post-run collection after it."""
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

    ScriptRunner._on_script_finished, ScriptRunner._run_script = on_script_finished, run_script


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``: ten ``size_t`` fields, in this order."""

    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd")]
    _fields_ += [(name, ctypes.c_size_t) for name in ("usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo2() -> dict:
    """glibc's heap: ``arena`` bytes from the system (not mmapped), ``in_use`` and ``free`` of those, ``mmapped``."""
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {"arena": info.arena, "in_use": info.uordblks, "free": info.fordblks, "mmapped": info.hblkhd}


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
        pairs = [line.partition("=") for line in tmp.read().decode(errors="replace").splitlines()]
    return {PYMALLOC_FIELDS[k.strip()]: int(v.replace(",", "")) for k, _, v in pairs if k.strip() in PYMALLOC_FIELDS}


def _status() -> dict:
    wanted = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file"}
    with open("/proc/self/status") as f:
        return {wanted[k]: int(v.split()[0]) * 1024 for k, _, v in (line.partition(":") for line in f) if k in wanted}


def memory_sample(started: float) -> dict:
    """One line of ``--memory-log``: the process's memory by kind, in bytes (see the module docstring)."""
    sample = {"t": round(time.monotonic() - started, 2), "wall": time.time(), **_status(), "malloc": _mallinfo2()}
    sample |= {"pymalloc": _pymalloc(), "py_blocks": sys.getallocatedblocks()}
    found = {name: getattr(sys.modules.get(module), name, None) for module, name in CACHES}
    sample["caches"] = {name: {"entries": len(c), "bytes": c.bytes} for name, c in found.items() if c is not None}
    runtime_module = sys.modules.get("streamlit.runtime.runtime")
    if runtime_module is not None and runtime_module.Runtime.exists():
        runtime = runtime_module.Runtime.instance()
        media = runtime.media_file_mgr
        sample["sessions"] = runtime._session_mgr.num_sessions()
        sample |= {"media_files": len(media._file_metadata), "deferred_downloads": len(media._deferred_callables)}
    return sample


def _log_memory(path: str, every: float) -> None:
    """Append a ``memory_sample`` to ``path`` every ``every`` seconds, from a daemon thread of its own."""
    started = time.monotonic()

    def loop() -> None:
        while True:
            with open(path, "a") as f:
                f.write(json.dumps(memory_sample(started)) + "\n")
            time.sleep(every)

    threading.Thread(target=loop, name="memory-log", daemon=True).start()


def main(argv: list[str]) -> None:
    if "--" not in argv:
        raise SystemExit(__doc__)
    options, streamlit_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]

    def value(name: str, default: str | None = None) -> str | None:
        return options[options.index(name) + 1] if name in options else default

    from streamlit.web import cli

    if value("--memory-log"):
        _log_memory(value("--memory-log"), float(value("--memory-every", "5")))
    if value("--timings"):
        _time_runs(value("--timings"))
    sys.argv = ["streamlit", *streamlit_args]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
