"""Two process-wide settings ``configure_server()`` makes for a server shared by a classroom
(BENCHMARKS.md, "What the server's settings buy"): torch computes on one thread per script run, and the
objects made by the heavy imports are frozen out of the garbage collector's reach."""

import gc
import inspect
import subprocess
import sys
import threading

import pandas
import plotly.graph_objects as go
import pytest
import torch
from apptest_support import ROOT, app

from explorer import models
from explorer.runtime import server
from explorer.views import beyond
from explorer.widgets import steps


def num_threads_in_a_new_thread() -> int:
    """What torch uses in a thread started now, as Streamlit starts one for each script run."""
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return seen[0]


@pytest.mark.slow  # seconds: out of the quick check
def test_importing_the_explorer_changes_nothing_until_the_server_is_configured():
    code = (
        "import gc, torch; from explorer import session, views, widgets; from explorer.runtime import server; "
        "print(gc.get_freeze_count(), torch.get_num_threads() == server.machine_threads())"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "True"]


def test_script_runs_compute_with_one_torch_thread():
    server.configure_server()
    server.configure_server()  # a second call (every rerun of the entry script makes one) changes nothing
    assert server.machine_threads() >= 1
    assert num_threads_in_a_new_thread() == 1


def test_the_speed_page_measures_with_the_idle_cores_then_gives_them_back(monkeypatch):
    import attention

    measure, seen = attention.measure, []

    def counting_measure(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return measure(*args, **kwargs)

    monkeypatch.setattr(attention, "measure", counting_measure)
    monkeypatch.setattr(beyond.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle machine: every core
    beyond.measured.clear()
    at = app("pages/speed.py")
    at.multiselect(key="speed_T").set_value([16])
    at.selectbox(key="speed_d").set_value(32)
    at.selectbox(key="speed_device").set_value("cpu")
    at.number_input(key="speed_repeats").set_value(1).run()
    at.button(key="speed_run").click().run()

    assert not at.exception
    assert seen == [server.machine_threads()]
    assert at.session_state["speed:result"].device == f"cpu, {server.machine_threads()} threads"
    assert num_threads_in_a_new_thread() == 1


def test_configuring_the_server_freezes_what_the_heavy_imports_made():
    server.configure_server()  # outside a script run it imports and warms at once; after one, in the background
    assert server.STARTUP.has("warmed")
    assert gc.get_freeze_count() > 100_000
    tracked = {id(obj) for obj in gc.get_objects()}  # the frozen objects are not among them
    for heavy in (torch.nn.Module, pandas.DataFrame, go.Figure, models.Prepared):
        assert id(heavy) not in tracked


def test_the_code_panel_reads_each_source_once_whatever_the_threads(monkeypatch):
    import attention

    read = []

    def counting_getsource(obj):
        read.append(obj)
        return source(obj)

    source = inspect.getsource
    from explorer.views import chapter

    chapter._source.cache_clear()
    monkeypatch.setattr(chapter.inspect, "getsource", counting_getsource)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(steps.source_of(attention.SelfAttention_v2))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert read == [attention.SelfAttention_v2]  # parsed once: concurrent ast.parse can fail on Python 3.11
    assert results == [source(attention.SelfAttention_v2)] * 8
    chapter._source.cache_clear()  # no counting getsource's result is kept for later tests
