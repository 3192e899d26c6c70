"""Server time to build Multi-head attention's grid of every layer and head (issue 25, scope 4).

``python -m benchmarks.every_head --repeats 7`` writes a GPT-2-small-shaped checkpoint of random numbers
(12 layers, 12 heads, width 768, 50,257 tokens; ``benchmarks.checkpoints``), loads it as the server would
(``ATTENTION_GPT2_CHECKPOINT``), and times, for a 30-token sentence, what one learner's first look at the
step costs the server:

* the numbers: the sentence's tokens, one pass through the model collecting every layer's attention weights
  and each head's summaries (``models.heads.every_head``, its caches cleared before each round);
* the figure: the labels, the 144 small multiples (``figures.head_grid``) and their JSON for the browser
  (``widgets.drawn.prepare``, what the shared figure cache does on a miss);
* a rerun: the same calls with everything cached, as a second look at the step or another learner's.

The small GPT (4 × 4) is timed the same way, both on one torch thread as the server runs them. The load
average before and after is printed with the table.
``--checkpoint PATH`` reuses a file written before.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.bench_attention import load
from benchmarks.checkpoints import write_gpt2
from benchmarks.machine import cpu_model, loadavg

SENTENCE_30 = (  # 30 GPT-2 tokens, as in tests/e2e/test_presenter.py
    "Attention lets every token in a sentence look back at the tokens before it, so that a model can weigh "
    "which of the earlier words matter most."
)


def one_look(settings, *, cold: bool) -> tuple[float, float, int]:
    """Seconds for the numbers and for the figure of the grid, and the figure's JSON size in bytes."""
    from explorer.figures import DEFAULT_STYLE
    from explorer.figures.head_grid import every_head_grid
    from explorer.models import heads, inputs
    from explorer.page_text import head_grid as words
    from explorer.widgets.drawn import FIGURES, shared

    if cold:
        heads._every_head.clear()
        inputs.layer_prepared.clear()
        FIGURES.clear()
    start = time.perf_counter()
    found = heads.every_head(settings)
    numbers = time.perf_counter()
    labels, details = words.head_labels(found.summaries)
    num_layers, num_heads = found.weights.shape[:2]
    title = words.grid_title(num_layers, num_heads)
    options = dict(title=title, current=(settings.layer, settings.head + 1), style=DEFAULT_STYLE)
    drawn = shared(every_head_grid, found.weights, labels, details, found.pieces, **options)
    done = time.perf_counter()
    return numbers - start, done - numbers, len(drawn.spec)


def measure(settings, repeats: int) -> dict:
    cold = [one_look(settings, cold=True) for _ in range(repeats)]
    warm = [one_look(settings, cold=False) for _ in range(repeats)]
    median = lambda values: statistics.median(values) * 1000  # noqa: E731  (ms)
    return {
        "numbers_ms": median([c[0] for c in cold]),
        "figure_ms": median([c[1] for c in cold]),
        "total_ms": median([c[0] + c[1] for c in cold]),
        "worst_ms": max(c[0] + c[1] for c in cold) * 1000,
        "rerun_ms": median([w[0] + w[1] for w in warm]),
        "json_mb": cold[0][2] / 1e6,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="rounds of each (default 7)")
    parser.add_argument("--checkpoint", type=Path, help="a GPT-2-shaped file written before (else one is made)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the server runs each script run (``explorer.runtime.server``)
    folder = tempfile.TemporaryDirectory()
    path = args.checkpoint
    if path is None:
        start = time.perf_counter()
        path = write_gpt2(Path(folder.name) / "model.safetensors")
        print(f"wrote a GPT-2-small-shaped checkpoint in {time.perf_counter() - start:.1f} s", flush=True)
    os.environ["ATTENTION_GPT2_CHECKPOINT"] = str(path)

    from explorer.models.choice import model
    from explorer.settings import GPT2, TEXT, TRAINED, Settings

    before = loadavg()
    rows = []
    for kind, name in ((GPT2, "GPT-2-shaped, 12 × 12"), (TRAINED, "small GPT, 4 × 4")):
        start = time.perf_counter()
        cfg = model(kind).cfg
        loaded = time.perf_counter() - start
        settings = Settings(weights=kind, source=TEXT, text=SENTENCE_30)
        found = measure(settings, args.repeats)
        rows.append(
            f"| {name} (width {cfg.emb_dim}) | {found['numbers_ms']:.0f} | {found['figure_ms']:.0f} | "
            f"**{found['total_ms']:.0f}** | {found['worst_ms']:.0f} | {found['rerun_ms']:.1f} | "
            f"{found['json_mb']:.2f} | {loaded:.1f} s |"
        )
    after = loadavg()
    print(f"\n{cpu_model()}, {os.cpu_count()} logical CPUs, torch threads {torch.get_num_threads()}")
    print(f"load average before {load(before)}, after {load(after)}; {args.repeats} rounds, medians\n")
    print("| model | numbers ms | figure ms | first look ms | worst ms | rerun ms | figure JSON MB | model load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    folder.cleanup()


if __name__ == "__main__":
    main()
