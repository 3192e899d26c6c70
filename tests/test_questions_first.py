"""A question comes before its answer (the rule in ``explorer.page_text.questions``), on every page that asks one.

Each page is opened by a link at its first step and walked with Next, as a learner walks it, to the step that asks.
On the way every step's words are read, with its cell panel once a cell is picked where the step has one. Nothing
read there may state the answer: neither a phrase of the question's ``gives_away`` nor its value as the pages print
it. Then Reveal must show the explanation (on Break it, why the mistake is wrong too), in words that state it."""

import re

import pytest
from apptest_support import answer_and_reveal, app, next_step

import attention
from explorer.widgets import questions as question_widget

PADDED = {"text": "A short one.", "second": "A much longer second sentence, padded to nothing."}
CASES = {  # a page with the settings of its link: each asks one question, on the first step that asks
    "simplified": ("simplified", {}),
    "qkv": ("qkv", {}),
    "causal_mask": ("causal_mask", {}),
    "dropout": ("dropout", {}),
    "batches": ("batches", {}),  # the book's two copies: what the mask slice masks
    "batches-padded": ("batches", PADDED),  # two sentences, one padded: whether padding changes the other tokens
    "multihead": ("multihead", {}),
    **{f"mistakes-{name}": ("mistakes", {"mistake": name}) for name in attention.MISTAKES},
}
READ = ("markdown", "caption", "text", "info", "warning", "error", "success", "code", "latex")
MOST_STEPS = 8


@pytest.fixture
def asked(monkeypatch) -> list:
    """The questions the page asks, in the order it asks them (every ``show_question`` call, through ``ask`` too)."""
    questions, show = [], question_widget.show_question

    def recording(question, **options):
        questions.append(question)
        return show(question, **options)

    monkeypatch.setattr(question_widget, "show_question", recording)
    return questions


def read(at) -> str:
    """Every text of the main area: the step's words, notes, code and the cell panel's words."""
    return "\n".join(str(element.value) for kind in READ for element in getattr(at.main, kind))


def read_with_a_cell(at) -> str:
    """The step's words, then its words with a cell picked (query x^(2), key x^(1)) where it has a cell panel."""
    words = read(at)
    pickers = {s.key.rsplit(":", 1)[-1]: s for s in at.selectbox if s.key and s.key.startswith("w_cell:")}
    if "row" in pickers:
        pickers["row"].select_index(1).run()
        [s for s in at.selectbox if s.key == pickers["col"].key][0].select_index(0).run()
        assert not at.exception, [e.value for e in at.exception]
        words += "\n" + read(at)
    return words


def asks(at) -> bool:
    return any(b.label == "Reveal" for b in at.button)


def printed(question) -> list[str]:
    """The answer as the pages print it: a choice as written; a number that is not whole with 3 and 4 decimals (the
    book's), and with the question's own decimals when it has 3 or more. A whole number (a count, a row sum of 1)
    is too common to search for: its phrases stand for it. Two decimals would find the settings' p = 0.50."""
    if question.choices is not None:
        return list(question.answers)
    forms = []
    for value in map(float, question.answers):
        if abs(value - round(value)) >= 5e-5:
            forms += [f"{value:.3f}", f"{value:.4f}"] + ([question.number(value)] if question.decimals >= 3 else [])
    return forms


def found(form: str, text: str) -> bool:
    """Whether ``form`` is in ``text`` as a number of its own (0.552 is not in 0.5521) or as words."""
    return re.search(rf"(?<![\d.]){re.escape(form)}(?!\d)", text) is not None


@pytest.mark.parametrize("case", CASES)
def test_nothing_before_the_reveal_gives_the_answer_away(case, asked):
    page, params = CASES[case]
    at = app(f"pages/{page}.py", query_params=params, timeout=60)
    assert not at.exception, [e.value for e in at.exception]
    before = []
    for _ in range(MOST_STEPS):
        if asks(at):
            break
        before.append(read_with_a_cell(at))
        next_step(at)
    assert asks(at), f"{page} asked no question in its first {MOST_STEPS} steps"
    asked.clear()
    at.run()
    assert len(asked) == 1, [q.key for q in asked]  # one question a step
    question = asked[0]
    before = "\n".join([*before, read_with_a_cell(at)])
    assert question.gives_away, f"{question.key} names no phrase that states its answer"

    shown = [phrase for phrase in question.gives_away if phrase.lower() in before.lower()]
    assert not shown, f"{question.key}: said before the Reveal: {shown}"
    values = [form for form in printed(question) if found(form, before)]
    assert not values, f"{question.key}: its answer is printed before the Reveal: {values}"
    if page == "mistakes":
        assert attention.MISTAKES[params["mistake"]].why not in before  # the explanation waits for the Reveal

    answer_and_reveal(at)
    after = read(at)
    assert question.explanation in after
    assert any(phrase.lower() in after.lower() for phrase in question.gives_away), question.gives_away
    if page == "mistakes":
        assert attention.MISTAKES[params["mistake"]].why in after


@pytest.mark.parametrize("case", CASES)
def test_each_tolerance_is_at_most_a_fifth_of_the_way_to_the_nearest_wrong_idea(case, asked):
    """Every number question the pages ask: a learner who holds a wrong idea is told "not quite"; one who types the
    answer as the reveal prints it is right."""
    page, params = CASES[case]
    at = app(f"pages/{page}.py", query_params=params, timeout=60)
    for _ in range(MOST_STEPS):
        if asks(at):
            break
        next_step(at)
    (question,) = asked[-1:]
    if question.choices is not None or question.tolerance == 0:
        assert question.tolerance == 0 and question.wrong_ideas == ()  # choices, or a count typed exactly
        return
    assert question.wrong_ideas, f"{question.key}: a tolerance needs the wrong ideas it is measured against"
    nearest = min(abs(float(question.answer) - idea) for idea in question.wrong_ideas)
    assert question.tolerance <= nearest / 5 + 1e-12
    assert not any(question.is_right(idea) for idea in question.wrong_ideas)
    assert question.is_right(float(question.number(question.answer)))
    assert f"(within {question.tolerance:g})" in question.prompt
