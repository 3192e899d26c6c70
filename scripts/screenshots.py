"""Screenshot pages of the running app in headless Chromium, for looking at them.

    python scripts/screenshots.py tokens simplified --steps 1,2 --query "input=text&text=Hello"

Starts ``streamlit run streamlit_app.py`` on a free port (or uses ``--url``),
opens each page at each step, waits for the figures, and writes
``artifacts/screens/<page>-step<k>.png`` at 1280×720 (``--full`` for the whole page).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/lib/chromium/chromium"
ROOT_PAGES = ("", "home", "why_attention")  # the navigation's default page has no path of its own
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def server(port: int):
    env = dict(os.environ)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "streamlit_app.py",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)


def wait_for_app(page, timeout_ms: int = 120_000) -> None:
    """Wait until the script run has finished and every plotly figure has painted."""
    page.wait_for_selector("[data-testid='stMain']", timeout=timeout_ms)
    page.wait_for_function(
        """() => document.querySelector('[data-testid="stMainBlockContainer"] [data-testid="stHeading"]')
              && !document.querySelector('[data-testid="stStatusWidget"]')
              && !document.querySelector('[data-testid="stSkeleton"]')
              && [...document.querySelectorAll('.js-plotly-plot')].every(p => p.querySelector('.main-svg'))""",
        timeout=timeout_ms,
        polling=250,
    )
    page.wait_for_timeout(1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pages", nargs="+", help="url paths, e.g. tokens simplified")
    parser.add_argument("--steps", default="1", help="comma-separated step numbers")
    parser.add_argument("--query", default="", help="extra query string, e.g. input=text&text=Hi")
    parser.add_argument("--out", default=str(ROOT / "artifacts" / "screens"))
    parser.add_argument("--full", action="store_true", help="capture the whole page, not just 1280×720")
    parser.add_argument("--url", default=None, help="use an already running app")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        base = args.url or stack.enter_context(server(free_port()))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 720})
            page = context.new_page()
            for name in args.pages:
                for step in args.steps.split(","):
                    query = "&".join(q for q in (f"step={step}", args.query) if q)
                    path = "" if name in ROOT_PAGES else name  # the default page lives at the root
                    page.goto(f"{base}/{path}?{query}")
                    wait_for_app(page)
                    path = out / f"{name}-step{step}.png"
                    page.screenshot(path=str(path), full_page=args.full)
                    print(path)
            browser.close()


if __name__ == "__main__":
    main()
