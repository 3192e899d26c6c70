"""A live room's pace and results in Chromium: a student on a 390×844 phone votes and presses "Got it" at its centre;
the teacher's panel counts it, then the teacher downloads the room's results as CSV, which holds that vote."""

from __future__ import annotations

import csv
import io

import pytest
from test_room import choose, open_room, seen_at, watch
from test_room_clicks import MAIN, click_centre

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def test_a_students_vote_and_pace_reach_the_teachers_panel_and_the_downloaded_csv(open_app):
    teacher = open_app().goto("simplified", "present=1")  # step 1 asks which input the query attends to most
    sidebar, code = open_room(teacher)
    sidebar.get_by_text("This step: 0 too fast · 0 got it").wait_for()
    student = open_app(phone=True).goto("", f"room={code}")
    watch(student, "joined", "shows", [1, "Simplified attention", None])
    seen_at(student, "joined")

    before = student.answers()
    choose(student, "x^(2) “journey”")
    student.wait_for_answer(before)
    fast, got = (student.page.locator(MAIN).get_by_role("button", name=name) for name in ("Too fast", "Got it"))
    fast_box, got_box = fast.bounding_box(), got.bounding_box()
    assert abs(fast_box["y"] - got_box["y"]) < 2, "side by side on a phone"
    assert min(fast_box["height"], got_box["height"]) >= 44 and got_box["x"] + got_box["width"] <= 390
    click_centre(student, got)
    student.page.get_by_text("Your teacher sees “Got it” for this step.").wait_for()
    sidebar.get_by_text("This step: 0 too fast · 1 got it").wait_for()  # the panel's next refresh
    student.screenshot("room_pace_student_phone")  # looked at by hand: artifacts/e2e/
    teacher.screenshot("room_pace_teacher_panel")

    with teacher.page.expect_download() as arriving:
        sidebar.get_by_role("button", name="Download the votes (CSV)").click()
    download = arriving.value
    assert download.failure() is None and download.suggested_filename == f"room-{code}-votes.csv"
    with open(download.path(), encoding="utf-8") as file:
        rows = list(csv.DictReader(io.StringIO(file.read())))
    counts = {row["choice"]: int(row["count"]) for row in rows}
    assert counts["x^(2) “journey”"] == 1 and sum(counts.values()) == 1, rows
    assert {row["revealed"] for row in rows} == {"no"}
    assert rows[0]["question"].startswith("Which input will the query “"), rows[0]

    teacher.next()  # the teacher moves on
    sidebar.get_by_text("This step: 0 too fast · 0 got it").wait_for()
