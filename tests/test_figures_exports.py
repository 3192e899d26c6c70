"""Exports that mean what they say (``attention.figures``' CSV and JSON, a step's file names): masked weights 0,
masked scores -inf, safe labels, named files."""

import csv
import io
import json
import types

import numpy as np

from attention import figures
from attention import figures as tables
from explorer.settings import Settings
from explorer.views import chapter
from explorer.widgets import steps

TOKENS = ["Your", "=SUM(A1)", "-0.5", "@x"]
FUTURE = np.triu(np.ones((4, 4), dtype=bool), 1)
WEIGHTS = np.tril(np.full((4, 4), 0.25)) / np.tril(np.full((4, 4), 0.25)).sum(axis=1, keepdims=True)


def exported(fig) -> list[list[str]]:
    return list(csv.reader(io.StringIO(tables.tables_csv(tables.figure_tables(fig)))))


def test_masked_weights_are_zero_in_csv_and_json():
    fig = figures.heatmap(WEIGHTS, TOKENS, TOKENS, title="attn_weights", value_name="attention weight", masked=FUTURE)
    rows = exported(fig)
    assert rows[1][1:] == ["1", "0", "0", "0"]
    payload = json.loads(tables.step_json({"tables": tables.figure_tables(fig)}))
    assert payload["tables"][0]["values"][0] == [1.0, 0.0, 0.0, 0.0]


def test_masked_scores_are_minus_infinity_in_csv_and_a_string_in_json():
    scores = np.where(FUTURE, -np.inf, 0.5)
    fig = figures.heatmap(scores, TOKENS, TOKENS, title="masked_scores", kind="signed", masked=FUTURE)
    assert exported(fig)[1][1:] == ["0.5", "-inf", "-inf", "-inf"]
    payload = json.loads(tables.step_json({"tables": tables.figure_tables(fig)}))
    assert payload["tables"][0]["values"][0] == [0.5, "-inf", "-inf", "-inf"]
    assert '"-inf"' in tables.JSON_NOTE


def test_dropped_weights_are_zero_too():
    keep = ~np.eye(4, dtype=bool)
    fig = figures.heatmap(WEIGHTS * 2 * keep, TOKENS, TOKENS, title="t", masked=FUTURE, dropped=~keep)
    assert exported(fig)[1][1] == "0"


def test_labels_that_look_like_formulas_are_neutralised_but_numbers_stay():
    assert tables.csv_text("=SUM(A1)") == "'=SUM(A1)"
    assert tables.csv_text("+1+1") == "'+1+1"
    assert tables.csv_text("@x") == "'@x"
    assert tables.csv_text("-x") == "'-x"
    assert tables.csv_text("-0.5") == "-0.5"
    assert tables.csv_text("Your") == "Your"
    fig = figures.heatmap(WEIGHTS, TOKENS, TOKENS, title="=t", value_name="attention weight", masked=FUTURE)
    header = exported(fig)[0]
    assert header == ["'=t", "Your", "'=SUM(A1)", "-0.5", "'@x"]


def test_naive_softmax_nan_stays_null_in_json():
    payload = json.loads(tables.step_json({"values": np.array([np.nan, 1.0, np.inf])}))
    assert payload["values"] == [None, 1.0, "inf"]


def test_the_book_flag_follows_the_settings():
    assert chapter.is_book(Settings())
    assert not chapter.is_book(Settings(source="text", text="Hello there"))
    assert not chapter.is_book(Settings(d_out=4))


def test_file_names_carry_page_step_and_quantity(monkeypatch):
    from explorer import widgets
    from explorer.session import ThisRun

    monkeypatch.setattr(widgets, "this_run", lambda: ThisRun(step=("causal_mask", 2, "Scores with −∞")))
    assert steps.export_name("masked-weights") == "causal_mask-step3-masked_weights"
    assert figures.export_config(steps.export_name("masked-weights"))["toImageButtonOptions"]["filename"] == (
        "causal_mask-step3-masked_weights"
    )


def test_the_steps_json_counts_the_layers_head_from_1_as_a_link_does():
    settings = Settings(weights="trained", layer=3, head=1)  # Settings.head is an index: layer 3's head 2
    run = types.SimpleNamespace(settings=settings, prepared=None)
    step = ("Causal mask", 2, "× mask, ÷ row sums", "zero-and-renormalize")
    payload = json.loads(tables.step_json(steps.step_payload("Causal mask", step, run, [], [])))
    written = payload["settings"]
    assert (payload["step"], written["layer"], written["head_n"], "head" in written) == (3, 3, 2, False)
