"""Issue 35's sentences where the pages render them (AppTest): the model that made a weight, the code note, the
scaling lab's condition, the sink as an explanation, and counting from 1 in legends and tick labels."""

import pytest
from apptest_support import app, captions, figure_specs, markdown
from test_page_cells import picker

from explorer.widgets import steps


def step(page: str, number: int, **query):
    """``page`` opened on step ``number`` (counted from 1) by a link, as a learner would."""
    at = app(f"pages/{page}.py", query_params={"step": str(number), **query}, timeout=60)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_generate_names_the_small_gpt_in_its_intro_and_its_cell_panel():
    at = step("generate", "prompt-and-settings")
    assert "**The small GPT trained on The Verdict** (4 layers" in markdown(at)
    at = step("generate", "token-by-token")
    picker(at, "row").select_index(0).run()
    picker(at, "col").select_index(1).run()
    assert not at.exception
    words = markdown(at)
    assert "The small GPT trained on The Verdict made it as the softmax" in words
    assert "GPT-2 made it" not in words


def test_generate_says_the_cache_keeps_keys_and_values_not_queries():
    words = markdown(step("generate", "kv-cache"))
    assert "appends only the new token's key and value to the cache" in words
    assert "query, key and value." not in words


def test_the_causal_attention_code_panel_names_how_steps_differs_from_the_books_forward():
    at = app("pages/batches.py", query_params={"step": "item-weights"}, timeout=60)
    at.session_state[steps.code_panel_key()] = True
    at.run()
    note = next(c.value for c in at.caption if c.value.startswith("`attention.causal.CausalAttention.steps`"))
    assert "line for line" not in note
    for said in ("`check_batch`", "`attn_weights = self.dropout(attn_weights)`", "`drop_with_mask`"):
        assert said in note
    assert "`dropped_weights @ values`" in note


def test_the_scaling_lab_says_its_entries_have_mean_0_and_variance_1():
    words = markdown(step("qkv", "saturation"))
    assert "mean 0 and variance 1" in words and "`torch.rand` weight matrices" in words
    assert "(nats)" not in words


def test_the_sink_note_is_a_common_explanation_with_trained_weights():
    at = step("multihead", "what-heads-look-at", weights="trained")
    note = captions(at)
    assert "Why the first token? A common explanation:" in note
    assert "parks its weight there" not in note
    ratios = [float(r) for r in at.dataframe[0].value["first token's |value| ÷ others'"]]  # measured, per head
    assert len(ratios) == 4 and f"value vector is {min(ratios):.2f} to {max(ratios):.2f} times the mean" in note


@pytest.mark.parametrize(("page", "number"), [("simplified", "context-vector"), ("dropout", 1)])
def test_legends_and_tick_labels_count_from_1(page, number):
    (spec,) = figure_specs(step(page, number))
    if page == "simplified":  # the stacked context vector's legend: "1: Your", not "0: Your"
        names = [t["name"] for t in spec["data"] if t["type"] == "bar"]
        assert names[0].startswith("1: ") and names[0].endswith("Your")
    else:  # the book's Dropout(0.5) on torch.ones(6, 6): rows and columns 1 to 6
        assert list(spec["layout"]["yaxis"]["ticktext"]) == [str(k) for k in range(1, 7)]


def test_why_attention_names_the_page_it_points_to():
    words = markdown(step("why_attention", "to-self-attention"))
    assert "as on the Simplified attention page (section 3.3)" in words and "next page" not in words
