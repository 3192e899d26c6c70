"""``notebooks/chapter3.ipynb`` as a reader runs it: JupyterLab in headless Chromium, the kernel started, Run All.

Each run opens a fresh copy of the notebook in a new browser context (nothing cached in the page), waits for its
kernel to be idle, then presses Run → Run All Cells and times, from that click: the first stepper in the page (the
kernel has run the cells before the first ``explore``: the imports, two classes), the first heatmap drawn (plotly's
``_fullLayout`` and the heatmap's image, ``tests/e2e/jupyter.py``'s test), every heatmap drawn (or how many drew in
3 minutes), and the last cell finished. It then saves the notebook from JupyterLab with its widget state
(ipywidgets' ``saveState``), reports the file's size, stops the kernel and forgets the workspace. The load average
is read before each run: the machine may be shared.

    python -m benchmarks.notebook --runs 3
    python -m benchmarks.notebook --package /tmp/main --no-save  # another checkout's ``attention``, unsaved

Prints one JSON line per run and a summary (medians).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks import meter
from benchmarks.launch import chromium

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "chapter3.ipynb"
EVERY_TIMEOUT_MS = 180_000
HEATMAPS = 18  # six explore() calls, each with its first step's heatmaps (three for queries, keys and values)
SAVE_STATE = {"@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True}}
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in view
FIGURES = f"{PANEL} .js-plotly-plot"
SAVED = """async () => {
  const widget = window.jupyterapp.shell.currentWidget;
  await widget.context.save();
  return !widget.context.model.dirty;
}"""


def forget_run(lab) -> None:
    """Stop every kernel and forget every workspace, so that the next run neither reopens this run's notebook (and
    its kernel) nor finds its steppers in the page."""
    headers = {"Authorization": f"token {lab.token}"}

    def call(path: str, method: str = "GET"):
        request = urllib.request.Request(f"{lab.base_url}{path}", headers=headers, method=method)
        with urllib.request.urlopen(request) as reply:
            return json.loads(reply.read() or b"null")

    for kernel in call("api/kernels"):
        call(f"api/kernels/{kernel['id']}", "DELETE")
    for workspace in call("lab/api/workspaces")["workspaces"]["ids"]:
        call(f"lab/api/workspaces/{workspace}", "DELETE")


def run_once(browser, lab, name: str, save: bool = True) -> dict:
    from jupyter import _PLOTLY_DRAWN, new_page, open_notebook
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    drawn = f"() => [...document.querySelectorAll('{FIGURES}')].filter({_PLOTLY_DRAWN}).length"  # figures drawn

    shutil.copy(NOTEBOOK, lab.root_dir / name)
    context, page = new_page(browser, {"width": 1280, "height": 1400})
    try:
        open_notebook(page, lab.base_url, lab.token, name)
        load = meter.loadavg()
        page.locator("#jp-MainMenu").get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        t0 = time.perf_counter()
        page.locator(f"{PANEL} .ae-explorer").first.wait_for(state="attached", timeout=300_000)
        stepper = time.perf_counter() - t0  # the kernel has run the cells up to the first explore()
        page.wait_for_function(f"() => ({drawn})() >= 1", polling="raf", timeout=300_000)
        first = time.perf_counter() - t0
        try:
            page.wait_for_function(f"() => ({drawn})() >= {HEATMAPS}", polling=100, timeout=EVERY_TIMEOUT_MS)
            every = round(time.perf_counter() - t0, 2)
        except PlaywrightTimeout:  # plotly's own FigureWidget, on a busy machine: some never draw
            every = None
        count = page.evaluate(drawn)
        page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                 .every((p) => /^\\[\\d+\\]:$/.test(p.textContent.trim()))""",
            polling=100,
            timeout=300_000,
        )
        finished = time.perf_counter() - t0
        saved = page.evaluate(SAVED) if save else False
        size = (lab.root_dir / name).stat().st_size if save else None
        return {
            "first_stepper_s": round(stepper, 2),
            "first_heatmap_s": round(first, 2),
            "all_heatmaps_s": every,
            "heatmaps_drawn": count,
            "cells_finished_s": round(finished, 2),
            "saved": saved,
            "saved_bytes": size,
            "load_1m": load[0],
            "load_5m": load[1],
        }
    finally:
        context.close()
        with contextlib.suppress(OSError):
            forget_run(lab)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-save", action="store_true", help="skip the save (92 MB for plotly's own FigureWidget)")
    parser.add_argument("--package", type=Path, default=ROOT, help="the checkout whose attention the kernel imports")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    from jupyter import jupyter_lab

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.package), os.environ.get("PYTHONPATH")]))
    samples = []
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nb-bench-")))
        lab = stack.enter_context(jupyter_lab(root, settings=SAVE_STATE))
        browser = stack.enter_context(chromium())
        for k in range(args.runs):
            sample = run_once(browser, lab, f"run{k + 1}.ipynb", save=not args.no_save)
            print(json.dumps(sample), flush=True)
            samples.append(sample)
    summary = {}
    for key in [key for key in samples[0] if key != "saved"]:
        values = [sample[key] for sample in samples if sample[key] is not None]
        summary[key] = statistics.median(values) if values else None
    print(json.dumps({"median": summary, "runs": len(samples), "package": str(args.package)}))


if __name__ == "__main__":
    main()
