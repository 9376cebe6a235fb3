"""Why does the same kernel time differently from one verifier child to the next? (run on a GPU)

    python benchmarks/timing_spread.py --rounds 8 --out spread.json [--variants base batched ...]

Each round forks one fresh child per variant (as the verifier does: CUDA initialised in the child
only), times the same 1M-element pointwise Triton kernel (the one `benchmarks/bench_latency.py` uses)
and reports the median, min and max of its per-call times; rounds are interleaved with idle gaps
like the verifier's. The spread of the medians across children (max/min) is what issue 4's target
(< 1.05) is about.

Variants:
  base       mtmc.verify.timing.time_calls as the verifier runs it
  nosleep    the same without the pre-call GPU sleep (host launch overhead is timed)
  readflush  the L2 flush reads its buffer instead of zeroing it (no dirty lines left in L2)
  warm400    400 ms of warm-up instead of 100 ms
  batched    a candidate protocol: one GPU sleep per batch of 10 calls, sized so the host enqueues
             the whole batch (copy inputs, flush L2, start, call, end for each) before the GPU gets
             to it; the GPU then runs the calls back to back with no idle time between them, and
             the host synchronises once per batch
  query      `batched` with one call per batch (the verifier's shape), plus a stream query right
             after the end event is recorded: cudaStreamQuery hands the driver's pending commands
             to the GPU, in case a launch made while the GPU sleeps is held back until the sync
  batched_query  `batched` plus that query after each end event
  clockprobe `query`'s loop without the query, plus a spin of known cycles after each call, timed
             by events: the SM clock right after each call, next to that call's time

Hypotheses these separate (H100, 2026-11-23: per-call times of one child jumped from 8.4 us to
40-60 us in bursts, and children with longer sleeps read slower): idle memory or SMs waking up
(readflush, warm400), the sleep itself (nosleep), idle gaps between calls (batched), commands
held back by the driver while the GPU is busy (query, batched_query), the SM clock dropping while
the GPU only sleeps between calls (clockprobe: slow calls next to low clocks).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time

import torch
import triton
import triton.language as tl

from mtmc.verify import timing

NUMEL = 1 << 20
BATCH = 10
PROBE_CYCLES = 100_000  # 50 us at 2 GHz
VARIANTS = ("base", "nosleep", "readflush", "warm400", "batched", "query", "batched_query", "clockprobe")


@triton.jit
def fused_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.sigmoid(x) * y + 2.0 * x, mask=mask)


def call(buffers: list[torch.Tensor]) -> list[torch.Tensor]:
    x, y = buffers
    out = torch.empty_like(x)
    fused_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return [out]


def input_sets() -> list[list[torch.Tensor]]:
    gen = torch.Generator(device="cuda").manual_seed(0)
    return [[torch.randn(NUMEL, device="cuda", generator=gen) for _ in range(2)] for _ in range(3)]


def time_with_protocol(variant: str) -> dict:
    options = timing.TimingOptions(hide_host_overhead=variant != "nosleep",
                                   warmup_ms=400.0 if variant == "warm400" else 100.0)
    if variant == "readflush":
        flush_buffer = timing.l2_flush_buffer

        class ReadFlush:
            def __init__(self, buffer: torch.Tensor) -> None:
                self.buffer = buffer

            def zero_(self) -> None:
                self.buffer.sum()

        timing.l2_flush_buffer = lambda device: ReadFlush(flush_buffer(device))
    result = timing.time_calls({"c": call}, input_sets(), {}, False, options)
    t = result["timings"]["c"]
    return {"times": t["times_ms"], "short_sleeps": t["short_sleeps"],
            "sleep_cycles": result["sleep_cycles"]["c"]}


def time_batched(batch_size: int = BATCH, query: bool = False, probe: bool = False, reps: int = 200) -> dict:
    sets = input_sets()
    buffers = [t.clone() for t in sets[0]]
    flush = timing.l2_flush_buffer(buffers[0].device)
    for _ in range(20):  # compile, then warm up
        call(buffers)
    torch.cuda.synchronize()
    host_ms = []
    for _ in range(20):
        t0 = time.perf_counter()
        for buf, src in zip(buffers, sets[0], strict=True):
            buf.copy_(src)
        flush.zero_()
        call(buffers)
        host_ms.append(1e3 * (time.perf_counter() - t0))
        torch.cuda.synchronize()
    cycles = int(timing._sleep_cycles_per_ms() * (batch_size * 2 * statistics.median(host_ms) + 0.05))
    times, short, clocks_mhz = [], 0, []
    for batch in range(reps // batch_size):
        slept = torch.cuda.Event(enable_timing=True)
        events = []
        host_start = time.perf_counter()
        slept.record()
        torch.cuda._sleep(cycles)
        for rep in range(batch_size):
            for buf, src in zip(buffers, sets[(batch * batch_size + rep) % len(sets)], strict=True):
                buf.copy_(src)
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call(buffers)
            end.record()
            if query:
                torch.cuda.current_stream().query()
            events.append((start, end))
        if probe:  # the SM clock right after the call: a spin of known cycles, timed by events
            probe_start, probe_end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            probe_start.record()
            torch.cuda._sleep(PROBE_CYCLES)
            probe_end.record()
        enqueue_ms = 1e3 * (time.perf_counter() - host_start)
        torch.cuda.synchronize()
        if slept.elapsed_time(events[-1][0]) < enqueue_ms:
            short += 1  # the GPU caught up with the host inside the batch: not kept
            cycles = min(2 * cycles, timing.MAX_SLEEP_CYCLES)
            continue
        times += [start.elapsed_time(end) for start, end in events]
        if probe:
            clocks_mhz.append(round(PROBE_CYCLES / probe_start.elapsed_time(probe_end) / 1e3))
    return {"times": times, "short_sleeps": short, "sleep_cycles": cycles, "clocks_mhz": clocks_mhz}


def child(variant: str, results: multiprocessing.Queue) -> None:
    torch.cuda.init()
    if variant == "clockprobe":
        measured = time_batched(1, probe=True)
    elif variant in ("batched", "query", "batched_query"):
        measured = time_batched(1 if variant == "query" else BATCH, query=variant != "batched")
    else:
        measured = time_with_protocol(variant)
    times = measured["times"]
    results.put({"variant": variant, "median": statistics.median(times), "min": min(times),
                 "max": max(times), "reps": len(times), **measured})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--out", default="timing_spread.json")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("fork")  # the parent never touches CUDA
    runs = []
    for round_ in range(args.rounds):
        for variant in args.variants:
            results = ctx.Queue()
            process = ctx.Process(target=child, args=(variant, results))
            process.start()
            run = results.get(timeout=60)
            process.join()
            runs.append(run)
            print(f"{round_} {variant:9s} median {run['median']:.4f} min {run['min']:.4f} "
                  f"max {run['max']:.4f} reps {run['reps']} short {run['short_sleeps']} "
                  f"cycles {run['sleep_cycles']}", flush=True)
            time.sleep(0.7)  # the verifier's CPU-side gap between two verdicts
    with open(args.out, "w") as f:
        json.dump(runs, f, indent=1)
    for variant in args.variants:
        medians = sorted(run["median"] for run in runs if run["variant"] == variant)
        spread = max(medians) / min(medians)
        print(f"{variant:9s} medians max/min {spread:.3f}  {[round(m, 4) for m in medians]}")


if __name__ == "__main__":
    main()
