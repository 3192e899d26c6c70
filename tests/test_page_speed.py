"""The Speed page through AppTest: nothing is measured until the button is pressed; then each step draws
the measurement, one series per implementation, with the package's numbers."""

import numpy as np
import torch
from apptest_support import app, decode, figure_specs, markdown, next_step

import attention

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
    assert table["× MultiHeadAttention"][0] == 1.0
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
