"""Every chapter page with ``weights=trained`` (AppTest): each step runs and draws, on the book's sentence and on a
typed one, with the trained layer's sizes; Multi-head attention ends with per-head summaries that differ."""

import numpy as np
import pytest
import torch
from apptest_support import app, captions, decode, figure_specs, markdown

from attention.after_chapter.gpt import GPTConfig, GPTModel

TYPED = "The quick brown fox jumps over the lazy dog, and then it runs home to rest."
PAGES = {  # page file -> stepper key
    "pages/why_attention.py": "why_attention",
    "pages/tokens.py": "tokens",
    "pages/simplified.py": "simplified",
    "pages/qkv.py": "qkv",
    "pages/causal_mask.py": "causal_mask",
    "pages/dropout.py": "dropout",
    "pages/batches.py": "batches",
    "pages/multihead.py": "multihead",
}
SENTENCES = {"book": {}, "typed": {"input": "text", "text": TYPED}}


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("page", PAGES)
def test_every_step_runs_and_draws_with_trained_weights(page, sentence):
    at = app(page, query_params={"weights": "trained", "layer": "2", **SENTENCES[sentence]}, timeout=120)
    key, steps = PAGES[page], 0
    while True:
        assert not at.exception, [e.message for e in at.exception]
        assert not at.warning, [w.value for w in at.warning]
        expected = "do not reach this page" if key == "why_attention" else "layer 2 of 4 of the small GPT"
        assert expected in captions(at)
        assert figure_specs(at) or at.dataframe or at.table, f"step {steps + 1} draws nothing"
        steps += 1
        following = at.button(key=f"next:{key}")
        if following.disabled:
            break
        following.click().run()
    assert steps >= 2


def test_tokens_show_the_layers_64_wide_input():
    at = app("pages/tokens.py", query_params={"weights": "trained", "step": "embeddings"})
    assert figure_specs(at)[0]["layout"]["title"]["text"] == "Input embeddings, shape (6, 64)"
    assert "what the model feeds layer 1" in markdown(at)


def test_sizes_the_model_fixes_are_disabled_in_the_sidebar():
    at = app("pages/qkv.py", query_params={"weights": "trained"})
    for label in ("d_in", "d_out", "num_heads", "context_length", "seed"):
        assert next(w for w in at.sidebar.number_input if w.label == label).disabled, label
    assert "The model fixes d_in = 64" in captions(at.sidebar)
    at = app("pages/qkv.py")
    assert not next(w for w in at.sidebar.number_input if w.label == "d_out").disabled


@pytest.mark.parametrize("sentence", SENTENCES)
def test_multihead_summaries_differ_between_heads(sentence):
    query = {"weights": "trained", "step": "what-heads-look-at", **SENTENCES[sentence]}
    at = app("pages/multihead.py", query_params=query)
    assert not at.exception
    spec = next(s for s in figure_specs(at) if s["layout"]["title"]["text"].startswith("What each head"))
    bars = np.stack([decode(trace["y"]) for trace in spec["data"]])  # (3 measures, 4 heads)
    assert bars.shape == (3, 4)
    assert (bars.max(axis=1) - bars.min(axis=1)).max() > 0.07
    assert "attention sink" in captions(at)


def test_long_input_is_cut_to_the_models_context_with_the_notice():
    at = app("pages/multihead.py", query_params={"weights": "trained", "input": "text", "text": "word " * 200})
    assert not at.exception
    assert any("has 201 tokens; only the first 128 (context_length)" in info.value for info in at.info)


def test_unknown_weights_fall_back_to_random_with_a_literal_notice():
    at = app("pages/multihead.py", query_params={"weights": "**bold**"})
    assert not at.exception
    shown = " ".join(info.value for info in at.sidebar.info)
    assert "weights\\=" in shown and "\\*\\*bold\\*\\*" in shown
    assert "small GPT" not in captions(at)


def test_gpt2_without_a_checkpoint_falls_back_with_the_loaders_message(monkeypatch):
    monkeypatch.delenv("ATTENTION_GPT2_CHECKPOINT", raising=False)
    at = app("pages/multihead.py", query_params={"weights": "gpt2"})
    assert not at.exception
    assert "ATTENTION\\_GPT2\\_CHECKPOINT" in " ".join(info.value for info in at.sidebar.info)
    assert at.sidebar.radio(key="w_weights").value == "random"


@pytest.fixture
def tiny_gpt2(tmp_path, monkeypatch):
    """A small GPT-2-shaped checkpoint (2 layers, 2 heads of 64, with qkv bias) in the book's .pth layout."""
    torch.manual_seed(0)
    model = GPTModel(GPTConfig(context_length=64, emb_dim=128, n_heads=2, n_layers=2, qkv_bias=True, tie_weights=True))
    path = tmp_path / "gpt2.pth"
    torch.save(model.state_dict(), path)
    monkeypatch.setenv("ATTENTION_GPT2_CHECKPOINT", str(path))
    return model


@pytest.mark.parametrize("page", [p for p in PAGES if p != "pages/why_attention.py"])
def test_every_chapter_page_runs_on_the_servers_gpt2(tiny_gpt2, page):
    at = app(page, query_params={"weights": "gpt2", "layer": "2", **SENTENCES["typed"]}, timeout=120)
    assert not at.exception, [e.message for e in at.exception]
    assert "layer 2 of 2 of GPT-2 (2 heads, d_in = 128" in captions(at)
    if page == "pages/qkv.py":  # GPT-2's projections have a bias; SelfAttention_v1 has none
        assert "SelfAttention_v1 has none" in " ".join(w.value for w in at.warning)
    else:
        assert not at.warning
        assert figure_specs(at) or at.dataframe or at.table
