"""Hostile links against one server: its memory, and what another student waits meanwhile.

Usage, from the repository root (the "Hostile links" section of BENCHMARKS.md, which describes the scenarios)::

    python -m benchmarks.hostile                       # every scenario; JSON in artifacts/hostile/
    python -m benchmarks.hostile --scenarios multihead,three --flood 20 --flood-s 30 --settle-s 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time

from benchmarks.launch import ROOT, AppServer
from benchmarks.meter import loadavg, percentile
from benchmarks.protocol import Student, warm

CJK = "".join(chr(0x4E00 + (k * 7919) % 20000) for k in range(2000))  # 2,000 CJK characters
WORST = {"input": "text", "text": CJK, "d_in": "1024", "d_out": "1024", "heads": "16", "ctx": "1024"}
WORST |= {"p": "0.5", "mode": "train"}
PAGES = ("multihead", "batches", "causal_mask", "dropout", "qkv", "simplified", "why_attention", "mistakes")
URL_PATHS = {"why_attention": ""}  # the default page's URL path


class Memory(threading.Thread):
    """The server's RSS every 0.1 s; ``peak(since)`` is the largest since a moment."""

    def __init__(self, server: AppServer) -> None:
        super().__init__(daemon=True)
        self.server, self.samples, self.stopped = server, [], threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            self.samples.append((time.monotonic(), self.server.rss_mib()))

    def peak(self, since: float) -> float:
        return max(rss for t, rss in self.samples if t >= since)


class Light:
    """A student re-running a light page every 0.5 s; keeps each run's latency."""

    def __init__(self, base: str) -> None:
        self.student, self.latencies, self.errors, self.running = Student(base), [], [], True

    async def loop(self) -> None:
        await self.student.visit("tokens", {})
        while self.running:
            started = time.perf_counter()
            run = await self.student.edit()
            self.latencies.append(run.latency)
            if run.error:
                self.errors.append(run.error)
            await asyncio.sleep(max(0.0, 0.5 - (time.perf_counter() - started)))
        await self.student.close()

    def summary(self, since: int = 0) -> dict:
        values = self.latencies[since:]
        figures = {"p50_s": statistics.median, "p95_s": lambda v: percentile(v, 95), "max_s": max}
        return {"runs": len(values), **{key: round(f(values), 3) if values else None for key, f in figures.items()}}


async def open_link(base: str, page: str, seed: int) -> dict:
    student = Student(base)
    run = await student.visit(URL_PATHS.get(page, page), WORST | {"seed": str(seed)})
    await student.close()
    return {"latency_s": round(run.latency, 2), "error": run.error, "notices": run.notices[:3]}


async def scenario(name, links, memory, light, idle, settle_s) -> dict:
    """Open ``links`` (page, seed) at once; peak RSS meanwhile, and RSS ``settle_s`` later."""
    start, mark, before = time.monotonic(), len(light.latencies), memory.samples[-1][1]
    runs = await asyncio.gather(*(open_link(memory.server.base, page, seed) for page, seed in links))
    peak = memory.peak(start)
    await asyncio.sleep(settle_s)
    after = memory.samples[-1][1]
    result = {"scenario": name, "links": [f"/{page}?…&seed={seed}" for page, seed in links], "runs": runs}
    result |= {"rss_before_mib": round(before), "peak_over_idle_mib": round(peak - idle)}
    result |= {"left_over_idle_mib": round(after - idle), "settle_s": settle_s, "light": light.summary(mark)}
    print(json.dumps(result), flush=True)
    return result


async def flood(base, count, seconds, light, memory, idle) -> dict:
    """``count`` sessions on the worst multi-head link, each re-running it back to back for ``seconds``."""
    start, mark, students = time.monotonic(), len(light.latencies), [Student(base) for _ in range(count)]
    for student in students:
        await student.visit("multihead", WORST | {"seed": "1"})
    reruns = [0]

    async def hammer(student):
        while time.monotonic() - start < seconds:
            await student.edit()
            reruns[0] += 1

    await asyncio.gather(*(hammer(s) for s in students))
    for student in students:
        await student.close()
    result = {"scenario": f"flood of {count}", "reruns": reruns[0], "light": light.summary(mark)}
    result |= {"peak_over_idle_mib": round(memory.peak(start) - idle)}
    print(json.dumps(result), flush=True)
    return result


async def main_async(args) -> list[dict]:
    server = AppServer(log=ROOT / "artifacts" / "hostile" / "server.log")
    base = server.start()
    memory, light, results = Memory(server), Light(base), []
    memory.start()
    try:
        await warm(base, ["multihead"])
        task = asyncio.create_task(light.loop())
        await asyncio.sleep(5)
        idle = statistics.median(rss for _, rss in memory.samples[-30:])
        results.append({"scenario": "idle", "rss_mib": round(idle), "loadavg": loadavg()})
        print(json.dumps(results[-1]), flush=True)
        wanted, seed = args.scenarios.split(","), 1000
        for page in (p for p in PAGES if p in wanted or "all" in wanted):
            seed += 1
            results.append(await scenario(page, [(page, seed)], memory, light, idle, args.settle_s))
        if "three" in wanted or "all" in wanted:
            links = [("multihead", seed + k) for k in range(1, 4)]
            results.append(await scenario("three multihead at once", links, memory, light, idle, args.settle_s))
        if args.flood:
            results.append(await flood(base, args.flood, args.flood_s, light, memory, idle))
        light.running = False
        await task
        results.append({"scenario": "light, whole run", "light": light.summary(), "errors": light.errors[:5]})
        results.append({"loadavg_end": loadavg(), "server_problems": server.log_problems()[:5]})
        print(json.dumps(results[-2:]), flush=True)
    finally:
        memory.stopped.set()
        server.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", default="all", help="pages (" + ",".join(PAGES) + "), three, or all")
    parser.add_argument("--settle-s", type=float, default=30.0, help="seconds to wait before reading what is left")
    parser.add_argument("--flood", type=int, default=20, help="sessions re-running the worst link (0: none)")
    parser.add_argument("--flood-s", type=float, default=30.0)
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    out = ROOT / "artifacts" / "hostile" / f"results-{int(time.time())}.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
