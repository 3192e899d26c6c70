"""The GPT-2 loader, on small checkpoints generated here in both layouts readers have.

The oracle is GPT-2 computed straight from the Hugging Face tensors (Conv1D
weights, fused ``c_attn``), written independently of ``attention.after_chapter.gpt``.
"""

from __future__ import annotations

import math
import pickle

import pytest
import torch
from gpt2_checkpoints import gpt2_tensors
from safetensors.torch import save_file
from tolerances import attention_inner_sizes, gpt_block_inner_sizes, rounding_bounds, summation_error, within

from attention import trace
from attention.after_chapter.gpt import GPTConfig, GPTModel
from attention.after_chapter.gpt2 import CHECKPOINT_VARIABLE, gpt2_from_environment, load_gpt2
from attention.after_chapter.inspecting import layer_input

VOCAB, CONTEXT, D, LAYERS, HEADS = 100, 16, 32, 2, 4
IDS = [5, 17, 99, 0, 42, 42, 7, 63, 12]


def hf_tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    """A tiny GPT-2 with Hugging Face's key names and layouts (Conv1D weights are (in, out)), with numbers larger
    than GPT-2's so that every part shows in the outputs."""
    shape = {"layers": LAYERS, "emb_dim": D, "vocab_size": VOCAB, "context_length": CONTEXT}
    return gpt2_tensors(**shape, seed=seed, scale=0.3, bias_scale=0.1)


def oracle_layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * weight + bias


def oracle_attention(x, t, n):
    """GPT-2's attention in layer n from the HF tensors: fused qkv by Conv1D, causal softmax, c_proj."""
    p = f"h.{n}.attn."
    num_tokens = x.shape[0]
    qkv = x @ t[p + "c_attn.weight"] + t[p + "c_attn.bias"]  # (T, 3D)
    q, k, v = qkv.split(D, dim=-1)
    head = D // HEADS
    q, k, v = (m.reshape(num_tokens, HEADS, head).permute(1, 0, 2) for m in (q, k, v))  # (H, T, head)
    scores = q @ k.transpose(-1, -2) / math.sqrt(head)
    future = torch.ones(num_tokens, num_tokens).triu(1).bool()
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    context = (weights @ v).permute(1, 0, 2).reshape(num_tokens, D)
    return context @ t[p + "c_proj.weight"] + t[p + "c_proj.bias"], weights


def oracle_forward(ids, t):
    """Returns each layer's attention input (after ln_1), each attention output, and the logits."""
    x = t["wte.weight"][ids] + t["wpe.weight"][: len(ids)]
    inputs, outputs = [], []
    for n in range(LAYERS):
        p = f"h.{n}."
        a_in = oracle_layer_norm(x, t[p + "ln_1.weight"], t[p + "ln_1.bias"])
        a_out, _ = oracle_attention(a_in, t, n)
        inputs.append(a_in)
        outputs.append(a_out)
        x = x + a_out
        m = oracle_layer_norm(x, t[p + "ln_2.weight"], t[p + "ln_2.bias"])
        h = m @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"]
        h = 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
        x = x + h @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    logits = oracle_layer_norm(x, t["ln_f.weight"], t["ln_f.bias"]) @ t["wte.weight"].T
    return inputs, outputs, logits


def assert_matches_oracle(model: GPTModel, t: dict[str, torch.Tensor]) -> None:
    inputs, outputs, logits = oracle_forward(IDS, t)
    T, head_dim = len(IDS), D // HEADS
    row_bounds = [rounding_bounds(model, IDS[: i + 1]).rows for i in range(T)]  # each (n_heads, 1) per layer
    for n in range(LAYERS):
        # Every sum before layer n's attention (its blocks, then ln_1's mean and variance), at each result's scale,
        # as rounding_bounds counts them (measured 2.4e-6 apart at most, against 1e-5 before)
        path = gpt_block_inner_sizes(D, HEADS, T) * n + [D, D]
        view = layer_input(model, IDS, n)
        inputs_bound = summation_error(path, view.inputs[0].abs().amax(-1, keepdim=True))  # (T, 1)
        assert within(view.inputs[0], inputs[n], inputs_bound)
        steps = trace(view.attention, view.inputs)
        out = view.attention.out_proj
        output_terms = steps.context[0].abs() @ out.weight.abs().T + out.bias.abs()  # (T, D): Σ|terms| of out_proj
        output_bound = summation_error([*path, *attention_inner_sizes(D, head_dim, T, D)], output_terms)
        assert within(steps.output[0], outputs[n], output_bound)
        weight_bound = torch.stack([row_bounds[i][n] for i in range(T)], dim=1)  # (n_heads, T, 1): row t's bound
        assert within(steps.attn_weights[0], oracle_attention(inputs[n], t, n)[1], weight_bound)
    with torch.no_grad():
        ours = model(torch.tensor([IDS]))[0]  # (T, V)
    for t in range(len(IDS)):  # each row within float32's bound for its own text (measured 2e-6, bound 9e-4)
        assert ((ours[t] - logits[t]).abs() <= rounding_bounds(model, IDS[: t + 1]).logits).all(), t


def test_hugging_face_safetensors_matches_gpt2_computed_from_its_tensors(tmp_path):
    t = hf_tensors()
    path = tmp_path / "model.safetensors"
    save_file(t, str(path))
    model = load_gpt2(path, n_heads=HEADS)
    assert model.cfg.qkv_bias and model.cfg.tie_weights
    assert (model.cfg.n_layers, model.cfg.emb_dim, model.cfg.context_length) == (LAYERS, D, CONTEXT)
    assert_matches_oracle(model, t)


def test_transformer_prefix_and_mask_buffers_are_accepted(tmp_path):
    t = hf_tensors(1)
    prefixed = {"transformer." + k: v for k, v in t.items()}
    prefixed |= {f"transformer.h.{n}.attn.bias": torch.ones(1, 1, CONTEXT, CONTEXT).tril() for n in range(LAYERS)}
    prefixed["lm_head.weight"] = t["wte.weight"].clone()
    path = tmp_path / "model.safetensors"
    save_file(prefixed, str(path))
    assert_matches_oracle(load_gpt2(path, n_heads=HEADS), t)


def test_the_books_pth_state_dict_loads_with_its_mask_and_untied_head(tmp_path):
    t = hf_tensors(2)
    hf_path = tmp_path / "model.safetensors"
    save_file(t, str(hf_path))
    state = load_gpt2(hf_path, n_heads=HEADS).state_dict()
    state["out_head.weight"] = t["wte.weight"].clone()  # the book's model keeps its own out_head
    for n in range(LAYERS):
        state[f"trf_blocks.{n}.att.mask"] = torch.triu(torch.ones(CONTEXT, CONTEXT), diagonal=1)  # the book's float
    pth = tmp_path / "gpt2-small.pth"
    torch.save(state, pth)
    model = load_gpt2(pth, n_heads=HEADS)
    assert not model.cfg.tie_weights
    assert_matches_oracle(model, t)


def test_the_books_model_and_optimizer_file_loads(tmp_path):
    cfg = GPTConfig(vocab_size=VOCAB, context_length=CONTEXT, emb_dim=D, n_heads=HEADS, n_layers=LAYERS)
    torch.manual_seed(0)
    original = GPTModel(cfg).eval()
    pth = tmp_path / "model_and_optimizer.pth"
    torch.save({"model_state_dict": original.state_dict(), "optimizer_state_dict": {}}, pth)
    model = load_gpt2(pth, n_heads=HEADS)
    ids = torch.tensor([IDS])
    with torch.no_grad():
        assert torch.equal(model(ids), original(ids))


def write_bad(tmp_path, kind: str):
    t = hf_tensors()
    if kind == "corrupt safetensors":
        path = tmp_path / "model.safetensors"
        save_file(t, str(path))
        path.write_bytes(path.read_bytes()[:200])
    elif kind == "corrupt pth":
        path = tmp_path / "model.pth"
        path.write_bytes(b"\x00not a checkpoint" * 10)
    elif kind == "pickled code":
        path = tmp_path / "model.pth"
        path.write_bytes(pickle.dumps(print, protocol=2))
    elif kind == "missing key":
        del t["h.1.mlp.c_fc.bias"]
        path = tmp_path / "model.safetensors"
        save_file(t, str(path))
    elif kind == "wrong shape":
        t["h.0.attn.c_attn.weight"] = torch.zeros(D, 2 * D)
        path = tmp_path / "model.safetensors"
        save_file(t, str(path))
    elif kind == "not gpt-2":
        path = tmp_path / "model.safetensors"
        save_file({"encoder.weight": torch.zeros(3, 3)}, str(path))
    return path


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("corrupt safetensors", "corrupt"),
        ("corrupt pth", "corrupt"),
        ("pickled code", "could not be read"),
        ("missing key", "h.1.mlp.c_fc.bias"),
        ("wrong shape", "c_attn.weight has shape"),
        ("not gpt-2", "neither"),
    ],
)
def test_a_bad_file_gives_a_clear_message_and_no_exception(tmp_path, kind, words):
    path = write_bad(tmp_path, kind)
    with pytest.raises(ValueError, match=words):
        load_gpt2(path, n_heads=HEADS)
    result = gpt2_from_environment({CHECKPOINT_VARIABLE: str(path)})
    assert not result.ok and result.model is None
    assert words in result.message and result.message.startswith("GPT-2 weights not loaded")


def test_a_wrong_shape_in_the_books_layout_names_the_tensor(tmp_path):
    cfg = GPTConfig(vocab_size=VOCAB, context_length=CONTEXT, emb_dim=D, n_heads=HEADS, n_layers=LAYERS)
    state = GPTModel(cfg).state_dict()
    state["trf_blocks.1.ff.layers.0.weight"] = torch.zeros(3, D)
    pth = tmp_path / "model.pth"
    torch.save(state, pth)
    with pytest.raises(ValueError, match=r"trf_blocks\.1\.ff\.layers\.0\.weight has shape \(3, 32\)"):
        load_gpt2(pth, n_heads=HEADS)


def test_environment_variable_unset_or_pointing_nowhere(tmp_path):
    unset = gpt2_from_environment({})
    assert not unset.ok and CHECKPOINT_VARIABLE in unset.message
    missing = gpt2_from_environment({CHECKPOINT_VARIABLE: str(tmp_path / "absent.safetensors")})
    assert not missing.ok and "no file" in missing.message
    folder = gpt2_from_environment({CHECKPOINT_VARIABLE: str(tmp_path)})
    assert not folder.ok and "not a file" in folder.message


def test_environment_variable_loads_a_good_file_once(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file(hf_tensors(), str(path))
    first = gpt2_from_environment({CHECKPOINT_VARIABLE: str(path)})
    assert first.ok, first.message
    assert first.model.cfg.n_heads == 1  # emb_dim // 64, at least 1: GPT-2's 64-wide heads
    assert gpt2_from_environment({CHECKPOINT_VARIABLE: str(path)}).model is first.model
