"""The watch's own time per step, split: the step check (the optimizer's pre-hook, with its one sync)
and the forward hooks. Wall-clock ratios on a shared 2-core machine swing by 10-20% between runs;
the time spent inside torchlint's own hooks does not depend on what else runs as much, so two
versions can be compared by running this script under each (PYTHONPATH=old/src, then new).

    python bench/bench_watch_parts.py [--layers 8] [--width 1024] [--steps 40]
"""

from __future__ import annotations

import argparse
import time

import torch

from torchlint.runtime import watch as watch_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    spent = {"check": 0.0, "forward hooks": 0.0}

    def timed(name, function):
        def wrapper(*a, **k):
            started = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent[name] += time.perf_counter() - started
        return wrapper

    watch_module.Watch._guarded_check = timed("check", watch_module.Watch._guarded_check)
    watch_module.Watch._on_forward = timed("forward hooks", watch_module.Watch._on_forward)
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(256, args.width), torch.randn(256, args.width)
    with watch_module.Watch(None, None, stop_at_first=True):
        for _ in range(args.steps):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    print(f"{args.layers} x Linear({args.width}) + ReLU, batch 256, {args.steps} steps: " + ", ".join(
        f"{name} {seconds / args.steps * 1000:.3f} ms/step" for name, seconds in spent.items()))


if __name__ == "__main__":
    main()
