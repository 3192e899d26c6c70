"""Issue 13's Speed-page goal, measured: at the page's largest sizes, a second visitor waits at most
30 s behind the first. Two sessions ask at once; each measurement stops within the time budget."""

import threading
import time

import pytest

from explorer.views import beyond

# The page's caps (pages/speed.py): every T up to 1,024, d_model 768, 12 heads, b = 4, 5 rounds.
T_ALL = (16, 32, 64, 128, 256, 512, 1024)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_second_visitor_waits_at_most_30_s_behind_the_first_at_the_caps():
    beyond.measured.clear()
    started, finished, views = {}, {}, {}
    first_running = threading.Event()

    def visitor(name: str, d_model: int) -> None:
        def report(done: int, total: int, label: str) -> None:
            if done and name == "first":
                first_running.set()
            if done and name not in started:
                started[name] = time.perf_counter()  # this visitor's own measurement has begun

        asked = time.perf_counter()
        views[name] = beyond.speed_view(T_ALL, d_model, 12, 4, 5, "cpu", on_progress=report)
        finished[name] = time.perf_counter()
        started[name + " asked"] = asked

    first = threading.Thread(target=visitor, args=("first", 768))
    first.start()
    first_running.wait(60)
    second = threading.Thread(target=visitor, args=("second", 384))  # other sizes: no result measured before
    second.start()
    first.join(120)
    second.join(120)

    waited = started["second"] - started["second asked"]
    print(
        f"first measurement {finished['first'] - started['first']:.1f} s; second waited {waited:.1f} s; "
        f"first skipped T = {views['first'].skipped_tokens}, rounds {views['first'].rounds}"
    )
    assert waited <= 30
    assert finished["first"] - started["first"] <= beyond.SPEED_BUDGET_S + 10
