"""Predict, then reveal: a question, built by a page from its own numbers, that the learner answers before a step
shows the result, then presses Reveal to see whether they were right. In presenter mode the question is shown
large with its choices, for the class to vote by hand, and the teacher reveals. Answers and reveals live in
session state keyed by the question and ``context`` (the settings the answer depends on): a new sentence asks afresh."""

from __future__ import annotations

import math
import zlib

import streamlit as st

from attention.prose import literal
from explorer import room
from explorer.page_text.questions import Question
from explorer.session import PRESENTER, question_keys


def state_key(question: Question, context: object = None) -> str:
    """The session-state key for this question under ``context``: one answer per page, step and settings."""
    return f"predict_{question.key}_{zlib.crc32(repr(context).encode()):08x}"


def show_question(question: Question, *, context: object = None, presenter: bool | None = None) -> bool:
    """Draw the question, its answer box (not in presenter mode) and Reveal; returns whether it is revealed. In a live
    room a student's answer is their vote, and a following student's reveal is the teacher's, read from the room."""
    key = state_key(question, context)
    answer_key, revealed_key, widget = question_keys(key)
    presenter = bool(st.session_state.get(PRESENTER)) if presenter is None else presenter
    teachers = room.revealed_here(key)  # None unless this is a student following a teacher
    room_wide = room.revealed_by_teacher(key)  # None unless this is the room's teacher: the room's word
    revealed = bool(st.session_state.get(revealed_key)) if teachers is None else teachers
    revealed = revealed if room_wide is None else room_wide
    if room.is_student() and answer_key not in st.session_state:  # a reload or a new tab: the vote it sent
        st.session_state[answer_key] = _kept_answer(question, room.own_vote(key))
    with st.container(border=True, key=key):
        st.markdown(f"**Predict, then reveal.** {question.prompt}")
        if presenter:
            if question.choices is not None:
                st.markdown("  \n".join(lettered(question, c) for c in question.choices))
        else:
            _answer_box(question, answer_key, widget, disabled=revealed, vote_as=key)
        if room.is_teacher():
            room.vote_chart(question, key)
        given = st.session_state.get(answer_key)
        if not revealed:
            if teachers is not None:
                st.caption("Your teacher reveals the answer.")
                return False
            st.button(
                "Reveal",
                key=f"{key}_reveal",
                icon=":material/visibility:",
                disabled=not presenter and given is None,
                on_click=_reveal,
                args=(key, True, question),
                help=None if presenter or given is not None else "Answer first, then reveal.",
            )
            return False
        _verdict(question, given, presenter)
        if teachers is None:
            st.button("Ask again", key=f"{key}_again", type="tertiary", on_click=_reveal, args=(key, False))
    return True


def _reveal(key: str, on: bool, question: Question | None = None) -> None:
    """Reveal the answer to ``question`` under ``key`` (or ask again); a teacher's reveal is the whole room's."""
    answer_key, revealed_key, _ = question_keys(key)
    st.session_state[revealed_key] = on
    if not on:
        st.session_state[answer_key] = None
    room.reveal(key, on, question)


def _answer_box(question: Question, answer_key: str, widget: str, *, disabled: bool, vote_as: str) -> None:
    """A radio of the choices or a number box, kept under ``answer_key`` across reruns; in a live room, the vote."""
    st.session_state[widget] = st.session_state.get(answer_key)

    def keep() -> None:
        st.session_state[answer_key] = st.session_state[widget]
        given = st.session_state[widget]
        numeric = question.choices is None and isinstance(given, int | float)
        room.vote(vote_as, f"{given:.{question.decimals}f}" if numeric else given, question)  # "1.00", 1: one vote

    if question.choices is not None:
        st.radio(
            "Your answer",
            question.choices,
            index=None,
            format_func=lambda choice: lettered(question, choice),
            key=widget,
            on_change=keep,
            disabled=disabled,
        )
    else:
        whole = question.decimals == 0
        step, shown = (1, "%d") if whole else (10.0**-question.decimals, f"%.{question.decimals}f")
        st.number_input(
            "Your answer", value=None, step=step, format=shown, key=widget, on_change=keep, disabled=disabled
        )


def _kept_answer(question: Question, vote: str | None) -> str | float | None:
    """A vote as the room keeps it (a choice, or a number written with the question's decimals) as an answer."""
    if question.choices is not None:
        return vote if vote in question.choices else None
    try:
        number = float(vote)
    except (TypeError, ValueError):  # no vote, or not a number
        return None
    return (round(number) if question.decimals == 0 else number) if math.isfinite(number) else None


def lettered(question: Question, choice: str) -> str:
    """A choice as the presenter lists it and a student picks it ("**A.** x^(1) “Your”"), by the letter the vote chart
    (``figures.vote_bars``) uses too."""
    return f"**{chr(65 + question.choices.index(choice))}.** {literal(choice)}"


def _verdict(question: Question, given, presenter: bool) -> None:
    answer = literal(question.shown_answer())
    explanation = f" {question.explanation}" if question.explanation else ""
    if presenter or given is None:
        st.info(f"The answer: **{answer}**.{explanation}", icon=":material/lightbulb:")
    elif question.is_right(given):
        st.success(f"Right: **{answer}**.{explanation}", icon=":material/check_circle:")
    else:
        shown = given if question.choices is not None else question.number(given)
        st.error(
            f"Not quite: you said {literal(shown)}; the answer is **{answer}**.{explanation}", icon=":material/cancel:"
        )


def ask(question: Question | None, settings) -> bool:
    """Ask ``question`` (nothing for None) keyed by the page's ``settings``; returns whether it is revealed."""
    return question is not None and show_question(question, context=settings.key())
