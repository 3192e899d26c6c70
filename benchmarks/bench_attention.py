"""The command line over ``attention.measuring.speed.measure``: the Speed page's harness at any size, as a
markdown table.

Usage, from the repository root (BENCHMARKS.md's "The attention package" has the GPT-2-scale comparison's five
``--only``)::

    python -m benchmarks.bench_attention --size gpt2 --device cpu --threads 2 --repeats 7 --only fast_multihead

Without ``--only`` every implementation in ``attention.IMPLEMENTATIONS`` runs. ``attention/measuring/speed.py``'s
docstring says what the figures are; the load average before and after is printed with the table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time

import torch

from attention.measuring.speed import IMPLEMENTATIONS, MIB, SpeedResult, expected_attention_bytes, measure
from benchmarks.meter import cpu_model, load_text

SIZES = {  # name -> (batch b, sequence lengths T, d_model, num_heads)
    "toy": (2, (6,), 3, 3),  # the book's six 3-d tokens, twice
    "classroom": (1, (64,), 768, 12),  # one sentence at GPT-2's width
    "gpt2": (8, (1024,), 768, 12),  # a batch of full GPT-2 contexts
}
REFERENCE = "nn.MultiheadAttention"


def machine(threads: int, device: str) -> str:
    gpu = f"; GPU: {torch.cuda.get_device_name()}" if device == "cuda" else ""
    return (
        f"{cpu_model()}, {os.cpu_count()} logical CPUs ({len(os.sched_getaffinity(0))} usable); Python "
        f"{platform.python_version()}, torch {torch.__version__}, torch.get_num_threads() = {threads}{gpu}"
    )


def table(result: SpeedResult, reference: str) -> list[str]:
    lines = []
    for i, T in enumerate(result.num_tokens):
        one = expected_attention_bytes(result.batch_size, result.num_heads, T) / MIB
        lines += [f"#### b={result.batch_size}, T={T}, d={result.d_model}, h={result.num_heads}", ""]
        lines += [f"One (b, num_heads, T, T) float32 tensor: {one:,.3g} MiB.", ""]
        lines += [f"| implementation | median ms | × {reference} | peak MiB | × one tensor | max abs difference |"]
        lines += ["|---|---:|---:|---:|---:|---:|"]
        for name in result.implementations:
            ms, peak = result.time_ms[name][i], result.peak_memory_mib[name][i]
            ratio = result.ratio(name, reference)[i] if reference in result.implementations else float("nan")
            lines.append(
                f"| {name} | {ms:,.3g} | {ratio:.2f} | {peak:,.3g} | {peak / one:.2f} | "
                f"{result.max_abs_difference[name]:.1e} |"
            )
        lines.append("")
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=SIZES, default="classroom", help="b, T, d_model and num_heads together")
    parser.add_argument("--tokens", help="comma-separated sequence lengths T, instead of the size's")
    parser.add_argument("--only", action="append", choices=IMPLEMENTATIONS, help="an implementation (repeatable)")
    parser.add_argument("--reference", default=REFERENCE, choices=IMPLEMENTATIONS, help="what ratios divide by")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch.set_num_threads")
    parser.add_argument("--max-weights-mib", type=int, default=4096, help="the largest (b, h, T, T) tensor allowed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    batch, num_tokens, d_model, num_heads = SIZES[args.size]
    if args.tokens:
        num_tokens = tuple(int(T) for T in args.tokens.split(","))
    started = time.strftime("%Y-%m-%d %H:%M %Z")
    shape = {"d_model": d_model, "num_heads": num_heads, "batch_size": batch}
    options = {"repeats": args.repeats, "device": args.device, "max_weights_bytes": args.max_weights_mib * MIB}
    progress = lambda done, total, label: print(f"{done}/{total} {label}", file=sys.stderr)  # noqa: E731
    try:
        result = measure(args.only or list(IMPLEMENTATIONS), num_tokens, **shape, **options, on_progress=progress)
    except ValueError as error:
        sys.exit(f"bench_attention: {error}")
    command = shlex.join(["python", "-m", "benchmarks.bench_attention", *(sys.argv[1:] if argv is None else argv)])
    loads = f"Load average before: {load_text(result.load_before)}; after: {load_text(result.load_after)}."
    lines = [f"Command: `{command}`", "", f"Machine: {machine(args.threads, result.device)}."]
    lines += [f"Run at {started}, {args.repeats} rounds. {loads}", "", *table(result, args.reference)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
