"""Multi-head attention's "Every layer and head" step (AppTest): the grid of every layer's and head's attention
weights for the small GPT (4 × 4) and for a generated GPT-2-shaped checkpoint (12 × 12), its numbers those of
one pass through the model, and the keyboard route that opens a layer and head on the chapter pages."""

import numpy as np
import pytest
import torch
from apptest_support import app, captions, decode, figure_specs, markdown, type_sentence
from gpt2_checkpoints import write_gpt2
from tolerances import rounding_bounds

from attention.after_chapter.gpt2 import load_gpt2
from attention.after_chapter.inspecting import every_layer_weights
from attention.after_chapter.training import load_trained_gpt

BOOK_IDS = [7120, 7002, 4940, 351, 530, 2239]  # "Your journey starts with one step" in GPT-2's BPE
GRID = "attn_weights: "


def grid_spec(at) -> dict:
    (spec,) = [s for s in figure_specs(at) if s["layout"]["title"]["text"].startswith(GRID)]
    return spec


def grid_weights(spec: dict) -> np.ndarray:
    """The drawn weights, (L·h, T, T), masked cells back to 0."""
    return np.nan_to_num(np.stack([decode(t["z"]) for t in spec["data"] if t["type"] == "heatmap"]).astype(float))


def row_bounds(model, num_layers: int) -> np.ndarray:
    """Each drawn row's rounding bound, (L·h, T, 1): twice its scores' summation bound; row t's from the pass
    over the first t + 1 tokens, all that a causal row t reads."""
    rows = [rounding_bounds(model, BOOK_IDS[: t + 1]).rows for t in range(len(BOOK_IDS))]
    bound = torch.stack([torch.cat([r[layer] for r in rows], dim=-1) for layer in range(num_layers)])  # (L, h, T)
    return bound.reshape(-1, len(BOOK_IDS), 1).numpy()


def open_grid(query: dict, *, timeout: float = 120):
    at = app("pages/multihead.py", query_params={"step": "every-head", **query}, timeout=timeout)
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_small_gpts_grid_is_every_layers_weights_from_one_pass():
    at = open_grid({"weights": "trained"})
    spec = grid_spec(at)
    assert spec["layout"]["title"]["text"] == f"{GRID}4 layers × 4 heads"
    drawn = grid_weights(spec)
    assert drawn.shape == (16, 6, 6)
    model = load_trained_gpt()
    expected = every_layer_weights(model, BOOK_IDS).reshape(16, 6, 6).numpy()
    # The page runs the pass in its own thread, which may sum in another order (seen with 2 threads): each row
    # within twice its scores' summation bound, row t's from the pass over the first t + 1 tokens (causal)
    bound = row_bounds(model, 4)
    assert bound.max() < 1e-2  # 3.3e-3 at most: far below the differences between heads the grid shows
    assert (np.abs(drawn - expected) <= bound).all()
    picks = [t for t in spec["data"] if t["type"] == "scatter"]
    assert [t["customdata"][0] for t in picks] == [[layer, head] for layer in range(1, 5) for head in range(1, 5)]
    assert all(t["text"][0].split()[0] in ("prev", "first", "spread") for t in picks)
    assert "16 [attention-weight]" in markdown(at) and "entropy" in captions(at)
    assert [link.proto.page for link in at.get("page_link")] == ["qkv", "causal_mask", "dropout"]  # url paths


def test_the_keyboard_route_sets_the_sidebars_layer_and_head():
    at = open_grid({"weights": "trained"})
    at.selectbox(key="every_head_layer:1:1").select(3)
    at.selectbox(key="every_head_head:1:1").select(2)
    at.button(key="every_head_open").click().run()
    assert not at.exception
    assert at.sidebar.number_input(key="w_layer").value == 3
    assert at.sidebar.number_input(key="w_head").value == 2  # the sidebar counts heads from 1
    assert at.session_state["settings"].layer == 3 and at.session_state["settings"].head == 1
    assert (at.query_params["layer"], at.query_params["layer_head_n"]) == ("3", "2")  # links carry it, from 1
    assert "They hold **layer 3, head 2** now" in markdown(at)
    shapes = grid_spec(at)["layout"]["shapes"]
    assert [(s["xref"], s["yref"]) for s in shapes] == [("x10 domain", "y10 domain")]  # layer 3, head 2 outlined


def test_a_long_sentence_shows_its_first_tokens_and_says_so():
    at = open_grid({"weights": "trained"})
    type_sentence(at, "word " * 200)
    assert not at.exception
    spec = grid_spec(at)
    assert grid_weights(spec).shape == (16, 128, 128)  # the small GPT's whole context fits GRID_CELLS
    assert "its 128 tokens: 16" in markdown(at)  # the model's context cut the sentence; the grid shows all of it


def test_random_weights_have_no_grid_step_and_say_why():
    at = app("pages/multihead.py", query_params={"step": "same-output"})
    assert at.button(key="next:multihead").disabled
    assert "two more steps show" in captions(at) and "learned nothing" in captions(at)
    assert not [s for s in figure_specs(at) if s["layout"]["title"]["text"].startswith(GRID)]


@pytest.fixture(scope="module")
def gpt2_12_by_12(tmp_path_factory):
    """A GPT-2-shaped checkpoint (12 layers, 12 heads of 64, width 768; a small vocabulary and context keep the
    file small) in Hugging Face's layout, named the way a server's operator names one."""
    path = write_gpt2(tmp_path_factory.mktemp("gpt2") / "model.safetensors", vocab_size=8_000, context_length=64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTENTION_GPT2_CHECKPOINT", str(path))
        yield path


@pytest.mark.slow  # seconds: out of the quick check
def test_a_12_layer_12_head_gpt2s_grid_renders_every_head(gpt2_12_by_12):
    at = open_grid({"weights": "gpt2", "layer": "5", "layer_head": "6"})
    spec = grid_spec(at)
    assert spec["layout"]["title"]["text"] == f"{GRID}12 layers × 12 heads"
    drawn = grid_weights(spec)
    assert drawn.shape == (144, 6, 6)
    with torch.random.fork_rng(devices=[]):
        model = load_gpt2(gpt2_12_by_12)
        expected = every_layer_weights(model, BOOK_IDS).reshape(144, 6, 6).numpy()
    assert (np.abs(drawn - expected) <= row_bounds(model, 12)).all()  # the page's own thread, as above
    assert [a["text"] for a in spec["layout"]["annotations"]][-1] == "layer 12"
    assert [(s["xref"], s["yref"]) for s in spec["layout"]["shapes"]] == [("x55 domain", "y55 domain")]
    assert not any(t.get("texttemplate") for t in spec["data"])  # no cell numbers in 144 small multiples
    assert all(t["text"][0][0] in "PFS" for t in spec["data"] if t["type"] == "scatter")  # short labels
    type_sentence(at, "word " * 60)  # 61 tokens: the last is a space
    assert grid_weights(grid_spec(at)).shape == (144, 48, 48)  # GRID_CELLS: 48 tokens for 12 × 12 heads
    assert "its first 48 of 61 tokens: 144" in markdown(at) and "the causal mask hides them" in markdown(at)
