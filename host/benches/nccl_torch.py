#!/usr/bin/env python3
"""PyTorch twin of `cohort bench nccl`: all-reduce (float32, sum, in place) bus bandwidth
through torch.distributed's NCCL backend, one process per GPU (torch.multiprocessing.spawn,
no torchrun), the same sizes and timing as Cohort's side: each sample times ITERS all-reduces
back to back (host wall clock, from a barrier and synchronize to the last synchronize); the
median of REPS samples. busBw = bytes / time * 2(n-1)/n, as nccl-tests defines it.

Prints on rank 0 a line `twin info ...` (PyTorch and NCCL versions), then one line per size:
    twin allreduce <bytes> <busbw GB/s>

    python3 host/benches/nccl_torch.py --sizes 1048576,67108864 --iters 20 --reps 7
"""

import argparse
import os
import socket
import statistics
import time

# NVLink multicast (NVLS) stays off, as in Cohort (see cohort_runtime::nccl): set before NCCL loads.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, sizes, iters, reps):
    torch.cuda.set_device(rank)
    kw = dict(init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:  # device_id (PyTorch >= 2.3) creates the communicator eagerly, bound to this GPU
        dist.init_process_group("nccl", device_id=torch.device("cuda", rank), **kw)
    except TypeError:
        dist.init_process_group("nccl", **kw)
    factor = 2.0 * (world - 1) / world
    if rank == 0:
        v = torch.cuda.nccl.version()
        print(f"twin info PyTorch {torch.__version__}, NCCL {'.'.join(map(str, v)) if isinstance(v, tuple) else v}, "
              f"{world} process(es), NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}", flush=True)
    for nbytes in sizes:
        t = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
        for _ in range(3):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        samples = []
        for _ in range(reps):
            dist.barrier()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t)
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - start) / iters)
        # Every rank's median; the slowest rank's is the collective's.
        med = torch.tensor([statistics.median(samples)], dtype=torch.float64, device="cuda")
        dist.all_reduce(med, op=dist.ReduceOp.MAX)
        if rank == 0:
            busbw = nbytes / med.item() / 1e9 * factor
            print(f"twin allreduce {nbytes} {busbw:.3f}", flush=True)
        del t
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", required=True, help="bytes, comma-separated")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",") if s]
    if a.gpus < 1:
        raise SystemExit("no GPU")
    mp.spawn(worker, args=(a.gpus, free_port(), sizes, a.iters, a.reps), nprocs=a.gpus, join=True)


if __name__ == "__main__":
    main()
