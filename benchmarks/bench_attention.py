"""Time chapter-3 attention, from the book's per-query loop to PyTorch's fused kernel.

Every implementation gets the same input and, where it has parameters, the
same ones (``torch.manual_seed(123)``), runs in eval mode under
``torch.inference_mode()``, and is timed in the same run as
``torch.nn.MultiheadAttention(need_weights=True, average_attn_weights=False)``,
the reference for every ratio.

Usage (the command behind BENCHMARKS.md)::

    python benchmarks/bench_attention.py --sizes toy,classroom,gpt2 --repeats 7 \\
        --device cpu --threads 2 --markdown BENCHMARKS.md

What the figures are:

* **median**: the median time of one call over ``--repeats`` rounds. Each
  round calls every implementation once, in turn, so a burst of load from
  another process slows them all alike instead of one of them; the order is
  shuffled each round (with a fixed seed), so that no implementation always
  follows the same one (after a trace frees 1.7 GB, say). Calls shorter
  than 20 ms are repeated within a sample and averaged.
* **× nn.MHA**: that median divided by the reference's median, same run.
* **peak memory**: on CPU, the extra resident memory at the peak of one call
  (the call's output included, the input and parameters not). A fresh Python
  process per implementation builds it, calls it once to warm up, resets the
  kernel's high-water mark (``/proc/self/clear_refs``), calls it again and
  reports ``VmHWM`` minus the ``VmRSS`` before that call. This sees every
  page that torch touches, which ``tracemalloc`` does not. The process runs
  with ``MALLOC_MMAP_THRESHOLD_=0``, so that malloc gives every block fresh
  pages and returns them on free, instead of reusing memory kept from the
  warm-up call where the high-water mark cannot see it; each block is
  rounded up to whole 4 KiB pages. The kernel updates these counters lazily,
  per thread, so figures under about 0.5 MiB are noise. On CUDA,
  ``torch.cuda.max_memory_allocated()`` minus the memory allocated before the call.
* **start-up**: the wall time of ``python -c "import attention"`` next to
  ``import torch`` alone, and ``-X importtime``'s split of it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import attention  # noqa: E402 (after the path is set)

REFERENCE = "nn.MultiheadAttention, weights"
MIN_SAMPLE_S = 0.02
SEED = 123


@dataclass(frozen=True)
class Size:
    """One problem size. Every module maps d_model to d_model, as ``nn.MultiheadAttention`` does."""

    name: str
    batch: int  # b
    num_tokens: int  # T, also the modules' context_length
    d_model: int  # d_in = d_out
    num_heads: int  # h; head_dim = d_model // num_heads

    def describe(self) -> str:
        return f"b={self.batch}, T={self.num_tokens}, d={self.d_model}, h={self.num_heads}"


SIZES = {
    "toy": Size("toy", 2, 6, 3, 3),  # the book's six 3-d vectors, twice
    "classroom": Size("classroom", 1, 64, 768, 12),  # one sentence at GPT-2's width
    "gpt2": Size("gpt2", 8, 1024, 768, 12),  # a batch of full GPT-2 contexts
}


def per_sequence(function: Callable, x: torch.Tensor) -> Callable[[], list]:
    """The stage-3 functions take one (T, d_in) sequence, so they loop over the batch."""
    return lambda: [function(sequence) for sequence in x]


def sdpa_composition(torch_mha: torch.nn.MultiheadAttention, x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The plainest PyTorch route: one fused projection, the fused kernel, the output projection."""
    b, T, d = x.shape
    qkv = F.linear(x, torch_mha.in_proj_weight, torch_mha.in_proj_bias)  # (b, T, 3 * d)
    queries, keys, values = (
        part.view(b, T, num_heads, d // num_heads).transpose(1, 2) for part in qkv.chunk(3, dim=-1)
    )  # (b, h, T, head_dim) each
    context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)  # (b, h, T, head_dim)
    context = context.transpose(1, 2).reshape(b, T, d)  # (b, T, d)
    return F.linear(context, torch_mha.out_proj.weight, torch_mha.out_proj.bias)  # (b, T, d)


# name -> (stage, whether its output must equal MultiHeadAttention's, sizes it runs at or None for all)
IMPLEMENTATIONS = {
    "per-query loop": ("3, simplified", False, {"toy"}),
    "simplified, vectorized": ("3, simplified", False, None),
    "SelfAttention_v2": ("4, one head, no mask", False, None),
    "CausalAttention": ("5, one causal head", False, None),
    "MultiHeadAttentionWrapper": ("7, heads one by one", False, None),
    "MultiHeadAttention": ("7", True, None),
    "trace(MultiHeadAttention)": ("8, every step kept", True, None),
    "fast_multihead": ("9, fused kernel", True, None),
    REFERENCE: ("PyTorch", True, None),
    "nn.MultiheadAttention, no weights": ("PyTorch", True, None),
    "F.scaled_dot_product_attention": ("PyTorch", True, None),
}


def make_call(name: str, size: Size, device: torch.device) -> Callable[[], object]:
    """Build one implementation for ``size`` on ``device``; return a call that runs it once."""
    b, T, d, h = size.batch, size.num_tokens, size.d_model, size.num_heads
    x = torch.rand(b, T, d, generator=torch.Generator().manual_seed(SEED)).to(device)  # (b, T, d)
    build = attention.build
    if name == "per-query loop":
        return per_sequence(attention.attention_loop, x)
    if name == "simplified, vectorized":
        return per_sequence(attention.simplified_attention, x)
    if name == "SelfAttention_v2":
        module = build(attention.SelfAttention_v2, SEED, d, d).to(device)
        return lambda: module(x)
    if name == "CausalAttention":
        module = build(attention.CausalAttention, SEED, d, d, T, 0.0).to(device)
        return lambda: module(x)
    if name == "MultiHeadAttentionWrapper":
        module = build(attention.MultiHeadAttentionWrapper, SEED, d, d // h, T, 0.0, num_heads=h).to(device)
        return lambda: module(x)
    mha = build(attention.MultiHeadAttention, SEED, d, d, T, 0.0, num_heads=h).to(device)
    if name == "MultiHeadAttention":
        return lambda: mha(x)
    if name == "trace(MultiHeadAttention)":
        return lambda: attention.trace(mha, x).output
    if name == "fast_multihead":
        return lambda: attention.fast_multihead(mha, x)
    torch_mha = attention.to_torch_multihead(mha).to(device).eval()
    mask = attention.causal_mask(T).to(device)  # (T, T)
    if name == REFERENCE:
        return lambda: torch_mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)[0]
    if name == "nn.MultiheadAttention, no weights":
        return lambda: torch_mha(x, x, x, attn_mask=mask, need_weights=False, is_causal=True)[0]
    if name == "F.scaled_dot_product_attention":
        return lambda: sdpa_composition(torch_mha, x, h)
    raise ValueError(f"Unknown implementation {name!r}.")


def names_for(size: Size) -> list[str]:
    return [name for name, (_, _, sizes) in IMPLEMENTATIONS.items() if sizes is None or size.name in sizes]


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_round_robin(calls: dict[str, Callable], repeats: int, device: torch.device) -> dict[str, list[float]]:
    """Seconds per call: ``repeats`` samples each, every implementation once per round, in a shuffled order."""
    numbers = {}
    for name, call in calls.items():
        call()  # warm-up
        synchronize(device)
        start = time.perf_counter()
        call()
        synchronize(device)
        numbers[name] = max(1, min(1000, round(MIN_SAMPLE_S / max(time.perf_counter() - start, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for round_number in range(repeats):
        for name in random.Random(round_number).sample(list(calls), len(calls)):
            call = calls[name]
            synchronize(device)
            start = time.perf_counter()
            for _ in range(numbers[name]):
                call()
            synchronize(device)
            samples[name].append((time.perf_counter() - start) / numbers[name])
    return samples


def check_outputs(calls: dict[str, Callable]) -> dict[str, bool]:
    """Whether each implementation that should equals ``MultiHeadAttention``'s output (to 1e-4)."""
    expected = calls["MultiHeadAttention"]()
    return {
        name: torch.allclose(calls[name](), expected, atol=1e-4, rtol=1e-4)
        for name, (_, must_match, _) in IMPLEMENTATIONS.items()
        if must_match and name in calls
    }


def status_kib(field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in KiB."""
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"/proc/self/status has no {field}.")
    return int(match.group(1))


def probe_memory(size: Size, name: str, device: torch.device) -> float:
    """Extra MiB at the peak of one call (see the module docstring). CPU: run in a fresh process."""
    call = make_call(name, size, device)
    with torch.inference_mode():
        call()  # warm-up: lazy initialization is not the call's memory
        synchronize(device)
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            call()
            synchronize(device)
            return (torch.cuda.max_memory_allocated(device) - before) / 2**20
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        before = status_kib("VmRSS")
        call()
        return max(0, status_kib("VmHWM") - before) / 1024


def memory_in_subprocess(size: Size, name: str, threads: int) -> float | None:
    command = [sys.executable, __file__, "--probe", size.name, name, "--device", "cpu", "--threads", str(threads)]
    malloc_every_block_fresh = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "0"}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=malloc_every_block_fresh)
    if result.returncode != 0:
        print(f"memory probe for {name} failed:\n{result.stderr}", file=sys.stderr)
        return None
    return json.loads(result.stdout)["peak_mib"]


@dataclass(frozen=True)
class SizeResult:
    size: Size
    samples: dict[str, list[float]]
    peak_mib: dict[str, float | None]
    matches: dict[str, bool]
    failed: dict[str, str]  # name -> the error it raised

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def ratio(self, name: str, to: str = REFERENCE) -> float:
        return self.median(name) / self.median(to) if to in self.samples else float("nan")


def run_size(size: Size, repeats: int, device: torch.device, threads: int, memory: bool) -> SizeResult:
    names = names_for(size)
    print(f"{size.name} ({size.describe()}): building {len(names)} implementations", file=sys.stderr)
    calls, failed = {}, {}
    for name in names:
        try:
            calls[name] = make_call(name, size, device)
            with torch.inference_mode():
                calls[name]()
        except Exception as error:  # one broken implementation must not stop the run
            calls.pop(name, None)
            failed[name] = f"{type(error).__name__}: {error}"
            print(f"{name} failed at {size.name}: {failed[name]}", file=sys.stderr)
    with torch.inference_mode():
        matches = check_outputs(calls)
        samples = time_round_robin(calls, repeats, device)
    peak_mib: dict[str, float | None] = {}
    working = list(calls)
    del calls
    for name in working if memory else []:
        if device.type == "cuda":
            peak_mib[name] = probe_memory(size, name, device)
        else:
            peak_mib[name] = memory_in_subprocess(size, name, threads)
    return SizeResult(size, samples, peak_mib, matches, failed)


def import_seconds(statement: str, runs: int = 3) -> float:
    """Median wall time of a fresh ``python -c statement``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], cwd=REPO, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def startup() -> dict[str, float]:
    """Wall times of fresh interpreters, and -X importtime's cumulative split of ``import attention``."""
    report = {
        "python": import_seconds("pass"),
        "import torch": import_seconds("import torch"),
        "import attention": import_seconds("import attention"),
    }
    trace = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import attention"], cwd=REPO, capture_output=True, text=True
    ).stderr
    cumulative: dict[str, int] = {}
    own = 0
    for line in trace.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if match is None:
            continue
        self_us, cumulative_us, module = int(match.group(1)), int(match.group(2)), match.group(4)
        cumulative.setdefault(module, cumulative_us)
        if module == "attention" or module.startswith("attention."):
            own += self_us
    report["importtime: torch"] = cumulative.get("torch", 0) / 1e6
    report["importtime: tiktoken"] = cumulative.get("tiktoken", 0) / 1e6
    report["importtime: attention's own modules"] = own / 1e6
    report["importtime: attention in all"] = cumulative.get("attention", 0) / 1e6
    return report


def machine(device: torch.device, threads: int) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        cpu = re.search(r"Model name:\s+(.+)", lscpu).group(1).strip()
    except (OSError, subprocess.CalledProcessError, AttributeError):
        pass
    try:
        mem_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        memory = f", {mem_kib / 2**20:.0f} GiB RAM"
    except (OSError, AttributeError):
        memory = ""
    text = (
        f"{cpu}, {os.cpu_count()} logical CPUs ({len(os.sched_getaffinity(0))} usable by this run){memory}; "
        f"{platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, torch {torch.__version__}, torch.get_num_threads() = {threads}"
    )
    if device.type == "cuda":
        text += f"; GPU: {torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda}"
    return text


def load_average() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3]) + " (1, 5, 15 min)"
    except OSError:
        return "unavailable"


def milliseconds(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def table(result: SizeResult) -> list[str]:
    lines = [
        f"#### {result.size.name}: {result.size.describe()}",
        "",
        "| implementation | stage | median ms | min ms | × nn.MHA (weights) | peak extra MiB | output = MHA |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for name, samples in result.samples.items():
        peak = result.peak_mib.get(name)
        peak_text = "n/a" if peak is None else f"{peak:.2f}" if peak < 10 else f"{peak:.0f}"
        match = {True: "yes", False: "**no**"}.get(result.matches.get(name), "")
        lines.append(
            f"| {name} | {IMPLEMENTATIONS[name][0]} | {milliseconds(result.median(name))} | "
            f"{milliseconds(min(samples))} | {result.ratio(name):.2f} | {peak_text} | {match} |"
        )
    lines += [
        f"| {name} | {IMPLEMENTATIONS[name][0]} | failed: {error} | | | | |" for name, error in result.failed.items()
    ]
    return [*lines, ""]


def targets(result: SizeResult) -> list[str]:
    checks = [
        ("trace(MultiHeadAttention)", REFERENCE, 1.0, "trace, every intermediate kept"),
        ("MultiHeadAttention", REFERENCE, 1.0, "MultiHeadAttention.forward"),
        ("fast_multihead", "F.scaled_dot_product_attention", 1.1, "fast path"),
    ]
    lines = [f"Targets at {result.size.name} scale, ratios of medians from this run:", ""]
    for name, to, limit, label in checks:
        ratio = result.ratio(name, to)
        verdict = "met" if ratio <= limit else "**not met**"
        lines.append(f"- {label}: {ratio:.2f}× {to} (target ≤ {limit:.1f}×): {verdict}")
    return [*lines, ""]


def section(label: str, command: str, header: list[str], results: list[SizeResult], start: dict) -> str:
    lines = [f"<!-- bench_attention:{label}:start -->", f"### {label}", "", *header, ""]
    lines += [f"Command: `{command}`", ""]
    for result in results:
        lines += table(result)
        if result.size.name == "gpt2":
            lines += targets(result)
    if start:
        lines += ["#### Start-up (fresh interpreters, median of 3)", ""]
        lines += [f"- {label}: {seconds * 1000:.0f} ms" for label, seconds in start.items()]
        lines.append("")
    lines.append(f"<!-- bench_attention:{label}:end -->")
    return "\n".join(lines)


def write_markdown(path: Path, label: str, block: str) -> None:
    """Put ``block`` into ``path``'s package section, replacing the previous block of the same label."""
    heading = "## Package: attention implementations"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(
        rf"<!-- bench_attention:{re.escape(label)}:start -->.*?<!-- bench_attention:{re.escape(label)}:end -->",
        re.DOTALL,
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    elif heading in text:
        ends = list(re.finditer(r"<!-- bench_attention:[^>]*:end -->", text))
        at = ends[-1].end() if ends else text.index(heading) + len(heading)
        text = f"{text[:at]}\n\n{block}{text[at:]}"
    else:
        text = f"{text.rstrip()}\n\n{heading}\n\n{block}\n"
    path.write_text(text)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="toy,classroom,gpt2", help=f"comma-separated, from {', '.join(SIZES)}")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch.set_num_threads")
    parser.add_argument("--markdown", type=Path, help="write the results into this file's package section")
    parser.add_argument("--label", help="the results' heading in the markdown file (default: CPU or CUDA)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory probes")
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up measurement")
    parser.add_argument("--probe", nargs=2, metavar=("SIZE", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = [name for name in args.sizes.split(",") if name not in SIZES]
    if unknown:
        parser.error(f"unknown sizes {unknown}; choose from {', '.join(SIZES)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no GPU")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(
        "cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu"
    )
    if args.probe:
        size_name, name = args.probe
        print(json.dumps({"peak_mib": probe_memory(SIZES[size_name], name, device)}))
        return
    command = "python " + " ".join([str(Path(__file__).relative_to(REPO)), *(argv or sys.argv[1:])])
    load_before = load_average()
    results = [
        run_size(SIZES[name], args.repeats, device, args.threads, memory=not args.no_memory)
        for name in args.sizes.split(",")
    ]
    header = [
        f"Machine: {machine(device, args.threads)}.",
        f"Load average before: {load_before}; after: {load_average()}.",
        f"Run at {time.strftime('%Y-%m-%d %H:%M %Z')}, {args.repeats} rounds.",
    ]
    start = {} if args.no_startup else startup()
    label = args.label or device.type.upper()
    block = section(label, command, header, results, start)
    print(block)
    if args.markdown:
        write_markdown(args.markdown, label, block)


if __name__ == "__main__":
    main()
