"""GPT-2-shaped checkpoints made up of random numbers, for what needs GPT-2's sizes without its weights (they
cannot be downloaded here): Hugging Face's key names and layouts, as ``attention.after_chapter.gpt2`` reads
them. The tests import it, and so does ``python -m benchmarks.actions grid``.

``write_gpt2(path)`` writes GPT-2 small's shape (12 layers, 12 heads of 64, width 768, 50,257 tokens, a
context of 1,024); smaller ``vocab_size`` and ``context_length`` keep a test's file small with the same
layers and heads. The numbers are N(0, 0.02²), GPT-2's initialisation, with LayerNorm scales near 1."""

from __future__ import annotations

from pathlib import Path

import torch


def gpt2_tensors(
    *,
    layers: int = 12,
    emb_dim: int = 768,
    vocab_size: int = 50_257,
    context_length: int = 1_024,
    seed: int = 0,
    scale: float = 0.02,
    bias_scale: float = 0.02,
) -> dict[str, torch.Tensor]:
    """Random tensors under GPT-2's Hugging Face names; ``Conv1D`` weights are stored (in, out). Weights and
    embeddings are N(0, ``scale``²); biases, and LayerNorm scales' distance from 1, N(0, ``bias_scale``²)."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=scale):
        return torch.randn(*shape, generator=g) * scale

    def small(*shape):
        return rand(*shape, scale=bias_scale)

    d = emb_dim
    tensors = {"wte.weight": rand(vocab_size, d), "wpe.weight": rand(context_length, d)}
    tensors |= {"ln_f.weight": 1 + small(d), "ln_f.bias": small(d)}
    for n in range(layers):
        p = f"h.{n}."
        tensors |= {
            p + "ln_1.weight": 1 + small(d),
            p + "ln_1.bias": small(d),
            p + "attn.c_attn.weight": rand(d, 3 * d),  # (d_in, 3 * d_out): W_query, W_key, W_value side by side
            p + "attn.c_attn.bias": small(3 * d),
            p + "attn.c_proj.weight": rand(d, d),
            p + "attn.c_proj.bias": small(d),
            p + "ln_2.weight": 1 + small(d),
            p + "ln_2.bias": small(d),
            p + "mlp.c_fc.weight": rand(d, 4 * d),
            p + "mlp.c_fc.bias": small(4 * d),
            p + "mlp.c_proj.weight": rand(4 * d, d),
            p + "mlp.c_proj.bias": small(d),
        }
    return tensors


def write_gpt2(path: Path, **shape) -> Path:
    """``gpt2_tensors(**shape)`` as a ``model.safetensors`` at ``path``; returns ``path``."""
    from safetensors.torch import save_file

    save_file(gpt2_tensors(**shape), str(path))
    return Path(path)
