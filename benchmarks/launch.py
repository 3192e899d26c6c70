"""Start the app's server, Redis and headless Chromium: one launcher for benchmarks/, scripts/ and tests/e2e.

``AppServer`` is one ``streamlit run`` on 127.0.0.1 and a free port (under ``benchmarks.serve`` when given
``serve_options``); ``TimedServer`` reads the run times ``serve --timings`` writes; ``lesson_target`` gives the
load benchmark one server or several behind nginx (``ClusterServer``), ``RedisServer`` the live rooms' store.
``launch_chromium`` starts the system's Chromium through Playwright with the flags every caller uses; in it,
``BrowserTab`` times Enter to painted and ``cold_start`` a start from ``streamlit run`` to the first heatmap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from benchmarks import meter
from deploy.run_cluster import Cluster, free_port, wait_healthy
from deploy.run_cluster import stop as stop_process

ROOT = Path(__file__).resolve().parents[1]
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken_cache"
CHROMIUM = Path(meter.CHROMIUM)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
CHROMIUM_ARGS += ["--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 720}
QUIET_MS = 800  # Enter to painted ends once no plot has changed for this long
# A JavaScript predicate for page.wait_for_function: the run has finished, nothing is stale, and every plot has
# drawn, each heatmap with its image (or the page shows an exception, which the caller then reports).
SETTLED = """() => {
  const app = document.querySelector('.stApp');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')) return false;
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  if (document.querySelector('[data-testid="stException"]')) return true;
  if (!main.querySelector('[data-testid="stHeading"], [data-testid="stAlert"]')) return false;
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    if (!plot._fullData || !plot._fullLayout || !plot.querySelector('.main-svg')) return false;
    const heatmaps = plot._fullData.filter((t) => t.type === 'heatmap' && t.visible === true).length;
    const images = [...plot.querySelectorAll('.hm image')];
    if (images.filter((i) => (i.getAttribute('href') || '').startsWith('data:image/')).length < heatmaps) return false;
  }
  return true;
}"""


def launch_chromium(playwright):
    """Headless Chromium (``playwright.chromium``) with the project's flags; close it when done."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@contextlib.contextmanager
def chromium():
    """Headless Chromium through Playwright's synchronous API, closed on the way out."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()


def new_tab(browser):
    """A fresh browser context (its own Streamlit session) with the project's viewport and a 5-minute timeout, and
    its page."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(300_000)
    return context, context.new_page()


def problems(log: str) -> list[str]:
    """The lines of a server's log that tell of an error."""
    return [line[:200] for line in log.splitlines() if "Traceback" in line or " ERROR " in line or "Exception" in line]


class AppServer:
    """``streamlit run script`` on a free port, in its own process group; ``start()`` returns its base URL once
    it is healthy. ``serve_options`` (a list, possibly empty) runs it under ``python -m benchmarks.serve``;
    ``env`` is added to the environment. To the load benchmark it is one server the students reach directly."""

    proxied = False
    memory_log = ""  # serve --memory-log's file, when lesson_target asks for one

    def __init__(self, script="streamlit_app.py", *, log: Path, serve_options: list[str] | None = None, env=None):
        self.script, self.log, self.serve_options, self.env = script, Path(log), serve_options, env or {}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.app_bases = [self.base]
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        streamlit = ["run", self.script, "--server.port", str(self.port), "--server.address", "127.0.0.1"]
        streamlit += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
        if self.serve_options is None:
            return [sys.executable, "-m", "streamlit", *streamlit]
        return [sys.executable, "-m", "benchmarks.serve", *self.serve_options, "--", *streamlit]

    def start(self, timeout: float = 180.0) -> str:
        env = {**os.environ, **self.env}
        if "TIKTOKEN_CACHE_DIR" not in env and TIKTOKEN_CACHE.is_dir():
            env["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                self.command(), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            wait_healthy(f"{self.base}/_stcore/health", self.proc, timeout)  # every 0.3 s
        except RuntimeError as error:
            self.stop()
            tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"the app server did not start: {error}\n{tail}") from None
        return self.base

    def stop(self) -> None:
        """Terminate the server's process group, then kill it if it does not exit."""
        if self.proc is not None:
            stop_process(self.proc)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def log_problems(self) -> list[str]:
        return problems(self.log.read_text(errors="replace"))

    def cpu_s(self) -> float:
        """The server's user + system CPU seconds so far."""
        return meter.process_cpu_s(self.proc.pid)

    def rss_mib(self) -> float:
        return meter.process_rss_mib(self.proc.pid)

    def processes(self) -> dict[str, int]:
        return {"app": self.proc.pid}


class TimedServer(AppServer):
    """``streamlit run SCRIPT`` under ``serve --timings``, which times every script run; logs in ``folder``."""

    def __init__(self, script: str, name: str, folder: Path) -> None:
        self.name, self.timings = name, folder / f"{name}.timings.jsonl"
        super().__init__(script, log=folder / f"{name}.log", serve_options=["--timings", str(self.timings)])
        self.pages: list[tuple[str, str]] = []

    def start(self, timeout: float = 180.0) -> str:
        self.timings.parent.mkdir(parents=True, exist_ok=True)
        self.timings.write_text("")
        return super().start(timeout)

    def mark(self) -> int:
        with self.timings.open() as f:
            return sum(1 for _ in f)

    async def timed_send(self, student, kind: str, message: bytes, text: str | None = None):
        """Send ``message`` once the previous run's post-run collection is over: the run, its timing (NaN
        where none was written) and the 1-minute load average when it was sent."""
        await asyncio.sleep(0.3)
        mark, load = self.mark(), meter.loadavg()[0]
        run = await student.send(kind, message, expect_text=text)
        deadline = time.monotonic() + 30.0
        while self.mark() <= mark and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        timing = dict.fromkeys(("script_s", "script_cpu_s", "after_s", "total_s"), float("nan"))
        if self.mark() > mark:  # the line is written after the post-run GC
            await asyncio.sleep(0.05)  # a rerun the script asked for writes one line for both runs
            timing |= json.loads(self.timings.read_text().splitlines()[-1])
        return run, timing, load


class ClusterServer:
    """``servers`` app processes behind nginx with sticky sessions (``deploy/run_cluster.py``)."""

    proxied, memory_log = True, ""

    def __init__(self, servers: int, log_path: str, env: dict[str, str]) -> None:
        self.cluster = Cluster(servers, app_env=env, show_upstream=True)  # protocol.py reads X-Upstream
        self.base = self.cluster.url
        self.app_bases = [f"http://127.0.0.1:{port}" for port in self.cluster.app_ports]
        self.log_dir = Path(log_path).with_suffix("")

    def command(self) -> list[str]:
        return ["python", "deploy/run_cluster.py", "--processes", str(len(self.app_bases))]

    def start(self) -> str:
        return self.cluster.start()

    def stop(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name in [f"app-{port}.log" for port in self.cluster.app_ports] + ["nginx.log"]:
            (self.log_dir / name).write_text(self.cluster.log(name))
        self.cluster.stop()

    def processes(self) -> dict[str, int]:
        apps = {f"app:{port}": app.pid for port, app in zip(self.cluster.app_ports, self.cluster.apps, strict=True)}
        return {**apps, "nginx": self.cluster.proxy.pid}

    def cpu_s(self) -> float:
        return sum(meter.process_cpu_s(app.pid) for app in self.cluster.apps)

    def rss_mib(self) -> float:
        return sum(meter.process_rss_mib(app.pid) for app in self.cluster.apps)

    def log_problems(self) -> list[str]:
        return problems("\n".join(self.cluster.log(f"app-{port}.log") for port in self.cluster.app_ports))


class RedisServer:
    """Debian's ``redis-server`` on a free loopback port, in memory only: the live rooms' store for a lesson."""

    def __init__(self) -> None:
        self.port, self.proc = free_port(), None

    def start(self) -> str:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 20
        while subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout != b"PONG\n":
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.1)
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


def lesson_target(servers: int, log_path: str, arena_max: int, memory_log: str = "", every: float = 5.0):
    """One app server (``servers`` = 1, no proxy), sampling its memory into ``memory_log`` if given, or
    ``servers`` of them behind nginx."""
    env = {"MALLOC_ARENA_MAX": str(arena_max)} if arena_max else {}
    if servers == 1:
        serve = ["--memory-log", memory_log, "--memory-every", str(every)] if memory_log else None
        server = AppServer(log=Path(log_path), env=env, serve_options=serve)
        server.memory_log = memory_log
        return server
    if memory_log:
        raise SystemExit("--memory-log is for one server: use --servers 1")
    return ClusterServer(servers, log_path, env)


INIT_SCRIPT = """
window.__scale = {enter: null, runs: 0, finished: null, lastPlot: null, lastPaint: null, settled: null};
document.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && event.target.closest && event.target.closest('.st-key-w_text'))
    window.__scale.enter = performance.now();
}, true);
const inPlot = (node) => {
  const element = node && (node.nodeType === 1 ? node : node.parentElement);
  return !!(element && element.closest && element.closest('.js-plotly-plot'));
};
const hasPlot = (node) => node && node.nodeType === 1 &&
  (node.matches('.js-plotly-plot') || !!node.querySelector('.js-plotly-plot'));
new MutationObserver((records) => {
  let plot = false;
  for (const r of records) {
    if (r.type === 'attributes' && r.attributeName === 'data-test-script-state') {
      if (r.target.getAttribute('data-test-script-state') === 'notRunning' && r.oldValue !== 'notRunning') {
        window.__scale.runs += 1;
        window.__scale.finished = performance.now();
      }
      continue;
    }
    plot = plot || inPlot(r.target) || [...r.addedNodes].some(hasPlot) || [...r.removedNodes].some(hasPlot);
  }
  if (plot) {
    window.__scale.lastPlot = performance.now();
    requestAnimationFrame(() => requestAnimationFrame(() => {
      window.__scale.lastPaint = Math.max(window.__scale.lastPaint || 0, performance.now());
    }));
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeOldValue: true});
"""

FIRST_HEATMAP = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot .hm image')].some(
  (i) => (i.getAttribute('href') || '').startsWith('data:image/'))"""
PLOTS = """() => document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').length"""


class BrowserTab:
    """One Chromium context on the app (its own Streamlit session), with the paint clock installed."""

    def __init__(self, browser, base: str) -> None:
        self.context, self.page = new_tab(browser)
        self.page.add_init_script(INIT_SCRIPT)
        self.received, self.base = 0, base  # received: the bytes the websocket brought so far
        self.page.on("websocket", lambda ws: ws.on("framereceived", self._count))

    def _count(self, payload) -> None:
        self.received += len(payload)

    def close(self) -> None:
        self.context.close()

    def settle(self, before_runs: int = -1) -> None:
        """Wait for a finished run (after ``before_runs``), settled, then no plot change for ``QUIET_MS``."""
        self.page.wait_for_function(
            f"() => window.__scale.runs > {before_runs} && ({SETTLED})() && "
            "(window.__scale.settled = window.__scale.settled || performance.now())",
            polling="raf",
            timeout=300_000,
        )
        quiet = f"() => performance.now() - Math.max(window.__scale.lastPlot || 0, window.__scale.settled) > {QUIET_MS}"
        self.page.wait_for_function(quiet, polling=100, timeout=60_000)

    def open(self, url_path: str, query: dict[str, str]) -> None:
        self.page.goto(f"{self.base}/{url_path}?{urllib.parse.urlencode(query)}", timeout=300_000)
        self.settle()

    def type_sentence(self, text: str) -> dict:
        """Fill the sidebar's Sentence, press Enter, wait until painted; the times in ms from the Enter (finished:
        the run ended, as the browser saw it)."""
        self.page.evaluate(
            "() => Object.assign(window.__scale, {enter: null, lastPlot: null, lastPaint: null, settled: null})"
        )
        before, received = self.page.evaluate("() => window.__scale.runs"), self.received
        box = self.page.locator('[data-testid="stSidebar"] .st-key-w_text input')
        box.fill(text)
        load = meter.loadavg()[0]
        box.press("Enter")
        self.settle(before)
        s = self.page.evaluate("() => window.__scale")
        painted, enter = max(s["lastPaint"] or 0, s["settled"]), s["enter"]
        out = {"painted_ms": painted - enter, "finished_ms": s["finished"] - enter, "settled_ms": s["settled"] - enter}
        return out | {"received_bytes": self.received - received, "plots": self.page.evaluate(PLOTS), "load": load}


def cold_start(
    browser, log: Path, url: str = "/", env=None, init_script: str = "", inspect=None, script: str = "streamlit_app.py"
) -> dict:
    """``streamlit run script`` launched until ``url``'s first heatmap is painted and the page settled,
    in a new context of the already running ``browser``: seconds (and the server's CPU seconds) to health and
    to paint. ``inspect(page, base, payloads, started_epoch)`` adds what it returns before the tab closes;
    ``payloads`` are the websocket messages the tab received, ``init_script`` runs before the page's code."""
    load, server = meter.loadavg()[0], AppServer(script, log=log, env=env)
    t0, epoch0 = time.perf_counter(), time.time()
    with server as base:
        sample = {"healthy_s": time.perf_counter() - t0, "healthy_cpu_s": server.cpu_s(), "load": load}
        context, page = new_tab(browser)
        if init_script:
            page.add_init_script(init_script)
        payloads: list[bytes] = []
        page.on("websocket", lambda ws: ws.on("framereceived", lambda data: payloads.append(data)))
        page.goto(base + url, wait_until="commit")
        page.wait_for_function(f"() => ({FIRST_HEATMAP})() && ({SETTLED})()", polling="raf")
        sample |= {"painted_s": time.perf_counter() - t0, "painted_cpu_s": server.cpu_s()}
        if inspect:
            sample |= inspect(page, base, payloads, epoch0)
        context.close()
    return sample
