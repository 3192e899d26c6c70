"""Predict, then reveal: a question the learner answers before a step shows the result.

A page builds a ``Question`` from its own numbers (the right answer is
computed by the caller, never written into the page) and calls ``ask`` before
the step that shows the result. The learner picks a choice or types a number,
then presses Reveal, which says whether they were right. In presenter mode the
question is shown large with its choices, for the class to vote by hand, and
the teacher presses Reveal: there is nothing to type.

Answers and reveals live in plain session state, keyed by the question and by
``context`` (the settings the answer depends on), so they survive reruns and
moving between steps, and a new sentence asks afresh.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass

import streamlit as st

from .figures import visible_token

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:])")


def plain(text: str) -> str:
    """``text`` with every markdown character backslash-escaped, so Streamlit shows it as it is."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def quote(piece: str) -> str:
    """A token for a question's prompt: its whitespace visible, in quotes, shown as typed."""
    return f"“{plain(visible_token(piece))}”"


@dataclass(frozen=True)
class Question:
    """One question: a ``prompt``, and either ``choices`` (``answer`` is one of them) or a number.

    ``prompt`` and ``explanation`` are markdown: put tokens in them through
    ``quote``. For a number, an answer within ``tolerance`` of ``answer`` is
    right; it is typed and printed with ``decimals`` decimals. ``explanation`` is shown with the
    reveal.
    """

    key: str
    prompt: str
    answer: str | float
    choices: tuple[str, ...] | None = None
    tolerance: float = 0.0
    decimals: int = 2
    explanation: str = ""

    def __post_init__(self) -> None:
        if self.choices is not None and self.answer not in self.choices:
            raise ValueError(f"The answer {self.answer!r} is not one of the choices {self.choices}.")
        if self.choices is None and not (isinstance(self.answer, int | float) and math.isfinite(self.answer)):
            raise ValueError(f"A number question needs a finite number as its answer, got {self.answer!r}.")

    def is_right(self, given: str | float | None) -> bool:
        """Whether ``given`` is the answer (a choice) or within ``tolerance`` of it (a number)."""
        if given is None:
            return False
        if self.choices is not None:
            return given == self.answer
        return abs(float(given) - float(self.answer)) <= self.tolerance + 1e-12

    def shown_answer(self) -> str:
        return str(self.answer) if self.choices is not None else self.number(self.answer)

    def number(self, value: float) -> str:
        return f"{value:.{self.decimals}f}"


PRESENTER_CSS = """<style>
[class*="st-key-predict_"] [data-testid="stMarkdownContainer"] p {font-size: 1.6rem; line-height: 1.4;}
</style>"""


def state_key(question: Question, context: object = None) -> str:
    """The session-state key for this question under ``context``: one answer per page, step and settings."""
    return f"predict_{question.key}_{zlib.crc32(repr(context).encode()):08x}"


def ask(question: Question, *, context: object = None, presenter: bool | None = None) -> bool:
    """Draw the question, its answer box (not in presenter mode) and Reveal; returns whether it is revealed.

    ``context`` is whatever the answer depends on (the settings, the query
    token): a change of it asks the question afresh.
    """
    key = state_key(question, context)
    answer_key, revealed_key, widget = f"{key}_answer", f"{key}_revealed", f"{key}_widget"
    presenter = bool(st.session_state.get("presenter")) if presenter is None else presenter
    revealed = bool(st.session_state.get(revealed_key))
    with st.container(border=True, key=key):
        st.markdown(f"**Predict, then reveal.** {question.prompt}")
        if presenter:
            st.html(PRESENTER_CSS)
            if question.choices is not None:
                st.markdown("  \n".join(f"**{chr(65 + k)}.** {plain(c)}" for k, c in enumerate(question.choices)))
        else:
            _answer_box(question, answer_key, widget, disabled=revealed)
        given = st.session_state.get(answer_key)
        if not revealed:
            st.button(
                "Reveal",
                key=f"{key}_reveal",
                icon=":material/visibility:",
                disabled=not presenter and given is None,
                on_click=st.session_state.update,
                kwargs={revealed_key: True},
                help=None if presenter or given is not None else "Answer first, then reveal.",
            )
            return False
        _verdict(question, given, presenter)
        st.button(
            "Ask again",
            key=f"{key}_again",
            type="tertiary",
            on_click=st.session_state.update,
            kwargs={revealed_key: False, answer_key: None},
        )
    return True


def _answer_box(question: Question, answer_key: str, widget: str, *, disabled: bool) -> None:
    """A radio of the choices or a number box; its value is kept under ``answer_key`` across reruns."""
    st.session_state[widget] = st.session_state.get(answer_key)

    def keep() -> None:
        st.session_state[answer_key] = st.session_state[widget]

    if question.choices is not None:
        st.radio(
            "Your answer",
            question.choices,
            index=None,
            format_func=plain,
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


def _verdict(question: Question, given, presenter: bool) -> None:
    answer = plain(question.shown_answer())
    explanation = f" {question.explanation}" if question.explanation else ""
    if presenter or given is None:
        st.info(f"The answer: **{answer}**.{explanation}", icon=":material/lightbulb:")
    elif question.is_right(given):
        st.success(f"Right: **{answer}**.{explanation}", icon=":material/check_circle:")
    else:
        shown = given if question.choices is not None else question.number(given)
        st.error(
            f"Not quite: you said {plain(shown)}; the answer is **{answer}**.{explanation}", icon=":material/cancel:"
        )
