"""What benchmarks read in Chromium: the clocks installed in a tab, a tab that times Enter to painted, and
a cold start from ``streamlit run`` to the first painted heatmap."""

from __future__ import annotations

import contextlib
import time
import urllib.parse
from pathlib import Path

from benchmarks.launch import SETTLED, VIEWPORT, AppServer, launch_chromium
from benchmarks.meter import loadavg

QUIET_MS = 800  # Enter to painted ends once no plot has changed for this long


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


def new_context(browser):
    """A fresh browser context (its own Streamlit session) with the project's viewport and a 5-minute timeout."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(300_000)
    return context


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

FIRST_HEATMAP = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  return [...main.querySelectorAll('.js-plotly-plot .hm image')].some(
    (i) => (i.getAttribute('href') || '').startsWith('data:image/'));
}"""
PLOTS = """() => document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot').length"""


class BrowserTab:
    """One Chromium context on the app (its own Streamlit session), with the paint clock installed."""

    def __init__(self, browser, base: str) -> None:
        self.context = new_context(browser)
        self.page = self.context.new_page()
        self.page.add_init_script(INIT_SCRIPT)
        self.received = 0
        self.page.on("websocket", lambda ws: ws.on("framereceived", self._count))
        self.base = base

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
        before = self.page.evaluate("() => window.__scale.runs")
        received = self.received
        box = self.page.locator('[data-testid="stSidebar"] .st-key-w_text input')
        box.fill(text)
        load = loadavg()[0]
        box.press("Enter")
        self.settle(before)
        s = self.page.evaluate("() => window.__scale")
        painted, enter = max(s["lastPaint"] or 0, s["settled"]), s["enter"]
        out = {"painted_ms": painted - enter, "finished_ms": s["finished"] - enter, "settled_ms": s["settled"] - enter}
        return out | {"received_bytes": self.received - received, "plots": self.page.evaluate(PLOTS), "load": load}


def cold_start(browser, log: Path, url: str = "/", env=None, init_script: str = "", inspect=None) -> dict:
    """``streamlit run streamlit_app.py`` launched until ``url``'s first heatmap is painted and the page settled,
    in a new context of the already running ``browser``: seconds (and the server's CPU seconds) to health and
    to paint. ``inspect(page, base, payloads, started_epoch)`` adds what it returns before the tab closes;
    ``payloads`` are the websocket messages the tab received, ``init_script`` runs before the page's code."""
    load, server = loadavg()[0], AppServer(log=log, env=env)
    t0, epoch0 = time.perf_counter(), time.time()
    with server as base:
        sample = {"healthy_s": time.perf_counter() - t0, "healthy_cpu_s": server.cpu_s(), "load": load}
        context = new_context(browser)
        page = context.new_page()
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
