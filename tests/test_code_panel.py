"""The code panel ("Show the code") sends the source only while it is open, and stays open from step to step."""

import inspect

from apptest_support import app

import attention
from explorer.widgets import steps

QKV = "pages/qkv.py"


def source(obj) -> str:
    return inspect.getsource(obj).strip()


def python_code(at) -> list[str]:
    """The source shown in code blocks (the share link is a code block too, not Python)."""
    return [c.value.strip() for c in at.code if c.language == "python"]


def test_a_closed_panel_sends_no_code():
    at = app()
    assert not at.exception
    assert [e.label for e in at.expander] == ["Show the code"]
    assert python_code(at) == []


def test_opening_the_panel_shows_the_code_that_computed_the_view():
    at = app()
    at.session_state[steps.code_panel_key()] = True  # what clicking the panel's title sets
    at.run()
    assert not at.exception
    expected = [source(f) for f in (attention.encoder_decoder, attention.gru_step, attention.additive_scores)]
    assert python_code(at) == expected


def test_the_panel_stays_open_on_the_next_step_with_that_steps_code():
    at = app(QKV)
    at.session_state[steps.code_panel_key()] = True
    at.run()
    assert python_code(at) == [source(attention.SelfAttention_v1)]
    at.button(key="next:qkv").click().run()
    assert not at.exception
    assert python_code(at) == [source(attention.SelfAttention_v1.steps)]
    at.session_state[steps.code_panel_key()] = False  # closed again
    at.run()
    assert python_code(at) == []
