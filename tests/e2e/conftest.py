"""Fixtures for the browser tests: one app server and one Chromium per test session, a fresh context per test.

Without Chromium (or Playwright) these tests are skipped with a one-line
reason; with ``CI=true`` they fail instead, so CI cannot pass without running them.
The server and the browser are always stopped, also when a test fails.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from e2e_support import ARTIFACTS, ROOT, AppPage, open_page

CHROMIUM = Path("/usr/lib/chromium/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_SECONDS = 180


def missing_requirement() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "Python package playwright is not installed (pip install -r requirements-dev.txt)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    return None


MISSING = missing_requirement()


@pytest.fixture(scope="session", autouse=True)
def _browser_available() -> None:
    """Skip every browser test without a browser; in CI fail them instead."""
    if MISSING is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run in CI: {MISSING}", pytrace=False)
    pytest.skip(f"browser tests skipped: {MISSING}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Report all those skips at this file, so that pytest folds them into one summary line."""
    report = yield
    if MISSING and report.skipped and isinstance(report.longrepr, tuple):
        report.longrepr = (__file__, None, report.longrepr[2])
    return report


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """Terminate the server's process group, then kill it if it does not exit."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@pytest.fixture(scope="session")
def server(_browser_available) -> str:
    """``streamlit run streamlit_app.py`` on 127.0.0.1 and a free port; yields the base URL."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = ARTIFACTS / "server.log"
    with log_path.open("w") as log:
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
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=ROOT,
            env=dict(os.environ),  # TIKTOKEN_CACHE_DIR and the rest reach the app
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so _stop ends it and its children
        )
    try:
        base_url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            if process.poll() is not None:
                log_tail = log_path.read_text(errors="replace")[-3000:]
                pytest.fail(f"the app server exited ({process.returncode}):\n{log_tail}")
            try:
                with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=5) as response:
                    if response.read() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                log_tail = log_path.read_text(errors="replace")[-3000:]
                pytest.fail(f"the app server did not start in {SERVER_START_SECONDS} s:\n{log_tail}")
            time.sleep(0.5)
        yield base_url
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def browser(_browser_available):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def open_app(server, browser):
    """A factory of ``AppPage``s, each in its own browser context (its own Streamlit session).

    After the test, every context is closed; then any dialog or unexpected
    console error fails the test.
    """
    opened = []

    def factory() -> AppPage:
        context, app_page = open_page(browser, server)
        opened.append((context, app_page))
        return app_page

    yield factory
    problems = []
    for context, app_page in opened:
        problems += app_page.events.problems()
        context.close()
    assert not problems, "the browser reported:\n" + "\n".join(problems)


@pytest.fixture
def app_page(open_app) -> AppPage:
    """One fresh browser context on the app."""
    return open_app()
