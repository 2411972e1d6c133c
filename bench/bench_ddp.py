"""Runtime overhead under DistributedDataParallel: 2 ranks, gloo on CPU, plain steps vs watched steps.

Two worker processes (this script with --worker, the environment torchrun gives) build the same
DDP model and run interleaved rounds in one process group: a round of plain steps, a round under
the process-wide watch that `torchlint run` installs (every module's forward, every optimizer
step, and the ranks' one exchange per step), in rotating order. Each round's first step is not
timed (a new watch makes its gloo group there). Rank 0 prints each kind's best ms/step and the
median of the per-round ratios. Target (issue 15): watched <= 1.10x plain DDP.

    python bench/bench_ddp.py [--model small|medium] [--steps 30] [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

MODELS = {  # name: (layer widths, batch)
    "small": ([784, 256, 10], 64),  # ~1 ms a step: the fixed cost per step shows
    "medium": ([1024, 1024, 1024, 1024, 1024], 128),
}


def worker(args) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    from torchlint.runtime.watch import Watch

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    widths, batch = MODELS[args.model]
    layers = []
    for a, b in zip(widths, widths[1:], strict=False):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers[:-1]))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)
    x, y = torch.randn(batch, widths[0], generator=generator), torch.randn(batch, widths[-1], generator=generator)

    def step():
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()

    def round_(watched: bool) -> float:
        watch = Watch(None, None, stop_at_first=True) if watched else None
        if watch is not None:
            watch.__enter__()
        step()
        dist.barrier()
        started = time.perf_counter()
        for _ in range(args.steps):
            step()
        dist.barrier()
        elapsed = (time.perf_counter() - started) / args.steps * 1000
        if watch is not None:
            assert not watch.events, watch.events
            watch.__exit__(None, None, None)
        return elapsed

    for _ in range(2):
        step()
    times = {"plain": [], "watched": []}
    ratios = []
    for index in range(args.rounds):
        order = ["plain", "watched"] if index % 2 == 0 else ["watched", "plain"]
        got = {kind: round_(kind == "watched") for kind in order}
        for kind, ms in got.items():
            times[kind].append(ms)
        ratios.append(got["watched"] / got["plain"])
    if rank == 0:
        print(f"model {args.model} ({' x '.join(map(str, widths))}, batch {batch}), 2 ranks, gloo, "
              f"{args.steps} steps x {args.rounds} rounds")
        for kind, values in times.items():
            print(f"  {kind:<8} best {min(values):8.3f} ms/step   median {statistics.median(values):8.3f}")
        print(f"  watched / plain: best/best {min(times['watched']) / min(times['plain']):.3f}x, "
              f"median per-round ratio {statistics.median(ratios):.3f}x "
              f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=tuple(MODELS), default="small")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    from torchlint.runtime.spawn import rank_environments

    argv = [sys.executable, os.path.abspath(__file__), "--worker", "--model", args.model,
            "--steps", str(args.steps), "--rounds", str(args.rounds)]
    children = [subprocess.Popen(argv, env=env) for env in rank_environments(2)]
    sys.exit(max(child.wait() for child in children))


if __name__ == "__main__":
    main()
