"""The glossary: every term the chapter's pages need, a link per term that reaches its heading, and every link
the pages make pointing at a term that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apptest_support import app, markdown

from attention.prose.glossary import NOTATION, TERMS, term

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = (  # issue 24: the chapter's terms and the jargon the pages use
    *("d_in", "d_out", "d_k", "head_dim", "num_heads", "context_length", "weight_matrices", "attention_weights"),
    *("attention_scores", "context_vector", "causal_mask", "dropout", "buffer", "softmax", "entropy", "saturates"),
    *("one_hot", "broadcast", "fused_kernel", "layernorm", "attention_sink", "log_log", "gates", "materialize"),
)
LINK = re.compile(r"\]\(/glossary#([\w-]+)\)")


def test_every_required_term_has_a_short_definition():
    for key in REQUIRED:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", TERMS[key].definition) if s]
        assert 1 <= len(sentences) <= 3, key


def test_term_links_to_its_anchor_and_refuses_an_unknown_key():
    assert term("d_k") == "[`d_k`](/glossary#d_k)"
    assert term("attention_weights", "weights") == "[weights](/glossary#attention_weights)"
    with pytest.raises(KeyError, match="not a glossary term"):
        term("d_kk")


def test_the_page_shows_the_notation_and_one_anchored_heading_per_term():
    at = app("pages/glossary.py")
    assert not at.exception
    assert "x^(1), which Python stores in `inputs[0]`" in markdown(at)
    assert [h.proto.anchor for h in at.subheader] == list(TERMS)
    assert len(NOTATION) >= 4


@pytest.mark.parametrize("page", ["why_attention", "tokens", "simplified", "qkv", "causal_mask"])
def test_a_page_links_the_glossary_and_only_to_terms_it_has(page):
    steps = {
        "why_attention": "one-vector",
        "tokens": "token-ids",
        "simplified": "scores-to-weights",
        "qkv": "queries-keys-values",
        "causal_mask": "the-mask",
    }
    at = app(f"pages/{page}.py", query_params={"step": steps.get(page, "2")})  # the second step; Tokens' first
    keys = LINK.findall(markdown(at))
    assert keys, f"{page} links no term"
    assert set(keys) <= set(TERMS)


def test_every_link_in_the_source_names_a_term():
    for path in [*ROOT.glob("pages/*.py"), *ROOT.glob("explorer/**/*.py")]:
        for key in re.findall(r"\bterm\(\s*['\"]([\w-]+)['\"]", path.read_text(encoding="utf-8")):
            assert key in TERMS, f"{path.name}: {key}"
