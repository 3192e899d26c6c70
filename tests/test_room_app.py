"""The live room in the app (``explorer.room``): a presenter opens a room, students who open
``?room=CODE`` follow the teacher's page, step and sentence, vote, and see the teacher's reveals; a student can
neither move the room nor reveal for it. Teacher and students are AppTests in one process, sharing its store."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from apptest_support import app, captions, decode, markdown, next_step, type_sentence
from streamlit.util import calc_hash

from explorer import room
from explorer.room import STORE

pytestmark = pytest.mark.timeout(300)


def button(at, key: str):
    (found,) = [b for b in at.button if b.key == key]
    return found


def open_room(page: str = "pages/causal_mask.py"):
    """A teacher in presenter mode on ``page`` who opened a room; returns the AppTest and the room's code."""
    teacher = app(page, query_params={"present": "1"})
    button(teacher, "room_open").click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    return teacher, teacher.session_state["room_code"]


def join(code: str, **params):
    student = app(query_params={"room": code, **params})
    assert not student.exception, [e.value for e in student.exception]
    return student


def _question(at) -> str:
    """The key of the one question ``at`` answered."""
    (key,) = {k.removesuffix("_answer") for k in at.session_state if k.startswith("predict_") and k.endswith("_answer")}
    return key


def step_of(at, page: str = "causal_mask") -> int:
    return at.session_state[f"step:{page}"] + 1


def on_page(at, url_path: str) -> bool:
    """Whether ``at``'s last run was of the page at ``url_path`` (Streamlit names a page by its path's hash)."""
    return at._finished_page_script_hash == calc_hash(url_path)


def view_link(at) -> str:
    """The link "Copy link to this view" offers."""
    (link,) = [c.value for c in at.sidebar.get("code")]
    return link


def test_the_teacher_opens_a_room_with_its_code_link_and_qr_code():
    teacher, code = open_room()
    sidebar = markdown(teacher.sidebar)
    assert f"Room <b>{code}</b>" in sidebar and "0 following · 0 exploring" in sidebar
    (image,) = [e for e in teacher.sidebar if type(e).__name__ == "Image"]
    (shown,) = image.proto.imgs
    link = f"http://localhost:8501/?room={code}"
    assert f"<{link}>" in sidebar and link in shown.alt and teacher.session_state["room_token"] not in sidebar
    assert STORE.snapshot(code).position == {"page": "causal_mask", "params": {"step": "unmasked-weights"}}


def test_the_join_dialog_shows_the_link_exactly():
    """ "Show the code to the class": the link is an autolink of exactly the join link, without the invisible word
    joiner (U+2060) that the Markdown escaper put after "http" and that broke a copied link."""
    teacher, code = open_room()
    button(teacher, "room_show").click().run()
    (shown,) = [m.value for m in teacher.markdown if "scan the code" in m.value]
    assert shown == f"Open **<http://localhost:8501/?room={code}>** or scan the code."


def test_a_student_follows_the_teachers_page_step_and_sentence():
    teacher, code = open_room()
    student = join(code)
    assert student.title[0].value == "Causal mask" and step_of(student) == 1
    assert student.query_params["room"] == code and "present" not in student.query_params
    teacher.run()
    assert "1 following · 0 exploring" in markdown(teacher.sidebar)
    next_step(teacher)
    student.run()
    assert step_of(student) == 2
    type_sentence(teacher, "The cat sat on the mat")
    student.run()
    assert student.session_state["settings"].text == "The cat sat on the mat"
    assert student.text_input(key="w_text").value == "The cat sat on the mat" and step_of(student) == 2
    teacher.switch_page("pages/dropout.py").run()
    student.run()
    assert student.title[0].value == "Dropout" and student.session_state["settings"].text == "The cat sat on the mat"


def test_a_student_who_follows_sees_the_teachers_pages_on_the_live_room_page():
    """A following student stays on the Live room page, which draws the teacher's page: the teacher's move to
    another page then reruns only the page (``wake``). The view's link names the teacher's page, not the room."""
    teacher, code = open_room()
    student = join(code)
    assert on_page(student, "live") and student.title[0].value == "Causal mask"
    assert "/causal_mask?" in view_link(student) and "room=" not in view_link(student)
    teacher.switch_page("pages/multihead.py").run()
    next_step(teacher)
    student.run()
    assert on_page(student, "live") and student.title[0].value == "Multi-head attention"
    assert step_of(student, "multihead") == 2 and "/multihead?" in view_link(student)
    assert student.query_params["room"] == code and student.query_params["step"] == "one-head"


def test_the_live_room_page_without_a_room_says_how_to_join():
    at = app("pages/live.py")
    assert at.title[0].value == "Live room" and "open the link your teacher shows" in markdown(at)
    assert not at.exception


def test_on_my_own_stops_following_and_follow_jumps_back_in_one_click():
    teacher, code = open_room()
    student = join(code)
    next_step(teacher)
    student.run()
    button(student, "room_alone").click().run()
    assert on_page(student, "causal_mask") and step_of(student) == 2  # the view the Live room page showed
    assert student.session_state["w_source"] == "book" and not student.exception
    next_step(teacher)
    next_step(teacher)
    student.run()
    assert step_of(student) == 2 and "on your own" in captions(student)
    teacher.run()
    assert "0 following · 1 exploring" in markdown(teacher.sidebar)
    button(student, "room_follow").click().run()
    assert on_page(student, "live") and step_of(student) == 4 and "following the teacher" in captions(student)


def test_a_student_who_returns_is_back_on_the_teachers_step():
    teacher, code = open_room()
    next_step(next_step(teacher))
    again = join(code, step="unmasked-weights")  # the address bar as the student left it
    assert step_of(again) == 3


def test_votes_reach_the_teachers_chart_and_the_reveal_reaches_students():
    teacher, code = open_room()
    next_step(teacher)  # step 2 asks for x^(2)'s weight on x^(1) after the mask
    students = [join(code) for _ in range(3)]
    for student, answer in zip(students, (1.0, 1, 0.5), strict=True):
        [n for n in student.number_input if n.label == "Your answer"][0].set_value(answer).run()
        assert "Your teacher reveals the answer." in captions(student)
        assert not [b for b in student.button if b.label == "Reveal"]
    assert STORE.tally(code, _question(students[0])) == {
        "1.00": 2,
        "0.50": 1,
    }
    teacher.run()
    (chart,) = [c for c in teacher.get("plotly_chart") if "votes" in c.proto.spec]
    assert '"3 votes"' in chart.proto.spec
    [b for b in teacher.button if b.label == "Reveal"][0].click().run()
    for student in students:
        student.run()
        assert any(
            "The answer" in a.value or "Right" in a.value or "Not quite" in a.value
            for a in [*student.info, *student.success, *student.error]
        )
        assert not [b for b in student.button if b.label == "Ask again"]


def test_a_student_can_neither_move_the_room_nor_reveal_for_it():
    teacher, code = open_room()
    next_step(teacher)
    student = join(code)
    button(student, "room_alone").click().run()
    student.session_state["presenter"] = True  # as if a crafted message turned presenter mode on
    student.run()
    assert "room_open" not in [b.key for b in student.button]
    [b for b in student.button if b.label == "Reveal"][0].click().run()
    assert "The answer" in "\n".join(i.value for i in student.info)  # revealed on this student's screen only
    next_step(student)
    snapshot = STORE.snapshot(code)
    assert snapshot.position["params"]["step"] == "the-mask" and not snapshot.revealed
    assert "room_token" not in student.session_state


def test_a_wrong_or_closed_room_says_so_and_keeps_the_students_sentence():
    student = join("ZZZZZ", text="Hello there")
    assert "no open room ZZZZZ" in "\n".join(i.value for i in student.info)
    assert student.session_state["settings"].text == "Hello there" and not student.exception
    bad = join("no!")
    assert "not a room code" in "\n".join(i.value for i in bad.info)
    teacher, code = open_room()
    student = join(code)
    type_sentence(student, "My own words")  # typed while following: the room has not moved since
    STORE._run(("delete", f"room:{code}"))  # the room expires
    student.run()
    assert "no open room" in "\n".join(i.value for i in student.info) and not student.exception
    assert student.session_state["settings"].text == "My own words"
    assert "room" not in student.query_params


def _one_question(presenter: bool) -> None:
    """A multiple-choice question alone, as a page asks it (``widgets.questions``)."""
    import streamlit as st

    from explorer.page_text.questions import Question
    from explorer.widgets.questions import show_question, state_key

    choices = ("the first token", "the last token", "every token")
    question = Question("mc", "Which token's row keeps one weight of 1?", "the first token", choices=choices)
    show_question(question, context="room", presenter=presenter)
    st.session_state["question_key"] = state_key(question, "room")


def _in_room(code: str, token: str | None = None, student: str | None = None):
    """An AppTest of ``_one_question`` as the room's teacher (``token``) or one of its following students."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_one_question, kwargs={"presenter": token is not None}, default_timeout=30)
    at.session_state["room_code"] = code
    if token is not None:
        at.session_state["room_token"] = token
    else:
        STORE.heartbeat(code, student, True)  # a student's run does this; a student votes once present
        at.session_state["room_student"] = student
        at.session_state["room_following"] = True
    return at.run()


def _vote_chart(teacher):
    (chart,) = [c for c in teacher.get("plotly_chart") if re.search(r'"\d+ votes?"', c.proto.spec)]
    return json.loads(chart.proto.spec)


def test_a_multiple_choice_question_charts_each_choice_in_its_order():
    code, token = STORE.create()
    teacher = _in_room(code, token=token)
    assert _vote_chart(teacher)["layout"]["title"]["text"] == "0 votes"
    students = [_in_room(code, student=f"s{n}") for n in range(3)]
    for student, choice in zip(students, ("every token", "the first token", "every token"), strict=True):
        student.radio[0].set_value(choice).run()
        assert not student.exception
    teacher.run()
    spec = _vote_chart(teacher)
    (bars,) = spec["data"]
    labels = spec["layout"]["yaxis"]["ticktext"]
    assert labels == ["A · the first token", "B · the last token", "C · every token"]  # the choices' order, zeros too
    assert list(decode(bars["x"])) == [1, 0, 2] and spec["layout"]["title"]["text"] == "3 votes"


def unescaped(markdown_text: str) -> str:
    """What Streamlit shows for Markdown that ``attention.prose.literal`` escaped: the text without its backslashes."""
    return re.sub(r"\\(.)", r"\1", markdown_text.replace("\u2060", ""))


def test_the_vote_chart_labels_the_choices_as_the_students_and_the_presenter_list_read_them():
    """Simplified attention, step 1: "which input will the query attend to most", its choices being tokens."""
    teacher, code = open_room("pages/simplified.py")
    student = join(code)
    (choices,) = [r for r in student.radio if r.label == "Your answer"]
    read = [unescaped(option).replace("**", "") for option in choices.options]  # as the student's radio shows them
    assert read[:2] == ["A. x^(1) “Your”", "B. x^(2) “journey”"]
    choices.set_value("x^(2) “journey”").run()
    teacher.run()
    (chart,) = [c for c in teacher.get("plotly_chart") if '"1 vote"' in c.proto.spec]
    spec = json.loads(chart.proto.spec)
    labels = [html.unescape(label) for label in spec["layout"]["yaxis"]["ticktext"]]  # as plotly draws them
    assert labels == [choice.replace(". ", " · ", 1) for choice in read]
    listed = [line for line in markdown(teacher).splitlines() if re.match(r"\*\*[A-F]\.\*\* ", line)]
    assert [unescaped(line).replace("**", "").rstrip() for line in listed] == read  # the presenter's list
    assert list(decode(spec["data"][0]["x"])) == [1 if k == 1 else 0 for k in range(len(read))]


def test_ask_again_clears_the_votes_for_a_fresh_vote():
    code, token = STORE.create()
    teacher = _in_room(code, token=token)
    students = [_in_room(code, student=f"s{n}") for n in range(2)]
    for student in students:
        student.radio[0].set_value("the last token").run()
    [b for b in teacher.run().button if b.label == "Reveal"][0].click().run()
    question = teacher.session_state["question_key"]
    assert STORE.tally(code, question) == {"the last token": 2} and question in STORE.snapshot(code).revealed
    [b for b in teacher.button if b.label == "Ask again"][0].click().run()
    assert STORE.tally(code, question) == {} and not STORE.snapshot(code).revealed
    assert _vote_chart(teacher)["layout"]["title"]["text"] == "0 votes"
    students[0].radio[0].set_value("the first token").run()  # a fresh vote counts
    assert _vote_chart(teacher.run())["layout"]["title"]["text"] == "1 vote"


def cookie_scripts(at) -> list[str]:
    """The scripts this run gave the browser that write the teacher's cookie."""
    bodies = [element.proto.body for element in at.get("html")]
    return [body for body in bodies if "document.cookie" in body and room.TEACHER_COOKIE in body]


def test_the_teachers_browser_keeps_the_room_until_it_closes():
    teacher, code = open_room()
    token = teacher.session_state["room_token"]
    (kept,) = cookie_scripts(teacher)
    assert f"{room.TEACHER_COOKIE}={code}.{token}; max-age=14400; path=/; samesite=strict" in kept
    next_step(teacher)
    assert not cookie_scripts(teacher)  # written once, not on every run
    button(teacher, "room_close").click().run()
    (forgotten,) = cookie_scripts(teacher)
    assert f"{room.TEACHER_COOKIE}=; max-age=0" in forgotten and token not in forgotten


def test_a_new_presenter_session_takes_back_the_room_its_browser_kept(monkeypatch):
    first, code = open_room()
    student = join(code)
    saved = f"{code}.{first.session_state['room_token']}"
    monkeypatch.setattr(room, "saved", {room.TEACHER_COOKIE: saved}.get)
    reloaded = {"present": "1", "step": "zero-and-renormalize"}  # the reloaded or moved tab
    again = app("pages/causal_mask.py", query_params=reloaded)
    assert again.session_state["room_code"] == code and not cookie_scripts(again)
    assert f"Room <b>{code}</b>" in markdown(again.sidebar)
    # Said in the room's panel, not in a toast, which lay over the stepper's Next for seconds.
    assert not again.toast
    assert f"You are back in room {code}: its students and votes were kept." in captions(again.sidebar)
    student.run()
    assert step_of(student) == 3  # the room moved to where the new session is
    next_step(again)
    student.run()
    assert step_of(student) == 4
    again.run()
    assert "You are back in room" not in captions(again.sidebar), "said once"


@pytest.mark.parametrize("case", ["not presenting", "a student's link", "a wrong token", "a closed room"])
def test_the_kept_room_is_not_taken_back_without_its_token_or_outside_presenter_mode(monkeypatch, case):
    first, code = open_room()
    token = first.session_state["room_token"]
    saved = {"a wrong token": f"{code}.x{token}", "a closed room": f"ZZZZZ.{token}"}.get(case, f"{code}.{token}")
    monkeypatch.setattr(room, "saved", {room.TEACHER_COOKIE: saved}.get)
    params = {"not presenting": {}, "a student's link": {"room": code, "present": "1"}}.get(case, {"present": "1"})
    other = app("pages/causal_mask.py", query_params=params)
    assert not other.exception and not other.toast
    gone = [e.value.replace("\\", "") for e in other.info if "is no longer open" in e.value]
    assert gone == (
        [
            "Room ZZZZZ is no longer open: the server restarted without a shared store, or the room was "
            "idle for 4 hours. Open a new one from the sidebar."
        ]
        if case == "a closed room"
        else []
    )
    assert "room_token" not in other.session_state
    assert other.session_state.get("room_code") == (code if case == "a student's link" else None)
    scripts = cookie_scripts(other)
    if case in ("a wrong token", "a closed room"):  # a presenter's browser forgets what no longer works
        assert len(scripts) == 1 and "max-age=0" in scripts[0] and token not in scripts[0]
    else:
        assert not scripts


def voter_scripts(at) -> list[str]:
    """The scripts this run gave the browser that write the student's anonymous id."""
    bodies = [element.proto.body for element in at.get("html")]
    return [body for body in bodies if "document.cookie" in body and room.VOTER_COOKIE in body]


def answer(student, value: float):
    """Type ``value`` into the question's number box, as a student votes."""
    [n for n in student.number_input if n.label == "Your answer"][0].set_value(value).run()
    assert not student.exception, [e.value for e in student.exception]
    return student


def test_a_reload_or_a_new_tab_of_the_same_browser_votes_as_the_same_student(monkeypatch):
    teacher, code = open_room()
    next_step(teacher)  # step 2 asks for x^(2)'s weight on x^(1) after the mask
    first = answer(join(code), 0.5)
    voter = first.session_state[room.STUDENT]
    (kept,) = voter_scripts(first)
    assert f"{room.VOTER_COOKIE}={voter}; max-age=86400; path=/; samesite=strict" in kept
    assert not cookie_scripts(first)  # the student's browser gets no teacher's cookie
    question = _question(first)
    monkeypatch.setattr(room, "saved", {room.VOTER_COOKIE: voter}.get)  # the browser sends the id back from now on
    reloaded = join(code)
    assert reloaded.session_state[room.STUDENT] == voter and not voter_scripts(reloaded)  # the browser holds it
    assert [n.value for n in reloaded.number_input if n.label == "Your answer"] == [0.5]  # the vote it sent
    answer(reloaded, 1.0)
    assert STORE.tally(code, question) == {"1.00": 1}  # the vote changed; it did not count twice
    new_tab = join(code)
    assert new_tab.session_state[room.STUDENT] == voter
    assert [n.value for n in new_tab.number_input if n.label == "Your answer"] == [1.0]
    answer(new_tab, 0.5)
    assert STORE.tally(code, question) == {"0.50": 1}
    monkeypatch.undo()
    other = join(code)  # another browser: another student
    assert [n.value for n in other.number_input if n.label == "Your answer"] == [None]
    answer(other, 1.0)
    assert other.session_state[room.STUDENT] != voter
    assert STORE.tally(code, question) == {"0.50": 1, "1.00": 1}


@pytest.mark.parametrize(
    "forged",
    ["ABCDE.the-teachers-token", "0123456789abcdef0", "<script>alert(1)</script>", "0123456789ABCDEF", ""],
)
def test_an_edited_voter_cookie_is_ignored_and_moves_nothing(monkeypatch, forged):
    teacher, code = open_room()
    saved = forged.replace("ABCDE", code).replace("the-teachers-token", teacher.session_state["room_token"])
    monkeypatch.setattr(room, "saved", {room.VOTER_COOKIE: saved}.get)
    student = join(code)
    assert student.session_state[room.STUDENT] != saved and len(student.session_state[room.STUDENT]) == 16
    assert "room_token" not in student.session_state  # a student, never the teacher
    (kept,) = voter_scripts(student)  # a fresh id replaces what the browser sent
    assert f"{room.VOTER_COOKIE}={student.session_state[room.STUDENT]};" in kept
    assert room.voter_id("0123456789abcdef") == "0123456789abcdef"  # what secrets.token_hex(8) makes


def test_a_teacher_who_takes_the_room_back_sees_the_answer_revealed_as_the_students_do(monkeypatch):
    first, code = open_room()
    next_step(first)  # step 2 asks for x^(2)'s weight on x^(1) after the mask: the book's 0.5517
    student = answer(join(code), 0.55)
    [b for b in first.button if b.label == "Reveal"][0].click().run()
    student.run()
    assert "Right" in "\n".join(s.value for s in student.success)
    monkeypatch.setattr(room, "saved", {room.TEACHER_COOKIE: f"{code}.{first.session_state['room_token']}"}.get)
    again = app("pages/causal_mask.py", query_params={"present": "1", "step": "the-mask"})  # after a failover
    assert again.session_state["room_code"] == code
    assert not [b for b in again.button if b.label == "Reveal"]
    assert any("The answer" in i.value for i in again.info)
    [b for b in again.button if b.label == "Ask again"][0].click().run()  # the room's, as the students see
    student.run()
    assert not student.success and "Your teacher reveals the answer." in captions(student)


def stepper_keys(at) -> list[str]:
    return [b.key for b in at.button if b.key and b.key.split(":")[0].split("_")[0] in ("prev", "next", "clicker")]


def test_a_student_who_follows_has_no_stepper_buttons_keys_or_other_page_and_sees_no_answer_before_the_reveal():
    teacher, code = open_room()
    next_step(teacher)  # step 2 asks; step 3 shows the answer
    student = join(code)
    assert step_of(student) == 2 and "following the teacher" in captions(student)
    assert stepper_keys(student) == []  # no Previous, Next or clicker keys: none moves this student alone
    assert "<b>Step 2 of" in markdown(student)
    assert not [b for b in student.button if b.label in ("Reveal", "Ask again")]
    assert not [*student.success, *student.error] and "The answer" not in "\n".join(i.value for i in student.info)
    student.switch_page("pages/dropout.py").run()  # the navigation's link to another page takes them back
    assert on_page(student, "live") and student.title[0].value == "Causal mask" and step_of(student) == 2
    assert "following the teacher" in captions(student) and stepper_keys(student) == []
    student.switch_page("pages/live.py")  # the browser's address now: AppTest would ask for Dropout again
    button(student, "room_alone").click().run()  # on their own, the stepper is theirs again
    own = ["clicker_next_causal_mask", "clicker_prev_causal_mask", "next:causal_mask", "prev:causal_mask"]
    assert sorted(stepper_keys(student)) == own
    button(student, "room_follow").click().run()
    assert stepper_keys(student) == [] and step_of(student) == 2


def pace_shown(teacher) -> str:
    """The pace line of the teacher's room panel, as the teacher reads it."""
    (line,) = [line for m in teacher.sidebar.markdown for line in m.value.splitlines() if line.startswith("This step:")]
    return line


def test_a_students_pace_reaches_the_teachers_panel_once_per_student_and_a_move_resets_it():
    teacher, code = open_room()
    students = [join(code) for _ in range(3)]
    button(students[0], "room_fast").click().run()
    assert "Your teacher sees “Too fast”" in students[0].toast[0].value
    button(students[0], "room_fast").click().run()  # pressed again: still one
    button(students[1], "room_fast").click().run()
    button(students[1], "room_got").click().run()  # changed their mind: moved, not added
    button(students[2], "room_got").click().run()
    teacher.run()
    assert pace_shown(teacher) == "This step: 1 too fast · 2 got it"
    next_step(teacher)
    teacher.run()  # the panel's next refresh, after the move was published
    assert pace_shown(teacher) == "This step: 0 too fast · 0 got it"
    button(students[0], "room_got").click().run()  # pressed on the step the teacher left: not counted
    assert "moved on" in students[0].toast[0].value
    students[0].run()  # the move reaches the student
    button(students[0], "room_got").click().run()
    teacher.run()
    assert pace_shown(teacher) == "This step: 0 too fast · 1 got it"
    button(students[0], "room_alone").click().run()  # on their own: no pace buttons
    assert "room_fast" not in [b.key for b in students[0].button]


def test_the_teachers_results_hold_each_vote_with_the_prompt_the_students_read_and_the_reveal():
    teacher, code = open_room()
    next_step(teacher)  # step 2 asks for x^(2)'s weight on x^(1) after the mask
    students = [join(code) for _ in range(2)]
    for student, value in zip(students, (0.5, 0.5), strict=True):
        answer(student, value)
    teacher.run()
    [b for b in teacher.button if b.label == "Reveal"][0].click().run()
    text = room.room_results(code, teacher.session_state["room_token"])
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert row["question"].startswith("Before the mask, the second token “") and "**" not in row["question"]
    assert (row["choice"], row["count"], row["revealed"]) == ("0.50", "2", "yes")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["revealed_at_utc"])
    assert room.room_results(code, "not the token").splitlines() == [",".join(room.RESULT_COLUMNS)]
