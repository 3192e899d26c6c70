"""Fixtures for the browser tests: one app server and one Chromium per test session, a fresh context per test.

Without Chromium (or Playwright) these tests are skipped with a one-line
reason; with ``CI=true`` they fail instead, so CI cannot pass without running them.
The server and the browser are always stopped, also when a test fails.
"""

from __future__ import annotations

import importlib.util
import os

import pytest
from e2e_support import ARTIFACTS, AppPage, open_page

from benchmarks.launch import CHROMIUM, AppServer, chromium

SERVER_START_SECONDS = 180


def missing_browser() -> str | None:
    """Why Chromium cannot be driven here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "Python package playwright is not installed (pip install -r requirements-dev.txt)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    return None


MISSING = missing_browser()


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


@pytest.fixture(scope="session")
def server(_browser_available) -> str:
    """``streamlit run streamlit_app.py`` on 127.0.0.1 and a free port; yields the base URL."""
    app = AppServer(log=ARTIFACTS / "server.log")
    try:
        base_url = app.start(timeout=SERVER_START_SECONDS)  # stops the server if it fails to start
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield base_url
    finally:
        app.stop()


@pytest.fixture(scope="session")
def browser(_browser_available):
    with chromium() as launched:
        yield launched


@pytest.fixture
def open_app(server, browser):
    """A factory of ``AppPage``s, each in its own browser context (its own Streamlit session).

    After the test, every context is closed; then any dialog or unexpected
    console error fails the test.
    """
    opened = []

    def factory(**options) -> AppPage:
        context, app_page = open_page(browser, server, **options)
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
