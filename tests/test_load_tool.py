"""The load benchmark's protocol helpers (benchmarks/load.py), without a server.

The benchmark speaks Streamlit's websocket protocol itself; these tests pin
the messages it sends and how it reads the replies, so that a Streamlit
upgrade that changes them fails here rather than as silently wrong figures.
"""

import importlib.util
import math
import sys
from pathlib import Path

import pytest
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

LOAD_PY = Path(__file__).parent.parent / "benchmarks" / "load.py"
_spec = importlib.util.spec_from_file_location("benchmarks_load", LOAD_PY)
load = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = load  # dataclasses look their module up there
_spec.loader.exec_module(load)
launch = sys.modules["benchmarks.launch"]  # load.py imported it


def test_a_link_opens_a_page_by_its_url_path():
    msg = BackMsg.FromString(
        load.rerun_message(query_string="input=text&text=hi", page_name="multihead", url="http://h/multihead")
    )
    assert msg.WhichOneof("type") == "rerun_script"
    assert msg.rerun_script.query_string == "input=text&text=hi"
    assert msg.rerun_script.page_name == "multihead"
    assert msg.rerun_script.page_script_hash == ""
    assert msg.rerun_script.context_info.url == "http://h/multihead"
    assert len(msg.rerun_script.widget_states.widgets) == 0


def test_an_edit_sends_only_the_changed_widgets_on_the_current_page():
    msg = BackMsg.FromString(
        load.rerun_message(
            page_script_hash="abc",
            strings={"$$ID-1-w_text": "A new sentence."},
            ints={"$$ID-2-w_seed": 7},
            cached_hashes=["h1", "h2"],
        )
    )
    state = msg.rerun_script
    assert state.page_script_hash == "abc"
    assert state.page_name == ""
    widgets = {w.id: w for w in state.widget_states.widgets}
    assert widgets["$$ID-1-w_text"].string_value == "A new sentence."
    assert widgets["$$ID-2-w_seed"].int_value == 7
    assert list(state.cached_message_hashes) == ["h1", "h2"]


def _finished(status) -> bytes:
    msg = ForwardMsg()
    msg.script_finished = status
    return msg.SerializeToString()


def test_a_run_ends_at_script_finished_but_not_at_a_rerun_it_asked_for():
    early = load.read_reply(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN))
    done = load.read_reply(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY))
    broken = load.read_reply(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR))
    assert (early.final, done.final, broken.final) == (False, True, True)
    assert done.error is None and broken.error


def test_the_navigation_message_names_the_page_shown():
    msg = ForwardMsg()
    msg.navigation.page_script_hash = "p2"
    for script_hash, url in (("p1", ""), ("p2", "multihead")):
        page = msg.navigation.app_pages.add()
        page.page_script_hash, page.url_pathname = script_hash, url
    reply = load.read_reply(msg.SerializeToString())
    assert (reply.page_script_hash, reply.page_url) == ("p2", "multihead")


def test_keyed_widgets_are_found_by_key_with_the_value_the_server_set():
    msg = ForwardMsg()
    text_input = msg.delta.new_element.text_input
    text_input.id = "$$ID-c240c7b6685109d3f6887d5a95fb5bab-w_text"
    text_input.value = "Your journey starts with one step"
    reply = load.read_reply(msg.SerializeToString())
    assert reply.widget == ("w_text", text_input.id, "Your journey starts with one step")


@pytest.mark.parametrize("kind", ["exception", "error box"])
def test_exceptions_and_error_boxes_are_errors_and_notices_are_not(kind):
    msg = ForwardMsg()
    if kind == "exception":
        msg.delta.new_element.exception.type = "ValueError"
        msg.delta.new_element.exception.message = "boom"
    else:
        msg.delta.new_element.alert.format = Alert.ERROR
        msg.delta.new_element.alert.body = "boom"
    assert "boom" in load.read_reply(msg.SerializeToString()).error
    notice = ForwardMsg()
    notice.delta.new_element.alert.format = Alert.INFO
    notice.delta.new_element.alert.body = "d_in=99999999 is outside 1–1024; using 1024."
    reply = load.read_reply(notice.SerializeToString())
    assert reply.error is None and reply.notice.startswith("d_in=")


def test_statistics():
    assert load.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert load.percentile([1.0, 2.0], 95) == pytest.approx(1.95)
    assert math.isnan(load.percentile([], 50))
    assert load.slope_mib_per_min([(0, 100.0), (30, 101.0), (60, 102.0)]) == pytest.approx(2.0)
    assert load.slope_mib_per_min([(0, 100.0), (30, 100.0), (60, 100.0)]) == 0.0


def test_sentences_are_ten_to_twenty_words():
    rng = load.random.Random(0)
    for _ in range(50):
        assert 10 <= len(load.sentence(rng).split()) <= 20


def test_server_modes_parse_into_serve_options():
    assert load.parse_mode("default") == {"post_script_gc": True, "app_freeze": True, "run_slots": None}
    mode = load.parse_mode("nogc+nofreeze+slots2")
    assert (mode["post_script_gc"], mode["app_freeze"], mode["run_slots"]) == (False, False, 2)
    for bad in ("fast", "slots", "slots1+slots2", "freeze", "freeze-warm"):
        with pytest.raises(SystemExit):
            load.parse_mode(bad)


def test_a_mode_becomes_the_servers_command_line(tmp_path):
    command = load.Server("nogc+nofreeze+slots1", str(tmp_path / "s.log")).command()
    serve, streamlit = command[: command.index("--")], command[command.index("--") + 1 :]

    assert serve[1].endswith("benchmarks/serve.py")
    assert serve[2:] == ["--stats", str(tmp_path / "s.log.gc.json"), "--no-app-freeze", "--run-slots", "1"]
    assert streamlit[:2] == ["run", "streamlit_app.py"]
    assert streamlit[streamlit.index("--runner.postScriptGC") + 1] == "false"
    default = load.Server("default", str(tmp_path / "d.log")).command()
    assert default[default.index("--runner.postScriptGC") + 1] == "true"
    assert "--no-app-freeze" not in default and "--run-slots" not in default


def test_a_plain_server_is_streamlit_run_on_its_own_free_port(tmp_path):
    first, second = (launch.AppServer(log=tmp_path / f"{i}.log") for i in range(2))

    assert first.command()[1:4] == ["-m", "streamlit", "run"]
    assert first.command()[first.command().index("--server.port") + 1] == str(first.port)
    assert first.base == f"http://127.0.0.1:{first.port}"
    assert first.port != second.port


def test_a_plotly_chart_is_counted_and_nothing_else_is():
    chart = ForwardMsg()
    chart.delta.new_element.plotly_chart.spec = "{}"
    text = ForwardMsg()
    text.delta.new_element.markdown.body = "Step 1 of 3"

    assert load.read_reply(chart.SerializeToString()).chart
    assert not load.read_reply(text.SerializeToString()).chart
