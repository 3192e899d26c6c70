"""In-process A/B timings of the fixes proposed in BENCHMARKS.md's "App at scale" section.

Usage::

    python benchmarks/app_scale_ab.py

Each line times two ways of doing one thing, alternating between the two arms, so both see the
same machine load (the load average is printed with each line). The "after" arms are
prototypes of the proposed changes, written here; the app itself is not changed.
"""

from __future__ import annotations

import gc
import logging
import os
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if "TIKTOKEN_CACHE_DIR" not in os.environ and Path("/work/shared/tiktoken_cache").is_dir():
    os.environ["TIKTOKEN_CACHE_DIR"] = "/work/shared/tiktoken_cache"

import numpy as np  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import plotly.io as pio  # noqa: E402
import streamlit  # noqa: E402, F401
import torch  # noqa: E402

logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.ERROR)  # "No runtime found"

import attention  # noqa: E402
from attention import bahdanau  # noqa: E402
from explorer import compute, figures, ui  # noqa: E402, F401

T = 1024


def ab(label: str, arms: dict[str, Callable], repeats: int = 5) -> None:
    times: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(repeats):
        for name, arm in arms.items():
            start = time.perf_counter()
            arm()
            times[name].append(time.perf_counter() - start)
    cells = "  ".join(f"{name}: {1000 * statistics.median(t):.1f} ms" for name, t in times.items())
    print(f"{label}: {cells} (load {os.getloadavg()[0]:.1f})", flush=True)


def contrast_chunked(inputs: torch.Tensor, attention_size: int = 16, seed: int = 123, chunk: int = 128):
    """``self_attention_contrast``'s additive scores, ``chunk`` queries at a time instead of one."""
    x = inputs.detach().to(torch.float32, copy=True)
    d_in = x.shape[1]
    generator = torch.Generator().manual_seed(seed)
    W_a = bahdanau._uniform(generator, (attention_size, d_in), d_in**-0.5)
    U_a = bahdanau._uniform(generator, (attention_size, d_in), d_in**-0.5)
    v_a = bahdanau._uniform(generator, (attention_size,), attention_size**-0.5)
    queries, keys = x @ W_a.T, x @ U_a.T
    return torch.cat([bahdanau.additive_scores(queries[i : i + chunk], keys, v_a) for i in range(0, len(x), chunk)])


def stacked_capped(contributions, pieces, keep: int = 24, **options):
    """``stacked_contributions`` with the ``keep - 1`` largest tokens and the rest summed into one trace."""
    data = np.asarray(contributions)
    order = np.argsort(-np.abs(data).sum(axis=1))
    top = np.sort(order[: keep - 1])
    rest = np.setdiff1d(np.arange(len(data)), top)
    merged = np.vstack([data[top], data[rest].sum(axis=0, keepdims=True)])
    labels = [pieces[j] for j in top] + [f"other {len(rest)} tokens"]
    return figures.stacked_contributions(merged, labels, **options)


def main() -> None:
    x = attention.embed_tokens(list(range(2000, 2000 + T)), 3, 123)  # (T, 3)
    pieces = [f" w{i}" for i in range(T)]

    # Why attention (finding 3 and 2)
    difference = (contrast_chunked(x) - attention.self_attention_contrast(x).additive_scores).abs().max()
    print(f"self_attention_contrast, chunked vs one query at a time: max |difference| {float(difference)}")
    ab(
        f"self_attention_contrast T={T}",
        {
            "one query at a time": lambda: attention.self_attention_contrast(x),
            "128 at a time": lambda: contrast_chunked(x),
        },
    )
    ab(
        f"encoder_decoder T={T}",
        {
            f"{T} decoder steps": lambda: attention.encoder_decoder(x, hidden_size=16),
            "64 decoder steps": lambda: attention.encoder_decoder(x, hidden_size=16, num_decoder_steps=64),
        },
        repeats=3,
    )
    threads = torch.get_num_threads()
    for count in (threads, 1):
        torch.set_num_threads(count)
        ab(
            f"why_view's computation, {count} torch thread(s)",
            {
                "encoder_decoder + self_attention_contrast": lambda: (
                    attention.encoder_decoder(x),
                    attention.self_attention_contrast(x),
                )
            },
            repeats=3,
        )
    torch.set_num_threads(threads)

    # st.cache_data's pickling of mask_view's result (finding 5)
    module = attention.build(attention.CausalAttention, 123, 3, 2, 1024, 0.0)
    trace = attention.trace(module, x)
    steps = {name: t.numpy() for name, t in trace.tensors().items() if name != "module"}
    routes = attention.compare_masking(trace.scaled_scores[0, 0])
    names = ("unmasked_weights", "mask", "masked_scores", "weights_neg_inf", "weights_renormalized")
    view = {"steps": steps, **{name: getattr(routes, name).numpy() for name in names}}
    size = sum(a.nbytes for a in steps.values()) + sum(view[name].nbytes for name in names)
    print(f"mask_view's result at T={T}: {size / 2**20:.0f} MiB of arrays")
    ab(
        "cache_data store + load of mask_view's result",
        {"pickle dumps + loads": lambda: pickle.loads(pickle.dumps(view, protocol=5)), "cache_resource": lambda: view},
    )

    # stacked_contributions with one trace per token (finding 4)
    weights = torch.softmax(x @ x.T, dim=-1)
    contributions = attention.context_contributions(x, weights, 1).numpy()
    every = figures.stacked_contributions(contributions, pieces, title="t")
    capped = stacked_capped(contributions, pieces, title="t")
    ab(
        f"stacked_contributions T={T}, built and serialized",
        {
            f"{T} traces": lambda: pio.to_json(figures.stacked_contributions(contributions, pieces, title="t")),
            "24 traces": lambda: pio.to_json(stacked_capped(contributions, pieces, title="t")),
        },
        repeats=3,
    )
    print(f"  JSON: {len(pio.to_json(every)):,} bytes with {T} traces, {len(pio.to_json(capped)):,} with 24")

    # building heatmaps and copying them (finding 6)
    for size in (64, T):
        z = np.random.default_rng(0).random((size, size))
        mask = np.triu(np.ones((size, size), dtype=bool), 1)
        fig = figures.heatmap(z, pieces[:size], pieces[:size], title="t", masked=mask)
        spec = fig.to_plotly_json()
        ab(
            f"heatmap T={size}",
            {
                "figures.heatmap": lambda z=z, mask=mask, size=size: figures.heatmap(
                    z, pieces[:size], pieces[:size], title="t", masked=mask
                ),
                "one go.Figure(data, layout)": lambda spec=spec: go.Figure(
                    data=[go.Heatmap(spec["data"][0])], layout=spec["layout"]
                ),
                "without_cell_text (no text to remove)": lambda fig=fig: figures.without_cell_text(fig),
            },
            repeats=7,
        )

    # the post-run collection (finding 1)
    ab("gc.collect(2) with the app's modules imported", {"collect": lambda: gc.collect(2)})
    gc.collect()
    gc.freeze()
    ab("gc.collect(2) after gc.freeze()", {"collect": lambda: gc.collect(2)})


if __name__ == "__main__":
    main()
