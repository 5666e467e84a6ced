#!/usr/bin/env python3
"""PyTorch's column of `cohort bench algorithms` (issue 29): the operations PyTorch has
(torch.sort, torch.cumsum, torch.unique_consecutive, torch.histc, torch.argmax, torch.sum) on the
bench's sizes, timed with CUDA events (median of --reps runs after 2 warm-ups), as ms and GB/s
(the same byte counts as the Rust table), each result checked against the CPU.

    python3 host/benches/algorithms_torch.py [--sizes 20,24,28] [--reps 10] [--dram-tbs 4.8]

The inputs are PyTorch's own random numbers of the same kinds (uniform 31-bit keys, runs of 4
for unique, floats in [0, 1)), not the Rust side's hash: the figures compare speeds, not
results. Runs on any machine with PyTorch and a CUDA GPU (no Rust needed).
"""
import argparse
import sys

import torch


def timed(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(2):
        out = fn()
    times = []
    for _ in range(reps):
        start.record()
        out = fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2], out


FAILED = []


def check(cond, what):
    """A failed check is reported (stderr) and fails the run at the end; the rows go on."""
    if not cond:
        print(f"CHECK FAILED: {what}", file=sys.stderr, flush=True)
        FAILED.append(what)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="20,24,28")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--dram-tbs", type=float, default=4.8)
    a = p.parse_args()
    dev = torch.device("cuda")
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; medians of {a.reps} runs")
    print("| operation | n | PyTorch | of DRAM |")
    print("|---|---|---|---|")
    g = torch.Generator(device=dev).manual_seed(29)

    def row(name, n, ms, nbytes):
        gbs = nbytes / ms / 1e6
        print(f"| {name} | 2^{n.bit_length() - 1} | {ms:.3f} ms ({gbs:.0f} GB/s) | {gbs / (a.dram_tbs * 1e3):.2f} |", flush=True)

    for log in [int(x) for x in a.sizes.split(",")]:
        n = 1 << log
        keys = torch.randint(0, 2**31, (n,), device=dev, dtype=torch.int32, generator=g)
        floats = torch.rand(n, device=dev, generator=g)
        runs = torch.randint(0, 2**31, ((n + 3) // 4,), device=dev, dtype=torch.int32, generator=g).repeat_interleave(4)[:n]

        ms, out = timed(lambda: torch.sum(keys, dtype=torch.int64), a.reps)
        check(out.item() == keys.cpu().sum(dtype=torch.int64).item(), "sum")
        row("torch.sum int32 → int64 (reduce)", n, ms, 4 * n)

        ms, out = timed(lambda: torch.cumsum(keys, 0, dtype=torch.int32), a.reps)
        check(torch.equal(out.cpu(), torch.cumsum(keys.cpu(), 0, dtype=torch.int32)), "cumsum")
        row("torch.cumsum int32 (inclusive scan)", n, ms, 8 * n)

        ms, (vals, idx) = timed(lambda: torch.sort(keys, stable=True), a.reps)
        v = vals.cpu()
        check(bool((v[1:] >= v[:-1]).all()), "sort: sorted")
        check(torch.equal(keys.cpu()[idx.cpu()], v), "sort: the indices' keys")
        row("torch.sort int32, stable (keys and int64 indices)", n, ms, 4 * n + 12 * n)

        ms, (u, counts) = timed(lambda: torch.unique_consecutive(runs, return_counts=True), a.reps)
        cu, cc = torch.unique_consecutive(runs.cpu(), return_counts=True)
        check(torch.equal(u.cpu(), cu) and torch.equal(counts.cpu(), cc), "unique_consecutive")
        row("torch.unique_consecutive int32 + counts, runs of 4 (run-length encode)", n, ms, 4 * n + 12 * len(cu))

        ms, h = timed(lambda: torch.histc(floats, bins=256, min=0.0, max=1.0), a.reps)
        check(torch.equal(h.cpu(), torch.histc(floats.cpu(), bins=256, min=0.0, max=1.0)), "histc")
        row("torch.histc f32, 256 bins", n, ms, 4 * n)

        ms, am = timed(lambda: torch.argmax(floats), a.reps)
        check(am.item() == torch.argmax(floats.cpu()).item(), "argmax")
        row("torch.argmax f32", n, ms, 4 * n)
        del keys, floats, runs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
    if FAILED:
        sys.exit(f"{len(FAILED)} checks failed: {', '.join(FAILED)}")
