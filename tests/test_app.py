"""The app as a whole, through AppTest: navigation, shared settings, deep links, presenter mode, exports."""

import ast
import csv
import io
import json
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from apptest_support import ROOT, app, decode, figure_specs, next_step, share_link, type_sentence

import attention
from attention import figures
from attention import figures as tables

TOKENS = "pages/tokens.py"


def test_the_app_opens_on_why_attention_with_the_books_example():
    assert not app().exception
    at = app(TOKENS)
    assert not at.exception
    assert at.radio(key="w_source").value == "book"
    table = at.dataframe[0].value
    assert list(table["token"]) == list(attention.BOOK_TOKENS)
    assert list(table["id"]) == [7120, 7002, 4940, 351, 530, 2239]


def test_settings_persist_across_pages():
    at = app(TOKENS)
    at.number_input(key="w_seed").set_value(7).run()
    at.switch_page("pages/simplified.py").run()
    assert at.number_input(key="w_seed").value == 7
    at.switch_page(TOKENS).run()
    assert at.number_input(key="w_seed").value == 7
    assert not at.exception


def test_deep_link_restores_settings_and_step():
    at = app(
        TOKENS,
        query_params={"input": "text", "text": "Hello <b>world</b>", "d_in": "5", "seed": "9", "step": "embeddings"},
    )
    assert not at.exception
    assert at.text_input(key="w_text").value == "Hello <b>world</b>"
    assert at.number_input(key="w_d_in").value == 5
    assert "Step 2 of 2" in at.markdown[0].value
    z = decode(figure_specs(at)[0]["data"][0]["z"])
    ids = attention.tokenize("Hello <b>world</b>").ids
    np.testing.assert_allclose(z, attention.embed_tokens(ids, 5, 9).numpy(), atol=1e-6)


def test_share_link_reproduces_the_view():
    at = app(TOKENS)
    type_sentence(at, "The cat sat & the dog ran")
    at.number_input(key="w_seed").set_value(42).run()
    next_step(at)
    link = share_link(at)
    params = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    assert params["text"] == "The cat sat & the dog ran" and params["seed"] == "42" and params["step"] == "embeddings"
    fresh = app(TOKENS, query_params=params)
    assert not fresh.exception
    original = decode(figure_specs(at)[0]["data"][0]["z"])
    reproduced = decode(figure_specs(fresh)[0]["data"][0]["z"])
    np.testing.assert_array_equal(original, reproduced)


def test_hostile_query_parameters_fall_back_with_a_visible_notice():
    at = app(TOKENS, query_params={"d_in": "99999999", "heads": "-3", "p": "nan", "text": "x" * 100_000, "zzz": "1"})
    assert not at.exception
    notices = " ".join(i.value for i in at.sidebar.info).replace("\\", "")  # as shown: Markdown escapes removed
    assert "d_in" in notices and "num_heads" in notices and "dropout" in notices and "links carry" in notices
    assert at.number_input(key="w_d_in").value == 1024


def test_presenter_mode_from_the_link():
    at = app(TOKENS, query_params={"present": "1", "step": "embeddings"})
    assert at.toggle(key="presenter").value is True
    layout = figure_specs(at)[0]["layout"]
    assert layout["yaxis"]["tickfont"]["size"] >= 18
    assert layout["title"]["font"]["size"] >= 22
    assert "present=1" in share_link(at)


def test_a_phone_gets_charts_with_16_px_text(monkeypatch):
    from explorer import session

    monkeypatch.setattr(session, "on_a_phone", lambda: True)  # what a phone's User-Agent makes it say
    layout = figure_specs(app(TOKENS, query_params={"step": "embeddings"}))[0]["layout"]
    assert layout["yaxis"]["tickfont"]["size"] == 16 and layout["title"]["font"]["size"] == 18
    monkeypatch.setattr(session, "on_a_phone", lambda: False)
    layout = figure_specs(app(TOKENS, query_params={"step": "embeddings"}))[0]["layout"]
    assert layout["yaxis"]["tickfont"]["size"] == 12


def test_empty_sentence_gets_a_prompt_and_keeps_the_text():
    at = app(TOKENS)
    type_sentence(at, "   \t ")
    assert not at.exception
    assert any("Type a sentence" in w.value for w in at.warning)
    assert at.text_input(key="w_text").value == "   \t "


def test_long_text_is_truncated_with_a_notice():
    at = app(TOKENS)
    at.number_input(key="w_context_length").set_value(8).run()
    type_sentence(at, "one two three four five six seven eight nine ten eleven")
    assert not at.exception
    assert any("only the first 8" in i.value for i in at.info)
    assert len(at.dataframe[0].value) == 8


def test_each_step_offers_json_and_heatmaps_offer_csv():
    at = app(TOKENS, query_params={"step": "embeddings"})
    labels = [b.label for b in at.get("download_button")]
    assert "CSV" in labels and "This step's numbers (JSON)" in labels


def test_csv_and_json_exports_carry_labels_and_numbers():
    fig = figures.heatmap(np.array([[1.0, np.nan], [0.25, 0.75]]), ["<b>", " a"], ["<b>", " a"], title="w")
    found = tables.figure_tables(fig)
    rows = list(csv.reader(io.StringIO(tables.tables_csv(found))))
    assert rows[0] == ["w", "<b>", "␣a"]
    assert rows[1][0] == "<b>" and rows[2] == ["␣a", "0.25", "0.75"]
    payload = json.loads(tables.step_json({"tables": found}))
    assert payload["tables"][0]["values"] == [[1.0, None], [0.25, 0.75]]
    assert payload["tables"][0]["rows"] == ["<b>", "␣a"]


ENTRYPOINT_CALLS = {("session", name) for name in ("ensure_entrypoint", "current_run")} | {
    ("widgets", "page")  # calls session.current_run first
}  # the calls that run ensure_entrypoint


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "pages").glob("*.py")))
def test_every_page_first_makes_sure_the_app_script_runs_around_it(page):
    """A deep link opened first after the server starts (a student reloading /live?room=...) runs the page file
    alone, without the sidebar and navigation, unless the page's first statement calls ``ensure_entrypoint``."""
    tree = ast.parse((ROOT / "pages" / page).read_text())
    body = [n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom)]
    body = body[1:] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body
    constant = lambda n: isinstance(n, ast.Assign) and all(getattr(t, "id", "x").isupper() for t in n.targets)  # noqa: E731
    body = [n for n in body if not constant(n)]  # e.g. NAMES = list(attention.MISTAKES): no drawing
    calls = [c.func for c in ast.walk(body[0]) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)]
    named = {(getattr(f.value, "id", ""), f.attr) for f in calls}
    assert named & ENTRYPOINT_CALLS, f"{page} starts: {ast.unparse(body[0])[:80]}"
