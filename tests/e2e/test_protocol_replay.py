"""The load benchmarks' browser-like student sends what Chromium sends.

``benchmarks.load``'s students (``LessonStudent``, a ``protocol.BrowserStudent``) speak Streamlit's websocket
protocol themselves. Here Chromium and such a student do the same short lesson on the same server: open
Causal mask from the class's link, press Next, switch to Multi-head attention in the sidebar's navigation, and
type a new sentence. Each rerun request (``BackMsg.rerun_script``) they send must carry the same widget ids,
each with the same ``WidgetState`` field and value, and the same page script hash, fragment id and query
string. Widget ids are derived from keys and parameters, so two sessions of one app name them alike.
"""

from __future__ import annotations

import asyncio
import random
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from e2e_support import _decoded
from streamlit.proto.BackMsg_pb2 import BackMsg

from benchmarks.load import CLASS_SENTENCES, LessonStudent

pytestmark = pytest.mark.browser

OPENED, SWITCHED_TO = "causal_mask", "multihead"  # the class's page, and the page the switch goes to
SWITCH_TITLE = "Multi-head attention"  # its title in the sidebar's navigation
LINK = {"input": "text", "text": CLASS_SENTENCES[0]}  # the class's link, as ``load.lesson`` opens it
ACTIONS = ("open", "step", "step", "switch", "sentence")  # ``load.ACTIONS`` after the open; Next twice

# (action, what differs) -> why the difference is allowed. Nothing else may differ.
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Request:
    """What a rerun request asks of the server."""

    widgets: dict[str, tuple[str | None, object]]  # widget id -> (WidgetState field, value); (None, None): no value
    page_script_hash: str
    page_name: str
    fragment_id: str
    query_string: str


def request(message: BackMsg) -> Request:
    rerun = message.rerun_script
    widgets = {}
    for widget in rerun.widget_states.widgets:
        field = widget.WhichOneof("value")
        value = getattr(widget, field) if field else None
        widgets[widget.id] = (field, list(value.data) if field and field.endswith("_array_value") else value)
    return Request(widgets, rerun.page_script_hash, rerun.page_name, rerun.fragment_id, rerun.query_string)


def reruns(messages: list[BackMsg]) -> list[Request]:
    return [request(m) for m in messages if m.WhichOneof("type") == "rerun_script"]


def differences(browser: Request, student: Request) -> dict[str, str]:
    """What differs between two requests: 'widgets' (ids), 'widget <id>' (field and value), and each other field."""
    found = {}
    if browser.widgets.keys() != student.widgets.keys():
        only_browser, only_student = (
            sorted(browser.widgets.keys() - student.widgets.keys()),
            sorted(student.widgets.keys() - browser.widgets.keys()),
        )
        found["widgets"] = f"only the browser sent {only_browser}; only the student {only_student}"
    for widget_id in browser.widgets.keys() & student.widgets.keys():
        if browser.widgets[widget_id] != student.widgets[widget_id]:
            found[f"widget {widget_id}"] = f"browser {browser.widgets[widget_id]}, student {student.widgets[widget_id]}"
    for name in ("page_script_hash", "page_name", "fragment_id", "query_string"):
        if getattr(browser, name) != getattr(student, name):
            found[name] = f"browser {getattr(browser, name)!r}, student {getattr(student, name)!r}"
    return found


async def student_lesson(base_url: str) -> tuple[list[BackMsg], str, str]:
    """The lesson as ``load.lesson``'s student does it; returns the BackMsgs it sent, the sentence it typed and
    the query string it was left with."""
    student = LessonStudent(base_url, None, random.Random(1))
    sent: list[BackMsg] = []
    send = student.send

    async def recorded(kind, message, *args, **kwargs):
        sent.append(BackMsg.FromString(message))
        return await send(kind, message, *args, **kwargs)

    student.send = recorded
    await student.connect()
    runs = [await student.open(OPENED, LINK)]
    for action in ACTIONS[1:]:
        runs.append(await student.act(action, [OPENED, SWITCHED_TO], typing=False))
    await student.close()
    assert [(r.kind, r.error) for r in runs] == [(r.kind, None) for r in runs]
    assert (student.page, student.step[0]) == (SWITCHED_TO, 1)
    return sent, student.states[student.widget_ids["w_text"]][1], student.query_string


def browser_lesson(app_page, typed: str) -> tuple[list[BackMsg], str]:
    """The same lesson in Chromium; returns the BackMsgs the page sent and the address it was left at."""
    sent: list[BackMsg] = []
    app_page.page.on("websocket", lambda socket: socket.on("framesent", lambda p: sent.append(_decoded(p, BackMsg))))
    app_page.goto(OPENED, urllib.parse.urlencode(LINK))
    app_page.next()
    app_page.next()
    app_page.press_and_wait(app_page.page.locator('[data-testid="stSidebarNav"] a').filter(has_text=SWITCH_TITLE))
    app_page.type_sentence(typed)
    return [m for m in sent if m is not None], app_page.page.url


def test_the_browser_student_sends_what_chromium_sends(server, open_app):
    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API holds this thread's event loop
        student_sent, typed, student_query = thread.submit(asyncio.run, student_lesson(server)).result()
    browser_sent, browser_url = browser_lesson(open_app(), typed)
    browser, student = reruns(browser_sent), reruns(student_sent)
    assert len(browser) == len(student) == len(ACTIONS), (len(browser), len(student))
    found = {}
    for action, b, s in zip(ACTIONS, browser, student, strict=True):
        for what, how in differences(b, s).items():
            if (action, what) not in ALLOWED:
                found[f"{action}: {what}"] = how
    listed = "\n".join(f"{where}: {how}" for where, how in found.items())
    assert not found, f"the student's requests differ from Chromium's:\n{listed}"
    assert student_query == urllib.parse.urlsplit(browser_url).query, "the server left them on different views"
