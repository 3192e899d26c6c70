"""The load benchmark's protocol client, meter and report (benchmarks.load and what it uses), without a server.

The benchmark speaks Streamlit's websocket protocol itself; these tests pin
the messages it sends and how it reads the replies, so that a Streamlit
upgrade that changes them fails here rather than as silently wrong figures.
"""

import asyncio
import concurrent.futures
import math
import os
import random
import time

import pytest
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks import launch, load, meter, protocol, serve


def test_a_link_opens_a_page_by_its_url_path():
    msg = BackMsg.FromString(
        protocol.rerun_message(query_string="input=text&text=hi", page_name="multihead", url="http://h/multihead")
    )
    assert msg.WhichOneof("type") == "rerun_script"
    assert msg.rerun_script.query_string == "input=text&text=hi"
    assert msg.rerun_script.page_name == "multihead"
    assert msg.rerun_script.page_script_hash == ""
    assert msg.rerun_script.context_info.url == "http://h/multihead"
    assert len(msg.rerun_script.widget_states.widgets) == 0


def test_an_edit_sends_only_the_changed_widgets_on_the_current_page():
    msg = BackMsg.FromString(
        protocol.rerun_message(
            page_script_hash="abc",
            states={"$$ID-1-w_text": ("string_value", "A new sentence."), "$$ID-2-w_seed": ("int_value", 7)},
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
    early = protocol.read_reply(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN))
    done = protocol.read_reply(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY))
    broken = protocol.read_reply(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR))
    assert (early.final, done.final, broken.final) == (False, True, True)
    assert done.error is None and broken.error


def test_the_navigation_message_names_the_page_shown():
    msg = ForwardMsg()
    msg.navigation.page_script_hash = "p2"
    for script_hash, url in (("p1", ""), ("p2", "multihead")):
        page = msg.navigation.app_pages.add()
        page.page_script_hash, page.url_pathname = script_hash, url
    reply = protocol.read_reply(msg.SerializeToString())
    assert (reply.page_script_hash, reply.page_url) == ("p2", "multihead")


def test_keyed_widgets_are_found_by_key_with_the_value_the_server_set():
    msg = ForwardMsg()
    text_input = msg.delta.new_element.text_input
    text_input.id = "$$ID-c240c7b6685109d3f6887d5a95fb5bab-w_text"
    text_input.value = "Your journey starts with one step"
    reply = protocol.read_reply(msg.SerializeToString())
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
    assert "boom" in protocol.read_reply(msg.SerializeToString()).error
    notice = ForwardMsg()
    notice.delta.new_element.alert.format = Alert.INFO
    notice.delta.new_element.alert.body = "d_in=99999999 is outside 1–1024; using 1024."
    reply = protocol.read_reply(notice.SerializeToString())
    assert reply.error is None and reply.notice.startswith("d_in=")


def test_statistics():
    assert meter.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert meter.percentile([1.0, 2.0], 95) == pytest.approx(1.95)
    assert math.isnan(meter.percentile([], 50))
    assert meter.slope_mib_per_min([(0, 100.0), (30, 101.0), (60, 102.0)]) == pytest.approx(2.0)
    assert meter.slope_mib_per_min([(0, 100.0), (30, 100.0), (60, 100.0)]) == 0.0


def test_sentences_are_ten_to_twenty_words():
    rng = random.Random(0)
    for _ in range(50):
        assert 10 <= len(protocol.sentence(rng).split()) <= 20


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

    assert protocol.read_reply(chart.SerializeToString()).chart
    assert not protocol.read_reply(text.SerializeToString()).chart


# --------------------------------------------------------------------------- lessons: browser-like students


def test_a_class_mixes_steps_switches_and_sentences_60_20_20_and_typing_is_only_sentences():
    rng = random.Random(0)
    draws = [load.pick("class", rng) for _ in range(20_000)]
    shares = {kind: draws.count(kind) / len(draws) for kind in ("step", "switch", "sentence")}
    assert shares == pytest.approx({"step": 0.6, "switch": 0.2, "sentence": 0.2}, abs=0.015)
    assert {load.pick("typing", rng) for _ in range(1000)} == {"sentence"}


def test_the_class_pool_and_typed_sentences_are_6_to_40_gpt2_tokens_and_typed_ones_are_new():
    from attention.tokens import load_bpe

    encoding = load_bpe()
    assert len(set(load.CLASS_SENTENCES)) == len(load.CLASS_SENTENCES) == 10
    lengths = [len(encoding.encode(text)) for text in load.CLASS_SENTENCES]
    assert min(lengths) == 6 and max(lengths) <= 40
    rng = random.Random(1)
    typed = [load.sentence(rng, *load.TYPED_WORDS) for _ in range(500)]
    assert len(set(typed)) == len(typed)
    typed_lengths = [len(encoding.encode(text)) for text in typed]
    assert min(typed_lengths) >= 6 and max(typed_lengths) <= 40


def test_a_class_moves_between_chapter_pages_only():
    app_pages = [("", "Why attention"), ("tokens", "Tokens"), ("multihead", "Multi-head"), ("mistakes", "Break it")]
    assert load.chapter_pages([*app_pages, ("speed", "Speed")]) == ["", "tokens", "multihead"]


def _buttons(next_disabled=False, prev_disabled=False):
    return {
        "prev:qkv": ("$$ID-1-prev:qkv", "frag", prev_disabled),
        "next:qkv": ("$$ID-2-next:qkv", "frag", next_disabled),
        "clicker_next_qkv": ("$$ID-3-clicker_next_qkv", "frag", False),
    }


def test_a_student_walks_forward_turns_at_the_last_step_and_again_at_the_first():
    assert load.stepper_click(_buttons(), 1) == ("next", "next:qkv", 1)
    assert load.stepper_click(_buttons(next_disabled=True), 1) == ("previous", "prev:qkv", -1)
    assert load.stepper_click(_buttons(), -1) == ("previous", "prev:qkv", -1)
    assert load.stepper_click(_buttons(prev_disabled=True), -1) == ("next", "next:qkv", 1)
    assert load.stepper_click({"clicker_next_qkv": ("x", "", False)}, 1) is None


def test_a_class_bursts_every_s_seconds_once_arrived_and_not_after_the_lesson_or_when_off():
    assert load.burst_times(spread=5, duration=60, every=15) == [20, 35, 50]
    assert load.burst_times(spread=0, duration=20, every=6) == [6, 12, 18]
    assert load.burst_times(spread=5, duration=20, every=15) == [], "a burst at the very end is no burst"
    assert load.burst_times(spread=5, duration=60, every=0) == []
    assert load.burst_times(spread=30, duration=20, every=5) == []


class _SlowStudent(load.LessonStudent):
    """A student on step 2 of 7 whose runs take 20 ms each, counting how many are in flight at once."""

    def __init__(self):
        super().__init__("http://127.0.0.1:1", None, random.Random(0))
        self.present, self.step, self.page = True, (2, 7), "qkv"
        self.buttons = _buttons()
        self.widget_ids = {key: widget_id for key, (widget_id, _, _) in self.buttons.items()}
        self.in_flight, self.most_in_flight = 0, 0

    async def send(self, kind, message, expect_text, exact=True):
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        sent = time.perf_counter()
        await asyncio.sleep(0.02)
        self.step, self.in_flight = (self.step[0] + 1, 7), self.in_flight - 1
        return protocol.Run(kind, sent, latency=time.perf_counter() - sent, ok=True)


def _run_alone(coroutine):
    """Run a coroutine on its own loop in its own thread: a browser test's Playwright (sync API) keeps a loop
    running in this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_a_burst_press_waits_for_the_students_action_in_flight_and_is_a_burst_run():
    student = _SlowStudent()

    async def both():
        own = asyncio.create_task(student.act("step", ["qkv"], typing=False))
        await asyncio.sleep(0.005)  # the student's own Next is in flight when the class presses
        return await asyncio.gather(own, student.press(["qkv"]))

    own, pressed = _run_alone(both())
    assert student.most_in_flight == 1, "one websocket: one action at a time"
    assert (own.kind, own.ok, own.where) == ("next", True, "qkv 3/7")
    assert (pressed.kind, pressed.ok, pressed.where) == ("burst", True, "qkv 4/7"), "not stale: after the own Next"
    assert pressed.sent >= own.sent + own.latency


def test_a_burst_press_is_skipped_by_a_student_not_in_the_lesson_or_without_a_stepper():
    gone, elsewhere, at_the_end = _SlowStudent(), _SlowStudent(), _SlowStudent()
    gone.present, elsewhere.buttons = False, {}
    at_the_end.step, at_the_end.buttons = (7, 7), _buttons(next_disabled=True)
    assert _run_alone(gone.press(["qkv"])) is None and _run_alone(elsewhere.press(["qkv"])) is None
    turned = _run_alone(at_the_end.press(["qkv"]))
    assert turned.kind == "burst" and turned.error == "stale: the stepper shows step (8, 7), not (6, 7)"
    assert at_the_end.direction == -1, "at the last step the class presses Previous"


def test_each_burst_is_summarised_by_its_slowest_student_and_its_presses_are_actions():
    first = [_run("burst", 120.05, 0.1), _run("burst", 120.02, 0.3), _run("burst", 120.0, 0.2)]
    second = [_run("burst", 135.01, 0.4), _run("burst", 135.09, 0.1, error="connection closed: gone")]
    bursts = load.summarize_bursts([(135.0, second), (120.0, first)], start=100.0)
    assert [b["at_s"] for b in bursts] == [20.0, 35.0], "in time order, from the start"
    assert [b["students"] for b in bursts] == [3, 2]
    assert (bursts[0]["p50_s"], bursts[0]["max_s"]) == (pytest.approx(0.2), 0.3)
    assert bursts[0]["all_done_s"] == pytest.approx(0.32), "from the teacher's now to the last page"
    assert (bursts[1]["max_s"], bursts[1]["errors"]) == (0.4, 1)
    lesson = load.summarize_lesson([_run("open", 100.0, 2.0), _run("next", 103.0, 0.1), *first], start=100.0, end=160.0)
    assert list(lesson["by_kind"]) == ["open", "next", "burst"] and lesson["by_kind"]["burst"]["p95_s"] > 0.2
    assert lesson["actions"]["runs"] == 4, "a burst's presses are actions"
    assert "at 20 s, 3 students: p50 200 ms, p95 290 ms, max 300 ms, all done 320 ms" in load.burst_lines(bursts)


def test_a_burst_is_seconds_and_not_for_a_room():
    for argv in (["room", "--burst", "5"], ["class", "--burst", "-1"]):
        with pytest.raises(SystemExit):
            load.main(argv)


def _element_msg(fill, fragment_id="") -> bytes:
    msg = ForwardMsg()
    fill(msg.delta.new_element)
    msg.delta.fragment_id = fragment_id
    return msg.SerializeToString()


def _browser():
    student = protocol.BrowserStudent("http://127.0.0.1:1")
    student.page_script_hash, student.page = "hash-qkv", "qkv"

    def text(e):
        e.text_input.id, e.text_input.default = "$$ID-b-w_text", "Your journey"

    def radio(e):
        e.radio.id = "$$ID-a-w_source"
        e.radio.options.extend(["Book example", "Type your own"])
        e.radio.default = 1

    def next_button(e):
        e.button.id = "$$ID-e-next:qkv"

    def step(e):
        e.markdown.body = "<div><b>Step 2 of 7</b> · Scores</div>"

    student.observe(_element_msg(text))
    student.observe(_element_msg(radio))
    student.observe(_element_msg(next_button, fragment_id="page-fragment"))
    student.observe(_element_msg(step, fragment_id="page-fragment"))
    return student


def test_the_stepper_is_read_with_its_step_its_buttons_and_their_fragment():
    student = _browser()
    assert student.step == (2, 7)
    assert student.buttons["next:qkv"] == ("$$ID-e-next:qkv", "page-fragment", False)
    click = BackMsg.FromString(student.message(click="next:qkv")).rerun_script
    assert click.fragment_id == "page-fragment", "a click inside a fragment reruns that fragment, as in a browser"
    widgets = {w.id: w for w in click.widget_states.widgets}
    assert widgets["$$ID-e-next:qkv"].trigger_value
    assert widgets["$$ID-a-w_source"].string_value == "Type your own"
    assert widgets["$$ID-b-w_text"].string_value == "Your journey"
    typed = BackMsg.FromString(student.message(text="A new one.")).rerun_script
    assert typed.fragment_id == "" and typed.page_script_hash == "hash-qkv"


def test_a_switch_asks_for_the_page_by_its_hash_once_the_navigation_named_it():
    student = _browser()
    nav = ForwardMsg()
    nav.navigation.page_script_hash = "hash-qkv"
    for script_hash, url in (("hash-why", ""), ("hash-qkv", "qkv"), ("hash-mh", "multihead")):
        page = nav.navigation.app_pages.add()
        page.page_script_hash, page.url_pathname = script_hash, url
    student.observe(nav.SerializeToString())
    switch = BackMsg.FromString(student.message(page="multihead")).rerun_script
    assert (switch.page_script_hash, switch.page_name, switch.query_string) == ("hash-mh", "", "")
    assert {w.id for w in switch.widget_states.widgets} == {"$$ID-a-w_source", "$$ID-b-w_text"}


def test_a_full_run_forgets_the_widgets_it_no_longer_draws_and_a_fragment_run_does_not():
    student = _browser()
    student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY))  # drew all four
    assert set(student.states) == {"$$ID-a-w_source", "$$ID-b-w_text"}

    def text(e):
        e.text_input.id, e.text_input.default = "$$ID-b-w_text", "ignored: the browser keeps its value"

    student.observe(_element_msg(text))
    student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert set(student.states) == {"$$ID-a-w_source", "$$ID-b-w_text"} and "next:qkv" in student.buttons
    student.observe(_element_msg(text))
    student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY))
    assert student.states == {"$$ID-b-w_text": ("string_value", "Your journey")}
    assert student.buttons == {}


def test_a_fragment_rerun_forgets_the_fragments_widgets_it_did_not_draw_again():
    student = _browser()  # the Next button drawn in "page-fragment", the sidebar outside it
    student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY))
    student.message(click="next:qkv")  # the fragment's rerun draws only its step's text
    student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert student.buttons == {} and set(student.states) == {"$$ID-a-w_source", "$$ID-b-w_text"}


def test_a_switch_sends_only_the_widgets_the_entry_script_drew():
    student = _browser()
    new_session = ForwardMsg()
    new_session.new_session.main_script_hash = ""  # the sidebar's widgets in _browser carry no script hash
    student.observe(new_session.SerializeToString())

    def page_picker(e):
        e.selectbox.id, e.selectbox.set_value = "$$ID-f-w_cell:qkv:0:row", True  # set to None by the page
        e.selectbox.options.extend(["Your", "journey"])

    page_widget = ForwardMsg.FromString(_element_msg(page_picker))
    page_widget.metadata.active_script_hash = "hash-qkv"
    student.observe(page_widget.SerializeToString())
    student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY))
    assert student.states["$$ID-f-w_cell:qkv:0:row"] == ("string_value", None)
    click = BackMsg.FromString(student.message(click="next:qkv")).rerun_script
    sent = {w.id: w.WhichOneof("value") for w in click.widget_states.widgets}
    assert sent["$$ID-f-w_cell:qkv:0:row"] is None, "a selectbox without a choice is sent as its id alone"
    switch = BackMsg.FromString(student.message(page="multihead")).rerun_script
    assert {w.id for w in switch.widget_states.widgets} == {"$$ID-a-w_source", "$$ID-b-w_text"}


def test_cached_messages_are_read_back_from_a_ref_hash_and_expire_after_max_age_runs():
    student = _browser()
    chart = ForwardMsg()
    chart.delta.new_element.plotly_chart.spec = "{}"
    chart.hash, chart.metadata.cacheable = "h-chart", True
    run = protocol.Run("next", 0.0)
    student.note(protocol.read_reply(chart.SerializeToString()), run, {})
    assert BackMsg.FromString(student.message()).rerun_script.cached_message_hashes == ["h-chart"]
    ref = ForwardMsg()
    ref.ref_hash = "h-chart"
    student.note(protocol.read_reply(ref.SerializeToString()), run, {})
    assert run.charts == 2 and run.error is None
    for _ in range(3):  # max age 2: unused for three finished runs, it is dropped
        student.observe(_finished(ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert student.message_cache == {}
    student.note(protocol.read_reply(ref.SerializeToString()), run, {})
    assert "does not hold" in run.error


def _run(kind, sent, latency, error=None):
    return protocol.Run(kind, sent, latency=latency, ok=error is None, error=error, where=f"qkv {int(sent)}/7")


def test_a_lesson_is_summarised_per_action_kind_with_opening_the_link_apart():
    runs = [
        _run("open", 0.0, 2.0),
        _run("next", 3.0, 0.1),
        _run("next", 4.0, 0.3),
        _run("switch", 5.0, 0.2),
        _run("sentence", 6.0, 0.4, error="stale: the sidebar does not show the sentence sent"),
        _run("sentence", 9.5, 1.0),  # finishes after the window: counted in latency, not in throughput
    ]
    result = load.summarize_lesson(runs, start=0.0, end=10.0)
    assert list(result["by_kind"]) == ["open", "next", "switch", "sentence"]
    assert result["actions"]["runs"] == 5 and result["actions"]["errors"] == 1
    assert result["actions"]["max_s"] == 1.0, "opening the link is not an action"
    assert result["by_kind"]["next"]["p50_s"] == pytest.approx(0.2)
    assert result["by_kind"]["open"]["p95_s"] == 2.0
    assert result["throughput_runs_per_s"] == pytest.approx(0.4)
    assert result["slowest"][:2] == [
        {"kind": "sentence", "where": "qkv 9/7", "latency_s": 1.0},
        {"kind": "next", "where": "qkv 4/7", "latency_s": 0.3},
    ], "the slowest actions that succeeded, where they ended"


def test_a_process_and_its_children_are_measured():
    pid = os.getpid()
    assert meter.family(pid)[0] == pid
    assert meter.process_cpu_s(pid) > 0
    assert 1 < meter.process_rss_mib(pid) < 100_000
    assert meter.process_cpu_s(2**22 + 7) == 0.0, "a process that is gone counts nothing"


def test_one_server_samples_its_memory_under_serve_py_only_when_asked(tmp_path):
    plain = launch.lesson_target(1, str(tmp_path / "a.log"), 2)
    assert plain.command()[1:4] == ["-m", "streamlit", "run"] and not plain.memory_log
    logged = launch.lesson_target(1, str(tmp_path / "b.log"), 2, str(tmp_path / "m.jsonl"), 2.5)
    command = logged.command()
    assert command[1:3] == ["-m", "benchmarks.serve"]
    assert command[3 : command.index("--")] == ["--memory-log", str(tmp_path / "m.jsonl"), "--memory-every", "2.5"]
    assert command[command.index("--") + 1 : command.index("--") + 3] == ["run", "streamlit_app.py"]
    assert logged.env == {"MALLOC_ARENA_MAX": "2"} and logged.memory_log == str(tmp_path / "m.jsonl")
    with pytest.raises(SystemExit):
        launch.lesson_target(2, str(tmp_path / "c.log"), 2, str(tmp_path / "m.jsonl"), 5.0)


def test_memory_trends_cover_the_window_in_mib_and_counts():
    mib = 2**20
    samples = [
        {
            "t": t,
            "wall": 1000.0 + t,
            "rss": (400 + t / 60) * mib,
            "caches": {"FIGURES": {"entries": 10, "bytes": 0}},
            "arenas": [{"system": 3 * mib}, {"system": 5 * mib}],
        }
        for t in range(-30, 400, 5)
    ]
    trends = meter.memory_trends(samples, 1000.0, 1300.0, settled_s=120)
    rss = trends["rss"]
    assert (rss["first"], rss["last"], rss["min"], rss["max"]) == (400, 405, 400, 405), "the window only, in MiB"
    for slope in ("slope_per_min", "slope_second_half_per_min", "slope_settled_per_min"):
        assert rss[slope] == pytest.approx(1.0)
    assert trends["caches.FIGURES.entries"]["last"] == 10, "counts stay counts"
    assert (trends["arenas.0.system"]["last"], trends["arenas.1.system"]["last"]) == (3, 5), "lists by index"
    assert "wall" not in trends and "t" not in trends
    line = meter.memory_lines({"rss": rss})
    assert line.split()[:4] == ["rss", "400.0", "->", "405.0"] and "settled +1.00" in line


def test_the_servers_memory_sample_names_each_kind(monkeypatch):
    import numpy as np

    from explorer.runtime import memory  # the sample reads their caches once imported
    from explorer.widgets import charts

    # A cache of its own, so that no figure another test's lingering thread draws meanwhile changes the count
    figures = memory.SharedCache(2**20, 2**20, 60.0)
    figures.put(("figure", "one"), np.zeros(8), 4)
    monkeypatch.setattr(charts, "FIGURES", figures)
    sample = serve.memory_sample(serve.time.monotonic())
    assert 0 < sample["anon"] < sample["rss"] and sample["file"] > 0 and sample["wall"] > 1.7e9
    assert sample["malloc"]["in_use"] > 0 and 0 < sample["malloc"]["free"] < sample["malloc"]["arena"]
    assert sample["pymalloc"]["arenas"] >= 1 and sample["pymalloc"]["in_use"] > 0
    assert set(sample["caches"]) == {"SHARED", "FIGURES"}
    assert sample["caches"]["FIGURES"] == {"entries": 1, "bytes": figures.bytes} and figures.bytes >= 64
