"""Common mistakes: the right steps against the package's module (oracle), each shown line against the
code that runs, and each mistake's measured consequence against what the page says about it."""

import dataclasses
import inspect
import math
import re

import pytest
import torch
import torch.nn.functional as F
from tolerances import attention_bounds, summation_error, within

from attention import BOOK_INPUTS, MISTAKES, MultiHeadAttention, build, run_mistake, scaling_lab, trace
from attention import mistake_steps as m
from attention.mistake_measures import parameter_gradients, saturation_curve


@pytest.fixture
def book_mha() -> MultiHeadAttention:
    """The chapter's last module: d_in=3, d_out=2, two heads of head_dim 1, seed 123."""
    return build(MultiHeadAttention, 123, 3, 2, 6, 0.0, 2)


@pytest.fixture
def random_mha() -> MultiHeadAttention:
    """A larger module: four heads of head_dim 16, dropout 0.5, room for 20 tokens."""
    return build(MultiHeadAttention, 7, 16, 64, 20, 0.5, 4)


@pytest.fixture
def random_x() -> torch.Tensor:
    """Two random sentences of 20 tokens, (2, 20, 16)."""
    return torch.randn(2, 20, 16, generator=torch.Generator().manual_seed(5))


@pytest.fixture(params=["book", "random"])
def setup(request, book_mha, book_batch, random_mha, random_x):
    """(module, input) for the book's 6x3 inputs and for a random 20-token input."""
    return (book_mha, book_batch) if request.param == "book" else (random_mha, random_x)


def test_right_steps_equal_the_package_module(setup):
    mha, x = setup
    right = m.forward(mha, x)
    with torch.no_grad():
        expected = mha(x)
    bounds = attention_bounds(mha, x)
    torch.testing.assert_close(right.attn_weights, trace(mha, x).attn_weights, **bounds.close("attn_weights"))
    torch.testing.assert_close(right.output, expected, **bounds.close("output"))
    assert right.output.shape == expected.shape


@pytest.mark.parametrize("name", [name for name in MISTAKES if name != "dropout_without_rescale"])
def test_each_run_shows_the_package_output_as_the_right_one(name, setup):
    mha, x = setup
    result = run_mistake(name, mha, x)
    with torch.no_grad():
        expected = mha(x)
    bounds = attention_bounds(mha, x)
    torch.testing.assert_close(result.right_output, expected, **bounds.close("output"))
    torch.testing.assert_close(result.right_weights, trace(mha, x).attn_weights[0, 0], **bounds.close("attn_weights"))


def test_the_right_dropout_step_is_what_nn_dropout_computes():
    attn_weights = torch.softmax(torch.randn(3, 7, 7, generator=torch.Generator().manual_seed(1)), dim=-1)
    torch.manual_seed(3)
    dropped = F.dropout(attn_weights, p=0.3, training=True)
    keep = (dropped != 0).float()
    assert 0 < keep.mean() < 1
    torch.testing.assert_close(m.drop(attn_weights, keep, 0.3), dropped)


def test_the_right_mask_is_the_module_buffer(random_mha):
    assert torch.equal(m.mask_buffer(random_mha.mask.shape[0]), random_mha.mask)


def test_each_mistake_changes_one_step():
    for mistake in MISTAKES.values():
        changed = [
            f.name
            for f in dataclasses.fields(m.Steps)
            if getattr(mistake.steps, f.name) is not getattr(m.RIGHT, f.name)
        ]
        assert len(changed) == 1, mistake.name
        assert mistake.right_code != mistake.wrong_code


def _code_lines(text: str) -> list[str]:
    """Each shown line without its comment, a register_buffer call reduced to the tensor it stores."""
    lines = [line.split("  #")[0].strip() for line in text.splitlines()]
    return [re.sub(r'^self\.register_buffer\("mask", (.*)\)$', r"\1", line) for line in lines]


def test_the_right_lines_are_the_package_lines():
    source = re.sub(r"\s*#[^\n]*", "", inspect.getsource(MultiHeadAttention))  # without comments
    flat = re.sub(r"\s+", " ", source).replace("( ", "(").replace(" )", ")")  # a wrapped call on one line
    for mistake in MISTAKES.values():
        for line in mistake.right_code.splitlines():
            assert line.split("  #")[0].strip() in flat, mistake.name


def test_the_wrong_lines_are_the_code_that_runs():
    for mistake in MISTAKES.values():
        changed = next(
            f.name
            for f in dataclasses.fields(m.Steps)
            if getattr(mistake.steps, f.name) is not getattr(m.RIGHT, f.name)
        )
        source = inspect.getsource(getattr(mistake.steps, changed))
        for line in _code_lines(mistake.wrong_code):
            assert line.replace("self.", "mha.") in source, mistake.name


def test_fill_zero_leaks_weight_to_the_future(setup):
    mha, x = setup
    result = run_mistake("fill_zero", mha, x)
    assert result.measure("first_token_future_weight").right == 0
    assert result.measure("first_token_future_weight").wrong > 0.05
    future = torch.triu(torch.ones_like(result.wrong_weights, dtype=torch.bool), diagonal=1)
    assert result.wrong_weights[future].mean().item() > 0
    assert result.measure("mean_future_weight").wrong > 0
    torch.testing.assert_close(result.wrong_weights.sum(dim=-1), torch.ones(x.shape[1]))
    assert result.measure("first_token_moves").right < 1e-6 < 1e-4 < result.measure("first_token_moves").wrong


def test_tril_hides_the_past_and_shows_the_future(setup):
    mha, x = setup
    result = run_mistake("tril_mask", mha, x)
    weights = result.wrong_weights
    finite = ~weights.isnan().any(dim=-1)
    num_tokens = x.shape[1]
    assert finite.tolist() == [True] * (num_tokens - 2) + [False, False]
    past = torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool))
    assert (weights[finite][past[finite]] == 0).all()
    assert (weights[finite][~past[finite]] > 0).any()
    torch.testing.assert_close(weights[finite].sum(dim=-1), torch.ones(num_tokens - 2))
    assert result.measure("nan_rows").wrong == 2 == result.nan_tokens
    assert result.measure("past_weight").wrong == 0 < result.measure("past_weight").right


def test_diagonal_0_hides_each_token_from_itself(setup):
    mha, x = setup
    result = run_mistake("diagonal_0", mha, x)
    weights = result.wrong_weights
    assert weights[0].isnan().all()
    assert (weights.diagonal()[1:] == 0).all()
    assert result.measure("nan_rows").wrong == 1 == result.nan_tokens
    assert result.measure("self_weight").wrong == 0 < result.measure("self_weight").right
    assert math.isnan(result.measure("first_token_moves").wrong)


def test_no_scaling_changes_nothing_at_head_dim_1(book_mha, book_batch):
    result = run_mistake("no_scaling", book_mha, book_batch)
    assert torch.equal(result.wrong_output, result.right_output)
    assert "changes nothing" in result.measure("max_weight_here").sentence
    assert "as the right code's does" in result.measure("max_weight_here").sentence  # not "0.414 instead of 0.414"


def test_no_scaling_saturates_the_softmax(random_mha, random_x):
    result = run_mistake("no_scaling", random_mha, random_x)
    assert result.max_output_difference > 1e-3
    here = result.measure("max_weight_here")
    assert here.wrong > here.right
    large = result.measure("max_weight_large_d_k")
    assert large.right < large.wrong and 1 - large.wrong < 1 - large.right
    assert large.wrong > 0.8
    assert result.measure("entropy_large_d_k").wrong < result.measure("entropy_large_d_k").right
    gradient = result.measure("grad_norm_large_d_k")
    assert gradient.wrong < gradient.right / 2
    assert "softmax's input" in gradient.label and "not yet what reaches W_query" in gradient.sentence
    parameters = result.measure("param_grad_large_d_k")
    assert parameters.wrong < parameters.right / 20  # the median row is one-hot: almost nothing reaches W_query
    assert result.curve.wrong_starved[-2] > 0.3  # d_k = 512: a large share of rows gets almost no gradient
    assert "multiplies by 1/√d_k, this mistake by 1." in parameters.sentence


def test_the_saturation_curve_draws_what_scaling_lab_draws():
    lab = scaling_lab()
    curve = saturation_curve(MISTAKES["no_scaling"].steps.weigh)
    assert torch.equal(curve.right_max_weight, lab.scaled_max_weight)
    assert torch.equal(curve.wrong_max_weight, lab.unscaled_max_weight)
    assert torch.equal(curve.right_entropy, lab.scaled_entropy)
    # the same forward code gives the same weights (==); the gradients differ: the curve writes
    # w · (v − Σ w·v) out, the lab asks autograd, which sums Σ w·v in its own order (not yet derived here)
    torch.testing.assert_close(curve.right_grad_norm, lab.scaled_grad_norm)
    torch.testing.assert_close(curve.wrong_grad_norm, lab.unscaled_grad_norm)


def test_dividing_by_d_k_flattens_the_weights(random_mha, random_x):
    result = run_mistake("divide_by_d_k", random_mha, random_x)
    curve = result.curve
    entropy = result.measure("entropy_large_d_k")
    assert entropy.wrong > 0.99 * curve.uniform_entropy > entropy.right
    large = result.measure("max_weight_large_d_k")
    assert abs(large.wrong - 1 / curve.num_keys) < 0.02 < large.right - large.wrong
    assert result.measure("max_weight_here").wrong < result.measure("max_weight_here").right
    softmax_input = result.measure("grad_norm_large_d_k")  # flat rows: the softmax's own gradient is not starved
    assert softmax_input.wrong > 0.8 * softmax_input.right
    parameters = result.measure("param_grad_large_d_k")  # but the way back divides by d_k, not √d_k
    assert parameters.right / parameters.wrong == pytest.approx(512**0.5, rel=0.25)
    assert "this mistake by 1/d_k" in parameters.sentence
    assert torch.equal(curve.right_max_weight, run_mistake("no_scaling", random_mha, random_x).curve.right_max_weight)


def test_view_without_transpose_puts_tokens_in_the_wrong_head(setup):
    mha, x = setup
    result = run_mistake("view_without_transpose", mha, x)
    slots = result.measure("misplaced_slots")
    assert slots.right == 0
    assert 0 < slots.wrong < mha.num_heads * x.shape[1]
    assert result.max_output_difference > 1e-3
    assert result.measure("first_token_moves").wrong > 1e-4


def test_view_without_transpose_is_harmless_with_one_head(random_x):
    one_head = build(MultiHeadAttention, 7, 16, 64, 20, 0.0, 1)
    result = run_mistake("view_without_transpose", one_head, random_x)
    assert result.measure("misplaced_slots").wrong == 0
    assert torch.equal(result.wrong_output, result.right_output)


def test_dropout_without_rescale_sums_to_1_minus_p(random_mha, random_x):
    result = run_mistake("dropout_without_rescale", random_mha, random_x, dropout_samples=1000)
    average = result.measure("mean_row_sum")
    assert "over 1000 draws" in average.label
    assert average.right == pytest.approx(1.0, abs=0.02)
    assert average.wrong == pytest.approx(1 - random_mha.dropout.p, abs=0.02)
    torch.testing.assert_close(result.wrong_weights, result.right_weights * (1 - random_mha.dropout.p))
    assert (result.wrong_weights == 0).any()
    assert result.max_output_difference > 1e-3


def test_dropout_without_rescale_changes_nothing_at_p_0(book_mha, book_batch):
    result = run_mistake("dropout_without_rescale", book_mha, book_batch)
    assert result.measure("mean_row_sum").wrong == result.measure("mean_row_sum").right == pytest.approx(1.0)
    assert torch.equal(result.wrong_output, result.right_output)


def test_mask_after_softmax_loses_weight_but_still_sees_the_future(setup):
    mha, x = setup
    result = run_mistake("mask_after_softmax", mha, x)
    row_sums = result.wrong_weights.sum(dim=-1)
    assert (row_sums[:-1] < 1 - 1e-4).all()
    assert row_sums[-1].item() == pytest.approx(1.0)
    assert result.measure("mean_row_sum").wrong < 1
    future = torch.triu(torch.ones_like(result.wrong_weights, dtype=torch.bool), diagonal=1)
    assert (result.wrong_weights[future] == 0).all()
    assert result.measure("first_token_moves").wrong > 1e-5


def test_softmax_over_the_wrong_dim_normalises_columns(setup):
    mha, x = setup
    result = run_mistake("softmax_wrong_dim", mha, x)
    num_tokens = x.shape[1]
    torch.testing.assert_close(result.wrong_weights.sum(dim=-2), torch.ones(num_tokens))
    assert (result.wrong_weights.sum(dim=-1) - 1).abs().max() > 0.1
    torch.testing.assert_close(result.right_weights.sum(dim=-1), torch.ones(num_tokens))
    assert result.measure("column_sum_error").wrong < 1e-5 < 0.1 < result.measure("row_sum_error").wrong


def test_merge_without_transpose_keeps_the_weights_and_scrambles_the_output(setup):
    mha, x = setup
    result = run_mistake("merge_without_transpose", mha, x)
    right, wrong = m.forward(mha, x), m.forward(mha, x, MISTAKES["merge_without_transpose"].steps)
    assert torch.equal(right.attn_weights, wrong.attn_weights)
    assert result.measure("weights_difference").wrong == 0
    assert result.max_output_difference > 1e-3
    assert 0 < result.measure("misplaced_slots").wrong < mha.num_heads * x.shape[1]
    assert result.measure("first_token_moves").wrong > 1e-4


def test_every_run_explains_each_number(setup):
    mha, x = setup
    for name in MISTAKES:
        result = run_mistake(name, mha, x)
        keys = [measure.key for measure in result.measures]
        assert len(keys) == len(set(keys)) >= 3, name
        assert all(measure.sentence.endswith(".") for measure in result.measures), name
        assert result.right_weights.shape == result.wrong_weights.shape == (x.shape[1], x.shape[1])
        assert result.measure("first_token_moves").right < 1e-6, name
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.nan_tokens = 0


def test_bad_requests_raise_value_errors(book_mha):
    with pytest.raises(ValueError, match="Unknown mistake"):
        run_mistake("no_such_mistake", book_mha, BOOK_INPUTS)
    with pytest.raises(ValueError, match="MultiHeadAttention"):
        run_mistake("fill_zero", torch.nn.Linear(3, 2), BOOK_INPUTS)
    with pytest.raises(ValueError, match="d_in=3"):
        run_mistake("fill_zero", book_mha, torch.ones(6, 4))
    with pytest.raises(ValueError, match="context_length"):
        run_mistake("fill_zero", book_mha, torch.ones(7, 3))
    with pytest.raises(KeyError):
        run_mistake("fill_zero", book_mha, BOOK_INPUTS).measure("nothing")


def test_each_mistake_carries_its_measure_and_only_the_scaling_ones_a_saturation_curve():
    for mistake in MISTAKES.values():
        assert mistake.measure.__module__ == "attention.mistake_measures", mistake.name
        assert mistake.saturates == (mistake.name in ("no_scaling", "divide_by_d_k")), mistake.name


@pytest.mark.parametrize("name", ["right", "no_scaling", "divide_by_d_k"])
def test_the_parameters_gradient_is_measured_by_autograd_through_the_step(name):
    """What reaches W_query and W_key is the softmax's gradient times the step's factor on the way back:
    1/√d_k for the right code, 1 without scaling, 1/d_k for ÷ d_k. Checked against autograd on the scores."""
    d_k = 64
    step = m.weigh if name == "right" else MISTAKES[name].steps.weigh
    factor = {"right": d_k**-0.5, "no_scaling": 1.0, "divide_by_d_k": 1 / d_k}[name]
    scores = torch.randn(4, 1, 8, generator=torch.Generator().manual_seed(1), requires_grad=True)  # (4, 1, 8)
    values = torch.randn(4, 1, 8, generator=torch.Generator().manual_seed(2))  # (4, 1, 8)
    keys = torch.zeros(4, 8, d_k)  # only keys.shape[-1] is read
    no_mask = torch.zeros(1, 8, dtype=torch.bool)
    (step(scores.clone(), no_mask, keys) * values).sum().backward()
    wrong = scores.grad.clone()
    softmax_input = scores.detach() * factor  # what the softmax receives; its own gradient, times the factor
    w = torch.softmax(softmax_input, dim=-1)
    expected = w * (values - (w * values).sum(dim=-1, keepdim=True)) * factor
    # softmax's backward sums Σ w·v in its own order: 8 terms' bound, plus a few roundings of each product
    terms = w * (values.abs() + (w * values).abs().sum(dim=-1, keepdim=True)) * factor
    assert within(wrong, expected, summation_error(8 + 3, terms))
    gradients = parameter_gradients(step, d_k)
    assert gradients.shape == (256,) and (gradients >= 0).all()
    assert torch.equal(gradients, parameter_gradients(step, d_k))  # seeded


@pytest.mark.parametrize("name", ["view_without_transpose", "merge_without_transpose"])
def test_a_scrambling_mistake_says_the_mask_still_works(name, setup):
    """Its first row moves because the reshape moved later tokens' numbers into it, not because the mask leaks."""
    sentence = run_mistake(name, *setup).measure("first_token_moves").sentence
    assert "The mask still works" in sentence and "later tokens reach it" not in sentence


def test_a_leaking_mistake_says_later_tokens_reach_the_first(setup):
    sentence = run_mistake("fill_zero", *setup).measure("first_token_moves").sentence
    assert "later tokens reach it" in sentence and "mask still works" not in sentence


def test_mask_after_softmax_says_which_rows_lose_weight(book_mha, book_batch):
    """Only the last row, which has no later token, still sums to 1 (checked on the weights above)."""
    assert "every row but the last" in MISTAKES["mask_after_softmax"].why


@pytest.mark.parametrize("name", list(MISTAKES))
def test_every_mistake_moves_the_random_output_far_beyond_the_rounding_bound(name, random_mha, random_x):
    """The oracle's tolerance (float32's summation bound, 0.005 here) still catches each mistake: measured
    51 times the bound for dividing by d_k, 110 or more for the others."""
    bound = attention_bounds(random_mha, random_x).output
    assert run_mistake(name, random_mha, random_x).max_output_difference > 20 * bound
