"""The Break it page through AppTest: every mistake on the book's example and on a typed sentence, with the
numbers on screen equal to ``attention.run_mistake``'s; the link, presenter mode and the predict question."""

import numpy as np
import pytest
import torch
from apptest_support import app, decode, figure_specs, markdown, next_step, reveal, type_sentence

import attention
from attention.figures.charts import code_diff, format_number

SENTENCE = "The cat saw the cat, and <b>the</b> cat sat."
PAGE = "pages/mistakes.py"


def reference(name: str, text: str | None) -> attention.MistakeRun:
    """The mistake run as the package computes it for the sidebar's default settings (p = 0.5 for dropout)."""
    p = 0.5 if name == "dropout_without_rescale" else 0.0
    mha = attention.build(attention.MultiHeadAttention, 123, 3, 2, 1024, p, num_heads=2)
    x = attention.BOOK_INPUTS if text is None else attention.embed_tokens(attention.tokenize(text).ids, 3, 123)
    return attention.run_mistake(name, mha, x, seed=123)


def predict_radio(at):
    (radio,) = [r for r in at.radio if r.key.startswith("predict_")]
    return radio


@pytest.mark.parametrize("text", [None, SENTENCE], ids=["book", "typed"])
@pytest.mark.parametrize("name", list(attention.MISTAKES))
def test_every_mistake_shows_the_packages_numbers(name, text):
    run, mistake = reference(name, text), attention.MISTAKES[name]
    at = app(PAGE, query_params={"mistake": name})
    if text is not None:
        type_sentence(at, text)
    assert not at.exception
    assert at.selectbox(key="w_mistake").value == name

    assert [c.value for c in at.code if c.language == "diff"] == [code_diff(mistake.right_code, mistake.wrong_code)]
    assert mistake.why not in markdown(at)  # it comes with the question's Reveal (tests/test_questions_first.py)

    next_step(at)
    assert mistake.why in markdown(at)  # step 2 comes after the question: the learner who skipped it reads why
    (spec,) = figure_specs(at)
    right_z, wrong_z = (decode(t["z"]) for t in spec["data"] if t["type"] == "heatmap")
    right, wrong = run.right_weights.numpy(), run.wrong_weights.numpy()
    future = torch.triu(torch.ones(right.shape, dtype=torch.bool), 1).numpy()
    np.testing.assert_array_equal(right_z, np.where(future & (right == 0), np.nan, right))
    np.testing.assert_array_equal(wrong_z, np.where(future & (wrong == 0), np.nan, wrong))
    limit = 2.0 if name == "dropout_without_rescale" else 1.0
    assert (spec["layout"]["coloraxis"]["cmin"], spec["layout"]["coloraxis"]["cmax"]) == (0.0, limit)
    nan_rows = int(np.isnan(wrong).any(axis=-1).sum())
    assert bool(at.warning) == (nan_rows > 0)
    if nan_rows:
        assert at.warning[0].value.startswith(f"{nan_rows} row") and f"{run.nan_tokens} token" in at.warning[0].value

    next_step(at)
    table = at.table[0].value
    assert list(table.index) == [m.label for m in run.measures]
    assert list(table["right"]) == [format_number(m.right) for m in run.measures]
    assert list(table["wrong"]) == [format_number(m.wrong) for m in run.measures]
    for measure in run.measures:
        assert measure.sentence in markdown(at)

    if run.curve is None:
        assert at.button(key="next:mistakes").disabled
        return
    next_step(at)
    charts = {spec["layout"]["title"]["text"].split(" against")[0]: spec for spec in figure_specs(at)}
    for title, right_curve, wrong_curve in (
        ("largest weight in a row", run.curve.right_max_weight, run.curve.wrong_max_weight),
        ("W_query, W_key gradient", run.curve.right_param_grad, run.curve.wrong_param_grad),
    ):
        lines = [decode(t["y"]) for t in charts[title]["data"]]
        np.testing.assert_array_equal(lines[0], right_curve.numpy())  # the run's own curves, drawn
        np.testing.assert_array_equal(lines[1], wrong_curve.numpy())


def test_the_book_preset_numbers_the_page_claims():
    at = app(PAGE, query_params={"mistake": "fill_zero", "step": "what-it-costs"})
    assert not at.exception
    table = at.table[0].value
    assert table.loc["First token's weight on later tokens", "wrong"] == "0.8032"
    at.selectbox(key="w_mistake").set_value("tril_mask").run()
    assert at.table[0].value.loc["Rows of weights that are NaN", "wrong"] == "2"
    at.selectbox(key="w_mistake").set_value("dropout_without_rescale").run()
    assert at.table[0].value.loc["Row sum averaged over 1000 draws", "wrong"] == "0.5022"
    assert "p = 0.50 (the sidebar's p is 0, so the book's 0.5)" in at.caption[0].value


def test_the_mistake_and_step_live_in_the_link_and_a_bad_one_falls_back():
    at = app(PAGE, query_params={"mistake": "softmax_wrong_dim", "step": "right-beside-wrong"})
    assert not at.exception
    assert at.selectbox(key="w_mistake").value == "softmax_wrong_dim"
    assert "Step 2 of 3" in markdown(at)
    at.switch_page("pages/tokens.py").run()
    at.switch_page(PAGE).run()
    assert at.selectbox(key="w_mistake").value == "softmax_wrong_dim"  # kept while the page was not shown
    hostile = app(PAGE, query_params={"mistake": "<script>alert(1)</script>"})
    assert not hostile.exception
    assert hostile.selectbox(key="w_mistake").value == "fill_zero"


def test_the_prediction_is_computed_from_the_run_and_answered_right_and_wrong():
    at = app(PAGE, query_params={"mistake": "fill_zero"})
    assert not at.exception
    assert reference("fill_zero", None).measure("first_token_future_weight").wrong >= 0.5  # so "Half or more"
    predict_radio(at).set_value("None: the mask still hides them").run()
    reveal(at)
    assert at.error and "the answer is **Half or more**" in at.error[0].value.replace("\\", "")
    at.selectbox(key="w_mistake").set_value("no_scaling").run()  # unscaled at d_k = 512: nearly one-hot rows
    (typed,) = [n for n in at.number_input if n.key.startswith("predict_")]
    typed.set_value(0.34).run()  # the right code's largest weight: wrong here
    reveal(at)
    assert at.error and "the answer is **0\\.93**" in at.error[0].value
    for given, right in ((1.0, False), (0.93, True)):  # exactly one-hot is the wrong idea: 0.930 is not 1
        [b for b in at.button if b.label == "Ask again"][0].click().run()
        (typed,) = [n for n in at.number_input if n.key.startswith("predict_")]
        typed.set_value(given).run()
        reveal(at)
        assert bool(at.success) == right and bool(at.error) != right


def expected_answer(name: str, run: attention.MistakeRun):
    """The answer to mistake ``name``'s question, computed here from the package's run of it."""
    weights = run.wrong_weights.double()  # head 1, (num_tokens, num_tokens)
    if name == "fill_zero":
        return "Half or more" if run.measure("first_token_future_weight").wrong >= 0.5 else "Some, but less than half"
    if name == "tril_mask":
        return int((weights[0] > 0).sum())  # the keys the first token sees
    if name == "diagonal_0":
        return int(weights.isnan().any(dim=-1).sum())  # rows of only −∞
    if name in ("no_scaling", "divide_by_d_k"):
        return run.measure("max_weight_large_d_k").wrong  # at d_k = 512, rows of 8 random keys
    if name in ("view_without_transpose", "merge_without_transpose"):
        return int(run.measure("misplaced_slots").wrong)
    if name == "dropout_without_rescale":
        return run.measure("mean_row_sum").wrong
    if name == "mask_after_softmax":
        return int(((weights.sum(dim=-1) - 1).abs() < 5e-4).sum())  # rows that still sum to 1
    return float(weights[-1, -1])  # softmax_wrong_dim: the last token's weight on itself


BOOK_ANSWERS = {  # on the book's six tokens, two heads of head_dim 1, p = 0.5 for dropout
    "fill_zero": "Half or more",  # 80% on the five later tokens: five exp(0) = 1 beside one own score
    "tril_mask": 4,  # x^(3) to x^(6)
    "diagonal_0": 1,  # only the first token's row
    "no_scaling": 0.93,  # nearly one-hot
    "divide_by_d_k": 0.133,  # nearly 1/8 each
    "view_without_transpose": 10,  # of 12 (head, token) slots
    "dropout_without_rescale": 0.5,
    "mask_after_softmax": 1,  # only the last row
    "softmax_wrong_dim": 1.0,  # the last key's column holds one query
    "merge_without_transpose": 10,
}


@pytest.mark.parametrize("name", list(attention.MISTAKES))
def test_each_mistake_asks_its_own_question_answered_from_its_run(name):
    run = reference(name, None)
    answer = expected_answer(name, run)
    assert answer == pytest.approx(BOOK_ANSWERS[name], abs=0.01)
    at = app(PAGE, query_params={"mistake": name})
    assert not at.exception
    prompt = next(m.value for m in at.markdown if m.value.startswith("**Predict, then reveal.**"))
    assert "does the first token's output change" not in prompt and "future stays hidden" not in markdown(at)
    (box,) = [w for w in (*at.radio, *at.number_input) if w.key.startswith("predict_")]
    box.set_value(answer).run()
    reveal(at)
    assert at.success and not at.error, [a.value for a in at.error]


def test_presenter_mode_reveals_without_an_answer_box():
    at = app(PAGE, query_params={"mistake": "view_without_transpose", "present": "1"})
    assert not at.exception
    assert not [r for r in at.radio if r.key.startswith("predict_")]  # no answer box: the class votes by hand
    reveal(at)
    assert at.info and "The answer: **10**" in at.info[-1].value  # of the 12 (head, token) slots
    next_step(at)
    assert figure_specs(at)[0]["layout"]["font"]["size"] >= 18


@pytest.mark.slow  # seconds: out of the quick check
def test_the_panels_say_they_are_the_same_exactly_when_the_weights_are():
    from explorer.page_text.mistakes import difference_text

    assert "The two panels are the same" in difference_text("merge_without_transpose", 1, 0.0)
    assert "√d_k = d_k = 1" in difference_text("no_scaling", 1, 0.0)
    assert "shows in the weights" in difference_text("fill_zero", 1, 0.8)
    assert "shows in the weights" in difference_text("tril_mask", 1, float("nan"))  # no cell a number in both
    for name, same in (("no_scaling", True), ("divide_by_d_k", True), ("fill_zero", False)):
        at = app(PAGE, query_params={"mistake": name, "step": "right-beside-wrong"})
        assert not at.exception
        assert reference(name, None).right_weights.equal(reference(name, None).wrong_weights) == same
        text = markdown(at)
        assert ("The two panels are the same" in text) == same
        assert ("shows in the weights" in text) != same
        assert "pictures agree" not in text


def test_head_dim_1_says_why_the_scaling_mistakes_change_nothing():
    at = app(PAGE, query_params={"mistake": "divide_by_d_k"})
    assert not at.exception
    assert at.info and "√1 = 1" in at.info[0].value
    at.selectbox(key="w_mistake").set_value("fill_zero").run()
    assert not [i for i in at.info if "√1 = 1" in i.value]


@pytest.mark.parametrize("text", ["Hi", "Hi there"])
def test_short_sentences_ask_only_the_questions_they_can_answer(text):
    unanswerable = {"Hi": {"fill_zero", "tril_mask"}, "Hi there": {"tril_mask"}}[text]  # no later token, NaN row
    at = app(PAGE, query_params={"mistake": "fill_zero"})
    type_sentence(at, text)
    for name in attention.MISTAKES:
        at.selectbox(key="w_mistake").set_value(name).run()
        assert not at.exception
        asked = [m.value for m in at.markdown if m.value.startswith("**Predict, then reveal.**")]
        assert bool(asked) == (name not in unanswerable), name
        assert not any("1 rows" in question for question in asked)
