"""Your own GPT-2: load OpenAI's GPT-2 weights into the package's ``GPTModel``.

Chapter 5 of the book downloads GPT-2's weights and copies them into its
``GPTModel``. Readers end up with one of two files, and both load here:

* Hugging Face's ``model.safetensors``: keys ``wte.weight``, ``wpe.weight``,
  ``h.N.ln_1.weight``, ``h.N.attn.c_attn.weight``, ... (sometimes with a
  ``transformer.`` prefix). GPT-2's layers are ``Conv1D``, which computes
  ``x @ weight + bias``: each weight is stored (in, out), the transpose of an
  ``nn.Linear``'s. ``c_attn`` holds the query, key and value projections side
  by side, (d, 3d), and is split into ``W_query``, ``W_key`` and ``W_value``
  (with ``qkv_bias=True``); ``c_proj`` becomes ``out_proj``.
* The book's own state dict (``.pth``) of its ``GPTModel``, with the same key
  names as ``attention.after_chapter.gpt.GPTModel``.

Files are read with safetensors or ``torch.load(weights_only=True)``, which
refuse to run code. The server's operator names the file in the
``ATTENTION_GPT2_CHECKPOINT`` environment variable; ``gpt2_from_environment``
never raises, it returns a model or a message saying what is wrong.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import replace
from pathlib import Path

import torch

from ..constants import CHECKPOINT_VARIABLE, NO_CHECKPOINT, GPT2Checkpoint, checkpoint_named  # noqa: F401
from .gpt import GPT2_SMALL, GPTConfig, GPTModel, load_state_into

GPT2_HEAD_DIM = 64  # every GPT-2 size has 64-dimensional heads: 768 / 12, 1024 / 16, 1280 / 20, 1600 / 25
_HF_BUFFERS = re.compile(r"h\.\d+\.attn\.(bias|masked_bias)$|^lm_head\.weight$")


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor in a ``.safetensors`` or ``.pth``/``.pt``/``.bin`` file, without running pickled code.

    A ``.pth`` that holds ``{"model_state_dict": ...}`` (how chapter 5 saves
    model and optimizer together) gives that inner dictionary.
    """
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and isinstance(state.get("model_state_dict"), dict):
        state = state["model_state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError("The file does not hold a state dict: a dictionary of named tensors.")
    return state


def _require(tensors: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    if name not in tensors:
        raise ValueError(f"The checkpoint has no {name!r}; it is not a complete GPT-2.")
    return tensors[name]


def _num_layers(names, pattern: str) -> int:
    layers = {int(m.group(1)) for name in names if (m := re.match(pattern, name))}
    if not layers or layers != set(range(len(layers))):
        raise ValueError("The checkpoint's layers are not numbered 0, 1, 2, ...; it is not a complete GPT-2.")
    return len(layers)


def _heads(emb_dim: int, n_heads: int | None) -> int:
    return max(1, emb_dim // GPT2_HEAD_DIM) if n_heads is None else n_heads


_HF_PARTS = [
    f"{layer}.{kind}"
    for layer in ("ln_1", "ln_2", "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    for kind in ("weight", "bias")
]


def hf_to_book(tensors: dict[str, torch.Tensor], n_heads: int | None = None) -> tuple[GPTConfig, dict]:
    """Hugging Face GPT-2 tensors → the config and state dict of the book's ``GPTModel``.

    ``n_heads`` defaults to emb_dim // 64, GPT-2's head size (12 for 124M):
    the head count is not stored in the weights.
    """
    tensors = {name.removeprefix("transformer."): t for name, t in tensors.items()}
    tensors = {name: t for name, t in tensors.items() if not _HF_BUFFERS.search(name)}
    wte, wpe = _require(tensors, "wte.weight"), _require(tensors, "wpe.weight")
    (vocab_size, emb_dim), context_length = wte.shape, wpe.shape[0]
    n_layers = _num_layers(tensors, r"h\.(\d+)\.")
    cfg = replace(
        GPT2_SMALL,
        vocab_size=vocab_size,
        context_length=context_length,
        emb_dim=emb_dim,
        n_heads=_heads(emb_dim, n_heads),
        n_layers=n_layers,
    )
    state = {"tok_emb.weight": wte, "pos_emb.weight": wpe}
    for n in range(n_layers):
        hf, book = f"h.{n}.", f"trf_blocks.{n}."
        c_attn_weight = _require(tensors, hf + "attn.c_attn.weight")  # (d, 3d): Conv1D stores (in, out)
        c_attn_bias = _require(tensors, hf + "attn.c_attn.bias")  # (3d,)
        if c_attn_weight.shape != (emb_dim, 3 * emb_dim):
            raise ValueError(
                f"{hf}attn.c_attn.weight has shape {tuple(c_attn_weight.shape)}; "
                f"GPT-2 with width {emb_dim} needs {(emb_dim, 3 * emb_dim)}."
            )
        q_w, k_w, v_w = c_attn_weight.split(emb_dim, dim=1)  # 3 x (d, d)
        q_b, k_b, v_b = c_attn_bias.split(emb_dim, dim=0)  # 3 x (d,)
        state |= {
            book + "att.W_query.weight": q_w.T,  # (d, d): nn.Linear stores (out, in)
            book + "att.W_key.weight": k_w.T,
            book + "att.W_value.weight": v_w.T,
            book + "att.W_query.bias": q_b,
            book + "att.W_key.bias": k_b,
            book + "att.W_value.bias": v_b,
            book + "att.out_proj.weight": _require(tensors, hf + "attn.c_proj.weight").T,
            book + "att.out_proj.bias": _require(tensors, hf + "attn.c_proj.bias"),
            book + "ff.layers.0.weight": _require(tensors, hf + "mlp.c_fc.weight").T,
            book + "ff.layers.0.bias": _require(tensors, hf + "mlp.c_fc.bias"),
            book + "ff.layers.2.weight": _require(tensors, hf + "mlp.c_proj.weight").T,
            book + "ff.layers.2.bias": _require(tensors, hf + "mlp.c_proj.bias"),
            book + "norm1.scale": _require(tensors, hf + "ln_1.weight"),
            book + "norm1.shift": _require(tensors, hf + "ln_1.bias"),
            book + "norm2.scale": _require(tensors, hf + "ln_2.weight"),
            book + "norm2.shift": _require(tensors, hf + "ln_2.bias"),
        }
    state["final_norm.scale"] = _require(tensors, "ln_f.weight")
    state["final_norm.shift"] = _require(tensors, "ln_f.bias")
    known = {f"h.{n}.{part}" for n in range(n_layers) for part in _HF_PARTS} | {"wte.weight", "wpe.weight"}
    unexpected = sorted(set(tensors) - known - {"ln_f.weight", "ln_f.bias"})
    if unexpected:
        raise ValueError(f"The checkpoint has keys GPT-2 does not: {unexpected[:5]}.")
    return cfg, state


def book_config(state: dict[str, torch.Tensor], n_heads: int | None = None) -> GPTConfig:
    """The ``GPTConfig`` a state dict of the book's ``GPTModel`` was saved from, read off its shapes."""
    vocab_size, emb_dim = _require(state, "tok_emb.weight").shape
    context_length = _require(state, "pos_emb.weight").shape[0]
    return replace(
        GPT2_SMALL,
        vocab_size=vocab_size,
        context_length=context_length,
        emb_dim=emb_dim,
        n_heads=_heads(emb_dim, n_heads),
        n_layers=_num_layers(state, r"trf_blocks\.(\d+)\."),
        qkv_bias="trf_blocks.0.att.W_query.bias" in state,
        tie_weights="out_head.weight" not in state,
    )


def load_gpt2(path, n_heads: int | None = None) -> GPTModel:
    """A ``GPTModel`` holding a GPT-2 checkpoint in either layout, float32, eval mode.

    Raises a ``ValueError`` that says what is wrong with the file.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"There is no file at {path}.")
    try:
        tensors = read_tensors(path)
    except ValueError:
        raise
    except Exception as error:  # safetensors and unpickling raise many kinds; all mean an unreadable file
        raise ValueError(
            f"{path.name} could not be read as safetensors or as a weights-only PyTorch file "
            f"({type(error).__name__}); it may be corrupt or truncated."
        ) from error
    if any(name.removeprefix("transformer.").startswith("wte.") for name in tensors):
        cfg, state = hf_to_book(tensors, n_heads)
    elif "tok_emb.weight" in tensors:
        cfg, state = book_config(tensors, n_heads), tensors
    else:
        raise ValueError(
            f"{path.name} is neither Hugging Face's GPT-2 (no 'wte.weight') "
            "nor the book's GPTModel (no 'tok_emb.weight')."
        )
    if cfg.emb_dim % cfg.n_heads != 0:
        raise ValueError(f"emb_dim {cfg.emb_dim} does not split into {cfg.n_heads} heads.")
    with torch.random.fork_rng(devices=[]):
        model = GPTModel(cfg)
    return load_state_into(model, {name: t.to(torch.float32) for name, t in state.items()})


@functools.lru_cache(maxsize=2)
def _cached_load(path: str, mtime_ns: int, size: int) -> GPT2Checkpoint:
    try:
        model = load_gpt2(path)
    except ValueError as error:
        return GPT2Checkpoint(None, f"GPT-2 weights not loaded: {error}", path)
    except Exception as error:  # never let a bad file take the app down
        return GPT2Checkpoint(None, f"GPT-2 weights not loaded: {type(error).__name__}: {error}", path)
    cfg = model.cfg
    return GPT2Checkpoint(
        model, f"GPT-2 from {Path(path).name}: {cfg.n_layers} layers, {cfg.n_heads} heads, width {cfg.emb_dim}.", path
    )


def gpt2_from_environment(environ=None) -> GPT2Checkpoint:
    """Load the checkpoint named by ``ATTENTION_GPT2_CHECKPOINT``; never raises.

    The model is loaded once per file version (path, modification time, size)
    and shared: treat it as read-only.
    """
    environ = os.environ if environ is None else environ
    value = checkpoint_named(environ)
    if not value:
        return NO_CHECKPOINT
    path = Path(value).expanduser()
    try:
        stat = path.stat()
    except OSError:
        return GPT2Checkpoint(None, f"GPT-2 weights not loaded: there is no file at {path}.", str(path))
    if not path.is_file():
        return GPT2Checkpoint(None, f"GPT-2 weights not loaded: {path} is not a file.", str(path))
    return _cached_load(str(path), stat.st_mtime_ns, stat.st_size)
