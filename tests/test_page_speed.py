"""The Speed page through AppTest: nothing is measured until the button is pressed; then each step draws
the measurement, one series per implementation, with the package's numbers."""

import os
import time

import numpy as np
import torch
from apptest_support import app, decode, figure_specs, markdown, next_step

import attention
from attention import Growth
from explorer.page_text import speed as words
from explorer.views import beyond

SMALLEST = {"speed_T": [16, 32], "speed_d": 32, "speed_repeats": 1}  # num_heads 4, b 1: under a second


def series(at) -> dict[str, tuple[list[float], np.ndarray]]:
    (spec,) = figure_specs(at)
    return {trace["name"]: (list(decode(trace["x"])), decode(trace["y"])) for trace in spec["data"]}


def measured(at):
    """The page at the smallest sizes, after pressing Run."""
    at.multiselect(key="speed_T").set_value(SMALLEST["speed_T"])
    at.selectbox(key="speed_d").set_value(SMALLEST["speed_d"])
    at.number_input(key="speed_repeats").set_value(SMALLEST["speed_repeats"]).run()
    return at.button(key="speed_run").click().run()


def test_loads_and_steps_without_measuring():
    at = app("pages/speed.py")

    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["implementation"]) == list(attention.IMPLEMENTATIONS)
    assert "speed:result" not in at.session_state
    if not torch.cuda.is_available():
        assert any("No GPU on this server" in c.value for c in at.caption)
    for _ in range(3):
        next_step(at)
        assert not at.exception
        assert not figure_specs(at)
        assert "Press **Run the comparison**" in at.info[0].value
    assert "speed:result" not in at.session_state
    assert at.button(key="next:speed").disabled


def test_run_then_every_step_draws_the_measurement():
    at = measured(app("pages/speed.py"))
    data = at.session_state["speed:result"]

    assert not at.exception
    worst = max(data.max_abs_difference.values())
    assert worst < 1e-5
    assert f"within {worst:.1e}" in markdown(at)

    next_step(at)  # time against T: one series per implementation, the cached numbers
    drawn = series(at)
    assert list(drawn) == list(attention.IMPLEMENTATIONS)
    for name, (x, y) in drawn.items():
        assert x == [16, 32]
        assert (y > 0).all()
        np.testing.assert_allclose(y, data.time_ms[name])
    fastest = min(data.time_ms, key=lambda n: data.time_ms[n][-1])
    assert f"`{fastest}` is fastest" in markdown(at)
    assert "depends on the backend PyTorch picks" in markdown(at) and "still computes every" not in markdown(at)

    next_step(at)  # memory against T: the package's (deterministic) allocations and the computed tensor size
    drawn = series(at)
    torch.set_num_threads(data.threads)  # as the page measured; some allocations depend on it
    try:
        expected = attention.measure(list(attention.IMPLEMENTATIONS), [16, 32], d_model=32, num_heads=4, repeats=1)
    finally:
        torch.set_num_threads(1)
    assert list(drawn) == [*attention.IMPLEMENTATIONS, "one (b, num_heads, T, T) tensor, computed"]
    for name in attention.IMPLEMENTATIONS:
        np.testing.assert_allclose(drawn[name][1], expected.peak_memory_mib[name])
    one = [attention.expected_attention_bytes(1, 4, t) / 2**20 for t in (16, 32)]
    np.testing.assert_allclose(drawn["one (b, num_heads, T, T) tensor, computed"][1], one)

    next_step(at)  # why: at T = 32, d_model = 32, 4 heads one T × T tensor (16 KiB) is too small to compare peaks with
    trace_kib = data.peak_memory_mib["trace"][-1] * 1024
    assert f"`trace` peaks at {trace_kib:.0f} KiB, mostly (b, T, d_model) tensors at these sizes" in markdown(at)
    assert "× one `attn_weights` tensor" not in markdown(at)
    assert "one T × T tensor (16 KiB) is too small beside their (b, T, d_model) tensors to tell" in markdown(at)
    assert "here stored the scores" not in markdown(at) and "no scores stored" not in markdown(at)
    table = at.dataframe[0].value
    assert list(table["implementation"]) == list(attention.IMPLEMENTATIONS)
    assert table["× MultiHeadAttention"][0] == "1"
    assert not at.exception


def test_pressing_run_again_replays_the_cached_measurement():
    first = measured(app("pages/speed.py"))
    again = measured(app("pages/speed.py"))  # another session, the same sizes

    assert not again.exception
    assert again.session_state["speed:result"] is first.session_state["speed:result"]  # measured once, shared
    again.button(key="speed_run").click().run()  # and the same session once more
    assert not again.exception
    assert [bar.proto.value for bar in again.get("progress")] == [25]  # the stepper's; the measurement's is gone


def test_num_heads_offers_only_divisors_of_d_model():
    at = app("pages/speed.py")
    at.selectbox(key="speed_d").set_value(768).run()

    assert at.selectbox(key="speed_h").options == [str(h) for h in (1, 2, 3, 4, 6, 8, 12)]
    at.selectbox(key="speed_d").set_value(64).run()
    assert at.selectbox(key="speed_h").options == [str(h) for h in (1, 2, 4, 8)]


def test_run_is_disabled_without_a_sequence_length():
    at = app("pages/speed.py")
    at.multiselect(key="speed_T").set_value([]).run()

    assert at.button(key="speed_run").disabled


def test_presenter_mode_shows_both_tables_as_html_tables():
    """A dataframe draws on a canvas at 14 px; presenter mode promises 18 px, so both tables are HTML tables there."""
    at = measured(app("pages/speed.py", query_params={"present": "1"}))
    assert not at.exception
    assert not at.dataframe and len(at.table) == 1  # step 1: the seven implementations
    for _ in range(3):
        next_step(at)
    assert not at.exception
    assert not at.dataframe and len(at.table) == 1  # step 4: the measured ratios
    assert "× MultiHeadAttention" in at.table[0].value.columns


def test_memory_growth_gives_its_range_only_when_the_slopes_differ():
    assert words.memory_growth_words(None) == ""
    even = words.memory_growth_words(Growth(2.0, 1.98, 2.02, (128, 256, 512)))
    assert even == " From T = 128 to 512 its peak memory grew as T to the power 2.0."
    uneven = words.memory_growth_words(Growth(1.8, 1.6, 2.0, (128, 256, 512)))
    assert uneven.endswith("grew as T to the power 1.8 (1.6 to 2.0 between neighboring T).")


def test_every_sentence_is_at_most_35_words():
    texts = [
        words.growth_words({"nn.MultiheadAttention without attention weights": None, "fast_multihead": None}, 3, 64),
        words.growth_words({"MultiHeadAttention": Growth(1.5, 0.9, 2.4, (128, 256))}, 3, 64),
        words.load_words(23.9, 1),
        words.kept_words((0.31, 0.31), 0.0625, 64, 256, 4),
        words.kept_words((20.0, 1.3), 16.0, 1024, 64, 4),
        words.memory_growth_words(Growth(1.8, 1.6, 2.0, (128, 256, 512))),
    ]
    for text in texts:
        for sentence in text.replace("e.g.", "eg").split(". "):
            assert len(sentence.split()) <= 35, sentence


def test_a_ratio_never_rounds_to_zero():
    assert [words.times(r) for r in (0.034, 0.0004, 0.1, 2.46, 12.4)] == ["0.034×", "0.0004×", "0.1×", "2.5×", "12×"]
    assert [words.number(v) for v in (1234.5, 44.4, 0.6234, 0.00123)] == ["1,234", "44.4", "0.623", "0.00123"]


def test_growth_is_stated_with_its_spread_only_when_it_is_clear():
    clear = Growth(1.84, 1.78, 1.91, (128, 256, 512))
    assert words.growth_words({"MultiHeadAttention": clear}, 3, 64) == (
        "From T = 128 to 512, `MultiHeadAttention`'s time grew as T to the power 1.8 (1.8 to 1.9 over resampled "
        "rounds)."
    )
    unclear = words.growth_words({"MultiHeadAttention": Growth(1.5, 0.9, 2.4, (128, 256))}, 3, 64)
    assert "disagree too much to tell" in unclear and "T to the power 0.9 to 2.4" in unclear
    assert "grew as" not in unclear
    untold = words.growth_words({"MultiHeadAttention": None, "fast_multihead": None}, 3, 64)
    assert untold.startswith("Too few sizes to tell how the time of `MultiHeadAttention` and `fast_multihead` grows")
    assert "T ≥ 128 (twice d_model)" in untold and untold.count("to tell") == 1
    assert "One timing round per T cannot tell" in words.growth_words({"fast_multihead": None}, 1, 64)
    mixed = words.growth_words({"MultiHeadAttention": clear, "fast_multihead": None}, 3, 64)
    assert "`MultiHeadAttention`'s time grew as" in mixed and "how the time of `fast_multihead` grows" in mixed


def test_a_busy_machine_is_said_to_scatter_the_times():
    assert "load average was 11.2" in words.load_words(11.2, 1)
    assert words.load_words(0.4, 2) == ""
    assert words.load_words(float("nan"), 1) == ""


def test_peaks_are_compared_with_one_t_by_t_tensor_only_where_it_outweighs_the_linear_tensors():
    # issue 55: T = 64, d_model = 256, 4 heads: 64 KiB per T × T tensor against (b, T, d_model) tensors of 64 KiB each
    small = words.kept_words((0.31, 0.31), 0.0625, 64, 256, 4)
    assert "too small beside their (b, T, d_model) tensors to tell" in small and "here stored" not in small
    assert "× one" not in words.trace_words(1.25, 0.0625, 64, 256, 4)
    # T = 1024, d_model = 64, 4 heads: one T × T tensor is 16 MiB, the (b, T, d_model) ones 256 KiB each
    assert "no scores stored" in words.kept_words((1.1, 1.3), 16.0, 1024, 64, 4)
    assert "their backend here stored the scores" in words.kept_words((20.0, 1.3), 16.0, 1024, 64, 4)
    assert words.trace_words(33.0, 16.0, 1024, 64, 4) == "`trace` peaks at 33.0 MiB, 2.1× one `attn_weights` tensor"


def test_a_measurement_uses_the_cores_other_work_leaves_idle():
    assert beyond.measuring_threads(2, 0.3) == 2
    assert beyond.measuring_threads(2, 11.0) == 1
    assert beyond.measuring_threads(16, 4.2) == 12
    assert beyond.measuring_threads(1, 0.0) == 1


def test_the_plan_says_what_it_chose_and_what_the_next_size_would_cost():
    plan = beyond.SpeedPlan((16, 32, 64, 128, 256, 512), 5.2, 41.0, 1024, 14.6, threads=1, cores=2, load=11.2)
    text = words.plan_words(plan)

    assert "T (the book's num_tokens) from 16 to 512, which should take about 5 s" in text
    assert "the book's d_in = d_out = d_model" in text  # d_model, the sizes' name, is defined where it appears
    assert "took 41 ms in all, on 1 of 2 cores (load average 11.2)" in text
    assert text.endswith("With T = 1024 it would take about 15 s.")
    assert all(len(sentence.split()) <= 35 for sentence in text.split(". "))


def test_the_default_run_lists_only_the_sizes_it_then_measures():
    beyond.measured.clear()
    at = app("pages/speed.py")
    listed = at.multiselect(key="speed_T").value
    assert f"T = {', '.join(map(str, listed))}" in at.get("popover")[0].proto.popover.label  # what the label lists

    started = time.perf_counter()
    at.button(key="speed_run").click().run(timeout=60)
    seconds = time.perf_counter() - started
    data = at.session_state["speed:result"]
    print(f"default run: T = {listed}, {seconds:.1f} s, load average {os.getloadavg()[0]:.1f}, {data.device}")

    assert not at.exception
    assert list(data.num_tokens) == listed
    assert data.skipped_tokens == ()
    assert not timing_note(at)  # no "did not fit" note


def timing_note(at) -> list[str]:
    """The captions that say a size did not fit or ran fewer rounds."""
    return [c.value for c in at.caption if "did not fit" in c.value or "fewer timing rounds" in c.value]
