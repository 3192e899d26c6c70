"""The per-action benchmark's helpers (benchmarks.actions), without a server: its options, the
stepper walk, and the rerun requests it sends with every widget's state, as a browser does."""

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks import actions
from benchmarks.protocol import BrowserStudent


def test_options_default_to_two_pages_three_sizes_and_ten_repeats():
    args = actions.parse_args(["costs"])
    assert (args.command, args.pages, args.sizes, args.repeats) == (
        "costs",
        ["causal_mask", "multihead"],
        [6, 64, 1024],
        10,
    )
    args = actions.parse_args(["costs", "--pages", "qkv, tokens", "--sizes", "6,256", "--repeats", "3"])
    assert (args.pages, args.sizes, args.repeats) == (["qkv", "tokens"], [6, 256], 3)
    assert actions.parse_args(["paint", "--repeats", "3"]).repeats == 3


def test_the_cell_selection_and_the_grid_have_defaults_of_their_own():
    select, grid = actions.parse_args(["select"]), actions.parse_args(["grid", "--checkpoint", "m.safetensors"])
    assert (select.sizes, select.repeats, select.seed) == ([6, 30, 64], 15, 0)
    assert (grid.repeats, grid.checkpoint.name) == (7, "m.safetensors")
    assert actions.parse_args(["select", "--repeats", "2", "--seed", "3"]).repeats == 2


@pytest.mark.parametrize("argv", [["costs", "--sizes", "six"], ["costs", "--pages", ","], ["cost"], []])
def test_bad_options_are_refused(argv):
    with pytest.raises(SystemExit):
        actions.parse_args(argv)


def test_the_stepper_walk_goes_to_the_last_step_and_back_until_each_button_has_its_presses():
    moves = actions.walk(3, 3)
    assert moves == [1, 1, -1, -1, 1, 1, -1]
    position = 1
    for move in actions.walk(6, 10):
        position += move
        assert 1 <= position <= 6
    assert actions.walk(1, 5) == []


def _student_with_widgets():
    student = BrowserStudent("http://127.0.0.1:1")
    radio = ForwardMsg()
    radio.delta.new_element.radio.id = "$$ID-a-w_source"
    radio.delta.new_element.radio.options.extend(["Book example", "Type your own"])
    radio.delta.new_element.radio.default = 0
    text = ForwardMsg()
    text.delta.new_element.text_input.id = "$$ID-b-w_text"
    text.delta.new_element.text_input.default = "Your journey"
    number = ForwardMsg()
    number.delta.new_element.number_input.id = "$$ID-c-w_seed"
    number.delta.new_element.number_input.default = 123
    group = ForwardMsg()
    group.delta.new_element.button_group.id = "$$ID-d-w_image_format"
    group.delta.new_element.button_group.options.add().content = "SVG"
    group.delta.new_element.button_group.options.add().content = "PNG"
    group.delta.new_element.button_group.default.append(1)
    button = ForwardMsg()
    button.delta.new_element.button.id = "$$ID-e-next:multihead"
    for msg in (radio, text, number, group, button):
        student.observe(msg.SerializeToString())
    student.widget_ids["w_text"] = "$$ID-b-w_text"
    student.page_script_hash, student.page = "hash", "multihead"
    return student


def test_a_click_sends_every_widget_state_and_the_buttons_trigger():
    student = _student_with_widgets()
    msg = BackMsg.FromString(student.message(click="next:multihead")).rerun_script
    widgets = {w.id: w for w in msg.widget_states.widgets}
    assert widgets["$$ID-a-w_source"].string_value == "Book example"  # a radio sends its option's string
    assert widgets["$$ID-b-w_text"].string_value == "Your journey"
    assert widgets["$$ID-c-w_seed"].int_value == 123  # an integer number input, as a browser sends it
    assert list(widgets["$$ID-d-w_image_format"].string_array_value.data) == ["PNG"]
    assert widgets["$$ID-e-next:multihead"].trigger_value
    assert msg.page_script_hash == "hash"


def test_a_new_sentence_and_a_page_switch_keep_the_other_widgets():
    student = _student_with_widgets()
    msg = BackMsg.FromString(student.message(text="A new sentence.")).rerun_script
    widgets = {w.id: w for w in msg.widget_states.widgets}
    assert widgets["$$ID-b-w_text"].string_value == "A new sentence."
    assert not any(w.trigger_value for w in widgets.values())
    switch = BackMsg.FromString(student.message(page="causal_mask")).rerun_script
    assert (switch.page_name, switch.page_script_hash) == ("causal_mask", "")
    assert {w.id: w.string_value for w in switch.widget_states.widgets}["$$ID-b-w_text"] == "A new sentence."


def test_a_value_the_server_sets_replaces_the_one_held():
    student = _student_with_widgets()
    changed = ForwardMsg()
    changed.delta.new_element.number_input.id = "$$ID-c-w_seed"
    changed.delta.new_element.number_input.default = 123
    changed.delta.new_element.number_input.value = 7
    changed.delta.new_element.number_input.set_value = True
    student.observe(changed.SerializeToString())
    assert student.states["$$ID-c-w_seed"] == ("int_value", 7)


def test_the_bare_page_a_cold_start_is_compared_with_draws_a_title_and_one_heatmap():
    from apptest_support import ROOT
    from streamlit.testing.v1 import AppTest

    assert actions.parse_args(["paint", "--against", "benchmarks/bare_chart.py"]).against == "benchmarks/bare_chart.py"
    at = AppTest.from_file(str(ROOT / "benchmarks" / "bare_chart.py"), default_timeout=30).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["A bare page"]
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and '"type":"heatmap"' in charts[0].proto.spec.replace(" ", "")
