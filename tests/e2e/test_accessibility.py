"""Accessibility, measured by axe-core in Chromium (issue 26, scope 7): no serious or critical violation of
WCAG 2.1 A and AA on any page, on a laptop (1280×800), in presenter mode (1280×720, ``?present=1``) and on a
phone (390×844), where no page may scroll sideways either and every text outside the charts is at least 16 px.

axe-core comes from npm (``package.json``; ``npm ci`` installs it); without it these tests are skipped, and
with ``CI=true`` they fail. axe cannot judge a chart's meaning; it checks contrast, names, roles, focus."""

from __future__ import annotations

import json
import os
import re

import pytest
from e2e_support import PHONE_AGENT, ROOT, SETTLED, TIMEOUT_MS, app_pages

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
VIEWS = {  # name -> (viewport, query)
    "laptop": ({"width": 1280, "height": 800}, ""),
    "presenter": ({"width": 1280, "height": 720}, "present=1"),
    "phone": ({"width": 390, "height": 844}, ""),
}
# Every visible text of the main area outside the charts (test_phone measures theirs: 16 px on a phone), in px.
SMALL_TEXT = """(limits) => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]'), small = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement, text = node.textContent.trim();
    if (!text || !el || el.closest('.js-plotly-plot, [data-testid="stIconMaterial"], .katex-mathml')) continue;
    const box = el.getBoundingClientRect();
    if (box.width < 2 || box.height < 2 || !el.checkVisibility({visibilityProperty: true})) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    const least = el.closest('pre, code') ? limits.code : limits.text;
    if (size < least - 0.05) small.push(`${size}px "${text.slice(0, 30)}"`);
  }
  return small;
}"""
PHONE_TEXT = {"text": 16, "code": 14}  # px: Streamlit draws labels, buttons and captions at 14 unless told
RUN_AXE = f"async () => await axe.run(document, {{runOnly: {{type: 'tag', values: {json.dumps(WCAG_21_AA)}}}, resultTypes: ['violations']}})"  # noqa: E501


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.exists():
        reason = f"axe-core is not installed ({AXE.relative_to(ROOT)}): run `npm ci`"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return AXE.read_text(encoding="utf-8")


def serious(violations: list[dict]) -> list[str]:
    """The serious and critical violations, one line each: the rule, how many elements, the first one."""
    return [
        f"{v['id']} ({v['impact']}, {len(v['nodes'])} elements, e.g. {v['nodes'][0]['target']}): {v['help']}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("spec", app_pages(), ids=lambda spec: spec.stem)
def test_no_serious_accessibility_violation(server, browser, axe_source, spec, view):
    viewport, query = VIEWS[view]
    context = browser.new_context(viewport=viewport, **({"user_agent": PHONE_AGENT} if view == "phone" else {}))
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{server}/{spec.url_path}" + (f"?{query}" if query else ""), timeout=TIMEOUT_MS)
        page.wait_for_function(SETTLED, timeout=TIMEOUT_MS, polling=200)
        page.add_script_tag(content=axe_source)
        found = serious(page.evaluate(RUN_AXE)["violations"])
        assert not found, f"{spec.title}, {view}:\n" + "\n".join(found)
        if view == "phone":
            width, shown = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert width <= shown, f"{spec.title} scrolls sideways on a phone: {width} px wide in {shown} px"
            small = page.evaluate(SMALL_TEXT, PHONE_TEXT)
            assert not small, f"{spec.title} on a phone: text under {PHONE_TEXT} px: {small[:5]}"
    finally:
        context.close()


def test_the_check_finds_a_violation(server, browser, axe_source):
    """The rules run and report: a paragraph of light grey on white fails colour contrast."""
    context = browser.new_context(viewport=VIEWS["laptop"][0])
    try:
        page = context.new_page()
        faint = "<p style='color:#bbb;background:#fff'>faint</p>"
        page.set_content(f"<html lang='en'><title>t</title><main>{faint}</main></html>")
        page.add_script_tag(content=axe_source)
        assert any("color-contrast" in line for line in serious(page.evaluate(RUN_AXE)["violations"]))
    finally:
        context.close()


# The controls a student taps in a live room: the question's answer box and buttons, and the room's bar.
TAP_TARGETS = """() => [...document.querySelectorAll(
    '[class*="st-key-predict_"] :is(button, [data-baseweb="input"], label[data-baseweb="radio"]),'
    + ' :is(.st-key-room_alone, .st-key-room_follow) button')]
  .filter((el) => el.checkVisibility())
  .map((el) => {
    const b = el.getBoundingClientRect();
    return [el.textContent.trim().slice(0, 20), b.width, b.height];
  })"""


def test_a_live_room_passes_axe_for_teacher_and_phone_and_its_controls_are_tappable(server, browser, axe_source):
    """A teacher's presenter view with an open room (its code, QR code and counts) and a student's phone view
    on a step with a question: no serious violation, and every control the student taps is 44 × 44 px or more."""
    teacher_context = browser.new_context(viewport=VIEWS["presenter"][0])
    student_context = browser.new_context(viewport=VIEWS["phone"][0], user_agent=PHONE_AGENT)
    try:
        teacher = teacher_context.new_page()
        teacher.goto(f"{server}/causal_mask?present=1&step=the-mask", timeout=TIMEOUT_MS)
        teacher.wait_for_function(SETTLED, timeout=TIMEOUT_MS, polling=200)
        teacher.locator('[data-testid="stExpandSidebarButton"]').dispatch_event("click")
        teacher.get_by_role("button", name="Open a room").click()
        code = teacher.locator('[data-testid="stSidebar"]').get_by_text(re.compile(r"^Room [A-Z2-9]{5}$"))
        code.wait_for(timeout=TIMEOUT_MS)
        room = code.inner_text().split()[-1]
        student = student_context.new_page()
        student.goto(f"{server}/?room={room}", timeout=TIMEOUT_MS)
        student.locator('[class*="st-key-predict_"]').first.wait_for(timeout=TIMEOUT_MS)
        student.wait_for_function(SETTLED, timeout=TIMEOUT_MS, polling=200)
        for page, view in ((teacher, "presenter with a room"), (student, "a student's phone")):
            page.add_script_tag(content=axe_source)
            found = serious(page.evaluate(RUN_AXE)["violations"])
            assert not found, f"{view}:\n" + "\n".join(found)
        targets = student.evaluate(TAP_TARGETS)
        assert len(targets) >= 3, targets  # the answer box, its − and +, and "On my own"
        small = [t for t in targets if t[1] < 44 - 0.5 or t[2] < 44 - 0.5]
        assert not small, f"controls under 44 × 44 px on a phone: {small}"
    finally:
        teacher_context.close()
        student_context.close()
