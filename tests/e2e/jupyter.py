"""Driving JupyterLab 4 in headless Chromium, and running a notebook in a fresh kernel, for the browser tests.

``jupyter_lab(root_dir)`` starts ``python -m jupyter lab`` on 127.0.0.1, a free port and a random token, in its own
process group, with its own runtime, config, settings and workspaces folders (so that tests share no state and the
user's own config is not read) but the installed data folders (so that the widget extensions load: ipywidgets'
``@jupyter-widgets/jupyterlab-manager``, ``anywidget``, ``jupyterlab-plotly``). Nothing tries the network: the news
feed and the update check are off, the extension manager is read-only. It yields a ``JupyterLab`` and stops the
server's process group on the way out. In the browser, ``open_notebook`` opens ``lab/tree/<name>`` and waits for the
kernel to be idle, ``run_all`` runs every cell from the Run menu and waits until each code cell has an execution count,
``click_plotly_cell`` clicks the centre of one heatmap cell of a plotly figure. ``execute_notebook`` runs a notebook
file with nbclient in a fresh ``python3`` kernel.

What it takes to render and click widgets in headless Chromium (found while writing ``test_jupyterlab.py``):

- Nothing special for rendering: no GPU, no extra Chromium flags beyond the project's. The widget managers load
  from the installed lab extensions; a notebook written by nbformat is untrusted, but outputs made by running it in
  the page are trusted, so the widgets show. ``plotly.graph_objects.FigureWidget`` is an anywidget: its view draws
  only after its ES module has been imported and plotly.js has run, which can be after the cell's execution count
  shows (here mostly within 0.1 s, but not guaranteed). So never read or click a figure on the count alone:
  ``wait_for_plotly`` waits until the ``.js-plotly-plot`` has ``_fullLayout``, ``_fullData`` and ``calcdata``, its
  SVG, and every visible heatmap's image.
- The kernel is ready only when JupyterLab's session says so. The toolbar's execution indicator reads
  ``data-status="idle"`` *before* the kernel's websocket is connected; Run All pressed then leaves every cell at
  ``[ ]`` and runs nothing (in most runs here). So the server runs with ``--LabApp.expose_app_in_browser`` and
  ``open_notebook`` waits on ``window.jupyterapp``: ``sessionContext.isReady`` and a kernel that is ``connected`` and
  ``idle``.
- The notebook's windowing mode is set to ``none`` in the temporary user settings, so every cell is attached to the
  DOM (the default, ``contentVisibility``, works too, but ``full`` would detach cells out of view).
- Clicks: plotly fires ``plotly_click`` from its drag layer (``.nsewdrag``) on mouse up, after recomputing the hover
  at the pointer; ``page.mouse.click`` moves the pointer there first, which is all the hover it needs. The figure must
  be scrolled into view before its on-screen position is read, and the point must not be covered by another element
  (``click_plotly_cell`` checks ``document.elementFromPoint``). The click reaches Python as
  ``_js2py_pointsCallback`` over the widget's comm; ``trace.on_click`` callbacks run in the kernel, and the widgets
  they change update in the page a moment later: wait on the page, never sleep.
- For the click to pick the invisible scatter point rather than the heatmap under it, the figure needs
  ``hovermode="closest"`` and ``hoverdistance=-1``: the heatmap's hover distance is then infinite and the scatter
  point at the cell's centre is always the closest point.

Playwright is imported only inside the functions, so that collecting the tests without it gives the conftest's
one-line skip instead of an import error.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from deploy.run_cluster import free_port
from deploy.run_cluster import stop as stop_process

START_SECONDS = 120  # a cold ``jupyter lab`` on a busy 2-core machine takes 5-15 s
PAGE_TIMEOUT_MS = 120_000
KERNEL_TIMEOUT_MS = 120_000

# Temporary user settings: every cell in the DOM, no news, no update check.
USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


@dataclass(frozen=True)
class JupyterLab:
    """A running ``jupyter lab``: its base URL (ending in "/"), token, notebook folder and log file."""

    base_url: str
    token: str
    root_dir: Path
    log: Path

    def url(self, path: str) -> str:
        """``base_url + path`` with the token as a query parameter (the token logs the browser in)."""
        return f"{self.base_url}{path}?token={urllib.parse.quote(self.token)}"

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def lab_command(port: int, token: str, root_dir: Path, state_dir: Path) -> list[str]:
    """The ``jupyter lab`` command line: local only, no browser, nothing fetched from the network."""
    return [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--ServerApp.open_browser=False",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={state_dir / 'settings'}",
        f"--LabApp.workspaces_dir={state_dir / 'workspaces'}",
        *(["--allow-root"] if os.geteuid() == 0 else []),  # containers and CI often run as root
    ]


def _wait_answering(base_url: str, token: str, proc: subprocess.Popen, timeout: float) -> None:
    """Until ``GET api/status`` answers 200 with the token; fail early if the server exits."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(f"{base_url}api/status", headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with code {proc.returncode} before it answered")
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=3) as reply:
            if reply.status == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"jupyter lab did not answer at {base_url} in {timeout:.0f} s")


@contextlib.contextmanager
def jupyter_lab(
    root_dir: Path, *, log: Path | None = None, timeout: float = START_SECONDS, settings: dict | None = None
) -> Iterator[JupyterLab]:
    """Start ``jupyter lab`` serving ``root_dir``; yield a ``JupyterLab`` once it answers; stop its process group.

    The server, and the kernels it starts, get temporary ``JUPYTER_RUNTIME_DIR``, ``JUPYTER_CONFIG_DIR`` and
    ``IPYTHONDIR`` and temporary lab user-settings and workspaces folders; the data folders stay as installed.
    ``settings`` adds user settings to ``USER_SETTINGS`` (file name → values).
    Raises ``RuntimeError`` (with the log's tail) if it does not answer in ``timeout`` seconds.
    """
    root_dir = Path(root_dir)
    with tempfile.TemporaryDirectory(prefix="jl-state-") as state:
        state_dir = Path(state)
        for name, values in (USER_SETTINGS | (settings or {})).items():
            path = state_dir / "settings" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        for name in ("runtime", "config", "ipython", "workspaces"):
            (state_dir / name).mkdir(exist_ok=True)
        env = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(state_dir / "runtime"),
            "JUPYTER_CONFIG_DIR": str(state_dir / "config"),
            "IPYTHONDIR": str(state_dir / "ipython"),
        }
        port, token = free_port(), secrets.token_hex(16)
        base_url = f"http://127.0.0.1:{port}/"
        log = Path(log) if log is not None else state_dir / "jupyter.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            proc = subprocess.Popen(
                lab_command(port, token, root_dir, state_dir),
                cwd=root_dir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        lab = JupyterLab(base_url, token, root_dir, log)
        try:
            try:
                _wait_answering(base_url, token, proc, timeout)
            except RuntimeError as error:
                raise RuntimeError(f"{error}\n{lab.log_tail()}") from None
            yield lab
        finally:
            stop_process(proc)


# JavaScript: the notebook in view and its kernel, through the application object that
# ``--LabApp.expose_app_in_browser`` puts on ``window.jupyterapp``.
_KERNEL = """const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const session = widget && widget.sessionContext;
  const kernel = session && session.session && session.session.kernel;
  const idle = !!kernel && session.isReady && kernel.connectionStatus === 'connected' && kernel.status === 'idle';"""
_KERNEL_IDLE = f"""(path) => {{
  {_KERNEL}
  return idle && widget.context.path === path;
}}"""
# Run All has finished: the kernel is idle and every code cell shows an execution count, or a cell failed
# (JupyterLab then stops, and the cells after it never get a count).
_RUN_FINISHED = f"""() => {{
  {_KERNEL}
  if (!idle || !widget.node.querySelector('.jp-Notebook')) return false;
  if (widget.node.querySelector('[data-mime-type="application/vnd.jupyter.error"]')) return true;
  const prompts = [...widget.node.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
  return prompts.length > 0 && prompts.every((p) => /^\\[\\d+\\]:$/.test(p.textContent.trim()));
}}"""


def new_page(browser, viewport: dict | None = None):
    """A fresh browser context (no shared cookies or storage) and its page, with long default timeouts."""
    context = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    return context, context.new_page()


def open_notebook(page, base_url: str, token: str, name: str, timeout_ms: int = KERNEL_TIMEOUT_MS) -> None:
    """Open ``lab/tree/<name>`` in ``page`` and wait until its notebook shows and its kernel is idle.

    The notebook should name its kernel (``metadata.kernelspec``), else JupyterLab asks for one in a dialog;
    that dialog, if it shows, is accepted with the default kernel.
    """
    page.goto(f"{base_url}lab/tree/{urllib.parse.quote(name)}?token={urllib.parse.quote(token)}")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").wait_for(state="visible", timeout=timeout_ms)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(_KERNEL_IDLE, arg=name, timeout=1000)
            return
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and "kernel" in dialog.inner_text().lower():
            dialog.locator(".jp-mod-accept").click()
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel of {name} was not idle within {timeout_ms / 1000:.0f} s")


def run_all(page, timeout_ms: int = KERNEL_TIMEOUT_MS) -> None:
    """Run every cell (menu Run → Run All Cells); wait until the kernel is idle and each code cell has a count.

    Raises ``AssertionError`` with the error output if a cell failed.
    """
    page.locator("#jp-MainMenu").get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(_RUN_FINISHED, timeout=timeout_ms)
    errors = cell_errors(page)
    assert not errors, "a cell failed:\n" + "\n".join(errors)


def cell_errors(page) -> list[str]:
    """The text of every error output (a traceback) in the notebook in view."""
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    return panel.locator('[data-mime-type="application/vnd.jupyter.error"]').all_inner_texts()


# JavaScript: the plot has drawn, each visible heatmap with its image.
_PLOTLY_DRAWN = """(gd) => {
  if (!gd._fullLayout || !gd._fullData || !gd.calcdata || !gd.querySelector('.main-svg')) return false;
  const heatmaps = gd._fullData.filter((t) => t.type === 'heatmap' && t.visible === true).length;
  const images = [...gd.querySelectorAll('.hm image')];
  return images.filter((i) => (i.getAttribute('href') || '').startsWith('data:image/')).length >= heatmaps;
}"""


def plotly_plot(locator):
    """The ``.js-plotly-plot`` element itself: ``locator`` if it is one, else the first one inside it."""
    if locator.evaluate("(el) => el.classList.contains('js-plotly-plot')"):
        return locator
    return locator.locator(".js-plotly-plot").first


def wait_for_plotly(page, plot_locator, timeout_ms: int = PAGE_TIMEOUT_MS):
    """Wait until the plotly figure at ``plot_locator`` (or inside it) has drawn; return its ``.js-plotly-plot``."""
    plot_locator.first.wait_for(state="attached", timeout=timeout_ms)
    plot = plotly_plot(plot_locator.first)
    plot.wait_for(state="visible", timeout=timeout_ms)
    page.wait_for_function(_PLOTLY_DRAWN, arg=plot.element_handle(), timeout=timeout_ms)
    return plot


# JavaScript: the viewport position of the centre of heatmap cell (row, col). Prefer the point of the trace named
# `name` whose customdata is [row, col] (the invisible click target); else the cell of the first heatmap. Either way
# on that trace's own axes (xaxis / yaxis names such as "x2" for subplots), through plotly's calc -> pixel mapping,
# which handles linear, category and reversed axes alike.
_CELL_CENTRE = """(gd, [row, col, name]) => {
  const layout = gd._fullLayout;
  const axes = (trace) => [layout[trace.xaxis.replace('x', 'xaxis')], layout[trace.yaxis.replace('y', 'yaxis')]];
  // the cells may be split over several traces of that name (cells that share a hover share one)
  const full = gd._fullData;
  const named = [...full.keys()].filter((i) => full[i].name === name && full[i].visible === true);
  let index = named.length ? named[0] : -1;
  let cx, cy, trace;
  if (index >= 0) {
    let point;
    for (const i of named) {
      const custom = gd._fullData[i].customdata || [];
      point = [...custom.keys()].find((k) => custom[k] && +custom[k][0] === row && +custom[k][1] === col);
      if (point !== undefined) { index = i; break; }
    }
    if (point === undefined) return {error: `no point of a trace ${name} has customdata [${row}, ${col}]`};
    trace = gd._fullData[index];
    const calc = gd.calcdata[index].find((c) => c.i === point) || gd.calcdata[index][point];
    cx = calc.x; cy = calc.y;
  } else {
    index = gd._fullData.findIndex((t) => t.type === 'heatmap' && t.visible === true);
    if (index < 0) return {error: `no trace named ${name} and no heatmap`};
    trace = gd._fullData[index];
    const calc = gd.calcdata[index][0];
    cx = (calc.xCenter || calc.x)[col]; cy = (calc.yCenter || calc.y)[row];
    if (calc.xCenter === undefined) cx = (calc.x[col] + calc.x[col + 1]) / 2;
    if (calc.yCenter === undefined) cy = (calc.y[row] + calc.y[row + 1]) / 2;
  }
  const [xa, ya] = axes(trace);
  const svg = gd.querySelector('.main-svg').getBoundingClientRect();
  const x = svg.left + xa._offset + xa.c2p(cx);
  const y = svg.top + ya._offset + ya.c2p(cy);
  const hit = document.elementFromPoint(x, y);
  // plotly takes hovers and clicks on its drag layer; anything else there (a modebar, a legend, another element
  // of the page) would swallow the click
  const onDragLayer = !!hit && gd.contains(hit) && !!hit.closest('.draglayer');
  return {x, y, onDragLayer, hit: hit ? hit.className.baseVal ?? hit.className : null};
}"""


def plotly_cell_centre(page, plot_locator, row: int, col: int, trace_name: str = "cells") -> tuple[float, float]:
    """The viewport (x, y) of the centre of heatmap cell (row, col), after scrolling the figure into view."""
    plot = wait_for_plotly(page, plot_locator)
    plot.scroll_into_view_if_needed()
    where = plot.evaluate(_CELL_CENTRE, [row, col, trace_name])
    if "error" in where:
        raise ValueError(where["error"])
    if not where["onDragLayer"]:
        raise AssertionError(f"cell ({row}, {col}) at {where['x']:.0f},{where['y']:.0f} is covered by {where['hit']}")
    return where["x"], where["y"]


def click_plotly_cell(page, plot_locator, row: int, col: int, trace_name: str = "cells") -> tuple[float, float]:
    """Click the centre of heatmap cell (row, col) of the plotly figure at ``plot_locator``; return where it clicked.

    The centre comes from plotly's own axes in the page (the named trace's point with ``customdata`` [row, col], or
    the heatmap's cell when there is no such trace), so it follows subplots, category and reversed axes.
    ``page.mouse.click`` moves the pointer there first, which gives plotly the hover its click needs.
    """
    x, y = plotly_cell_centre(page, plot_locator, row, col, trace_name)
    page.mouse.click(x, y)
    return x, y


def execute_notebook(path: Path, timeout: int = 120, kernel_name: str = "python3"):
    """Run the notebook at ``path`` top to bottom with nbclient in a fresh kernel (cwd: its folder); return it.

    A failing cell raises ``nbclient.exceptions.CellExecutionError``; the executed notebook is not saved.
    """
    import nbclient
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    return nb


def error_outputs(nb) -> list[str]:
    """``ename: evalue`` of every error output in an executed notebook."""
    return [
        f"{output.get('ename')}: {output.get('evalue')}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
