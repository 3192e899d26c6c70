"""How far apart two correct float32 forward passes can be, stage by stage: "agrees to float32 precision".

The reader's code and the package's may sum in another order (``x @ W.T``
against ``nn.Linear``, one head at a time against all at once). Two orders of
a sum of n products differ by at most ``n · eps · Σ|terms|`` (Higham,
*Accuracy and Stability of Numerical Algorithms*, section 3.1: each is within
``γ_n ≈ n · eps / 2`` of the exact sum). ``tests/tolerances.py`` holds the same
bound for the tests. Each stage adds its own sums to what the stages before
it moved, to first order, measured at the terms' largest sizes:

- queries, keys, values: ``d_in`` products, ``δ_p = d_in · eps · max(|x| @ |W|ᵀ + |bias|)``;
- scores: a change of δ_p in q or k moves ``q · k`` by ``δ_p · (Σ|q_i| + Σ|k_i|)``, and its
  ``head_dim`` products add ``head_dim · eps · Σ|q_i k_i|``; then divided by √head_dim;
- attention weights: a softmax moves a weight by at most twice its row's largest score
  change, plus its own rounding (an exp and a sum of num_tokens terms, under (num_tokens + 2) eps);
- dropped weights: the same times 1/(1 − p), the factor dropout multiplies by;
- context vectors: each of the num_tokens weights' change times the largest value, the weights'
  sum times δ_p, and the sum's own ``num_tokens · eps · Σ|w_j v_j|``;
- output: the context's change through ``Σ|W_out|`` of a row, and ``d_out`` more products.

Every bound is one number per stage, at its largest terms: looser for small entries, and still
thousands of times below what a mistaken line changes (the tests measure that).
"""

from __future__ import annotations

import torch

EPS32 = torch.finfo(torch.float32).eps  # 1.19e-7: float32's spacing at 1


def precision(dtype: torch.dtype) -> tuple[float, str]:
    """The eps the bounds use and the words for it: float32's, or a coarser dtype's own."""
    eps = torch.finfo(dtype).eps
    return (eps, str(dtype).removeprefix("torch.")) if eps > EPS32 else (EPS32, "float32")


def _largest(tensor: torch.Tensor) -> float:
    """The largest finite entry, 0 for none: NaN and ±inf (a mistake's) take no part in a scale."""
    finite = tensor[tensor.isfinite()]
    return float(finite.max()) if finite.numel() else 0.0


def stage_bounds(
    x: torch.Tensor,
    projections: list[tuple[torch.Tensor, torch.Tensor | None]],
    out_proj: tuple[torch.Tensor, torch.Tensor | None] | None,
    stages: dict[str, torch.Tensor],
    *,
    eps: float,
    score_divisor: float,
    rescale: float,
) -> dict[str, float]:
    """The largest difference rounding allows at each stage of one forward pass (absolute, every entry).

    ``projections``: each (weight (out, in), bias) of W_query, W_key, W_value (every head's);
    ``out_proj`` the same for ``out_proj``, None without one. ``stages``: the pass's queries, keys,
    values, attention and dropped weights and context vectors, laid out as ``reading`` lays them out.
    ``score_divisor`` is √head_dim (1 covers the scaling mistakes too); ``rescale`` is 1/(1 − p)
    where dropout is on, else 1.

    Shapes: x (b, num_tokens, d_in).
    """
    x = x.to("cpu", torch.float64).abs()
    d_in, num_tokens = x.shape[-1], x.shape[-2]
    terms = max(_largest(x @ w.abs().T + (0.0 if b is None else b.abs())) for w, b in projections)
    projection = d_in * eps * terms
    q, k, v = (stages[name].abs() for name in ("queries", "keys", "values"))  # (b, h, T, head_dim)
    head_dim = q.shape[-1]
    scores = projection * (_largest(q.sum(-1)) + _largest(k.sum(-1))) + head_dim * eps * _largest(q @ k.mT)
    weights = 2 * scores / score_divisor + (num_tokens + 2) * eps
    dropped = rescale * (weights + eps)
    d = stages["dropped_weights"].abs()  # (b, h, T, T)
    context = num_tokens * dropped * _largest(v) + _largest(d.sum(-1)) * projection
    context += num_tokens * eps * _largest(d @ v)
    bounds = {"queries": projection, "keys": projection, "values": projection, "mask": 0.0}
    bounds |= {"attn_weights": weights, "dropped_weights": dropped, "context": context, "output": context}
    if out_proj is not None:
        w, b = (t.to(torch.float64).abs() for t in out_proj)
        c = stages["context"].abs()  # (b, T, d_out)
        bounds["output"] = context * _largest(w.sum(1)) + w.shape[1] * eps * _largest(c @ w.T + b)
    return bounds
