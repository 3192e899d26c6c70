"""The first paint (``explorer.runtime.server``), fast after a cold start (issue 15).

The first run needs no torch (its modules import it lazily and its numbers are stored), the browser is asked for the
charts' code with the page, torch and the rest are imported after the first page has painted, and the benchmark's
phase breakdown reads the websocket's messages right."""

import importlib
import subprocess
import sys
import threading

import pytest
import streamlit as st
from apptest_support import ROOT, app
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks import actions
from explorer.runtime import server


def run_python(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_importing_the_server_module_imports_neither_torch_nor_pandas():
    code = "import sys; import explorer.runtime.server; print('torch' in sys.modules, 'pandas' in sys.modules)"
    assert run_python(code) == ["False", "False"]


def test_importing_the_attention_package_imports_no_torch_until_a_name_is_used():
    code = (
        "import sys, attention; print('torch' in sys.modules, attention.BOOK_SENTENCE == 'Your journey starts "
        "with one step', 'torch' in sys.modules); attention.trace; print('torch' in sys.modules)"
    )
    assert run_python(code) == ["False", "True", "False", "True"]


def test_every_name_the_package_exports_resolves_and_trace_is_the_function():
    import attention
    import attention.tracing  # the submodule, imported on its own, sets the package's attribute tracing

    assert all(getattr(attention, name) is not None for name in attention.__all__)
    assert callable(attention.trace) and attention.trace.__module__ == "attention.tracing"
    assert attention.trace is attention.tracing.trace
    assert set(attention.__all__) <= set(dir(attention)) and "after_chapter" in dir(attention)
    assert "bahdanau" not in dir(attention)  # it lives in before_chapter
    gpt = importlib.import_module("attention.after_chapter.gpt")
    assert gpt.VERDICT_CONFIG is attention.VERDICT_CONFIG is attention.constants.VERDICT_CONFIG
    with pytest.raises(AttributeError):
        attention.no_such_name  # noqa: B018


BESIDE_THE_MATH = {"figures", "notebook", "prose"}  # subpackages that export no name and that APP_MODULES leaves out


def test_the_package_lists_each_name_once_and_every_submodule():
    import attention

    package = ROOT / "attention"
    modules = {
        ".".join(path.relative_to(package).with_suffix("").parts)
        for path in package.rglob("*.py")
        if path.name != "__init__.py" and path.relative_to(package).parts[0] not in BESIDE_THE_MATH
    }

    assert set(attention.SUBMODULES) == modules
    assert {name.split(".")[0] for name in modules if "." in name} == set(attention.SUBPACKAGES) - BESIDE_THE_MATH
    assert len(attention.__all__) == len(set(attention.__all__))
    assert not set(attention.__all__) & {name.split(".")[-1] for name in modules}  # no name is also a module's


# The first run with torch's import refused: any attempt fails the run. Then torch is let in, and the
# background import (held until then) imports it and the rest.
FIRST_PAGE_WITHOUT_TORCH = """
import sys, threading
sys.path.insert(0, "tests")


class RefuseTorch:
    armed = True

    def find_spec(self, name, path=None, target=None):
        if self.armed and name.split(".")[0] == "torch":
            raise ImportError("the first run imported torch")


refuse = RefuseTorch()
sys.meta_path.insert(0, refuse)
from apptest_support import app
from explorer.runtime import server

may_import, import_app = threading.Event(), server.import_app


def held_import_app():  # the background import waits until the first run has been checked
    may_import.wait()
    import_app()


server.import_app = held_import_app
server.STARTUP.tell("painted")  # no browser here to say so
at = app(timeout=120)
charts = at.get("plotly_chart")
print(not at.exception, len(charts), "torch" in sys.modules, server.STARTUP.has("warmed"))
refuse.armed = False
may_import.set()
later = server.SETTLED_MODULES + server.APP_MODULES + server.LATER_MODULES
print(server.STARTUP.wait("warmed", timeout=120), all(name in sys.modules for name in later))
"""


def test_the_first_page_runs_without_torch_and_the_rest_is_imported_after_it():
    assert run_python(FIRST_PAGE_WITHOUT_TORCH) == ["True", "1", "False", "False", "True", "True"]


SLOW_PANDAS = """
import time
time.sleep(1.5)  # meanwhile this module sits half imported in sys.modules, as pandas does for 0.3 s
import sys, importlib
del sys.modules["pandas"]
sys.path.remove(sys.argv[1])
real = importlib.import_module("pandas")
sys.modules["pandas"] = real
globals().update(vars(real))
"""

RUNS_WAIT_FOR_PANDAS = """
import sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, "tests")
from apptest_support import app
from explorer.runtime import server

server.PAINT_WAIT_S = 60.0  # no browser says the page has painted: the thread waits for a later run
server.STARTUP.start(prepare=True)  # what the server's lifespan does
first = app(timeout=120)
print(not first.exception, len(first.get("plotly_chart")) > 0, "pandas" in sys.modules)
second = app(timeout=120)  # another tab: the thread imports the slow pandas now, and this run waits for it
print(not second.exception, len(second.get("plotly_chart")) > 0, server.STARTUP.has("settled"))
"""


def test_the_first_run_goes_before_pandas_and_a_later_run_waits_until_pandas_is_whole(tmp_path):
    """Plotly reads pandas from ``sys.modules`` without importing it, and a module another thread was still
    importing failed every chart ("partially initialized module 'pandas'"): the first run goes on without
    pandas, which the start thread imports after it, and a run that comes meanwhile waits."""
    (tmp_path / "pandas.py").write_text(SLOW_PANDAS)
    code = [sys.executable, "-c", RUNS_WAIT_FOR_PANDAS, str(tmp_path)]
    done = subprocess.run(code, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True", "False", "True", "True", "True"]


def test_pandas_waits_for_the_first_runs_thread_and_every_other_run_waits_for_pandas(monkeypatch):
    monkeypatch.setattr(server, "import_app", lambda: None)
    monkeypatch.setattr(server, "warm_up", lambda: None)
    monkeypatch.setattr(server, "PAINT_WAIT_S", 60.0)
    startup = server.Startup()
    entered, may_end = threading.Event(), threading.Event()

    def first_run():
        startup.enter_run()
        startup.enter_run()  # a rerun this thread took on goes on too
        entered.set()
        may_end.wait()

    first = threading.Thread(target=first_run)
    first.start()
    assert entered.wait(30)
    startup.start(prepare=False)
    other = threading.Thread(target=startup.enter_run)
    other.start()
    other.join(0.5)
    assert other.is_alive() and not startup.has("settled")  # the first run's thread goes on: no pandas yet
    may_end.set()
    other.join(30)
    assert not other.is_alive() and startup.has("settled") and not startup.has("warmed")  # no paint yet
    startup.tell("painted")
    assert startup.wait("warmed", timeout=30)


def test_the_background_import_waits_for_the_first_paint_or_a_few_seconds(monkeypatch):
    calls = []
    monkeypatch.setattr(server, "import_app", lambda: calls.append("import"))
    monkeypatch.setattr(server, "warm_up", lambda: calls.append("warm"))

    def started(paint_wait_s: float) -> server.Startup:  # a process whose first run is over
        monkeypatch.setattr(server, "PAINT_WAIT_S", paint_wait_s)
        startup = server.Startup()
        first_run = threading.Thread(target=startup.first_run_began)
        first_run.start()
        first_run.join()
        return startup

    startup = started(60.0)
    startup.start(prepare=False)
    assert not startup.wait("warmed", timeout=0.3) and calls == []  # the page has not painted yet
    startup.tell("painted")  # what the browser's POST does
    assert startup.wait("warmed", timeout=30) and calls == ["import", "warm"]
    startup = started(0.05)  # no browser says so: it goes ahead anyway
    startup.start(prepare=False)
    assert startup.wait("warmed", timeout=30) and calls == ["import", "warm"] * 2 and startup.has("painted")
    startup = started(60.0)
    startup.tell("torch wanted")  # a link that needs torch asked for the import: no wait for a paint
    startup.start(prepare=False)
    assert startup.wait("warmed", timeout=30) and calls == ["import", "warm"] * 3


def test_streamlit_run_serves_the_app_script_as_an_st_app_with_the_servers_lifespan():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(ROOT / "streamlit_app.py")  # what `streamlit run streamlit_app.py` looks for
    assert found.is_asgi_app and found.import_string == "streamlit_app:app"
    code = (
        "import streamlit_app; from explorer.runtime import server; from apptest_support import ROOT; "
        "print(streamlit_app.app.script_path.name, streamlit_app.app._user_lifespan is server.lifespan, "
        "streamlit_app.app.script_path.resolve() == ROOT / 'explorer_app.py')"
    )
    assert run_python("import sys; sys.path.insert(0, 'tests'); " + code) == ["explorer_app.py", "True", "True"]


LIFESPAN = """
import asyncio, gc, importlib, sys

from explorer.runtime import server

intervals, import_module = [], importlib.import_module


def recording_import(name, package=None):
    intervals.append(sys.getswitchinterval())
    return import_module(name, package)


server.importlib.import_module = recording_import
before = sys.getswitchinterval()


async def serve():
    async with server.lifespan(None):
        print(server.STARTUP.has("first run"))  # the server starts serving while the thread prepares


asyncio.run(serve())
server.STARTUP.wait("first run ready", timeout=120)
print(all(name in sys.modules for name in server.FIRST_RUN_MODULES), "torch" in sys.modules, "pandas" in sys.modules)
lowered = set(intervals) == {server.IMPORT_SWITCH_INTERVAL_S} and server.IMPORT_SWITCH_INTERVAL_S < before
print(lowered, sys.getswitchinterval() == before, gc.get_freeze_count() == 0, server.STARTUP.has("warmed"))
"""


def test_the_lifespan_prepares_the_first_run_in_a_thread_without_torch():
    assert run_python(LIFESPAN) == ["False", "True", "False", "False", "True", "True", "True", "False"]


def test_the_pages_routes_answer_streamlits_page_with_the_chunks_to_preload():

    routes = server.page_routes(["why_attention", "tokens", ""])
    assert [route.path for route in routes] == ["/", "/why_attention", "/tokens", server.PAINTED_PATH]
    assert all(route.methods >= {"GET", "HEAD"} for route in routes[:-1])
    response = _answer(routes[0], path="/")
    page, index = response.body.decode(), (server.STATIC_JS.parents[1] / "index.html").read_text(encoding="utf-8")
    assert response.headers["cache-control"] == "no-cache" and response.media_type == "text/html"
    chunks = server.first_page_chunks()
    links = [f'<link rel="modulepreload" crossorigin fetchpriority="low" href="./static/js/{name}">' for name in chunks]
    assert len(links) == len(server.FIRST_PAGE_CHUNKS)
    assert page == index.replace("</head>", "".join(links) + "</head>", 1)


def test_the_browser_says_when_the_first_page_has_painted(monkeypatch):

    monkeypatch.setattr(server, "STARTUP", server.Startup())
    told = server.page_routes(["tokens"])[-1]
    assert told.path == server.PAINTED_PATH and told.methods == {"POST"}
    answer = _answer(told, path=server.PAINTED_PATH, method="POST")
    assert answer.status_code == 204 and server.STARTUP.has("painted")


@pytest.mark.parametrize(
    ("path", "query", "imports"),
    [
        ("/", "", False),
        ("/", "present=1", False),
        ("/", "input=text&text=Hi", True),
        ("/", "step=3", True),
        ("/tokens", "", True),
        ("/multihead", "present=1", True),
    ],
)
def test_a_link_whose_first_run_needs_torch_starts_its_import_with_the_page(monkeypatch, path, query, imports):
    started = []
    monkeypatch.setattr(server, "start_importing_app", lambda: started.append(path))
    route = next(r for r in server.page_routes(["tokens", "multihead"]) if r.path == path)
    assert _answer(route, path=path, query=query).status_code == 200
    assert server.needs_torch(path, dict(pair.split("=") for pair in query.split("&") if pair)) is imports
    assert started == ([path] if imports else [])


def test_a_pages_path_names_the_apps_root_for_the_frontend(monkeypatch):
    """Issue 54: at /tokens the frontend asked /tokens/_stcore/health first (404); the page now names the root."""
    monkeypatch.setattr(server, "start_importing_app", lambda: None)
    routes = {r.path: r for r in server.page_routes(["tokens"])}
    at_root, at_page = (_answer(routes[path], path=path).body.decode() for path in ("/", "/tokens"))
    assert server.AT_ROOT not in at_root
    assert at_page.index(server.AT_ROOT) < at_page.index('<script type="module"'), "read before Streamlit's code"


def _answer(route, *, path: str, query: str = "", method: str = "GET"):
    """``route``'s response to a request for ``path?query``, in a thread of its own (the browser tests'
    Playwright keeps an event loop running in this one)."""
    import asyncio

    from starlette.requests import Request

    scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(), "headers": []}
    answered = []
    thread = threading.Thread(target=lambda: answered.append(asyncio.run(route.endpoint(Request(scope)))))
    thread.start()
    thread.join(30)
    return answered[0]


def test_without_the_chunks_or_under_a_base_url_streamlit_answers_the_pages(monkeypatch):
    monkeypatch.setattr(server, "first_page_chunks", lambda: ())
    assert server.page_routes(["tokens"]) == []
    monkeypatch.undo()
    monkeypatch.setattr(st, "get_option", lambda name: "/explorer/" if name == "server.baseUrlPath" else None)
    assert server.page_routes(["tokens"]) == []


def _event_html(at) -> list[str]:
    events = next(block for block in at._tree.children.values() if getattr(block, "type", None) == "event")
    return [child.proto.body for child in events.children.values() if type(child).__name__ == "Html"]


def test_every_run_asks_the_browser_for_streamlits_chart_and_widget_code_outside_the_page():
    chunks = server.first_page_chunks()
    assert len(chunks) == len(server.FIRST_PAGE_CHUNKS)  # this Streamlit has each one: else update the list
    assert chunks[0].startswith("PlotlyChart.") and all((server.STATIC_JS / chunk).is_file() for chunk in chunks)
    at = app()
    for _ in range(2):  # the first run and a rerun
        scripts = [body for body in _event_html(at) if chunks[0] in body]
        assert len(scripts) == 1 and scripts[0].startswith("<script>")
        assert all(f"'{chunk}'" in scripts[0] for chunk in chunks) and "import(new URL(chunk" in scripts[0]
        assert not any("PlotlyChart." in getattr(e.proto, "body", "") for e in at.main)  # no room on the page
        at.run()


def test_until_a_first_page_has_painted_each_run_asks_the_browser_to_say_so(monkeypatch):
    monkeypatch.setattr(server, "STARTUP", server.Startup())
    monkeypatch.setattr(server, "paint_route", False)
    at = app()
    assert not any(server.PAINTED_PATH in body for body in _event_html(at))  # no route: nothing to tell
    monkeypatch.setattr(server, "paint_route", True)  # what page_routes does when the server answers the path
    at.run()
    scripts = [body for body in _event_html(at) if server.PAINTED_PATH in body]
    assert len(scripts) == 1 and "method: 'POST'" in scripts[0] and "__explorerPainted" in scripts[0]
    server.STARTUP.tell("painted")
    at.run()
    assert not any(server.PAINTED_PATH in body for body in _event_html(at))


def test_without_the_chunks_nothing_is_sent(monkeypatch):
    monkeypatch.setattr(server, "first_page_chunks", lambda: ())
    at = app()
    assert not any("import(new URL(chunk" in body for body in _event_html(at))  # no script loads a chunk


def test_machine_threads_is_read_before_runs_get_one_thread():
    server.configure_server()
    assert server.machine_threads() == server.machine_threads() >= 1
    with pytest.raises(AttributeError):
        server.NO_SUCH_SETTING  # noqa: B018


def _message(**fields) -> bytes:
    msg = ForwardMsg()
    if "new_session" in fields:
        msg.new_session.SetInParent()
    if "finished" in fields:
        msg.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    if "element" in fields:
        kind, path = fields["element"]
        msg.metadata.delta_path.extend(path)
        if kind == "plotly_chart":
            msg.delta.new_element.plotly_chart.spec = "{}"
        else:
            msg.delta.new_element.markdown.body = "x"
    return msg.SerializeToString()


def test_the_paint_phases_come_from_the_first_message_of_each_kind():
    payloads = [
        _message(new_session=True),
        _message(element=("markdown", [1, 0])),  # the sidebar
        _message(element=("markdown", [0, 0])),  # the page's title
        _message(element=("plotly_chart", [0, 1])),
        _message(element=("plotly_chart", [0, 2])),
        _message(finished=True),
        _message(finished=True),
    ]
    found = actions.message_phases(payloads, [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0])
    assert found == {
        "script_started": 10.0,
        "first_delta": 11.0,
        "first_main": 12.0,
        "chart_delta": 13.0,
        "script_finished": 15.0,
    }
    times = {"origin": 1_000_000.0, "html": 500.0, "opened": 1500.0, "arrivals": [2000.0], "plot": None}
    times |= {"image": 2500.0, "resources": [["http://h/static/js/PlotlyChart.abc.js", 100.0, 2200.0]]}
    phases = actions.browser_phases(times, [payloads[0]], started_epoch=1000.0)
    assert phases["html"] == pytest.approx(0.5) and phases["websocket"] == pytest.approx(1.5)
    assert phases["script_started"] == pytest.approx(2.0) and phases["plotly_js"] == pytest.approx(2.2)
    assert phases["heatmap"] == pytest.approx(2.5) and phases["plot"] != phases["plot"]  # NaN: never seen


def test_the_paint_table_gives_medians_since_start_in_the_order_they_happened():
    samples = [
        {"phases": {"healthy": 1.0, "html": 1.5, "plotly_js": 1.2, "painted": 5.0}},
        {"phases": {"healthy": 2.0, "html": 2.1, "plotly_js": 1.9, "painted": 7.0}},
        {"phases": {"healthy": 3.0, "html": 3.9, "plotly_js": 2.0, "painted": 6.0}},
    ]
    rows = actions.paint_table(samples)
    assert [name for name, _, _ in rows[:4]] == ["plotly_js", "healthy", "html", "painted"]
    assert rows[0] == ("plotly_js", 1.9, 1.9)
    assert rows[1] == ("healthy", 2.0, pytest.approx(0.1))
    assert rows[3] == ("painted", 6.0, pytest.approx(3.9))
    assert {name for name, _, _ in rows} == {name for name, _ in actions.PHASES}
    assert all(at != at for _, at, _ in rows[4:])  # never seen: NaN, listed last


def test_run_as_a_script_the_entry_file_is_the_app():
    """``AppTest.from_file("streamlit_app.py")`` (and a Streamlit that runs the entry file itself) gets the
    whole app: the entry file runs ``explorer_app.py`` when it is a script run, not an import."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60).run()
    assert not at.exception
    assert [title.value for title in at.title] == ["Why attention"]
    assert at.get("plotly_chart") and at.sidebar.radio
