"""Every action a learner can take, on every step of every page, clicked in Chromium and judged by what it gives.

One test per page (``PAGES`` of ``explorer_app.py``), so that pytest-xdist spreads them. On each step the walk
clicks, at the element's centre as a person does, every download (the step's JSON, each chart's CSV, each chart's
PNG from its toolbar) and parses what arrives; answers each question and presses Reveal and Ask again; presses the
page's own buttons (Speed's sizes and "Run the comparison" at small sizes, Generate's settings and "Time one new
token", Dropout's "Back to the book's p"); presses Next, and Previous once; and at the end opens the sidebar's "Copy
link to this view" in a new tab. Every button and link in the main area is sorted into a kind the walk knows
(``kind_of``): one it does not know fails the test, and so does a download button it did not click, so that a new
action cannot go untested. After the walk, the server's log may hold no new traceback.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import struct
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest
from e2e_support import ARTIFACTS, AppPage, app_pages, eventually
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from benchmarks.launch import problems

pytestmark = pytest.mark.browser

PAGES = app_pages()
DOWNLOAD_MS = 30_000  # a download is made when pressed; on a busy 2-core machine that can take a while
QUERIES = {"dropout": "p=0.1&mode=train"}  # the sidebar's dropout on, so "Back to the book's p" can be pressed
SPEED_T = (16, 32)  # short sequences: the comparison takes seconds, not a minute
GENERATE_NEW = 6  # new tokens: the Generate page's steps draw six, not 40

# Every visible button and link in the main area, with where it sits: its nearest ``st-key-*`` class and test id.
INVENTORY = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const shown = (e) => e.offsetParent !== null && e.getBoundingClientRect().width > 0;
  return [...main.querySelectorAll('button, a[href]')].filter(shown).filter((e) => !e.closest('.modebar'))
    .map((e) => {
      const keyed = e.closest('[class*="st-key-"]');
      const key = keyed ? [...keyed.classList].find((c) => c.startsWith('st-key-')).slice(7) : '';
      const test = e.closest('[data-testid]');
      return {tag: e.tagName.toLowerCase(), key, testid: test ? test.getAttribute('data-testid') : '',
              text: e.innerText.trim(), disabled: !!e.disabled, href: e.getAttribute('href') || ''};
    });
}"""

# Parts of inputs (a select box's arrow, a number box's − and +, a help icon) and Streamlit's own chrome: not actions
# of the app. A segmented control (a head to show) is a setting, like the sidebar's.
INPUT_PARTS = {
    "stSelectbox",
    "stMultiSelect",
    "stNumberInputStepDown",
    "stNumberInputStepUp",
    "stTooltipHoverTarget",
    "stButtonGroup",
    "stBaseButton-elementToolbar",  # a table's toolbar (search, full screen, Streamlit's own CSV)
    "stCodeCopyButton",
    "stHeadingActionElements",  # a heading's anchor link
}


def kind_of(element: dict) -> str:
    """What a button or link of the main area is, or "unknown" (which fails the walk)."""
    key, testid, text = element["key"], element["testid"], element["text"]
    if testid in INPUT_PARTS or (element["tag"] == "a" and element["href"].startswith("#")):
        return "input"
    if key.startswith(("prev-", "next-")):
        return key.split("-", 1)[0]
    if key == "step_json":
        return "json"
    if key.startswith("csv-"):
        return "csv"
    if key.startswith("predict_") and key.endswith("_reveal"):
        return "reveal"
    if key.startswith("predict_") and key.endswith("_again"):
        return "ask_again"
    if key in ("speed_sizes", "speed_run", "generate_time", "book_dropout"):
        return key
    if testid == "stPopoverButton" and "Generation:" in text:
        return "generate_settings"
    if testid == "stPageLink-NavLink" or (element["tag"] == "a" and "stPageLink" in testid):
        return "page_link"
    if element["tag"] == "a" and "glossary" in element["href"]:
        return "glossary_link"  # a term's link into the Glossary
    return "unknown"


@dataclass
class Walked:
    """What the walk did on one page, for its assertions and its report."""

    clicked: Counter = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)

    def time(self, what: str, started: float) -> None:
        self.seconds[what] = self.seconds.get(what, 0.0) + time.monotonic() - started


# ------------------------------------------------------------------------------------------------ the downloads


def download(app: AppPage, locator, where: str) -> bytes:
    """Click ``locator`` at its centre and return the file that arrives."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        with app.page.expect_download(timeout=DOWNLOAD_MS) as arriving:
            locator.click()
        got = arriving.value
    except PlaywrightTimeout:
        pytest.fail(f"{where}: nothing arrived in {DOWNLOAD_MS / 1000:.0f} s; {last_error()}", pytrace=False)
    assert got.failure() is None, f"{where}: the download failed: {got.failure()}"
    path = ARTIFACTS / "downloads" / got.suggested_filename
    path.parent.mkdir(parents=True, exist_ok=True)
    got.save_as(path)
    return path.read_bytes()


def last_error() -> str:
    """The server log's last traceback, in two lines: where it was raised and what."""
    log = ARTIFACTS / "server.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    if "Traceback" not in text:
        return "the server logged no traceback"
    lines = [line.strip() for line in text.rsplit("Traceback", 1)[1].splitlines() if line.strip()]
    return "the server logged: " + " … ".join(lines[-3:])


def screen_heatmaps(app: AppPage, within: str = '[data-testid="stMain"]') -> list[tuple[str, np.ndarray]]:
    """(title, numbers) of each heatmap drawn in ``within``, as plotly holds them; a blank (masked) cell is nan."""
    raw = app.page.evaluate(
        """(within) => [...document.querySelectorAll(within + ' .js-plotly-plot')].flatMap((plot) =>
             plot.data.filter((t) => t.type === 'heatmap').map((t) => {
               const plain = (v) => v === null || v === undefined ? null : v._inputArray !== undefined
                 ? plain(v._inputArray) : ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(plain) : v;
               return [(t.meta && t.meta.title) || '', plain(t.z)];
             }))""",
        within,
    )
    return [(title, np.array([[np.nan if v is None else v for v in row] for row in z], float)) for title, z in raw]


def check_json(app: AppPage, spec, step: int, title: str, where: str) -> None:
    """The step's JSON: the page, the step's number and title as on screen, and each heatmap's numbers as drawn."""
    data = json.loads(download(app, app.page.locator(".st-key-step_json button:visible"), f"{where} JSON"))
    assert data["page"] == spec.title, where
    assert (data["step"], data["step_title"]) == (step, title), f"{where}: the JSON is of another step"
    shown_charts = app.page.locator('[data-testid="stMain"] .js-plotly-plot').count()
    exported_charts = len(data["figures"])
    assert exported_charts == shown_charts, f"{where}: {exported_charts} figures in the JSON, {shown_charts} drawn"
    exported = [
        (t.get("title", ""), np.array([[np.nan if v is None else float(v) for v in row] for row in t["values"]]))
        for figure in data["figures"]
        for t in figure["traces"]
        if t["type"] == "heatmap"
    ]
    drawn = screen_heatmaps(app)
    assert [t for t, _ in exported] == [t for t, _ in drawn], f"{where}: the JSON's heatmaps are not those drawn"
    for (name, values), (_, z) in zip(exported, drawn, strict=True):
        shown = ~np.isnan(z)  # a blank cell on screen is a masked one, written as 0 or -inf
        np.testing.assert_allclose(values[shown], z[shown], rtol=1e-6, err_msg=f"{where}: {name}")


def check_csv(app: AppPage, key: str, where: str) -> None:
    """A chart's CSV: blocks of a header (title, column labels) and rows of a label and numbers, one block per
    heatmap of the chart, each the size of the heatmap drawn and equal to it where a cell is shown."""
    text = download(app, app.page.locator(f".st-key-{key} button:visible"), where).decode("utf-8")
    blocks = [list(csv.reader(io.StringIO(block))) for block in text.strip().split("\n\n")]
    chart = key.removeprefix("csv-")
    drawn = screen_heatmaps(app, f".st-key-{chart}")
    assert len(blocks) == len(drawn), f"{where}: {len(blocks)} tables in {key}'s CSV, {len(drawn)} heatmaps drawn"
    for rows, (title, z) in zip(blocks, drawn, strict=True):
        header, body = rows[0], rows[1:]
        assert len(header) == z.shape[1] + 1 and body, f"{where}: {key}'s CSV has no header or no rows"
        values = np.array([[float(v) for v in row[1:]] for row in body])  # raises on a value that is no number
        assert values.shape == z.shape, f"{where}: {key}'s CSV is {values.shape}, the chart {z.shape}"
        shown = ~np.isnan(z)
        np.testing.assert_allclose(values[shown], z[shown], rtol=1e-5, atol=1e-12, err_msg=f"{where}: {title}")


def check_images(app: AppPage, where: str, walked: Walked) -> None:
    """Each chart's toolbar camera: a PNG of the chart at three times its size on screen."""
    charts = app.page.locator('[data-testid="stMain"] .js-plotly-plot')
    for index in range(charts.count()):
        chart = charts.nth(index)
        chart.hover()
        camera = chart.locator('.modebar-btn[data-title^="Download plot"]')
        png = download(app, camera, f"{where} chart {index + 1}'s PNG")
        assert png[:8] == b"\x89PNG\r\n\x1a\n", f"{where}: chart {index + 1}'s image is not a PNG"
        width, height = struct.unpack(">II", png[16:24])
        box = chart.bounding_box()
        assert abs(width - 3 * box["width"]) <= 6 and abs(height - 3 * box["height"]) <= 6, (
            f"{where}: chart {index + 1}'s PNG is {width}×{height}, not 3 × {box['width']:.0f}×{box['height']:.0f}"
        )
        walked.clicked["png"] += 1


# ----------------------------------------------------------------------------------------- the other actions


def url_step(app: AppPage) -> str | None:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(app.page.url).query).get("step", [None])[0]


def answer_and_reveal(app: AppPage, key: str, where: str, walked: Walked) -> None:
    """Answer the question (its first choice, or 1), press Reveal: the verdict shows; press Ask again: it goes."""
    box = app.page.locator(f".st-key-{key.removesuffix('_reveal')}:visible")
    reveal = box.locator(f".st-key-{key} button:visible")
    assert reveal.is_disabled(), f"{where}: Reveal can be pressed before an answer"
    choice = box.locator('[data-testid="stRadio"] [role="radiogroup"] label:visible')
    if choice.count():
        app.press_and_wait(choice.first)
    else:
        number = box.locator('[data-testid="stNumberInput"] input:visible')
        before = app.answers()
        number.fill("1")
        number.press("Enter")
        app.wait_for_answer(before)
    verdict = box.locator('[data-testid="stAlert"]:visible')
    assert verdict.count() == 0, f"{where}: the answer shows before Reveal"
    started = time.monotonic()
    app.press_and_wait(reveal)
    assert re.search(r"^(Right|Not quite|The answer)", verdict.inner_text(), re.M), f"{where}: Reveal shows no verdict"
    walked.clicked["reveal"] += 1
    app.press_and_wait(box.locator('[class*="_again"] button:visible'))
    assert verdict.count() == 0 and reveal.count() == 1, f"{where}: Ask again did not hide the answer"
    walked.clicked["ask_again"] += 1
    walked.time("questions", started)


def open_popover(app: AppPage, button) -> object:
    """Click a popover's button; return its open body."""
    button.click()
    body = app.page.locator('[data-testid="stPopoverBody"]').last
    body.wait_for(state="visible")
    return body


def close_popover(app: AppPage) -> None:
    """Escape, twice where the first only closed a list open in the popover."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    body = app.page.locator('[data-testid="stPopoverBody"]')
    for _ in range(2):
        app.page.keyboard.press("Escape")
        try:
            body.wait_for(state="hidden", timeout=5_000)
            return
        except PlaywrightTimeout:
            continue
    body.wait_for(state="hidden")


def choose_speed_sizes(app: AppPage, walked: Walked) -> None:
    """Speed's sizes popover: short sequences only; its label then says so."""
    body = open_popover(app, app.page.locator(".st-key-speed_sizes button:visible"))
    lengths = body.locator('[data-testid="stMultiSelect"]')
    app.press_and_wait(lengths.locator('[aria-label="Clear all"]').first)
    for size in SPEED_T:
        lengths.locator("input").click()
        app.press_and_wait(app.page.get_by_role("option", name=str(size), exact=True))
    close_popover(app)
    label = app.page.locator(".st-key-speed_sizes button:visible").inner_text()
    assert f"T = {', '.join(map(str, SPEED_T))} · " in label, f"speed: the sizes say {label!r}"
    walked.clicked["speed_sizes"] += 1


def run_comparison(app: AppPage, walked: Walked) -> None:
    """Speed's "Run the comparison": step 1 says the measured outputs agree; the later steps draw its charts (the
    walk checks them, and that each has a JSON to download)."""
    started = time.monotonic()
    app.press_and_wait(app.page.locator(".st-key-speed_run button:visible"))
    main = app.page.locator('[data-testid="stMain"]')
    assert "Measured: every output equals" in main.inner_text(), "speed: no measurement after Run the comparison"
    walked.clicked["speed_run"] += 1
    walked.time("speed_run", started)


def generate_settings(app: AppPage, walked: Walked) -> None:
    """Generate's settings popover: fewer new tokens; its label, and the generated text, then say so."""
    button = app.page.locator('[data-testid="stMain"] [data-testid="stPopoverButton"]').filter(has_text="Generation:")
    body = open_popover(app, button)
    box = body.locator('[data-testid="stNumberInput"] input').first
    before = app.answers()
    box.fill(str(GENERATE_NEW))
    box.press("Enter")
    app.wait_for_answer(before)
    close_popover(app)
    assert f"{GENERATE_NEW} new tokens" in button.inner_text(), f"generate: the settings say {button.inner_text()!r}"
    walked.clicked["generate_settings"] += 1


def time_one_token(app: AppPage, walked: Walked) -> None:
    """Generate's "Time one new token": a chart of the measured times."""
    started = time.monotonic()
    app.press_and_wait(app.page.locator(".st-key-generate_time button:visible"))
    eventually(lambda: _drawn_title(app, "Measured time per new token"), timeout=60)
    walked.clicked["generate_time"] += 1
    walked.time("generate_time", started)


def _drawn_title(app: AppPage, title: str) -> None:
    assert any(p.title.startswith(title) for p in app.plots()), f"no chart titled {title!r}"


def back_to_book_dropout(app: AppPage, walked: Walked) -> None:
    """Dropout's "Back to the book's p": the sidebar's p is 0 again and the page says it uses the book's."""
    app.press_and_wait(app.page.locator(".st-key-book_dropout button:visible"))
    eventually(lambda: _says(app, "The book's setting"))
    assert app.page.locator(".st-key-book_dropout button:visible").is_disabled(), "dropout: the button stays pressable"
    walked.clicked["book_dropout"] += 1


def _says(app: AppPage, text: str) -> None:
    assert text in app.page.locator('[data-testid="stMain"]').inner_text(), f"the page does not say {text!r}"


def copy_link(app: AppPage, open_app, spec, walked: Walked) -> None:
    """The sidebar's "Copy link to this view": its link, opened in a new tab, shows the same page, step and settings."""
    body = open_popover(app, app.page.locator('[data-testid="stSidebar"] [data-testid="stPopoverButton"]'))
    link = body.locator('[data-testid="stCode"] code').inner_text().strip()
    close_popover(app)
    parts = urllib.parse.urlsplit(link)
    assert parts.path.strip("/") == spec.url_path, f"{spec.stem}: the link opens {parts.path!r}"
    here = urllib.parse.parse_qs(urllib.parse.urlsplit(app.page.url).query)
    assert urllib.parse.parse_qs(parts.query) == here, f"{spec.stem}: the link {link} is not this view ({here})"
    other = open_app()
    other.goto(parts.path.strip("/"), parts.query)
    if app.has_stepper():
        assert other.step() == app.step() and other.step_name() == app.step_name(), f"{spec.stem}: another step"
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(other.page.url).query) == here, f"{spec.stem}: other settings"
    assert other.page.locator("h1").first.inner_text() == app.page.locator("h1").first.inner_text()
    walked.clicked["copy_link"] += 1


# ------------------------------------------------------------------------------------------------- the walk


def actions(app: AppPage, where: str) -> Counter:
    """The kinds of every button and link in the main area; an unknown one fails."""
    found = app.page.evaluate(INVENTORY)
    unknown = [e for e in found if kind_of(e) == "unknown"]
    assert not unknown, f"{where}: buttons or links the walk does not know: {unknown}"
    return Counter(kind_of(e) for e in found if kind_of(e) != "input" and not e["disabled"])


def walk_step(app: AppPage, spec, number: int, total: int, walked: Walked) -> Counter:
    """Every download and question of the shown step; returns the step's kinds of actions."""
    title = app.step_name() if app.has_stepper() else ""
    where = f"{spec.stem} step {number}/{total} ({title})"
    found = actions(app, where)
    started = time.monotonic()
    downloads = app.page.locator('[data-testid="stMain"] [data-testid="stDownloadButton"]:visible').count()
    if found["json"]:
        check_json(app, spec, number, title, where)
        walked.clicked["json"] += 1
    csv_keys = [e["key"] for e in app.page.evaluate(INVENTORY) if kind_of(e) == "csv"]
    for key in csv_keys:
        check_csv(app, key, where)
        walked.clicked["csv"] += 1
    assert downloads == found["json"] + len(csv_keys), f"{where}: {downloads} download buttons, the walk knows fewer"
    walked.time("downloads", started)
    started = time.monotonic()
    check_images(app, where, walked)
    walked.time("png", started)
    for element in app.page.evaluate(INVENTORY):
        if kind_of(element) == "reveal":
            answer_and_reveal(app, element["key"], where, walked)
    return found


@pytest.mark.parametrize("spec", PAGES, ids=[spec.stem for spec in PAGES])
def test_every_action(open_app, spec, record_property):
    """Every step of the page, every action on it clicked and its effect checked; timings in the test's report."""
    log = ARTIFACTS / "server.log"
    logged_before = Counter(problems(log.read_text(errors="replace"))) if log.exists() else Counter()
    started = time.monotonic()
    walked = Walked()
    app = open_app()
    app.goto(spec.url_path, QUERIES.get(spec.stem, ""))
    walked.time("load", started)
    if spec.stem == "speed":
        choose_speed_sizes(app, walked)
        run_comparison(app, walked)
    if spec.stem == "generate":
        generate_settings(app, walked)
    if spec.stem == "dropout":
        back_to_book_dropout(app, walked)
    number, total = app.step() if app.has_stepper() else (1, 1)
    assert number == 1, f"{spec.stem} opens at step {number}"
    titles, seen = [], set()
    while True:
        titles.append(app.step_name() if app.has_stepper() else "")
        found = walk_step(app, spec, number, total, walked)
        seen |= set(found)
        if found["generate_time"]:
            time_one_token(app, walked)
        if found["page_link"]:
            last_links = app.page.locator('[data-testid="stMain"] [data-testid="stPageLink"] a')
        if number == total:
            break
        before, moved = (app.step_name(), url_step(app)), time.monotonic()
        app.next()
        number += 1
        assert app.wait_for_step(number)[0] == number, f"{spec.stem}: Next did not move to step {number}"
        assert (app.step_name(), url_step(app)) != before, f"{spec.stem}: Next left the title or the URL as they were"
        walked.clicked["next"] += 1
        if number == 2:  # Previous, once: back to step 1's title and URL, then Next again
            app.previous()
            assert app.wait_for_step(1)[0] == 1 and app.step_name() == titles[0], f"{spec.stem}: Previous"
            assert url_step(app) == before[1], f"{spec.stem}: Previous left the URL at {url_step(app)}"
            walked.clicked["prev"] += 1
            app.next()
            app.wait_for_step(2)
        walked.time("stepping", moved)
    moved = time.monotonic()
    copy_link(app, open_app, spec, walked)
    walked.time("copy_link", moved)
    if found["page_link"]:  # the last step's link to the next page, pressed last: it leaves the page
        target = urllib.parse.urlsplit(last_links.first.get_attribute("href")).path.strip("/")
        app.press_and_wait(last_links.first)
        with contextlib.suppress(PlaywrightTimeout):  # the address bar follows the run: on a busy machine, later
            app.page.wait_for_url(lambda url: urllib.parse.urlsplit(url).path.strip("/") == target, timeout=30_000)
        landed = urllib.parse.urlsplit(app.page.url).path.strip("/")
        assert landed == target, f"{spec.stem}: the page link opened {landed!r}"
        walked.clicked["page_link"] += 1
    walked.time("total", started)
    if total > 1:
        assert walked.clicked["next"] == total - 1 and walked.clicked["prev"] == 1
    unpressed = seen - set(walked.clicked) - {"glossary_link"}  # a term's link is text to follow, not yet walked
    assert not unpressed, f"{spec.stem}: the walk saw but did not press {unpressed}"
    if spec.stem == "speed":  # "Time against T" and "Memory" drew the measurement, and offered its JSON
        assert walked.clicked["json"] == 2, f"speed: {walked.clicked['json']} steps with a JSON, not the measured 2"
    logged = Counter(problems(log.read_text(errors="replace"))) - logged_before
    assert not logged, f"{spec.stem}: the server logged\n" + "\n".join(logged)
    record_property("walk", {"clicked": dict(walked.clicked), "seconds": walked.seconds})
    seconds = ", ".join(f"{k} {v:.1f} s" for k, v in walked.seconds.items())
    print(f"\n{spec.stem}: {total} steps, {dict(walked.clicked)}, {seconds}")
