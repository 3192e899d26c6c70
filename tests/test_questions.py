"""Predict, then reveal (``explorer.widgets.questions``) through AppTest: answered right, answered wrong,
presenter mode."""

import numpy as np
import pytest
from apptest_support import function_app, markdown, reveal, reveal_button

from attention.prose import literal as plain
from explorer.page_text import questions
from explorer.page_text.questions import Question
from explorer.widgets.questions import state_key


def choice_page(answer: str = "journey") -> None:
    import streamlit as st

    from explorer.page_text.questions import Question
    from explorer.widgets.questions import show_question as ask

    choices = ("Your", "journey", "starts", "with", "one", "step")
    question = Question("test:choice", "Which token gets the most weight?", answer, choices, explanation="Computed.")
    ask(question, context=st.session_state.get("context", "book"))


def number_page(answer: float = 0.5) -> None:
    from explorer.page_text.questions import Question
    from explorer.widgets.questions import show_question as ask

    ask(Question("test:number", "What will the row sum to?", answer, tolerance=0.05), context=None)


def test_a_right_choice_is_called_right_and_survives_reruns():
    at = function_app(choice_page)
    assert not at.exception and not at.warning
    assert reveal_button(at).disabled  # answer first
    at.radio[0].set_value("journey").run()
    assert not reveal_button(at).disabled
    reveal(at)
    assert [s.value for s in at.success] == ["Right: **journey**. Computed."]
    at.run()  # any rerun keeps the answer and the reveal
    assert at.success and at.radio[0].value == "journey" and at.radio[0].disabled


def test_a_wrong_choice_is_called_wrong_with_the_computed_answer():
    at = function_app(choice_page, answer="starts")
    at.radio[0].set_value("journey").run()
    reveal(at)
    assert not at.success
    assert at.error[0].value.startswith("Not quite: you said journey; the answer is **starts**.")


def test_ask_again_clears_the_answer():
    at = function_app(choice_page)
    at.radio[0].set_value("step").run()
    reveal(at)
    [b for b in at.button if b.label == "Ask again"][0].click().run()
    assert at.radio[0].value is None and not at.error and reveal_button(at)


def test_another_context_asks_afresh_and_the_first_answer_is_kept():
    at = function_app(choice_page)
    at.radio[0].set_value("journey").run()
    reveal(at)
    at.session_state["context"] = "typed"  # as if the learner typed a sentence
    at.run()
    assert not at.success and at.radio[0].value is None
    at.session_state["context"] = "book"  # and went back to the book's example
    at.run()
    assert at.success and at.radio[0].value == "journey"


@pytest.mark.parametrize(("given", "right"), [(0.52, True), (0.46, True), (0.4, False), (1.0, False)])
def test_a_number_within_the_tolerance_is_right(given, right):
    at = function_app(number_page)
    at.number_input[0].set_value(given).run()
    reveal(at)
    assert bool(at.success) == right and bool(at.error) != right
    if not right:
        assert f"you said {given:.2f}".replace(".", "\\.") in at.error[0].value


def test_presenter_mode_shows_the_choices_and_reveals_without_an_answer():
    at = function_app(choice_page, presenter=True)
    assert not at.radio and not at.number_input
    assert "**B.** journey" in markdown(at)
    reveal(at)
    assert at.info[0].value == "The answer: **journey**. Computed."
    assert not at.success and not at.error


def test_questions_check_their_answers():
    with pytest.raises(ValueError, match="not one of the choices"):
        Question("q", "?", "three", ("one", "two"))
    with pytest.raises(ValueError, match="finite number"):
        Question("q", "?", float("nan"))
    assert Question("q", "?", 1.0, tolerance=0.1).is_right(1.05)
    assert not Question("q", "?", 1.0).is_right(None)


def test_keys_and_labels_are_safe():
    question = Question("batches:padding", "?", "Yes", ("Yes", "No"))
    assert state_key(question, ("a",)) != state_key(question, ("b",))
    assert state_key(question, ("a",)) == state_key(question, ("a",))
    assert plain("**y** [z](javascript:1) <b>") == r"\*\*y\*\* \[z\]\(javascript" + "\u2060" + r"\:1\) \<b\>"


def whole_number_page() -> None:
    from explorer.page_text.questions import Question
    from explorer.widgets.questions import show_question as ask

    ask(Question("test:whole", "How many numbers per token?", 4, decimals=0))


def test_a_whole_number_question_takes_whole_numbers():
    at = function_app(whole_number_page)
    assert at.number_input[0].format == "%d"
    at.number_input[0].set_value(2).run()
    reveal(at)
    assert at.error[0].value.startswith("Not quite: you said 2; the answer is **4**")


# The pages' questions (``explorer.page_text.questions``): each answer is read from the numbers it is given.


def test_most_attended_reads_the_largest_weight():
    from explorer.page_text import questions

    pieces = ("Your", " journey", " starts", " with", " one", " step")
    question = questions.most_attended([0.1, 0.2, 0.3, 0.1, 0.1, 0.2], pieces, 1)
    assert question.answer == "x^(3) “␣starts”" and len(question.choices) == 6
    long = questions.most_attended(np.eye(12)[7], [f"t{k}" for k in range(12)], 0)
    assert long.choices is None and long.answer == 8 and long.decimals == 0


def test_scaling_direction_compares_the_softmax_with_and_without_the_division():

    scores = np.array([2.0, 1.0, 0.0])
    scaled = np.exp(scores / 2**0.5) / np.exp(scores / 2**0.5).sum()
    assert questions.scaling_direction(scores, scaled, 2, 0).answer == "It goes down"
    unscaled = np.exp(scores) / np.exp(scores).sum()
    assert questions.scaling_direction(scores, unscaled, 1, 0).answer == "It stays the same"


def test_row_sums_padding_and_widths_come_from_the_numbers():

    renormalized = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    unmasked = np.array([[0.2, 0.3, 0.5], [0.3, 0.3, 0.4], [0.1, 0.1, 0.8]])
    second = questions.masked_second_row(unmasked, renormalized, ["a", "b", "c"])
    assert second.answer == pytest.approx(0.5)  # 0.3 / (0.3 + 0.3)
    assert "0.3000 to x^(1) and 0.3000 to itself" in second.prompt  # the two weights the learner renormalizes
    assert "0.3000 / (0.3000 + 0.3000) = 0.5000" in second.explanation
    assert questions.masked_second_row(unmasked[:1, :1], renormalized[:1, :1], ["a"]) is None
    dropout = questions.dropout_average_sum([1.0, 0.6, 1.4], ["a", "b", "c"], 2, 0.5, True)
    assert dropout.answer == 1.0 and dropout.is_right(1.04) and not dropout.is_right(1.4)  # not this draw's 1.4
    assert "on average over many draws" in dropout.prompt and "1/(1 − p)" not in dropout.prompt
    assert "(1 − p) · w/(1 − p) = w" in dropout.explanation
    assert questions.dropout_average_sum([1.0, 1.0, 1.0], ["a", "b", "c"], 2, 0.0, False) is None  # nothing dropped
    assert questions.padding_changes((0.0, 2e-8), True).answer == "No, they stay the same"
    assert "causal mask hides it" in questions.padding_changes((0.0, 2e-8), True).explanation
    assert "mask" not in questions.padding_changes((0.0, 0.0), False).explanation  # no padding: items are apart
    assert questions.padding_changes((0.0, 0.3), True).answer == "Yes, they change"
    assert questions.padding_changes((float("nan"), 0.0), True) is None
    width = questions.context_size(2, 2, 4, 3, 6, 0.0)
    call = "`MultiHeadAttentionWrapper(d_in=3, d_out=2, context_length=6, dropout=0, num_heads=2)`"
    assert width.answer == 4 and call in width.prompt
    assert "×" not in width.prompt and "concatenat" not in width.prompt  # the settings, not the product's factors
    assert "2 × 2" in width.explanation and "each head's output size" in width.explanation


def test_a_repeated_token_ties_with_the_query_and_either_is_right():
    pieces = ("the", " cat", " saw", " the", " cat")
    weights = np.array([0.1, 0.3, 0.1, 0.2, 0.3])  # x^(2) and x^(5) are the same token: the same weight
    question = questions.most_attended(weights, pieces, 1)
    assert question.answer == "x^(2) “␣cat”" and question.also_right == ("x^(5) “␣cat”",)
    assert question.is_right("x^(5) “␣cat”") and question.is_right("x^(2) “␣cat”")
    assert not question.is_right("x^(4) “␣the”")
    assert question.shown_answer() == "x^(2) “␣cat” or x^(5) “␣cat”"
    assert "tie" in question.explanation and "Softmax keeps the order" in question.explanation
    typed = questions.most_attended(np.r_[weights, np.full(5, 0.0)], (*pieces, *"abcde"), 1)
    assert typed.answer == 2 and typed.also_right == (5,) and typed.is_right(5) and not typed.is_right(4)
    single = questions.most_attended([0.1, 0.6, 0.3], pieces[:3], 1)
    assert single.also_right == () and "tie" not in single.explanation


def test_the_scaling_reveal_gives_the_reason():
    scores = np.array([2.0, 1.0, 0.0])
    scaled = np.exp(scores / 2**0.5) / np.exp(scores / 2**0.5).sum()
    down = questions.scaling_direction(scores, scaled, 2, 0)
    assert "shrinks the gaps" in down.explanation and "whenever d_k > 1" in down.explanation
    same = questions.scaling_direction(scores, np.exp(scores) / np.exp(scores).sum(), 1, 0)
    assert same.answer == "It stays the same" and "√1 = 1" in same.explanation
    flat = questions.scaling_direction(np.zeros(3), np.full(3, 1 / 3), 4, 0)
    assert flat.answer == "It stays the same" and "equal" in flat.explanation


def test_a_tied_answer_is_called_right_through_the_widget():
    at = function_app(tie_page)
    at.radio[0].set_value("x^(5) “cat”").run()
    reveal(at)
    assert at.success and "x^(2) “cat” or x^(5) “cat”" in at.success[0].value.replace("\\", "")


def tie_page() -> None:
    from explorer.page_text.questions import most_attended
    from explorer.widgets.questions import show_question as ask

    ask(most_attended([0.1, 0.3, 0.1, 0.2, 0.3], ("the", "cat", "saw", "the", "cat"), 1))


# The questions on the chapter's pages, answered wrong and then right through the whole app.

PAGES = {  # page → (the step that asks, a wrong answer, the right one on the book's example)
    # the book's weights of x^(2): largest 0.2379, on itself
    "simplified": ("one-query-scores", "x^(1) “Your”", "x^(2) “journey”"),
    "qkv": ("scaled-scores", "It goes up", "It goes down"),  # d_k = 2: dividing the scores by √2 flattens the softmax
    "causal_mask": ("the-mask", 1.0, 0.55),  # the book's row 2 renormalized: 0.5517 : 0.4483 (not 1, the first row's)
    "dropout": (4, 0.5, 1.0),  # the 1/(1 − p) scaling keeps each weight's average: a row averages 1
    "batches": (2, 15, 30),  # two copies of the book's input: the (6, 6) slice's 15 ones, once per item
    "multihead": ("one-head", 2, 4),  # the wrapper concatenates 2 heads of d_out = 2
}


def answer(at, value) -> None:
    (box,) = [w for w in (*at.radio, *at.number_input) if w.key.startswith("predict_")]
    box.set_value(value).run()
    reveal(at)


@pytest.mark.parametrize("page", PAGES)
def test_each_pages_question_says_wrong_then_right(page):
    from apptest_support import app

    step, wrong, right = PAGES[page]
    at = app(f"pages/{page}.py", query_params={"step": str(step)})
    assert not at.exception
    answer(at, wrong)
    assert at.error and not at.success
    [b for b in at.button if b.label == "Ask again"][0].click().run()
    answer(at, right)
    assert at.success and not at.error


def test_the_dropout_question_is_answered_by_the_average_of_many_draws():
    from apptest_support import app

    at = app("pages/dropout.py", query_params={"step": "row-sums"})
    answer(at, 1.0)
    assert at.success
    at.button(key="next:dropout").click().run()
    assert "Its rows sum to 0.9" in markdown(at) or "Its rows sum to 1.0" in markdown(at)


def test_no_answer_is_written_before_its_question():
    from apptest_support import app, type_sentence

    at = app("pages/batches.py")
    type_sentence(at, "A short one.")
    at.text_input(key="second_text").set_value("A much longer second sentence, padded to nothing.").run()
    padded = [info.value for info in at.info if "padded at the end" in info.value]
    assert len(padded) == 1 and "mask" not in padded[0]  # step 1, before the question on step 2
    at.button(key="next:batches").click().run()
    assert not at.exception
    above = markdown(at).split("Predict, then reveal")[0]
    assert "padding" not in above.split("`self.mask`")[1]  # the mask's text says nothing of the padding
    causal = app("pages/causal_mask.py", query_params={"step": "the-mask"})
    above = markdown(causal).split("Predict, then reveal")[0]
    assert "see only itself" not in above


# The rule (``explorer.page_text.questions``): a tolerance at most a fifth of the way to the nearest wrong idea.


def test_the_tolerance_is_a_fifth_of_the_way_to_the_nearest_wrong_idea_rounded_down():
    assert questions.tolerance_for(0.930, (1.0, 0.125, 0.340), at_most=0.1) == 0.01  # one-hot: 0.07 away
    assert questions.tolerance_for(0.1327, (1.0, 0.125, 0.340), at_most=0.1) == 0.001  # 1/8: 0.0077 away
    assert questions.tolerance_for(1.0, (0.5, 2.0), at_most=0.05) == 0.05  # the cap, when the ideas are far
    assert questions.tolerance_for(0.503, (0.5,), at_most=0.01) == 0.0006
    assert questions.tolerance_for(0.5, (0.5,), at_most=0.01) == 0.01  # an idea that is the answer is not wrong


def test_a_question_refuses_a_tolerance_that_reaches_a_wrong_idea():
    with pytest.raises(ValueError, match="a fifth of the distance"):
        Question("q", "?", 0.930, tolerance=0.1, wrong_ideas=(1.0,))
    Question("q", "?", 0.930, tolerance=0.014, wrong_ideas=(1.0,))


def test_an_estimate_says_its_tolerance_and_types_enough_decimals():
    fine = questions.estimate("q", "How much?", 0.1327, (0.125,), at_most=0.1, explanation="Because.")
    assert fine.prompt == "How much? (within 0.001)" and fine.decimals == 3 and fine.wrong_ideas == (0.125,)
    assert fine.is_right(0.133) and not fine.is_right(0.125)
    coarse = questions.estimate("q", "How much?", 1.0, (0.5, 2.0), at_most=0.05, explanation="Because.")
    assert coarse.decimals == 2 and coarse.is_right(1.04) and not coarse.is_right(0.5)


def test_the_books_near_tie_is_said_with_the_reveal():
    """x^(2) gives 0.2379 to itself and 0.2333 to x^(3), whose vectors are almost equal: right, but a close call."""
    import attention

    x = attention.BOOK_INPUTS.numpy().astype(np.float64)  # (6, 3)
    scores = x[1] @ x.T  # attn_scores_2, (6,)
    weights = np.exp(scores) / np.exp(scores).sum()
    question = questions.most_attended(weights, ("Your", " journey", " starts", " with", " one", " step"), 1)
    assert question.answer == "x^(2) “␣journey”" and question.also_right == ()
    assert "A close call: x^(3) “␣starts” gets 0.2333, only 0.0046 less" in question.explanation
    clear = questions.most_attended([0.1, 0.6, 0.3], ("a", "b", "c"), 1)
    assert "close call" not in clear.explanation


def test_the_batches_question_fits_the_batch():
    """The book's two copies: what the mask slice masks, a count. Two sentences: whether batching, or padding,
    changes them; padding is said to be <|endoftext|> fillers before the question asks about the real tokens."""
    mask = np.triu(np.ones((6, 6), dtype=bool), 1)
    count = questions.masked_in_batch(mask, 2)
    assert count.answer == 30 and count.decimals == 0 and "(2, 6, 6)" in count.prompt and "2 × 15" in count.explanation
    padded = questions.padding_changes((0.0, 0.0), True)
    assert "padding tokens: copies of `<|endoftext|>` added at its end" in padded.prompt
    assert "real tokens" not in padded.prompt
