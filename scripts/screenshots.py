"""Screenshot pages of the running app in headless Chromium, for looking at them.

    python scripts/screenshots.py tokens simplified --steps 1,2 --query "input=text&text=Hello"

Starts ``streamlit run streamlit_app.py`` on a free port (or uses ``--url``),
opens each page at each step, waits for the figures, and writes
``artifacts/screens/<page>-step<k><name>.png`` at 1280×720 (``--size`` for another window, ``--full`` for
the whole page).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.launch import SETTLED, VIEWPORT, AppServer, launch_chromium  # noqa: E402

sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "e2e")]
from e2e_support import PHONE_AGENT  # noqa: E402  (the User-Agent the phone tests send)

ROOT_PAGES = ("", "home", "why_attention")  # the navigation's default page has no path of its own


def wait_for_app(page, timeout_ms: int = 120_000) -> None:
    """Wait until the script run has finished and every plotly figure has painted, then a second more."""
    page.wait_for_function(SETTLED, timeout=timeout_ms, polling=250)
    page.wait_for_timeout(1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pages", nargs="+", help="url paths, e.g. tokens simplified")
    parser.add_argument("--steps", default="1", help="comma-separated step numbers")
    parser.add_argument("--query", default="", help="extra query string, e.g. input=text&text=Hi")
    parser.add_argument("--out", default=str(ROOT / "artifacts" / "screens"))
    parser.add_argument("--full", action="store_true", help="capture the whole page, not just 1280×720")
    parser.add_argument("--url", default=None, help="use an already running app")
    parser.add_argument("--size", default=None, help="the window, e.g. 390x844 for a phone (default 1280x720)")
    parser.add_argument("--name", default="", help="added to each file's name, e.g. _phone")
    parser.add_argument("--phone", action="store_true", help="a phone: 390x844 and a phone's User-Agent")
    parser.add_argument("--scroll", default=None, help="a CSS selector to scroll into view, e.g. .st-key-cell_panel")
    args = parser.parse_args()
    width, height = (int(n) for n in args.size.split("x")) if args.size else (VIEWPORT["width"], VIEWPORT["height"])
    width, height = (390, 844) if args.phone else (width, height)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        base = args.url or stack.enter_context(AppServer(log=ROOT / "artifacts" / "screens" / "server.log"))
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            agent = {"user_agent": PHONE_AGENT} if args.phone else {}
            context = browser.new_context(viewport={"width": width, "height": height}, **agent)
            page = context.new_page()
            for name in args.pages:
                for step in args.steps.split(","):
                    query = "&".join(q for q in (f"step={step}", args.query) if q)
                    path = "" if name in ROOT_PAGES else name  # the default page lives at the root
                    page.goto(f"{base}/{path}?{query}")
                    wait_for_app(page)
                    if args.scroll and page.locator(args.scroll).count():
                        page.locator(args.scroll).first.evaluate("(el) => el.scrollIntoView({block: 'end'})")
                        page.wait_for_timeout(300)
                    path = out / f"{name}-step{step}{args.name}.png"
                    page.screenshot(path=str(path), full_page=args.full)
                    print(path)
            browser.close()


if __name__ == "__main__":
    main()
