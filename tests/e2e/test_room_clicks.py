"""A live room's buttons under a real mouse, in Chromium, on a 1280×720 laptop and a 390×844 phone: for the teacher
in presenter mode and for a student, nothing lies over any button's centre (Streamlit's header once took the top
half of "On my own"), and a click there does what the button says. The teacher reaches the room's panel without
scrolling, and the join link is shown as exactly the link."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

# A button's centre, and whether the element there is the button or inside it (else what covers it).
CENTRE = """(button) => {
  const box = button.getBoundingClientRect();
  const x = box.left + box.width / 2, y = box.top + box.height / 2;
  const top = document.elementFromPoint(x, y);
  const seen = x >= 0 && y >= 0 && x < innerWidth && y < innerHeight;
  return {x, y, seen, clear: seen && !!top && button.contains(top), top: top ? top.outerHTML.slice(0, 100) : null};
}"""
# Every visible button in ``scope``, each brought into view as a browser scrolls to it, whose centre is covered.
COVERED = """([scope, centre]) => {
  const measure = eval(centre);
  const covered = [];
  for (const button of document.querySelector(scope).querySelectorAll('button')) {
    if (!button.checkVisibility({visibilityProperty: true}) || !button.getBoundingClientRect().width) continue;
    if (!measure(button).seen) button.scrollIntoView({block: 'nearest'});
    const found = measure(button);
    if (!found.clear) covered.push(`${button.textContent.trim().slice(0, 30) || button.ariaLabel}: ${found.top}`);
  }
  return covered;
}"""
MAIN, SIDEBAR = '[data-testid="stMain"]', '[data-testid="stSidebar"]'
# The texts (their lines), buttons and images in ``scope`` that overlap or come closer than 4 px to another.
CROWDED = """(scope) => {
  const parts = [...document.querySelector(scope).querySelectorAll(
    '[data-testid="stMarkdownContainer"] > *, [data-testid="stCaptionContainer"], button, img'
  )].filter((el) => !el.closest('[data-testid="stElementToolbar"]') && (!el.closest('button') || el.matches('button')))
    .filter((el) => el.getClientRects().length);
  const crowded = [];
  parts.forEach((a, i) => parts.slice(i + 1).forEach((b) => {
    if (a.contains(b) || b.contains(a)) return;
    const box = (el) => {  // a text's own lines, without its box's padding
      if (el.matches('button, img')) return el.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(el);
      return range.getBoundingClientRect();
    };
    const p = box(a), q = box(b);
    const gap = (lo, hi) => Math.max(lo.top - hi.bottom, hi.top - lo.bottom, lo.left - hi.right, hi.left - lo.right);
    const name = (el) => el.textContent.trim().slice(0, 20) || el.outerHTML.slice(0, 60);
    if (gap(p, q) < 4) crowded.push(`${name(a)} | ${name(b)}`);
  }));
  return crowded;
}"""


def covered(app_page, scope: str) -> list[str]:
    """The buttons in ``scope`` whose centre another element covers (none expected)."""
    return app_page.page.evaluate(COVERED, [scope, CENTRE])


def click_centre(app_page, locator, *, scroll: bool = True) -> None:
    """Check that nothing covers ``locator``'s centre, then click there with the mouse, as a person does."""
    if scroll:
        locator.scroll_into_view_if_needed()
    found = locator.evaluate(CENTRE)
    assert found["clear"], f"{locator}: its centre ({found['x']:.0f}, {found['y']:.0f}) is under {found['top']}"
    app_page.page.mouse.click(found["x"], found["y"])


def in_view(app_page, locator) -> bool:
    """Whether all of ``locator`` is on the screen as it is, unscrolled."""
    box = locator.bounding_box()
    viewport = app_page.page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]


def sidebar(app_page, shown: bool) -> None:
    """Open or close the sidebar with its own button, clicked at its centre (on a phone it lies over the page)."""
    collapsed = str(not shown).lower()
    if app_page.page.locator(SIDEBAR).get_attribute("data-collapsed") == collapsed:
        return
    if shown:
        click_centre(app_page, app_page.page.locator('[data-testid="stExpandSidebarButton"]'))
    else:
        app_page.page.mouse.move(20, 20)  # the sidebar's own button shows while the pointer is over the sidebar
        click_centre(app_page, app_page.page.locator('[data-testid="stSidebarCollapseButton"] button'))
    app_page.page.wait_for_function(
        "([scope, collapsed]) => document.querySelector(scope).dataset.collapsed === collapsed",
        arg=[SIDEBAR, collapsed],
    )
    app_page.page.wait_for_timeout(400)  # the sidebar slides


def button(app_page, where: str, name: str):
    return app_page.page.locator(where).get_by_role("button", name=name, exact=False)


@pytest.mark.parametrize("phone", [False, True], ids=["laptop 1280x720", "phone 390x844"])
def test_every_room_button_takes_a_click_at_its_centre(open_app, phone):
    teacher = open_app(phone=phone).goto("causal_mask", "present=1&step=the-mask")  # a step with a question
    panel = teacher.page.locator(".st-key-room_panel")

    sidebar(teacher, True)  # presenter mode keeps the one button of Streamlit's header that opens it
    opener = panel.get_by_role("button", name="Open a room")
    assert in_view(teacher, opener), "a presenter sees the room's panel without scrolling"
    click_centre(teacher, opener, scroll=False)
    panel.get_by_text(re.compile(r"^Room [A-Z2-9]{5}$")).wait_for()
    code = re.search(r"Room ([A-Z2-9]{5})", panel.inner_text())[1]
    assert panel.get_by_text("0 following · 0 exploring").count() == 1
    panel.locator("img").evaluate("(img) => img.complete || new Promise((done) => { img.onload = done; })")  # laid out
    for name in ("Show the code to the class", "Close the room"):
        assert in_view(teacher, panel.get_by_role("button", name=name)), f"{name}: seen without scrolling"
    assert covered(teacher, ".st-key-room_panel") == []
    assert teacher.page.evaluate(CROWDED, ".st-key-room_panel") == [], "issue 54: the Room heading touched a button"

    click_centre(teacher, panel.get_by_role("button", name="Show the code to the class"), scroll=False)
    dialog = teacher.page.get_by_role("dialog")
    link = dialog.get_by_role("link")
    link.wait_for()
    joined = f"{teacher.base_url}/?room={code}"
    assert (link.inner_text(), link.get_attribute("href")) == (joined, joined), "the link, as it is"
    assert "\u2060" not in dialog.inner_text() and joined in dialog.inner_text()
    shown = dialog.get_by_text(code, exact=True)
    height, size = shown.evaluate(
        "(el) => [el.getBoundingClientRect().height, parseFloat(getComputedStyle(el).fontSize)]"
    )
    assert height < 1.5 * size, f"the code {code} is on one line"  # a phone once broke it after its fourth letter
    assert covered(teacher, '[role="dialog"]') == []
    click_centre(teacher, dialog.get_by_role("button", name="Close"))
    dialog.wait_for(state="detached")

    student = open_app(phone=phone).goto("", f"room={code}")
    student.page.locator('[class*="st-key-predict_"]').first.wait_for()
    student.settle()
    assert covered(student, MAIN) == [], "a student's page"
    student.page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, 0)")
    click_centre(student, button(student, MAIN, "On my own"))
    click_centre(student, button(student, MAIN, "Follow the teacher"))
    button(student, MAIN, "On my own").wait_for()

    question = student.page.locator('[class*="st-key-predict_"]').first
    answer = question.locator("input")
    click_centre(student, answer)  # the vote: a number typed, then the + beside it (enabled once there is one)
    before = student.answers()
    student.page.keyboard.type("1")
    student.page.keyboard.press("Enter")
    student.wait_for_answer(before)
    typed = answer.input_value()
    before = student.answers()
    click_centre(student, question.locator('[data-testid="stNumberInputStepUp"]'))
    student.wait_for_answer(before)
    assert float(answer.input_value()) > float(typed), (typed, answer.input_value())

    # The teacher's page polls the votes: "No votes yet." gives way to a chart, which moves Reveal down. Wait for it,
    # as a teacher sees the vote arrive before pressing Reveal; measured before it, the click would land elsewhere.
    teacher.page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot .gtitle')]
                   .some((t) => t.textContent === '1 vote')""",
        timeout=60_000,
    )
    teacher.settle()
    if phone:
        sidebar(teacher, False)  # on a phone the sidebar lies over the page
    assert covered(teacher, MAIN) == [], "the teacher's page"
    click_centre(teacher, button(teacher, MAIN, "Reveal"))
    teacher.page.locator(MAIN).get_by_text("The answer").wait_for()
    student.page.locator(MAIN).get_by_text(re.compile("Right|Not quite")).wait_for()
    assert covered(student, MAIN) == [], "a student's page after the reveal"

    sidebar(teacher, True)
    click_centre(teacher, panel.get_by_role("button", name="Close the room"))
    panel.get_by_role("button", name="Open a room").wait_for()
