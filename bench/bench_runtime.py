"""Runtime overhead, one run, same model: plain step vs `torchlint.watch` (and with its opt-in
per-step snapshot) vs detect_anomaly on every step.

Model: 8 x Linear(1024, 1024) with ReLU, batch 256, SGD. Rounds are interleaved (the order
rotates); the best of each kind and the median of the per-round ratios are printed. CUDA is used
when available (`--device cuda`), CPU otherwise.

    python bench/bench_runtime.py [--steps 20] [--rounds 3] [--device auto|cpu|cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import torchlint


def make(device):
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=1e-3)


def steps(model, optimizer, x, y, n):
    for _ in range(n):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def timed(device, fn) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    model, optimizer = make(device)
    x, y = torch.randn(256, 1024, device=device), torch.randn(256, 1024, device=device)
    steps(model, optimizer, x, y, 3)  # warm-up

    def plain():
        steps(model, optimizer, x, y, args.steps)

    def watched():
        with torchlint.watch(model, optimizer):
            steps(model, optimizer, x, y, args.steps)

    def snapshotted():
        with torchlint.watch(model, optimizer, snapshot=True):
            steps(model, optimizer, x, y, args.steps)

    def anomaly():
        with torch.autograd.detect_anomaly(check_nan=True):
            steps(model, optimizer, x, y, args.steps)

    kinds = (("plain", plain), ("torchlint.watch", watched), ("watch(snapshot)", snapshotted),
             ("detect_anomaly", anomaly))
    times: dict[str, list[float]] = {name: [] for name, _ in kinds}
    for round_ in range(args.rounds):
        for offset in range(len(kinds)):  # rotate the order each round: no kind always runs first
            name, fn = kinds[(round_ + offset) % len(kinds)]
            times[name].append(timed(device, fn) / args.steps)
    print(f"device {device}, {args.steps} steps x {args.rounds} interleaved rounds, 8 x Linear(1024, 1024), "
          f"batch 256, SGD")
    for name, _ in kinds:
        ratios = sorted(t / p for t, p in zip(times[name], times["plain"], strict=True))
        print(f"  {name:<16} best {min(times[name]) * 1000:8.2f} ms/step   {min(times[name]) / min(times['plain']):.3f}x "
              f"plain (best/best)   median per-round ratio {statistics.median(ratios):.3f}x")


if __name__ == "__main__":
    main()
